"""Invariants of the estimator over random valid inputs (hypothesis): every result is finite and non-negative,
time is monotone in bytes and FLOPs, estimates are deterministic, and a calibrated device never reports a
ceiling above its datasheet peak without saying so."""
from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import rooflinepy as rp

MODELS = rp.models()
DEVICES = rp.devices()
# llama.cpp mixes and GPU schemes that every catalogued model's shapes take
QUANTS = ["Q4_K_M", "Q4_0", "Q5_K_M", "Q6_K", "Q8_0", "BF16", "F16", "fp16", "bf16", "fp8", "int8-wo", "int4-g128",
          "nvfp4"]
ENGINES = rp.engines()
KV = ["f16", "bf16", "q8_0", "q4_0", "fp8"]

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def numbers(d, path=""):
    """Every float of a (nested) estimate dict with its path."""
    if isinstance(d, dict):
        for k, v in d.items():
            yield from numbers(v, f"{path}.{k}" if path else k)
    elif isinstance(d, (list, tuple)):
        for i, v in enumerate(d):
            yield from numbers(v, f"{path}[{i}]")
    elif isinstance(d, float) or (isinstance(d, int) and not isinstance(d, bool)):
        yield path, float(d)


def assert_finite_nonnegative(d):
    for path, v in numbers(d):
        assert math.isfinite(v) and v >= 0, (path, v)


# What a refusal says: the engine's formats, the device's units or the vendors the engine runs on.
REFUSALS = ("it runs:", "it has:", "it runs on:")


def estimate_or_refusal(**w):
    """The estimate, or None when the combination cannot run (fp8 in llama.cpp, fp8 on an A100, llama.cpp-metal on a
    GPU ...): then the error must name what is allowed."""
    try:
        return rp.estimate(**w)
    except (ValueError, KeyError) as err:
        assert any(r in str(err) for r in REFUSALS), str(err)
        return None


def dev_time_or_refusal(dev, op, ideal):
    try:
        return dev.time(op, ideal=ideal)
    except KeyError as err:
        assert "it has:" in str(err), str(err)
        return None


workloads = st.fixed_dictionaries({
    "model": st.sampled_from(MODELS),
    "quant": st.sampled_from(QUANTS),
    "device": st.sampled_from(DEVICES),
    "engine": st.sampled_from(ENGINES),
    "kv_dtype": st.sampled_from(KV),
    "flash_attention": st.booleans(),
    "batch": st.integers(1, 256),
    "prompt_tokens": st.integers(0, 16384),
    "gen_tokens": st.integers(0, 1024),
})


@SETTINGS
@given(workloads)
def test_every_estimate_field_is_finite_and_nonnegative(w):
    assume(w["prompt_tokens"] + w["gen_tokens"] >= 1)
    e = estimate_or_refusal(**w)
    if e is None:
        return
    d = e.to_dict()
    assert_finite_nonnegative(d)
    assert e.total_s == pytest.approx(e.prefill_s + e.decode_s)
    if w["prompt_tokens"] > 0:
        assert e.prefill_s > 0 and e.prefill_tokens_per_s > 0
    if w["gen_tokens"] > 0:
        assert e.decode_s > 0 and e.decode_tokens_per_s > 0
        # the derated estimate is never faster than its own datasheet roofline, nor than the weights alone allow
        assert e.decode_tokens_per_s <= e.ceilings["decode_tokens_per_s"] * (1 + 1e-9)
        assert e.decode_tokens_per_s <= e.ceilings["decode_weights_tokens_per_s"] * (1 + 1e-9)
        lo, hi = e.decode_tokens_per_s_interval
        assert lo <= e.decode_tokens_per_s <= hi
    if w["prompt_tokens"] > 0:
        assert e.prefill_tokens_per_s <= e.ceilings["prefill_tokens_per_s"] * (1 + 1e-9)
        lo, hi = e.prefill_tokens_per_s_interval
        assert lo <= e.prefill_tokens_per_s <= hi
    assert isinstance(e.fits, bool)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads)
def test_estimates_are_deterministic(w):
    assume(w["prompt_tokens"] + w["gen_tokens"] >= 1)
    e = estimate_or_refusal(**w)
    if e is None:
        return
    first = json.dumps(e.to_dict(), sort_keys=True)
    again = json.dumps(rp.estimate(**w).to_dict(), sort_keys=True)
    assert first == again


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(MODELS), st.sampled_from(QUANTS), st.sampled_from(DEVICES), st.integers(1, 64),
       st.integers(1, 4096), st.integers(1, 256))
