#!/usr/bin/env python3
"""Regenerates the tiny GGUF fixtures of this folder and expected.json.

The files are written with the `gguf` package from PyPI (ggml's own Python writer, independent of our C++
reader): `pip install gguf numpy`, then `python3 tests/data/gguf/make_fixtures.py`. expected.json is computed
from what this script asked the writer to write (shapes, types, values, the writer's padding rule), never by
reading the files back with rooflinepy. The generated files are committed so the C++ tests run without Python.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType as Q, GGUFValueType as V, GGUFWriter

HERE = Path(__file__).resolve().parent
RNG = np.random.default_rng(20240601)


def f32(x: float) -> float:
    """The double that a float32 metadata value reads back as."""
    return float(np.float32(x))


def tensor_data(ne: list[int], qtype: Q) -> tuple[np.ndarray, Q | None]:
    """Data for a tensor whose GGUF shape is `ne` (ne0 first), and the raw_dtype to pass to the writer."""
    shape = tuple(reversed(ne))  # numpy order: the last axis is ne0
    if qtype == Q.F32:
        return RNG.standard_normal(shape).astype(np.float32), None
    if qtype == Q.F16:
        return RNG.standard_normal(shape).astype(np.float16), None
    block, type_size = GGML_QUANT_SIZES[qtype]
    assert ne[0] % block == 0
    # Quantized tensors go in as raw bytes: rows of ne0 / block blocks of type_size bytes each.
    raw = RNG.integers(0, 256, size=(*shape[:-1], ne[0] // block * type_size), dtype=np.uint8)
    return raw, qtype


def pad(n: int, align: int) -> int:
    return (n + align - 1) // align * align


def write(name: str, arch: str, metadata: list[tuple[str, V, object, V | None]],
          tensors: list[tuple[str, list[int], Q]], alignment: int | None = None) -> dict:
    """Writes NAME.gguf and returns its expected description."""
    path = HERE / f"{name}.gguf"
    w = GGUFWriter(str(path), arch)
    if alignment is not None:
        w.add_custom_alignment(alignment)
    for key, vtype, value, sub in metadata:
        w.add_key_value(key, value, vtype, sub_type=sub)
    for tname, ne, qtype in tensors:
        data, raw = tensor_data(ne, qtype)
        w.add_tensor(tname, data, raw_dtype=raw)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    align = alignment or 32
    expected_tensors, offset = [], 0
    for tname, ne, qtype in tensors:
        block, type_size = GGML_QUANT_SIZES[qtype]
        n = int(np.prod(ne, dtype=np.int64))
        nbytes = n // block * type_size
        expected_tensors.append({"name": tname, "shape": ne, "type": qtype.name, "type_id": int(qtype),
                                 "n_elements": n, "bytes": nbytes, "offset": offset})
        offset += pad(nbytes, align)  # the writer pads every tensor, the last one too
    size = path.stat().st_size
    meta = {"general.architecture": {"type": "string", "value": arch}}
    if alignment is not None:
        meta["general.alignment"] = {"type": "uint32", "value": alignment}
    for key, vtype, value, sub in metadata:
        meta[key] = describe(vtype, value, sub)
    return {
        "file": path.name, "version": 3, "alignment": align, "architecture": arch, "file_size": size,
        # The writer pads the header to the alignment and each tensor after it, so the data section is the
        # file's last `offset` bytes.
        "data_offset": size - offset,
        "metadata_count": len(meta), "metadata": meta,
        "tensor_count": len(tensors), "tensors": expected_tensors,
        "total_tensor_bytes": sum(t["bytes"] for t in expected_tensors),
    }


def describe(vtype: V, value, sub: V | None) -> dict:
    def scalar(t: V, v):
        return f32(v) if t == V.FLOAT32 else v
    if vtype != V.ARRAY:
        return {"type": type_name(vtype), "value": scalar(vtype, value)}
    elem = sub if sub is not None else V.get_type(value[0])
    d = {"type": "array", "element_type": type_name(elem), "count": len(value)}
    if elem != V.ARRAY:
        # long arrays: their first values only, to keep this file small
        d["values" if len(value) <= 64 else "head"] = [scalar(elem, v) for v in value[:64]]
    return d


def type_name(t: V) -> str:
    return {V.BOOL: "bool"}.get(t, t.name.lower())


def main() -> None:
    files = []
    files.append(write("llama", "llama", [
        ("general.name", V.STRING, "tiny llama", None),
        ("general.file_type", V.UINT32, 7, None),
        ("general.quantization_version", V.UINT32, 2, None),
        ("llama.context_length", V.UINT32, 2048, None),
        ("llama.embedding_length", V.UINT32, 64, None),
        ("llama.block_count", V.UINT32, 1, None),
        ("llama.feed_forward_length", V.UINT32, 128, None),
        ("llama.rope.dimension_count", V.UINT32, 16, None),
        ("llama.attention.head_count", V.UINT32, 4, None),
        ("llama.attention.head_count_kv", V.UINT32, 2, None),
        ("llama.attention.layer_norm_rms_epsilon", V.FLOAT32, 1e-5, None),
        ("llama.rope.freq_base", V.FLOAT32, 10000.0, None),
        ("llama.vocab_size", V.UINT32, 32, None),
    ], [
        ("token_embd.weight", [64, 32], Q.F16),
        ("blk.0.attn_norm.weight", [64], Q.F32),
        ("blk.0.attn_q.weight", [64, 64], Q.Q8_0),
        ("blk.0.attn_k.weight", [64, 32], Q.Q8_0),
        ("blk.0.ffn_up.weight", [64, 128], Q.Q8_0),
        ("blk.0.ffn_down.weight", [128, 64], Q.Q8_0),
        ("output_norm.weight", [64], Q.F32),
    ]))

    tokens = [f"t{i}" for i in range(1100)]  # more strings than the reader keeps (1024): skipped over
    files.append(write("qwen3", "qwen3", [
        ("general.name", V.STRING, "tiny qwen3 moe", None),
        ("general.file_type", V.UINT32, 15, None),
        ("general.quantization_version", V.UINT32, 2, None),
        ("qwen3.context_length", V.UINT32, 40960, None),
        ("qwen3.embedding_length", V.UINT32, 256, None),
        ("qwen3.block_count", V.UINT32, 1, None),
        ("qwen3.attention.head_count", V.UINT32, 2, None),
        ("qwen3.attention.key_length", V.UINT32, 128, None),
        ("qwen3.expert_count", V.UINT32, 2, None),
        ("qwen3.rope.freq_base", V.FLOAT32, 1000000.0, None),
        ("tokenizer.ggml.model", V.STRING, "gpt2", None),
        ("tokenizer.ggml.tokens", V.ARRAY, tokens, V.STRING),
        ("tokenizer.ggml.token_type", V.ARRAY, [1] * len(tokens), V.INT32),
        ("tokenizer.ggml.merges", V.ARRAY, ["t o", "to k", "tok 1", "tok 2"], V.STRING),
        ("tokenizer.ggml.eos_token_id", V.UINT32, 1099, None),
    ], [
        ("blk.0.attn_q.weight", [256, 8], Q.Q4_K),
        ("blk.0.attn_output.weight", [256, 4], Q.Q6_K),
        ("blk.0.ffn_gate_exps.weight", [256, 4, 2], Q.Q4_K),
        ("blk.0.attn_norm.weight", [256], Q.F32),
        ("output.weight", [256, 3], Q.Q6_K),
    ]))

    files.append(write("gpt2", "gpt2", [
        ("gpt2.context_length", V.UINT32, 1024, None),
        ("gpt2.embedding_length", V.UINT32, 32, None),
        ("gpt2.block_count", V.UINT32, 1, None),
        ("gpt2.attention.head_count", V.UINT32, 2, None),
        ("gpt2.attention.layer_norm_epsilon", V.FLOAT32, 1e-5, None),
        # every scalar type once
        ("test.u8", V.UINT8, 200, None),
        ("test.i8", V.INT8, -100, None),
        ("test.u16", V.UINT16, 60000, None),
        ("test.i16", V.INT16, -30000, None),
        ("test.u32", V.UINT32, 4000000000, None),
        ("test.i32", V.INT32, -2000000000, None),
        ("test.f32", V.FLOAT32, 0.1, None),
        ("test.bool", V.BOOL, True, None),
        ("test.string", V.STRING, "héllo wörld", None),
        ("test.u64", V.UINT64, 18446744073709551615, None),
        ("test.i64", V.INT64, -9223372036854775808, None),
        ("test.f64", V.FLOAT64, 2.718281828459045, None),
        # arrays: small ones are kept, arrays of arrays are skipped over
        ("test.bools", V.ARRAY, [True, False, True], V.BOOL),
        ("test.floats", V.ARRAY, [0.5, -1.25, 3.0], V.FLOAT32),
        ("test.ints100", V.ARRAY, list(range(-50, 50)), V.INT64),
        ("test.nested", V.ARRAY, [[1, 2], [3, 4, 5]], V.ARRAY),
    ], [
        ("token_embd.weight", [32, 50], Q.F16),
        ("position_embd.weight", [32, 16], Q.F32),
        ("blk.0.attn_qkv.weight", [32, 96], Q.F16),
        ("blk.0.attn_qkv.bias", [96], Q.F32),
        ("test.four_dims", [2, 3, 4, 5], Q.F32),
    ]))

    files.append(write("aligned64", "llama", [
        ("general.name", V.STRING, "custom alignment", None),
    ], [
        ("a", [5], Q.F32),            # 20 bytes, padded to 64
        ("b", [7, 3], Q.F16),         # 42 bytes
        ("c", [32, 2], Q.Q8_0),       # 68 bytes, padded to 128
        ("d", [1], Q.F32),
    ], alignment=64))

    vocab = ["<unk>", "<s>", "</s>"] + [chr(ord("a") + i) for i in range(26)] + ["▁the", "é", "日本"]
    files.append(write("vocab_only", "llama", [
        ("general.type", V.STRING, "vocab", None),
        ("tokenizer.ggml.model", V.STRING, "llama", None),
        ("tokenizer.ggml.tokens", V.ARRAY, vocab, V.STRING),
        ("tokenizer.ggml.scores", V.ARRAY, [-float(i) for i in range(len(vocab))], V.FLOAT32),
        ("tokenizer.ggml.add_bos_token", V.BOOL, True, None),
    ], []))

    # GGUF v2 differs from v3 only in that v3 allows big-endian files: the same bytes with version 2.
    src, dst = HERE / "aligned64.gguf", HERE / "aligned64_v2.gguf"
    shutil.copyfile(src, dst)
    with open(dst, "r+b") as fh:
        fh.seek(4)
        fh.write((2).to_bytes(4, "little"))
    v2 = dict(files[3], file="aligned64_v2.gguf", version=2)
    files.append(v2)

    cross_check(files)
    (HERE / "expected.json").write_text(json.dumps({"files": files}, indent=None, ensure_ascii=False).replace('{"file": ', '\n{"file": ') + "\n")
    total = sum((HERE / f["file"]).stat().st_size for f in files)
    print(f"wrote {len(files)} files, {total} bytes")


def cross_check(files: list[dict]) -> None:
    """A second opinion from the gguf package's own reader (not ours) on what was written."""
    from gguf import GGUFReader
    for f in files:
        r = GGUFReader(HERE / f["file"])
        assert [t.name for t in r.tensors] == [t["name"] for t in f["tensors"]], f["file"]
        for t, e in zip(r.tensors, f["tensors"]):
            assert list(map(int, t.shape)) == e["shape"], (f["file"], t.name)
            assert int(t.tensor_type) == e["type_id"] and int(t.n_bytes) == e["bytes"], (f["file"], t.name)
            assert int(t.data_offset) == f["data_offset"] + e["offset"], (f["file"], t.name)
        assert len(r.fields) == f["metadata_count"] + 3, f["file"]  # GGUFReader also lists the 3 header fields


if __name__ == "__main__":
    main()
