"""Serving: a model on a deployment of devices under a serving engine's continuous batching, at a load.

``rp.serve`` answers the fleet question, *how many tokens/s does this model serve on these GPUs, at what TTFT and
inter-token latency*; ``rp.serve_sweep`` evaluates many loads of one deployment in the core at once. Every number
comes from the core's serving model (``cpp/src/serving.cpp``, docs/serving.md).
"""
from __future__ import annotations

import itertools
import math
import threading
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple, Union

from . import _core
from . import _validate as _v
from ._device import Device, DeviceLike
from ._engine import engine as _engine
from ._fields import SERVING_FIELDS, ServingFields
from .inference import Model, ModelLike, _device, _lookup_model

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ServingEstimate", "serve", "serve_sweep", "parse_parallel", "AllReduceTime", "all_reduce_time"]

_BREAKDOWN_COLUMNS = ["phase", "op", "count", "flops", "bytes", "intensity", "seconds", "bound", "flops_per_s",
                      "compute"]
MAX_SWEEP_POINTS = 10_000_000
"""The most loads one serve_sweep evaluates (a row is ~40 numbers)."""


class AllReduceTime(NamedTuple):
    """One all-reduce as an engine runs it: ``seconds`` (its kernel's launch, latency and transfer), the pure
    roofline's ``ideal_seconds`` (the bytes over the links' datasheet bandwidth) and the ``way`` it takes
    ("one-shot" / "two-shot" custom kernels, "ring", or NCCL's protocol "LL" / "LL128" / "Simple")."""
    seconds: float
    ideal_seconds: float
    way: str


def all_reduce_time(device: DeviceLike, message_bytes: float, devices: int, *, engine: str = "vllm",
                    hidden: int = 0) -> AllReduceTime:
    """One tensor-parallel all-reduce of ``message_bytes`` per rank over ``devices`` ranks of ``device``, as
    ``engine`` runs it: its custom kernel within its workspace (vLLM / SGLang 8 MiB, TensorRT-LLM 8-16 MB), else
    NCCL's protocol of least modelled time over the fastest links joining that many devices, at their measured
    all-reduce bus bandwidth where hardware_db has one (``hidden``: the model's hidden size, for TensorRT-LLM's
    custom kernels, which take hidden sizes up to 8192). Computed by the core (plan.cpp all_reduce_ways)."""
    where = "all_reduce_time"
    _v.instance(device, (str, Device, _core.Device), "device", where, "a device id or a Device")
    n = _v.whole(devices, "devices", where, 2, 1024)
    size, h = _v.number(message_bytes, "message_bytes", where), _v.number(hidden, "hidden", where)
    assert size is not None and h is not None  # None is refused above
    d = _core.all_reduce_time(_engine(_v.text(engine, "engine", where))._core, _device(device)._core, n, size, h)
    return AllReduceTime(float(d["seconds"]), float(d["ideal_seconds"]), str(d["way"]))


def parse_parallel(text: str) -> _core.Parallelism:
    """TensorRT-LLM's notation: ``"TP4"``, ``"TP2,PP2"``, ``"DEP8"`` (attention data parallel with expert parallel
    over 8 devices), ``"TP8,EP8"``."""
    return _core.parse_parallelism(_v.text(text, "parallel", "parse_parallel"))


