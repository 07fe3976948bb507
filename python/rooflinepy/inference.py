"""Models, quantizations and LLM inference estimates. Every number comes from the C++ core.

Model, Architecture, Estimate and FitReport wrap the core's objects (see :mod:`._wrap`); Estimate's fields are
declared, typed, in :mod:`._fields`, which ``scripts/generate.py`` writes from the core's field table.
"""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import (TYPE_CHECKING, Any, Dict, Iterable, List, Literal, Mapping, Optional, Tuple, TypedDict, Union,
                    overload)

from . import _core
from . import _validate as _v
from ._device import Device, DeviceLike, database
from ._device import device as _lookup_device
from ._engine import Engine, engine, engines
from ._fields import EstimateFields
from ._wrap import CoreAttribute

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Architecture", "Model", "Estimate", "EstimateMemory", "EstimateCeilings", "FitReport", "ModelLike",
           "models", "model", "quants", "engines", "engine", "Engine", "estimate", "calibrate_from_measurements"]

_CATALOG: Optional[Dict[str, Path]] = None  # lower-case id or alias -> file
_IDS: List[str] = []
_MODEL_CACHE: Dict[str, "Model"] = {}


def _model_dir() -> Path:
    return Path(_core.data_directory()) / "model_db"


def _catalog() -> Dict[str, Path]:
    global _CATALOG, _IDS
    if _CATALOG is None:
        cat: Dict[str, Path] = {}
        ids: List[str] = []
        folder = _model_dir()
        if not folder.is_dir():
            raise FileNotFoundError(f"model database folder '{folder}' does not exist")
        for path in sorted(folder.glob("*.json")):
            if path.name == "schema.json":
                continue
            try:
                doc = json.loads(path.read_text())
            except ValueError as e:
                raise ValueError(f"{path}: not valid JSON: {e}") from None
            if not isinstance(doc, dict) or not isinstance(doc.get("id"), str):
                raise ValueError(f"{path}: field 'id' is required (a string naming the model)")
            aliases = doc.get("aliases", [])
            if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
                raise ValueError(f"{path}: field 'aliases' must be a list of strings, got {aliases!r}")
            ids.append(doc["id"])
            for key in [doc["id"], *aliases]:
                cat[key.lower()] = path
        _CATALOG, _IDS = cat, sorted(ids)
    return _CATALOG


def models() -> List[str]:
    """Ids of every model in the catalogue (model_db), sorted."""
    _catalog()
    return list(_IDS)


class Architecture:
    """A decoder-only transformer's shape (HF config.json or GGUF header values)."""

    __slots__ = ("_core",)

    def __init__(self, core: _core.Architecture) -> None:
        self._core = core

    id: CoreAttribute[str] = CoreAttribute("catalogue id ('' for a model not from model_db)")
    name: CoreAttribute[str] = CoreAttribute("the model's name")
    model_type: CoreAttribute[str] = CoreAttribute("HF model_type (llama, qwen3, gemma2 ...)")
    gguf_arch: CoreAttribute[str] = CoreAttribute("GGUF general.architecture")
    source: CoreAttribute[str] = CoreAttribute("where the configuration comes from")
    n_layer: CoreAttribute[int] = CoreAttribute("transformer blocks")
    n_head: CoreAttribute[int] = CoreAttribute("attention (query) heads")
    n_kv_head: CoreAttribute[int] = CoreAttribute("key/value heads (GQA: fewer than n_head)")
    hidden: CoreAttribute[float] = CoreAttribute("hidden size")
    head_dim: CoreAttribute[float] = CoreAttribute("size of one head")
    ffn: CoreAttribute[float] = CoreAttribute("MLP intermediate size")
    vocab: CoreAttribute[float] = CoreAttribute("vocabulary size")
    max_context: CoreAttribute[float] = CoreAttribute("longest context the model was trained for")
    tied_embeddings: CoreAttribute[bool] = CoreAttribute("output head shares the embedding table")
    window: CoreAttribute[List[float]] = CoreAttribute("sliding window of each layer (0: full attention)")
    n_expert: CoreAttribute[int] = CoreAttribute("experts per MoE layer (0: dense)")
    n_expert_used: CoreAttribute[int] = CoreAttribute("experts each token is routed to")
    expert_ffn: CoreAttribute[float] = CoreAttribute("intermediate size of one expert")
    parameters_reported: CoreAttribute[float] = CoreAttribute("parameters the model's card reports (0: none)")
    norm: CoreAttribute[str] = CoreAttribute("'rmsnorm' or 'layernorm'")
    mlp: CoreAttribute[str] = CoreAttribute("'gated' or 'plain'")
    position: CoreAttribute[str] = CoreAttribute("'rope' or 'learned'")

    def __repr__(self) -> str:
        return (f"<Architecture {self.id or self.model_type}: {self.n_layer} layers, hidden {self.hidden:g}, "
                f"{self.n_head}/{self.n_kv_head} heads>")


