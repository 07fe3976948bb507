"""Two builds of rooflinepy side by side: the speed figures of each, measured in alternating rounds, and the paired
ratios new / old (prints figures; not a test).

    python3 benchmarks/paired.py --old-python /path/to/venv_old/bin/python [--rounds 5]

Each round runs, for the old and then the new interpreter (the order swapped every other round), a probe that times
one `rp.estimate` call, one plan build for a new configuration (the core's EstimatePlan), and `rp.sweep` on one
thread (the issue's example sweep and a larger one, as benchmarks/sweep_benchmark.py defines them; each warm,
repeated as a notebook repeats it, with plans kept between sweeps where the build keeps them, and cold, every plan
built as in a first sweep). This machine's
speed drifts by tens of percent between minutes, so a figure of one side alone says little; the ratio of the two
sides measured a few seconds apart does. The script prints each figure per round, then the median and range of the
ratios.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

PROBE = r"""
import json, time
import rooflinepy as rp
from rooflinepy import _core

def core(x):  # the core object behind a Python wrapper (builds that wrap) or the object itself (builds that do not)
    return getattr(x, "_core", None) or getattr(x, "_m", None) or x

def best(fn, repeat, number):
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        runs.append((time.perf_counter() - t0) / number)
    return min(runs)

# flash attention named: builds before engine defaults (flash_attention_default) took it off when not told
kw = dict(model="llama-3.1-8b", quant="Q4_K_M", device="h100-sxm", batch=1, prompt_tokens=1024, gen_tokens=512,
          flash_attention=False)
rp.estimate(**kw)
out = {"estimate_us": best(lambda: rp.estimate(**kw), 5, 2000) * 1e6}
m, dev = core(rp.model("llama-3.1-8b")), core(rp.device("h100-sxm"))
quants = ["Q4_K_M", "Q8_0", "BF16", "Q6_K"]
for q in quants:  # formats per (model, quant) are cached by the first plan of each; time the plans after
    _core.EstimatePlan(m, dev, q)
i = iter(range(10**9))
out["plan_build_us"] = best(lambda: _core.EstimatePlan(m, dev, quants[next(i) % 4], "f16", next(i) % 2 == 0,
                                                        "llama.cpp", 1), 5, 200) * 1e6
models = ["llama-3.1-8b", "qwen3-8b", "llama-3.2-3b", "qwen3-4b"]
small = dict(models=models, quants=["Q4_K_M", "Q8_0", "BF16"], devices=rp.devices(), batch=[1, 8, 64],
             prompt_tokens=[128, 2048, 8192], gen_tokens=[128, 1024, 4096], flash_attention=False, threads=1)
large = dict(small, batch=[1, 2, 4, 8, 16, 32, 64, 128, 256], gen_tokens=[128, 1024, 4096])
# builds that keep plans between sweeps (the core's plan cache) are timed twice: repeated sweeps as a notebook runs
# them (warm: the plans kept) and each sweep after dropping the kept plans (cold: every plan built, as a first sweep);
# builds without the cache build every plan each time, so their two figures are the same measurement
clear = getattr(_core, "sweep_plan_cache", lambda clear=False: None)
for name, args in (("sweep_small", small), ("sweep_large", large)):
    for mode in ("warm", "cold"):
        rp.sweep(**args)
        t = []
        for _ in range(3):
            if mode == "cold":
                clear(clear=True)
            t0 = time.perf_counter()
            df = rp.sweep(**args)
            t.append(time.perf_counter() - t0)
        out[f"{name}_{mode}_per_s"] = len(df) / min(t)
print(json.dumps(out))
"""


def run(python: str) -> dict:
    proc = subprocess.run([python, "-c", PROBE], capture_output=True, text=True, cwd="/tmp")
    if proc.returncode != 0:
        raise SystemExit(f"{python}: probe failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old-python", required=True, help="an interpreter with the old build installed")
    ap.add_argument("--new-python", default=sys.executable, help="an interpreter with the new build (default: this one)")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    rows = []
    for r in range(args.rounds):
        order = ("old", "new") if r % 2 == 0 else ("new", "old")
        got = {side: run(args.old_python if side == "old" else args.new_python) for side in order}
        rows.append(got)
        print(f"round {r + 1} ({order[0]} first): " + ", ".join(
            f"{k} {got['old'][k]:.4g} -> {got['new'][k]:.4g}" for k in got["old"]), flush=True)
    print("\npaired ratios new / old (median, range); for times < 1 is faster, for rates > 1 is faster:")
    for k in rows[0]["old"]:
        ratios = [row["new"][k] / row["old"][k] for row in rows]
        print(f"  {k:20s} {statistics.median(ratios):.3f}  ({min(ratios):.3f} - {max(ratios):.3f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