class ServingEstimate(ServingFields):
    """A serving estimate: its configuration (``model``, ``quant``, ``device``, ``engine``, ``kv_dtype``, ``parallel``
    in TensorRT-LLM's notation, ``mode``: offline / concurrency / rate, ``batch_limit``), its load and the numbers
    typed in :class:`rooflinepy._fields.ServingFields` (whole deployment for throughput, one device for memory).
    ``breakdown`` has the ops of one decode iteration and one mixed iteration at the running batch."""

    __slots__ = ("_core", "model", "quant", "device", "engine", "kv_dtype", "parallel", "mode", "batch_limit",
                 "prompt_tokens", "gen_tokens", "concurrency", "request_rate", "num_requests", "__dict__")

    def __init__(self, core: _core.ServingEstimate) -> None:
        self._core = core
        self.__dict__.update(zip(SERVING_FIELDS, core.values()))
        self.model: str = core.model
        self.quant: str = core.quant
        self.device: str = core.device
        self.engine: str = core.engine
        self.kv_dtype: str = core.kv_dtype
        self.parallel: str = core.parallel
        self.mode: str = core.mode
        self.batch_limit: str = core.batch_limit
        self.prompt_tokens: float = core.prompt_tokens
        self.gen_tokens: float = core.gen_tokens
        self.concurrency: float = core.concurrency
        self.request_rate: float = core.request_rate
        self.num_requests: float = core.num_requests

    @property
    def output_tokens_per_s_interval(self) -> Tuple[float, float]:
        """(lo, hi): the prediction interval of output_tokens_per_s (the engine's cross-validated residuals)."""
        return (self.output_tokens_per_s_lo, self.output_tokens_per_s_hi)

    @property
    def breakdown(self) -> "pd.DataFrame":
        """One row per op of a decode iteration and of a mixed iteration (phase), as Estimate.breakdown."""
        import pandas as pd

        return pd.DataFrame(self._core.breakdown_rows, columns=_BREAKDOWN_COLUMNS)

    def to_dict(self) -> Dict[str, Any]:
        """The configuration, the load, every field and the breakdown (a list of dicts): JSON-ready (inf stays
        float('inf'), which json writes as Infinity)."""
        d: Dict[str, Any] = {k: getattr(self, k) for k in ("model", "quant", "device", "engine", "kv_dtype", "parallel",
                                                            "mode", "batch_limit", "prompt_tokens", "gen_tokens",
                                                            "concurrency", "request_rate", "num_requests")}
        d.update({f: getattr(self, f) for f in SERVING_FIELDS})
        d["breakdown"] = [dict(zip(_BREAKDOWN_COLUMNS, r)) for r in self._core.breakdown_rows]
        return d

    def _load_text(self) -> str:
        if self.mode == "concurrency":
            return f"{self.concurrency:g} clients"
        if self.mode == "rate":
            return f"{self.request_rate:g} req/s"
        return "offline" + (f", {self.num_requests:g} requests" if self.num_requests > 0 else "")

    def __repr__(self) -> str:
        lo, hi = self.output_tokens_per_s_interval
        ttft = "inf" if math.isinf(self.ttft_s) else f"{self.ttft_s * 1e3:.0f} ms"
        return (f"<ServingEstimate {self.model} {self.quant} on {self.devices:g}x {self.device} {self.parallel} "
                f"({self.engine}, {self.prompt_tokens:g}/{self.gen_tokens:g} tokens, {self._load_text()}): "
                f"{self.output_tokens_per_s:.0f} ({lo:.0f}-{hi:.0f}) output tok/s, "
                f"{self.output_tokens_per_s_per_device:.0f} per device, TTFT {ttft}, ITL {self.itl_s * 1e3:.1f} ms, "
                f"batch {self.running_batch:.0f} (limit {self.max_running_batch:.0f}: {self.batch_limit})"
                f"{', SATURATED' if self.saturated else ''}>")

    def _repr_html_(self) -> str:
        import html

        rows = "".join(f"<tr><td>{html.escape(k)}</td><td>{html.escape(v)}</td></tr>" for k, v in [
            ("deployment", f"{self.devices:g} x {self.device}, {self.parallel}, {self.engine}"),
            ("model", f"{self.model} in {self.quant}, KV {self.kv_dtype}"),
            ("load", f"{self.prompt_tokens:g} prompt / {self.gen_tokens:g} output tokens, {self._load_text()}"),
            ("output tokens/s", f"{self.output_tokens_per_s:,.0f} ({self.output_tokens_per_s_lo:,.0f}-"
                                f"{self.output_tokens_per_s_hi:,.0f}); {self.output_tokens_per_s_per_device:,.0f} per device"),
            ("TTFT / ITL / E2E", f"{self.ttft_s * 1e3:,.1f} ms / {self.itl_s * 1e3:,.2f} ms / {self.e2e_s:,.2f} s"),
            ("running batch", f"{self.running_batch:,.0f} of {self.max_running_batch:,.0f} ({self.batch_limit})"),
            ("KV cache", f"{self.kv_capacity_tokens:,.0f} tokens, {self.memory_kv_cache / 1e9:,.1f} GB per device"),
            ("bounds", f"decode {self.decode_bound}, mixed {self.prefill_bound}"),
        ])
        return f"<table><caption>ServingEstimate</caption>{rows}</table>"


