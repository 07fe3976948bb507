"""Operator cost builders. Each returns an :class:`rooflinepy.OpCost`; the counts live in the C++ core.

>>> import rooflinepy as rp
>>> op = rp.ops.gemm(4096, 4096, 4096, dtype="fp16")
>>> op.flops
137438953472.0
"""
from __future__ import annotations

from typing import Optional

from ._core import ops as _ops
from ._device import DeviceLike, _core_device
from ._roofline import OpCost

__all__ = ["gemm", "gemv", "elementwise", "softmax", "layernorm", "rmsnorm", "attention", "decode_attention",
           "kv_append", "embedding_lookup"]


def gemm(m: float, n: float, k: float, dtype: str = "fp16", *, a_dtype: Optional[str] = None,
         weight_dtype: Optional[str] = None, out_dtype: Optional[str] = None, unit: str = "matrix",
         tile_bytes: float = 0.0, batch: float = 1.0) -> OpCost:
    """C[m×n] = A[m×k]·B[k×n]: 2mnk FLOPs; compulsory DRAM traffic, or the tiled model with ``tile_bytes`` of
    on-chip memory. ``a_dtype``, ``weight_dtype`` (B; a quantization such as ``"Q4_0"`` or ``"int4-g128"``) and
    ``out_dtype`` default to ``dtype``; ``batch`` independent GEMMs."""
    return OpCost(_ops.gemm(m, n, k, dtype, a_dtype=a_dtype, weight_dtype=weight_dtype, out_dtype=out_dtype,
                            unit=unit, tile_bytes=tile_bytes, batch=batch))


def gemv(n: float, k: float, dtype: str = "fp16", *, weight_dtype: Optional[str] = None,
         out_dtype: Optional[str] = None) -> OpCost:
    """y[n] = W[n×k]·x[k] on vector units."""
    return OpCost(_ops.gemv(n, k, dtype, weight_dtype=weight_dtype, out_dtype=out_dtype))


def elementwise(n: float, flops_per_element: float = 1.0, inputs: float = 1.0, outputs: float = 1.0,
                dtype: str = "fp16") -> OpCost:
    """``n`` elements, each read from ``inputs`` tensors and written to ``outputs``, ``flops_per_element`` FLOPs."""
    return OpCost(_ops.elementwise(n, flops_per_element, inputs, outputs, dtype))


def softmax(rows: float, cols: float, dtype: str = "fp16") -> OpCost:
    """Softmax over each of ``rows`` rows of ``cols`` elements."""
    return OpCost(_ops.softmax(rows, cols, dtype))


def layernorm(rows: float, cols: float, dtype: str = "fp16", affine: bool = True) -> OpCost:
    """LayerNorm over each of ``rows`` rows of ``cols`` elements (``affine``: with scale and shift)."""
    return OpCost(_ops.layernorm(rows, cols, dtype, affine))


def rmsnorm(rows: float, cols: float, dtype: str = "fp16", affine: bool = True) -> OpCost:
    """RMSNorm over each of ``rows`` rows of ``cols`` elements (``affine``: with a scale)."""
    return OpCost(_ops.rmsnorm(rows, cols, dtype, affine))


def attention(batch: float, heads: float, seq_q: float, seq_kv: Optional[float] = None, head_dim: float = 128,
              dtype: str = "fp16", *, kind: str = "standard", backward: bool = False, causal: bool = False,
              sram_bytes: Optional[float] = None, l2_bytes: Optional[float] = None,
              device: Optional[DeviceLike] = None, kv_heads: float = 0.0, kv_dtype: Optional[str] = None) -> OpCost:
    """Attention of ``seq_q`` queries over ``seq_kv`` keys (default ``seq_q``) per (batch, head).

    ``kind="standard"`` writes and reads the score and probability matrices in DRAM; ``kind="flash"`` tiles them
    in SRAM (FlashAttention's IO count, Theorem 2), which needs the SRAM size: ``sram_bytes=`` or ``device=`` (a
    name or a Device; its SRAM per compute unit is used). Flash re-reads Q and O once per block of K/V columns;
    when one head's rows fit in L2 (``l2_bytes=``, or the device's L2) those re-reads are L2 hits and DRAM sees
    only the compulsory traffic. With ``sram_bytes=`` alone it is the paper's model (no cache).
    ``kv_heads`` (0: ``heads``) and ``kv_dtype`` count K and V once per KV head in their format.
    ``backward=True`` adds the backward pass.
    """
    return OpCost(_ops.attention(batch, heads, seq_q, seq_kv, head_dim, dtype, kind=kind, backward=backward,
                                 causal=causal, sram_bytes=sram_bytes, l2_bytes=l2_bytes,
                                 device=None if device is None else _core_device(device), kv_heads=kv_heads,
                                 kv_dtype=kv_dtype))


def decode_attention(batch: float, heads: float, kv_heads: Optional[float] = None, context: float = 1.0,
                     head_dim: float = 128.0, dtype: str = "fp16", *, kv_dtype: Optional[str] = None,
                     kind: str = "flash") -> OpCost:
    """One new token per sequence attending a KV cache of ``context`` tokens (``kv_heads`` default ``heads``)."""
    return OpCost(_ops.decode_attention(batch, heads, kv_heads, context, head_dim, dtype, kv_dtype=kv_dtype,
                                        kind=kind))


def kv_append(batch: float, tokens: float, kv_heads: float, head_dim: float, dtype: str = "fp16", *,
              kv_dtype: Optional[str] = None) -> OpCost:
    """Write the K and V of ``tokens`` new tokens per sequence into the KV cache."""
    return OpCost(_ops.kv_append(batch, tokens, kv_heads, head_dim, dtype, kv_dtype=kv_dtype))


def embedding_lookup(tokens: float, hidden: float, dtype: str = "fp16", *, out_dtype: Optional[str] = None) -> OpCost:
    """Gather ``tokens`` rows of ``hidden`` elements from the embedding table."""
    return OpCost(_ops.embedding_lookup(tokens, hidden, dtype, out_dtype=out_dtype))
