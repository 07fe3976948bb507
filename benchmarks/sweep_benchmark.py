"""Speed of the estimator and the sweep engine (prints figures; not a test).

    python3 benchmarks/sweep_benchmark.py [--quick]

Prints: one rp.estimate call from Python; sweep throughput in estimates/s on one thread and on every core; a
1024-prompt / 512-generated-token estimate against a 1-token one (decode is summed in closed form: the same cost);
and the same sweep done by a plain Python loop over rp.estimate, for the ratio. Targets: >= 1,000,000 full
estimates/s per core through rp.sweep, <= 20 us per rp.estimate call, a generation costing what a step costs.
Repeated sweeps take their plans from the core's plan cache (rp._core.sweep_plan_cache); each sweep is also timed
with every plan built, as a first sweep is.
Every row of a sweep is a full estimate: prefill, decode, TTFT, memory, max batch, max context, compute-bound
batch, ceilings and bounds.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import rooflinepy as rp
from rooflinepy import _core


def best_of(fn, repeat: int, number: int) -> float:
    """Seconds per call: the best of `repeat` runs of `number` calls (the least disturbed by other load)."""
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        runs.append((time.perf_counter() - t0) / number)
    return min(runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sweeps (a smoke run)")
    args = ap.parse_args()
    cores = os.cpu_count() or 1
    try:
        load = " load average %.2f %.2f %.2f," % os.getloadavg()
    except OSError:
        load = ""
    print(f"rooflinepy {rp.__version__} on {platform.processor() or platform.machine()}, {cores} cores,{load} "
          f"Python {platform.python_version()}")

    # ---- one estimate from Python -----------------------------------------------------------------------------
    kw = dict(model="llama-3.1-8b", quant="Q4_K_M", device="h100-sxm", batch=1)
    rp.estimate(**kw, prompt_tokens=1024, gen_tokens=512)  # warm: catalogue, database, plan
    n = 2000 if args.quick else 20000
    single = best_of(lambda: rp.estimate(**kw, prompt_tokens=1024, gen_tokens=512), 5, n // 5)
    batches = [1 + i % 64 for i in range(n)]
    it = iter(range(10**12))
    varying = best_of(lambda: rp.estimate(**kw | {"batch": batches[next(it) % n]}, prompt_tokens=1024,
                                          gen_tokens=512), 5, n // 5)
    print(f"\nrp.estimate (llama-3.1-8b Q4_K_M h100-sxm, prompt 1024, gen 512): {single * 1e6:.1f} us per call "
          f"(batch varying 1..64: {varying * 1e6:.1f} us)  [target <= 20 us]")

    # ---- a generation costs what a step costs -----------------------------------------------------------------
    m, dev = rp.model("llama-3.1-8b"), rp.device("h100-sxm")
    plan = _core.EstimatePlan(m._core, dev._core, "Q4_K_M")
    gen512 = best_of(lambda: plan.estimate(1, 1024, 512, False), 5, n // 5)
    gen1 = best_of(lambda: plan.estimate(1, 1024, 1, False), 5, n // 5)
    gen1m = best_of(lambda: plan.estimate(1, 1024, 10**6, False), 5, n // 5)
    print(f"core estimate, 1024-token prompt: 512 generated tokens {gen512 * 1e6:.2f} us, 1 token {gen1 * 1e6:.2f} us, "
          f"10^6 tokens {gen1m * 1e6:.2f} us (ratio 512/1 = {gen512 / gen1:.2f})  [target: the same cost]")
    py512 = best_of(lambda: rp.estimate(**kw, prompt_tokens=1024, gen_tokens=512), 5, n // 5)
    py1 = best_of(lambda: rp.estimate(**kw, prompt_tokens=1024, gen_tokens=1), 5, n // 5)
    print(f"rp.estimate, 1024-token prompt: 512 generated tokens {py512 * 1e6:.1f} us, 1 token {py1 * 1e6:.1f} us")

    # ---- sweep throughput -------------------------------------------------------------------------------------
    issue = dict(models=["llama-3.1-8b", "qwen3-8b"], quants=["BF16", "Q8_0", "Q4_K_M", "fp8"], devices=rp.devices(),
                 batch=[1, 2, 4, 8, 16, 32, 64, 128, 256], prompt_tokens=[128, 2048, 32768], gen_tokens=[256],
                 kv_dtype=["f16", "q8_0"], flash_attention=[True],
                 skip_invalid=True)  # llama.cpp runs no fp8 weights: those rows are left out, not an error
    big = dict(issue, batch=list(range(1, 257)), gen_tokens=[64, 256, 1024])
    if args.quick:
        big = dict(issue, batch=list(range(1, 65)))
    rp.sweep(**issue)  # warm
    print()
    for label, spec in (("issue's example sweep", issue), ("large sweep (batch 1..256, 3 gen lengths)", big)):
        rows = 0
        for threads in (1, None):
            times = []
            for _ in range(3):
                t0 = time.perf_counter()
                df = rp.sweep(**spec, threads=threads)
                times.append(time.perf_counter() - t0)
            rows = len(df)
            t = min(times)
            name = "1 thread" if threads == 1 else f"{cores} threads"
            print(f"rp.sweep {label}: {rows:,} estimates ({df.attrs['plans']} configurations), {name}: {t:.3f} s = "
                  f"{rows / t:,.0f} estimates/s" + ("  [target >= 1,000,000 per core]" if threads == 1 else ""))
        # the same sweep with every plan built (the plans kept from the runs above dropped first), as a first sweep
        times = []
        for _ in range(3):
            _core.sweep_plan_cache(clear=True)
            t0 = time.perf_counter()
            rp.sweep(**spec, threads=1)
            times.append(time.perf_counter() - t0)
        print(f"  the same, every plan built (none kept from an earlier sweep), 1 thread: {min(times):.3f} s = "
              f"{rows / min(times):,.0f} estimates/s")

    # ---- the same sweep as a Python loop over rp.estimate -----------------------------------------------------
    # Every point of the issue's sweep, in its order (each configuration's plan built once, as rp.estimate caches
    # it), against rp.sweep of the same points on one thread; and the hot per-call cost for the large sweep.
    df = rp.sweep(**issue, threads=1)
    points = df[["model", "quant", "device", "batch", "prompt_tokens", "gen_tokens", "kv_dtype"]].astype(object)
    points = points.to_dict("records")
    if args.quick:
        points = points[:3000]
    rp.inference._PLANS.clear()
    t0 = time.perf_counter()
    for r in points:
        rp.estimate(model=r["model"], quant=r["quant"], device=r["device"], batch=r["batch"],
                    prompt_tokens=r["prompt_tokens"], gen_tokens=r["gen_tokens"], kv_dtype=r["kv_dtype"],
                    flash_attention=True)
    loop = time.perf_counter() - t0
    t0 = time.perf_counter()
    rp.sweep(**issue, threads=1)
    swept = (time.perf_counter() - t0) * len(points) / len(df)
    print(f"\nplain Python loop over rp.estimate, the issue's sweep ({len(points):,} points): {loop:.2f} s "
          f"({loop / len(points) * 1e6:.1f} us per estimate, plans included); rp.sweep on one thread: {swept:.3f} s, "
          f"{loop / swept:,.0f}x faster")
    big_rows = len(rp.sweep(**big, threads=1))
    print(f"the large sweep ({big_rows:,} points) as a loop at the hot {varying * 1e6:.1f} us per call: "
          f"{big_rows * varying:.1f} s")


if __name__ == "__main__":
    main()