class Model:
    """A decoder-only transformer: its architecture and weight tensors. From the catalogue (:func:`rooflinepy.model`),
    a HF config.json (:meth:`from_hf_config`) or a GGUF header (:meth:`from_gguf`)."""

    __slots__ = ("_core",)

    def __init__(self, core: _core.Model) -> None:
        self._core = core

    @classmethod
    def from_hf_config(cls, config: Union[str, os.PathLike[str], Mapping[str, Any]]) -> Model:
        """From a HF config.json: a path, or the already-loaded dict. Offline."""
        if isinstance(config, Mapping):
            try:
                text = json.dumps(dict(config))
            except RecursionError:
                raise ValueError("from_hf_config: the config dict is nested too deeply to be a HF config") from None
            except (TypeError, ValueError) as e:
                raise ValueError(f"from_hf_config: the config dict is not JSON: {e}") from None
            return cls(_core.Model.from_hf_config(text, "<dict>"))
        path = _v.path(config, "config", "from_hf_config")
        try:
            text = Path(path).read_text()
        except OSError as e:
            raise FileNotFoundError(f"cannot read HF config '{path}': {e.strerror}") from None
        return cls(_core.Model.from_hf_config(text, path))

    @classmethod
    def from_gguf(cls, path: Union[str, os.PathLike[str]]) -> Model:
        """From a GGUF file's header (never its tensor data): architecture, every tensor's format and bytes."""
        return cls(_core.Model.from_gguf(_v.path(path, "path", "from_gguf")))

    @property
    def arch(self) -> Architecture:
        """The architecture: layers, heads, sizes, experts."""
        return Architecture(self._core.arch)

    @property
    def id(self) -> str:
        """The catalogue id, or the model_type of a model not from the catalogue."""
        a = self._core.arch
        return a.id or a.model_type

    parameters: CoreAttribute[float] = CoreAttribute(
        "Σ elements of every weight tensor (a tied output head counted once)")

    def weight_bytes(self, quant: str) -> float:
        """Bytes of every weight tensor under ``quant`` (a llama.cpp mix such as Q4_K_M, a GPU scheme, or "gguf")."""
        return _core.weight_bytes(self._core, quant)

    def tensors(self, quant: str = "BF16") -> pd.DataFrame:
        """Every weight tensor with its format and bytes under ``quant``, as a DataFrame."""
        import pandas as pd

        return pd.DataFrame(_core.tensor_formats(self._core, quant))

    def __repr__(self) -> str:
        return repr(self._core)


ModelLike = Union[str, Model]
"""What a function taking a model accepts: a catalogue id or alias, or a :class:`Model`."""


def model(name: ModelLike) -> Model:
    """A catalogued model by id or alias, case-insensitive; a Model is returned as it is."""
    if isinstance(name, Model):
        return name
    cat = _catalog()
    key = str(name).lower()
    if key not in cat:
        raise KeyError(_core.unknown_name_message("model", str(name), models()))
    if key not in _MODEL_CACHE:
        path = cat[key]
        _MODEL_CACHE[key] = Model(_core.Model.from_catalog_entry(path.read_text(), str(path)))
    return _MODEL_CACHE[key]


