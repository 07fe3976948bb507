"""Design-space sweeps and the inverse questions: every number comes from the C++ core.

``sweep`` estimates the product of models × quantizations × devices × engines × KV formats × flash attention ×
tensor parallel × prompt × generated tokens × batch (or an explicit list of points) in the core, on every core, and
returns one DataFrame row per point. ``max_batch`` and ``cheapest`` answer inverse questions by bisection in the
core; ``pareto`` keeps the non-dominated rows of a sweep.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import (TYPE_CHECKING, Any, Callable, Dict, Hashable, Iterable, Iterator, List, Mapping, Optional, Sequence,
                    Tuple, TypeVar)

from . import _core
from . import _validate as _v
from ._cli_common import add_flash_attn, flash_attn_axis, json_text
from ._device import Device
from .inference import Model, _device, _plan
from .inference import model as _model

if TYPE_CHECKING:
    import argparse

    import numpy as np
    import numpy.typing as npt
    import pandas as pd

T = TypeVar("T")

__all__ = ["sweep", "sweep_chunks", "StreamedSweep", "max_batch", "cheapest", "pareto", "BatchAnswer",
           "MAX_POINTS_IN_MEMORY", "CHUNK_ROWS", "MAX_THREADS"]

MAX_POINTS_IN_MEMORY = 5_000_000
"""The most points ``rp.sweep`` returns as one DataFrame (about 280 bytes a row: 1.4 GB). A larger sweep is refused
with a pointer to streaming: ``output=`` writes it to disk in chunks, ``rp.sweep_chunks`` yields the chunks."""
CHUNK_ROWS = 1_000_000
"""Rows per chunk of a streamed sweep (``output=`` or ``rp.sweep_chunks``): about 280 MB of columns at a time."""
MAX_THREADS = 1024
"""The most worker threads a sweep takes."""
MAX_AXIS_VALUES = 1_000_000
"""The most values one axis of the command line's ranges (``-b 1-256x2``) may expand to."""

# Column order of a sweep's DataFrame: the configuration, then the estimate's fields in rp.Estimate's order.
_CONFIG = ["model", "quant", "device", "engine", "kv_dtype", "flash_attention", "tensor_parallel", "split_mode",
           "ubatch_tokens"]
_ORDER = [name for name, _type, _unit, _meaning, config in _core.estimate_fields() if not config]


def _list(value: Any, what: str) -> List[Any]:
    """A scalar or an iterable of values as a non-empty list."""
    if isinstance(value, (str, bytes, bool)) or not isinstance(value, Iterable):
        values = [value]
    else:
        values = list(value)
    if not values:
        raise ValueError(f"sweep: '{what}' must list at least one value")
    return values


def _unique(values: List[T], key: Callable[[T], Hashable]) -> List[T]:
    """The values without repeats (by key), first occurrence kept."""
    seen: set[Hashable] = set()
    out: List[T] = []
    for v in values:
        k = key(v)
        if k not in seen:
            seen.add(k)
            out.append(v)
    return out


def _numbers(values: List[Any], what: str) -> List[float]:
    out: List[float] = []
    for v in values:
        try:
            out.append(float(v))
        except (TypeError, ValueError):
            raise ValueError(f"sweep: '{what}' values must be numbers, got {v!r}") from None
    return out


def _tp(t: Any) -> int:
    """A tensor-parallel degree: a whole number within [1, 1024]."""
    try:
        ok = not isinstance(t, bool) and float(t) == int(t) and 1 <= int(t) <= 1024
    except (TypeError, ValueError, OverflowError):
        ok = False
    if not ok:
        raise ValueError(f"tensor_parallel must be a whole number within [1, 1024], got {t!r}")
    return int(t)


def _typed(v: Any, types: Any, what: str, allowed: str) -> Any:
    return _v.instance(v, types, f"'{what}' values", "sweep", allowed)


def _threads(threads: Any) -> int:
    """The core's thread argument: 0 for None (every core), else a whole number within [1, MAX_THREADS]."""
    if threads is None:
        return 0
    if isinstance(threads, bool) or not isinstance(threads, int):
        raise TypeError(f"sweep: threads must be a whole number within [1, {MAX_THREADS}] or None, got {threads!r}")
    if not 1 <= threads <= MAX_THREADS:
        raise ValueError(f"sweep: threads must be within [1, {MAX_THREADS}] (or None for every core), got {threads}")
    return threads


def _flag(v: Any, what: str) -> int:
    """A yes/no axis value as the core's 0/1: True/False or 1/0 (a points table's column); None as -1, the
    engine's default (flash attention)."""
    return -1 if v is None else int(_v.flag(v, f"'{what}' values", "sweep", ints=True,
                                            allowed="True, False or None (the engine's default)"))


def _split_name(v: Any, where: str) -> str:
    """A split_mode value as the core takes it: None as "", the engine's default; else its text (the core names the
    splits an engine allows)."""
    return "" if v is None else _v.text(v, "split_mode", where)


def _sweep_split(v: Any) -> str:
    """A sweep's split_mode value: a points table's missing value (NaN) as None, then _split_name."""
    return _split_name(None if isinstance(v, float) and math.isnan(v) else v, "sweep")


def _engine_name(name: str) -> str:
    for e in _core.engine_names():
        if e.lower() == str(name).lower():
            return e
    return str(name)  # the core names the allowed ones