_PLANS: Dict[Tuple[Any, ...], Tuple[_core.ServingPlan, _core.Model, _core.Device]] = {}
_PLANS_MAX = 256
_PLANS_LOCK = threading.Lock()


def _parallelism(where: str, parallel: Optional[str], tensor_parallel: int, pipeline_parallel: int,
                 expert_parallel: int, attention_data_parallel: bool) -> _core.Parallelism:
    tp = _v.whole(tensor_parallel, "tensor_parallel", where, 1, 1024)
    pp = _v.whole(pipeline_parallel, "pipeline_parallel", where, 1, 1024)
    ep = _v.whole(expert_parallel, "expert_parallel", where, 1, 1024)
    adp = _v.flag(attention_data_parallel, "attention_data_parallel", where)
    if parallel is None:
        return _core.Parallelism(tp, pp, ep, adp)
    if (tp, pp, ep, adp) != (1, 1, 1, False):
        raise ValueError(f"{where}: give parallel={parallel!r} or tensor_parallel / pipeline_parallel / "
                         f"expert_parallel / attention_data_parallel, not both")
    return _core.parse_parallelism(_v.text(parallel, "parallel", where))


def _plan(m: Model, dev: Device, quant: str, engine: str, kv_dtype: str, par: _core.Parallelism, max_batch: float,
          max_num_tokens: float, fraction: float, mtp_tokens: float = 0.0,
          acceptance: Optional[float] = None) -> _core.ServingPlan:
    key = (id(m._core), id(dev._core), quant, engine, kv_dtype, par.tensor, par.pipeline, par.expert,
           par.attention_data, max_batch, max_num_tokens, fraction, mtp_tokens, acceptance)
    hit = _PLANS.get(key)
    if hit is None:
        plan = _core.ServingPlan(m._core, dev._core, quant, engine, kv_dtype, par, max_batch, max_num_tokens, fraction,
                                 None, mtp_tokens, math.nan if acceptance is None else acceptance)
        with _PLANS_LOCK:
            while len(_PLANS) >= _PLANS_MAX:
                _PLANS.pop(next(iter(_PLANS)), None)
            hit = _PLANS.setdefault(key, (plan, m._core, dev._core))
    return hit[0]


