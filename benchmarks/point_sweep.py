"""Speed of a point sweep (rp.sweep(points=...)): 60,000 points over 2 models × 2 devices, a few batches, prompts
and generation lengths, on one thread, the table sorted by configuration and as drawn (random order); prints
points/s (not a test). Target: no slower than the build before (run it with both interpreters side by side).

    python3 benchmarks/point_sweep.py
"""
import time

import numpy as np
import pandas as pd

import rooflinepy as rp

rng = np.random.default_rng(0)
n = 60000
pts = pd.DataFrame({"model": rng.choice(["llama-3.1-8b", "qwen3-8b"], n), "quant": "Q4_K_M",
                    "device": rng.choice(["h100-sxm", "m4-max"], n), "batch": rng.choice([1, 4, 16], n),
                    "prompt_tokens": rng.choice([512, 4096], n), "gen_tokens": rng.choice([128, 256], n)})
rp.sweep(points=pts.head(100), threads=1)
for name, table in (("sorted by configuration", pts.sort_values(["model", "device", "prompt_tokens"])),
                    ("in random order", pts)):
    table = table.reset_index(drop=True)
    best = 1e9
    for _ in range(3):
        t0 = time.perf_counter()
        rp.sweep(points=table, threads=1)
        best = min(best, time.perf_counter() - t0)
    print(f"{name}: {n / best:,.0f} points/s")
