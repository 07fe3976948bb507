"""Every number the estimator, sweeps, inverse queries, calibration fit, plots and CLI produce for a fixed grid of
inputs, as one JSON file; and the comparison of two such files (prints figures; not a test).

    python3 benchmarks/numbers_snapshot.py -o before.json        # with one build installed
    python3 benchmarks/numbers_snapshot.py -o after.json         # with another
    python3 benchmarks/numbers_snapshot.py --compare before.json after.json [--rename old=new ...]

A refactoring that must not change any number is checked by comparing the two snapshots: the comparison lists every
value that differs (exactly, or beyond --rtol), grouped by where it came from. Keys renamed between the two builds are
mapped with --rename.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import sys
from typing import Any, Dict, List


def _clean(x: Any) -> Any:
    """JSON-safe: NaN and infinities as strings, numpy scalars as Python numbers, tuples as lists."""
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    if hasattr(x, "item") and not isinstance(x, (str, bytes)):
        try:
            x = x.item()
        except (TypeError, ValueError):
            pass
    if isinstance(x, float) and not math.isfinite(x):
        return repr(x)
    if isinstance(x, (bool, int, float, str)) or x is None:
        return x
    return repr(x)


def _estimate_dict(e: Any) -> Dict[str, Any]:
    d = e.to_dict()
    return _clean(d)


def snapshot() -> Dict[str, Any]:
    import rooflinepy as rp

    out: Dict[str, Any] = {"estimates": {}, "errors": {}}
    engines = ["llama.cpp", "generic", "cuda-graphs", "gpt-fast"]  # a fixed order: rows of the sweeps below follow it
    grid = []
    for model, quants in (("llama-2-7b", ["Q4_0", "Q8_0", "F16"]), ("llama-3.1-8b", ["Q4_K_M", "BF16", "fp8"]),
                          ("qwen3-30b-a3b", ["Q4_K_M"]), ("gemma-3-4b", ["Q4_K_M", "bf16"]),
                          ("gpt2", ["F16"]), ("llama-3.1-70b", ["fp8", "int4-g128"]), ("mixtral-8x7b", ["Q4_K_M"]),
                          ("phi-3-mini", ["Q4_K_M"]), ("qwen2.5-7b", ["Q6_K"])):
        for q in quants:
            for dev in ("m4-pro-20c", "m1-max-32c", "rtx-4090", "h100-sxm", "a100-sxm-80gb"):
                for eng in engines:
                    for flash in (False, True):
                        for b, p, n in ((1, 512, 128), (1, 0, 128), (1, 512, 0), (7, 1, 33), (64, 2048, 256),
                                        (300, 100, 1000), (1, 32768, 8)):
                            grid.append(dict(model=model, quant=q, device=dev, engine=eng, flash_attention=flash,
                                             batch=b, prompt_tokens=p, gen_tokens=n))
    # tensor parallel, KV formats
    for tp in (2, 4, 8):
        for eng in engines:
            for model in ("llama-3.1-70b", "llama-3.1-8b"):
                grid.append(dict(model=model, quant="fp8", device="h100-sxm", engine=eng, tensor_parallel=tp,
                                 batch=16, prompt_tokens=1024, gen_tokens=512, flash_attention=True))
    for kv in ("f16", "bf16", "f32", "q8_0", "q4_0", "fp8"):
        grid.append(dict(model="llama-3.1-8b", quant="Q4_K_M", device="m4-max-40c", kv_dtype=kv, batch=4,
                         prompt_tokens=4096, gen_tokens=512))
    for i, kw in enumerate(grid):
        key = "|".join(f"{k}={v}" for k, v in sorted(kw.items()))
        try:
            out["estimates"][key] = _estimate_dict(rp.estimate(**kw))
        except (ValueError, KeyError) as e:
            out["errors"][key] = str(e)

    # speculative decoding
    spec = {}
    for gamma, alpha in ((4, 0.7), (8, 0.9), (2, 1.0)):
        e = rp.estimate(model="llama-3.1-70b", quant="Q4_K_M", device="m4-max-40c", prompt_tokens=512, gen_tokens=256,
                        draft_model="llama-3.2-1b", draft_tokens=gamma, acceptance=alpha)
        spec[f"{gamma}/{alpha}"] = _estimate_dict(e)
        e = rp.estimate(model="llama-3.1-8b", quant="bf16", device="h100-sxm", prompt_tokens=1000, gen_tokens=100,
                        batch=4, engine="cuda-graphs", draft_model="llama-3.2-1b", draft_tokens=gamma,
                        acceptance=alpha)
        spec[f"h100 {gamma}/{alpha}"] = _estimate_dict(e)
    out["speculative"] = spec

    # a sweep
    for i, (prompts, gens) in enumerate((([128, 2048], [0, 1, 256]), ([0], [1, 128]))):
        df = rp.sweep(models=["llama-3.1-8b", "qwen3-4b"], quants=["Q4_K_M", "BF16"], devices=["m4-pro", "h100-sxm"],
                      batch=[1, 3, 16, 128], prompt_tokens=prompts, gen_tokens=gens, engine=engines,
                      flash_attention=[False, True], skip_invalid=True)
        cats = {c: str for c in df.select_dtypes("category").columns}
        out[f"sweep{i}"] = _clean(df.astype(cats).to_dict(orient="list"))

    # inverse queries
    inv = {}
    for eng in ("llama.cpp", "cuda-graphs"):
        a = rp.max_batch(model="llama-3.1-8b", quant="fp8", device="h100-sxm", tpot_ms=50, prompt_tokens=2048,
                         engine=eng)
        inv[f"max_batch {eng}"] = _clean({k: getattr(a, k) for k in ("feasible", "batch", "limit", "reason",
                                                                     "tpot_ms", "ttft_ms")})
    c = rp.cheapest(model="llama-3.1-70b", quant="fp8", target_tokens_per_s=2000, devices=["h100-sxm", "a100-sxm-80gb"],
                    price_per_hour={"h100-sxm": 2.5, "a100-sxm-80gb": 1.5})
    inv["cheapest"] = _clean(c.to_dict(orient="list"))
    c = rp.cheapest(model="llama-3.1-8b", quant=["Q4_K_M", "BF16"], target_tokens_per_s=5000,
                    devices=["rtx-4090", "l40s"], price_per_hour={"rtx-4090": 0.7, "l40s": 1.0}, replicas=True,
                    engine="cuda-graphs", tpot_ms=40)
    inv["cheapest replicas"] = _clean(c.to_dict(orient="list"))
    out["inverse"] = inv

    # calibration fit
    dev, rep = rp.calibrate_from_measurements(
        "m1-max-32c", [{"model": "llama-2-7b", "quant": "Q8_0", "test": "tg128", "tokens_per_s": 40.2},
                       {"model": "llama-2-7b", "quant": "Q4_0", "test": "pp512", "tokens_per_s": 530.0}],
        return_report=True)
    out["calibration"] = _clean({"efficiency": dev.efficiency, "after": list(rep.predicted_after),
                                 "before": list(rep.predicted_before), "iterations": rep.iterations})

    # device ceilings and single ops
    ops = {}
    for dev in ("a100-sxm-80gb", "h100-sxm", "m4-pro-20c", "rtx-4090"):
        d = rp.device(dev)
        for name, op in (("gemm", rp.ops.gemm(4096, 4096, 4096, dtype="fp16")),
                         ("gemm_q4", rp.ops.gemm(7, 4096, 4096, "fp16", weight_dtype="q4_k")),
                         ("gemv", rp.ops.gemv(4096, 4096, "bf16")),
                         ("std_attn", rp.ops.attention(1, 32, 2048, head_dim=128, kind="standard")),
                         ("flash_attn", rp.ops.attention(2, 32, 4096, head_dim=128, kind="flash", device=d)),
                         ("flash_bwd", rp.ops.attention(1, 16, 8192, head_dim=64, kind="flash", device=d,
                                                        backward=True, causal=True)),
                         ("decode_attn", rp.ops.decode_attention(8, 32, 8, 4096, 128, "fp16", kv_dtype="q8_0"))):
            for ideal in (True, False):
                t = d.time(op, ideal=ideal)
                ops[f"{dev}|{name}|{ideal}"] = _clean(t.to_dict())
            ops[f"{dev}|{name}|op"] = _clean(op.to_dict())
        ops[f"{dev}|ridge"] = d.ridge_point("bf16") if dev != "m4-pro-20c" else d.ridge_point("fp16")
    out["ops"] = ops
    out["kv"] = {f"{m}|{kv}": [rp.kv_cache_bytes(m, 4096, 2, kv), rp.kv_cache_bytes_read(m, 512, 100, 2, kv)]
                 for m in ("llama-3.1-8b", "gemma-3-4b", "llama-2-7b") for kv in ("f16", "q8_0")}

    # plots: the numbers each figure keeps
    try:
        import matplotlib

        matplotlib.use("Agg")
        figs = {
            "ridge_shift": rp.plot.ridge_shift(["v100-sxm", "a100-sxm-80gb", "h100-sxm", "h200-sxm", "b200"]),
            "roofline": rp.plot.roofline(["a100-sxm-80gb", "h100-sxm"],
                                         ops=[rp.ops.gemm(4096, 4096, 4096, dtype="bf16")], dtype="bf16"),
            "tokens": rp.plot.tokens_per_second(model="qwen3-4b", quants=["BF16", "Q8_0", "Q4_K_M"],
                                                devices=["m4-pro", "m4-max"]),
            "attention_io": rp.plot.attention_io(seq_lens=[512, 2048, 8192, 32768], device="a100-sxm-80gb"),
            "kv_cache": rp.plot.kv_cache(model="llama-3.1-8b"),
            "batching": rp.plot.batching(model="llama-3.1-8b", device="h100-sxm"),
        }
        out["plots"] = {k: _clean(f.rooflinepy_data) for k, f in figs.items()}
    except ImportError:
        out["plots"] = "matplotlib missing"

    # CLI
    from rooflinepy import cli

    cli_out = {}
    for argv in (["estimate", "-m", "qwen3-4b", "-q", "BF16,Q8_0,Q4_K_M", "-d", "m4-pro", "--json"],
                 ["estimate", "-m", "llama-3.1-8b", "-q", "bf16,fp8", "-d", "h100-sxm", "-b", "1,64", "-p", "2048",
                  "-n", "256", "--engine", "cuda-graphs", "--json"],
                 ["devices", "--json"], ["device", "h100-sxm", "--json"], ["validate", "--json"],
                 ["op", "gemm", "--m", "4096", "--n", "4096", "--k", "4096", "--dtype", "fp16", "--device", "a100",
                  "--json"],
                 ["estimate", "-m", "qwen3-4b", "-q", "BF16,Q8_0,Q4_K_M", "-d", "m4-pro"]):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            rc = cli.main(argv)
        text = buf.getvalue()
        try:
            value: Any = json.loads(text)
        except ValueError:
            value = text
        cli_out[" ".join(argv)] = {"rc": rc, "out": _clean(value)}
    out["cli"] = cli_out
    return out


def _flatten(x: Any, prefix: str, out: Dict[str, Any]) -> None:
    if isinstance(x, dict):
        for k, v in x.items():
            _flatten(v, f"{prefix}/{k}", out)
    elif isinstance(x, list):
        for i, v in enumerate(x):
            _flatten(v, f"{prefix}[{i}]", out)
    else:
        out[prefix] = x


def compare(a_path: str, b_path: str, rtol: float, renames: List[str]) -> int:
    a, b = {}, {}
    _flatten(json.load(open(a_path)), "", a)
    _flatten(json.load(open(b_path)), "", b)
    for r in renames:
        old, new = r.split("=", 1)
        a = {k.replace(old, new): v for k, v in a.items()}
    exact = differ = 0
    worst: Dict[str, float] = {}
    lines = []
    for k in sorted(set(a) | set(b)):
        if k not in a or k not in b:
            lines.append(f"only in {'before' if k in a else 'after'}: {k} = {a.get(k, b.get(k))!r}")
            differ += 1
            continue
        x, y = a[k], b[k]
        if x == y:
            exact += 1
            continue
        if isinstance(x, (int, float)) and isinstance(y, (int, float)) and not isinstance(x, bool):
            rel = abs(x - y) / max(abs(x), abs(y))
            group = k.split("/")[1] if "/" in k else k
            worst[group] = max(worst.get(group, 0.0), rel)
            if rel <= rtol:
                exact += 1
                continue
            lines.append(f"{k}: {x!r} -> {y!r} ({rel:+.3e})")
        else:
            lines.append(f"{k}: {x!r} -> {y!r}")
        differ += 1
    print("\n".join(lines))
    print(f"\n{exact} values equal (rtol {rtol:g}), {differ} differ")
    for g, w in sorted(worst.items()):
        print(f"  largest relative difference in {g}: {w:.3e}")
    return 0 if differ == 0 else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", help="write the snapshot here")
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
    ap.add_argument("--rtol", type=float, default=0.0, help="relative tolerance of the comparison (default exact)")
    ap.add_argument("--rename", action="append", default=[], help="OLD=NEW: a key renamed between the snapshots")
    args = ap.parse_args()
    if args.compare:
        return compare(*args.compare, args.rtol, args.rename)
    data = snapshot()
    text = json.dumps(data, indent=0, sort_keys=True)
    if args.output:
        open(args.output, "w").write(text)
        print(f"wrote {args.output}: {len(data['estimates'])} estimates, {len(data['errors'])} errors", file=sys.stderr)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
