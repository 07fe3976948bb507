#!/usr/bin/env python3
"""Two checks of what the corpus residuals can and cannot tell (prints figures; sets nothing).

``mmq-bound``: llama.cpp CUDA pp512 (tests/validation/llamacpp_cuda_llama2_7b_q4_0.csv, 6 GPUs, flash attention off
and on). The model's time of each point is split into its seven GEMMs per layer (the ops on matrix units), the
attention op and the rest; the GEMMs' time is scaled by one factor common to all cards (and, optionally, the
unfused attention's by a second) and the MAPE of predicted / measured tokens/s minimised over a grid. It bounds what
any single MMQ cost can reach with the model's other times held as they are.

``metal-generations``: llama.cpp Metal tg128 (tests/validation/llamacpp_metal_llama2_7b.csv). The 2023 engine's two
decode parameters (bandwidth_fraction, kernel_fixed_cost_scale) refitted on each chip generation's rows alone (the
core's least squares on log(predicted / measured), as calibration/fit_defaults.py fits them); the corpus held to
each Metal engine's committed defaults; then the two engines' decode rates side by side on a few chips.

    python3 calibration/residual_checks.py mmq-bound
    python3 calibration/residual_checks.py metal-generations
"""
from __future__ import annotations

import argparse
from typing import Any, Dict, List, Tuple

import rooflinepy as rp
from rooflinepy import validation


def _fit(name: str) -> Dict[str, Any]:
    """The engine fit of tests/validation/fits.json called `name`."""
    (fit,) = [f for f in validation.fits() if f["name"] == name]
    return fit


def _cuda_points() -> List[Tuple[str, bool, float, float, float, float]]:
    """(device, flash attention, GEMM s, attention s, other s, measured s) per pp512 point of the CUDA fit's table
    (its points as validation.fit_points reads them: device ids, engine, flash attention, measured tokens/s)."""
    out = []
    for p in validation.fit_points(_fit("llama.cpp CUDA")):
        if p["test"] != "pp512":
            continue
        e = rp.estimate(p["model"], p["quant"], p["device"], prompt_tokens=int(p["prompt_tokens"]), gen_tokens=0,
                        engine=p["engine"], flash_attention=p["flash_attention"])
        b = e.breakdown
        gemm = float(b[b.compute.str.contains("matrix")].seconds.sum())
        attention = float(b[b.op == "attention"].seconds.sum())
        other = float(b.seconds.sum()) - gemm - attention
        out.append((p["device"], p["flash_attention"], gemm, attention, other,
                    p["prompt_tokens"] / p["measured_tokens_per_s"]))
    return out


def mmq_bound() -> None:
    points = _cuda_points()

    def mape(s: float, k: float) -> float:
        errors = [abs(measured / (s * gemm + (attention if fa else k * attention) + other) - 1)
                  for _, fa, gemm, attention, other, measured in points]
        return 100 * sum(errors) / len(errors)

    grid_s = [0.8 + 0.002 * i for i in range(201)]
    best_s = min(grid_s, key=lambda s: mape(s, 1.0))
    print(f"one GEMM factor: {best_s:.3f}, MAPE {mape(best_s, 1.0):.2f} % over {len(points)} points "
          f"(committed defaults: {mape(1.0, 1.0):.2f} %)")
    grid_k = [0.8 + 0.02 * i for i in range(86)]
    s2, k2 = min(((s, k) for s in grid_s[::2] for k in grid_k), key=lambda x: mape(*x))
    print(f"with a factor on the unfused attention: GEMMs {s2:.3f}, attention {k2:.2f}, MAPE {mape(s2, k2):.2f} %")
    for device, fa, gemm, attention, other, measured in points:
        print(f"  {device:16s} fa {int(fa)}  predicted / measured {measured / (best_s * gemm + attention + other):.3f}")


def metal_generations() -> None:
    from rooflinepy import _core
    from rooflinepy._engine import engine

    fit = _fit("llama.cpp Metal, discussion #4167 builds")
    pts, models, devices = validation._core_inputs(validation.fit_points(fit))
    start = engine(fit["engine"])
    params = [("metal", "bandwidth_fraction", 0.3, 1.5), ("metal", "kernel_fixed_cost_scale", 0.05, 20)]
    launch_us = rp.device("m1-8c").to_dict()["efficiency"]["launch_overhead_us"]
    for generation in ("M1", "M2", "M3", None):
        sel = [i for i, p in enumerate(pts)
               if validation.phase_of(p) == "decode" and generation in (None, p["generation"])]
        r = _core.fit_engine(start._core, params, [pts[i] for i in sel], [models[i] for i in sel],
                             [devices[i] for i in sel])
        errors = [abs(y / pts[i]["measured_tokens_per_s"] - 1) for y, i in zip(r.predicted, sel)]
        print(f"{generation or 'all':4s} {len(sel):3d} tg128 rows: bandwidth_fraction {r.values[0]:.3f}, fixed cost "
              f"{r.values[1]:.3f} x {launch_us:g} us = {r.values[1] * launch_us:.1f} us per kernel, "
              f"MAPE {100 * sum(errors) / len(errors):.1f} %")
    print("the corpus's 128 points (flash attention off, as measured) held to each engine's committed defaults:")
    for name in ("llama.cpp-metal-2023", "llama.cpp"):
        predicted = _core.predict_points(engine(name)._core, pts, models, devices)
        for phase in ("decode", "prefill"):
            q = [y / p["measured_tokens_per_s"] for y, p in zip(predicted, pts) if validation.phase_of(p) == phase]
            worst = max(q, key=lambda x: abs(x - 1))
            print(f"  {name:22s} {phase:7s} MAPE {100 * sum(abs(x - 1) for x in q) / len(q):5.1f} %, "
                  f"mean {100 * (sum(q) / len(q) - 1):+5.1f} %, largest {100 * (worst - 1):+.1f} %")
    print("Llama-2-7B tg128, llama.cpp / llama.cpp-metal-2023:")
    for device in ("m1-7c", "m1-max-32c", "m3-max-40c", "m2-ultra-76c", "m3-ultra-80c", "m4-pro-20c", "m4-max-40c"):
        ratios = []
        for quant in ("F16", "Q4_0"):
            now, then = (rp.estimate("llama-2-7b", quant, device, prompt_tokens=0, gen_tokens=128,
                                     engine=name).decode_tokens_per_s for name in ("llama.cpp", "llama.cpp-metal-2023"))
            ratios.append(f"{quant} {now:.1f} / {then:.1f} = {now / then:.2f}")
        print(f"  {device:14s} " + ", ".join(ratios))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("check", choices=["mmq-bound", "metal-generations"])
    args = parser.parse_args()
    {"mmq-bound": mmq_bound, "metal-generations": metal_generations}[args.check]()


if __name__ == "__main__":
    main()
