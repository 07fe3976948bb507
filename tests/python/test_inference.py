import json
import math
import subprocess
import sys

import pytest

import rooflinepy as rp

REQUIRED_MODELS = ["qwen3-4b", "qwen3-8b", "qwen3-30b-a3b", "llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3.1-8b",
                   "llama-3.1-70b", "llama-3.2-1b", "llama-3.2-3b", "mistral-7b", "mixtral-8x7b", "qwen2.5-7b",
                   "gemma-2-9b", "gemma-3-4b", "phi-3-mini", "gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl"]


def test_catalogue_has_the_required_models_and_every_entry_loads():
    ids = rp.models()
    assert set(REQUIRED_MODELS) <= set(ids)
    for mid in ids:
        m = rp.model(mid)
        assert m.parameters > 0
        if m.arch.parameters_reported:
            assert m.parameters == pytest.approx(m.arch.parameters_reported, rel=0.01), mid


def test_model_lookup_errors():
    with pytest.raises(KeyError, match="did you mean 'qwen3-4b'"):
        rp.model("qwen3-4bb")


def test_from_hf_config_path_and_dict(tmp_path, repo):
    cfg = json.loads((repo / "model_db" / "llama-2-7b.json").read_text())["config"]
    a = rp.Model.from_hf_config(cfg)
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    b = rp.Model.from_hf_config(p)
    assert a.parameters == b.parameters == 6738415616
    with pytest.raises(FileNotFoundError, match="missing.json"):
        rp.Model.from_hf_config(tmp_path / "missing.json")
    with pytest.raises(ValueError, match="model_type 'bert' is not supported"):
        rp.Model.from_hf_config({"model_type": "bert"})


def test_quants_and_weight_bytes():
    q = rp.quants()
    for name in ("Q4_K_M", "Q8_0", "BF16", "int4-g128", "fp8", "nvfp4"):
        assert name in q
    m = rp.model("llama-2-7b")
    assert m.weight_bytes("Q4_K_M") / 2**30 == pytest.approx(3.80, abs=0.005)
    assert 8 * m.weight_bytes("Q4_K_M") / m.parameters == pytest.approx(4.84, abs=0.005)
    df = m.tensors("Q4_K_M")
    assert set(df["type"]) >= {"Q4_K", "Q6_K", "F32"}
    assert df["bytes"].sum() == pytest.approx(m.weight_bytes("Q4_K_M"))


def test_estimate_fields_and_breakdown():
    est = rp.estimate(model="qwen3-4b", quant="Q4_K_M", device="m4-pro", prompt_tokens=512, gen_tokens=128,
                      batch=1, kv_dtype="f16", flash_attention=False, engine="llama.cpp")
    for f in ("prefill_tokens_per_s", "decode_tokens_per_s", "ttft_s", "total_s"):
        assert math.isfinite(getattr(est, f)) and getattr(est, f) > 0
    assert est.total_s == pytest.approx(est.prefill_s + est.decode_s)
    assert est.ttft_s == pytest.approx(est.prefill_s)
    assert set(est.memory) >= {"weights", "kv_cache", "activations", "total"}
    assert est.fits
    assert est.ceilings["decode_bound"] == "memory:dram"
    bd = est.breakdown
    assert list(bd.columns) == ["phase", "op", "count", "flops", "bytes", "intensity", "seconds", "bound",
                                "flops_per_s", "compute"]
    assert bd[bd.phase == "decode"].seconds.sum() == pytest.approx(est.decode_s, rel=1e-9)
    assert bd[bd.phase == "prefill"].seconds.sum() == pytest.approx(est.prefill_s, rel=1e-9)
    timed = bd[bd.seconds > 0]
    assert list(timed.flops_per_s) == pytest.approx(list(timed.flops / timed.seconds), rel=1e-12)
    # no op runs above the device's highest peak, nor above what its DRAM bytes allow
    dev = rp.device(est.device)
    for _, r in timed[timed.compute != ""].iterrows():
        fmt, unit = r.compute.split()
        assert r.flops_per_s <= rp.plot.attainable_flops(dev, float("inf"), fmt, unit=unit) * 1.0001, r.op
    assert (timed.flops_per_s <= timed.intensity * dev.bandwidth("dram") * 1.0001).all()
    d = est.to_dict()
    json.dumps(d)
    assert d["decode_tokens_per_s"] == est.decode_tokens_per_s
    assert "fits" in repr(est)


