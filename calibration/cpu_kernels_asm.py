#!/usr/bin/env python3
"""Count the machine instructions of ggml's x86 CPU matrix kernels per multiply-add, per kernel and instruction set.

    python3 calibration/cpu_kernels_asm.py --ggml /path/to/ggml [--isa avx2 --isa avx512] [--kernel gemm_q4_0_8x8]
    python3 calibration/cpu_kernels_asm.py --ggml /path/to/ggml --verbose      # also the loops it looked at and why

What it measures: the instructions one step of a kernel's K loop issues, beside the multiply-adds it performs, so
that an analytic model can time the kernel from issue slots (instructions per 32 multiply-adds) as well as from
its dot-product throughput. It is the CPU sibling of mmq_sass.py. It compiles the ggml-cpu translation units that
hold the kernels (src/ggml-cpu/arch/x86/quants.c, arch/x86/repack.cpp, llamafile/sgemm.cpp, vec.cpp) with gcc/g++
for each instruction set, the way ggml's CMake does (-O3 -DNDEBUG -fPIC, GGML_USE_LLAMAFILE, GGML_USE_CPU_REPACK;
plus -g, which GCC guarantees leaves the code unchanged), disassembles them with objdump and, per kernel:

  * starts from its entry symbol (ggml_vec_dot_q4_0_q8_0, ggml_gemm_q4_0_8x8_q8_0, tinyBLAS_Q0_AVX<...>::gemm4xN<4>,
    tinyBLAS<16, ...>::gemm<4, 6, BM>, ...) and the functions of the same object it calls or tail-calls;
  * finds their loops (a backward branch and its target; the branches back to one target make one loop) and maps each
    loop to the source line of its backward branch (DWARF line table), which GCC attributes to the loop's ``for``;
  * takes the K loop: a loop whose backward branch is on the kernel's K ``for`` statement in the source (e.g.
    ``for (int64_t b = 0; b < nb; b++)`` in the gemm) and whose dot instructions amount to a whole number of K steps
    of the tile that runs for large m and n (a K step: the tile's weight rows x activation rows x the K elements
    one source iteration covers, read from the source and listed in KERNELS); a loop doing one K step per iteration
    before one doing several (a larger tile's), and of several copies the smallest;
  * counts its instructions, expanding inner loops the compiler kept (e.g. the repacked gemm's ``for (int rp = 0;
    rp < 4; rp++)`` over groups of 4 activation rows, or its ``for (int sb = 0; sb < QK_K / 64; sb++)`` over Q4_K
    sub-blocks) by their trip counts, which it reads from the inner loop's ``for`` line (constant bounds only).

Multiply-adds are counted from the dot instructions in the loop: vpmaddubsw and vpdpbusd (and the other VNNI forms)
do one int8 multiply-add per byte of their register (xmm 16, ymm 32, zmm 64), vfmadd*ps one per float lane (ymm 8,
zmm 16), vdpbf16ps one per bf16 element of a source (zmm 32). In the int8 kernels the fp32 FMAs that apply block scales
and the vpmaddwd that widen or scale 16-bit sums are "other" instructions; in the float kernels the FMAs are the dot
instructions. Each row prints the K loop's instructions per iteration, its multiply-adds, its dot instructions,
the rest, the instructions per 32 multiply-adds (all, then other only), the instructions that touch the stack
(spills, or accumulators the compiler keeps in memory), and the most frequent other opcodes. "nest" shows the
expansion (own instructions + trip x inner loop).

Limits: a static count: every instruction between the loop's target and its last backward branch counts once per
iteration, as if all branches inside were taken through (the K loops here are straight-line code apart from inner
loops); cmp+jcc count as two (the cores fuse them into one issue slot) and alignment NOPs inside the range count.
The kernel's tile is the one ggml picks for large m and n (see KERNELS; the repacked gemm's 4-row path, which
takes batches of 4 to 15 tokens and the rows past the last multiple of 16, is listed as *_r4); other edge tiles
(llamafile's 4x5, 4x2 ..., the repacked gemm's AVX2 path for columns past a multiple of 16 in an AVX-512 build)
are separate loops not reported. It counts one GCC version's code (the one it runs), with generic tuning for
-march=x86-64-v3 (AVX2) or x86-64-v4 plus VNNI/BF16 (the AVX-512 set of AMD Zen 4 / Zen 5); a different compiler or
a -march=native build can schedule, unroll or spill differently. Inner-loop trip counts come from the source: an
inner loop the compiler partly unrolled would be miscounted (its MACs would then seldom make whole K steps). It says
why instead of guessing when a kernel's symbol or K loop is missing, when an inner loop has no constant bound, or
when no loop on the K line holds a whole number of K steps.
The counts were checked against executed instructions per K step (the difference between two values of K, from
valgrind --tool=callgrind on the avx2 objects and from ptrace single-stepping on an AVX-512 host for avx512): equal
for every kernel, up to the single-stepping's page-fault noise (at most 2.5 instructions per step), on ggml
d99724f2 with gcc 12.2.

Needs gcc, g++ and objdump (binutils) and a ggml source tree (ggml-org/ggml, or llama.cpp's ggml/). Build outputs go
to --out (default /tmp/cpu_asm/<isa>/, reused while the command line and the sources are unchanged). It needs no
network and no particular CPU, and is not run by the tests.
"""
from __future__ import annotations

