#!/usr/bin/env python3
"""Count the instructions of ggml-cuda's MMQ inner loop per multiply-add, per weight type and GPU architecture.

    python3 calibration/mmq_sass.py --ggml /path/to/ggml [--arch sm_86 --arch sm_120a] [--type q4_0 --type mxfp4]
    python3 calibration/mmq_sass.py --ggml /path/to/ggml --dp4a --j 64 --arch sm_86 --type q4_0   # the dp4a variant
    python3 calibration/mmq_sass.py --ggml /path/to/ggml --mmvq 1 --mmvq 8 --arch sm_86 --type iq2_xxs  # MMVQ

What it measures: engine_db's ``alu_ops_scale`` of llama.cpp's MMQ kernels (engine_db/llama.cpp.json, cuda backend)
are the instructions MMQ's K loop issues besides its matrix multiply-adds, per 4096 multiply-adds, relative to
Q4_0's loop on sm_86. This script reproduces them from the kernel's machine code: it compiles
``src/ggml-cuda/template-instances/mmq-instance-<type>.cu`` of a ggml checkout with nvcc for each architecture,
disassembles it with cuobjdump, takes ``mul_mat_q<type, J, need_check=false>`` (J = 128 tokens unless --j) and, in
it, the K loop: the smallest loop (a backward branch and its target) holding both global loads and MMA (or, with
--dp4a, IDP.4A) instructions, so that loading and unpacking the weight tile counts beside its products. It
prints the loop's instructions, its matrix instructions and multiply-adds, the other instructions per 4096
multiply-adds and their ratio to the reference (counted the same way). All counts are per warp instruction.

--dp4a compiles a copy of the tree with TURING_MMA_AVAILABLE, AMPERE_MMA_AVAILABLE and BLACKWELL_MMA_AVAILABLE left
undefined (common.cuh), so MMQ takes the path ggml builds where no MMA is available (vec_dot_*_dp4a: Pascal, and the
HIP build on RDNA2 and GCN): the same source's integer work around 4-way int8 dot products instead of tensor-core
MMAs, in NVIDIA's instruction set (default architecture sm_86). Its ratio column is then against dp4a's own Q4_0;
engine_db's dp4a scales divide the per-4096 column by the int8-MMA Q4_0 loop's (18.79 on sm_86, a run without --dp4a).

--mmvq N counts the mat-vec kernel instead, ``mul_mat_vec_q<type, N tokens>`` of ``src/ggml-cuda/mmvq.cu`` (no
fusion, the general variant): the smallest loop holding its IDP.4A products and global loads, its instructions per
4,096 weights (all N tokens' work) besides and with the products. tests/validation/README.md cites it for MMVQ at 1-8
tokens (IQ2_XXS and Q4_0 issue about the same per weight at 8 tokens).

Limits: a static count (branches inside the loop counted as if always taken; of the K loop's inlined copies, the
smallest: ordinary tiles, stream-K tiles and the tail are separate copies), built without ggml's fast-math flags.

Needs nvcc and cuobjdump (CUDA Toolkit; cuobjdump also comes with pip's nvidia-cuda-cuobjdump) and a ggml source
tree (ggml-org/ggml, or llama.cpp's ggml/). It needs no GPU and is not run by the tests: its output is a source the
engine file cites.
"""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple

# multiply-adds of one warp instruction, by its SASS opcode and shape (m16n8k32: 16 * 8 * 32; IDP.4A: 32 lanes * 4)
MACS_PER_MMA = {"IDP.4A": 128, "IMMA.16832": 4096, "IMMA.16816": 2048, "IMMA.8816": 1024, "HMMA.16816": 2048, "HMMA.1688": 1024,
                "OMMA.SF.16864": 8192, "QMMA.16832": 4096, "QMMA.SF.16832": 4096}
REFERENCE = ("q4_0", "sm_86")


