"""rp.serve / rp.serve_sweep / rp.parse_parallel: the serving model's Python face, its invariants over random
deployments and loads (hypothesis), and its refusals."""
import json
import math
import re

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import rooflinepy as rp
from rooflinepy._fields import SERVING_FIELDS

LOAD = dict(prompt_tokens=1024, gen_tokens=1024)
BASE = ("llama-3.1-8b", "fp8", "h100-sxm")
# ttft_s and what is derived from it may be inf when the queue grows without bound (saturated)
MAY_BE_INF = {"ttft_s", "ttft_s_lo", "ttft_s_hi", "e2e_s"}
# what a deployment may refuse: a model that does not fit, a format the device lacks, an engine the device lacks,
# a request longer than the model's context or the cache
REFUSAL = re.compile(r"does not fit|leaves no KV cache|not one request|has no matrix peak|does not run on|"
                     r"exceeds the .*context|exceed max_num_tokens")


def check_numbers(e):
    """Every field a number, none NaN; all finite except the latencies of a saturated load."""
    for f in SERVING_FIELDS:
        v = getattr(e, f)
        if isinstance(v, bool) or isinstance(v, str):
            continue
        assert not math.isnan(v), (f, v)
        if f in MAY_BE_INF and e.saturated:
            continue
        assert math.isfinite(v), (f, v, e)


# ---------------------------------------------------------------------------------------------------------------
# parse_parallel


@pytest.mark.parametrize("text, tp, pp, ep, adp", [
    ("TP4", 4, 1, 1, False), ("TP2,PP2", 2, 2, 1, False), ("DEP8", 8, 1, 8, True), ("TP8,EP8", 8, 1, 8, False),
    ("ep4", 4, 1, 4, False), ("tp2, pp4", 2, 4, 1, False),
])
def test_parse_parallel(text, tp, pp, ep, adp):
    p = rp.parse_parallel(text)
    assert (p.tensor, p.pipeline, p.expert, p.attention_data) == (tp, pp, ep, adp)


@pytest.mark.parametrize("text, part", [("XP2", "XP2"), ("TP0", "TP0"), ("TP4,EP3", "divide"), ("TP2,TP4", "TP4"),
                                        ("", "empty")])
def test_parse_parallel_refuses(text, part):
    with pytest.raises(ValueError, match=part):
        rp.parse_parallel(text)


# ---------------------------------------------------------------------------------------------------------------
# rp.serve


def test_serve_fields_and_views():
    e = rp.serve(*BASE, **LOAD)
    assert (e.model, e.quant, e.device, e.engine, e.parallel, e.mode) == ("llama-3.1-8b", "fp8", "h100-sxm", "vllm",
                                                                         "TP1", "offline")
    assert e.batch_limit in ("kv_cache", "max_batch", "token_budget")
    assert e.prompt_tokens == 1024 and e.gen_tokens == 1024
    assert e.concurrency == 0 and e.request_rate == 0 and e.num_requests == 0
    check_numbers(e)
    assert e.devices == 1
    assert e.output_tokens_per_s > 0
    assert e.output_tokens_per_s_per_device == pytest.approx(e.output_tokens_per_s / e.devices, rel=1e-12)
    assert e.roofline_output_tokens_per_s >= e.output_tokens_per_s
    assert e.output_tokens_per_s_interval == (e.output_tokens_per_s_lo, e.output_tokens_per_s_hi)
    assert e.output_tokens_per_s_lo <= e.output_tokens_per_s <= e.output_tokens_per_s_hi
    assert e.running_batch <= e.max_running_batch
    assert not e.saturated

    r = repr(e)
    assert r.startswith("<ServingEstimate llama-3.1-8b fp8")
    assert "output tok/s" in r and "TTFT" in r and "ITL" in r and "SATURATED" not in r
    html = e._repr_html_()
    assert html.startswith("<table>") and "output tokens/s" in html and "h100-sxm" in html

    d = e.to_dict()
    for k in ("model", "quant", "device", "engine", "kv_dtype", "parallel", "mode", "batch_limit", "breakdown",
              *SERVING_FIELDS):
        assert k in d, k
    assert d["output_tokens_per_s"] == e.output_tokens_per_s
    text = json.dumps(d)  # allow_nan default: inf would become Infinity; NaN must not appear
    assert "NaN" not in text
    assert json.loads(text)["output_tokens_per_s"] == e.output_tokens_per_s

    phases = set(e.breakdown["phase"])
    assert phases == {"decode iteration", "mixed iteration"}
    assert {"phase", "op", "seconds", "bound"} <= set(e.breakdown.columns)
    assert len(d["breakdown"]) == len(e.breakdown)


