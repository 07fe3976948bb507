"""Every engine file validates against engine_db/schema.json, and the schema holds what the core requires."""
import copy
import json
from pathlib import Path

import pytest

import rooflinepy as rp

jsonschema = pytest.importorskip("jsonschema")

DB = Path(__file__).resolve().parents[2] / "engine_db"
FILES = sorted(p for p in DB.glob("*.json") if p.name != "schema.json")


@pytest.fixture(scope="module")
def schema():
    return json.loads((DB / "schema.json").read_text())


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_file_validates_against_schema(path, schema):
    doc = json.loads(path.read_text())
    jsonschema.validate(doc, schema)
    assert doc["id"] == path.stem
    assert rp.engine(doc["id"]).id == doc["id"]


def test_the_schema_refuses_a_backend_without_its_flash_attention_default(schema):
    """The core requires each written-out backend to say whether the engine runs flash attention unless told;
    the schema says the same, so an editor flags the omission before the library does."""
    doc = json.loads((DB / "llama.cpp.json").read_text())
    broken = copy.deepcopy(doc)
    for backend in broken["backends"].values():
        backend.pop("flash_attention_default", None)
    with pytest.raises(jsonschema.ValidationError, match="flash_attention_default"):
        jsonschema.validate(broken, schema)


def test_every_flash_attention_default_names_its_source():
    for path in FILES:
        for name, backend in json.loads(path.read_text()).get("backends", {}).items():
            if "flash_attention_default" in backend:
                fa = backend["flash_attention_default"]
                assert isinstance(fa["value"], bool) and len(fa["source"]) > 40, (path.name, name)


def test_llama_cpp_runs_prompts_in_micro_batches_on_every_backend():
    """n_ubatch is llama.cpp's (llama_context), not a backend's: the backends without a fit of their own (Vulkan,
    CPU) split a long prompt as CUDA and Metal do, and size their activations for one micro-batch."""
    ids = [e for e in rp.engines() if e == "llama.cpp" or e.startswith("llama.cpp-")]
    assert "llama.cpp-vulkan" in ids and "llama.cpp-cpu" in ids
    for eid in ids:
        for b in rp.engine(eid).backends:
            assert b.prefill_ubatch_tokens == 512, (eid, b.backend)
    kw = dict(model="llama-3.1-8b", quant="Q4_0", device="rtx-4090", prompt_tokens=4096, gen_tokens=0)
    vulkan, cuda = rp.estimate(engine="llama.cpp-vulkan", **kw), rp.estimate(engine="llama.cpp-cuda", **kw)
    assert vulkan.memory["activations"] == pytest.approx(cuda.memory["activations"], rel=0.05)


def test_llama_cpp_vulkan_runs_prompts_on_the_matrix_units_in_fp16():
    """ggml-vulkan's mul_mm with cooperative matrices (RDNA3.5's WMMA on Strix Halo under RADV): the prompt's
    projections are fp16 matrix work with f16 sums (the f16acc pipelines), not the generic description's fp32, at
    the fp16 rate on AMD (twice that only where a device lists fp16_acc16: GeForce); one token stays a mat-vec
    stream."""
    kw = dict(model="llama-2-7b", quant="Q4_0", device="ryzen-ai-max-395", engine="llama.cpp-vulkan")
    pp = rp.estimate(prompt_tokens=512, gen_tokens=0, **kw).breakdown
    projections = pp[pp.op.isin(["attn_q", "ffn_gate", "ffn_down"])]
    assert set(projections.compute) == {"fp16_acc16 matrix"}
    bf16 = rp.estimate(prompt_tokens=512, gen_tokens=0, **dict(kw, quant="BF16")).breakdown
    f16 = rp.estimate(prompt_tokens=512, gen_tokens=0, **dict(kw, quant="F16")).breakdown
    ffn = lambda b: b[b.op == "ffn_up"].iloc[0]
    assert ffn(bf16).compute == "fp16 matrix"
    assert ffn(f16).seconds == pytest.approx(ffn(bf16).seconds, rel=0.01)  # one rate on RDNA3.5
    tg = rp.estimate(prompt_tokens=0, gen_tokens=16, **kw)
    assert tg.decode_bound == "memory:dram"