def functions(sass: str) -> Iterator[Tuple[str, List[Tuple[int, str]]]]:
    """(mangled name, [(address, instruction)]) of each function of cuobjdump -sass output."""
    name: Optional[str] = None
    body: List[Tuple[int, str]] = []
    for line in sass.splitlines():
        m = re.search(r"Function : (\S+)", line)
        if m:
            if name:
                yield name, body
            name, body = m.group(1), []
            continue
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", line)
        if m and name:
            body.append((int(m.group(1), 16), m.group(2)))
    if name:
        yield name, body


def opcode(instruction: str) -> str:
    """The opcode with its modifiers, without a predicate guard (@P0, @!PT ...)."""
    words = re.sub(r"^@!?U?P\w+\s+", "", instruction).split()
    return words[0] if words else ""


def is_matrix(op: str) -> bool:
    """An instruction whose multiply-adds the loop exists for: an MMA, or a 4-way int8 dot product."""
    return "MMA" in op or op.startswith("IDP.4A")


def mma_shape(op: str) -> Optional[str]:
    if op.startswith("IDP.4A"):
        return "IDP.4A"
    for key in MACS_PER_MMA:
        base, shape = key.split(".", 1)
        if op.split(".")[0] == base and f".{shape}." in op + ".":
            return key
    return None


def smallest_loop(body: List[Tuple[int, str]]) -> Optional[List[str]]:
    """The opcodes (without NOPs) of the smallest loop (a backward branch and its target) holding both matrix
    instructions and global loads (LDG, LDGSTS): a tile loaded, then multiplied. None when there is none."""
    index = {addr: i for i, (addr, _) in enumerate(body)}
    best: Optional[Tuple[int, int]] = None
    for i, (addr, ins) in enumerate(body):
        if not opcode(ins).startswith("BRA"):
            continue
        m = re.search(r"0x([0-9a-f]+)", ins)
        target = int(m.group(1), 16) if m else None
        if target is None or target > addr or target not in index:
            continue
        lo = index[target]
        ops = [opcode(x) for _, x in body[lo:i + 1]]
        if (any(is_matrix(o) for o in ops) and any(o.startswith("LDG") for o in ops)
                and (best is None or i - lo < best[1] - best[0])):
            best = (lo, i)
    if best is None:
        return None
    return [opcode(x) for _, x in body[best[0]:best[1] + 1] if opcode(x) != "NOP"]


def inner_loop(body: List[Tuple[int, str]]) -> Tuple[List[str], List[str]]:
    """The K loop: the smallest loop holding both matrix instructions and global loads (a tile loaded and unpacked
    into shared memory, then multiplied), as (its opcodes without NOPs, the matrix instructions' shapes in it)."""
    ops = smallest_loop(body)
    if ops is None:
        raise SystemExit("no loop with matrix instructions and global loads found")
    shapes = [mma_shape(o) for o in ops if is_matrix(o)]
    unknown = [o for o, s in zip([o for o in ops if is_matrix(o)], shapes) if s is None]
    if unknown:
        raise SystemExit(f"MMA instructions of unknown shape: {sorted(set(unknown))}; add them to MACS_PER_MMA")
    return ops, [s for s in shapes if s]


def compile_sass(ggml: Path, source: Path, arch: str, nvcc: str, cuobjdump: str, cubin: Path) -> str:
    """The SASS of one ggml-cuda source file compiled with nvcc for `arch` (into `cubin`), as cuobjdump prints it."""
    subprocess.run([nvcc, "-std=c++17", "-O3", f"-arch={arch}", "-cubin", "-DNDEBUG",
                    f"-I{ggml / 'include'}", f"-I{ggml / 'src'}", f"-I{ggml / 'src' / 'ggml-cuda'}",
                    "-o", str(cubin), str(source)], check=True)
    return subprocess.run([cuobjdump, "-sass", str(cubin)], check=True, capture_output=True, text=True).stdout