def test_serve_saturated_views():
    cap = rp.serve(*BASE, **LOAD).requests_per_s
    e = rp.serve(*BASE, request_rate=3 * cap, **LOAD)
    assert e.mode == "rate" and e.saturated
    assert math.isinf(e.ttft_s) and math.isinf(e.e2e_s)
    check_numbers(e)
    assert "SATURATED" in repr(e) and "TTFT inf" in repr(e)
    e._repr_html_()
    text = json.dumps(e.to_dict())
    assert "Infinity" in text and "NaN" not in text


def test_serve_loads():
    one = rp.serve(*BASE, concurrency=1, **LOAD)
    assert one.mode == "concurrency"
    assert one.running_batch == pytest.approx(1, rel=0.01)
    assert one.decode_iteration_s <= one.itl_s <= 1.05 * one.decode_iteration_s
    steady = rp.serve(*BASE, **LOAD)
    cap = steady.requests_per_s
    below = rp.serve(*BASE, request_rate=0.5 * cap, **LOAD)
    assert not below.saturated
    assert below.output_tokens_per_s == pytest.approx(0.5 * cap * 1024, rel=1e-12)
    assert math.isfinite(below.ttft_s)
    for n in (1, 10, 100):
        run = rp.serve(*BASE, num_requests=n, **LOAD)
        assert run.run_s > 0
        assert run.output_tokens_per_s < steady.output_tokens_per_s


@pytest.mark.parametrize("n", [336, 1000, 10000])
def test_finite_run_of_many_requests_below_steady_state(n):
    """A finite run pays its ramp-up and drain; at exactly the scheduler's limit (336 requests, one synchronized
    wave) it may match the staggered steady state to within a fraction of a percent, never beat it by more."""
    steady = rp.serve(*BASE, **LOAD)
    finite = rp.serve(*BASE, num_requests=n, **LOAD)
    assert finite.output_tokens_per_s < steady.output_tokens_per_s * (1.005 if n <= 336 else 1.0)


def test_serve_refusals():
    with pytest.raises(ValueError, match="serving engines"):
        rp.serve(*BASE, engine="llama.cpp", **LOAD)
    with pytest.raises(ValueError, match="does not fit"):
        rp.serve("llama-3.3-70b", "bf16", "h100-sxm", **LOAD)
    with pytest.raises(KeyError, match="fp4"):
        rp.serve("llama-3.1-8b", "nvfp4", "h100-sxm", engine="trt-llm", **LOAD)
    assert rp.serve("llama-3.1-8b", "nvfp4", "h100-sxm", engine="vllm", **LOAD).output_tokens_per_s > 0
    with pytest.raises(ValueError, match="prompt_tokens"):
        rp.serve(*BASE, prompt_tokens=0, gen_tokens=16)
    with pytest.raises(ValueError, match="concurrency and request_rate"):
        rp.serve(*BASE, concurrency=4, request_rate=1.0, **LOAD)
    with pytest.raises(ValueError, match="131072"):
        rp.serve(*BASE, prompt_tokens=131000, gen_tokens=100)
    with pytest.raises(ValueError, match="parallel"):
        rp.serve(*BASE, parallel="TP2", tensor_parallel=2, **LOAD)
    with pytest.raises(ValueError, match="gpu_memory_fraction"):
        rp.serve(*BASE, gpu_memory_fraction=1.5, **LOAD)