def test_batch_that_does_not_fit_is_an_answer():
    est = rp.estimate(model="llama-3.1-70b", quant="BF16", device="rtx-4090", prompt_tokens=512, gen_tokens=16)
    assert est.fits is False
    assert est.memory["total"] > est.memory["capacity"]


def test_gqa_mha_and_kv_formats_change_kv_bytes():
    mha = rp.estimate(model="llama-2-7b", quant="Q4_0", device="a100", prompt_tokens=4096, gen_tokens=1)
    gqa = rp.estimate(model="llama-3.1-8b", quant="Q4_0", device="a100", prompt_tokens=4096, gen_tokens=1)
    assert mha.memory["kv_cache"] == pytest.approx(4 * gqa.memory["kv_cache"], rel=0.01)
    q8 = rp.estimate(model="llama-3.1-8b", quant="Q4_0", device="a100", prompt_tokens=4096, gen_tokens=1,
                     kv_dtype="q8_0")
    assert q8.memory["kv_cache"] == pytest.approx(gqa.memory["kv_cache"] * 34 / 64, rel=0.001)


def test_moe_reads_only_active_experts_in_decode():
    dense_like = rp.model("qwen3-30b-a3b")
    e = rp.estimate(model=dense_like, quant="int4-g128", device="h100-sxm", prompt_tokens=0, gen_tokens=64,
                    engine="generic")
    bytes_per_token = e.breakdown.query("phase == 'decode'").bytes.sum() / 64
    assert bytes_per_token < 0.25 * e.weight_bytes  # 8 of 128 experts per token


def test_calibrate_from_measurements_example():
    cal, rep = rp.calibrate_from_measurements(
        "m1-max-32c", [{"model": "llama-2-7b", "quant": "Q8_0", "test": "tg128", "tokens_per_s": 40.2}],
        engine="llama.cpp", return_report=True)
    est = rp.estimate(model="llama-2-7b", quant="Q8_0", device=cal, prompt_tokens=0, gen_tokens=128)
    assert est.decode_tokens_per_s == pytest.approx(40.2, rel=0.02)
    assert rep.rms_relative_error_after < 0.02
    other = rp.estimate(model="llama-2-7b", quant="Q4_0", device=cal, prompt_tokens=0, gen_tokens=128)
    assert other.decode_tokens_per_s > est.decode_tokens_per_s
    with pytest.raises(ValueError, match="lacks tokens_per_s"):
        rp.calibrate_from_measurements("m1-max-32c", [{"model": "llama-2-7b", "quant": "Q8_0", "test": "tg128"}])
    with pytest.raises(ValueError, match="llama-bench's form"):
        rp.calibrate_from_measurements("m1-max-32c", [{"model": "llama-2-7b", "quant": "Q8_0", "test": "t128",
                                                       "tokens_per_s": 3}])


def test_calibrate_from_measurements_fits_the_runs_as_they_ran_flash_attention():
    """A long prompt measured with flash attention off fits a device that reproduces it with it off; the same number
    read as a run with it on fits another; None takes the engine's default (llama.cpp: on)."""
    meas = [{"model": "llama-2-7b", "quant": "Q4_0", "test": "pp4096", "tokens_per_s": 300.0}]
    kw = dict(model="llama-2-7b", quant="Q4_0", prompt_tokens=4096, gen_tokens=0)
    fitted = {}
    for fa in (False, True, None):
        cal = rp.calibrate_from_measurements("m1-max-32c", meas, flash_attention=fa)
        assert rp.estimate(device=cal, flash_attention=fa, **kw).prefill_tokens_per_s == pytest.approx(300, rel=0.02)
        fitted[fa] = cal.efficiency["compute_fraction"]
    assert fitted[None] == fitted[True] != fitted[False]
    with pytest.raises(TypeError, match="calibrate_from_measurements: flash_attention must be True, False or None"):
        rp.calibrate_from_measurements("m1-max-32c", meas, flash_attention="off")


def test_speculative_and_tensor_parallel():
    base = dict(model="llama-3.1-8b", quant="bf16", device="h100-sxm", prompt_tokens=128, gen_tokens=128,
                engine="cuda-graphs")
    plain = rp.estimate(**base)
    spec = rp.estimate(draft_model="llama-3.2-1b", draft_tokens=4, acceptance=0.8, **base)
    assert spec.speculative_tokens_per_cycle == pytest.approx((1 - 0.8 ** 5) / 0.2)
    assert spec.decode_tokens_per_s > plain.decode_tokens_per_s
    tp = rp.estimate(tensor_parallel=2, **base)
    assert tp.decode_tokens_per_s > plain.decode_tokens_per_s