class _Axes:
    """Names resolved into core objects, each axis without duplicates (first occurrence kept)."""

    models: List[Model]
    quants: List[str]
    devices: List[Device]
    engines: List[str]
    kv_dtypes: List[str]
    flash: List[int]
    tps: List[int]

    def __init__(self, models: Any, quants: Any, devices: Any, engine: Any, kv_dtype: Any, flash_attention: Any,
                 tensor_parallel: Any) -> None:
        self.models = _unique([_model(_typed(m, (str, Model), "models", "model ids or Models"))
                               for m in _list(models, "models")], lambda m: m.id)
        self.quants = _unique([_typed(q, str, "quants", "names") for q in _list(quants, "quants")], lambda q: q)
        self.devices = _unique([_device(_typed(d, (str, Device), "devices", "device ids or Devices"))
                                for d in _list(devices, "devices")], lambda d: d.id)
        self.engines = _unique([_engine_name(_typed(e, str, "engine", "names")) for e in _list(engine, "engine")],
                               lambda e: e)
        self.kv_dtypes = _unique([_typed(k, str, "kv_dtype", "names") for k in _list(kv_dtype, "kv_dtype")], lambda k: k)
        self.flash = _unique([_flag(f, "flash_attention") for f in _list(flash_attention, "flash_attention")], lambda f: f)
        tps = [_tp(t) for t in _list(tensor_parallel, "tensor_parallel")]
        self.tps = _unique(tps, lambda t: t)

    @classmethod
    def resolved(cls, models: List[Model], quants: List[str], devices: List[Device], engines: List[str],
                 kv_dtypes: List[str], flash: List[int], tps: List[int]) -> _Axes:
        """Axes from already resolved, distinct values (a point sweep's)."""
        axes = cls.__new__(cls)
        axes.models, axes.quants, axes.devices = models, quants, devices
        axes.engines, axes.kv_dtypes, axes.flash, axes.tps = engines, kv_dtypes, flash, tps
        return axes

    def core_args(self) -> Tuple[List[_core.Model], List[str], List[_core.Device], List[str], List[str], List[int],
                                 List[int]]:
        return ([m._core for m in self.models], self.quants, [d._core for d in self.devices], self.engines,
                self.kv_dtypes, self.flash, self.tps)

    def categories(self) -> Dict[str, List[str]]:
        return {"model": [m.id for m in self.models], "quant": self.quants, "device": [d.id for d in self.devices],
                "engine": self.engines, "kv_dtype": self.kv_dtypes}


def _frame(table: Dict[str, Any], axes: _Axes) -> pd.DataFrame:
    """The core's columns as a DataFrame: numeric columns are the core's buffers (no copy), names categorical."""
    import pandas as pd

    cats = dict(axes.categories(), split_mode=list(_core.split_mode_names()))
    bounds = list(_core.phase_bound_names())
    cols: Dict[str, Any] = {}
    for name in _CONFIG:
        cols[name] = pd.Categorical.from_codes(table[name], categories=cats[name]) if name in cats else table[name]
    for name in _ORDER:
        if name in ("prefill_bound", "decode_bound"):
            cols[name] = pd.Categorical.from_codes(table[name], categories=bounds)
        else:
            cols[name] = table[name]
    index = pd.Index(table["point"], name="point") if "point" in table and len(table["point"]) else None
    df = pd.DataFrame(cols, index=index, copy=False)
    df.attrs["skipped"] = list(table["skipped"])
    df.attrs["plans"] = int(table["plans"])
    return df


def sweep(models: Any = None, quants: Any = None, devices: Any = None, batch: Any = 1, prompt_tokens: Any = 512,
          gen_tokens: Any = 128, kv_dtype: Any = "f16", flash_attention: Any = None, engine: Any = "llama.cpp",
          tensor_parallel: Any = 1, *, context_tokens: Any = 0, ubatch_tokens: Any = None, points: Any = None,
          threads: Optional[int] = None, skip_invalid: bool = False, output: Any = None,
          chunk_rows: int = CHUNK_ROWS, split_mode: Any = None) -> Any:
    """Estimate every combination of the arguments (each a value or a list) in the core; one row per point.

    Rows are ordered as nested loops over model, quant, device, engine, kv_dtype, flash_attention,
    tensor_parallel, split_mode, ubatch_tokens, context_tokens, prompt_tokens, gen_tokens and batch (the last
    fastest). ``context_tokens``: tokens already cached before each prompt (llama-bench's ``-d``); ``ubatch_tokens``:
    the prompt micro-batch (llama.cpp's ``-ub``; None: the engine's); ``tensor_parallel``: devices per copy of the
    model, split as ``split_mode`` says (as in :func:`estimate`: ``"layer"``, ``"tensor"``, or None for each engine's
    default, its first ``split_modes``: llama.cpp by layers, the serving engines by tensor parallelism; a list
    compares them), the split that ran in the ``split_mode`` column ("none" on one device). Columns: the configuration
    (categorical), then every field of ``rp.estimate`` (``memory_*`` for the memory dict, ``fits``, the ceilings).
    A row equals ``rp.estimate`` of that point exactly. Numeric columns are the core's buffers, not copies.

    ``points`` instead of the product: a DataFrame or a list of dicts with columns model, quant, device, batch,
    prompt_tokens, gen_tokens and optionally kv_dtype, flash_attention, engine, tensor_parallel, split_mode,
    context_tokens, ubatch_tokens (the other arguments are their defaults, each one value); rows keep the points'
    order and the index is each point's position.

    ``threads``: worker threads (default every core, at most MAX_THREADS); the values do not depend on it.
    ``skip_invalid``: leave out configurations the core cannot estimate (tensor_parallel not dividing the heads, no
    interconnect, ...) and list them in ``df.attrs["skipped"]`` instead of raising the first one's error.

    At most MAX_POINTS_IN_MEMORY points come back as a DataFrame. ``output``: stream the sweep to disk instead, in
    chunks of ``chunk_rows`` rows, in memory bounded by one chunk whatever the number of points: a ``.parquet``
    file (needs pyarrow: ``pip install 'rooflinepy[parquet]'``), a ``.csv`` file, or a folder (a path ending in
    ``/`` or an existing folder) of ``part-00000.parquet`` ... files; it returns a :class:`StreamedSweep`.
    """
    grid = _Grid(models, quants, devices, batch, prompt_tokens, gen_tokens, kv_dtype, flash_attention, engine,
                 tensor_parallel, context_tokens, ubatch_tokens, points, split_mode)
    threads_arg = _threads(threads)
    rows = _chunk_rows(chunk_rows)
    if output is not None:
        return _write_stream(grid.chunks(rows, threads_arg, bool(skip_invalid)), output)
    if grid.points > MAX_POINTS_IN_MEMORY:
        raise ValueError(f"sweep: {grid.points:,} points are more than MAX_POINTS_IN_MEMORY ({MAX_POINTS_IN_MEMORY:,}, "
                         f"about 1.4 GB as one DataFrame); stream them instead: "
                         f"rp.sweep(..., output='sweep.parquet') (or .csv, or a folder/), or iterate "
                         f"rp.sweep_chunks(...)")
    return grid.frame(threads_arg, bool(skip_invalid))