def test_gpu_memory_fraction_sizes_the_cache():
    kv = [rp.serve(*BASE, gpu_memory_fraction=f, **LOAD).kv_capacity_tokens for f in (0.3, 0.5, 0.7, 0.9)]
    assert kv == sorted(kv) and len(set(kv)) == 4
    assert kv[-1] < rp.serve(*BASE, gpu_memory_fraction=0.95, **LOAD).kv_capacity_tokens


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trt-llm"])
def test_kv_budget_rule_of_each_engine(engine):
    # vLLM: phi*C - (W + A + R); TensorRT-LLM: phi*(C - W - A - R); SGLang: phi*C - W (its fraction's complement holds
    # the activations and reserves: kv_cache_configurator.py _profile_available_bytes)
    e = rp.serve(*BASE, engine=engine, gpu_memory_fraction=0.8, **LOAD)
    phi, c, w = 0.8, e.memory_capacity, e.memory_weights
    used = w + e.memory_activations + e.memory_reserved
    want = {"vllm": phi * c - used, "trt-llm": phi * (c - used), "sglang": phi * c - w}[engine]
    assert e.memory_kv_cache == pytest.approx(want, rel=1e-12)
    assert e.memory_activations > 0  # so the SGLang rule differs from vLLM's
    backend = json.loads(rp.engine(engine).to_json())["backends"]["any"]
    assert backend["kv_memory_of"]["value"] == {"vllm": "total", "trt-llm": "free", "sglang": "static"}[engine]


def test_trtllm_bench_tunes_the_limit_not_given():
    # trtllm-bench (throughput.py): runtime_max_bs = max_batch_size or the tuned one, likewise the tokens
    args = ("llama-3.1-8b", "fp8", "h100-sxm")
    kw = dict(engine="trt-llm", prompt_tokens=1000, gen_tokens=1000)
    tuned = rp.serve(*args, **kw)
    only_batch = rp.serve(*args, max_batch=96, **kw)
    assert (only_batch.max_batch, only_batch.max_num_tokens) == (96, tuned.max_num_tokens)
    only_tokens = rp.serve(*args, max_num_tokens=3000, **kw)
    assert (only_tokens.max_batch, only_tokens.max_num_tokens) == (tuned.max_batch, 3000)
    both = rp.serve(*args, max_batch=96, max_num_tokens=3000, **kw)
    assert (both.max_batch, both.max_num_tokens) == (96, 3000)


def half_links(tmp_path, device_id):
    """The device with every interconnect at half its bandwidth (a file of the hardware_db schema, loaded)."""
    doc = json.load(open(rp.device(device_id).origin))
    for link in doc["interconnect"]:
        link["bandwidth_GBps"] /= 2
    doc["id"], doc["aliases"] = device_id + "-half-links", []
    path = tmp_path / (device_id + "-half-links.json")
    path.write_text(json.dumps(doc))
    return rp.load_device(path)


@pytest.mark.parametrize("parallel", ["DEP8", "PP2"])
def test_roofline_counts_the_all_to_all_and_hand_off_bytes(tmp_path, parallel):
    # the same deployment over an interconnect of half the bandwidth: the roofline (bytes at the datasheet bandwidth,
    # no latency) falls, and stays above the estimate
    slow_device = half_links(tmp_path, "h100-sxm")
    args = dict(engine="trt-llm", parallel=parallel, prompt_tokens=1000, gen_tokens=1000, max_batch=256,
                max_num_tokens=4096)
    fast = rp.serve("qwen3-30b-a3b", "fp8", "h100-sxm", **args)
    slow = rp.serve("qwen3-30b-a3b", "fp8", slow_device, **args)
    assert slow.roofline_output_tokens_per_s < fast.roofline_output_tokens_per_s
    assert slow.roofline_output_tokens_per_s >= slow.output_tokens_per_s


