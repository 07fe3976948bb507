#!/usr/bin/env python3
"""The efficiency of llama.cpp's Vulkan cooperative-matrix GEMM for quantized weights, from kernel microbenchmarks.

engine_db's kernel 'mul_mm (cooperative matrix), quantized weights' (llama.cpp's vulkan backend) multiplies on the
matrix units in fp16; left at efficiency 1 it ran at the device's achievable peak, which the shader does not reach.
tests/validation/microbenchmarks/llamacpp_mul_mat_vulkan.csv holds `test-backend-ops perf -o MUL_MAT` rows of that
kernel (a 4096 x 14336 weight matrix times 512 tokens) on NVIDIA (RTX 3090, RTX 4070) and Intel Xe2 (Arc B570,
Arc Pro B50) GPUs. For each vendor this script finds the efficiency at which the model's rates for those rows have a
geometric-mean ratio measured / modelled of 1: the kernel's own efficiency from the NVIDIA rows, a by_family one for
intel-xe2-hpg from the Intel rows.

The model's time for a row is a / efficiency + b (a: the products on the matrix units at efficiency 1, b: the rest,
dequantization and launch), so two evaluations per row (efficiency 1 and 1/2) give a and b and the efficiency
follows by bisection. Each evaluation runs in a subprocess over a copy of the databases with the kernel's
efficiency set ($ROOFLINE_DATA_DIR), since the databases load once per process.

    python3 calibration/vulkan_mul_mat.py          # print the efficiencies and the per-row ratios
    python3 calibration/vulkan_mul_mat.py --check  # exit 1 if engine_db's values are off by more than 0.01
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "tests" / "validation" / "microbenchmarks" / "llamacpp_mul_mat_vulkan.csv"
KERNEL = "mul_mm (cooperative matrix), quantized weights"
# a GGUF type whose every linear tensor has the row's type (the one-layer model's ffn_up / ffn_down)
QUANT = {"q4_0": "Q4_0", "q4_1": "Q4_1", "q5_0": "Q5_0", "q5_1": "Q5_1", "q8_0": "Q8_0", "q4_K": "Q4_K_S",
         "q5_K": "Q5_K_S", "q6_K": "Q6_K", "iq4_xs": "IQ4_XS"}
FAMILY = {"nvidia": None, "intel": "intel-xe2-hpg"}  # None: the kernel's own efficiency
TOLERANCE = 0.01


def rows() -> List[Dict[str, str]]:
    """The table's rows; a weight type without a GGUF type here, or a vendor without an efficiency, is an error."""
    with open(TABLE) as f:
        table = list(csv.DictReader(line for line in f if not line.startswith("#")))
    for r in table:
        if r["type"] not in QUANT:
            raise ValueError(f"{TABLE.name}: type '{r['type']}' ({r['gpu']}) has no GGUF type here; known: {sorted(QUANT)}")
        if r["vendor"] not in FAMILY:
            raise ValueError(f"{TABLE.name}: vendor '{r['vendor']}' ({r['gpu']}) is not one of {sorted(FAMILY)}")
    return table


def one_layer(rp: Any, hidden: int, intermediate: int) -> Any:
    return rp.Model.from_hf_config({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": hidden,
        "intermediate_size": intermediate, "num_hidden_layers": 1, "num_attention_heads": hidden // 128,
        "num_key_value_heads": hidden // 128, "vocab_size": 32000, "max_position_embeddings": 4096,
        "rms_norm_eps": 1e-5, "torch_dtype": "float16"})


def row_device(rp: Any, row: Dict[str, str], folder: str) -> Any:
    """The row's device: the hardware_db device, its compute peaks scaled by the row's `scale` (written to
    `folder` as a device file when not 1)."""
    scale = float(row["scale"])
    if scale == 1:
        return rp.device(row["device"])
    d = rp.device(row["device"]).to_dict()
    d["id"] = f"{row['device']}-x{row['scale']}"
    d["name"] = f"{row['gpu']} (the {row['device']} file's peaks x {row['scale']})"
    d["aliases"] = []
    for peak in d["compute"]:
        peak["peak_TFLOPS"] *= scale
    path = Path(folder) / f"{d['id']}.json"
    path.write_text(json.dumps(d))
    return rp.load_device(path)


def gemm_op(rp: Any, m: int, k: int, n: int, quant: str, device: Any, engine: str) -> Any:
    """An m x k weight matrix times n tokens as the model times it: that op of a one-layer model's prompt (ffn_up is
    intermediate x hidden, ffn_down hidden x intermediate, attn_q hidden x hidden), its breakdown row (seconds,
    compute). tests/validation/test_kernel_microbenchmarks.py times the ROCm build's MMQ rows the same way."""
    if m == k:
        model, op = one_layer(rp, m, 2 * m), "attn_q"
    elif m > k:
        model, op = one_layer(rp, k, m), "ffn_up"
    else:
        model, op = one_layer(rp, m, k), "ffn_down"
    e = rp.estimate(model=model, quant=quant, device=device, engine=engine, prompt_tokens=n, gen_tokens=0,
                    flash_attention=True)
    b = e.breakdown
    return b[(b.phase == "prefill") & (b.op == op)].iloc[0]