def test_every_kernel_occupancy_and_family_gate_names_a_device_family_the_database_has():
    families = {rp.device(d).family for d in rp.devices()}
    named = set()
    for e in rp.engines():
        for b in rp.engine(e).backends:
            for k in b.linear_kernels:
                for family, o in k.by_family.items():
                    assert family in families, (e, b.backend, k.name, family, sorted(families))
                    assert o["source"], (e, b.backend, k.name, family)
                    named.add(family)
                for family in k.families:  # a kernel run on some families only: a misspelt one would never run
                    assert family in families, (e, b.backend, k.name, family, sorted(families))
    assert {"amd-rdna3", "amd-rdna3.5", "amd-rdna4"} <= named


def test_llama_cpp_mmq_tiles_per_rdna_workgroup_processor_without_split_k():
    """On Strix Halo a 1024 x 4096 Q4_0 weight at 128 tokens is 8 MMQ tiles on 20 WGPs: 8 busy, not the 40 CUs
    filled by split-K, so its rate is about half that of a 4096 x 4096 weight's 32 tiles."""
    def rate(m):
        model = rp.Model.from_hf_config({
            "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
            "intermediate_size": m, "num_hidden_layers": 1, "num_attention_heads": 32, "num_key_value_heads": 32,
            "vocab_size": 32000, "max_position_embeddings": 4096, "rms_norm_eps": 1e-5, "torch_dtype": "float16"})
        b = rp.estimate(model=model, quant="Q4_0", device="strix-halo", engine="llama.cpp-rocm", prompt_tokens=128,
                        gen_tokens=0, flash_attention=True).breakdown
        r = b[(b.phase == "prefill") & (b.op == "ffn_up")].iloc[0]
        return r.flops / r.seconds
    assert rate(1024) / rate(4096) == pytest.approx(0.5, abs=0.08)


def test_llama_cpp_mmq_occupies_every_rdna_generation_as_ggml_configures_it():
    """ggml's RDNA3, RDNA3.5 and RDNA4 MMQ configurations all have stream_k false and HIP counts WGPs on each: every
    MMQ kernel of the ROCm backend holds a tile per WGP without split-K on all three, and the devices of those
    families resolve to them."""
    rocm = next(b for b in rp.engine("llama.cpp").backends if b.backend == "rocm")
    mmq = [k for k in rocm.linear_kernels if k.name.startswith("mul_mat_q (MMQ)")]
    # RDNA2's dp4a, the RDNA3 / RDNA3.5 thresholds of Q6_K (two), Q2_K and IQ2, CDNA's own, and MMQ for the rest
    assert len(mmq) == 7
    rdna = ("amd-rdna3", "amd-rdna3.5", "amd-rdna4")
    cdna = next(k for k in mmq if k.name == "mul_mat_q (MMQ), CDNA")
    assert cdna.families == ["amd-cdna3", "amd-cdna4"] and not set(cdna.by_family) & set(rdna)
    for k in (k for k in mmq if k.unit == "matrix" and k is not cdna):  # the dp4a kernel of RDNA2 runs on the vector ALUs
        for family in (f for f in k.families or rdna if f in rdna):
            o = k.by_family[family]
            assert (o["tiles_per_unit"], o["split_k"]) == (0.5, False), (k.name, family, o)
    assert {rp.device(d).family for d in ("rx-7900-xtx", "rx-9070-xt", "strix-halo")} == {
        "amd-rdna3", "amd-rdna4", "amd-rdna3.5"}