def test_parallel_memory():
    args = ("llama-3.3-70b", "fp8", "h200-sxm")
    tp1, pp2, tp2 = (rp.serve(*args, parallel=p, **LOAD) for p in ("TP1", "PP2", "TP2"))
    assert pp2.memory_weights == pytest.approx(tp1.memory_weights / 2, rel=1e-12)
    assert tp1.memory_weights / 2 <= tp2.memory_weights < 0.52 * tp1.memory_weights
    assert rp.serve(*args, tensor_parallel=2, **LOAD).memory_weights == tp2.memory_weights
    dep = rp.serve("qwen3-30b-a3b", "fp8", "h100-sxm", parallel="DEP8", engine="trt-llm", **LOAD)
    assert dep.parallel == "DEP8" and dep.devices == 8
    check_numbers(dep)


# ---------------------------------------------------------------------------------------------------------------
# the concurrency curve

CLIENTS = [2 ** i for i in range(11)]


def test_concurrency_curve_trt_llm_monotonic():
    rows = [rp.serve(*BASE, engine="trt-llm", concurrency=c, **LOAD) for c in CLIENTS]
    tok = [r.output_tokens_per_s for r in rows]
    assert all(b >= a * (1 - 1e-12) for a, b in zip(tok, tok[1:])), tok
    ttft = [r.ttft_s for r in rows]
    assert all(b >= a for a, b in zip(ttft, ttft[1:])), ttft


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trt-llm"])
def test_concurrency_curve_latencies_and_roofline(engine):
    rows = [rp.serve(*BASE, engine=engine, concurrency=c, **LOAD) for c in CLIENTS]
    for r in rows:
        check_numbers(r)
        assert not r.saturated
        assert r.running_batch <= r.max_running_batch
        assert r.roofline_output_tokens_per_s >= r.output_tokens_per_s
    ttft = [r.ttft_s for r in rows]
    assert all(b >= a for a, b in zip(ttft, ttft[1:])), ttft
    roof = [r.roofline_output_tokens_per_s for r in rows]
    assert all(b >= a * (1 - 1e-12) for a, b in zip(roof, roof[1:])), roof
    # past the scheduler's limit TTFT grows with the queue
    cap = rows[-1].max_running_batch
    over = [rp.serve(*BASE, engine=engine, concurrency=int(k * cap), **LOAD) for k in (2, 4)]
    assert over[1].ttft_s > over[0].ttft_s > rows[0].ttft_s


@pytest.mark.xfail(strict=True, reason="decode GEMMs of more than 256 rows cross a wave of 128x128 tiles "
                                       "(gemm_utilization): at the KV limit (336) the iteration is ~11% longer and "
                                       "the throughput (10457 tok/s) is below that of 256 clients (10528)")
@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_concurrency_curve_monotonic(engine):
    tok = [rp.serve(*BASE, engine=engine, concurrency=c, **LOAD).output_tokens_per_s for c in CLIENTS]
    assert all(b >= a * (1 - 1e-12) for a, b in zip(tok, tok[1:])), tok


@pytest.mark.parametrize("load", [dict(concurrency=2), dict(concurrency=64), dict(request_rate=0.8)])
def test_moe_under_concurrency_or_rate(load):
    e = rp.serve("qwen3-30b-a3b", "fp8", "h100-sxm", **LOAD, **load)
    check_numbers(e)


@pytest.mark.parametrize("load", [dict(concurrency=32), dict(request_rate=0.5), dict(num_requests=1000)])
def test_budget_bound_chunk_at_fractional_batch(load):
    e = rp.serve(*BASE, prompt_tokens=8192, gen_tokens=1024, **load)
    check_numbers(e)


# ---------------------------------------------------------------------------------------------------------------
# rp.serve_sweep


