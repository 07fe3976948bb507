"""Engines of engine_db (wrappers of the core's, see :mod:`._wrap`): what an engine's kernels do per backend."""
from __future__ import annotations

from typing import Any, Dict, List, Tuple

from . import _core
from ._device import DeviceLike, _core_device
from ._wrap import CoreAttribute

__all__ = ["Engine", "EngineBackend", "LinearKernel", "engine", "engines"]


class LinearKernel:
    """A kernel an engine runs linear layers with: the weight formats and rows it takes, the unit and format of its
    multiply-adds, its tiles, how often and whether hidden it dequantizes; with its source."""

    __slots__ = ("_core",)

    def __init__(self, core: _core.LinearKernel) -> None:
        self._core = core

    name: CoreAttribute[str] = CoreAttribute("the kernel's name in the engine's source")
    weights: CoreAttribute[List[str]] = CoreAttribute("weight formats it handles ('*', 'float', 'quantized' or names)")
    max_rows: CoreAttribute[float] = CoreAttribute("used up to this many rows (inf: no limit)")
    families: CoreAttribute[List[str]] = CoreAttribute(
        "hardware_db families the engine runs it on ([]: every family; elsewhere the kernels after it serve)")
    max_experts: CoreAttribute[float] = CoreAttribute(
        "the most experts of a MoE layer it runs (inf: any; dense layers always; beyond, the kernels after it serve)")
    unit: CoreAttribute[str] = CoreAttribute("'matrix' or 'vector'")
    compute: CoreAttribute[str] = CoreAttribute("'activation' or the format of its multiply-adds")
    tile_m: CoreAttribute[float] = CoreAttribute("rows of a tile (matrix units)")
    tile_n: CoreAttribute[float] = CoreAttribute("columns of a tile (matrix units)")
    dequant_every_rows: CoreAttribute[float] = CoreAttribute("rows per dequantization of the weights (0: once)")
    dequant_overlapped: CoreAttribute[bool] = CoreAttribute("whether dequantization hides under the loads")
    efficiency: CoreAttribute[float] = CoreAttribute("fraction of its unit's achievable peak it reaches")
    stream_k: CoreAttribute[bool] = CoreAttribute("whether it splits its tiles' K loop evenly over the processors")
    row_tile_step: CoreAttribute[float] = CoreAttribute(
        "its row tiles are multiples of this up to tile_m, the smallest covering the rows in the fewest tiles (0: powers "
        "of two from 16)")
    moe_row_tile: CoreAttribute[str] = CoreAttribute(
        "a MoE call's row tile: 'expert' (covers each expert's share) or 'batch' (one tile for the batch's tokens, run "
        "whole by every expert)")
    tiles_per_unit: CoreAttribute[float] = CoreAttribute("output tiles resident on one compute unit at once")
    split_k: CoreAttribute[bool] = CoreAttribute(
        "with fewer tiles than processors, whether the K loop is split over the idle ones")
    by_family: CoreAttribute[Dict[str, Dict[str, Any]]] = CoreAttribute(
        "device family -> efficiency, tiles_per_unit, split_k, stream_k, alu_ops_scale and their source where the family's differ")
    alu_ops_per_mac: CoreAttribute[float] = CoreAttribute("ALU operations (unpacking, scales) beside each multiply-add")
    alu_weight_share: CoreAttribute[float] = CoreAttribute(
        "share of alu_ops_per_mac a tile spends once per weight (unpacking it for all its rows): smaller tiles pay it "
        "over fewer rows")
    alu_format: CoreAttribute[str] = CoreAttribute(
        "the lanes those ALU operations run on ('int32', 'fp32' ...), or 'issue': issue slots at the device's issue rate")
    alu_ops_scale: CoreAttribute[Dict[str, float]] = CoreAttribute(
        "alu_ops_per_mac of each weight format relative to the one it was fitted on (absent: 1)")
    launches: CoreAttribute[float] = CoreAttribute("kernels launched per linear layer (e.g. quantizing the activations)")
    moe_launches: CoreAttribute[float] = CoreAttribute(
        "kernels launched per mixture-of-experts layer (e.g. sorting the rows by expert first); 0: launches")
    source: CoreAttribute[str] = CoreAttribute("where this comes from (file and commit, docs, measurement)")
    uncertain: CoreAttribute[str] = CoreAttribute("why the source may not settle it ('' if it does)")

    def __repr__(self) -> str:
        return f"<LinearKernel {self.name}: {self.unit} {self.compute}, weights {','.join(self.weights)}>"


