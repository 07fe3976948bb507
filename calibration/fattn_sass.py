#!/usr/bin/env python3
"""Count the instructions of ggml-cuda's flash-attention (mma) K/V loop per score element, per head size and GPU.

    python3 calibration/fattn_sass.py --ggml /path/to/ggml [--arch sm_86 --arch sm_90 ...] [--json]

What it measures: engine_db's ``flash_attention_issue`` of llama.cpp's CUDA backend (engine_db/llama.cpp.json):
the thread instructions flash_attn_ext_f16 (fattn-mma-f16.cuh) issues per element of the score matrix besides
its matrix products — the online softmax (max, exp2, sums), the conversions to half, the shared-memory loads of
the K/V tiles into MMA fragments and the addressing of the loop — with which ops::attention bounds the kernel by
the SM's instruction issue. It compiles two template instances of a ggml checkout with nvcc for each
architecture and disassembles them with cuobjdump:

- ``fattn-mma-f16-instance-ncols1_64-ncols2_1.cu``: one query head per K/V head (ncols2 = 1: multi-head attention,
  or a GQA ratio that is odd), which fattn.cu runs for prompts of more than 32 tokens; ggml loads its K/V tiles
  without cp.async pipelining (ggml_cuda_fattn_mma_get_nstages: 0 stages unless ncols2 >= 2);
- ``fattn-mma-f16-instance-ncols1_16-ncols2_4.cu``: a GQA group's query heads in one block (ncols2 = 4; 2 and 8
  count within 2 % of it), K/V tiles through cp.async.

In each flash_attn_ext_f16<DKQ, DV, ncols1, ncols2, softcap = false, V_is_K_view = false> it takes the K/V loop:
the smallest loop (a backward branch and its target) holding matrix instructions and global loads (LDG or
LDGSTS). The score elements one warp's pass covers are the Q·Kᵀ multiply-adds (HMMA with F32 accumulators)
divided by the head size; every instruction that is not an HMMA counts, times the 32 threads of the warp.

Limits: a static count (branches inside the loop counted as if always taken; of the loop's inlined copies, the
smallest: ordinary tiles, stream-K tiles and the last, masked tile are separate copies), built without ggml's
fast-math flags; the loop only (the per-tile epilogue and the combination of partial results are left out).

Needs nvcc and cuobjdump (CUDA Toolkit; cuobjdump also comes with pip's nvidia-cuda-cuobjdump) and a ggml source
tree. It needs no GPU and is not run by the tests: its output is a source the engine file cites.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mmq_sass import MACS_PER_MMA, functions, mma_shape, smallest_loop  # noqa: E402  (the same SASS reading)

INSTANCES = {"mha": "ncols1_64-ncols2_1", "gqa": "ncols1_16-ncols2_4"}


def count(ggml: Path, arch: str, variant: str, nvcc: str, cuobjdump: str, work: Path) -> Dict[int, Dict[str, float]]:
    """{head size: {instructions, scores, mufu}} per warp pass of the K/V loop, for one instance and architecture."""
    instance = INSTANCES[variant]
    source = ggml / "src" / "ggml-cuda" / "template-instances" / f"fattn-mma-f16-instance-{instance}.cu"
    if not source.is_file():
        raise SystemExit(f"{source} does not exist (a ggml tree with fattn-mma-f16 instances is needed)")
    cubin = work / f"{instance}.{arch}.cubin"
    subprocess.run([nvcc, "-std=c++17", "-O3", "--extended-lambda", f"-arch={arch}", "-cubin", "-DNDEBUG",
                    f"-I{ggml / 'include'}", f"-I{ggml / 'src'}", f"-I{ggml / 'src' / 'ggml-cuda'}",
                    "-o", str(cubin), str(source)], check=True)
    sass = subprocess.run([cuobjdump, "-sass", str(cubin)], check=True, capture_output=True, text=True).stdout
    out: Dict[int, Dict[str, float]] = {}
    for name, body in functions(sass):
        m = re.match(r"_Z18flash_attn_ext_f16ILi(\d+)ELi(\d+)ELi\d+ELi\d+ELb0ELb0E", name)
        if not m or m.group(1) != m.group(2):
            continue
        d = int(m.group(1))
        ops = smallest_loop(body)  # the K/V loop
        if ops is None:
            continue
        mmas = [o for o in ops if "MMA" in o]
        shapes = [mma_shape(o) for o in mmas]
        if any(s is None for s in shapes):
            raise SystemExit(f"{arch} d={d}: MMA of unknown shape {sorted(set(mmas))}; add it to MACS_PER_MMA")
        qk_macs = sum(MACS_PER_MMA[s] for s, o in zip(shapes, mmas) if s and o.endswith(".F32"))
        if qk_macs == 0:
            raise SystemExit(f"{arch} d={d}: no MMA with F32 accumulators (Q·Kᵀ) in the loop")
        scores = qk_macs / d
        out[d] = {"loop": len(ops), "mma": len(mmas), "scores": scores,
                  "per_score": (len(ops) - len(mmas)) * 32 / scores,
                  "mufu": sum(o.startswith("MUFU") for o in ops) * 32 / scores}
    if not out:
        raise SystemExit(f"{cubin}: no flash_attn_ext_f16 K/V loop found")
    return out


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ggml", type=Path, required=True, help="a ggml source tree (holding src/ggml-cuda)")
    ap.add_argument("--arch", action="append", help="nvcc -arch values (default: sm_86 sm_90 sm_100a sm_120a)")
    ap.add_argument("--json", action="store_true", help="print engine_db rows [head_dim, mha, gqa] per arch")
    ap.add_argument("--nvcc", default=shutil.which("nvcc") or "nvcc")
    ap.add_argument("--cuobjdump", default=shutil.which("cuobjdump") or "cuobjdump")
    args = ap.parse_args(argv)
    archs = args.arch or ["sm_86", "sm_90", "sm_100a", "sm_120a"]
    table: Dict[str, List[List[float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for arch in archs:
            counts = {v: count(args.ggml, arch, v, args.nvcc, args.cuobjdump, Path(tmp)) for v in INSTANCES}
            dims = sorted(set(counts["mha"]) & set(counts["gqa"]))
            if not args.json:
                print(f"{arch}: instructions per score element besides the MMAs (MUFU among them)")
                print(f"  {'head':>4}  {'mha loop':>8} {'per score':>9} {'mufu':>5}   {'gqa loop':>8} {'per score':>9} {'mufu':>5}")
                for d in dims:
                    a, b = counts["mha"][d], counts["gqa"][d]
                    print(f"  {d:4d}  {a['loop']:8.0f} {a['per_score']:9.2f} {a['mufu']:5.2f}   "
                          f"{b['loop']:8.0f} {b['per_score']:9.2f} {b['mufu']:5.2f}")
            table[arch] = [[d, round(counts["mha"][d]["per_score"], 2), round(counts["gqa"][d]["per_score"], 2)]
                           for d in dims]
    if args.json:
        print(json.dumps(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