import argparse
import ast
import functools
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Set, Tuple


@dataclass(frozen=True)
class Isa:
    name: str
    flags: Tuple[str, ...]
    wide: bool  # AVX-512: ggml's 512-bit paths and 32 vector registers (llamafile's VECTOR_REGISTERS == 32)
    what: str


ISAS: Dict[str, Isa] = {
    "avx2": Isa("avx2", ("-march=x86-64-v3",), False, "AVX2+FMA+F16C, no VNNI (Haswell .. Zen 3)"),
    "avx512": Isa("avx512", ("-march=x86-64-v4", "-mavx512vnni", "-mavx512bf16", "-mavx512vl", "-mavx512bw",
                             "-mavx512dq"), True, "AVX-512 F/BW/DQ/VL + VNNI + BF16 (Zen 4, Zen 5)"),
    "avxvnni": Isa("avxvnni", ("-march=x86-64-v3", "-mavxvnni"), False,
                   "AVX2 + AVX-VNNI: VEX vpdpbusd ymm, as ggml's alderlake variant (optional)"),
}
DEFAULT_ISAS = ("avx2", "avx512")

# how ggml's CMake compiles ggml-cpu (Release, shared library, GGML_LLAMAFILE and GGML_CPU_REPACK on)
DEFINES = ("-DNDEBUG", "-D_GNU_SOURCE", "-D_XOPEN_SOURCE=600", "-DGGML_USE_LLAMAFILE", "-DGGML_USE_CPU_REPACK",
           "-DGGML_SCHED_MAX_COPIES=4")
OPT = ("-O3", "-fPIC", "-g")

# dot instructions: multiply-adds per byte of the destination register
DOT_CLASSES: Dict[str, Tuple[Set[str], int]] = {
    "int8": ({"vpmaddubsw", "vpdpbusd", "vpdpbusds", "vpdpbssd", "vpdpbssds", "vpdpbsud", "vpdpbsuds", "vpdpbuud",
              "vpdpbuuds"}, 1),
    "fp32": ({"vfmadd132ps", "vfmadd213ps", "vfmadd231ps"}, 4),
    "bf16": ({"vdpbf16ps"}, 2),
}
REG_BYTES = {"x": 16, "y": 32, "z": 64}
PREFIXES = {"rep", "repz", "repnz", "repe", "repne", "lock", "notrack", "bnd", "data16", "addr32", "cs", "ds", "es",
            "ss", "fs", "gs"}


@dataclass(frozen=True)
class Kernel:
    """A kernel, its K loop in the source, and the tile ggml runs for large m and n. Pairs are (AVX2, AVX-512)."""
    name: str
    source: str                      # relative to src/ggml-cpu
    entry: Tuple[str, str]           # regex on the demangled symbol name(s) to start from
    func: str                        # regex of the source line(s) that define the function holding the K loop
    loop: str                        # regex of the K loop's for statement in that function
    dot: Tuple[str, str]             # DOT_CLASSES key
    weights: Tuple[int, int]         # weight rows (output columns) of the tile
    tokens: Tuple[int, int]          # activation rows (tokens) of the tile
    k_step: Tuple[int, int]          # K elements one iteration of the source loop covers
    tile: Tuple[str, str]            # what the tile is, in the source's words


_VD = r"^void ggml_vec_dot_{}\("
_GEMV40 = r"^static void gemv_q4_b32_8x8_q8_0_lut_avx\("
_GEMM40 = r"^static void gemm_q4_b32_8x8_q8_0_lut_avx\("
_B_LOOP = r"for \(int64_t b = 0; b < nb; b\+\+\)"
_Q0 = r"tinyBLAS_Q0_AVX<block_{}, block_q8_0, float>::gemm4xN<{}>\("
_FL = r"tinyBLAS<{}, [^:]*{t}, {t}, float>::gemm<4, {}, \d>"
_BLOC = r"inline void gemm_bloc\(int64_t ii, int64_t jj\)"
_L_LOOP = r"for \(int64_t l = 0; l < k; l \+= KN\)"