_lookup_model = model  # for functions whose argument is called model


def quants() -> List[str]:
    """Every quantization name: llama.cpp mixes (Q4_K_M, Q8_0, BF16, ...) and GPU schemes (fp8, int4-g128, ...)."""
    return list(_core.quant_names())


_BREAKDOWN_COLUMNS = ["phase", "op", "count", "flops", "bytes", "intensity", "seconds", "bound", "flops_per_s",
                      "compute"]
BreakdownRow = Tuple[str, str, float, float, float, float, float, str, float, str]


class EstimateMemory(TypedDict):
    """``Estimate.memory``: bytes of one rank (the ``memory_*`` fields) and whether they fit."""

    weights: float
    kv_cache: float
    activations: float
    overhead: float
    total: float
    capacity: float
    fits: bool


class EstimateCeilings(TypedDict):
    """``Estimate.ceilings``: the pure roofline of each phase (the ``ceiling_*`` fields) and what bounds it."""

    decode_weights_tokens_per_s: float
    decode_tokens_per_s: float
    decode_tokens_per_s_total: float
    prefill_tokens_per_s: float
    decode_bound: str
    prefill_bound: str
    decode_intensity: float
    compute_bound_batch: float


_ESTIMATE_FIELDS = [f[0] for f in _core.estimate_fields()]
_REAL = (int, float)  # the types _validate.number takes without its ABC check (bool is neither)


def _with_interval(value: float, interval: Tuple[float, float]) -> str:
    """'87.3 (80.1-94.2)': a rate with its prediction interval ('0.0' for an absent phase)."""
    lo, hi = interval
    if value <= 0:
        return f"{value:.1f}"
    digits = 1 if value < 1000 else 0
    return f"{value:.{digits}f} ({lo:.{digits}f}-{hi:.{digits}f})"