@pytest.mark.parametrize("axis", ["concurrency", "request_rate"])
def test_serve_sweep_equals_serve(axis):
    values = [1, 4, 64, 512] if axis == "concurrency" else [0.5, 2.0, 8.0, 100.0]
    df = rp.serve_sweep(*BASE, prompt_tokens=[128, 1024], gen_tokens=[64, 512], **{axis: values})
    assert len(df) == 2 * 2 * 4
    assert list(df.columns[:4]) == ["prompt_tokens", "gen_tokens", "concurrency", "request_rate"]
    assert set(SERVING_FIELDS) <= set(df.columns)
    for row in df.itertuples(index=False):
        load = {axis: int(getattr(row, axis)) if axis == "concurrency" else getattr(row, axis)}
        e = rp.serve(*BASE, prompt_tokens=int(row.prompt_tokens), gen_tokens=int(row.gen_tokens), **load)
        for f in SERVING_FIELDS:
            a, b = getattr(row, f), getattr(e, f)
            if isinstance(b, (bool, str)):
                assert a == b, f
            elif math.isinf(b):
                assert a == b, f
            else:
                assert a == pytest.approx(b, rel=1e-12, abs=0), (f, row)


def test_serve_sweep_offline_and_refusals():
    df = rp.serve_sweep(*BASE, prompt_tokens=1024, gen_tokens=1024)
    assert len(df) == 1
    assert df["output_tokens_per_s"][0] == pytest.approx(rp.serve(*BASE, **LOAD).output_tokens_per_s, rel=1e-12)
    with pytest.raises(ValueError, match="exclusive"):
        rp.serve_sweep(*BASE, prompt_tokens=1024, gen_tokens=1024, concurrency=[1], request_rate=[1.0])
    with pytest.raises(ValueError, match="empty"):
        rp.serve_sweep(*BASE, prompt_tokens=[], gen_tokens=1024)


# ---------------------------------------------------------------------------------------------------------------
# properties over random deployments and loads

MODELS = ["llama-3.1-8b", "qwen3-30b-a3b", "llama-3.3-70b"]
DEVICES = ["h100-sxm", "h200-sxm", "b200", "mi300x"]
ENGINES = ["vllm", "sglang", "trt-llm"]
PARALLEL = ["TP1", "TP2", "TP4", "TP2,PP2"]


def serve_or_refuse(**kw):
    """The estimate, or None for a refusal the deployment may make (ValueError / KeyError naming why)."""
    try:
        return rp.serve(**kw)
    except (ValueError, KeyError) as err:
        msg = str(err)
        assert msg, kw
        assert REFUSAL.search(msg), (kw, msg)  # anything else is a bug, not a refusal
        return None


def check_invariants(e, kw):
    check_numbers(e)
    assert e.output_tokens_per_s > 0, kw
    assert e.output_tokens_per_s_per_device == pytest.approx(e.output_tokens_per_s / e.devices, rel=1e-12)
    assert e.roofline_output_tokens_per_s >= e.output_tokens_per_s * (1 - 1e-12), kw
    assert 0 <= e.running_batch <= e.max_running_batch, kw
    if e.gen_tokens > 1:  # one generated token: no decode steps, a closed loop runs no decodes
        assert e.running_batch > 0, kw
    assert e.output_tokens_per_s_lo <= e.output_tokens_per_s <= e.output_tokens_per_s_hi
    assert e.mixed_fraction >= 0
    if e.engine != "sglang":  # SGLang runs prefill batches apart: there the field is prefill per decode iterations
        assert e.mixed_fraction <= 1, kw
    assert e.memory_weights + e.memory_kv_cache <= e.memory_capacity
    assert e.kv_capacity_tokens > 0
    if not e.saturated:
        assert e.e2e_s >= e.ttft_s > 0, kw
    if e.mode == "rate" and not e.saturated:
        assert e.output_tokens_per_s == pytest.approx(kw["request_rate"] * kw["gen_tokens"], rel=1e-9)