KERNELS: List[Kernel] = [
    *[Kernel(f"vec_dot_{t}_q8_0", "arch/x86/quants.c", (rf"^ggml_vec_dot_{t}_q8_0$",) * 2, _VD.format(f"{t}_q8_0"),
             r"for \(; ib < nb; \+\+ib\)", ("int8", "int8"), (1, 1), (1, 1), (32, 32), ("one block of 32",) * 2)
      for t in ("q4_0", "q8_0")],
    *[Kernel(f"vec_dot_{t}_q8_K", "arch/x86/quants.c", (rf"^ggml_vec_dot_{t}_q8_K$",) * 2, _VD.format(f"{t}_q8_K"),
             r"for \(int i = 0; i < nb; \+\+i\)", ("int8", "int8"), (1, 1), (1, 1), (256, 256),
             ("one super-block of 256",) * 2)
      for t in ("q4_K", "q5_K", "q6_K")],
    Kernel("gemv_q4_0_8x8", "arch/x86/repack.cpp", (r"^ggml_gemv_q4_0_8x8_q8_0$",) * 2, _GEMV40, _B_LOOP,
           ("int8", "int8"), (8, 8), (1, 1), (32, 32), ("block_q4_0x8 x 1 row",) * 2),
    Kernel("gemm_q4_0_8x8", "arch/x86/repack.cpp", (r"^ggml_gemm_q4_0_8x8_q8_0$",) * 2, _GEMM40, _B_LOOP,
           ("int8", "int8"), (8, 16), (16, 16), (32, 32),
           ("block_q4_0x8 x 4 block_q8_0x4", "2 block_q4_0x8 x 4 block_q8_0x4")),
    Kernel("gemm_q4_0_8x8_r4", "arch/x86/repack.cpp", (r"^ggml_gemm_q4_0_8x8_q8_0$",) * 2, _GEMM40, _B_LOOP,
           ("int8", "int8"), (8, 16), (4, 4), (32, 32),
           ("block_q4_0x8 x 1 block_q8_0x4 (under 16 rows)", "2 block_q4_0x8 x 1 block_q8_0x4 (under 16 rows)")),
    Kernel("gemv_q4_K_8x8", "arch/x86/repack.cpp", (r"^ggml_gemv_q4_K_8x8_q8_K$",) * 2,
           r"^void ggml_gemv_q4_K_8x8_q8_K\(", _B_LOOP, ("int8", "int8"), (8, 8), (1, 1), (256, 256),
           ("block_q4_Kx8 x 1 row",) * 2),
    Kernel("gemm_q4_K_8x8", "arch/x86/repack.cpp", (r"^ggml_gemm_q4_K_8x8_q8_K$",) * 2,
           r"^void ggml_gemm_q4_K_8x8_q8_K\(", _B_LOOP, ("int8", "int8"), (8, 16), (16, 16), (256, 256),
           ("block_q4_Kx8 x 4 block_q8_Kx4", "2 block_q4_Kx8 x 4 block_q8_Kx4")),
    Kernel("gemm_q4_K_8x8_r4", "arch/x86/repack.cpp", (r"^ggml_gemm_q4_K_8x8_q8_K$",) * 2,
           r"^void ggml_gemm_q4_K_8x8_q8_K\(", _B_LOOP, ("int8", "int8"), (8, 16), (4, 4), (256, 256),
           ("block_q4_Kx8 x 1 block_q8_Kx4 (under 16 rows)", "2 block_q4_Kx8 x 1 block_q8_Kx4 (under 16 rows)")),
    *[Kernel(f"sgemm_{t}", "llamafile/sgemm.cpp", (_Q0.format(t, 2), _Q0.format(t, 4)), r"NOINLINE void gemm4xN\(",
             r"for \(int64_t l = 0; l < k; \+\+l\)", ("int8", "int8"), (4, 4), (2, 4), (32, 32),
             ("tinyBLAS_Q0_AVX gemm4xN<2>", "tinyBLAS_Q0_AVX gemm4xN<4>"))
      for t in ("q8_0", "q4_0")],
    Kernel("sgemm_f16", "llamafile/sgemm.cpp",
           (_FL.format(8, 3, t="unsigned short"), _FL.format(16, 6, t="unsigned short")), _BLOC, _L_LOOP,
           ("fp32", "fp32"), (4, 4), (3, 6), (8, 16),
           ("tinyBLAS<8> gemm_bloc<4, 3>", "tinyBLAS<16> gemm_bloc<4, 6>")),
    Kernel("sgemm_bf16", "llamafile/sgemm.cpp",
           (_FL.format(8, 3, t="ggml_bf16_t"), _FL.format(32, 6, t="ggml_bf16_t")), _BLOC, _L_LOOP,
           ("fp32", "bf16"), (4, 4), (3, 6), (8, 32),
           ("tinyBLAS<8> gemm_bloc<4, 3>", "tinyBLAS<32, bf16> gemm_bloc<4, 6>")),
    Kernel("vec_dot_f16", "vec.cpp", (r"^ggml_vec_dot_f16$",) * 2, r"^void ggml_vec_dot_f16\(",
           r"for \(int i = 0; i < np; i \+= GGML_F16_STEP\)", ("fp32", "fp32"), (1, 1), (1, 1), (32, 64),
           ("GGML_F16_STEP = 32", "GGML_F16_STEP = 64")),
]
# Where the tiles come from (this ggml tree): vec_dot: one weight row times one activation row, per quant block.
# repack.cpp: forward_mul_mat_one_chunk hands gemm all activation rows (a multiple of 4); the gemm's main path takes
# 4 block_q8_0x4 / block_q8_Kx4 (16 rows) per pass and, in its K loop, 4 rows at a time (for rp < 4) against 8
# interleaved weight rows (AVX2) or 2 x 8 (AVX-512BW/DQ path); its 4-row path (*_r4) takes what is left under 16
# rows (all of a 4..15-token batch), the AVX2 path of an AVX-512 build the columns past a multiple of 16.
# llamafile/sgemm.cpp: tinyBLAS_Q0_AVX::mnpack picks gemm4xN<4> (4x4) with 32 vector registers, gemm4xN<2> with 16;
# tinyBLAS::matmul picks mnpack<4, 6, BM> (32 registers) or <4, 3, BM> (16), whose gemm runs gemm_bloc<4, RN> on all
# but a remainder of columns (gemm_bloc<4, RN - 1>). vec.cpp: an iteration covers GGML_F16_STEP elements in
# GGML_F16_ARR = 4 accumulators.