def test_more_work_never_takes_less_time(model, quant, device, batch, prompt, gen):
    """A longer prompt never makes the prefill faster, unless the engine switches a projection to another kernel
    between the two (ggml's per-type token thresholds: on RDNA3 Q6_K beyond 128 tokens goes to hipBLAS, which
    splits the K loop over idle units where MMQ's tile per WGP leaves them idle) or its experts run in tiles picked
    for the batch (ggml's MMQ: 128 tokens take the 128-row tile, 129 two of 72, which each expert's few rows fill
    better); more generated tokens never make the decode shorter."""
    base = estimate_or_refusal(model=model, quant=quant, device=device, batch=batch, prompt_tokens=prompt, gen_tokens=gen)
    if base is None:
        return
    longer = rp.estimate(model, quant, device, batch=batch, prompt_tokens=prompt + 64, gen_tokens=gen + 16)
    assert longer.decode_s >= base.decode_s * (1 - 1e-12)
    if longer.prefill_s < base.prefill_s * (1 - 1e-12):
        kernels = [set(map(tuple, e.breakdown.query("phase == 'prefill'")[["op", "compute"]].values)) for e in (base, longer)]
        batch_tiled_experts = "ffn_gate_exps" in set(base.breakdown.op) and any(
            k.moe_row_tile == "batch" for k in rp.engine(base.engine).on(rp.device(device)).linear_kernels)
        assert kernels[0] != kernels[1] or batch_tiled_experts, (base.prefill_s, longer.prefill_s)


def test_no_estimate_exceeds_its_ceilings_over_a_sweep():
    """Honest ceilings: over dense and MoE models, quantizations, devices, batches and depths, decode tokens/s
    never exceed bandwidth ÷ the weight bytes a step reads (the active experts, not the embedding table) nor the
    pure roofline, and prefill never exceeds its roofline. (e188784: 38 of 432 rows did, e.g. Qwen3-30B-A3B on an
    M4 Pro, ceiling 14.7 against an estimate of 84.2.)"""
    df = rp.sweep(models=["qwen3-30b-a3b", "llama-3.1-8b", "gpt-oss-120b", "gemma-3-4b"], quants=["Q4_K_M", "Q8_0"],
                  devices=["m4-pro", "h100-sxm", "rtx-4090", "m3-ultra-80c"], batch=[1, 8, 64],
                  prompt_tokens=[512], gen_tokens=[128], context_tokens=[0, 8192], skip_invalid=True)
    assert len(df) == 4 * 2 * 4 * 3 * 2  # every combination runs
    assert (df.decode_tokens_per_s <= df.ceiling_decode_weights * (1 + 1e-9)).all()
    assert (df.decode_tokens_per_s <= df.ceiling_decode * (1 + 1e-9)).all()
    assert (df.prefill_tokens_per_s <= df.ceiling_prefill * (1 + 1e-9)).all()
    moe = df[(df.model == "qwen3-30b-a3b") & (df.device == "m4-pro-20c") & (df.batch == 1) & (df.quant == "Q4_K_M")]
    assert (moe.ceiling_decode_weights > moe.decode_tokens_per_s).all()
    assert (moe.ceiling_decode_weights > 100).all()  # ~1.9 GB of active weights a step at 273 GB/s


# ---- op level: time is monotone in bytes and in FLOPs --------------------------------------------------------
dtypes = st.sampled_from(["fp16", "bf16", "fp32", "fp8", "int8"])


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(DEVICES), st.integers(1, 1 << 32), st.floats(0, 1e4), st.floats(0, 1e4), st.integers(0, 8),
       st.integers(0, 8), dtypes, st.booleans())
def test_time_is_monotone_in_flops_and_bytes(dev_id, n, fpe, extra_fpe, inputs, extra_inputs, dtype, ideal):
    dev = rp.device(dev_id)
    base = rp.ops.elementwise(n, fpe, inputs, 1, dtype)
    more_flops = rp.ops.elementwise(n, fpe + extra_fpe, inputs, 1, dtype)
    more_bytes = rp.ops.elementwise(n, fpe, inputs + extra_inputs, 1, dtype)
    t, tf, tb = (dev_time_or_refusal(dev, op, ideal) for op in (base, more_flops, more_bytes))
    if t is None or tf is None or tb is None:
        return
    assert more_flops.bytes == base.bytes and more_flops.flops >= base.flops
    assert more_bytes.flops == base.flops and more_bytes.bytes >= base.bytes
    assert tf.seconds >= t.seconds
    assert tb.seconds >= t.seconds
    assert_finite_nonnegative(t.to_dict())


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(DEVICES), st.integers(1, 1 << 14), st.integers(1, 1 << 14), st.integers(1, 1 << 14),
       st.integers(0, 1 << 12), dtypes, st.booleans())