def deployments(models=MODELS, prompt=(1, 4096), gen=(1, 2048)):
    return st.fixed_dictionaries({
        "model": st.sampled_from(models), "quant": st.sampled_from(["fp8", "bf16", "nvfp4"]),
        "device": st.sampled_from(DEVICES), "engine": st.sampled_from(ENGINES), "parallel": st.sampled_from(PARALLEL),
        "prompt_tokens": st.integers(*prompt), "gen_tokens": st.integers(*gen),
    })


def test_moe_offline_over_pipeline_stages():
    check_numbers(rp.serve("qwen3-30b-a3b", "fp8", "h100-sxm", parallel="TP2,PP2", prompt_tokens=677,
                           gen_tokens=1559))


@pytest.mark.parametrize("engine", ENGINES)
def test_moe_bf16_runs(engine):
    check_numbers(rp.serve("qwen3-30b-a3b", "bf16", "h200-sxm", engine=engine, **LOAD))


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(deployments())
def test_offline_steady_state_invariants(kw):
    """Offline max load: every field finite, never NaN; refusals only for the reasons a deployment has."""
    e = serve_or_refuse(**kw)
    if e is not None:
        assert e.mode == "offline" and not e.saturated
        check_invariants(e, kw)


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(deployments(["llama-3.1-8b", "llama-3.3-70b"], prompt=(1, 1024), gen=(64, 2048)),
       st.one_of(st.none(), st.integers(1, 2048)))
def test_dense_concurrency_invariants(kw, clients):
    """Dense models, optionally N clients. The MoE and budget-bound-chunk crashes of a fractional batch are tested
    apart (xfail): prompts here stay short and generations long."""
    e = serve_or_refuse(**kw, concurrency=clients)
    if e is not None:
        check_invariants(e, kw)
        if clients is not None:
            assert e.mode == "concurrency" and not e.saturated
            assert e.running_batch <= clients


@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(deployments(), st.one_of(st.none(), st.integers(1, 2048)))
def test_concurrency_invariants_everywhere(kw, clients):
    assume(kw["gen_tokens"] > 1 or clients is None)  # one output token under clients: the xfail test below
    e = serve_or_refuse(**kw, concurrency=clients)
    if e is not None:
        check_invariants(e, kw)


@pytest.mark.xfail(strict=True, reason="gen_tokens=1 under N clients: output tokens/s is N / cycle, but the roofline "
                                       "is evaluated at running_batch 0 (one prompt per ideal mixed iteration) and "
                                       "comes out slower than the estimate (446 < 591 tok/s for 3 clients)")
def test_roofline_not_slower_with_one_generated_token():
    e = rp.serve(*BASE, prompt_tokens=1, gen_tokens=1, concurrency=3)
    assert e.roofline_output_tokens_per_s >= e.output_tokens_per_s


def test_max_batch_and_cheapest_use_the_serving_model_for_serving_engines():
    """With a serving engine, rp.max_batch answers the most closed-loop clients within the targets and rp.cheapest
    ranks deployments by the clients they need: the answers are rp.serve's at those loads."""
    a = rp.max_batch(model="llama-3.1-8b", quant="fp8", device="h100-sxm", tpot_ms=30, prompt_tokens=1000,
                     gen_tokens=500, engine="vllm")
    assert a.feasible and a.limit == "tpot" and a.tpot_ms <= 30
    at = rp.serve("llama-3.1-8b", "fp8", "h100-sxm", prompt_tokens=1000, gen_tokens=500, concurrency=a.batch)
    assert a.at["output_tokens_per_s"] == pytest.approx(at.output_tokens_per_s, rel=1e-12)
    beyond = rp.serve("llama-3.1-8b", "fp8", "h100-sxm", prompt_tokens=1000, gen_tokens=500, concurrency=a.batch + 1)
    assert beyond.tpot_s * 1e3 > 30
    df = rp.cheapest(model="llama-3.1-70b", quant="fp8", target_tokens_per_s=2000, devices=["h100-sxm"],
                     price_per_hour={"h100-sxm": 2.5}, tpot_ms=50, engine="vllm")
    ok = df[df.feasible]
    assert len(ok) and (ok.tpot_ms <= 50).all() and (ok.tokens_per_s >= 2000).all()
    first = ok.iloc[0]
    e = rp.serve("llama-3.1-70b", "fp8", "h100-sxm", tensor_parallel=int(first["count"]), prompt_tokens=512,
                 gen_tokens=128, kv_dtype="f16", concurrency=int(first["batch"]))
    assert first["tokens_per_s"] == pytest.approx(e.output_tokens_per_s, rel=1e-12)


