"""rooflinepy._core.read_gguf against files written at test time by the `gguf` package (ggml's own writer)."""
from __future__ import annotations

import inspect
import re

import pytest

gguf = pytest.importorskip("gguf")
np = pytest.importorskip("numpy")

from gguf import GGML_QUANT_SIZES, GGMLQuantizationType as Q, GGUFValueType as V, GGUFWriter  # noqa: E402

from rooflinepy import _core  # noqa: E402

if "sub_type" not in inspect.signature(GGUFWriter.add_key_value).parameters:
    pytest.skip("this gguf package is too old: GGUFWriter.add_key_value has no sub_type", allow_module_level=True)


def f32(x: float) -> float:
    return float(np.float32(x))


def pad(n: int, align: int) -> int:
    return (n + align - 1) // align * align


def write(path, arch, metadata, tensors, alignment=None):
    """Writes a GGUF file; returns the expected tensors (ne0-first shapes, offsets from the data section)."""
    rng = np.random.default_rng(0)
    w = GGUFWriter(str(path), arch)
    if alignment:
        w.add_custom_alignment(alignment)
    for key, vtype, value, sub in metadata:
        w.add_key_value(key, value, vtype, sub_type=sub)
    expected, offset, align = [], 0, alignment or 32
    for name, ne, qtype in tensors:
        shape = tuple(reversed(ne))
        block, type_size = GGML_QUANT_SIZES[qtype]
        if qtype == Q.F32:
            w.add_tensor(name, rng.standard_normal(shape).astype(np.float32))
        elif qtype == Q.F16:
            w.add_tensor(name, rng.standard_normal(shape).astype(np.float16))
        else:
            raw = rng.integers(0, 256, size=(*shape[:-1], ne[0] // block * type_size), dtype=np.uint8)
            w.add_tensor(name, raw, raw_dtype=qtype)
        n = int(np.prod(ne))
        nbytes = n // block * type_size
        expected.append({"name": name, "shape": tuple(ne), "type": qtype.name, "type_id": int(qtype),
                         "offset": offset, "n_elements": float(n), "bytes": float(nbytes)})
        offset += pad(nbytes, align)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return expected, offset


LLAMA_META = [
    ("general.name", V.STRING, "pytest llama", None),
    ("general.file_type", V.UINT32, 15, None),
    ("llama.context_length", V.UINT32, 4096, None),
    ("llama.embedding_length", V.UINT32, 256, None),
    ("llama.block_count", V.UINT32, 1, None),
    ("llama.attention.head_count", V.UINT32, 4, None),
    ("llama.attention.layer_norm_rms_epsilon", V.FLOAT32, 1e-6, None),
    ("llama.rope.freq_base", V.FLOAT32, 500000.0, None),
]
LLAMA_TENSORS = [
    ("token_embd.weight", [256, 10], Q.F16),
    ("blk.0.attn_norm.weight", [256], Q.F32),
    ("blk.0.attn_q.weight", [256, 8], Q.Q8_0),
    ("blk.0.ffn_up.weight", [256, 4], Q.Q4_K),
    ("blk.0.ffn_down.weight", [256, 2, 2], Q.Q6_K),
]


@pytest.fixture
def llama(tmp_path):
    path = tmp_path / "llama.gguf"
    tensors, data_bytes = write(path, "llama", LLAMA_META, LLAMA_TENSORS)
    return path, tensors, data_bytes


def test_every_field_of_a_llama_file(llama):
    path, tensors, data_bytes = llama
    g = _core.read_gguf(path)
    size = path.stat().st_size
    assert g["version"] == 3
    assert g["alignment"] == 32
    assert g["file_size"] == size
    assert g["data_offset"] == size - data_bytes  # the writer pads every tensor, the last one too
    assert g["data_offset"] % 32 == 0
    assert g["architecture"] == "llama"
    expected_meta = {"general.architecture": "llama"}
    for key, vtype, value, _ in LLAMA_META:
        expected_meta[key] = f32(value) if vtype == V.FLOAT32 else value
    assert g["metadata"] == expected_meta
    assert list(g["metadata"]) == list(expected_meta)  # file order
    assert g["tensors"] == tensors
    assert g["total_tensor_bytes"] == sum(t["bytes"] for t in tensors)
    assert {t["type"] for t in g["tensors"]} == {"F16", "F32", "Q8_0", "Q4_K", "Q6_K"}
    # the same through a str path
    assert _core.read_gguf(str(path)) == g


def test_metadata_values_and_arrays(tmp_path):
    path = tmp_path / "types.gguf"
    vocab = [f"tok{i}" for i in range(100)]
    meta = [
        ("t.u8", V.UINT8, 255, None), ("t.i8", V.INT8, -128, None), ("t.u16", V.UINT16, 65535, None),
        ("t.i16", V.INT16, -32768, None), ("t.u32", V.UINT32, 2**32 - 1, None), ("t.i32", V.INT32, -(2**31), None),
        ("t.f32", V.FLOAT32, 0.1, None), ("t.bool", V.BOOL, False, None), ("t.str", V.STRING, "ünïcode", None),
        ("t.u64", V.UINT64, 2**64 - 1, None), ("t.i64", V.INT64, -(2**63), None), ("t.f64", V.FLOAT64, 1 / 3, None),
        ("t.small", V.ARRAY, [1, 2, 3], V.INT32),
        ("t.words", V.ARRAY, ["a", "bc"], V.STRING),
        ("t.flags", V.ARRAY, [True, False], V.BOOL),
        ("t.ints64", V.ARRAY, list(range(64)), V.UINT16),
        ("t.ints65", V.ARRAY, list(range(65)), V.UINT16),
        ("tokenizer.ggml.tokens", V.ARRAY, vocab, V.STRING),
        ("t.nested", V.ARRAY, [[1, 2], [3]], V.ARRAY),
    ]
    write(path, "gpt2", meta, [("w", [8, 2], Q.F32)])
    m = _core.read_gguf(path)["metadata"]
    assert m["t.u8"] == 255 and m["t.i8"] == -128 and m["t.u16"] == 65535 and m["t.i16"] == -32768
    assert m["t.u32"] == 2**32 - 1 and m["t.i32"] == -(2**31)
    assert m["t.u64"] == 2**64 - 1 and m["t.i64"] == -(2**63)
    assert m["t.f32"] == f32(0.1) and m["t.f64"] == 1 / 3
    assert m["t.bool"] is False
    assert m["t.str"] == "ünïcode"
    assert m["t.small"] == [1, 2, 3]
    assert m["t.words"] == ["a", "bc"]
    assert m["t.flags"] == [True, False]
    assert m["t.ints64"] == list(range(64))
    assert m["t.ints65"] == {"type": "uint16", "count": 65}  # longer than 64: summarised
    assert m["tokenizer.ggml.tokens"] == {"type": "string", "count": 100}
    assert m["t.nested"] == {"type": "array", "count": 2}


def test_custom_alignment(tmp_path):
    path = tmp_path / "aligned.gguf"
    tensors, data_bytes = write(path, "qwen3", [], [("a", [5], Q.F32), ("b", [3, 3], Q.F16), ("c", [32], Q.Q8_0)],
                                alignment=64)
    g = _core.read_gguf(path)
    assert g["alignment"] == 64
    assert g["metadata"]["general.alignment"] == 64
    assert g["data_offset"] % 64 == 0
    assert g["data_offset"] == path.stat().st_size - data_bytes
    assert [t["offset"] for t in g["tensors"]] == [0, 64, 128]
    assert g["tensors"] == tensors


def test_truncated_files_name_the_path(llama, tmp_path):
    path, _, _ = llama
    data = path.read_bytes()
    g = _core.read_gguf(path)
    cut = tmp_path / "cut.gguf"
    last = g["tensors"][-1]
    end = g["data_offset"] + last["offset"] + int(last["bytes"])  # the writer pads after it: that may go
    assert _core.read_gguf(path) == g
    for n in [0, 3, 4, 10, 23, 24, 100, g["data_offset"] - 1, g["data_offset"] + 1, end - 1]:
        cut.write_bytes(data[:n])
        with pytest.raises(ValueError, match=re.escape(str(cut))):
            _core.read_gguf(cut)
    cut.write_bytes(data[:300])  # past the minimum size that the counts imply, inside the metadata
    with pytest.raises(ValueError, match=r"truncated at byte \d+ while reading .*metadata"):
        _core.read_gguf(cut)


def test_garbage_and_wrong_versions(tmp_path, llama):
    bad = tmp_path / "garbage.bin"
    bad.write_bytes(np.random.default_rng(1).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    with pytest.raises(ValueError, match=re.escape(str(bad)) + r": at byte 0, not a GGUF file"):
        _core.read_gguf(bad)
    data = bytearray(llama[0].read_bytes())
    for version, message in [(1, "GGUF version 1 is not supported"), (4, "GGUF version 4 is not supported")]:
        data[4:8] = version.to_bytes(4, "little")
        bad.write_bytes(bytes(data))
        with pytest.raises(ValueError, match=message):
            _core.read_gguf(bad)
    data[4:8] = (2).to_bytes(4, "little")
    bad.write_bytes(bytes(data))
    assert _core.read_gguf(bad)["version"] == 2
    # a huge tensor count in an otherwise valid file
    data[8:16] = (2**63).to_bytes(8, "little")
    bad.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="tensor count 9223372036854775808 exceeds the limit"):
        _core.read_gguf(bad)


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="cannot open"):
        _core.read_gguf(tmp_path / "nope.gguf")


def test_layers_of_many_distinct_widths_merge_by_hash_into_the_right_counts(tmp_path):
    """Layers merge by a hash of their ops (linear in the layers): 60 layers of 25 FFN widths, more distinct
    layers than the builder remembers whole, still count every layer's FLOPs once."""
    import importlib.util
    from pathlib import Path

    import rooflinepy as rp

    spec = importlib.util.spec_from_file_location(
        "plan_build", Path(__file__).resolve().parents[2] / "benchmarks" / "plan_build.py")
    plan_build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plan_build)
    path = tmp_path / "wide.gguf"
    plan_build.write_gguf(path, 60, 0, cycle=25)
    m = rp.Model.from_gguf(path)
    e = rp.estimate(m, "F16", "rtx-4090", prompt_tokens=8, gen_tokens=4, engine="generic")
    bd = e.breakdown
    row = bd[(bd.phase == "decode") & (bd.op == "ffn_up")].iloc[0]
    H, widths = 64, [32 + (l % 25) for l in range(60)]
    assert row["count"] == 60 * 4
    assert row["flops"] == pytest.approx(4 * sum(2 * H * f for f in widths), rel=1e-12)