def test_llama_cpp_mmq_issues_its_architecture_s_instruction_count(tmp_path):
    """MMQ's ALU work is counted on sm_86 (calibration/mmq_sass.py); each other family carries its own loop's count
    as by_family alu_ops_scale (GA100: I2F where sm_86 has I2FP, 8 % more), which stretches the kernel's issue time
    there and nowhere else: an A100 renamed into the GA10x family runs the same prefill faster by about that much."""
    cuda = next(b for b in rp.engine("llama.cpp").backends if b.backend == "cuda")
    mmq = next(k for k in cuda.linear_kernels if k.name == "mul_mat_q (MMQ)")
    scales = {f: o["alu_ops_scale"] for f, o in mmq.by_family.items()}
    assert scales["nvidia-ampere"] == pytest.approx(20.30 / 18.79, abs=0.002)
    assert "nvidia-ampere-ga10x" not in scales and "nvidia-ada" not in scales  # sm_86 and sm_89 issue the reference count
    assert all(1.0 <= v < 1.1 for v in scales.values()), scales
    assert "--arch sm_80" in mmq.by_family["nvidia-ampere"]["source"]
    profile = json.loads(rp.device("a100-sxm-80gb").to_json())
    profile.update(id="a100-as-ga10x", family="nvidia-ampere-ga10x", aliases=[])
    (tmp_path / "a100-as-ga10x.json").write_text(json.dumps(profile))
    as_ga10x = rp.load_device(tmp_path / "a100-as-ga10x.json")

    def pp512(device):
        return rp.estimate("llama-2-7b", "Q4_0", device, engine="llama.cpp", prompt_tokens=512,
                           gen_tokens=0).prefill_tokens_per_s
    # most of a 512-token prompt is MMQ's issue time on an A100: 5-8 % longer with GA100's loop
    assert 1.04 < pp512(as_ga10x) / pp512("a100-sxm-80gb") < scales["nvidia-ampere"]


def test_llama_cpp_mmq_multiplies_fp4_weights_in_fp4_on_sm120_and_sm121_only():
    """ggml-cuda runs MXFP4 / NVFP4 weights through block-scaled FP4 MMA where blackwell_mma_available (sm_120
    GeForce / RTX PRO Blackwell, sm_121 GB10) and through its int8 MMQ everywhere else, B200's sm_100 included; the
    Q8_0 matrices of the MXFP4_MOE file stay int8 on every GPU."""
    native = {"rtx-5090", "rtx-5080", "rtx-pro-6000-blackwell", "gb10"}
    for dev in sorted(native | {"rtx-4090", "h100-sxm", "b200", "a100-sxm-80gb"}):
        b = rp.estimate(model="gpt-oss-20b", quant="mxfp4", device=dev, engine="llama.cpp", prompt_tokens=512,
                        gen_tokens=0).breakdown
        experts = b[b.op.isin(["ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"])]
        assert set(experts.compute) == {"fp4 matrix" if dev in native else "int8 matrix"}, dev
        assert set(b[b.op == "attn_output"].compute) == {"int8 matrix"}, dev
    cuda = next(x for x in rp.engine("llama.cpp").backends if x.backend == "cuda")
    fp4 = next(k for k in cuda.linear_kernels if k.families)
    assert fp4.families == ["nvidia-blackwell-gb20x", "nvidia-gb10"] and fp4.compute == "fp4"
    assert rp.device("b200").family not in fp4.families