def test_mixed_iteration_counts_the_prompt_attention_of_the_model_and_of_its_mtp_module():
    kw = dict(prompt_tokens=8000, gen_tokens=500, parallel="TP8", engine="vllm")
    plain = rp.serve("deepseek-r1", "fp8", "h200", **kw)
    mtp = rp.serve("deepseek-r1", "fp8", "h200", mtp_tokens=1, acceptance=0.8, **kw)
    rows = mtp.breakdown[(mtp.breakdown.phase == "mixed iteration") & (mtp.breakdown.op == "prompt_attention")]
    assert list(rows["count"]) == [61, 1]  # the model's 61 MLA layers, then the module's one (the same layer shape)
    model, module = rows.iloc[0], rows.iloc[1]
    assert module.flops == pytest.approx(model.flops / 61, rel=1e-12)
    assert module.seconds == pytest.approx(model.seconds / 61, rel=1e-12)
    plain_row = plain.breakdown[(plain.breakdown.phase == "mixed iteration") & (plain.breakdown.op == "prompt_attention")]
    assert mtp.prefill_chunk_tokens == plain.prefill_chunk_tokens  # the same chunk: the same share of the model's
    assert plain_row["flops"].tolist() == pytest.approx([model.flops], rel=1e-12)
    # the module's prompt work (its layer over the chunk and its attention) lengthens the mixed iteration
    assert mtp.mixed_iteration_s > plain.mixed_iteration_s


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_mixed_iteration_samples_every_prompt_its_chunk_completes(engine):
    # short prompts: a chunk of P tokens completes P / ISL of them, each sampled by the output head (with the decodes)
    e = rp.serve("llama-3.1-8b", "bf16", "h100-sxm", engine=engine, prompt_tokens=100, gen_tokens=100)
    head = e.breakdown[(e.breakdown.phase == "mixed iteration") & (e.breakdown.op == "output")]
    decodes = e.running_batch if engine == "vllm" else 0  # SGLang runs prefill batches apart from the decodes
    rows = decodes + e.prefill_chunk_tokens / 100
    assert e.prefill_chunk_tokens > 100
    assert head["flops"].sum() == pytest.approx(2 * rows * 128256 * 4096, rel=1e-9)


def test_mtp_module_runs_in_the_ramp_up_passes():
    # a finite run within one batch: its first tokens come from the ramp-up's prompt passes alone, which the module
    # runs too (its layer over the prompts and its attention)
    kw = dict(prompt_tokens=2000, gen_tokens=200, parallel="TP8", num_requests=16)
    plain = rp.serve("deepseek-r1", "fp8", "h200", **kw)
    mtp = rp.serve("deepseek-r1", "fp8", "h200", mtp_tokens=1, acceptance=0.8, **kw)
    assert plain.running_batch == mtp.running_batch == 16
    assert mtp.ttft_s > plain.ttft_s