def test_cli_estimate_llama_bench_rows():
    out = subprocess.run([sys.executable, "-m", "rooflinepy", "estimate", "-m", "qwen3-4b", "-q", "BF16,Q8_0,Q4_K_M",
                          "-dev", "m4-pro"], capture_output=True, text=True, check=True).stdout
    for token in ("pp512", "tg128", "Q4_K_M", "8.05 GB", "4.02 B", "m4-pro-20c", "memory:dram", "compute"):
        assert token in out
    data = json.loads(subprocess.run([sys.executable, "-m", "rooflinepy", "estimate", "-m", "qwen3-4b", "-q", "Q8_0",
                                      "-dev", "m4-pro", "-p", "256", "-n", "32", "-b", "1,4", "--json"],
                                     capture_output=True, text=True, check=True).stdout)
    assert [(d["test"], d["batch"]) for d in data] == [("pp256", 1), ("tg32", 1), ("pp256", 4), ("tg32", 4)]


def test_cli_estimate_depth_ubatch_and_interval_like_llama_bench():
    """-d: tokens already in the KV cache (llama-bench's depth), -ub: the prompt micro-batch; every row carries the
    prediction interval; -d given a device name says where the device goes."""
    data = json.loads(subprocess.run([sys.executable, "-m", "rooflinepy", "estimate", "-m", "llama-3.1-8b", "-q", "Q4_0",
                                      "-dev", "m2-max-38c", "-p", "2048", "-n", "128", "-d", "0,8192", "-ub", "256",
                                      "--json"], capture_output=True, text=True, check=True).stdout)
    assert [d["test"] for d in data] == ["pp2048", "tg128", "pp2048 @ d8192", "tg128 @ d8192"]
    kw = dict(model="llama-3.1-8b", quant="Q4_0", device="m2-max-38c", ubatch_tokens=256, context_tokens=8192)
    # each llama-bench test on its own: ppN without generation, tgN without a prompt, both after the depth
    assert data[2]["tokens_per_s"] == pytest.approx(rp.estimate(prompt_tokens=2048, gen_tokens=0, **kw).prefill_tokens_per_s)
    assert data[3]["tokens_per_s"] == pytest.approx(rp.estimate(prompt_tokens=0, gen_tokens=128, **kw).decode_tokens_per_s)
    assert data[2]["ubatch_tokens"] == 256 and data[2]["context_tokens"] == 8192
    assert data[3]["tokens_per_s"] < data[1]["tokens_per_s"]  # the deeper cache is read every step
    lo, hi = data[1]["tokens_per_s_interval"]
    assert lo < data[1]["tokens_per_s"] < hi
    bad = subprocess.run([sys.executable, "-m", "rooflinepy", "estimate", "-m", "llama-2-7b", "-d", "a100"],
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "-dev/--device" in bad.stderr
    # a sequence longer than the model's context is refused, naming the flags and the limit
    long = subprocess.run([sys.executable, "-m", "rooflinepy", "estimate", "-m", "llama-2-7b", "-dev", "a100", "-p",
                           "4000", "-d", "512"], capture_output=True, text=True)
    assert long.returncode == 2 and "4096" in long.stderr and "-p/-n/-d" in long.stderr


def test_cli_models_and_validate():
    out = subprocess.run([sys.executable, "-m", "rooflinepy", "models"], capture_output=True, text=True, check=True).stdout
    assert "qwen3-30b-a3b" in out
    out = subprocess.run([sys.executable, "-m", "rooflinepy", "validate"], capture_output=True, text=True, check=True).stdout
    assert "MAPE" in out and "pure roofline" in out and "seed_m4_pro" in out


def test_engines_say_what_they_do_and_where_that_comes_from():
    assert rp.engines() == ["llama.cpp", "cuda-graphs", "generic", "gpt-fast", "llama.cpp-cpu", "llama.cpp-cuda",
                            "llama.cpp-metal", "llama.cpp-metal-2023", "llama.cpp-rocm", "llama.cpp-vulkan",
                            "mlx", "sglang", "trt-llm", "trt-llm-0.6", "vllm"]  # engine_db: llama.cpp, then by id
    g = rp.engine("gpt-fast").backend("any")
    dequant_overlapped = any(k.dequant_overlapped for k in g.linear_kernels)
    assert (g.fused_qkv, g.vocab_parallel, dequant_overlapped, g.all_reduce) == (True, False, False, "one-shot")
    assert "tp.py" in g.sources["vocab_parallel"][0] and "ENABLE_INTRA_NODE_COMM" in g.sources["all_reduce"][0]
    assert all(k.dequant_overlapped for k in rp.engine("llama.cpp").backend("any").linear_kernels)
    assert rp.engine("cuda-graphs").backend("any").all_reduce == "ring"
    # what the properties change: one fused QKV row; quantized decode slower when dequantization is not hidden
    kw = dict(model="llama-2-7b", device="a100-sxm-80gb", prompt_tokens=0, gen_tokens=16, flash_attention=True)
    ops = set(rp.estimate(quant="bf16", engine="gpt-fast", **kw).breakdown.op)
    assert "attn_qkv" in ops and "attn_q" not in ops
    hidden = rp.estimate(quant="int4-g32", engine="cuda-graphs", **kw)
    serial = rp.estimate(quant="int4-g32", engine="gpt-fast", **kw)
    assert serial.decode_tokens_per_s < hidden.decode_tokens_per_s


def test_mlx_engine_affine_formats_and_kernels():
    """mlx-lm's affine quantization: b bits + a bf16 scale and bias per group (mlx-q4 = 4.5 bits per weight, -g32
    5.0, mlx-q8 8.5), the embedding table quantized too; the engine runs only on Apple GPUs and only its formats."""
    kw = dict(model="llama-3.1-8b", device="m4-max-40c", engine="mlx", flash_attention=True)
    q4, q4g32, q8, bf = (rp.estimate(quant=q, **kw) for q in ("mlx-q4", "mlx-q4-g32", "mlx-q8", "bf16"))
    tensors = rp.model("llama-3.1-8b").tensors("mlx-q4")
    assert tensors.set_index("role").loc["token_embd", "type"] == "mlx-q4"  # the embedding table too
    norms = tensors[tensors["shape"].map(len) < 2].elements.sum()
    for e, bits in ((q4, 4.5), (q4g32, 5.0), (q8, 8.5)):
        assert e.weight_bytes == pytest.approx(((e.parameters - norms) * bits + norms * 16) / 8, rel=1e-9)
    assert q4.decode_tokens_per_s > q4g32.decode_tokens_per_s > q8.decode_tokens_per_s > bf.decode_tokens_per_s
    ops = set(q4.breakdown.op)
    assert {"attn_q", "attn_k", "attn_v"} <= ops  # q, k, v as three matmuls
    assert rp.engine("mlx").backend("any").prefill_ubatch_tokens == 2048
    with pytest.raises(ValueError, match="does not run weights in Q4_K.*mlx-q4"):
        rp.estimate(model="llama-3.1-8b", quant="Q4_K_M", device="m4-max", engine="mlx")
    with pytest.raises(ValueError, match="does not run on nvidia devices"):
        rp.estimate(model="llama-3.1-8b", quant="mlx-q4", device="h100-sxm", engine="mlx")


def test_mlx_engine_floating_point_modes():
    """mlx-lm's --q-mode mxfp4 / nvfp4 / mxfp8 (gpt-oss's MLX conversions): 4.25, 4.5 and 8.25 bits per weight, run by
    the same quantized mat-vec and GEMM kernels in bf16; llama.cpp does not run them."""
    kw = dict(model="gpt-oss-20b", device="m4-max-40c", engine="mlx", prompt_tokens=512, gen_tokens=64)
    mx4, nv4, mx8 = (rp.estimate(quant=q, **kw) for q in ("mlx-mxfp4", "mlx-nvfp4", "mlx-mxfp8"))
    assert mx4.weight_bytes < nv4.weight_bytes < mx8.weight_bytes
    assert mx4.decode_tokens_per_s > nv4.decode_tokens_per_s > mx8.decode_tokens_per_s
    assert rp.engine("mlx").runs("gpt-oss-20b", "mlx-mxfp4") and not rp.engine("llama.cpp").runs("gpt-oss-20b", "mlx-mxfp4")
    b = mx4.breakdown
    assert set(b[(b.phase == "prefill") & b.op.isin(["ffn_gate_exps", "attn_q"])].compute) == {"bf16 matrix"}


def test_what_cannot_run_is_a_clear_error_the_same_everywhere():
    """fp8 in llama.cpp names the GGML types; fp8 on an A100 (no fp8 units) is refused by the op, the estimate and
    the CLI alike, naming what the device has; fp8 on an H100 runs in fp8."""
    with pytest.raises(ValueError, match="engine 'llama.cpp' does not run weights in fp8.*GGML tensor types"):
        rp.estimate(model="llama-3.1-8b", quant="fp8", device="h100-sxm")
    with pytest.raises(KeyError, match="a100-sxm-80gb.*fp8_e4m3.*it has:"):
        rp.device("a100").time(rp.ops.gemm(4096, 4096, 4096, dtype="fp8"))
    with pytest.raises(KeyError, match="a100-sxm-80gb.*fp8_e4m3.*it has:"):
        rp.estimate(model="llama-3.1-8b", quant="fp8", device="a100", engine="cuda-graphs")
    cli = subprocess.run([sys.executable, "-m", "rooflinepy", "estimate", "-m", "llama-3.1-8b", "-q", "fp8", "-dev",
                          "a100", "--engine", "cuda-graphs"], capture_output=True, text=True)
    assert cli.returncode != 0 and "fp8_e4m3" in cli.stderr and "it has:" in cli.stderr
    h100 = rp.estimate(model="llama-3.1-8b", quant="fp8", device="h100-sxm", engine="cuda-graphs", prompt_tokens=4096,
                       gen_tokens=0)
    bf16 = rp.estimate(model="llama-3.1-8b", quant="bf16", device="h100-sxm", engine="cuda-graphs", prompt_tokens=4096,
                       gen_tokens=0)
    assert h100.prefill_tokens_per_s > 1.3 * bf16.prefill_tokens_per_s  # fp8 tensor cores: twice the bf16 rate


def test_mxfp4_on_llama_cpp_is_the_gguf_file_type_on_gpu_engines_the_checkpoint_format():
    """gpt-oss GGUFs are llama-quantize's MXFP4_MOE type (experts in MXFP4, other matrices Q8_0), the only way
    llama.cpp holds MXFP4: "MXFP4" with a llama.cpp engine means that file, its matrices on ggml's quantized kernels
    (MMQ: on GB10's sm_121 its native FP4 path for the experts, int8 tensor cores after the activations' q8_1
    conversion for the Q8_0 matrices), in the estimate and the sweep alike. On vLLM the name stays the Hugging Face
    checkpoint format."""
    kw = dict(model="gpt-oss-20b", device="gb10", prompt_tokens=2048, gen_tokens=32)
    named, mix = rp.estimate(quant="MXFP4", **kw), rp.estimate(quant="MXFP4_MOE", **kw)
    assert rp.engine("llama.cpp").quant_for("mxfp4") == "MXFP4_MOE"
    assert rp.engine("vllm").quant_for("MXFP4") == "MXFP4"
    assert named.weight_bytes == mix.weight_bytes
    assert named.decode_tokens_per_s == pytest.approx(mix.decode_tokens_per_s, rel=1e-12)
    b = named.breakdown
    pre = b[b.phase == "prefill"].set_index("op")
    assert pre.loc["ffn_gate_exps", "compute"] == "fp4 matrix"  # MMQ's native FP4 path, not a float GEMM
    assert pre.loc["attn_q", "compute"] == "int8 matrix"  # the Q8_0 attention of the mix
    assert rp.estimate(quant="MXFP4", engine="vllm", **kw).weight_bytes < mix.weight_bytes  # no Q8_0 matrices
    t = rp.sweep(models=["gpt-oss-20b"], quants=["MXFP4"], devices=["gb10"], engine=["llama.cpp", "vllm"],
                 prompt_tokens=2048, gen_tokens=32)
    row = t[t.engine == "llama.cpp"].iloc[0]
    assert row.decode_tokens_per_s == pytest.approx(named.decode_tokens_per_s, rel=1e-9)
    assert row.prefill_tokens_per_s == pytest.approx(named.prefill_tokens_per_s, rel=1e-9)
    assert rp.engine("llama.cpp").runs("gpt-oss-20b", "MXFP4")
    # NVFP4 has no llama-quantize file type: as a GPU scheme (FP4 on tensor cores) llama.cpp refuses it and says where
    # GGML's NVFP4 comes from; vLLM runs it
    with pytest.raises(ValueError, match="does not run weights in nvfp4.*GPU checkpoint format.*quant='gguf'"):
        rp.estimate(model="llama-3.1-8b", quant="nvfp4", device="rtx-5090")
    assert not rp.engine("llama.cpp").runs("llama-3.1-8b", "nvfp4") and rp.engine("vllm").runs("llama-3.1-8b", "nvfp4")
    assert rp.engine("llama.cpp").runs("llama-3.1-8b", "bf16") and rp.engine("llama.cpp").runs("llama-3.1-8b", "F16")


def test_gpt_oss_has_its_biases_and_sinks_and_the_published_parameter_count():
    """gpt-oss puts biases on q, k, v and o, on the router and on every expert's projections, and a learned sink per
    head (llama.cpp's loader; transformers' GptOss modules): with them the count is the published one to the
    parameter, and the GGUF's tensors are its 12,109,566,560 bytes less the file's metadata. In a prompt each
    expert bias is an add over the rows routed to the experts (ggml_add_id), top_k x n elements per token."""
    for mid, count in (("gpt-oss-20b", 20_914_757_184), ("gpt-oss-120b", 116_829_156_672)):
        m = rp.model(mid)
        assert m.parameters == count, mid
        roles = set(m.tensors()[lambda t: t.name.str.endswith(".bias")].role)
        assert roles == {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate_inp", "ffn_gate_exps", "ffn_up_exps",
                         "ffn_down_exps"}, mid
    e = rp.estimate(model="gpt-oss-20b", quant="MXFP4", device="gb10", prompt_tokens=512, gen_tokens=0)
    assert 0 < 12_109_566_560 - e.weight_bytes < 20e6
    b = e.breakdown.set_index("op")
    a = rp.model("gpt-oss-20b").arch
    # f32 activations: each routed element read and written once (the bias rows stay in cache)
    assert b.loc["ffn_up_exps.bias", "bytes"] == pytest.approx(a.n_layer * 512 * 4 * 2880 * 8, rel=1e-9)
    assert b.loc["attn_output.bias", "bytes"] == pytest.approx(a.n_layer * 512 * 2880 * 8, rel=1e-9)


def test_one_token_mat_vecs_apply_their_bias_and_glu_where_ggml_fuses_them():
    """ggml's CUDA (and HIP) backend runs a one-column mat-vec with the bias add after it, and the gate and up
    mat-vecs with their GLU, as one kernel; Vulkan fuses the bias only; Metal neither. So at one token the fused ops
    cost nothing and the up product no launch, at two they are kernels again, and a prompt always has them; the
    breakdown still adds up."""
    def ops(device, engine, batch, phase="decode"):
        e = rp.estimate(model="qwen2.5-7b", quant="Q4_K_M", device=device, engine=engine, prompt_tokens=512,
                        gen_tokens=128, batch=batch)
        b = e.breakdown
        assert b[b.phase == "decode"].seconds.sum() == pytest.approx(e.decode_s, rel=1e-12)
        return set(b[b.phase == phase].op)
    bias = {"attn_q.bias", "attn_k.bias", "attn_v.bias"}
    for device in ("rtx-4090", "rx-7900-xtx"):
        assert not (bias | {"ffn_act"}) & ops(device, "llama.cpp", 1)
        assert (bias | {"ffn_act"}) <= ops(device, "llama.cpp", 2)
        assert (bias | {"ffn_act"}) <= ops(device, "llama.cpp", 1, "prefill")
    # the residual add after a bias-free projection is the add such a mat-vec applies (not after Gemma's post-norms)
    def residual(model, batch):
        e = rp.estimate(model=model, quant="Q4_0", device="rtx-4090", prompt_tokens=0, gen_tokens=8, batch=batch)
        return "residual_add" in set(e.breakdown.op)
    assert not residual("llama-2-7b", 1) and residual("llama-2-7b", 2) and residual("gemma-3-4b", 1)
    vulkan = ops("rtx-4090", "llama.cpp-vulkan", 1)
    assert "ffn_act" in vulkan and not bias & vulkan
    assert (bias | {"ffn_act"}) <= ops("m4-pro", "llama.cpp", 1)
    # the up product runs in the gate's kernel: the same bytes, no launches of its own
    def up_over_gate(device, batch):
        e = rp.estimate(model="qwen2.5-7b", quant="Q4_K_M", device=device, prompt_tokens=0, gen_tokens=16, batch=batch)
        b = e.breakdown.set_index("op")
        assert b.loc["ffn_up", "bytes"] == b.loc["ffn_gate", "bytes"]
        return b.loc["ffn_up", "seconds"] / b.loc["ffn_gate", "seconds"]
    assert up_over_gate("rtx-4090", 1) < 0.95 and up_over_gate("rtx-4090", 2) == pytest.approx(1, rel=1e-12)
    assert up_over_gate("m4-pro", 1) == pytest.approx(1, rel=1e-12)
    cuda = rp.engine("llama.cpp").backend("cuda")
    assert cuda.matvec_fused_bias and cuda.matvec_fused_glu
    assert not rp.engine("llama.cpp").backend("metal").matvec_fused_glu


def test_llama_cpp_prompts_on_m5_run_on_the_neural_accelerators():
    """llama.cpp's Metal backend multiplies prompt batches through the tensor API on M5 (ggml-metal-device.m), so its
    GEMMs run at the per-core accelerators' fp16 rate, 4x the SIMD rate per core and clock: a 10-core M5's pp512 is
    more than twice an M4 10-core's (same cores and clock), while its decode gains only by bandwidth (153 / 120 GB/s at
    most)."""
    kw = dict(model="llama-2-7b", quant="Q4_0", prompt_tokens=512, gen_tokens=128)
    m5, m4 = rp.estimate(device="m5-10c", **kw), rp.estimate(device="m4-10c", **kw)
    b = m5.breakdown
    ffn = b[(b.phase == "prefill") & (b.op == "ffn_up")].iloc[0]
    assert ffn.compute == "fp16 matrix"
    assert ffn.flops_per_s > 2 * rp.device("m5-10c").peak_flops("fp16", "vector")  # above the whole SIMD peak
    assert m5.prefill_tokens_per_s > 2.5 * m4.prefill_tokens_per_s
    assert 1.0 < m5.decode_tokens_per_s / m4.decode_tokens_per_s < 153 / 120 * 1.02  # bandwidth, not compute


def test_moe_experts_run_the_engines_kernels_with_their_own_row_tiles():
    """MoE expert GEMMs take the engine's kernel for the weight format and token count, as a dense layer's do:
    llama.cpp's quantized experts run MMQ on int8 tensor cores at a prompt (MMVQ for a token), not fp32 GEMMs. Each
    expert's rows fill row tiles of their own, so 128 experts sharing 512 tokens x 8 run below the same FLOPs
    through 8 experts (32 rows each on average, scattered: about 1.5 tiles of 32 rows per expert)."""
    def moe(experts, top_k):
        return rp.Model.from_hf_config({
            "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": 2048,
            "intermediate_size": 6144, "moe_intermediate_size": 768, "num_hidden_layers": 1, "num_attention_heads": 32,
            "num_key_value_heads": 4, "head_dim": 128, "num_experts": experts, "num_experts_per_tok": top_k,
            "vocab_size": 151936, "max_position_embeddings": 40960, "rms_norm_eps": 1e-6, "torch_dtype": "bfloat16",
            "norm_topk_prob": True, "decoder_sparse_step": 1, "mlp_only_layers": []})

    def expert_op(model, quant, device, tokens):
        b = rp.estimate(model=model, quant=quant, device=device, prompt_tokens=tokens, gen_tokens=0,
                        flash_attention=True).breakdown
        return b[(b.phase == "prefill") & (b.op == "ffn_up_exps")].iloc[0]

    assert expert_op(moe(128, 8), "Q4_K_M", "h100-sxm", 512).compute == "int8 matrix"  # MMQ
    assert expert_op(moe(128, 8), "Q4_K_M", "h100-sxm", 4).compute == "fp32 vector"    # MMVQ
    sparse = expert_op(moe(128, 8), "BF16", "m4-max-40c", 512)
    dense = expert_op(moe(8, 8), "BF16", "m4-max-40c", 512)
    assert sparse.flops == pytest.approx(dense.flops, rel=1e-9)
    assert dense.flops_per_s / sparse.flops_per_s == pytest.approx(1.47, abs=0.05)


def test_llama_cpp_mmq_runs_each_experts_rows_in_the_batchs_tile():
    """ggml-cuda's MMQ picks its token tile for the batch (mul_mat_q_switch_J from ncols_max = the batch's tokens):
    in a 512-token prompt every expert of Qwen3-30B-A3B (top-8 of 128, 32 rows each on average) runs a 128-row tile
    a quarter full, its unpacking as well as its MMAs; Metal's kernel_mul_mm_id tiles each expert's own rows. A batch
    of 32 tokens picks the 32-row tile, which its expert products (one row per expert on average) fill no better."""
    def experts(device, tokens, model="qwen3-30b-a3b"):
        b = rp.estimate(model=model, quant="Q4_K_M", device=device, prompt_tokens=tokens, gen_tokens=0,
                        flash_attention=True, ubatch_tokens=tokens).breakdown
        return b[(b.phase == "prefill") & (b.op == "ffn_gate_exps")].iloc[0]

    kernels = rp.engine("llama.cpp").backend("cuda").linear_kernels
    mmq = next(k for k in kernels if k.name == "mul_mat_q (MMQ)")
    assert mmq.moe_row_tile == "batch" and mmq.moe_launches == 3 and mmq.launches == 2
    assert next(k for k in kernels if k.name.startswith("mul_mat_vec_q")).moe_row_tile == "expert"
    # per routed row the 512-token prompt's experts run at a quarter of a dense layer's MMQ rate (the tile's fill),
    # every component of the kernel stretched alike
    dense = rp.estimate(model="llama-3.1-8b", quant="Q4_K_M", device="h100-sxm", prompt_tokens=512, gen_tokens=0,
                        flash_attention=True).breakdown
    gate = dense[(dense.phase == "prefill") & (dense.op == "ffn_gate")].iloc[0]
    moe = experts("h100-sxm", 512)
    assert moe.compute == gate.compute == "int8 matrix"
    # (768 tiles of the experts' gate on 132 SMs: whole waves, 97 % busy; the dense gate stream-K; the experts' third
    # launch, sorting the rows, beside them)
    assert moe.flops_per_s / gate.flops_per_s == pytest.approx(0.25 * 768 / 792, rel=0.08)
    # Metal's per-expert tiles lose far less on the same routing
    metal_moe = experts("m4-max-40c", 512)
    metal_dense = rp.estimate(model="llama-3.1-8b", quant="Q4_K_M", device="m4-max-40c", prompt_tokens=512,
                              gen_tokens=0, flash_attention=True).breakdown
    metal_gate = metal_dense[(metal_dense.phase == "prefill") & (metal_dense.op == "ffn_gate")].iloc[0]
    assert metal_moe.flops_per_s / metal_gate.flops_per_s > 0.5


def test_llama_cpp_moe_layers_count_their_routing_and_combining_kernels():
    """A MoE layer's kernels besides its products, per backend as ggml fuses them: CUDA runs the router's softmax,
    top-k and normalisation as one topk_moe kernel, Metal as six dispatches; both weight the experts' outputs and sum
    them in two; the layer's residual add is a kernel of its own after them (one token: each about its fixed
    time, the bytes of a 2048-wide row beside it)."""
    def decode(device):
        b = rp.estimate(model="qwen3-30b-a3b", quant="Q4_K_M", device=device, prompt_tokens=16, gen_tokens=16,
                        flash_attention=True).breakdown
        rows = b[b.phase == "decode"].set_index("op")
        return rows, rows.loc["attn_norm", "seconds"] / rows.loc["attn_norm", "count"]  # one kernel's fixed time

    layers = 48  # Qwen3-30B-A3B
    # (CUDA runs the attention's residual add in the output projection's mat-vec at one token, Metal does not)
    for device, topk, adds in (("h100-sxm", 1, 1), ("m4-max-40c", 6, 2)):
        rows, one = decode(device)
        assert rows.loc["moe_topk", "bound"] == "overhead"
        assert rows.loc["moe_topk", "seconds"] / rows.loc["moe_topk", "count"] == pytest.approx(topk * one, rel=0.02)
        assert rows.loc["moe_combine", "seconds"] / rows.loc["moe_combine", "count"] == pytest.approx(2 * one, rel=0.02)
        # the residual add after the experts is one more kernel a layer
        assert rows.loc["residual_add", "count"] == adds * layers * 16