def test_llama_cpp_cuda_flash_attention_at_depth_is_issue_bound_on_datacenter_gpus_tensor_bound_on_geforce():
    """fattn-mma-f16's K/V loop issues ~42 instructions per score element besides its HMMAs (25 when a GQA group
    shares a block), counted in its SASS; 128 issued per SM and clock leave an A100's tensor cores 3/4 busy and an
    H100's about a third (FlashAttention-2's figure on Hopper; its SMs issue at 1980 MHz, its tensor peak is quoted
    at 1830: 0.37 of it), while a GeForce card, whose tensor cores sum Q·Kᵀ in
    f32 at half rate and P·V in f16 at full rate, stays bound by its products."""
    def attention_rate(dev, model):
        e = rp.estimate(model=model, quant="Q4_0", device=dev, engine="llama.cpp", prompt_tokens=512, gen_tokens=0,
                        context_tokens=16384, flash_attention=True)
        row = e.breakdown[(e.breakdown.phase == "prefill") & (e.breakdown.op == "attention")].iloc[0]
        assert row.bound == "compute"
        return row.flops / row.seconds
    def peak(dev, fmt="fp16"):
        d = rp.device(dev)
        return d.peak_flops(fmt, "matrix") * d.efficiency["compute_fraction"]
    assert attention_rate("a100-pcie-80gb", "llama-2-7b") == pytest.approx(0.753 * peak("a100-pcie-80gb"), rel=0.02)
    assert attention_rate("h100-sxm", "llama-2-7b") / peak("h100-sxm") == pytest.approx(0.37, abs=0.02)
    # a GQA group per block: fewer instructions, closer to the tensor rate
    assert attention_rate("h100-sxm", "llama-3.1-8b") > 1.4 * attention_rate("h100-sxm", "llama-2-7b")
    # GeForce: the harmonic mean of the f32-sum and f16-sum rates (165.2 and 330.3 TFLOPS on an RTX 4090)
    harmonic = 2 / (1 / peak("rtx-4090") + 1 / peak("rtx-4090", "fp16_acc16"))
    assert attention_rate("rtx-4090", "llama-2-7b") == pytest.approx(harmonic, rel=0.02)
    # no instruction count for Metal's kernel: its products alone
    cuda = next(x for x in rp.engine("llama.cpp").backends if x.backend == "cuda")
    assert cuda.flash_pv_format == "fp16_acc16" and "default" in cuda.flash_issue_per_score


def test_llama_cpp_cuda_f16_weights_multiply_with_f16_sums_at_twice_the_geforce_rate():
    """ggml_cuda_mul_mat_cublas runs F16 weights in CUBLAS_COMPUTE_16F, which GeForce tensor cores run at twice
    their f32-sum rate; BF16 weights take f32 sums; data-center GPUs run both at one rate."""
    def linear(dev, quant):
        b = rp.estimate(model="llama-2-7b", quant=quant, device=dev, engine="llama.cpp", prompt_tokens=512,
                        gen_tokens=0).breakdown
        return b[b.op == "ffn_up"].iloc[0]
    assert linear("rtx-4090", "F16").compute == "fp16_acc16 matrix"
    assert linear("rtx-4090", "BF16").compute != "fp16_acc16 matrix"
    ratio = lambda dev: linear(dev, "BF16").seconds / linear(dev, "F16").seconds
    assert ratio("rtx-4090") == pytest.approx(2.0, rel=0.05)
    assert ratio("a100-sxm-80gb") == pytest.approx(1.0, rel=0.05)