class Estimate(EstimateFields):
    """The estimate of one workload. Its fields (typed in :class:`rooflinepy._fields.EstimateFields`, one per row of
    the core's field table) are plain attributes, each read from the core the first time it is asked for and kept;
    ``memory`` and ``ceilings`` group some of them; ``breakdown`` is a DataFrame of the per-op rows."""

    __slots__ = ("_core", "_breakdown_from", "_rows", "__dict__")
    _FIELDS = _ESTIMATE_FIELDS + ["speculative_tokens_per_cycle", "split_mode"]
    _FIELD_SET = frozenset(_FIELDS)

    speculative_tokens_per_cycle: float
    """expected tokens per draft-and-verify cycle (0 without speculative decoding)"""
    split_mode: str
    """how the ``tensor_parallel`` devices share the model: ``"none"`` (one device), ``"layer"`` or ``"tensor"``"""

    def __init__(self, core: _core.Estimate,
                 breakdown_from: Optional[Tuple[_core.EstimatePlan, float, float, float, float]] = None) -> None:
        # breakdown_from = (plan, batch, prompt, gen, context): the core estimate was made without its per-op rows; they are
        # made by the same plan when first asked for. Nothing is copied here: a caller that reads two fields of a
        # million estimates pays for two fields (each is kept in __dict__ once read, then a plain attribute).
        self._core = core
        self._breakdown_from = breakdown_from
        self._rows: Optional[List[BreakdownRow]] = None

    def __getattr__(self, name: str) -> Any:  # only for names not yet in __dict__
        if name in Estimate._FIELD_SET:
            value = getattr(self._core, name)
            self.__dict__[name] = value
            return value
        raise AttributeError(f"'Estimate' object has no attribute '{name}'")

    def __dir__(self) -> List[str]:
        return sorted(set(super().__dir__()) | Estimate._FIELD_SET)

    @property
    def memory(self) -> EstimateMemory:
        """weights, kv_cache, activations, overhead, total, capacity (bytes of one rank) and fits"""
        return {"weights": self.memory_weights, "kv_cache": self.memory_kv_cache,
                "activations": self.memory_activations, "overhead": self.memory_overhead,
                "total": self.memory_total, "capacity": self.memory_capacity, "fits": self.fits}

    @property
    def ceilings(self) -> EstimateCeilings:
        """the pure roofline of each phase and the weights-only decode ceiling, with their bounds"""
        return {
            "decode_weights_tokens_per_s": self.ceiling_decode_weights,
            "decode_tokens_per_s": self.ceiling_decode,
            "decode_tokens_per_s_total": self.ceiling_decode_total,
            "prefill_tokens_per_s": self.ceiling_prefill,
            "decode_bound": self.decode_bound,
            "prefill_bound": self.prefill_bound,
            "decode_intensity": self.decode_intensity,
            "compute_bound_batch": self.compute_bound_batch,
        }

    @property
    def decode_tokens_per_s_interval(self) -> Tuple[float, float]:
        """(lo, hi): the prediction interval of decode_tokens_per_s (its engine backend's cross-validated residuals,
        widened outside the device families and formats its corpus measured; engine_db ``prediction_interval``)."""
        return (self.decode_tokens_per_s_lo, self.decode_tokens_per_s_hi)

    @property
    def prefill_tokens_per_s_interval(self) -> Tuple[float, float]:
        """(lo, hi): the prediction interval of prefill_tokens_per_s (as decode_tokens_per_s_interval)."""
        return (self.prefill_tokens_per_s_lo, self.prefill_tokens_per_s_hi)

    def _breakdown_rows(self) -> List[BreakdownRow]:
        # the rows come from a second core estimate (made with them); the fields stay the first one's, so reading
        # the breakdown changes no field, read or not yet read
        if self._rows is None:
            if self._breakdown_from is not None:
                plan, batch, prompt, gen, context = self._breakdown_from
                self._rows = plan.estimate(batch, prompt, gen, True, context).breakdown_rows
                self._breakdown_from = None
            else:
                self._rows = self._core.breakdown_rows
        return self._rows

    @property
    def breakdown(self) -> pd.DataFrame:
        """One row per op and phase: phase, op, count, flops, bytes, intensity, seconds, bound, flops_per_s (the
        FLOP/s the op achieves, its height on a roofline) and compute (a linear layer's kernel format and unit,
        "int8 matrix": the roof it runs under)."""
        import pandas as pd

        return pd.DataFrame(self._breakdown_rows(), columns=_BREAKDOWN_COLUMNS)

    def to_dict(self) -> Dict[str, Any]:
        """Every field, ``memory``, ``fits``, ``ceilings`` and ``breakdown`` (a list of dicts): JSON-ready."""
        d: Dict[str, Any] = {f: getattr(self, f) for f in self._FIELDS}
        d["memory"] = dict(self.memory)
        d["fits"] = self.fits
        d["ceilings"] = dict(self.ceilings)
        d["breakdown"] = [dict(zip(_BREAKDOWN_COLUMNS, r)) for r in self._breakdown_rows()]
        return d

    def __repr__(self) -> str:
        return (f"<Estimate {self.model} {self.quant} on {self.device} ({self.engine}): "
                f"prefill {_with_interval(self.prefill_tokens_per_s, self.prefill_tokens_per_s_interval)} tok/s, "
                f"decode {_with_interval(self.decode_tokens_per_s, self.decode_tokens_per_s_interval)} tok/s, "
                f"TTFT {self.ttft_s * 1e3:.1f} ms, {'fits' if self.fits else 'does NOT fit'}>")

    def _repr_html_(self) -> str:
        from ._html import estimate_html

        return estimate_html(self)


_DEVICES: Dict[str, Device] = {}  # device name as given -> Device, while the database stays the same object
_DEVICES_DB: List[Any] = [None]
# (model, device, configuration) -> (EstimatePlan, core model, core device): keyed by the core objects' ids, which
# the entry keeps alive (both are immutable from Python), so wrappers of the same core object share a plan
_PLANS: Dict[Tuple[Any, ...], Tuple[_core.EstimatePlan, _core.Model, _core.Device]] = {}
_PLANS_MAX = 512
_PLANS_LOCK = threading.Lock()