class EngineBackend:
    """An engine on one backend (cuda, rocm, metal, vulkan, cpu or any), every property resolved."""

    __slots__ = ("_core",)

    def __init__(self, core: _core.EngineBackend) -> None:
        self._core = core

    backend: CoreAttribute[str] = CoreAttribute("the backend's name")
    kernel_fixed_cost_scale: CoreAttribute[float] = CoreAttribute("× the device's launch overhead per kernel")
    activation_format: CoreAttribute[str] = CoreAttribute("number format of the activations")
    fused_qkv: CoreAttribute[bool] = CoreAttribute("Q, K and V projections in one GEMM")
    matvec_fused_bias: CoreAttribute[bool] = CoreAttribute("a mat-vec of one row applies the add after it (bias or residual)")
    matvec_fused_glu: CoreAttribute[bool] = CoreAttribute("the gate and up mat-vecs of one row apply their GLU")
    attention_format: CoreAttribute[str] = CoreAttribute(
        "format of the unfused attention's Q·Kᵀ product ('activation': the activation format)")
    attention_pv_format: CoreAttribute[str] = CoreAttribute("format of the unfused attention's P·V product")
    logits_last_token_only: CoreAttribute[bool] = CoreAttribute("prefill computes the logits of the last token only")
    runtime_overhead_bytes: CoreAttribute[float] = CoreAttribute("the runtime's own memory [B]")
    all_reduce: CoreAttribute[str] = CoreAttribute("tensor-parallel all-reduce algorithm ('ring', 'one-shot' ...)")
    collective_step_latency_s: CoreAttribute[float] = CoreAttribute("latency of one step of a collective [s]")
    vocab_parallel: CoreAttribute[bool] = CoreAttribute("the vocabulary split over tensor-parallel ranks")
    bandwidth_fraction: CoreAttribute[float] = CoreAttribute(
        "× the device's achievable DRAM fraction: what the engine's streaming kernels reach")
    op_kernels: CoreAttribute[Dict[str, float]] = CoreAttribute("kernels per op where the engine launches other than one")
    prefill_ubatch_tokens: CoreAttribute[float] = CoreAttribute("prompt micro-batch in tokens (0: the whole prompt)")
    split_modes: CoreAttribute[List[str]] = CoreAttribute("how it spreads a model over devices, its default first")
    prefill_batch_tokens: CoreAttribute[float] = CoreAttribute(
        "under a layer split: tokens per call whose micro-batches the devices overlap (0: none)")
    layer_handoff_latency_s: CoreAttribute[float] = CoreAttribute(
        "under a layer split: fixed time of handing the hidden state to the next device [s]")
    layer_split_kernel_fixed_cost_add: CoreAttribute[float] = CoreAttribute(
        "under a layer split: added to kernel_fixed_cost_scale")
    flash_attention_version: CoreAttribute[int] = CoreAttribute("1: K/V blocks outermost; 2: a Q block resident")
    flash_attention_default: CoreAttribute[bool] = CoreAttribute("whether it runs flash attention unless told otherwise")
    decode_attention_per_query_head: CoreAttribute[bool] = CoreAttribute(
        "decode reads the KV cache once per query head (no K/V sharing within a GQA group)")
    decode_attention_alu_ops_per_mac: CoreAttribute[float] = CoreAttribute(
        "thread instructions the decode attention kernel issues per multiply-add, per query head (0: not counted)")
    flash_qk_format: CoreAttribute[str] = CoreAttribute(
        "format of flash attention's Q·Kᵀ product ('attention': attention_format's)")
    flash_pv_format: CoreAttribute[str] = CoreAttribute(
        "format of flash attention's P·V product ('fp16_acc16': fp16 with fp16 sums)")
    flash_issue_per_score: CoreAttribute[Dict[str, List[List[float]]]] = CoreAttribute(
        "device family -> [head_dim, one head per block, GQA group per block] instructions the flash-attention "
        "kernel issues per score besides its products (empty: not counted)")
    flash_attention_head_dims: CoreAttribute[List[float]] = CoreAttribute(
        "head sizes whose prompts run the fused flash-attention kernel (empty: every size; others run unfused)")
    flash_attention_kv_to_f16: CoreAttribute[Dict[str, Any]] = CoreAttribute(
        "K/V cache formats a prompt's flash attention converts to an f16 copy first ({'formats': [...] ('*': every "
        "format but f16; []: none), 'min_queries': from this many queries per sequence, 'except_families': device "
        "families whose kernels read it as stored})")

    @property
    def linear_kernels(self) -> List[LinearKernel]:
        """The kernels of linear layers, first match by weight format and rows."""
        return [LinearKernel(k) for k in self._core.linear_kernels]

    @property
    def sources(self) -> Dict[str, Tuple[str, str]]:
        """property -> (source, uncertain)."""
        return self._core.sources

    def __repr__(self) -> str:
        return f"<EngineBackend {self.backend}>"