def test_llama_cpp_prompts_convert_a_quantized_kv_cache_to_f16_before_flash_attention_where_the_backend_does():
    """ggml-cuda's tile and mma flash-attention kernels need f16 K/V: a q8_0 cache is converted whole (every cached
    position) per micro-batch and layer, then read in f16, so a prompt at depth moves more bytes than with an f16
    cache. ggml-metal does the same for legacy quants from 32 queries (below, its kernels read q8_0 in place),
    ggml-vulkan for q8_0 from 64 queries except with NVIDIA's cooperative_matrix2 (and on Intel Xe1). Decode's vec
    kernels read q8_0 themselves."""
    def attention(dev, kv, phase="prefill", engine="llama.cpp", prompt=512):
        e = rp.estimate(model="llama-3.1-8b", quant="Q4_0", device=dev, engine=engine, prompt_tokens=prompt,
                        gen_tokens=8, context_tokens=16384, kv_dtype=kv, flash_attention=True)
        return e.breakdown[(e.breakdown.phase == phase) & (e.breakdown.op == "attention")].iloc[0]
    cache_f16 = 32 * 2 * (16384 + 512) * 8 * 128 * 2  # layers x K,V x positions x KV heads x head size x 2 B
    # q8_0 (34 bytes per 32) read and f16 written by the conversion, then read as f16 by the kernel
    converted = cache_f16 * (34 / 64 + 1)
    for dev, engine in [("rtx-4090", "llama.cpp"), ("m4-max-40c", "llama.cpp"), ("rx-7900-xtx", "llama.cpp-vulkan"),
                        ("arc-b580", "llama.cpp-vulkan")]:
        f16, q8 = attention(dev, "f16", engine=engine), attention(dev, "q8_0", engine=engine)
        assert q8.bytes - f16.bytes == pytest.approx(converted, rel=0.01), (dev, engine)
        assert q8.seconds >= f16.seconds
    # read as stored: Vulkan on NVIDIA (coopmat2) and Intel Xe1, Metal's bf16 cache and its prompts under 32 queries
    for dev, engine, kv, prompt in [("rtx-4090", "llama.cpp-vulkan", "q8_0", 512),
                                    ("arc-a770", "llama.cpp-vulkan", "q8_0", 512),
                                    ("m4-max-40c", "llama.cpp", "q8_0", 16),
                                    ("m4-max-40c", "llama.cpp", "q4_0", 16),
                                    ("rx-7900-xtx", "llama.cpp-vulkan", "q4_0", 512)]:
        f16, kvx = attention(dev, "f16", engine=engine, prompt=prompt), attention(dev, kv, engine=engine, prompt=prompt)
        assert kvx.bytes < f16.bytes, (dev, engine, kv, prompt)
    assert attention("m4-max-40c", "bf16").bytes == pytest.approx(attention("m4-max-40c", "f16").bytes)
    assert attention("rtx-4090", "bf16").bytes == pytest.approx(attention("rtx-4090", "f16").bytes + cache_f16 * 2,
                                                                rel=0.01)
    assert attention("rtx-4090", "q8_0", "decode").bytes < attention("rtx-4090", "f16", "decode").bytes
    backends = {b.backend: b.flash_attention_kv_to_f16 for b in rp.engine("llama.cpp").backends}
    assert backends["cuda"] == {"formats": ["*"], "min_queries": 3, "except_families": []}
    assert backends["metal"]["formats"] == ["q4_0", "q4_1", "q5_0", "q5_1", "q8_0"]
    assert backends["any"]["formats"] == []  # the CPU backend reads every cache as stored


def test_llama_cpp_metal_unfused_attention_reaches_the_m5_neural_accelerators_and_flash_attention_does_not():
    """ggml-metal runs the unfused KQ / KQV products through kernel_mul_mm, which uses the Metal 4 tensor API (the
    per-core neural accelerators) on M5 GPUs, while kernel_flash_attn_ext multiplies simdgroup matrices on the ALUs:
    on an M5 Max the unfused products run at the fp16 matrix rate, flash attention at the ALUs'; on an M4 Max, whose
    simdgroup matrices are the ALUs either way, both at one rate."""
    def attention(dev, fa):
        e = rp.estimate(model="llama-3.1-8b", quant="Q4_0", device=dev, engine="llama.cpp", prompt_tokens=512,
                        gen_tokens=1, context_tokens=16384, flash_attention=fa)
        return e.breakdown[(e.breakdown.phase == "prefill") & (e.breakdown.op == "attention")].iloc[0]
    alu = rp.device("m5-max-40c").peak_flops("fp32")
    flash, unfused = attention("m5-max-40c", True), attention("m5-max-40c", False)
    assert flash.flops_per_s <= alu * 1.0001
    assert unfused.flops_per_s > 1.05 * flash.flops_per_s
    m4_flash, m4_unfused = attention("m4-max-40c", True), attention("m4-max-40c", False)
    assert m4_unfused.flops_per_s == pytest.approx(m4_flash.flops_per_s, rel=0.01)