# ------------------------------------------------------------------------------------------------------------ build

def run(cmd: Sequence[str]) -> str:
    return subprocess.run(list(cmd), check=True, capture_output=True, text=True).stdout


def newest_source(ggml: Path) -> float:
    paths: List[Path] = [*(ggml / "src").glob("*.h"), *(ggml / "include").glob("*.h")]
    for root, _dirs, files in os.walk(ggml / "src" / "ggml-cpu"):
        paths += [Path(root) / f for f in files]
    return max(p.stat().st_mtime for p in paths)


def compile_unit(ggml: Path, source: str, isa: Isa, out: Path, cc: str, cxx: str, extra: Sequence[str],
                 rebuild: bool, newest: float) -> Path:
    """Compile src/ggml-cpu/<source> for isa into out/<isa>/<stem>.o (kept while its command and the tree stand)."""
    src = ggml / "src" / "ggml-cpu" / source
    obj = out / isa.name / (Path(source).stem + ".o")
    lang = ["-std=gnu11"] if src.suffix == ".c" else ["-std=gnu++17"]
    includes = [f"-I{ggml / 'include'}", f"-I{ggml / 'src'}", f"-I{ggml / 'src' / 'ggml-cpu'}"]
    cmd = [cc if src.suffix == ".c" else cxx, *lang, *OPT, *isa.flags, *extra, *DEFINES, *includes,
           "-c", str(src), "-o", str(obj)]
    stamp = obj.with_suffix(".cmd")
    key = " ".join(cmd) + "\n" + run([cmd[0], "--version"]).splitlines()[0] + "\n"
    if (not rebuild and obj.is_file() and stamp.is_file() and stamp.read_text() == key
            and obj.stat().st_mtime >= newest):
        return obj
    obj.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"compiling {source} for {isa.name} failed:\n{' '.join(cmd)}\n{proc.stderr[-4000:]}")
    stamp.write_text(key)
    return obj


# ------------------------------------------------------------------------------------------------------ disassembly

@dataclass
class Insn:
    addr: int
    op: str
    args: str
    loc: Optional[Tuple[str, int]]   # (source file, line) from the DWARF line table
    reloc: Optional[str] = None      # symbol of a relocation inside the instruction (calls/jumps out of the section)

    def target(self) -> Optional[int]:
        m = re.match(r"([0-9a-f]+) <", self.args)
        return int(m.group(1), 16) if m and self.reloc is None else None


@dataclass
class Function:
    start: int
    size: int
    names: List[str]
    body: List[Insn] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.names[0]


def split_op(text: str) -> Tuple[str, str]:
    words = text.split(None, 1)
    op, args = words[0], (words[1] if len(words) > 1 else "")
    while re.fullmatch(r"\{\w+\}", op) and args:   # objdump's encoding pseudo-prefixes: {evex}, {vex}, {vex3}
        words = args.split(None, 1)
        op, args = words[0], (words[1] if len(words) > 1 else "")
    while op in PREFIXES and args:
        nxt = args.split(None, 1)
        op, args = f"{op} {nxt[0]}", (nxt[1] if len(nxt) > 1 else "")
    return op, args.strip()