class Engine:
    """An inference engine of engine_db (``rp.engine(name)``), per backend, every property with its source."""

    __slots__ = ("_core",)

    def __init__(self, core: _core.Engine) -> None:
        self._core = core

    id: CoreAttribute[str] = CoreAttribute("engine_db id (``llama.cpp``, ``cuda-graphs`` ...)")
    name: CoreAttribute[str] = CoreAttribute("the engine's name")
    summary: CoreAttribute[str] = CoreAttribute("what it does, in a sentence")
    aliases: CoreAttribute[List[str]] = CoreAttribute("other names it is found by")
    based_on: CoreAttribute[str] = CoreAttribute("the engine it derives from ('' if none)")
    origin: CoreAttribute[str] = CoreAttribute("the file it was read from")
    native_backend: CoreAttribute[Dict[str, str]] = CoreAttribute("device kind or vendor -> the backend it runs")

    @property
    def backends(self) -> List[EngineBackend]:
        """The engine on each backend it describes."""
        return [EngineBackend(b) for b in self._core.backends]

    def backend(self, name: str) -> EngineBackend:
        """The engine on a backend: ``"any"``, ``"cuda"``, ``"rocm"``, ``"metal"``, ``"vulkan"`` or ``"cpu"``."""
        return EngineBackend(self._core.backend(name))

    def on(self, device: DeviceLike) -> EngineBackend:
        """The backend the engine runs on for a device (a name or a Device)."""
        return EngineBackend(self._core.on(_core_device(device)))

    def runs(self, model: Any, quant: str) -> bool:
        """Whether the engine runs every weight matrix of `model` (a name or a Model) under `quant`."""
        from .inference import model as _model

        return bool(self._core.runs_quantization(_model(model)._core, quant))

    def quant_for(self, quant: str) -> str:
        """The quantization `quant` names on this engine: on the llama.cpp engines, which load GGUF files, ``"mxfp4"``
        is the ``MXFP4_MOE`` file type (experts in MXFP4, the other matrices in Q8_0); any other name as it is."""
        return str(self._core.quant_for(quant))

    def to_json(self, indent: int = 2) -> str:
        """The engine as JSON, every backend resolved."""
        return self._core.to_json(indent)

    def __repr__(self) -> str:
        return repr(self._core)


def engines() -> List[str]:
    """Engine names (``engine=`` of estimate and sweep): llama.cpp, then the others of engine_db by id."""
    return list(_core.engine_names())


def engine(name: str) -> Engine:
    """What an engine does per backend and phase (kernels of linear layers and their formats, whether dequantization
    hides under the loads, fused QKV, fixed cost per kernel, how tensor parallel splits the vocabulary and sums
    partial outputs), each property with its source."""
    return Engine(_core.engine(name))
