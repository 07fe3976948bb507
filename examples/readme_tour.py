"""The README's "A short tour of the Python API", typed: `mypy --strict` checks it and CI runs it.

    python3 examples/readme_tour.py [--calibrate] [--gpu-profile h200.json] [--gguf model.gguf]

Runs in seconds. The tour's lines that need more than the installed package run only when asked for: measuring
this host (``--calibrate``, about a minute), a GPU calibration profile from roofline-calibrate-cuda
(``--gpu-profile``) and a GGUF file (``--gguf``). mypy checks them either way.
"""
from __future__ import annotations

import argparse
import json
import math
import tempfile
from pathlib import Path
from typing import List, Optional, Sequence

import pandas as pd

import rooflinepy as rp


def close(value: float, expected: float, rel: float = 0.005) -> bool:
    return math.isclose(value, expected, rel_tol=rel)


def tour(calibrate: bool = False, gpu_profile: Optional[str] = None, gguf: Optional[str] = None) -> None:
    ids: List[str] = rp.devices()  # ids of every device (NVIDIA, AMD, Apple M1–M4 per GPU-core count, ...)
    assert "a100-sxm-80gb" in ids and ids == sorted(ids)
    a100: rp.Device = rp.device("a100")  # by id or alias, case-insensitive -> a100-sxm-80gb
    assert a100.id == "a100-sxm-80gb"
    assert a100.peak_flops("bf16") == 3.12e14  # FLOP/s, dense, matrix units
    assert a100.bandwidth("dram") == 2.039e12  # bytes/s ("l2", "sram" where known)
    ridge: float = a100.ridge_point("bf16")  # 153 FLOP/byte: below it an op is memory-bound
    assert round(ridge) == 153

    op: rp.OpCost = rp.ops.gemm(4096, 4096, 4096, dtype="fp16")
    flops, nbytes, intensity = op.flops, op.bytes, op.arithmetic_intensity  # 1.37e11, 1.01e8, 1365
    assert flops == 2 * 4096**3 and close(nbytes, 1.01e8) and round(intensity) == 1365
    t: rp.Timing = a100.time(op)  # .seconds, .bound ("compute" | "memory:dram" | ... | "overhead"), .attainable_flops
    assert t.bound == "compute" and t.seconds > 0 and t.attainable_flops > 0
    ideal: rp.Timing = a100.time(op, ideal=True)  # datasheet ceilings, no efficiency or launch overhead
    assert close(ideal.seconds, flops / 3.12e14, rel=1e-9) and ideal.ceilings == "ideal"
    flash: rp.OpCost = rp.ops.attention(batch=1, heads=32, seq_q=4096, head_dim=128, kind="flash",
                                        device="a100")  # FlashAttention IO count
    assert flash.bytes < rp.ops.attention(batch=1, heads=32, seq_q=4096, head_dim=128).bytes

    m: rp.Model = rp.model("qwen3-4b")  # model_db/ (HF config.json values, with source); rp.models() lists them
    assert "qwen3-4b" in rp.models()
    params, weights = m.parameters, m.weight_bytes("Q4_K_M")  # 4.02e9, 2.49e9 (llama.cpp's per-tensor types)
    assert close(params, 4.02e9) and close(weights, 2.49e9)
    with tempfile.TemporaryDirectory() as tmp:  # offline; the catalogue's config.json stands in for a downloaded one
        config = Path(tmp) / "config.json"
        entry = json.loads((rp.data_dir() / "model_db" / "qwen3-4b.json").read_text())
        config.write_text(json.dumps(entry["config"]))
        from_config: rp.Model = rp.Model.from_hf_config(config)
        assert from_config.parameters == m.parameters
    if gguf is not None:
        from_gguf: rp.Model = rp.Model.from_gguf(gguf)  # GGUF: header only
        print(f"{gguf}: {from_gguf.parameters:.3g} parameters")

    est: rp.Estimate = rp.estimate(model="qwen3-4b", quant="Q4_K_M", device="m4-pro", prompt_tokens=512,
                                   gen_tokens=128)
    prefill: float = est.prefill_tokens_per_s
    decode: float = est.decode_tokens_per_s
    ttft: float = est.ttft_s
    memory = est.memory  # weights, kv_cache, activations, overhead, total, capacity (bytes), fits
    fits: bool = est.fits
    total: float = memory["total"]
    assert prefill > decode > 0 and ttft > 0 and fits == memory["fits"] and total <= memory["capacity"]
    lo, hi = est.decode_tokens_per_s_interval  # the engine's cross-validated 80 % prediction interval
    assert lo < decode < hi
    ceilings = est.ceilings  # bandwidth / weight bytes a step reads, the pure roofline of each phase, bounds
    assert ceilings["decode_bound"] == "memory:dram" and ceilings["decode_tokens_per_s"] >= decode
    deep: rp.Estimate = rp.estimate(model="llama-3.1-8b", quant="Q4_0", device="m2-max", context_tokens=8192,
                                    ubatch_tokens=256)  # llama-bench -d 8192 -ub 256
    shallow = rp.estimate(model="llama-3.1-8b", quant="Q4_0", device="m2-max", ubatch_tokens=256)
    assert deep.decode_tokens_per_s < shallow.decode_tokens_per_s  # 8192 more tokens of KV read per step
    mlx: rp.Estimate = rp.estimate(model="llama-3.1-8b", quant="mlx-q4", device="m4-max", engine="mlx",
                                   flash_attention=True)
    assert close(mlx.bits_per_weight, 4.5, rel=0.01)
    breakdown: pd.DataFrame = est.breakdown  # DataFrame: phase, op, count, flops, bytes, intensity, seconds, bound, flops_per_s, compute
    assert list(breakdown.columns) == ["phase", "op", "count", "flops", "bytes", "intensity", "seconds", "bound",
                                      "flops_per_s", "compute"]

    cal: rp.Device = rp.calibrate_from_measurements(
        "m1-max-32c", [{"model": "llama-2-7b", "quant": "Q8_0", "test": "tg128", "tokens_per_s": 40.2}])
    q4: rp.Estimate = rp.estimate(model="llama-2-7b", quant="Q4_0", device=cal, prompt_tokens=0, gen_tokens=128)
    q8 = rp.estimate(model="llama-2-7b", quant="Q8_0", device=cal, prompt_tokens=0, gen_tokens=128)
    assert close(q8.decode_tokens_per_s, 40.2, rel=0.02) and q4.decode_tokens_per_s > q8.decode_tokens_per_s

    df: pd.DataFrame = rp.sweep(models=["llama-3.1-8b", "qwen3-8b"], quants=["BF16", "Q4_K_M"],
                                devices=rp.devices(), batch=[1, 2, 4, 8, 16, 32, 64], prompt_tokens=[128, 2048],
                                gen_tokens=[256])  # one row per point
    assert len(df) == 2 * 2 * len(ids) * 7 * 2
    front = rp.pareto(df, x="memory_total", y="decode_tokens_per_s")  # the non-dominated rows
    assert 0 < len(front) < len(df)
    answer: rp.BatchAnswer = rp.max_batch(model="llama-3.1-8b", quant="fp8", device="h100-sxm", tpot_ms=50,
                                          prompt_tokens=2048, engine="cuda-graphs")
    assert answer.feasible and answer.batch >= 1 and answer.tpot_ms <= 50
    ranked: pd.DataFrame = rp.cheapest(model="llama-3.1-70b", quant="fp8", target_tokens_per_s=2000,
                                       devices=["h100-sxm", "a100-sxm-80gb"],
                                       price_per_hour={"h100-sxm": 2.5, "a100-sxm-80gb": 1.5},
                                       engine="cuda-graphs")  # ranked
    assert bool(ranked["feasible"].iloc[0])
    assert all("fp8" in r for r in ranked[ranked["device"] == "a100-sxm-80gb"]["reason"])  # no fp8 units: why

    if calibrate:
        host: rp.Device = rp.device_from_profile(rp.calibration.calibrate_cpu())  # this machine, measured (~1 min)
        print(f"this host: {host.bandwidth('dram') / 1e9:.1f} GB/s DRAM, {host.peak_flops('fp32', 'vector'):.3g} "
              f"FLOP/s fp32")
    if gpu_profile is not None:
        h200: rp.Device = rp.device("h200-sxm").calibrated(gpu_profile)  # a GPU profile from roofline-calibrate-cuda
        report: pd.DataFrame = rp.calibration.report(gpu_profile)  # measured vs datasheet per ceiling
        print(f"{h200.id} calibrated: {h200.bandwidth('dram') / 1e12:.3g} TB/s DRAM; {len(report)} ceilings")

    print(f"README tour: {len(ids)} devices; {m.id} {est.quant} on {est.device}: prefill {prefill:.0f} tok/s, "
          f"decode {decode:.1f} tok/s; a sweep of {len(df)} points, {len(front)} on the Pareto front; "
          f"max batch {answer.batch} at 50 ms per token")


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--calibrate", action="store_true", help="also measure this host (about a minute)")
    ap.add_argument("--gpu-profile", help="a calibration profile of an H200 (roofline-calibrate-cuda)")
    ap.add_argument("--gguf", help="a GGUF file to read the model from")
    args = ap.parse_args(argv)
    tour(calibrate=args.calibrate, gpu_profile=args.gpu_profile, gguf=args.gguf)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
