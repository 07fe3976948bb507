"""Operator cost builders. Each returns an :class:`rooflinepy.OpCost`; the counts live in the C++ core.

>>> import rooflinepy as rp
>>> op = rp.ops.gemm(4096, 4096, 4096, dtype="fp16")
>>> op.flops
137438953472.0
"""
from __future__ import annotations

from typing import Optional

from . import _validate
from ._core import ops as _ops
from ._device import DeviceLike, _core_device
from ._roofline import OpCost

def _n(x: float) -> str:
    return f"{x:g}"


def _named(op: OpCost, label: str) -> OpCost:
    """The op with its shape in its name (what a plot labels it with)."""
    op.name = label
    return op


__all__ = ["gemm", "gemv", "elementwise", "softmax", "layernorm", "rmsnorm", "attention", "decode_attention",
           "kv_append", "embedding_lookup"]


def gemm(m: float, n: float, k: float, dtype: str = "fp16", *, a_dtype: Optional[str] = None,
         weight_dtype: Optional[str] = None, out_dtype: Optional[str] = None, unit: str = "matrix",
         tile_bytes: float = 0.0, batch: float = 1.0) -> OpCost:
    """C[m×n] = A[m×k]·B[k×n]: 2mnk FLOPs; compulsory DRAM traffic, or the tiled model with ``tile_bytes`` of
    on-chip memory. ``a_dtype``, ``weight_dtype`` (B; a quantization such as ``"Q4_0"`` or ``"int4-g128"``) and
    ``out_dtype`` default to ``dtype``; ``batch`` independent GEMMs."""
    op = OpCost(_ops.gemm(m, n, k, dtype, a_dtype=a_dtype, weight_dtype=weight_dtype, out_dtype=out_dtype,
                          unit=unit, tile_bytes=tile_bytes, batch=batch))
    return _named(op, f"gemm {_n(m)}×{_n(n)}×{_n(k)}" + (f" ×{_n(batch)}" if batch != 1 else ""))


def gemv(n: float, k: float, dtype: str = "fp16", *, weight_dtype: Optional[str] = None,
         out_dtype: Optional[str] = None) -> OpCost:
    """y[n] = W[n×k]·x[k] on vector units."""
    return _named(OpCost(_ops.gemv(n, k, dtype, weight_dtype=weight_dtype, out_dtype=out_dtype)), f"gemv {_n(n)}×{_n(k)}")


def elementwise(n: float, flops_per_element: float = 1.0, inputs: float = 1.0, outputs: float = 1.0,
                dtype: str = "fp16") -> OpCost:
    """``n`` elements, each read from ``inputs`` tensors and written to ``outputs``, ``flops_per_element`` FLOPs."""
    return _named(OpCost(_ops.elementwise(n, flops_per_element, inputs, outputs, dtype)), f"elementwise {_n(n)}")


def softmax(rows: float, cols: float, dtype: str = "fp16") -> OpCost:
    """Softmax over each of ``rows`` rows of ``cols`` elements."""
    return _named(OpCost(_ops.softmax(rows, cols, dtype)), f"softmax {_n(rows)}×{_n(cols)}")


def layernorm(rows: float, cols: float, dtype: str = "fp16", affine: bool = True) -> OpCost:
    """LayerNorm over each of ``rows`` rows of ``cols`` elements (``affine``: with scale and shift)."""
    return _named(OpCost(_ops.layernorm(rows, cols, dtype, affine)), f"layernorm {_n(rows)}×{_n(cols)}")


def rmsnorm(rows: float, cols: float, dtype: str = "fp16", affine: bool = True) -> OpCost:
    """RMSNorm over each of ``rows`` rows of ``cols`` elements (``affine``: with a scale)."""
    return _named(OpCost(_ops.rmsnorm(rows, cols, dtype, affine)), f"rmsnorm {_n(rows)}×{_n(cols)}")