def test_mtp_module_all_to_all_over_the_chunk(tmp_path):
    # attention DP over 8 ranks, SGLang (prefill batches apart: no decodes in the prompt pass): halving the links adds
    # the bytes of the 58 MoE layers' dispatch and combine of the chunk, and with MTP those of the module's one more
    slow_device = half_links(tmp_path, "h200-sxm")
    kw = dict(engine="sglang", parallel="DEP8", prompt_tokens=2000, gen_tokens=200, max_batch=64, max_num_tokens=2048)
    added = {}
    for name, extra in (("plain", {}), ("mtp", dict(mtp_tokens=1, acceptance=0.8))):
        fast = rp.serve("deepseek-r1", "fp8", "h200", **kw, **extra)
        slow = rp.serve("deepseek-r1", "fp8", slow_device, **kw, **extra)
        assert fast.prefill_chunk_tokens == slow.prefill_chunk_tokens == 2000
        added[name] = slow.mixed_iteration_s - fast.mixed_iteration_s
    assert added["plain"] > 0
    assert added["mtp"] == pytest.approx(added["plain"] * (1 + 1 / 58), rel=1e-6)


def test_mtp_module_memory_shares_the_targets_embedding_and_head():
    # the module's layer is one of the model's MoE layers (blk.3 on) plus mtp_eh_proj and two norms on every rank;
    # its embedding and head are the target's (vLLM load_eagle_model, SGLang set_embed_and_head): no memory of theirs
    kw = dict(prompt_tokens=1000, gen_tokens=1000, parallel="TP8", concurrency=1)
    plain = rp.serve("deepseek-r1", "fp8", "h200", **kw)
    mtp = rp.serve("deepseek-r1", "fp8", "h200", mtp_tokens=1, acceptance=0.8, **kw)
    t = rp.model("deepseek-r1").tensors("fp8")
    layer = t[t.layer == 3]
    whole = layer.role.isin(["attn_q_a", "attn_kv_a_mqa", "exp_probs_b"]) | layer.role.str.endswith("_norm")
    hidden = 7168
    per_rank = layer.bytes[~whole].sum() / 8 + layer.bytes[whole].sum() + 2 * hidden * hidden * 1 + 2 * hidden * 2
    assert mtp.memory_weights - plain.memory_weights == pytest.approx(per_rank, rel=0.01)


def test_mtp_speculative_decoding_for_deepseek():
    kw = dict(prompt_tokens=1000, gen_tokens=1000, parallel="TP8", concurrency=1)
    plain = rp.serve("deepseek-r1", "fp8", "h200", **kw)
    mtp = rp.serve("deepseek-r1", "fp8", "h200", mtp_tokens=2, acceptance=0.85, **kw)
    assert plain.tokens_per_decode_iteration == 1
    assert mtp.tokens_per_decode_iteration == pytest.approx((1 - 0.85 ** 3) / (1 - 0.85))
    # one client is memory-bound: two drafts per iteration pay off; the ITL is the iteration over the tokens it gains
    assert mtp.output_tokens_per_s > 1.3 * plain.output_tokens_per_s
    assert mtp.itl_s == pytest.approx(mtp.decode_iteration_s / mtp.tokens_per_decode_iteration, rel=0.05)
    assert mtp.memory_weights > plain.memory_weights
    # the views show it, and a sweep equals the single calls
    assert "tokens_per_decode_iteration" in mtp.to_dict()
    df = rp.serve_sweep("deepseek-r1", "fp8", "h200", prompt_tokens=1000, gen_tokens=1000, concurrency=[1, 8],
                        parallel="TP8", mtp_tokens=2, acceptance=0.85)
    assert df["output_tokens_per_s"].iloc[0] == pytest.approx(mtp.output_tokens_per_s, rel=1e-12)
    assert (df["tokens_per_decode_iteration"] > 2).all()
    # acceptance 0: the drafts are pure cost
    never = rp.serve("deepseek-r1", "fp8", "h200", mtp_tokens=1, acceptance=0.0, **kw)
    assert never.output_tokens_per_s < plain.output_tokens_per_s