def disassemble(obj: Path, objdump: str) -> List[Function]:
    """The .text functions of obj (ICF aliases merged), each with its instructions and their source lines."""
    funcs: Dict[int, Function] = {}
    for line in run([objdump, "-t", "-C", str(obj)]).splitlines():
        m = re.match(r"^([0-9a-f]+) .{7} (\S+)\t([0-9a-f]+) +(?:\.hidden |\.protected |\.internal )?(.*)$", line)
        if not m or m.group(2) != ".text" or "F" not in line[17:25] or int(m.group(3), 16) == 0:
            continue
        addr = int(m.group(1), 16)
        fn = funcs.setdefault(addr, Function(addr, int(m.group(3), 16), []))
        fn.names.append(m.group(4))
    starts = sorted(funcs)
    insns: List[Insn] = []
    loc: Optional[Tuple[str, int]] = None
    text = run([objdump, "-d", "-l", "-r", "-C", "--no-show-raw-insn", "-M", "intel", "-j", ".text", str(obj)])
    for line in text.splitlines():
        if re.match(r"^[0-9a-f]+ <.*>:$", line):
            loc = None
            continue
        m = re.match(r"^\t+([0-9a-f]+): (R_X86_64_\S+)\s+(.*)$", line)
        if m:
            if insns:
                insns[-1].reloc = m.group(3)
            continue
        m = re.match(r"^\s+([0-9a-f]+):\t(.*)$", line)
        if m:
            if m.group(2).strip() and not m.group(2).startswith("(bad)"):
                op, args = split_op(m.group(2))
                insns.append(Insn(int(m.group(1), 16), op, args, loc))
            continue
        m = re.match(r"^(\S.*):(\d+)(?: \(discriminator \d+\))?$", line)
        if m:
            loc = (m.group(1), int(m.group(2)))
    i = 0
    for s in starts:
        fn = funcs[s]
        while i < len(insns) and insns[i].addr < s:
            i += 1
        j = i
        while j < len(insns) and insns[j].addr < s + fn.size:
            j += 1
        fn.body = insns[i:j]
    return [funcs[s] for s in starts]


def reachable(funcs: List[Function], entry: str, depth: int = 3) -> List[Function]:
    """The functions named by the entry regex and those of the same object they call or jump to, transitively."""
    by_start = {f.start: f for f in funcs}
    by_name = {n: f for f in funcs for n in f.names}
    todo = [(f, 0) for f in funcs if any(re.search(entry, n) for n in f.names)]
    seen: Dict[int, Function] = {}
    while todo:
        fn, d = todo.pop()
        if fn.start in seen:
            continue
        seen[fn.start] = fn
        if d >= depth:
            continue
        for ins in fn.body:
            if not (ins.op.startswith("j") or ins.op.startswith("call")):
                continue
            callee: Optional[Function] = None
            if ins.reloc is not None:
                callee = by_name.get(re.sub(r"[-+]0x[0-9a-f]+$", "", ins.reloc))
            else:
                t = ins.target()
                if t is not None and not fn.start <= t < fn.start + fn.size:
                    callee = by_start.get(t)
            if callee is not None:
                todo.append((callee, d + 1))
    return sorted(seen.values(), key=lambda f: f.start)


# ------------------------------------------------------------------------------------------------------------ loops

@dataclass
class Stats:
    n: int = 0
    macs: int = 0
    stack: int = 0
    calls: int = 0
    ops: Counter[str] = field(default_factory=Counter)
    dots: Counter[str] = field(default_factory=Counter)

    def add(self, other: Stats, times: int = 1) -> None:
        self.n += times * other.n
        self.macs += times * other.macs
        self.stack += times * other.stack
        self.calls += times * other.calls
        for k, v in other.ops.items():
            self.ops[k] += times * v
        for k, v in other.dots.items():
            self.dots[k] += times * v


@dataclass
class Loop:
    fn: Function
    lo: int                          # index of the branch target in fn.body
    hi: int                          # index of the last backward branch to it
    lines: Set[Tuple[str, int]]      # source lines of its backward branches

    def contains(self, other: Loop) -> bool:
        return (self.fn is other.fn and self.lo <= other.lo and other.hi <= self.hi
                and (self.lo, self.hi) != (other.lo, other.hi))

    def where(self) -> str:
        lines = ", ".join(f"{Path(f).name}:{n}" for f, n in sorted(self.lines))
        return f"{self.fn.body[self.lo].addr:#x}-{self.fn.body[self.hi].addr:#x} ({lines})"