def count(ggml: Path, wtype: str, arch: str, nvcc: str, cuobjdump: str, work: Path, j: int = 128,
          dp4a: bool = False) -> Dict[str, object]:
    source = ggml / "src" / "ggml-cuda" / "template-instances" / f"mmq-instance-{wtype}.cu"
    if not source.is_file():
        raise SystemExit(f"--type {wtype}: {source} does not exist")
    cubin = work / f"{wtype}.{arch}.cubin"
    sass = compile_sass(ggml, source, arch, nvcc, cuobjdump, cubin)
    kernel = [(n, b) for n, b in functions(sass) if re.match(rf"_Z9mul_mat_qIL9ggml_type\d+ELi{j}ELb0E", n)]
    if not kernel:
        raise SystemExit(f"{cubin}: no mul_mat_q<type, {j}, false> in it")
    ops, shapes = inner_loop(kernel[0][1])
    if dp4a and set(shapes) != {"IDP.4A"}:
        raise SystemExit(f"{wtype} {arch}: the K loop holds {sorted(set(shapes))}, not only IDP.4A: not the dp4a path")
    macs = sum(MACS_PER_MMA[s] for s in shapes)
    other = len(ops) - len(shapes)
    return {"type": wtype, "arch": arch, "loop": len(ops), "mma": f"{len(shapes)} x {Counter(shapes).most_common(1)[0][0]}",
            "macs": macs, "other": other, "per_4096": other * 4096 / macs,
            "top": Counter(o.split(".")[0] for o in ops if not is_matrix(o)).most_common(6)}


def type_enum(ggml: Path, wtype: str) -> int:
    """The ggml_type value of a weight type name (include/ggml.h: GGML_TYPE_Q4_0 = 2, ...)."""
    header = (ggml / "include" / "ggml.h").read_text()
    m = re.search(rf"GGML_TYPE_{re.escape(wtype.upper())}\s*=\s*(\d+)", header)
    if not m:
        raise SystemExit(f"--type {wtype}: no GGML_TYPE_{wtype.upper()} in {ggml / 'include' / 'ggml.h'}")
    return int(m.group(1))