def test_mlx_prompts_of_head_size_256_run_the_unfused_attention():
    """mlx's sdpa sends prompts of head size 192 and 256 to its unfused path (ScaledDotProductAttention::use_fallback):
    with flash attention on, a Gemma 3 4B prompt (head size 256) attends exactly as with it off, scores through
    memory and their buffers counted, while Qwen3 8B (head size 128) runs the fused kernel."""
    kw = dict(quant="mlx-q4", device="m4-max-40c", engine="mlx", prompt_tokens=2048, gen_tokens=16, context_tokens=8192)
    def attention(model, fa):
        e = rp.estimate(model=model, flash_attention=fa, **kw)
        return e, e.breakdown[(e.breakdown.phase == "prefill") & (e.breakdown.op == "attention")].iloc[0]
    mlx = next(x for x in rp.engine("mlx").backends if x.backend == "any")
    assert mlx.flash_attention_head_dims == [64, 72, 80, 96, 128]
    (on, a_on), (off, a_off) = attention("gemma-3-4b", True), attention("gemma-3-4b", False)
    assert a_on.bytes == a_off.bytes and a_on.seconds == a_off.seconds
    assert on.memory["activations"] == off.memory["activations"]
    assert on.flash_attention  # the engine's choice is reported; the kernel falls back per head size
    (q_on, b_on), (q_off, b_off) = attention("qwen3-8b", True), attention("qwen3-8b", False)
    assert b_on.bytes < 0.1 * b_off.bytes
    assert q_on.memory["activations"] < q_off.memory["activations"]
    # decode keeps the vector kernel: unaffected by the prompt's fallback
    d_on = on.breakdown[(on.breakdown.phase == "decode") & (on.breakdown.op == "attention")].iloc[0]
    d_off = off.breakdown[(off.breakdown.phase == "decode") & (off.breakdown.op == "attention")].iloc[0]
    assert d_on.bytes < d_off.bytes


def test_llama_cpp_vulkan_without_cooperative_matrices_runs_integer_dot_products_on_the_vector_alus():
    """ggml-vulkan enables KHR cooperative matrices on RDNA3+ and Intel Xe2 but not on RDNA2 (no WMMA) or the Arc
    A-series (left out for its regressions): there a prompt's quantized projections run mul_mmq's packed int8 dot
    products on the vector ALUs, with the unpacking around them, and take several times the coopmat path's time."""
    kw = dict(model="llama-2-7b", quant="Q4_0", engine="llama.cpp-vulkan", prompt_tokens=512, gen_tokens=0)
    for dev, compute in (("rx-6900-xt", "int8 vector"), ("arc-a770", "int8 vector"), ("arc-b580", "fp16_acc16 matrix"),
                         ("rx-7900-xtx", "fp16_acc16 matrix")):
        b = rp.estimate(device=dev, **kw).breakdown
        assert set(b[b.op.isin(["attn_q", "ffn_gate", "ffn_down"])].compute) == {compute}, dev
    # the A770's XMX units idle under Vulkan: far below what its fp16 matrix peak would give
    a770 = rp.estimate(device="arc-a770", **kw)
    ffn = a770.breakdown[a770.breakdown.op == "ffn_gate"].iloc[0]
    assert ffn.flops / ffn.seconds < 0.5 * rp.device("arc-a770").peak_flops("fp16", "matrix")


def test_llama_cpp_rocm_on_rdna2_runs_mmq_dp4a_path_on_the_vector_alus():
    """RDNA2 has no WMMA: ggml's HIP build compiles MMQ's dp4a path, whose K loop issues about twice the MMA loop's
    integer work per multiply-add (calibration/mmq_sass.py --dp4a) beside its int8 dot products."""
    b = rp.estimate(model="llama-2-7b", quant="Q4_K_M", device="rx-6900-xt", engine="llama.cpp-rocm", prompt_tokens=512,
                    gen_tokens=0).breakdown
    assert set(b[b.op.isin(["attn_q", "ffn_gate", "ffn_down"])].compute) == {"int8 vector"}
    rocm = next(x for x in rp.engine("llama.cpp").backends if x.backend == "rocm")
    dp4a = next(k for k in rocm.linear_kernels if k.name == "mul_mat_q (MMQ), dp4a")
    assert dp4a.families == ["amd-rdna2"] and dp4a.alu_ops_scale["q4_0"] > 2


