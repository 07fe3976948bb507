"""Operator cost builders. Each returns an :class:`rooflinepy.OpCost`; the counts live in the C++ core.

>>> import rooflinepy as rp
>>> op = rp.ops.gemm(4096, 4096, 4096, dtype="fp16")
>>> op.flops
137438953472.0
"""
from typing import Any

from ._core.ops import attention as _attention
from ._core.ops import (  # noqa: F401
    decode_attention,
    elementwise,
    embedding_lookup,
    gemm,
    gemv,
    kv_append,
    layernorm,
    rmsnorm,
    softmax,
)

__all__ = ["gemm", "gemv", "elementwise", "softmax", "layernorm", "rmsnorm", "attention", "decode_attention",
           "kv_append", "embedding_lookup"]


def attention(batch, heads, seq_q, seq_kv=None, head_dim=128, dtype="fp16", *, kind="standard", backward=False,
              causal=False, sram_bytes=None, l2_bytes=None, device: Any = None):
    """Attention of ``seq_q`` queries over ``seq_kv`` keys (default ``seq_q``) per (batch, head).

    ``kind="standard"`` writes and reads the score and probability matrices in DRAM; ``kind="flash"`` tiles them
    in SRAM (FlashAttention's IO count, Theorem 2), which needs the SRAM size: ``sram_bytes=`` or ``device=`` (a
    name or a Device; its SRAM per compute unit is used). Flash re-reads Q and O once per block of K/V columns;
    when one head's rows fit in L2 (``l2_bytes=``, or the device's L2) those re-reads are L2 hits and DRAM sees
    only the compulsory traffic. With ``sram_bytes=`` alone it is the paper's model (no cache).
    ``backward=True`` adds the backward pass.
    """
    if device is not None and not hasattr(device, "sram_per_unit_bytes"):
        from . import device as _lookup

        device = _lookup(device)
    return _attention(batch, heads, seq_q, seq_kv, head_dim, dtype, kind=kind, backward=backward, causal=causal,
                      sram_bytes=sram_bytes, l2_bytes=l2_bytes, device=device)