def count_mmvq(ggml: Path, wtypes: List[str], arch: str, ncols: List[int], nvcc: str, cuobjdump: str,
               work: Path) -> List[Dict[str, object]]:
    """Per weight type and token count: the K loop of mul_mat_vec_q<type, n, no fusion> in mmvq.cu, its instructions
    and IDP.4A products, and per 4,096 weights the instructions besides the products and all of them."""
    cubin = work / f"mmvq.{arch}.cubin"
    kernels = dict(functions(compile_sass(ggml, ggml / "src" / "ggml-cuda" / "mmvq.cu", arch, nvcc, cuobjdump, cubin)))
    rows: List[Dict[str, object]] = []
    for wtype in wtypes:
        enum = type_enum(ggml, wtype)
        for n in ncols:
            mangled = rf"_Z13mul_mat_vec_qIL9ggml_type{enum}ELi{n}ELb0ELb0ELb0E"
            name = next((k for k in kernels if re.match(mangled, k)), None)
            if name is None:
                raise SystemExit(f"{cubin}: no mul_mat_vec_q<{wtype}, {n}, false> in it")
            ops = smallest_loop(kernels[name])
            if ops is None:
                raise SystemExit(f"{wtype} n={n}: no loop with IDP.4A and global loads")
            dp4a = sum(1 for o in ops if is_matrix(o))
            weights = dp4a * MACS_PER_MMA["IDP.4A"] / n  # each weight is multiplied by n tokens
            rows.append({"type": wtype, "arch": arch, "n": n, "loop": len(ops), "dp4a": dp4a,
                         "other_per_4096_weights": (len(ops) - dp4a) * 4096 / weights,
                         "all_per_4096_weights": len(ops) * 4096 / weights})
    return rows


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ggml", type=Path, required=True, help="a ggml source tree (holding src/ggml-cuda)")
    ap.add_argument("--arch", action="append", help="nvcc -arch values (default: sm_86 and sm_120a)")
    ap.add_argument("--type", action="append", help="weight types (default: q4_0 q8_0 q4_k q6_k mxfp4 nvfp4)")
    ap.add_argument("--j", type=int, default=128, help="the kernel's token tile (template J; default 128)")
    ap.add_argument("--dp4a", action="store_true", help="count the dp4a variant (no MMA), see above")
    ap.add_argument("--mmvq", type=int, action="append", metavar="N",
                    help="count mul_mat_vec_q at N tokens (1-8; repeat for several) instead of MMQ")
    ap.add_argument("--nvcc", default=shutil.which("nvcc") or "nvcc")
    ap.add_argument("--cuobjdump", default=shutil.which("cuobjdump") or "cuobjdump")
    args = ap.parse_args(argv)
    if not (args.ggml / "src" / "ggml-cuda" / "template-instances").is_dir():
        raise SystemExit(f"--ggml {args.ggml}: no src/ggml-cuda/template-instances in it (a ggml tree: ggml-org/ggml, "
                         "or llama.cpp's ggml/ directory)")
    if args.mmvq:
        bad = [n for n in args.mmvq if not 1 <= n <= 8]
        if bad:
            raise SystemExit(f"--mmvq {bad[0]}: mul_mat_vec_q is built for 1 to 8 tokens")
        if args.dp4a:
            raise SystemExit("--mmvq and --dp4a: MMVQ has no MMA variant to leave out")
        with tempfile.TemporaryDirectory() as tmp:
            mtypes, ncols = [t.lower() for t in (args.type or ["q4_0"])], sorted(set(args.mmvq))
            rows = [r for a in (args.arch or ["sm_86"])
                    for r in count_mmvq(args.ggml, mtypes, a, ncols, args.nvcc, args.cuobjdump, Path(tmp))]
        print(f"{'type':8} {'arch':8} {'n':>2} {'loop':>6} {'IDP.4A':>7} {'other/4096 w':>13} {'all/4096 w':>11}")
        for r in rows:
            print(f"{r['type']:8} {r['arch']:8} {r['n']:2d} {r['loop']:6d} {r['dp4a']:7d} "
                  f"{r['other_per_4096_weights']:13.1f} {r['all_per_4096_weights']:11.1f}")
        return 0
    archs = args.arch or (["sm_86"] if args.dp4a else ["sm_86", "sm_120a"])
    types = [t.lower() for t in args.type] if args.type else ["q4_0", "q8_0", "q4_k", "q6_k", "mxfp4", "nvfp4"]
    if REFERENCE[0] not in types:
        types.insert(0, REFERENCE[0])
    if REFERENCE[1] not in archs:
        archs.insert(0, REFERENCE[1])
    with tempfile.TemporaryDirectory() as tmp:
        ggml = args.ggml
        if args.dp4a:
            ggml = Path(tmp) / "ggml"
            shutil.copytree(args.ggml / "include", ggml / "include")
            shutil.copytree(args.ggml / "src", ggml / "src")
            common = ggml / "src" / "ggml-cuda" / "common.cuh"
            text = common.read_text()
            for macro in ("TURING_MMA_AVAILABLE", "AMPERE_MMA_AVAILABLE", "BLACKWELL_MMA_AVAILABLE"):
                text, n = re.subn(rf"^#\s*define {macro}$", "", text, flags=re.M)
                if n == 0:
                    raise SystemExit(f"{common}: no '#define {macro}' line to leave out")
            common.write_text(text)
        rows = [count(ggml, t, a, args.nvcc, args.cuobjdump, Path(tmp), args.j, args.dp4a) for t in types for a in archs]
    ref = next(r for r in rows if (r["type"], r["arch"]) == REFERENCE)["per_4096"]
    print(f"{'type':8} {'arch':8} {'loop':>6} {'MMA':>20} {'MACs':>9} {'other':>6} {'/4096 MACs':>10} "
          f"{'vs ' + '/'.join(REFERENCE):>13}  most issued")
    for r in rows:
        print(f"{r['type']:8} {r['arch']:8} {r['loop']:6d} {r['mma']:>20} {r['macs']:9d} {r['other']:6d} "
              f"{r['per_4096']:10.2f} {r['per_4096'] / ref:13.3f}  {r['top']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
