"""Minor page faults and time of a 10^6-row in-memory sweep on one thread (issue "Robustness, second round", item 3).

    python3 benchmarks/sweep_page_faults.py

Prints the best of three runs: seconds, rows/s and the minor page faults the sweep took (getrusage). Compare two
builds by running it with each, alternating (this machine's speed drifts between minutes).
"""
import resource
import time

import rooflinepy as rp

KW = dict(models=["llama-3.1-8b", "qwen3-8b"], quants=["Q4_0", "Q8_0"],
          devices=["rtx-4090", "a100", "h100-sxm", "m4-pro", "m4-max"], batch=list(range(1, 501)),
          prompt_tokens=[128.0 * i for i in range(1, 11)], gen_tokens=[64.0 * i for i in range(1, 11)], threads=1)
ROWS = 2 * 2 * 5 * 500 * 10 * 10


def main() -> None:
    rp.sweep(**{**KW, "batch": [1]})  # plans and catalogue loaded before the clock starts
    best, faults = 1e9, 0
    for _ in range(3):
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        t = time.perf_counter()
        df = rp.sweep(**KW)
        dt = time.perf_counter() - t
        f1 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        del df
        if dt < best:
            best, faults = dt, f1 - f0
    print(f"{ROWS:,} rows: best {best:.3f} s, {ROWS / best:,.0f} rows/s, minor page faults {faults:,}")


if __name__ == "__main__":
    main()