def attention(batch: float, heads: float, seq_q: float, seq_kv: Optional[float] = None, head_dim: float = 128,
              dtype: str = "fp16", *, kind: str = "standard", backward: bool = False, causal: bool = False,
              sram_bytes: Optional[float] = None, l2_bytes: Optional[float] = None,
              device: Optional[DeviceLike] = None, kv_heads: float = 0.0, kv_dtype: Optional[str] = None,
              flash_version: int = 2) -> OpCost:
    """Attention of ``seq_q`` queries over ``seq_kv`` keys (default ``seq_q``) per (batch, head).

    ``kind="standard"`` writes and reads the score and probability matrices in DRAM (in L2 where both fit in
    ``l2_bytes=``, or in the L2 of ``device=`` when it has a bandwidth there); ``kind="flash"`` tiles them
    in SRAM, which needs the SRAM size: ``sram_bytes=`` or ``device=`` (a name or a Device; its SRAM per compute
    unit and its compute units are used). ``flash_version``: 1 (FlashAttention-1: K/V blocks outermost, Q and O
    re-read and re-written per K/V block, Theorem 2's IO count) or 2/3 (FlashAttention-2/3: a Q block resident,
    K and V streamed again per further Q block). A re-read is an L2 hit when the rows the resident thread blocks
    re-read fit in L2 (``l2_bytes=``, or the device's L2); with ``sram_bytes=`` alone there is no cache.
    ``kv_heads`` (0: ``heads``) and ``kv_dtype`` count K and V once per KV head in their format.
    ``backward=True`` adds the backward pass.
    """
    backward = _validate.flag(backward, "backward", "attention")
    causal = _validate.flag(causal, "causal", "attention")
    op = OpCost(_ops.attention(batch, heads, seq_q, seq_kv, head_dim, dtype, kind=kind, backward=backward,
                               causal=causal, sram_bytes=sram_bytes, l2_bytes=l2_bytes,
                               device=None if device is None else _core_device(device), kv_heads=kv_heads,
                               kv_dtype=kv_dtype, flash_version=flash_version))
    kv = seq_q if seq_kv is None else seq_kv
    return _named(op, f"{kind} attention {_n(seq_q)}×{_n(kv)}, {_n(heads)} heads of {_n(head_dim)}"
                      + (f" (FA-{flash_version})" if kind == "flash" else ""))


def decode_attention(batch: float, heads: float, kv_heads: Optional[float] = None, context: float = 1.0,
                     head_dim: float = 128.0, dtype: str = "fp16", *, kv_dtype: Optional[str] = None,
                     kind: str = "flash", per_query_head: bool = False, alu_ops_per_mac: float = 0.0) -> OpCost:
    """One new token per sequence attending a KV cache of ``context`` tokens (``kv_heads`` default ``heads``).
    ``per_query_head``: the kernel runs a thread block per query head (TensorRT-LLM's masked MHA before XQA), so
    the other query heads of a group read the cache again from L2 and dequantize it again. ``alu_ops_per_mac``: the
    thread instructions the kernel issues per multiply-add of q·k and p·v (TensorRT-LLM 0.6.1's: 5.3), counted as
    int32 vector work, which runs at the SM's instruction issue rate."""
    per_query_head = _validate.flag(per_query_head, "per_query_head", "decode_attention")
    _validate.number(alu_ops_per_mac, "alu_ops_per_mac", "decode_attention")
    return OpCost(_ops.decode_attention(batch, heads, kv_heads, context, head_dim, dtype, kv_dtype=kv_dtype,
                                        kind=kind, per_query_head=per_query_head, alu_ops_per_mac=alu_ops_per_mac))


def kv_append(batch: float, tokens: float, kv_heads: float, head_dim: float, dtype: str = "fp16", *,
              kv_dtype: Optional[str] = None) -> OpCost:
    """Write the K and V of ``tokens`` new tokens per sequence into the KV cache."""
    return OpCost(_ops.kv_append(batch, tokens, kv_heads, head_dim, dtype, kv_dtype=kv_dtype))


def embedding_lookup(tokens: float, hidden: float, dtype: str = "fp16", *, out_dtype: Optional[str] = None) -> OpCost:
    """Gather ``tokens`` rows of ``hidden`` elements from the embedding table."""
    return OpCost(_ops.embedding_lookup(tokens, hidden, dtype, out_dtype=out_dtype))