def test_llama_cpp_cuda_mmq_runs_per_sm_and_clock_on_rtx_blackwell_as_on_ada():
    """MMQ's unpacking instructions are issue slots at the SMs' dispatch rate ("alu_format": "issue"): RTX
    Blackwell's unified FP32 / INT32 lanes double its INT32 peak per SM and clock but not the loop's pace, so a
    prompt's MMQ GEMM on an RTX 5090 takes what its SMs x clock say against an RTX 4090's."""
    cuda = next(x for x in rp.engine("llama.cpp").backends if x.backend == "cuda")
    mmq = next(k for k in cuda.linear_kernels if k.name == "mul_mat_q (MMQ)")
    assert mmq.alu_format == "issue"
    seconds = {}
    for dev in ("rtx-4090", "rtx-5090"):
        b = rp.estimate(model="llama-2-7b", quant="Q4_0", device=dev, engine="llama.cpp-cuda", prompt_tokens=4096,
                        gen_tokens=0, ubatch_tokens=4096).breakdown
        row = b[(b.phase == "prefill") & (b.op == "ffn_down")].iloc[0]
        assert row.bound == "compute"
        seconds[dev] = row.seconds
    d4, d5 = rp.device("rtx-4090"), rp.device("rtx-5090")
    sm_clock = (d5.compute_units * d5.boost_clock_hz) / (d4.compute_units * d4.boost_clock_hz)
    assert seconds["rtx-4090"] / seconds["rtx-5090"] == pytest.approx(sm_clock, rel=0.08)


def test_llama_cpp_cuda_on_volta_runs_dp4a_mmq_under_64_tokens_and_cublas_in_f16_beyond():
    """Volta has fp16 tensor cores but no int8 MMA: ggml_cuda_should_use_mmq keeps MMQ (its dp4a path) only under
    MMQ_DP4A_MAX_BATCH_SIZE = 64 tokens; larger batches dequantize the weights to f16 for cuBLAS. Turing and newer
    keep MMQ on the int8 tensor cores at every batch."""
    def path(dev, tokens):
        b = rp.estimate(model="llama-2-7b", quant="Q4_0", device=dev, engine="llama.cpp-cuda", prompt_tokens=tokens,
                        gen_tokens=0, ubatch_tokens=tokens).breakdown
        return b[(b.phase == "prefill") & (b.op == "ffn_down")].iloc[0].compute
    assert path("v100-sxm2", 63) == "int8 vector"
    assert path("v100-sxm2", 64) == "fp16_acc16 matrix"
    assert path("v100-sxm2", 512) == "fp16_acc16 matrix"
    assert path("rtx-2080-ti", 512) == path("a100-sxm-80gb", 32) == "int8 matrix"