def _config(where: str, model: ModelLike, quant: str, device: DeviceLike, engine: str, parallel: Optional[str],
            tensor_parallel: int, pipeline_parallel: int, expert_parallel: int, attention_data_parallel: bool,
            max_batch: Optional[int], max_num_tokens: Optional[int], kv_dtype: Optional[str],
            gpu_memory_fraction: Optional[float], mtp_tokens: int = 0,
            acceptance: Optional[float] = None) -> _core.ServingPlan:
    _v.instance(model, (str, Model), "model", where, "a catalogue id or a Model")
    _v.instance(device, (str, Device, _core.Device), "device", where, "a device id or a Device")
    _v.text(quant, "quant", where)
    _v.text(engine, "engine", where)
    if kv_dtype is not None:
        _v.text(kv_dtype, "kv_dtype", where)
    par = _parallelism(where, parallel, tensor_parallel, pipeline_parallel, expert_parallel, attention_data_parallel)
    mb = 0 if max_batch is None else _v.whole(max_batch, "max_batch", where, 1, 1 << 20)
    mt = 0 if max_num_tokens is None else _v.whole(max_num_tokens, "max_num_tokens", where, 1, 1 << 24)
    frac = _v.number(gpu_memory_fraction, "gpu_memory_fraction", where, allow_none=True)
    if frac is not None and not 0 < frac <= 1:
        raise ValueError(f"{where}: gpu_memory_fraction must be within (0, 1], got {frac!r}")
    k = _v.whole(mtp_tokens, "mtp_tokens", where, 0, 16)
    a = _v.number(acceptance, "acceptance", where, allow_none=True)
    if k and a is None:
        raise ValueError(f"{where}: mtp_tokens={k} needs acceptance, the probability that a drafted token is accepted "
                         f"(DeepSeek-V3's technical report measured 0.85-0.90 for its MTP module's second token)")
    if a is not None and not 0 <= a <= 1:
        raise ValueError(f"{where}: acceptance must be within [0, 1], got {a!r}")
    if a is not None and not k:
        raise ValueError(f"{where}: acceptance={a!r} given without mtp_tokens (the tokens the MTP module drafts per "
                         f"iteration, 1-16)")
    return _plan(_lookup_model(model), _device(device), quant, engine, kv_dtype or "", par, float(mb), float(mt),
                 0.0 if frac is None else float(frac), float(k), a)


def _load(where: str, prompt_tokens: int, gen_tokens: int, concurrency: Optional[int], request_rate: Optional[float],
          num_requests: Optional[int]) -> Tuple[float, float, float, float, float]:
    p = _v.whole(prompt_tokens, "prompt_tokens", where, 1, 1 << 24)
    g = _v.whole(gen_tokens, "gen_tokens", where, 1, 1 << 24)
    c = 0 if concurrency is None else _v.whole(concurrency, "concurrency", where, 1, 10_000_000)
    r = _v.number(request_rate, "request_rate", where, allow_none=True)
    if r is not None and not (0 < r <= 1e9):
        raise ValueError(f"{where}: request_rate must be within (0, 1e9] requests per second, got {r!r}")
    n = 0 if num_requests is None else _v.whole(num_requests, "num_requests", where, 1, 1_000_000_000)
    if c and r is not None:
        raise ValueError(f"{where}: concurrency and request_rate are exclusive: give one (neither: offline max load)")
    if n and (c or r is not None):
        raise ValueError(f"{where}: num_requests makes an offline run finite; it does not apply with concurrency or "
                         f"request_rate")
    return float(p), float(g), float(c), 0.0 if r is None else float(r), float(n)


def serve(model: ModelLike, quant: str, device: DeviceLike, *, prompt_tokens: int, gen_tokens: int,
          engine: str = "vllm", parallel: Optional[str] = None, tensor_parallel: int = 1, pipeline_parallel: int = 1,
          expert_parallel: int = 1, attention_data_parallel: bool = False, concurrency: Optional[int] = None,
          request_rate: Optional[float] = None, num_requests: Optional[int] = None, max_batch: Optional[int] = None,
          max_num_tokens: Optional[int] = None, kv_dtype: Optional[str] = None,
          gpu_memory_fraction: Optional[float] = None, mtp_tokens: int = 0,
          acceptance: Optional[float] = None) -> ServingEstimate:
    """Serve ``model`` in ``quant`` on a deployment of ``device`` with a serving engine (``vllm``, ``trt-llm``,
    ``sglang``: continuous batching with their defaults from engine_db).

    The load: ``concurrency=N`` closed-loop clients, ``request_rate`` Poisson arrivals per second, or neither for
    offline max load (every request queued at once, as ``trtllm-bench throughput``); ``num_requests`` makes an offline
    run finite (ramp-up and drain counted). ``parallel`` takes TensorRT-LLM's notation (``"TP4"``, ``"TP2,PP2"``,
    ``"DEP8"``) instead of the four parallelism arguments. ``max_batch``, ``max_num_tokens``, ``kv_dtype`` and
    ``gpu_memory_fraction`` override the engine's defaults (None: the engine's; TensorRT-LLM sizes max_batch and
    max_num_tokens as trtllm-bench does).

    ``mtp_tokens=k`` with ``acceptance=α`` turns on MTP speculative decoding for a model with a multi-token-prediction
    module (``deepseek-r1`` / ``deepseek-v3``): each decode iteration the module drafts k tokens per sequence, the
    target verifies them with its own token in one pass, and a sequence gains (1 − α^(k+1)) / (1 − α) tokens
    (``tokens_per_decode_iteration``); the module's weights and KV cache take memory.
    """
    where = "serve"
    plan = _config(where, model, quant, device, engine, parallel, tensor_parallel, pipeline_parallel, expert_parallel,
                   attention_data_parallel, max_batch, max_num_tokens, kv_dtype, gpu_memory_fraction, mtp_tokens,
                   acceptance)
    p, g, c, r, n = _load(where, prompt_tokens, gen_tokens, concurrency, request_rate, num_requests)
    return ServingEstimate(plan.estimate(p, g, c, r, n, True))