def find_loops(fn: Function) -> List[Loop]:
    """fn's loops: per target of backward branches, up to the last conditional one back to it (GCC's rotated loops
    close with a conditional latch; an unconditional jmp back is more often an entry from code placed after the
    loop), or, with none conditional, up to the first jmp back."""
    index = {ins.addr: i for i, ins in enumerate(fn.body)}
    edges: Dict[int, List[int]] = {}
    for i, ins in enumerate(fn.body):
        t = ins.target() if ins.op.startswith("j") else None
        if t is not None and t <= ins.addr and t in index:
            edges.setdefault(t, []).append(i)
    loops: List[Loop] = []
    for t, latches in edges.items():
        cond = [i for i in latches if fn.body[i].op != "jmp"]
        hi = max(cond) if cond else min(latches)
        lines = {(str(Path(loc[0]).resolve()), loc[1]) for i in latches if i <= hi
                 for loc in [fn.body[i].loc] if loc is not None}
        loops.append(Loop(fn, index[t], hi, lines))
    return loops


def dot_form(ins: Insn, dot: str) -> Optional[Tuple[str, int]]:
    """(opcode.register, multiply-adds) of a dot instruction of the kernel's class, else None."""
    ops, per_byte = DOT_CLASSES[dot]
    if ins.op not in ops:
        return None
    m = re.search(r"\b([xyz])mm\d+", ins.args.split(",")[0]) or re.search(r"\b([xyz])mm\d+", ins.args)
    if not m:
        return None
    return f"{ins.op}.{m.group(1)}mm", REG_BYTES[m.group(1)] // per_byte


def own_stats(fn: Function, idx: Sequence[int], dot: str, frame_pointer: bool) -> Stats:
    st = Stats()
    stack = re.compile(r"\[(rsp|rbp)\b" if frame_pointer else r"\[rsp\b")
    for i in idx:
        ins = fn.body[i]
        st.n += 1
        st.ops[ins.op] += 1
        d = dot_form(ins, dot)
        if d:
            st.dots[d[0]] += 1
            st.macs += d[1]
        if stack.search(ins.args):
            st.stack += 1
        if ins.op.startswith("call"):
            st.calls += 1
    return st


_CONST: Dict[str, int] = {}


@functools.lru_cache(maxsize=None)
def source_text(path: str) -> Tuple[str, ...]:
    try:
        return tuple(Path(path).read_text(errors="replace").splitlines())
    except OSError:
        return ()


def source_line(path: str, line: int) -> str:
    text = source_text(path)
    return text[line - 1] if 0 < line <= len(text) else ""


def const_eval(expr: str) -> Optional[int]:
    """An integer constant expression of literals and ggml's QK* block sizes, else None."""
    def ev(node: ast.AST) -> int:
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name) and node.id in _CONST:
            return _CONST[node.id]
        if isinstance(node, ast.BinOp):
            a, b = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.Add):
                return a + b
            if isinstance(node.op, ast.Sub):
                return a - b
            if isinstance(node.op, ast.Mult):
                return a * b
            if isinstance(node.op, (ast.Div, ast.FloorDiv)):
                return a // b
        raise ValueError(expr)
    try:
        return ev(ast.parse(expr.strip().replace("/", "//"), mode="eval").body)
    except (ValueError, SyntaxError, ZeroDivisionError):
        return None


