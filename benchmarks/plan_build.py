"""Plan building against the number of distinct layers (issue "Robustness, second round", item 2).

Writes GGUF headers of N llama layers whose FFN widths all differ (no two layers can be merged), then times
`rp.Model.from_gguf`, the first `rp.estimate` (which builds the plan) and a second one (the kept plan). Prints one
row per N and the growth exponent between consecutive sizes (1.0: linear).

    python3 benchmarks/plan_build.py [--layers 10,1000,10000] [--bias 0]

``--bias B`` adds B distinct bias tensors to layer 0 (the other shape the review found quadratic).
"""
from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

import numpy as np


def write_gguf(path: Path, layers: int, bias: int, cycle: int = 0) -> None:
    """N llama layers, layer l with FFN width 32 + l (32 + l % cycle when cycle > 0), B bias tensors in layer 0."""
    import gguf

    H = 64
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_uint32("llama.context_length", 4096)
    w.add_uint32("llama.embedding_length", H)
    w.add_uint32("llama.block_count", layers)
    w.add_uint32("llama.attention.head_count", 4)
    w.add_array("llama.feed_forward_length", [32 + (l % cycle if cycle else l) for l in range(layers)])  # per layer
    w.add_float32("llama.attention.layer_norm_rms_epsilon", 1e-6)
    f16 = gguf.GGMLQuantizationType.F16
    f32 = gguf.GGMLQuantizationType.F32

    data = [0]  # bytes of the data section (each tensor padded to the 32-byte alignment)

    def tensor(name: str, shape: tuple, qtype: "gguf.GGMLQuantizationType") -> None:
        dtype = np.dtype(np.float16 if qtype == f16 else np.float32)
        nbytes = int(np.prod(shape)) * dtype.itemsize
        w.add_tensor_info(name, shape, dtype, nbytes, raw_dtype=qtype)
        data[0] += (nbytes + 31) // 32 * 32

    tensor("token_embd.weight", (32, H), f16)
    for l in range(layers):
        ffn = 32 + (l % cycle if cycle else l)  # a width of its own: layer l merges with no other
        tensor(f"blk.{l}.attn_norm.weight", (H,), f32)
        for p in ("attn_q", "attn_k", "attn_v", "attn_output"):
            tensor(f"blk.{l}.{p}.weight", (H, H), f16)
        tensor(f"blk.{l}.ffn_norm.weight", (H,), f32)
        tensor(f"blk.{l}.ffn_gate.weight", (ffn, H), f16)
        tensor(f"blk.{l}.ffn_up.weight", (ffn, H), f16)
        tensor(f"blk.{l}.ffn_down.weight", (H, ffn), f16)
        if l == 0:
            for b in range(bias):
                tensor(f"blk.0.extra{b}.bias", (H + b,), f32)
    tensor("output_norm.weight", (H,), f32)
    tensor("output.weight", (32, H), f16)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    w.close()
    # the tensor data is never read (only its extent is checked): a sparse file of the right length
    header = path.stat().st_size
    with open(path, "r+b") as f:
        f.truncate((header + 31) // 32 * 32 + data[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", default="10,1000,10000")
    ap.add_argument("--bias", type=int, default=0)
    args = ap.parse_args()
    import rooflinepy as rp

    print(f"{'layers':>7} {'GGUF MB':>8} {'from_gguf s':>12} {'first estimate s':>17} {'kept plan µs':>13} {'exponent':>9}")
    prev = None
    with tempfile.TemporaryDirectory() as d:
        for n in [int(x) for x in args.layers.split(",")]:
            path = Path(d) / f"m{n}.gguf"
            write_gguf(path, n, args.bias)
            t0 = time.perf_counter()
            m = rp.Model.from_gguf(path)
            t1 = time.perf_counter()
            rp.estimate(m, "F16", "rtx-4090", engine="generic")
            t2 = time.perf_counter()
            rp.estimate(m, "F16", "rtx-4090", engine="generic")
            t3 = time.perf_counter()
            total = t2 - t0
            exp = "" if prev is None else f"{math.log(total / prev[1]) / math.log(n / prev[0]):.2f}"
            print(f"{n:>7} {path.stat().st_size / 1e6:>8.2f} {t1 - t0:>12.4f} {t2 - t1:>17.4f} {(t3 - t2) * 1e6:>13.1f} {exp:>9}")
            prev = (n, total)


if __name__ == "__main__":
    main()
