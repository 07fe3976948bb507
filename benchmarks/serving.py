#!/usr/bin/env python3
"""Speed of the serving model: rp.serve per call, the core's evaluation per load, and a sweep over loads.

    python3 benchmarks/serving.py [--points 200000]

Prints figures; asserts nothing (the issue's targets: rp.serve <= 1 ms per call, a sweep over serving
configurations >= 100k per second on one thread). The sweep evaluates one deployment's ServingPlan at many
(prompt, output, concurrency) loads in one call to the core (ServingPlan.rows), on the calling thread, and the same
prompts and outputs as Poisson arrivals at a request rate (each load solved for its queue's steady state).
"""
from __future__ import annotations

import argparse
import itertools
import statistics
import time

import rooflinepy as rp
from rooflinepy import _core


def per_call(fn, n: int) -> float:
    fn()  # warm: plans built, caches filled
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t) / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--points", type=int, default=200_000, help="loads in the sweep (default 200000)")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    cases = [("llama-3.1-8b", "fp8", "h100-sxm", "vllm", "TP1"),
             ("llama-3.3-70b", "fp8", "h200-sxm", "trt-llm", "TP2"),
             ("qwen3-235b-a22b", "fp8", "h200-sxm", "sglang", "DEP8"),
             ("deepseek-r1", "fp8", "b200", "vllm", "TP8")]
    print(f"{'deployment':<52} {'rp.serve':>10} {'core':>9} {'plan build':>11} {'closed loop/s':>14} "
          f"{'Poisson/s':>11}")
    for model, quant, device, engine, par in cases:
        kw = dict(engine=engine, parallel=par, prompt_tokens=1000, gen_tokens=1000)
        serve = statistics.median(per_call(lambda: rp.serve(model, quant, device, concurrency=64, **kw), 2000)
                                  for _ in range(args.rounds))
        m, d = rp.model(model)._core, rp.device(device)._core
        p = _core.parse_parallelism(par)
        t = time.perf_counter()
        plan = _core.ServingPlan(m, d, quant, engine, "", p)
        build = time.perf_counter() - t
        core = statistics.median(per_call(lambda: plan.estimate(1000, 1000, 64, 0, 0, False), 5000)
                                 for _ in range(args.rounds))
        side = max(1, round(args.points ** (1 / 3)))
        loads = [(float(a), float(b), float(c), 0.0, 0.0) for a, b, c in itertools.islice(
            itertools.product(range(128, 128 + 64 * side, 64), range(128, 128 + 64 * side, 64),
                              range(1, side + 1)), args.points)]
        # the same prompts and outputs as Poisson arrivals (no client count, a request rate): 0.25 to 64 requests/s
        poisson = [(a, b, 0.0, 0.25 * c, 0.0) for a, b, c, _, _ in loads]
        rates: dict[str, list[float]] = {"closed": [], "poisson": []}
        for _ in range(args.rounds):
            for kind, ls in (("closed", loads), ("poisson", poisson)):
                t = time.perf_counter()
                plan.rows(ls)
                rates[kind].append(len(ls) / (time.perf_counter() - t))
        name = f"{model} {quant} {par} on {device} ({engine})"
        print(f"{name:<52} {serve * 1e6:>8.1f}us {core * 1e6:>7.1f}us {build * 1e3:>9.1f}ms "
              f"{statistics.median(rates['closed']):>14,.0f} {statistics.median(rates['poisson']):>11,.0f}")
    print("\nrp.serve: Python call with a cached plan (validation, plan lookup, one core evaluation with its breakdown); "
          "core: ServingPlan.estimate without breakdown; closed loop / Poisson: ServingPlan.rows over the loads (Python "
          "list in and out included), one thread, as 1..N clients or as 0.25..N/4 requests/s.")


if __name__ == "__main__":
    main()