def sweep_chunks(models: Any = None, quants: Any = None, devices: Any = None, batch: Any = 1,
                 prompt_tokens: Any = 512, gen_tokens: Any = 128, kv_dtype: Any = "f16", flash_attention: Any = None,
                 engine: Any = "llama.cpp", tensor_parallel: Any = 1, *, context_tokens: Any = 0,
                 ubatch_tokens: Any = None, points: Any = None, threads: Optional[int] = None,
                 skip_invalid: bool = False, chunk_rows: int = CHUNK_ROWS,
                 split_mode: Any = None) -> Iterator[pd.DataFrame]:
    """The rows of ``rp.sweep`` (same arguments) as DataFrames of at most ``chunk_rows`` rows, in the same order,
    estimated one chunk at a time: any number of points in memory bounded by one chunk. Each chunk's categorical
    columns have the categories of the whole sweep; ``attrs["skipped"]`` lists the chunk's skipped configurations."""
    grid = _Grid(models, quants, devices, batch, prompt_tokens, gen_tokens, kv_dtype, flash_attention, engine,
                 tensor_parallel, context_tokens, ubatch_tokens, points, split_mode)
    return grid.chunks(_chunk_rows(chunk_rows), _threads(threads), bool(skip_invalid))


def _chunk_rows(rows: Any) -> int:
    if isinstance(rows, bool) or not isinstance(rows, int) or not 1 <= rows <= MAX_POINTS_IN_MEMORY:
        raise ValueError(f"sweep: chunk_rows must be a whole number within [1, {MAX_POINTS_IN_MEMORY:,}], got {rows!r}")
    return rows