def _device(d: DeviceLike) -> Device:
    """A Device from a name (looked up once per name: the database returns a copy per call) or a Device."""
    if isinstance(d, str):
        db = database()
        if _DEVICES_DB[0] is not db:
            _DEVICES.clear()
            _DEVICES_DB[0] = db
        hit = _DEVICES.get(d)
        if hit is None:
            hit = _lookup_device(d)
            if len(_DEVICES) < 4096:
                _DEVICES[d] = hit
        return hit
    return _lookup_device(d)


def _plan(m: Model, dev: Device, quant: str, kv_dtype: str, flash_attention: Optional[bool], engine: str,
          tensor_parallel: int, ubatch_tokens: float = 0, split_mode: str = "") -> _core.EstimatePlan:
    """The core's EstimatePlan for a configuration, built once and kept."""
    cm, cd = m._core, dev._core
    key = (id(cm), id(cd), quant, kv_dtype, flash_attention, engine, tensor_parallel, ubatch_tokens, split_mode)
    hit = _PLANS.get(key)  # one dict lookup: atomic, no lock on the hot path
    if hit is None:
        plan = _core.EstimatePlan(cm, cd, quant, kv_dtype, flash_attention, engine, tensor_parallel, ubatch_tokens,
                                  None, split_mode)
        with _PLANS_LOCK:  # eviction and insertion by one thread at a time: no KeyError from a shared eviction
            while len(_PLANS) >= _PLANS_MAX:
                _PLANS.pop(next(iter(_PLANS)), None)
            hit = _PLANS.setdefault(key, (plan, cm, cd))
    return hit[0]


