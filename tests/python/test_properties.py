"""Invariants of the roofline over random valid inputs (hypothesis)."""
import math

from hypothesis import given, settings
from hypothesis import strategies as st

import rooflinepy as rp

DEVICES = rp.devices()
sizes = st.integers(min_value=1, max_value=1 << 16)
dtype = st.sampled_from(["fp16", "bf16", "fp32"])
device = st.sampled_from(DEVICES)


def finite_nonnegative(d):
    for k, v in d.items():
        if isinstance(v, float):
            assert math.isfinite(v) and v >= 0, (k, v)


@settings(max_examples=200, deadline=None)
@given(sizes, sizes, sizes, dtype, device, st.booleans())
def test_time_at_least_every_ceiling(m, n, k, dt, dev_id, ideal):
    dev = rp.device(dev_id)
    op = rp.ops.gemm(m, n, k, dt)
    t = dev.time(op, ideal=ideal)
    assert t.seconds >= t.compute_seconds
    for s in t.memory_seconds.values():
        assert t.seconds >= s
    assert t.seconds >= op.bytes / dev.bandwidth() - 1e-18
    finite_nonnegative(t.to_dict())
    finite_nonnegative(op.to_dict())


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 1 << 30), st.integers(1, 1 << 30), st.floats(0, 100), device, st.booleans())
def test_more_bytes_never_faster(n, extra, fpe, dev_id, ideal):
    dev = rp.device(dev_id)
    small = rp.ops.elementwise(n, fpe, 1, 1, "fp16")
    large = rp.ops.elementwise(n + extra, fpe, 1, 1, "fp16")
    assert dev.time(large, ideal=ideal).seconds >= dev.time(small, ideal=ideal).seconds


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 8), st.integers(1, 64), st.integers(1, 1 << 15), st.sampled_from([32, 64, 128, 256]),
       st.integers(16, 256), st.booleans(), st.booleans())
def test_flash_never_moves_more_dram_bytes_than_standard(b, h, n, d, sram_kib, backward, causal):
    """With an L2 for the re-reads, always; in the paper's cache-less model, whenever SRAM holds 3·d² + 8·d
    fp16 elements: each further column block of Bc >= E/4d keys re-reads Q, O (3·N·d elements) and the fp32
    statistics (16·N bytes), less than the 4·N·Bc score elements it replaces. True of every GPU in the
    database for head_dim <= 128."""
    kw = dict(head_dim=d, dtype="fp16", backward=backward, causal=causal)
    sram = sram_kib * 1024
    if sram // 2 < 4 * d:
        return
    std = rp.ops.attention(b, h, n, kind="standard", **kw)
    cached = rp.ops.attention(b, h, n, kind="flash", sram_bytes=sram, l2_bytes=1 << 40, **kw)
    assert cached.bytes <= std.bytes
    if sram // 2 >= 3 * d * d + 8 * d:
        paper = rp.ops.attention(b, h, n, kind="flash", sram_bytes=sram, **kw)
        assert paper.bytes <= std.bytes
    finite_nonnegative(cached.to_dict())


@settings(max_examples=100, deadline=None)
@given(sizes, sizes, device)
def test_results_finite_and_nonnegative_for_every_op(rows, cols, dev_id):
    dev = rp.device(dev_id)
    for op in (rp.ops.softmax(rows, cols), rp.ops.layernorm(rows, cols), rp.ops.rmsnorm(rows, cols),
               rp.ops.gemv(rows, cols), rp.ops.embedding_lookup(rows, cols),
               rp.ops.decode_attention(1, 8, 8, rows, 64), rp.ops.kv_append(1, rows, 8, 64)):
        finite_nonnegative(op.to_dict())
        finite_nonnegative(dev.time(op).to_dict())
        finite_nonnegative(dev.time(op, ideal=True).to_dict())