def modelled_tflops(rp: Any, row: Dict[str, str], folder: str) -> float:
    """The model's rate for the row on the llama.cpp-vulkan engine."""
    m, k, n = int(row["m"]), int(row["k"]), int(row["n"])
    r = gemm_op(rp, m, k, n, QUANT[row["type"]], row_device(rp, row, folder), "llama.cpp-vulkan")
    if r.compute != "fp16_acc16 matrix":
        raise RuntimeError(f"{row['gpu']} {row['type']}: the model ran '{r.compute}', not the cooperative-matrix GEMM")
    return float(2 * m * k * n / r.seconds / 1e12)


def kernel(engine_db: Dict[str, Any]) -> Dict[str, Any]:
    kernels = engine_db["backends"]["vulkan"]["linear_kernels"]
    kernels = kernels["value"] if isinstance(kernels, dict) else kernels
    return next(k for k in kernels if k["name"] == KERNEL)


def committed() -> Dict[str, float]:
    """engine_db's efficiency per vendor."""
    k = kernel(json.loads((ROOT / "engine_db" / "llama.cpp.json").read_text()))
    out = {}
    for vendor, family in FAMILY.items():
        by = k.get("by_family", {}).get(family, {}) if family else {}
        out[vendor] = float(by.get("efficiency", k.get("efficiency", 1.0)))
    return out


def times_at(efficiency: float) -> List[float]:
    """Each row's modelled seconds with every vendor's efficiency set to `efficiency` (in a subprocess)."""
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder) / "data"
        data.mkdir()
        for db in ("hardware_db", "engine_db", "model_db"):
            shutil.copytree(ROOT / db, data / db)
        path = data / "engine_db" / "llama.cpp.json"
        d = json.loads(path.read_text())
        k = kernel(d)
        k["efficiency"] = efficiency
        k.pop("by_family", None)
        path.write_text(json.dumps(d, indent=2, ensure_ascii=False) + "\n")
        code = ("import json, sys; sys.path.insert(0, %r); import vulkan_mul_mat as v; import rooflinepy as rp; "
                "print(json.dumps([2 * int(r['m']) * int(r['k']) * int(r['n']) / (v.modelled_tflops(rp, r, %r) * 1e12) "
                "for r in v.rows()]))") % (str(Path(__file__).parent), folder)
        env = dict(os.environ, ROOFLINE_DATA_DIR=str(data))
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"evaluating the rows at efficiency {efficiency} failed:\n{out.stderr}")
        return [float(x) for x in json.loads(out.stdout)]


def fit() -> Dict[str, Dict[str, Any]]:
    """Per vendor: the efficiency at which geomean(measured / modelled) = 1, and each row's ratio there."""
    table = rows()
    t1, t2 = times_at(1.0), times_at(0.5)
    a = [y - x for x, y in zip(t1, t2)]  # t(e) = a / e + b: t(1/2) - t(1) = a
    b = [x - ai for x, ai in zip(t1, a)]
    measured = [2 * int(r["m"]) * int(r["k"]) * int(r["n"]) / (float(r["tflops"]) * 1e12) for r in table]
    out: Dict[str, Dict[str, Any]] = {}
    for vendor in FAMILY:
        idx = [i for i, r in enumerate(table) if r["vendor"] == vendor]

        def log_ratio(e: float) -> float:  # mean log(modelled time / measured time) = mean log(measured / modelled rate)
            return sum(math.log((a[i] / e + b[i]) / measured[i]) for i in idx) / len(idx)

        lo, hi = 0.01, 1.0
        for _ in range(60):  # log_ratio falls as e grows
            mid = (lo + hi) / 2
            if log_ratio(mid) > 0:
                lo = mid
            else:
                hi = mid
        e = round((lo + hi) / 2, 3)
        ratios = [(a[i] / e + b[i]) / measured[i] for i in idx]
        out[vendor] = {"efficiency": e, "rows": [(table[i]["gpu"], table[i]["type"], table[i]["tflops"], r)
                                                for i, r in zip(idx, ratios)]}
    return out


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if engine_db differs from the fit by more than 0.01")
    args = ap.parse_args(argv)
    result, have = fit(), committed()
    bad = False
    for vendor, r in result.items():
        family = FAMILY[vendor] or "the kernel's own"
        ok = abs(have[vendor] - r["efficiency"]) <= TOLERANCE
        bad |= not ok
        print(f"{vendor} ({family}): efficiency {r['efficiency']:.3f}, engine_db {have[vendor]:.3f} "
              f"{'ok' if ok else 'DIFFERS'}")
        for gpu, kind, tflops, ratio in r["rows"]:
            print(f"  {gpu:12s} {kind:5s} measured {float(tflops):6.2f} TFLOPS  measured / modelled {ratio:.3f}")
        mape = sum(abs(x[3] - 1) for x in r["rows"]) / len(r["rows"])
        print(f"  MAPE {100 * mape:.1f} %")
    return 1 if args.check and bad else 0


if __name__ == "__main__":
    sys.exit(main())