def estimate(model: ModelLike, quant: str, device: DeviceLike, prompt_tokens: int = 512, gen_tokens: int = 128,
             batch: int = 1, kv_dtype: str = "f16", flash_attention: Optional[bool] = None, engine: str = "llama.cpp",
             tensor_parallel: int = 1, draft_model: Optional[ModelLike] = None, draft_quant: Optional[str] = None,
             draft_tokens: int = 0, acceptance: float = 0.0, context_tokens: int = 0,
             ubatch_tokens: Optional[int] = None, split_mode: Optional[str] = None) -> Estimate:
    """Estimate prefill and decode of ``batch`` sequences of ``prompt_tokens`` then ``gen_tokens`` tokens.

    ``device`` is a name or a Device (a calibrated one too). ``context_tokens`` are already in each sequence's KV
    cache before the prompt (llama-bench's ``-d``): the prompt attends them, decode starts after them. The prompt runs
    in micro-batches of ``ubatch_tokens`` (llama.cpp's ``-ub``; None or 0: the engine's default, the whole prompt for
    engines without micro-batches). Decode runs ``gen_tokens`` steps at contexts context+prompt+1 ...
    context+prompt+gen, summed in closed form. ``draft_model`` with ``draft_tokens`` (γ) and ``acceptance`` (α)
    turns on speculative decoding. ``flash_attention`` None runs what the engine runs when not told
    (``rp.engine(engine).backend(...).flash_attention_default``: llama-bench's ``-fa auto``, on where the backend has
    the kernels); True / False force it; the estimate's ``flash_attention`` says which ran. ``tensor_parallel`` is
    the number of devices one copy of the model is spread over, joined by the device's interconnect, and
    ``split_mode`` how (llama-bench's ``-sm``; None: the engine's default, the first of
    ``rp.engine(engine).backend(...).split_modes``): ``"layer"`` gives each device a range of whole layers and runs a
    micro-batch through them one after another (llama.cpp's default: about one device's speed, memory and KV cache
    split, a prompt's micro-batches overlapped as a pipeline), ``"tensor"`` splits every layer's weights and heads and
    all-reduces the partial sums (vLLM's and TensorRT-LLM's tensor parallelism, llama.cpp's ``-sm tensor``). The
    estimate's ``split_mode`` says which ran.
    """
    # the common call (names, plain numbers, the default micro-batch) passes every check below: tested by type alone
    if not (type(model) is str and type(device) is str and type(quant) is str and type(kv_dtype) is str
            and type(engine) is str and (flash_attention is None or type(flash_attention) is bool) and type(batch) in _REAL
            and type(prompt_tokens) in _REAL and type(gen_tokens) in _REAL and type(context_tokens) in _REAL
            and type(draft_tokens) in _REAL and type(acceptance) in _REAL and ubatch_tokens is None
            and type(tensor_parallel) is int and 1 <= tensor_parallel <= 1024 and split_mode is None):
        where = "estimate"
        _v.instance(model, (str, Model), "model", where, "a catalogue id or a Model")
        _v.instance(device, (str, Device, _core.Device), "device", where, "a device id or a Device")
        _v.text(quant, "quant", where)
        _v.text(kv_dtype, "kv_dtype", where)
        _v.text(engine, "engine", where)
        flash_attention = _v.optional_flag(flash_attention, "flash_attention", where)
        for name, value in (("batch", batch), ("prompt_tokens", prompt_tokens), ("gen_tokens", gen_tokens),
                            ("context_tokens", context_tokens), ("draft_tokens", draft_tokens),
                            ("acceptance", acceptance)):
            _v.number(value, name, where)
        _v.number(ubatch_tokens, "ubatch_tokens", where, allow_none=True)
        tensor_parallel = _v.whole(tensor_parallel, "tensor_parallel", where, 1, 1024)
        if split_mode is not None:
            _v.text(split_mode, "split_mode", where)
    sm = "" if split_mode is None else split_mode
    m = _lookup_model(model)
    dev = _device(device)
    ub = 0.0 if ubatch_tokens is None else ubatch_tokens
    if draft_model is None:  # a plan per configuration, kept: the estimate itself is O(1)
        plan = _plan(m, dev, quant, kv_dtype, flash_attention, engine, tensor_parallel, ub, sm)
        return Estimate(plan.estimate(batch, prompt_tokens, gen_tokens, False, context_tokens),
                        (plan, batch, prompt_tokens, gen_tokens, context_tokens))
    draft = _lookup_model(draft_model)._core
    return Estimate(_core.estimate(m._core, dev._core, quant, batch, prompt_tokens, gen_tokens, kv_dtype,
                                   flash_attention, engine, tensor_parallel, draft, draft_quant or "", draft_tokens,
                                   acceptance, context_tokens, ub, sm))


class FitReport:
    """What :func:`calibrate_from_measurements` fitted (the efficiency) and how well, before and after."""

    __slots__ = ("_core",)

    def __init__(self, core: _core.FitReport) -> None:
        self._core = core

    dram_bandwidth_fraction: CoreAttribute[float] = CoreAttribute("fitted fraction of the DRAM bandwidth")
    compute_fraction: CoreAttribute[float] = CoreAttribute("fitted fraction of the compute peaks")
    launch_overhead_s: CoreAttribute[float] = CoreAttribute("fitted launch overhead [s]")
    iterations: CoreAttribute[int] = CoreAttribute("iterations of the least-squares fit")
    labels: CoreAttribute[List[str]] = CoreAttribute("one label per measurement (model quant test)")
    measured: CoreAttribute[List[float]] = CoreAttribute("measured tokens/s per measurement")
    predicted_before: CoreAttribute[List[float]] = CoreAttribute("tokens/s the device predicted before the fit")
    predicted_after: CoreAttribute[List[float]] = CoreAttribute("tokens/s the calibrated device predicts")
    rms_relative_error_before: CoreAttribute[float] = CoreAttribute("RMS relative error before the fit")
    rms_relative_error_after: CoreAttribute[float] = CoreAttribute("RMS relative error after the fit")

    def __repr__(self) -> str:
        return (f"<FitReport {len(self.labels)} measurements: RMS relative error {self.rms_relative_error_before:.3g} "
                f"-> {self.rms_relative_error_after:.3g}>")