def test_a_larger_gemm_never_runs_faster(dev_id, m, n, k, extra_k, dtype, ideal):
    dev = rp.device(dev_id)
    small, large = rp.ops.gemm(m, n, k, dtype), rp.ops.gemm(m, n, k + extra_k, dtype)
    ts = dev_time_or_refusal(dev, small, ideal)
    if ts is None:
        return
    tl = dev.time(large, ideal=ideal)
    assert tl.seconds >= ts.seconds
    assert tl.seconds >= tl.compute_seconds and all(tl.seconds >= s for s in tl.memory_seconds.values() if s)
    assert_finite_nonnegative(tl.to_dict())


# ---- calibration: a ceiling above the datasheet says so ------------------------------------------------------
def profile_for(dev, factors):
    """A GPU/CPU profile that measures `dev`'s DRAM bandwidth and every matrix peak at datasheet × factor."""
    kind = "cpu" if dev.kind == "cpu" else "gpu"
    sram = next(m for m in dev.memory_levels() if m["level"] == "sram")  # as the runtime reports it
    ms = []
    bw = dev.bandwidth("dram") * factors[0]
    ms.append({"ceiling": "bandwidth", "level": "dram", "kernel": "copy", "repetitions": 5, "si_unit": "B/s",
               "min": bw * 0.99, "median": bw, "max": bw * 1.01, "verified": True})
    for i, p in enumerate(dev.compute_peaks()):
        f = p["flops_per_s"] * factors[1 + i % (len(factors) - 1)]
        ms.append({"ceiling": "gemm_flops" if p["unit"] == "matrix" else "peak_flops", "dtype": p["dtype"],
                   "unit": p["unit"], "kernel": f"k{i}", "repetitions": 5, "si_unit": "FLOP/s",
                   "min": f * 0.99, "median": f, "max": f * 1.01, "verified": True})
    ms.append({"ceiling": "launch_overhead", "kernel": "empty", "repetitions": 100, "si_unit": "s",
               "min": 1e-6, "median": 2e-6, "max": 5e-6, "verified": True})
    return {"schema_version": 1, "kind": "rooflinepy-calibration-profile", "date": "2025-06-01T12:00:00Z",
            "tool": {"name": "hypothesis", "version": "1"},
            "device": {"name": dev.name, "vendor": dev.vendor, "kind": kind, "sm_count": dev.compute_units,
                       "threads": dev.compute_units, "clock_MHz": 1000, "memory_bytes": dev.capacity("dram"),
                       "shared_memory_per_unit_bytes": sram["per_unit"]},
            "measurements": ms}


factors = st.lists(st.floats(0.05, 3.0), min_size=2, max_size=5)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(DEVICES), factors)
def test_a_calibrated_ceiling_above_the_datasheet_says_so(dev_id, fs):
    base = rp.device(dev_id)
    cal = base.calibrated(profile_for(base, fs))
    before = {(p["dtype"], p["unit"]): p for p in base.compute_peaks()}
    for p in cal.compute_peaks():
        old = before.get((p["dtype"], p["unit"]))
        if old and p["flops_per_s"] > old["flops_per_s"]:
            assert p["uncertain"] and "measured above datasheet" in p["uncertain"], p
    old_levels = {m["level"]: m for m in base.memory_levels()}
    for m in cal.memory_levels():
        old = old_levels.get(m["level"])
        if old and old["bandwidth"] and m["bandwidth"] and m["bandwidth"] > old["bandwidth"]:
            assert m["uncertain"] and "measured above datasheet" in m["uncertain"], m
    # the calibrated device still gives finite answers, and round-trips through its JSON
    e = rp.estimate("llama-3.2-1b", "Q4_K_M", cal, prompt_tokens=128, gen_tokens=16)
    assert_finite_nonnegative(e.to_dict())
    assert rp._core.parse_device(cal.to_json(), "<round trip>").to_json() == cal.to_json()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(DEVICES), factors)
def test_a_device_from_a_profile_gives_finite_estimates(dev_id, fs):
    dev = rp.device_from_profile(profile_for(rp.device(dev_id), fs))
    e = rp.estimate("qwen3-0.6b", "Q8_0", dev, prompt_tokens=64, gen_tokens=8)
    assert_finite_nonnegative(e.to_dict())


def test_a_profile_without_shared_memory_names_what_flash_attention_needs():
    p = profile_for(rp.device("rtx-4090"), [1.0, 1.0])
    del p["device"]["shared_memory_per_unit_bytes"]
    dev = rp.device_from_profile(p)
    with pytest.raises(KeyError, match="shared_memory_per_unit_bytes.*or estimate without flash attention"):
        rp.estimate("qwen3-0.6b", "Q8_0", dev)  # llama.cpp runs flash attention unless told not to
    assert rp.estimate("qwen3-0.6b", "Q8_0", dev, flash_attention=False).decode_tokens_per_s > 0