def _axis(values: Union[None, float, Iterable[Any]], name: str) -> List[Any]:
    if values is None:
        return [None]
    if isinstance(values, (str, bytes)):
        raise TypeError(f"serve_sweep: {name} must be a number or a list of numbers, got {values!r}")
    if isinstance(values, Iterable):
        out = list(values)
        if not out:
            raise ValueError(f"serve_sweep: {name} is an empty list")
        return out
    return [values]


def serve_sweep(model: ModelLike, quant: str, device: DeviceLike, *, prompt_tokens: Union[int, Sequence[int]],
                gen_tokens: Union[int, Sequence[int]], concurrency: Union[None, int, Sequence[int]] = None,
                request_rate: Union[None, float, Sequence[float]] = None, engine: str = "vllm",
                parallel: Optional[str] = None, tensor_parallel: int = 1, pipeline_parallel: int = 1,
                expert_parallel: int = 1, attention_data_parallel: bool = False, max_batch: Optional[int] = None,
                max_num_tokens: Optional[int] = None, kv_dtype: Optional[str] = None,
                gpu_memory_fraction: Optional[float] = None, mtp_tokens: int = 0,
                acceptance: Optional[float] = None) -> "pd.DataFrame":
    """Every combination of the load axes (prompt_tokens × gen_tokens × concurrency or request_rate) on one
    deployment, evaluated in the core in one call: a DataFrame with the load columns and every serving field.
    A combination the deployment cannot serve (a request that does not fit) raises, naming it."""
    import pandas as pd

    where = "serve_sweep"
    plan = _config(where, model, quant, device, engine, parallel, tensor_parallel, pipeline_parallel, expert_parallel,
                   attention_data_parallel, max_batch, max_num_tokens, kv_dtype, gpu_memory_fraction, mtp_tokens,
                   acceptance)
    axes = [_axis(prompt_tokens, "prompt_tokens"), _axis(gen_tokens, "gen_tokens"),
            _axis(concurrency, "concurrency"), _axis(request_rate, "request_rate")]
    if concurrency is not None and request_rate is not None:
        raise ValueError(f"{where}: concurrency and request_rate are exclusive")
    total = math.prod(len(a) for a in axes)
    if total > MAX_SWEEP_POINTS:
        raise ValueError(f"{where}: {total} loads exceed MAX_SWEEP_POINTS ({MAX_SWEEP_POINTS}); split the sweep")
    loads = [_load(where, p, g, c, r, None) for p, g, c, r in itertools.product(*axes)]
    rows = plan.rows(loads)
    df = pd.DataFrame(rows, columns=list(SERVING_FIELDS))
    df.insert(0, "prompt_tokens", [x[0] for x in loads])
    df.insert(1, "gen_tokens", [x[1] for x in loads])
    df.insert(2, "concurrency", [x[2] for x in loads])
    df.insert(3, "request_rate", [x[3] for x in loads])
    return df