def _parse_test(test: str) -> Tuple[int, int]:
    """llama-bench's test names: ppN (prompt of N tokens), tgN (N generated tokens), ppN+tgM."""
    prompt = gen = 0
    for part in test.lower().split("+"):
        if part.startswith("pp") and part[2:].isdigit():
            prompt = int(part[2:])
        elif part.startswith("tg") and part[2:].isdigit():
            gen = int(part[2:])
        else:
            raise ValueError(f"test '{test}' is not in llama-bench's form: ppN, tgN or ppN+tgM")
    return prompt, gen


@overload
def calibrate_from_measurements(device: DeviceLike, measurements: Iterable[Mapping[str, Any]],
                                engine: str = ..., kv_dtype: str = ...,
                                return_report: Literal[False] = ..., *,
                                flash_attention: Optional[bool] = ...) -> Device: ...


@overload
def calibrate_from_measurements(device: DeviceLike, measurements: Iterable[Mapping[str, Any]],
                                engine: str = ..., kv_dtype: str = ..., *,
                                return_report: Literal[True],
                                flash_attention: Optional[bool] = ...) -> Tuple[Device, FitReport]: ...


@overload
def calibrate_from_measurements(device: DeviceLike, measurements: Iterable[Mapping[str, Any]],
                                engine: str = ..., kv_dtype: str = ...,
                                return_report: bool = ..., *,
                                flash_attention: Optional[bool] = ...) -> Union[Device, Tuple[Device, FitReport]]: ...


def calibrate_from_measurements(device: DeviceLike, measurements: Iterable[Mapping[str, Any]],
                                engine: str = "llama.cpp", kv_dtype: str = "f16",
                                return_report: bool = False, *,
                                flash_attention: Optional[bool] = None) -> Union[Device, Tuple[Device, FitReport]]:
    """Fit the device's efficiency (achievable DRAM fraction, compute fraction, launch overhead) to measured
    tokens/s by least squares in the core. Each measurement: {"model", "quant", "test" (pp512 / tg128) or
    "prompt_tokens"/"gen_tokens", "tokens_per_s", optional "batch"}; ``flash_attention``: whether the runs had it
    on (None: the engine's default, as llama-bench's -fa auto). Returns the calibrated Device (and the fit report
    with residuals when ``return_report``)."""
    _v.optional_flag(flash_attention, "flash_attention", "calibrate_from_measurements")
    def number(i: int, meas: Mapping[str, Any], key: str, default: Any = None) -> float:
        value = meas.get(key, default)
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ValueError(f"measurement {i}: field '{key}' must be a number, got {value!r}") from None

    points: List[Tuple[_core.Model, str, float, float, float, float, str]] = []
    prompt: float
    gen: float
    for i, meas in enumerate(measurements):
        missing = [k for k in ("model", "quant", "tokens_per_s") if k not in meas]
        if missing:
            raise ValueError(f"measurement {i} lacks {', '.join(missing)}; each needs model, quant, tokens_per_s and "
                             f"test (ppN/tgN) or prompt_tokens/gen_tokens")
        if "test" in meas:
            prompt, gen = _parse_test(str(meas["test"]))
        else:
            prompt, gen = number(i, meas, "prompt_tokens", 0), number(i, meas, "gen_tokens", 0)
        m = model(meas["model"])
        label = f"{m.id} {meas['quant']} {meas.get('test', f'p{prompt:g}+g{gen:g}')}"
        points.append((m._core, str(meas["quant"]), number(i, meas, "batch", 1), float(prompt), float(gen),
                       number(i, meas, "tokens_per_s"), label))
    dev, report = _core.calibrate_efficiency(_device(device)._core, points, engine, kv_dtype, flash_attention)
    return (Device(dev), FitReport(report)) if return_report else Device(dev)