class _Grid:
    """A sweep's arguments checked once: the axes of the product (or the points), the number of points, and the
    core calls that estimate them whole or in chunks."""

    def __init__(self, models: Any, quants: Any, devices: Any, batch: Any, prompt_tokens: Any, gen_tokens: Any,
                 kv_dtype: Any, flash_attention: Any, engine: Any, tensor_parallel: Any, context_tokens: Any,
                 ubatch_tokens: Any, points: Any, split_mode: Any = None) -> None:
        self.point_frame: Any = None
        self.s = [_sweep_split(x) for x in _list(split_mode, "split_mode")]
        if points is not None:
            if len(self.s) != 1:
                raise ValueError("sweep: with points=, split_mode is one value (the default of the points' split_mode "
                                 f"column), got {split_mode!r}; give each point its split_mode instead")
            self.defaults = (kv_dtype, flash_attention, engine, tensor_parallel, context_tokens, ubatch_tokens,
                             self.s[0])
            import pandas as pd

            self.point_frame = points if isinstance(points, pd.DataFrame) else pd.DataFrame(list(points))
            self.points = len(self.point_frame)
            return
        for name, value in (("models", models), ("quants", quants), ("devices", devices)):
            if value is None:
                raise ValueError(f"sweep: '{name}' is required (or pass points=)")
        self.axes = _Axes(models, quants, devices, engine, kv_dtype, flash_attention, tensor_parallel)
        self.b = _numbers(_list(batch, "batch"), "batch")
        self.p = _numbers(_list(prompt_tokens, "prompt_tokens"), "prompt_tokens")
        self.g = _numbers(_list(gen_tokens, "gen_tokens"), "gen_tokens")
        self.c = _numbers(_list(context_tokens, "context_tokens"), "context_tokens")
        self.u = _numbers(_list(0 if ubatch_tokens is None else ubatch_tokens, "ubatch_tokens"), "ubatch_tokens")
        self.points = math.prod(len(v) for v in self._lists())

    def _lists(self) -> List[List[Any]]:
        """The axes in row order (the last fastest)."""
        a = self.axes
        return [a.models, a.quants, a.devices, a.engines, a.kv_dtypes, a.flash, a.tps, self.s, self.u, self.c, self.p,
                self.g, self.b]

    def _call(self, lists: List[List[Any]], threads: int, skip: bool) -> pd.DataFrame:
        models, quants, devices, engines, kvs, flash, tps, s, u, c, p, g, b = lists
        axes = _Axes.resolved(models, quants, devices, engines, kvs, flash, tps)
        table = _core.sweep(*axes.core_args(), b, p, g, threads, skip, c, u, s)
        return _frame(table, axes)

    def frame(self, threads: int, skip: bool) -> pd.DataFrame:
        if self.point_frame is not None:
            return _sweep_points(self.point_frame, *self.defaults, threads, skip)
        return self._call(self._lists(), threads, skip)

    def chunks(self, rows: int, threads: int, skip: bool) -> Iterator[pd.DataFrame]:
        if self.point_frame is not None:
            for start in range(0, max(self.points, 1), rows):
                df = _sweep_points(self.point_frame.iloc[start:start + rows], *self.defaults, threads, skip)
                if df.index.name is not None:
                    df.index = df.index + start  # each point's position in the whole list
                yield df
            return
        lists = self._lists()
        full = self.axes.categories()
        # the outer axes taken one value at a time until what is left fits a chunk; axis k sliced into runs
        k, inner = len(lists), 1
        while k > 0 and inner * len(lists[k - 1]) <= rows:
            k -= 1
            inner *= len(lists[k])
        # lists[k:] multiply to inner <= rows: axis k - 1 (if any) is sliced into runs of rows // inner values
        if k == 0:
            yield self._relabel(self._call(lists, threads, skip), full)
            return
        split = k - 1
        run = max(1, rows // inner)
        for outer in itertools.product(*[range(len(v)) for v in lists[:split]]):
            for start in range(0, len(lists[split]), run):
                sub = [[lists[i][j]] for i, j in enumerate(outer)] + [lists[split][start:start + run]] + lists[split + 1:]
                yield self._relabel(self._call(sub, threads, skip), full)

    @staticmethod
    def _relabel(df: pd.DataFrame, full: Dict[str, List[str]]) -> pd.DataFrame:
        """A chunk's categorical columns recoded onto the whole sweep's categories (the same in every chunk)."""
        import numpy as np
        import pandas as pd

        for name, cats in full.items():
            col = df[name]
            where = {c: i for i, c in enumerate(cats)}
            mapping = np.asarray([where[c] for c in col.cat.categories], dtype=np.int32)
            df[name] = pd.Categorical.from_codes(mapping[col.cat.codes.to_numpy()], categories=cats)
        return df


@dataclass
class StreamedSweep:
    """What ``rp.sweep(..., output=...)`` wrote: the path, its format, the rows and chunks written, the
    configurations skipped (``skip_invalid``) and the largest chunk held in memory."""

    path: str
    format: str
    rows: int
    chunks: int
    skipped: List[str] = field(default_factory=list)
    largest_chunk_rows: int = 0


def _write_stream(chunks: Iterator[pd.DataFrame], output: Any) -> StreamedSweep:
    """Write the chunks to ``output`` (.parquet, .csv or a folder of parquet parts), one chunk in memory at a time."""
    import os

    path = _v.path(output, "output", "sweep")
    lower = path.lower()
    folder = path.endswith(("/", os.sep)) or os.path.isdir(path)
    kind = "parquet-folder" if folder else "parquet" if lower.endswith((".parquet", ".pq")) else \
        "csv" if lower.endswith(".csv") else ""
    if not kind:
        raise ValueError(f"sweep: output '{path}' must end in .parquet, .csv or '/' (a folder of parquet parts)")
    if kind != "csv":
        try:
            import pyarrow
            import pyarrow.parquet as pq
        except ImportError:
            raise ValueError(f"sweep: writing '{path}' as parquet needs pyarrow (pip install 'rooflinepy[parquet]'); or "
                             f"write CSV instead: output='{path.rstrip('/').rsplit('.', 1)[0]}.csv'") from None
    result = StreamedSweep(path, kind, 0, 0)
    writer: Any = None
    try:
        if folder:
            os.makedirs(path, exist_ok=True)
        for df in chunks:
            index = df.index.name is not None
            if kind == "csv":
                df.to_csv(path, mode="w" if result.chunks == 0 else "a", header=result.chunks == 0, index=index)
            else:
                table = pyarrow.Table.from_pandas(df, preserve_index=index)
                if folder:
                    pq.write_table(table, os.path.join(path, f"part-{result.chunks:05d}.parquet"))
                else:
                    if writer is None:
                        writer = pq.ParquetWriter(path, table.schema)
                    writer.write_table(table)
            result.rows += len(df)
            result.chunks += 1
            result.largest_chunk_rows = max(result.largest_chunk_rows, len(df))
            result.skipped += [x for x in df.attrs.get("skipped", []) if x not in result.skipped]
    except OSError as e:
        raise ValueError(f"sweep: cannot write output '{path}': {e.strerror or e}") from None
    finally:
        if writer is not None:
            try:
                writer.close()
            except OSError as e:
                raise ValueError(f"sweep: cannot write output '{path}': {e.strerror or e}") from None
    return result


_NONE: Any = object()  # _each_once's "not computed yet"


def _each_once(fn: Callable[[Any], T], values: List[Any]) -> List[T]:
    """[fn(v) for v in values], fn called once per distinct value (by type and value; unhashable values each time):
    a points table repeats a handful of models, devices and engines over many rows. The first bad value raises,
    as the plain comprehension would."""
    memo: Dict[Tuple[type, Any], T] = {}
    out: List[T] = []
    for v in values:
        try:
            key = (type(v), v)
            hit = memo.get(key, _NONE)
        except TypeError:  # unhashable
            out.append(fn(v))
            continue
        if hit is _NONE:
            hit = memo[key] = fn(v)
        out.append(hit)
    return out


def _sweep_points(points: Any, kv_dtype: Any, flash_attention: Any, engine: Any, tensor_parallel: Any,
                  context_tokens: Any, ubatch_tokens: Any, split_mode: str, threads: int,
                  skip_invalid: bool) -> pd.DataFrame:
    import numpy as np
    import pandas as pd

    df = points if isinstance(points, pd.DataFrame) else pd.DataFrame(list(points))
    missing = [c for c in ("model", "quant", "device", "batch", "prompt_tokens", "gen_tokens") if c not in df.columns]
    if missing:
        raise ValueError(f"sweep points: missing column(s) {', '.join(missing)}; each point needs model, quant, device, "
                         f"batch, prompt_tokens, gen_tokens (and optionally kv_dtype, flash_attention, engine, "
                         f"tensor_parallel, split_mode, context_tokens, ubatch_tokens)")
    n = len(df)

    def column(name: str, default: Any) -> List[Any]:
        values: List[Any] = df[name].tolist() if name in df.columns else [default] * n
        return values

    raw = {"model": column("model", None), "quant": [str(q) for q in column("quant", None)],
           "device": column("device", None), "engine": _each_once(_engine_name, column("engine", engine)),
           "kv_dtype": [str(k) for k in column("kv_dtype", kv_dtype)],
           "flash": _each_once(lambda f: _flag(f, "flash_attention"), column("flash_attention", flash_attention)),
           "tp": column("tensor_parallel", tensor_parallel),
           "ubatch": [0.0 if x is None else float(x) for x in column("ubatch_tokens", ubatch_tokens)],
           "split": _each_once(_sweep_split, column("split_mode", split_mode)),
           "context": column("context_tokens", context_tokens)}
    # distinct values per axis, and each point's index into them
    def codes(values: List[T]) -> Tuple[List[T], List[int]]:
        uniq: Dict[T, int] = {}
        out = [uniq.setdefault(v, len(uniq)) for v in values]
        return list(uniq), out

    def object_codes(values: List[Any], resolve: Callable[[Any], Any]) -> Tuple[List[Any], List[int]]:
        """Models and devices: distinct by id (the first object of each id kept) and each value's index."""
        objs: Dict[str, Any] = {}
        ids: List[str] = []
        def with_id(v: Any) -> Tuple[Any, str]:
            o = resolve(v)
            return o, o.id

        for o, oid in _each_once(with_id, values):
            objs.setdefault(oid, o)
            ids.append(oid)
        return list(objs.values()), codes(ids)[1]

    model_objs, model_codes = object_codes(raw["model"], _model)
    device_objs, device_codes = object_codes(raw["device"], _device)
    quants, quant_codes = codes(raw["quant"])
    engines, engine_codes = codes(raw["engine"])
    kvs, kv_codes = codes(raw["kv_dtype"])
    flashes, flash_codes = codes(raw["flash"])
    tps, tp_codes = codes(_each_once(_tp, raw["tp"]))
    ubatches, ubatch_codes = codes(raw["ubatch"])
    splits, split_codes = codes(raw["split"])
    def u32(v: List[int]) -> npt.NDArray[np.uint32]:
        return np.asarray(v, dtype=np.uint32)

    def f64(name: str) -> npt.NDArray[np.float64]:
        return np.asarray(pd.to_numeric(df[name], errors="raise"), dtype=np.float64)

    table = _core.sweep_points([m._core for m in model_objs], quants, [d._core for d in device_objs], engines, kvs,
                               flashes, tps,
                               u32(model_codes), u32(quant_codes), u32(device_codes), u32(engine_codes),
                               u32(kv_codes), u32(flash_codes), u32(tp_codes), f64("batch"), f64("prompt_tokens"),
                               f64("gen_tokens"), threads, bool(skip_invalid), ubatches, u32(ubatch_codes),
                               np.asarray(_numbers(raw["context"], "context_tokens"), dtype=np.float64), splits,
                               u32(split_codes))

    axes = _Axes.resolved(model_objs, quants, device_objs, engines, kvs, flashes, tps)
    return _frame(table, axes)


# ---- inverse questions ----------------------------------------------------------------------------------------
@dataclass
class BatchAnswer:
    """The answer of ``max_batch``: ``feasible`` False (and ``batch`` 0) when no batch meets the targets, with
    ``reason`` saying why; ``limit`` is what stops a larger batch ("memory", "tpot", "ttft"). ``at`` is the
    estimate at the answer (at batch 1 when infeasible) and ``beyond`` at one batch more, as dicts of a sweep row's
    columns."""

    feasible: bool
    batch: int
    limit: str
    reason: str
    tpot_ms: float
    ttft_ms: float
    at: Dict[str, Any] = field(repr=False)
    beyond: Dict[str, Any] = field(repr=False)
    evaluations: int = 0

    def __bool__(self) -> bool:
        return self.feasible


def _ms(value: Optional[float], what: str) -> float:
    if value is None:
        return 0.0
    v = float(value)
    if not math.isfinite(v) or v <= 0:
        raise ValueError(f"{what} must be a number of milliseconds > 0 (or None for no target), got {value!r}")
    return v / 1e3


def _answer(d: Mapping[str, Any]) -> BatchAnswer:
    at = dict(d["at"])
    return BatchAnswer(feasible=bool(d["feasible"]), batch=int(d["batch"]), limit=str(d["limit"]),
                       reason=str(d["reason"]), tpot_ms=at["tpot_s"] * 1e3,
                       ttft_ms=at["ttft_s"] * 1e3, at=at, beyond=dict(d["beyond"]), evaluations=int(d["evaluations"]))


def max_batch(model: Any, quant: str, device: Any, tpot_ms: Optional[float] = None, prompt_tokens: int = 512,
              gen_tokens: int = 128, ttft_ms: Optional[float] = None, kv_dtype: str = "f16",
              flash_attention: Optional[bool] = None, engine: str = "llama.cpp", tensor_parallel: int = 1,
              split_mode: Optional[str] = None) -> BatchAnswer:
    """The largest batch that fits in memory and meets the time-per-output-token target ``tpot_ms`` (decode time /
    generated tokens, per sequence) and, if given, the time-to-first-token target ``ttft_ms``. With no target: the
    largest batch that fits. Bisection in the core (memory and time per token grow with the batch), verified at the
    answer and one batch beyond: the answer meets the targets, answer + 1 does not. The model has steps in the batch
    (an engine's switch from mat-vec to tiled kernels, row and dequantization tiles); past such a step a larger batch
    may meet the target again, so the answer is a boundary, not always the global largest. Never raises for an unmet
    target: ``feasible`` is False and ``reason`` says why. ``tensor_parallel`` devices split the model as
    ``split_mode`` says (as in :func:`estimate`; None: the engine's default; a serving engine's deployment is tensor
    parallel)."""
    tpot_s, ttft_s = _ms(tpot_ms, "tpot_ms"), _ms(ttft_ms, "ttft_ms")
    split = _split_name(split_mode, "max_batch")
    flash_attention = _v.optional_flag(flash_attention, "flash_attention", "max_batch")
    m, dev = _model(model), _device(device)
    if _core.is_serving_engine(engine, dev._core, split, "max_batch"):  # continuous batching: the most clients
        from .serving import _plan as _serving_plan

        par = _core.Parallelism(int(tensor_parallel), 1, 1, False)
        sp = _serving_plan(m, dev, quant, engine, "" if kv_dtype == "f16" else kv_dtype, par, 0.0, 0.0, 0.0)
        return _answer(_core.max_concurrency_for_latency(sp, float(prompt_tokens), float(gen_tokens), tpot_s, ttft_s))
    plan = _plan(m, dev, quant, kv_dtype, flash_attention, engine, tensor_parallel, 0, split)
    return _answer(_core.max_batch_for_latency(plan, float(prompt_tokens), float(gen_tokens), tpot_s, ttft_s))


def cheapest(model: Any, target_tokens_per_s: float, price_per_hour: Mapping[str, float], devices: Any = None,
             quant: Any = "Q4_K_M", counts: Optional[Sequence[int]] = None, prompt_tokens: int = 512,
             gen_tokens: int = 128, tpot_ms: Optional[float] = None, ttft_ms: Optional[float] = None,
             kv_dtype: str = "f16", flash_attention: Optional[bool] = None, engine: str = "llama.cpp", replicas: bool = False,
             split_mode: Optional[str] = None) -> pd.DataFrame:
    """Deployments of ``model`` that serve ``target_tokens_per_s`` generated tokens per second, cheapest first.

    A deployment is ``count`` devices of one kind running one copy of the model split over all of them as
    ``split_mode`` says (as :func:`estimate`; None: the engine's default, llama.cpp by layers, the serving engines by
    tensor parallelism, where ``count`` must divide the attention heads and KV heads; more than one device needs an
    interconnect in the device's data; the ``split_mode`` column says which ran), for each device, count and
    quantization given. Assumptions:

    - throughput is the aggregate decode rate (``decode_tokens_per_s_total``) of a batch of sequences of
      ``prompt_tokens`` + ``gen_tokens``, at the smallest batch that reaches the target; the batch must fit in
      memory and meet ``tpot_ms`` / ``ttft_ms`` when given. Prefill time is not charged against the rate.
    - ``replicas``: when one deployment cannot reach the target, run ceil(target / its capacity) copies of it
      (data parallel), each serving an equal share; without it such a deployment is infeasible.
    - devices are billed by the hour whether busy or not: ``cost_per_hour`` = price × count × replicas;
      ``cost_per_million_tokens`` = cost_per_hour / (3600 × target) × 10⁶, what serving the target costs, which
      ranks the rows (ties: more headroom first). ``cost_per_million_tokens_at_capacity`` divides by the
      deployment's capacity instead: what a token costs if it is kept busy.
    - no batching inefficiency, queueing or scheduler overhead beyond the estimator's.

    ``counts`` defaults to those of 1, 2, 4, 8 that divide the heads; counts given explicitly that the split cannot
    take are listed as infeasible. ``price_per_hour``: {device name: $/h per device}; ``devices`` defaults to its keys.
    ``quant`` may list several quantizations. Rows that cannot meet the
    target stay in the table with ``feasible`` False and the reason, after the feasible ones.
    """
    import pandas as pd

    target = float(target_tokens_per_s)
    if not math.isfinite(target) or target <= 0:
        raise ValueError(f"target_tokens_per_s must be a number > 0, got {target_tokens_per_s!r}")
    if not isinstance(price_per_hour, Mapping) or not price_per_hour:
        raise ValueError("price_per_hour must be a non-empty dict {device: $ per hour}")
    prices: Dict[str, float] = {}
    for name, price in price_per_hour.items():
        p = float(price)
        if not math.isfinite(p) or p < 0:
            raise ValueError(f"price_per_hour['{name}'] must be a number >= 0, got {price!r}")
        prices[_device(name).id] = p
    device_list = _list(devices if devices is not None else list(price_per_hour), "devices")
    devs = _unique([_device(d) for d in device_list], lambda d: d.id)
    unpriced = [d.id for d in devs if d.id not in prices]
    if unpriced:
        raise ValueError(f"price_per_hour has no price for {', '.join(unpriced)}; priced: {', '.join(sorted(prices))}")
    m = _model(model)
    count_list = [_tp(c) for c in _list(counts, "counts")] if counts is not None else []
    tpot_s, ttft_s = _ms(tpot_ms, "tpot_ms"), _ms(ttft_ms, "ttft_ms")
    quants = _unique([str(x) for x in _list(quant, "quant")], lambda x: x)
    split = _split_name(split_mode, "cheapest")
    rows = _core.cheapest_deployments(m._core, [d._core for d in devs], [prices[d.id] for d in devs], quants,
                                      count_list, float(prompt_tokens), float(gen_tokens), target, tpot_s, ttft_s,
                                      kv_dtype, _v.optional_flag(flash_attention, "flash_attention", "cheapest"), engine,
                                      bool(replicas), split)
    columns = ["device", "count", "split_mode", "quant", "feasible", "batch", "replicas", "tokens_per_s", "capacity_tokens_per_s",
               "tpot_ms", "ttft_ms", "cost_per_hour", "cost_per_million_tokens", "cost_per_million_tokens_at_capacity",
               "reason"]
    return pd.DataFrame([{"device": r.device, "count": r.count, "split_mode": r.split_mode, "quant": r.quant,
                          "feasible": r.feasible,
                          "batch": int(r.batch), "replicas": r.replicas, "tokens_per_s": r.tokens_per_s,
                          "capacity_tokens_per_s": r.capacity_tokens_per_s,
                          "tpot_ms": r.tpot_s * 1e3, "ttft_ms": r.ttft_s * 1e3,  # unit conversion only
                          "cost_per_hour": r.cost_per_hour, "cost_per_million_tokens": r.cost_per_million_tokens,
                          "cost_per_million_tokens_at_capacity": r.cost_per_million_tokens_at_capacity,
                          "reason": r.reason} for r in rows], columns=columns)


def pareto(df: pd.DataFrame, x: str = "memory_total", y: str = "decode_tokens_per_s", minimize_x: bool = True,
           maximize_y: bool = True) -> pd.DataFrame:
    """The rows of ``df`` no other row dominates (at least as good in ``x`` and ``y``, better in one), sorted by
    ``x``: by default the least memory for the most decode tokens/s. Rows with NaN in ``x`` or ``y`` are dropped;
    rows equal in both are all kept."""
    import numpy as np

    for c in (x, y):
        if c not in df.columns:
            raise KeyError(f"pareto: no column '{c}'; columns: {', '.join(map(str, df.columns))}")
    xs = df[x].to_numpy(dtype=float)
    ys = df[y].to_numpy(dtype=float)
    ok = ~(np.isnan(xs) | np.isnan(ys))
    pos = np.flatnonzero(ok)
    kx = xs[pos] if minimize_x else -xs[pos]  # smaller is better
    ky = -ys[pos] if maximize_y else ys[pos]
    order = np.lexsort((ky, kx))  # by x, then by y, best first
    keep = []
    best_y = math.inf
    last = None
    for i in order:
        cx, cy = kx[i], ky[i]
        if cy < best_y:
            keep.append(pos[i])
            best_y = cy
            last = (cx, cy)
        elif last is not None and (cx, cy) == last:
            keep.append(pos[i])  # equal in both to the last kept: not dominated
    return df.iloc[keep]


# ---- command line: `rooflinepy sweep` (wired by cli.py) ---------------------------------------------------------
def _cli_numbers(text: str, what: str) -> List[float]:
    """Comma-separated numbers; an item A-B is every whole number from A to B, A-BxK multiplies by K from A to B."""
    out: List[float] = []
    for item in str(text).split(","):
        item = item.strip()
        if not item:
            continue
        try:
            if "-" in item[1:]:
                lo_text, hi_text = item.split("-", 1) if not item.startswith("-") else (item, "")
                factor = None
                if "x" in hi_text:
                    hi_text, factor_text = hi_text.split("x", 1)
                    factor = float(factor_text)
                lo, hi = float(lo_text), float(hi_text)
                if not (math.isfinite(lo) and math.isfinite(hi)) or hi < lo:
                    raise ValueError
                if factor is not None:
                    if not (math.isfinite(factor) and factor > 1) or lo <= 0:
                        raise ValueError
                    count = math.floor(math.log(hi / lo) / math.log(factor) + 1e-9) + 1  # A·K^i <= B
                    if len(out) + count > MAX_AXIS_VALUES:
                        raise OverflowError(count)
                    out.extend(lo * factor**i for i in range(count))
                else:
                    if len(out) + (int(hi) - int(lo) + 1) > MAX_AXIS_VALUES:
                        raise OverflowError(int(hi) - int(lo) + 1)
                    out.extend(float(v) for v in range(int(lo), int(hi) + 1))
            else:
                v = float(item)
                if not math.isfinite(v):
                    raise ValueError
                out.append(v)
        except OverflowError as e:
            raise ValueError(f"{what}: '{item}' expands to {e.args[0]:,} values (with the others of the list); at most "
                             f"{MAX_AXIS_VALUES:,} per list") from None
        except ValueError:
            raise ValueError(f"{what} must be comma-separated numbers or ranges A-B (every whole number) or A-BxK "
                             f"(A, A·K, A·K², ... up to B), got '{item}'") from None
    if not out:
        raise ValueError(f"{what} must list at least one number, got '{text}'")
    return out


def _cli_names(text: str) -> List[str]:
    return [v.strip() for v in str(text).split(",") if v.strip()]


def _cli_sweep(args: argparse.Namespace) -> int:
    import sys
    import time

    from . import devices as all_devices

    names = all_devices() if args.devices.strip().lower() == "all" else _cli_names(args.devices)
    flash = flash_attn_axis(args.flash_attn)
    import pandas  # noqa: F401 - imported, the catalogue and the database loaded, before the clock starts

    if args.rows < 0:
        raise ValueError(f"--rows must be >= 0, got {args.rows}")
    models = [_model(m) for m in _cli_names(args.models)]
    devs = [_device(d) for d in names]
    kwargs: Dict[str, Any] = dict(
        models=models, quants=_cli_names(args.quants), devices=devs,
        batch=_cli_numbers(args.batch, "-b/--batch"), prompt_tokens=_cli_numbers(args.prompt, "-p/--n-prompt"),
        gen_tokens=_cli_numbers(args.gen, "-n/--n-gen"), kv_dtype=_cli_names(args.kv_dtype),
        flash_attention=flash, engine=_cli_names(args.engine),
        tensor_parallel=[int(v) for v in _cli_numbers(args.tensor_parallel, "-tp/--tensor-parallel")],
        context_tokens=_cli_numbers(args.context, "--context"),
        ubatch_tokens=_cli_numbers(args.ubatch, "--ubatch") if args.ubatch else None,
        threads=args.threads, skip_invalid=args.skip_invalid,
        split_mode=None if args.split_mode is None else _cli_names(args.split_mode))
    t0 = time.perf_counter()
    if args.output:  # streamed: any number of points, one chunk in memory
        res = sweep(**kwargs, output=args.output)
        seconds = time.perf_counter() - t0
        for s in res.skipped:
            print(f"rooflinepy: skipped {s}", file=sys.stderr)
        if args.json:
            print(json_text({"output": res.path, "format": res.format, "rows": res.rows, "chunks": res.chunks,
                             "seconds": seconds, "skipped": res.skipped}))
        else:
            print(f"{res.rows} estimates in {seconds:.3f} s, {res.rows / seconds if seconds > 0 else 0:,.0f} "
                  f"estimates/s; wrote {res.path} ({res.format}, {res.chunks} chunk(s))")
        return 0
    df = sweep(**kwargs)
    seconds = time.perf_counter() - t0
    summary = (f"{len(df)} estimates ({df.attrs['plans']} configurations) in {seconds:.3f} s, "
               f"{len(df) / seconds if seconds > 0 else 0:,.0f} estimates/s")
    for s in df.attrs["skipped"]:
        print(f"rooflinepy: skipped {s}", file=sys.stderr)
    # the configuration columns that vary, so that no two printed rows look alike
    varying = [c for c in ("engine", "kv_dtype", "flash_attention", "tensor_parallel", "split_mode", "ubatch_tokens",
                           "context_tokens")
               if c in df.columns and df[c].nunique() > 1]
    cols = (["model", "quant", "device"] + varying + ["batch", "prompt_tokens", "gen_tokens", "ttft_s",
            "decode_tokens_per_s", "decode_tokens_per_s_total", "decode_bound", "memory_total", "fits"])
    if args.json:
        rows = df.head(args.rows).astype(object).to_dict(orient="records")
        print(json_text({"rows": rows, "shown": len(rows), "total": len(df), "configurations": df.attrs["plans"],
                         "seconds": seconds, "skipped": list(df.attrs["skipped"])}))
        return 0
    with pandas.option_context("display.max_rows", args.rows, "display.width", 220):
        print(df[cols].head(args.rows).to_string(index=False))
    print(f"\n{summary}" + (f" (first {args.rows} shown; -o FILE writes all)" if len(df) > args.rows else ""))
    return 0


def _add_sweep_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The `sweep` subcommand."""
    p = sub.add_parser("sweep", help="estimate every combination of models × quants × devices × ... (parquet / CSV)",
                       description="Estimate every combination in the C++ core on every core; one row per point. "
                                   "Lists are comma-separated; numbers also take ranges A-B and A-BxK "
                                   "(e.g. -b 1-256x2 is 1, 2, 4, ..., 256).")
    p.add_argument("-m", "--models", required=True, help="model ids, comma-separated")
    p.add_argument("-q", "--quants", default="Q4_K_M", help="quantizations, comma-separated")
    p.add_argument("-d", "--devices", required=True, help="device ids or aliases, comma-separated, or 'all'")
    p.add_argument("-b", "--batch", default="1", help="batch sizes")
    p.add_argument("-p", "--n-prompt", dest="prompt", default="512", help="prompt lengths")
    p.add_argument("-n", "--n-gen", dest="gen", default="128", help="generated tokens")
    p.add_argument("--kv-dtype", default="f16", help="KV cache formats, comma-separated")
    add_flash_attn(p, both=True)
    p.add_argument("--engine", default="llama.cpp", help="engines, comma-separated (rooflinepy engines lists them)")
    p.add_argument("-tp", "--tensor-parallel", default="1", help="devices per copy of the model (as -sm says)")
    p.add_argument("-sm", "--split-mode", default=None,
                   help="how -tp devices share the model (llama-bench -sm): layer, tensor or both, comma-separated "
                        "(default: each engine's)")
    p.add_argument("--context", default="0", help="tokens already in the KV cache before each prompt (llama-bench -d)")
    p.add_argument("--ubatch", default=None, help="prompt micro-batch sizes (llama.cpp -ub; default: the engine's)")
    p.add_argument("--threads", type=int, default=None, help="worker threads (default: every core)")
    p.add_argument("--skip-invalid", action="store_true",
                   help="leave out configurations that cannot be estimated (e.g. -tp not dividing the heads) "
                        "instead of stopping at the first")
    p.add_argument("-o", "--output", help="write every row: .parquet (needs pyarrow) or .csv")
    p.add_argument("--rows", type=int, default=20, help="rows to print without -o (default 20)")
    p.add_argument("--json", action="store_true", help="the rows printed (or, with -o, what was written) as JSON")
    p.set_defaults(func=_cli_sweep)