def trip_count(loop: Loop) -> Tuple[int, str]:
    """An inner loop's trip count from its for statement: for (T v = a; v < b; v++ / ++v / v += c), constants only."""
    found: List[Tuple[int, str]] = []
    for path, line in sorted(loop.lines):
        text = source_line(path, line)
        m = re.search(r"for\s*\(\s*(?:\w+\s+)?(\w+)\s*=\s*([^;]+);\s*\1\s*<\s*([^;]+);"
                      r"\s*(?:\1\s*\+\+|\+\+\s*\1|\1\s*\+=\s*([^)]+))\s*\)", text)
        if not m:
            continue
        a, b, c = const_eval(m.group(2)), const_eval(m.group(3)), const_eval(m.group(4) or "1")
        if a is not None and b is not None and c:
            found.append((max(0, -(-(b - a) // c)), f"{Path(path).name}:{line}"))
    if len({t for t, _ in found}) != 1:
        raise LookupError(f"inner loop {loop.where()} has no constant trip count in the source")
    return found[0]


def loop_stats(loop: Loop, loops: List[Loop], dot: str, memo: Dict[int, Tuple[Stats, str]]) -> Tuple[Stats, str]:
    """The loop's instructions per iteration, its inner loops that hold dot instructions expanded by their trip
    counts, and a description of the expansion ("own + trip x (inner)")."""
    key = id(loop)
    if key in memo:
        return memo[key]
    fp = any(i.op == "mov" and i.args.replace(" ", "") == "rbp,rsp" for i in loop.fn.body[:16])
    inner = [lp for lp in loops if loop.contains(lp)
             and own_stats(lp.fn, range(lp.lo, lp.hi + 1), dot, fp).macs > 0]
    outer = [lp for lp in inner if not any(o.contains(lp) for o in inner)]
    covered = {i for lp in outer for i in range(lp.lo, lp.hi + 1)}
    st = own_stats(loop.fn, [i for i in range(loop.lo, loop.hi + 1) if i not in covered], dot, fp)
    parts = [str(st.n)]
    for lp in sorted(outer, key=lambda x: x.lo):
        trips, _ = trip_count(lp)
        sub, desc = loop_stats(lp, loops, dot, memo)
        st.add(sub, trips)
        parts.append(f"{trips}x{desc if '+' not in desc else '(' + desc + ')'}")
    memo[key] = (st, "+".join(parts))
    return memo[key]


def source_lines(ggml: Path, k: Kernel) -> Set[Tuple[str, int]]:
    """The lines of k's K-loop for statement within the function(s) k.func defines."""
    path = (ggml / "src" / "ggml-cpu" / k.source).resolve()
    text = path.read_text(errors="replace").splitlines()
    out: Set[Tuple[str, int]] = set()
    for i, line in enumerate(text):
        if not re.search(k.func, line):
            continue
        indent = line[:len(line) - len(line.lstrip())]
        j = i + 1
        while j < len(text) and text[j].rstrip() != indent + "}":
            if re.search(k.loop, text[j]):
                out.add((str(path), j + 1))
            j += 1
    return out


@dataclass
class Result:
    kernel: Kernel
    isa: Isa
    stats: Optional[Stats] = None
    nest: str = ""
    steps: int = 0
    where: str = ""
    error: str = ""
    notes: List[str] = field(default_factory=list)


def analyse(ggml: Path, k: Kernel, isa: Isa, funcs: List[Function], verbose: bool) -> Result:
    w = 1 if isa.wide else 0
    res = Result(k, isa)
    dot = k.dot[w]
    step_macs = k.weights[w] * k.tokens[w] * k.k_step[w]
    fns = reachable(funcs, k.entry[w])
    if not fns:
        res.error = f"no symbol matching {k.entry[w]!r} in {k.source} ({isa.name})"
        return res
    want = source_lines(ggml, k)
    if not want:
        res.error = f"no line matching {k.loop!r} in a function matching {k.func!r} of {k.source}"
        return res
    loops = [lp for f in fns for lp in find_loops(f)]
    memo: Dict[int, Tuple[Stats, str]] = {}
    ok: List[Tuple[int, int, Loop, Stats, str]] = []
    tried: List[str] = []
    for lp in loops:
        if not lp.lines & want:
            continue
        try:
            st, desc = loop_stats(lp, loops, dot, memo)
        except LookupError as e:
            tried.append(f"{lp.where()}: {e}")
            continue
        if st.macs > 0 and st.macs % step_macs == 0:
            ok.append((st.macs // step_macs, lp.hi - lp.lo, lp, st, desc))
        else:
            tried.append(f"{lp.where()} in {lp.fn.name}: {st.macs} MACs, not a multiple of {step_macs}")
    if verbose:
        print(f"# {k.name} {isa.name}: functions {[f.name for f in fns]}", file=sys.stderr)
        print(f"#   K loop lines {sorted(n for _, n in want)}, K step {step_macs} MACs", file=sys.stderr)
        for lp in loops:
            s = own_stats(lp.fn, range(lp.lo, lp.hi + 1), dot, False)
            if s.macs:
                print(f"#   loop {lp.where()}: {lp.hi - lp.lo + 1} instructions, {dict(s.dots)}", file=sys.stderr)
        for t in tried:
            print(f"#   rejected {t}", file=sys.stderr)
    if not ok:
        res.error = (f"no loop on the K for statement ({', '.join(f'line {n}' for _, n in sorted(want))}) holding "
                     f"a whole number of {step_macs}-MAC K steps; " + ("; ".join(tried) or "no loop there at all"))
        return res
    ok.sort(key=lambda x: (x[0], x[1]))   # one K step per iteration first (a larger tile's loop makes several)
    _, _, lp, st, desc = ok[0]
    res.stats, res.nest, res.steps = st, desc, st.macs // step_macs
    res.where = f"{lp.fn.name} {lp.where()}"
    copies = [c for c in ok if c[0] == res.steps]
    if len(copies) > 1:
        res.notes.append(f"{len(copies)} copies of the K loop, counted the smallest")
    if st.calls:
        res.notes.append(f"{st.calls} calls inside the loop (callee instructions not counted)")
    if res.steps > 1:
        res.notes.append(f"the compiler unrolled {res.steps} K steps into one iteration")
    return res


# ------------------------------------------------------------------------------------------------------------- main

def short(forms: Counter[str]) -> str:
    return " + ".join(f"{n} {f}" for f, n in forms.most_common())


def rows(results: Sequence[Result]) -> Iterator[str]:
    yield (f"{'kernel':17} {'isa':7} {'w x t x k':10} {'loop':>5} {'nest':>18} {'MACs':>6} {'dot instructions':>22} "
           f"{'other':>5} {'/32 MAC':>7} {'oth/32':>6} {'stack':>5}  most frequent other")
    for r in results:
        w = 1 if r.isa.wide else 0
        k = r.kernel
        tile = f"{k.weights[w]}x{k.tokens[w]}x{k.k_step[w] * max(r.steps, 1)}"
        if r.stats is None:
            yield f"{k.name:17} {r.isa.name:7} {tile:10} not located: {r.error}"
            continue
        st = r.stats
        dots = sum(st.dots.values())
        other = st.n - dots
        top = Counter({op: n for op, n in st.ops.items() if op not in DOT_CLASSES[k.dot[w]][0]}).most_common(6)
        yield (f"{k.name:17} {r.isa.name:7} {tile:10} {st.n:5d} {r.nest:>18} {st.macs:6d} {short(st.dots):>22} "
               f"{other:5d} {st.n * 32 / st.macs:7.2f} {other * 32 / st.macs:6.2f} {st.stack:5d}  "
               + ", ".join(f"{op} {n}" for op, n in top))


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--ggml", type=Path, required=True, help="a ggml source tree (holding src/ggml-cpu)")
    ap.add_argument("--isa", action="append", choices=sorted(ISAS),
                    help=f"instruction sets (default: {' '.join(DEFAULT_ISAS)}); " +
                    "; ".join(f"{i.name}: {' '.join(i.flags)}" for i in ISAS.values()))
    ap.add_argument("--kernel", action="append", choices=[k.name for k in KERNELS], help="kernels (default: all)")
    ap.add_argument("--out", type=Path, default=Path("/tmp/cpu_asm"), help="build directory (default /tmp/cpu_asm)")
    ap.add_argument("--cflag", action="append", default=[], help="an extra compiler flag (e.g. -mtune=znver3)")
    ap.add_argument("--rebuild", action="store_true", help="compile even when the objects are up to date")
    ap.add_argument("--jobs", type=int, default=2, help="parallel compiles (default 2)")
    ap.add_argument("--verbose", action="store_true", help="print the loops looked at and why (to stderr)")
    ap.add_argument("--cc", default=shutil.which("gcc") or "gcc")
    ap.add_argument("--cxx", default=shutil.which("g++") or "g++")
    ap.add_argument("--objdump", default=shutil.which("objdump") or "objdump")
    args = ap.parse_args(argv)
    ggml: Path = args.ggml.resolve()
    if not (ggml / "src" / "ggml-cpu" / "arch" / "x86" / "quants.c").is_file():
        raise SystemExit(f"--ggml {args.ggml}: no src/ggml-cpu/arch/x86/quants.c in it (a ggml tree: ggml-org/ggml, "
                         "or llama.cpp's ggml/ directory)")
    for line in (ggml / "src" / "ggml-common.h").read_text(errors="replace").splitlines():
        m = re.match(r"#define\s+(QK\w*)\s+(\d+)\s*(?://.*)?$", line)
        if m:
            _CONST.setdefault(m.group(1), int(m.group(2)))
    isas = [ISAS[i] for i in dict.fromkeys(args.isa or DEFAULT_ISAS)]
    kernels = [k for k in KERNELS if not args.kernel or k.name in args.kernel]
    sources = sorted({k.source for k in kernels})
    newest = newest_source(ggml)
    jobs = [(s, isa) for isa in isas for s in sources]
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        objs = list(pool.map(lambda j: compile_unit(ggml, j[0], j[1], args.out, args.cc, args.cxx, args.cflag,
                                                    args.rebuild, newest), jobs))
    funcs = {(s, isa.name): disassemble(o, args.objdump) for (s, isa), o in zip(jobs, objs)}
    results = [analyse(ggml, k, isa, funcs[(k.source, isa.name)], args.verbose) for k in kernels for isa in isas]
    print(f"# ggml {ggml}; {run([args.cc, '--version']).splitlines()[0]}; objects in {args.out}")
    for isa in isas:
        print(f"# {isa.name}: {' '.join(isa.flags + tuple(args.cflag))} ({isa.what})")
    print("# tile: weight rows x activation rows x K elements per loop iteration; loop: instructions per iteration "
          "(inner loops expanded, see nest); /32 MAC: loop instructions per 32 multiply-adds; oth/32: the non-dot "
          "ones; stack: instructions addressing the stack")
    for line in rows(results):
        print(line)
    for r in results:
        if r.stats is not None:
            print(f"# {r.kernel.name} {r.isa.name}: {r.kernel.tile[1 if r.isa.wide else 0]}; {r.where}"
                  + "".join(f"; {n}" for n in r.notes))
    return 1 if any(r.stats is None for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