def test_llama_cpp_on_a_cpu_runs_ggml_cpu_kernels_timed_by_their_instruction_counts():
    """A CPU (hardware_db kind "cpu") runs llama.cpp's CPU backend, never its vendor's GPU backend: repacked Q4_0 /
    Q4_K through the REPACK buffer's gemm, Q6_K through ggml_vec_dot per (row, token), each kernel's instructions
    besides its dot products (calibration/cpu_kernels_asm.py) at the cores' issue rate beside its dot products at the
    int8 peak; one token streams the weights (bound by the cores' read bandwidth)."""
    dev = rp.device("ryzen-ai-max-395-cpu")
    assert (dev.kind, dev.vendor) == ("cpu", "amd")
    with pytest.raises(ValueError, match="does not run on cpu devices"):
        rp.estimate(model="llama-2-7b", quant="Q4_0", device=dev.id, engine="vllm")
    cpu = next(x for x in rp.engine("llama.cpp").backends if x.backend == "cpu")
    kernels = {k.name: k for k in cpu.linear_kernels}
    gemm = kernels["repack gemm (8 interleaved rows), 4+ tokens"]
    vec_dot = kernels["vec_dot (generic), 2+ tokens"]
    assert gemm.alu_format == vec_dot.alu_format == "issue" and gemm.families == ["amd-zen4", "amd-zen5"]
    rows = {}
    for quant in ("Q4_0", "Q6_K"):
        e = rp.estimate(model="llama-2-7b", quant=quant, device=dev.id, prompt_tokens=512, gen_tokens=128)
        assert e.engine == "llama.cpp"
        b = e.breakdown
        rows[quant] = b[(b.phase == "prefill") & (b.op == "ffn_down")].iloc[0]
        assert rows[quant].compute == "int8 vector" and rows[quant].bound == "compute"
        assert b[(b.phase == "decode") & (b.op == "ffn_down")].iloc[0].bound == "memory:dram"
    int8 = dev.peak_flops("int8", "vector")
    issue = dev.compute_units * 4 * dev.boost_clock_hz
    per_mac = {"Q4_0": 2 / int8 + gemm.alu_ops_per_mac / issue,
               "Q6_K": 2 / int8 + vec_dot.alu_ops_per_mac * vec_dot.alu_ops_scale["q6_k"] / issue}
    macs = 32 * 512 * 4096 * 11008  # the prompt's down projections
    barriers = 32 * 2 * dev.efficiency["launch_overhead_s"]  # the activations' conversion and the node's end
    for quant, row in rows.items():  # within the generic one dequantization of each weight per call (about 0.2 %)
        assert row.seconds == pytest.approx(macs * per_mac[quant] / dev.efficiency["compute_fraction"] + barriers,
                                            rel=3e-3)


def test_llama_cpp_rocm_keeps_moe_layers_of_64_experts_or_more_on_mmq():
    """On RDNA3 / RDNA3.5 ggml sends Q6_K products of more than 256 tokens to dequantization + hipBLAS, but not those
    of MoE layers of 64 experts or more (mmq.cu, the hipBLAS path's per-expert synchronization): Qwen3-30B-A3B's
    128-expert Q6_K down projections stay on MMQ in a 512-token prompt while a dense model's Q6_K matrices do not."""
    kw = dict(quant="Q4_K_M", device="strix-halo", engine="llama.cpp-rocm", prompt_tokens=512, gen_tokens=0)
    moe = rp.estimate(model="qwen3-30b-a3b", **kw).breakdown
    assert set(moe[moe.op == "ffn_down_exps"].compute) == {"int8 matrix"}
    dense = rp.estimate(model="llama-3.1-8b", **kw).breakdown
    assert "fp16 matrix" in set(dense[dense.op.isin(["attn_v", "ffn_down"])].compute)  # its Q6_K layers


def test_llama_cpp_tiles_as_each_backend_picks_them():
    """The row tiles of llama.cpp's GEMMs as ggml picks them: MMQ's token tile J from its configuration's list (steps
    of 8 on NVIDIA, 16 on RDNA) for the batch's tokens, every expert of a MoE layer running that tile (CUDA, HIP, and
    Vulkan's mul_mm_id, whose shader size follows the batch); Metal's kernel_mul_mm a fixed 32-token tile."""
    e = rp.engine("llama.cpp")

    def kernel(backend, prefix):
        return next(k for k in e.backend(backend).linear_kernels if k.name.startswith(prefix) and k.unit == "matrix")

    assert (kernel("cuda", "mul_mat_q (MMQ)").row_tile_step, kernel("rocm", "mul_mat_q (MMQ)").row_tile_step) == (8, 16)
    for backend, prefix in (("cuda", "mul_mat_q (MMQ)"), ("rocm", "mul_mat_q (MMQ)"), ("vulkan", "mul_mm (cooperative")):
        assert kernel(backend, prefix).moe_row_tile == "batch", backend
    metal = kernel("metal", "kernel_mul_mm")
    assert (metal.tile_m, metal.row_tile_step, metal.moe_row_tile) == (32, 32, "expert")
