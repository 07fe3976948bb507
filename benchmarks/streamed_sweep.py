"""A streamed sweep of many points in bounded memory (issue "Robustness, second round", item 3).

    python3 benchmarks/streamed_sweep.py [--points 1e9] [--output none|x.parquet|x.csv|dir/]

Sweeps Llama-3.1-8B and Qwen3-8B × 5 quantizations × 10 devices × batch × prompt × generated tokens (sized to
the points asked for) through ``rp.sweep_chunks`` (``--output none``: every chunk estimated, then dropped) or
``rp.sweep(output=...)``, and prints the points, seconds, estimates/s and the peak resident memory.
"""
from __future__ import annotations

import argparse
import math
import resource
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=float, default=1e9)
    ap.add_argument("--output", default="none")
    ap.add_argument("--chunk-rows", type=int, default=1_000_000)
    args = ap.parse_args()
    import rooflinepy as rp

    models, quants = ["llama-3.1-8b", "qwen3-8b"], ["Q4_0", "Q4_K_M", "Q8_0", "BF16", "IQ4_XS"]
    devices = ["rtx-4090", "rtx-3090", "a100-sxm-80gb", "h100-sxm", "h200-sxm", "m4-pro", "m4-max", "m2-ultra",
               "mi300x", "l40s"]
    configs = len(models) * len(quants) * len(devices)
    side = max(1, round((args.points / configs) ** (1 / 3)))  # batch × prompt × gen values, each `side` long
    batch = list(range(1, side + 1))
    prompt = [float(64 * (i + 1)) for i in range(side)]
    gen = [float(16 * (i + 1)) for i in range(side)]
    points = configs * side**3
    kw = dict(models=models, quants=quants, devices=devices, batch=batch, prompt_tokens=prompt, gen_tokens=gen,
              chunk_rows=args.chunk_rows)
    t0 = time.perf_counter()
    rows = chunks = 0
    if args.output == "none":
        for df in rp.sweep_chunks(**kw):
            rows += len(df)
            chunks += 1
    else:
        res = rp.sweep(**kw, output=args.output)
        rows, chunks = res.rows, res.chunks
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB -> MiB on Linux
    print(f"points {points:,} (asked {args.points:,.0f}), rows {rows:,} in {chunks} chunks of <= {args.chunk_rows:,}; "
          f"{seconds:.1f} s, {rows / seconds:,.0f} estimates/s; peak resident {peak:,.0f} MiB")
    assert rows == points and math.isfinite(seconds)


if __name__ == "__main__":
    main()
