"""Figures: rooflines, ridge-point shifts, tokens/s, attention IO, KV cache, batching, serving and validation.

Every function returns a :class:`matplotlib.figure.Figure` (save it with ``fig.savefig("x.png")``) and takes
``ax=``: one Axes to draw the main panel into, or, for the two-panel figures, a pair of Axes for both panels.
Every number drawn comes from the C++ core (device ceilings, op counts, estimates); this module only places
them. The numbers of the last call on a figure are kept in ``fig.rooflinepy_data`` (a dict), and the marks
that matter carry a ``gid`` (``"ridge:<device>:<level>"``, ``"op:<label>:<device>"``, ...), so a test or a
reader can check a figure against the core.

>>> import rooflinepy as rp
>>> fig = rp.plot.ridge_shift(["v100-sxm", "a100-sxm-80gb", "h100-sxm"])
>>> fig.savefig("ridge.png")
"""
from __future__ import annotations

import json
import math
import sys
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union, overload

import matplotlib
from matplotlib.figure import Figure
from matplotlib.ticker import EngFormatter, FuncFormatter, LogLocator, NullFormatter

from . import _core
from . import ops as _ops
from ._device import Device, DeviceLike
from ._device import device as _device
from ._device import devices as _all_devices
from ._roofline import OpCost
from .inference import Estimate, Model
from .inference import estimate as _estimate
from .inference import model as _model

__all__ = ["roofline", "ridge_shift", "tokens_per_second", "attention_io", "kv_cache", "batching", "serving",
           "validation", "attainable_flops"]

_LEVEL_STYLE = {"dram": "-", "l2": "--", "sram": ":"}
_LEVEL_NAME = {"dram": "DRAM", "l2": "L2", "sram": "SRAM"}
_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "<", ">"]


# ---- helpers ---------------------------------------------------------------------------------------------
@overload
def attainable_flops(device: DeviceLike, intensity: float, dtype: str = ..., level: str = ..., unit: str = ...,
                     ideal: bool = ...) -> float: ...


@overload
def attainable_flops(device: DeviceLike, intensity: Iterable[float], dtype: str = ..., level: str = ...,
                     unit: str = ..., ideal: bool = ...) -> List[float]: ...


def attainable_flops(device: DeviceLike, intensity: Union[float, Iterable[float]], dtype: str = "fp16",
                     level: str = "dram", unit: str = "matrix", ideal: bool = True) -> Union[float, List[float]]:
    """The roof of ``device`` at arithmetic intensity ``intensity`` (FLOP/byte at ``level``), in FLOP/s:
    min(peak, intensity × bandwidth), from the core (``derated`` ceilings with ``ideal=False``). A number for a
    number, a list for an iterable."""
    d = _device(device)
    if isinstance(intensity, (int, float)):
        return _core.attainable_flops(d._core, float(intensity), dtype, level, unit, ideal)
    return [_core.attainable_flops(d._core, float(x), dtype, level, unit, ideal) for x in intensity]


def _as_list(x: Any) -> List[Any]:
    if x is None:
        return []
    if isinstance(x, (str, bytes)) or not isinstance(x, Iterable):
        return [x]
    return list(x)


def _new_figure(ax: Any, panels: int, size: Tuple[float, float]) -> Tuple[Figure, List[Any]]:
    """A figure of ``panels`` side-by-side Axes, or the caller's Axes (one: main panel only; a pair: both)."""
    if ax is not None:
        import numpy as np
        from matplotlib.axes import Axes

        axes: List[Any] = [ax] if isinstance(ax, Axes) else list(np.ravel(ax))
        if len(axes) not in (1, panels):
            raise ValueError(f"ax must be one Axes or {panels} Axes, got {len(axes)}")
        return axes[0].figure, axes
    _show_figures_in_ipython()
    fig = Figure(figsize=size, layout="constrained")
    axes = [fig.add_subplot(1, panels, i + 1) for i in range(panels)]
    return fig, axes


def _show_figures_in_ipython() -> None:
    """In Jupyter, show a returned Figure as a PNG, as ``%matplotlib inline`` does. Our figures are not
    pyplot-managed (not shown twice, not kept alive by pyplot), so they need the formatter for Figure objects,
    which recent IPython/matplotlib-inline only register on an explicit ``%matplotlib inline``."""
    if "IPython" not in sys.modules:
        return
    from IPython import get_ipython

    ip = get_ipython()
    if ip is None or not hasattr(ip, "display_formatter"):
        return
    png = ip.display_formatter.formatters.get("image/png")
    if png is None:
        return
    try:
        png.lookup_by_type(Figure)
    except KeyError:
        from IPython.core.pylabtools import print_figure

        png.for_type(Figure, lambda fig: print_figure(fig, "png", bbox_inches="tight"))


def _keep(fig: Figure, data: Dict[str, Any]) -> Figure:
    fig.rooflinepy_data = data  # type: ignore[attr-defined]
    _declutter(fig)
    return fig


def _text_boxes(fig: Figure) -> Tuple[Any, List[Tuple[Any, Any, Any]]]:
    """(renderer, [(axes, annotation, its window extent)]) of every annotation of the figure, laid out (the
    figure drawn without rasterizing: extents and transforms as a saved figure has them)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Annotation

    if fig.canvas is None or not hasattr(fig.canvas, "get_renderer"):
        FigureCanvasAgg(fig)
    canvas: Any = fig.canvas
    fig.draw_without_rendering()
    renderer = canvas.get_renderer()
    out = []
    for ax in fig.axes:
        for child in ax.get_children():
            if isinstance(child, Annotation) and child.get_visible() and child.get_text():
                out.append((ax, child, child.get_window_extent(renderer)))
    return renderer, out


def _marker_boxes(fig: Figure, renderer: Any) -> List[Tuple[Any, Any]]:
    """(axes, display box) of every marker a label must not cover: the ops and ridge points (gid op:* / ridge:*)."""
    from matplotlib.transforms import Bbox

    out = []
    for ax in fig.axes:
        for line in ax.get_lines():
            gid = line.get_gid() or ""
            if not (gid.startswith("op:") or gid.startswith("ridge:")) or line.get_marker() in (None, "None", ""):
                continue
            r = line.get_markersize() * fig.dpi / 72.0 / 2 + 1
            xs: Any = line.get_xdata()
            ys: Any = line.get_ydata()
            for x, y in ax.transData.transform(list(zip(xs, ys))):
                out.append((ax, Bbox.from_extents(x - r, y - r, x + r, y + r)))
    return out


def _declutter(fig: Figure, rounds: int = 8) -> None:
    """Keep every annotation inside its axes and clear of the others: one that overlaps an earlier one moves up
    or down by its height, one that leaves its axes is moved back inside (offset in points, the data point it
    labels unchanged). A few rounds; what still overlaps after them is left for overlap_report to name."""
    from matplotlib.text import Annotation

    if not any(isinstance(c, Annotation) for a in fig.axes for c in a.get_children()):
        return
    for _ in range(rounds):
        moved = False
        renderer, boxes = _text_boxes(fig)
        obstacles = _marker_boxes(fig, renderer)
        for i, (ax, ann, box) in enumerate(boxes):
            frame = ax.get_window_extent(renderer)
            dx = dy = 0.0
            if box.x1 > frame.x1:
                dx = frame.x1 - box.x1 - 2
            elif box.x0 < frame.x0:
                dx = frame.x0 - box.x0 + 2
            if box.y1 > frame.y1:
                dy = frame.y1 - box.y1 - 2
            elif box.y0 < frame.y0:
                dy = frame.y0 - box.y0 + 2
            others = [b2 for ax2, _, b2 in boxes[:i] if ax2 is ax] + [b2 for ax2, b2 in obstacles if ax2 is ax]
            for box2 in others:
                if box.overlaps(box2):
                    up = box2.y1 - box.y0 + 2
                    down = box2.y0 - box.y1 - 2
                    dy = up if box.y1 + up <= frame.y1 else down
                    break
            if dx or dy:
                scale = 72.0 / fig.dpi  # display pixels to points
                if ann.get_anncoords() == "offset points":
                    ox, oy = ann.xyann
                    ann.xyann = (ox + dx * scale, oy + dy * scale)
                    moved = True
        if not moved:
            return


def overlap_report(fig: Figure) -> List[str]:
    """What a reader would see as clutter: annotations that overlap each other, and texts (annotations, titles,
    tick and axis labels) outside the figure or, for annotations, outside their axes. Empty when clean."""
    renderer, boxes = _text_boxes(fig)
    fig_box = fig.bbox
    problems = []
    for i, (ax, ann, box) in enumerate(boxes):
        frame = ax.get_window_extent(renderer).expanded(1.0, 1.0)
        if box.x0 < frame.x0 - 1 or box.x1 > frame.x1 + 1 or box.y0 < frame.y0 - 1 or box.y1 > frame.y1 + 1:
            problems.append(f"'{ann.get_text()}' leaves its axes")
        for ax2, ann2, box2 in boxes[:i]:
            if ax2 is ax and box.overlaps(box2):
                problems.append(f"'{ann.get_text()}' overlaps '{ann2.get_text()}'")
        for ax2, box2 in _marker_boxes(fig, renderer):
            if ax2 is ax and box.overlaps(box2):
                problems.append(f"'{ann.get_text()}' covers a marker")
                break
    for ax in fig.axes:
        texts = [ax.title, ax.xaxis.label, ax.yaxis.label]
        for axis in (ax.xaxis, ax.yaxis):  # the tick labels drawn: those within the view
            lo, hi = sorted(axis.get_view_interval())
            texts += [tk.label1 for tk in axis.get_major_ticks() if lo <= tk.get_loc() <= hi]
        for txt in texts:
            if not txt.get_visible() or not txt.get_text():
                continue
            b = txt.get_window_extent(renderer)
            if b.x0 < fig_box.x0 - 1 or b.x1 > fig_box.x1 + 1 or b.y0 < fig_box.y0 - 1 or b.y1 > fig_box.y1 + 1:
                problems.append(f"'{txt.get_text()}' is clipped by the figure's edge")
    return problems


def _si(x: float, unit: str = "", digits: int = 3) -> str:
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= factor:
            return f"{x / factor:.{digits}g} {prefix}{unit}"
    return f"{x:.{digits}g} {unit}".rstrip()


def _num(v: float) -> str:
    return f"{v:.0f}" if abs(v) >= 100 else f"{v:.3g}"


def _eng(unit: str) -> EngFormatter:
    return EngFormatter(unit=unit, places=None, sep=" ")


def _log_axes(ax: Any, xunit: Optional[str] = None, yunit: Optional[str] = None) -> None:
    ax.set_xscale("log")
    ax.set_yscale("log")
    if xunit is not None:
        ax.xaxis.set_major_formatter(_eng(xunit))
    if yunit is not None:
        ax.yaxis.set_major_formatter(_eng(yunit))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.grid(True, which="major", alpha=0.3)
    ax.grid(True, which="minor", alpha=0.08)


def _plain_log_formatter(ax_axis: Any) -> None:
    ax_axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax_axis.set_minor_formatter(NullFormatter())


def _colors(n: int) -> List[Any]:
    cycle = matplotlib.rcParams["axes.prop_cycle"].by_key().get("color", ["C0"])
    return [cycle[i % len(cycle)] for i in range(n)]


def _unit_used(d: Device, dtype: str, unit: str) -> str:
    """The unit whose peak ``peak_flops(dtype, unit)`` returns (the core's fallback: matrix to vector)."""
    return d.peak_unit(dtype, unit)


def _op_items(ops: Any) -> List[Tuple[str, OpCost]]:
    if ops is None:
        return []
    if isinstance(ops, Mapping):
        return [(str(k), v) for k, v in ops.items()]
    items = []
    for o in _as_list(ops):
        if isinstance(o, tuple) and len(o) == 2 and isinstance(o[0], str):
            items.append((o[0], o[1]))
        else:
            items.append((o.name, o))
    # repeated names get a counter so each point keeps its own label
    seen: Dict[str, int] = {}
    out = []
    for label, op in items:
        seen[label] = seen.get(label, 0) + 1
        out.append((label if seen[label] == 1 else f"{label} #{seen[label]}", op))
    return out


_PHASE_MARKER = {"prefill": "s", "decode": "o"}


_EstimatePoint = Tuple[str, float, float, str, str]  # label, DRAM intensity, achieved FLOP/s, phase, compute


def _estimate_points(e: Estimate, max_ops: int) -> List[_EstimatePoint]:
    """The ``max_ops`` slowest ops of each phase of ``e``, from its breakdown rows (the core's counts and times)."""
    out: List[_EstimatePoint] = []
    for phase in ("prefill", "decode"):
        rows = [r for r in e._breakdown_rows() if r[0] == phase and r[5] > 0 and r[8] > 0]
        rows.sort(key=lambda r: -r[6])
        out += [(f"{phase}: {r[1]}", r[5], r[8], phase, r[9]) for r in rows[:max_ops]]
    return out


def _catalog_config(name: str) -> Optional[Dict[str, Any]]:
    from . import inference

    path = inference._catalog().get(str(name).lower())
    if path is None:
        return None
    return dict(json.loads(path.read_text())["config"])


# ---- roofline --------------------------------------------------------------------------------------------
def roofline(devices: Union[DeviceLike, Sequence[DeviceLike]], ops: Any = None, dtype: str = "bf16", *,
             levels: Optional[Sequence[str]] = None, units: Sequence[str] = ("matrix", "vector"), ideal: bool = True,
             intensity_range: Optional[Tuple[float, float]] = None, title: Optional[str] = None, ax: Any = None,
             max_ops: int = 6) -> Figure:
    """Log-log hierarchical roofline of one or more devices for ``dtype``, with ops as labelled points.

    For each device: the roof of every memory level that has a bandwidth (``levels``, default all of DRAM, L2,
    SRAM; DRAM solid, L2 dashed, SRAM dotted) under the peak of the first of ``units``, the flat ceiling of the
    other units (vector units: dash-dot), and the DRAM ridge point marked and labelled. Each roof is drawn
    against the intensity at its own level (FLOP per byte moved at that level). ``ops``: OpCosts, a dict
    {label: OpCost} or (label, OpCost) pairs; each op has one marker per level it moves bytes at — filled at its
    DRAM intensity, hollow at its L2 and SRAM intensities, joined by a thin line — all at the FLOP/s the roofline
    allows it on the device (``device.time(op, ideal=ideal).attainable_flops``); the level whose roof is lowest at
    the op's marker is what binds it. ``ideal=False`` draws derated ceilings.

    ``ops`` may also be an :class:`~rooflinepy.Estimate` (or a list of them, each on one of ``devices``): its
    ``max_ops`` slowest ops with DRAM traffic of each phase (not those whose activations stay in L2) are drawn at
    their DRAM intensity and at the FLOP/s they achieve in the
    estimate (``breakdown.flops_per_s``: launches, fixed time and the engine's kernels included), prefill as
    squares, decode as circles, so the distance below the roof is what the engine loses; the roof of each kernel
    format those ops run on (``breakdown.compute``, e.g. int8 matrix for llama.cpp's MMQ) is drawn beside
    ``dtype``'s.
    """
    if isinstance(max_ops, bool) or not isinstance(max_ops, int) or max_ops < 1:
        raise ValueError(f"roofline: max_ops must be an integer >= 1, got {max_ops!r}")
    est_items: List[Tuple[Estimate, List[_EstimatePoint]]] = []
    if isinstance(ops, Estimate) or (isinstance(ops, (list, tuple)) and ops and all(isinstance(o, Estimate) for o in ops)):
        est_items = [(e, _estimate_points(e, max_ops)) for e in _as_list(ops)]
        ops = None
    devs = [_device(d) for d in _as_list(devices)]
    if not devs:
        raise ValueError("roofline needs at least one device")
    units = list(units) or ["matrix"]
    items = _op_items(ops)
    fig, axes = _new_figure(ax, 1, (8.0, 5.6))
    ax0 = axes[0]
    colors = _colors(len(devs))

    ridges = {}
    for d in devs:
        try:
            ridges[d.id] = d.ridge_point(dtype, level="dram", unit=units[0])
        except KeyError as e:
            raise KeyError(f"roofline: {e.args[0] if e.args else e}") from None
    intensities = [op.intensity_at(lv) for _, op in items for lv in ("dram", "l2", "sram") if op.bytes_at(lv) > 0]
    intensities += [p[1] for _, pts in est_items for p in pts]
    if intensity_range is None:
        lo = min([0.1] + [x / 3 for x in intensities] + [r / 300 for r in ridges.values()])
        hi = max([r * 10 for r in ridges.values()] + [x * 3 for x in intensities])
        intensity_range = (lo, hi)
    lo, hi = intensity_range
    if not (0 < lo < hi):
        raise ValueError(f"intensity_range must be 0 < low < high, got {intensity_range}")

    import numpy as np

    data: Dict[str, Any] = {"dtype": dtype, "ideal": ideal, "devices": {}, "ops": {}}
    for d, color in zip(devs, colors):
        dd: Dict[str, Any] = {"peaks": {}, "bandwidths": {}, "ridge_points": {}}
        data["devices"][d.id] = dd
        main_peak = d.peak_flops(dtype, units[0])
        dd["peaks"][units[0]] = main_peak
        use_levels = [lv for lv in (levels or ("dram", "l2", "sram"))]
        for level in use_levels:
            try:
                bw = d.bandwidth(level)
            except KeyError:
                if levels is not None:
                    raise
                continue
            ridge = d.ridge_point(dtype, level=level, unit=units[0])
            dd["bandwidths"][level] = bw
            dd["ridge_points"][level] = ridge
            xs = np.unique(np.concatenate([np.geomspace(lo, hi, 160), [ridge] if lo < ridge < hi else []]))
            ys = [_core.attainable_flops(d._core, float(x), dtype, level, units[0], ideal) for x in xs]
            label = f"{d.id}: {_LEVEL_NAME[level]} {_si(bw, 'B/s')}"
            if level == "dram":
                label = (f"{d.id}: {_si(main_peak, 'FLOP/s')} {_unit_used(d, dtype, units[0])} {dtype}, "
                         f"DRAM {_si(bw, 'B/s')}")
            ax0.plot(xs, ys, _LEVEL_STYLE[level], color=color, lw=2.0 if level == "dram" else 1.2,
                     alpha=1.0 if level == "dram" else 0.7, label=label, gid=f"roof:{d.id}:{level}")
            if level == "dram":
                y_ridge = _core.attainable_flops(d._core, ridge, dtype, level, units[0], ideal)
                ax0.plot([ridge], [y_ridge], "o", color=color, ms=7, mec="black", zorder=5,
                         gid=f"ridge:{d.id}:{level}")
                ax0.axvline(ridge, color=color, lw=0.8, ls=":", alpha=0.8)
                ax0.annotate(f"ridge {ridge:.0f} FLOP/B", (ridge, y_ridge), xytext=(6, -14),
                             textcoords="offset points", fontsize=8, color=color)
        for unit in units[1:]:
            try:
                peak = d.peak_flops(dtype, unit)
            except KeyError:
                continue
            if _unit_used(d, dtype, unit) == _unit_used(d, dtype, units[0]):
                continue  # no separate matrix units: the main roof is this one
            dd["peaks"][unit] = peak
            ridge_u = d.ridge_point(dtype, level="dram", unit=unit)
            xs = np.unique(np.concatenate([np.geomspace(lo, hi, 160), [ridge_u] if lo < ridge_u < hi else []]))
            ys = [_core.attainable_flops(d._core, float(x), dtype, "dram", unit, ideal) for x in xs]
            ax0.plot(xs, ys, "-.", color=color, lw=1.0, alpha=0.6, gid=f"roof:{d.id}:dram:{unit}",
                     label=f"{d.id}: {unit} units {_si(peak, 'FLOP/s')} {dtype}")

    markers = {label: _MARKERS[i % len(_MARKERS)] for i, (label, _) in enumerate(items)}
    by_ai = sorted(range(len(items)), key=lambda i: items[i][1].arithmetic_intensity)
    offsets = {items[i][0]: ((6, 6) if k % 2 == 0 else (6, -16)) for k, i in enumerate(by_ai)}
    for label, op in items:
        ai = op.arithmetic_intensity
        od: Dict[str, Any] = {"flops": op.flops, "bytes": op.bytes, "arithmetic_intensity": ai, "attainable": {}}
        data["ops"][label] = od
        if ai <= 0:
            continue
        ys = []
        od["intensity_by_level"] = {lv: op.intensity_at(lv) for lv in ("dram", "l2", "sram") if op.bytes_at(lv) > 0}
        for d, color in zip(devs, colors):
            t = d.time(op, ideal=ideal)
            od["attainable"][d.id] = t.attainable_flops
            od.setdefault("bound", {})[d.id] = t.bound
            ys.append(t.attainable_flops)
            ax0.plot([ai], [t.attainable_flops], markers[label], color=color, mec="black", ms=8, zorder=6,
                     gid=f"op:{label}:{d.id}")
            drawn = [lv for lv in od["intensity_by_level"] if lv != "dram" and lv in data["devices"][d.id]["bandwidths"]]
            if drawn:  # the same op at its L2 / SRAM intensity, against those roofs
                xs_lv = [ai] + [od["intensity_by_level"][lv] for lv in drawn]
                ax0.plot(xs_lv, [t.attainable_flops] * len(xs_lv), "-", color=color, lw=0.6, alpha=0.6, zorder=5)
                for lv in drawn:
                    ax0.plot([od["intensity_by_level"][lv]], [t.attainable_flops], markers[label], mfc="none",
                             mec=color, ms=7, zorder=6, gid=f"op:{label}:{d.id}:{lv}")
        at = max(ys) if offsets[label][1] > 0 else min(ys)
        ax0.annotate(label, (ai, at), xytext=offsets[label], textcoords="offset points", fontsize=9,
                     fontweight="bold")

    by_id = {d.id: (d, c) for d, c in zip(devs, colors)}
    for est, pts in est_items:
        if est.device not in by_id:
            raise ValueError(f"roofline: the estimate is for device '{est.device}', which is not among the devices "
                             f"drawn ({', '.join(by_id)})")
        d, color = by_id[est.device]
        ed = data.setdefault("estimate_ops", {}).setdefault(est.device, {})
        drawn_peaks = {(dtype, u) for u in data["devices"][d.id]["peaks"]}
        for compute in sorted({p[4] for p in pts if p[4]}):  # the roof of each kernel format the ops run on
            fmt, unit = compute.split()
            if (fmt, unit) in drawn_peaks:
                continue
            drawn_peaks.add((fmt, unit))
            peak = _core.attainable_flops(d._core, float("inf"), fmt, "dram", unit, ideal)  # the peak it runs at
            data["devices"][d.id]["peaks"][compute] = peak
            xs = np.geomspace(lo, hi, 160)
            ys = [_core.attainable_flops(d._core, float(x), fmt, "dram", unit, ideal) for x in xs]
            ax0.plot(xs, ys, ls=(0, (5, 1, 1, 1)), color=color, lw=1.0, alpha=0.8, gid=f"roof:{d.id}:dram:{compute}",
                     label=f"{d.id}: {compute} {_si(peak, 'FLOP/s')} (the estimate's kernels)")
        for k, (label, x, y, phase, compute) in enumerate(pts):
            ed[label] = {"intensity": x, "flops_per_s": y, "compute": compute}
            ax0.plot([x], [y], _PHASE_MARKER[phase], color=color, mec="black", ms=7, zorder=6,
                     gid=f"op:{label}:{est.device}")
            ax0.annotate(label, (x, y), xytext=(6, 6) if k % 2 == 0 else (6, -14), textcoords="offset points",
                         fontsize=8)

    _log_axes(ax0, yunit="FLOP/s")
    _plain_log_formatter(ax0.xaxis)
    ax0.set_xlim(lo, hi)
    if est_items:
        ax0.set_ylim(top=max(ax0.get_ylim()[1], 2 * max(p[2] for _, pts in est_items for p in pts)))
    ax0.set_xlabel("arithmetic intensity (FLOP per byte moved at each level: filled DRAM, hollow L2 / SRAM)")
    ax0.set_ylabel(f"attainable performance (FLOP/s, {dtype})")
    kind = "datasheet" if ideal else "derated"
    ax0.set_title(title or f"Roofline, {dtype} ({kind} ceilings)")
    ax0.legend(fontsize=7.5, loc="lower right")
    return _keep(fig, data)


# ---- ridge shift -----------------------------------------------------------------------------------------
def ridge_shift(devices: Sequence[DeviceLike] = ("v100-sxm", "a100-sxm-80gb", "h100-sxm", "h200-sxm", "b200"),
                dtype: str = "fp16", unit: str = "matrix", *, title: Optional[str] = None, ax: Any = None
                ) -> Figure:
    """Compute vs bandwidth growth over generations, and the ridge point of each.

    Left: peak FLOP/s (``dtype`` on ``unit``, falling back to vector units where a device has none) and DRAM
    bandwidth of each device relative to the first (log scale). Right: the ridge point (FLOP per DRAM byte)
    of each, labelled also per element of ``dtype`` (ridge × bytes per element: how many times each number
    loaded must be used). With one ``ax``: the ridge panel only.
    """
    devs = [_device(d) for d in devices]
    if not devs:
        raise ValueError("ridge_shift needs at least one device")
    fig, axes = _new_figure(ax, 2, (11.5, 4.8))
    points = _core.ridge_shift([d._core for d in devs], dtype, unit)  # every number of the figure, from the core
    bpe = _core.format_info(dtype)["bytes_per_element"]
    ridges = [p.ridge_flop_per_byte for p in points]
    names = [f"{d.id}\n({d.release_year})" if d.release_year else d.id for d in devs]
    x = list(range(len(devs)))
    data = {"dtype": dtype, "unit": unit, "devices": [d.id for d in devs],
            "peak_flops": [p.peak_flops_per_s for p in points], "bandwidth": [p.bandwidth_Bps for p in points],
            "ridge_points": ridges, "bytes_per_element": bpe,
            "ridge_per_element": [p.ridge_per_element for p in points],
            "compute_growth": [p.compute_growth for p in points],
            "bandwidth_growth": [p.bandwidth_growth for p in points]}

    ridge_ax = axes[-1] if len(axes) == 2 else axes[0]
    if len(axes) == 2:
        g = axes[0]
        g.plot(x, data["compute_growth"], "o-", lw=2, label=f"peak {dtype} compute", gid="growth:compute")
        g.plot(x, data["bandwidth_growth"], "s-", lw=2, label="DRAM bandwidth", gid="growth:bandwidth")
        for i in x[1:]:
            g.annotate(f"×{data['compute_growth'][i]:.2g}", (i, data["compute_growth"][i]), xytext=(4, 4),
                       textcoords="offset points", fontsize=8, color="C0")
            g.annotate(f"×{data['bandwidth_growth'][i]:.3g}", (i, data["bandwidth_growth"][i]), xytext=(4, -12),
                       textcoords="offset points", fontsize=8, color="C1")
        g.set_yscale("log")
        g.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        _plain_log_formatter(g.yaxis)
        top = max(data["compute_growth"] + data["bandwidth_growth"])
        g.set_ylim(min(data["compute_growth"] + data["bandwidth_growth"]) / 1.2, top * 1.35)
        g.set_xticks(x, names, fontsize=8)
        g.set_xlabel("device (release year)")
        g.set_ylabel(f"growth relative to {devs[0].id} (×)")
        g.set_title("Compute grew faster than bandwidth")
        g.grid(True, which="both", alpha=0.25)
        g.legend(fontsize=8)
    bars = ridge_ax.bar(x, ridges, color=_colors(len(devs)), edgecolor="black", gid="ridge-bars")
    for i, (b, r) in enumerate(zip(bars, ridges)):
        b.set_gid(f"ridge:{devs[i].id}:dram")
        ridge_ax.annotate(f"{r:.0f} FLOP/B\n≈{data['ridge_per_element'][i]:.0f}/element", (i, r), xytext=(0, 3),
                          textcoords="offset points", ha="center", va="bottom", fontsize=8)
    ridge_ax.set_xticks(x, names, fontsize=8)
    ridge_ax.set_xlabel("device (release year)")
    ridge_ax.set_ylabel("ridge point (FLOP per byte of DRAM traffic)")
    ridge_ax.set_ylim(0, max(ridges) * 1.25)
    ridge_ax.set_title(f"Ridge point ({dtype}): peak FLOP/s ÷ DRAM bandwidth")
    ridge_ax.grid(True, axis="y", alpha=0.25)
    if title:
        fig.suptitle(title)
    return _keep(fig, data)


# ---- tokens per second -----------------------------------------------------------------------------------
def _measured_lookup(measured: Any) -> Dict[Tuple[str, str, str], float]:
    """{(device id, quant, 'pp'|'tg'): tokens/s} from records {"device", "quant", "test", "tokens_per_s"}."""
    out: Dict[Tuple[str, str, str], float] = {}
    if measured is None:
        return out
    if hasattr(measured, "to_dict") and hasattr(measured, "columns"):
        measured = measured.to_dict(orient="records")
    for i, r in enumerate(measured):
        missing = [k for k in ("device", "quant", "test", "tokens_per_s") if k not in r]
        if missing:
            raise ValueError(f"measured record {i} lacks {', '.join(missing)}")
        test = str(r["test"]).lower()
        kind = "pp" if test.startswith("pp") else "tg" if test.startswith("tg") else None
        if kind is None:
            raise ValueError(f"measured record {i}: test '{r['test']}' is not ppN or tgN")
        out[(_device(r["device"]).id, str(r["quant"]).upper(), kind)] = float(r["tokens_per_s"])
    return out


def tokens_per_second(model: Any = "qwen3-4b", quants: Sequence[str] = ("BF16", "Q8_0", "Q4_K_M"),
                      devices: Union[DeviceLike, Sequence[DeviceLike]] = ("m4-pro",), *, prompt_tokens: int = 512,
                      gen_tokens: int = 128, measured: Any = None, engine: str = "llama.cpp",
                      kv_dtype: str = "f16", flash_attention: Optional[bool] = None, title: Optional[str] = None,
                      ax: Any = None) -> Figure:
    """Estimated decode (tg) and prefill (pp) tokens/s per quantization and device, llama-bench style.

    Decode is ``tg{gen_tokens}`` (from an empty cache), prefill ``pp{prompt_tokens}``. Each bar is the
    estimate; the outline above it the roofline ceiling (decode: DRAM bandwidth ÷ weight bytes; prefill: the
    pure roofline of the prompt). ``measured``: records {"device", "quant", "test": "tg128"/"pp512",
    "tokens_per_s"} (or a DataFrame) drawn as black diamonds. Left: decode; right: prefill (one ``ax``: decode).
    """
    m = _model(model)
    devs = [_device(d) for d in _as_list(devices)]
    quants = list(quants)
    if not devs or not quants:
        raise ValueError("tokens_per_second needs at least one device and one quantization")
    meas = _measured_lookup(measured)
    fig, axes = _new_figure(ax, 2, (12.0, 4.8))
    colors = _colors(len(devs))
    width = 0.8 / len(devs)
    data: Dict[str, Any] = {"model": m.id, "quants": quants, "devices": [d.id for d in devs], "rows": []}
    est = {}
    for d in devs:
        for q in quants:
            tg = _estimate(model=m, quant=q, device=d, prompt_tokens=0, gen_tokens=gen_tokens, engine=engine,
                           kv_dtype=kv_dtype, flash_attention=flash_attention)
            pp = _estimate(model=m, quant=q, device=d, prompt_tokens=prompt_tokens, gen_tokens=0, engine=engine,
                           kv_dtype=kv_dtype, flash_attention=flash_attention)
            est[(d.id, q)] = (tg, pp)
            data["rows"].append({
                "device": d.id, "quant": q, "weight_bytes": tg.weight_bytes,
                "decode_tokens_per_s": tg.decode_tokens_per_s,
                "decode_ceiling_tokens_per_s": tg.ceilings["decode_weights_tokens_per_s"],
                "prefill_tokens_per_s": pp.prefill_tokens_per_s,
                "prefill_ceiling_tokens_per_s": pp.ceilings["prefill_tokens_per_s"],
                "measured_decode": meas.get((d.id, q.upper(), "tg")),
                "measured_prefill": meas.get((d.id, q.upper(), "pp"))})

    panels = [("tg", f"decode tg{gen_tokens}", "decode_tokens_per_s", "decode_ceiling_tokens_per_s",
               "measured_decode"),
              ("pp", f"prefill pp{prompt_tokens}", "prefill_tokens_per_s", "prefill_ceiling_tokens_per_s",
               "measured_prefill")]
    rows = {(r["device"], r["quant"]): r for r in data["rows"]}
    for a, (kind, name, key, ceil_key, meas_key) in zip(axes, panels):
        for j, (d, color) in enumerate(zip(devs, colors)):
            xs = [i + (j - (len(devs) - 1) / 2) * width for i in range(len(quants))]
            vals = [rows[(d.id, q)][key] for q in quants]
            ceils = [rows[(d.id, q)][ceil_key] for q in quants]
            bars = a.bar(xs, vals, width * 0.92, color=color, label=f"{d.id} estimate", zorder=3)
            a.bar(xs, ceils, width * 0.92, fill=False, edgecolor=color, ls="--", lw=1.2, zorder=2,
                  label=f"{d.id} roofline ceiling")
            for q, b, v, c in zip(quants, bars, vals, ceils):
                b.set_gid(f"{kind}:{d.id}:{q}")
                a.annotate(f"{_num(v)}\n(ceiling {_num(c)})", (b.get_x() + b.get_width() / 2, max(v, c)),
                           xytext=(0, 2), textcoords="offset points", ha="center", va="bottom", fontsize=7)
            mx = [(x, rows[(d.id, q)][meas_key]) for x, q in zip(xs, quants) if rows[(d.id, q)][meas_key]]
            if mx:
                a.plot([p[0] for p in mx], [p[1] for p in mx], "D", color="black", ms=6, zorder=5,
                       label="measured" if j == 0 else None, gid=f"measured:{kind}:{d.id}")
        a.set_xticks(range(len(quants)), quants)
        a.set_xlabel("weight quantization")
        a.set_ylabel(f"{name} (tokens/s per sequence)")
        a.set_title(f"{m.id}: {name}")
        top = max(max(r[key], r[ceil_key], r[meas_key] or 0) for r in data["rows"])
        a.set_ylim(0, top * 1.45)
        a.grid(True, axis="y", alpha=0.25)
        a.legend(fontsize=7.5, loc="upper left", ncol=2)
    if title:
        fig.suptitle(title)
    return _keep(fig, data)


# ---- attention IO ----------------------------------------------------------------------------------------
def attention_io(seq_lens: Sequence[int] = (512, 1024, 2048, 4096, 8192, 16384, 32768, 65536),
                 device: DeviceLike = "a100-sxm-80gb", *, heads: int = 32, head_dim: int = 128, batch: int = 1,
                 dtype: str = "fp16", causal: bool = False, backward: bool = False, title: Optional[str] = None,
                 ax: Any = None) -> Figure:
    """DRAM bytes of one attention layer vs sequence length: standard vs flash (log-log).

    Lines: standard attention (scores and probabilities written to and read from DRAM: Θ(N·d + N²) per head);
    flash attention on ``device`` (tiles in its SRAM; the re-reads of Q and O hit its L2 when one head's rows fit);
    flash attention as FlashAttention's Theorem 2 counts it (the device's SRAM per compute unit, no cache:
    Θ(N²·d²/M)); and flash's SRAM traffic (dotted). Counts from ``rp.ops.attention``.
    """
    d = _device(device)
    ns = [int(n) for n in seq_lens]
    if not ns:
        raise ValueError("attention_io needs at least one sequence length")
    fig, axes = _new_figure(ax, 1, (8.0, 5.4))
    a = axes[0]
    std = [_ops.attention(batch, heads, n, head_dim=head_dim, dtype=dtype, causal=causal, backward=backward,
                          kind="standard") for n in ns]
    fl = [_ops.attention(batch, heads, n, head_dim=head_dim, dtype=dtype, causal=causal, backward=backward,
                         kind="flash", device=d) for n in ns]
    paper = [_ops.attention(batch, heads, n, head_dim=head_dim, dtype=dtype, causal=causal, backward=backward,
                            kind="flash", sram_bytes=d.sram_per_unit_bytes) for n in ns]
    data: Dict[str, Any] = {"device": d.id, "seq_lens": ns, "standard": [o.bytes for o in std],
                            "flash": [o.bytes for o in fl], "flash_no_l2": [o.bytes for o in paper],
                            "flash_sram": [o.bytes_at("sram") for o in fl],
                            "sram_per_unit_bytes": d.sram_per_unit_bytes}
    data["l2_bytes"] = d.l2_working_set or None  # what flash's re-reads count on (ops::flash_tiles)

    def slope(ys: List[float]) -> str:
        k = _core.scaling_exponent([float(n) for n in ns], ys)  # the local log-log slope, from the core
        return "" if k != k else f", ∝ N$^{{{k:.2g}}}$"

    a.plot(ns, data["standard"], "o-", lw=2, color="C3", gid="standard",
           label=f"standard: S and P in DRAM{slope(data['standard'])}")
    a.plot(ns, data["flash_no_l2"], "s--", lw=1.5, color="C1", gid="flash_no_l2",
           label=f"flash, paper's count (SRAM {_si(d.sram_per_unit_bytes, 'B')}/unit, no L2)"
                 f"{slope(data['flash_no_l2'])}")
    l2 = f"L2 {_si(data['l2_bytes'], 'B')} absorbs re-reads" if data["l2_bytes"] else "no L2 in the database"
    a.plot(ns, data["flash"], "^-", lw=2, color="C2", gid="flash",
           label=f"flash on {d.id} ({l2}){slope(data['flash'])}")
    a.plot(ns, data["flash_sram"], ":", lw=1.2, color="C2", alpha=0.7, gid="flash_sram",
           label="flash: SRAM traffic (not DRAM)")
    _log_axes(a, yunit="B")
    a.set_xscale("log", base=2)
    _plain_log_formatter(a.xaxis)
    a.set_xticks(ns, [f"{n // 1024}k" if n >= 1024 else str(n) for n in ns])
    a.set_xlabel("sequence length N (tokens)")
    a.set_ylabel("bytes moved per layer (B)")
    pass_ = "forward + backward" if backward else "forward"
    a.set_title(title or f"Attention DRAM traffic, {batch}×{heads} heads, d={head_dim}, {dtype}, {pass_}")
    a.legend(fontsize=8)
    return _keep(fig, data)


# ---- KV cache --------------------------------------------------------------------------------------------
def _head_variants(model: Any, variants: Sequence[str]) -> List[Tuple[str, Any]]:
    """The model itself plus MHA (kv heads = heads) / MQA (kv heads = 1) variants of a catalogued model."""
    m = _model(model)
    base = m.arch.n_kv_head
    kind = "MHA" if base == m.arch.n_head else "MQA" if base == 1 else "GQA"
    out = [(f"{kind} ({base} KV heads, as published)", m)]
    cfg = _catalog_config(model) if isinstance(model, str) else None
    if cfg is None:
        return out
    for v in variants:
        kv = {"MHA": m.arch.n_head, "MQA": 1}.get(v.upper())
        if kv is None:
            raise ValueError(f"unknown head variant '{v}'; valid: MHA, MQA")
        if kv == base:
            continue
        c = dict(cfg)
        c["num_key_value_heads"] = kv
        out.append((f"{v.upper()} variant ({kv} KV heads)", Model.from_hf_config(c)))
    return out


def kv_cache(model: Any = "llama-3.1-8b",
             context: Sequence[int] = (512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072), *,
             kv_dtypes: Sequence[str] = ("f16", "q8_0", "q4_0"), variants: Sequence[str] = ("MHA", "MQA"),
             batch: int = 1, weights_quant: Optional[str] = "BF16", title: Optional[str] = None, ax: Any = None
             ) -> Figure:
    """KV-cache bytes read per decode step and over a whole generation, GQA vs MHA/MQA, KV formats.

    Left: bytes each decode step reads from the KV cache at a given context (the whole cache), for the model
    as published (solid, per KV format) and as MHA / MQA variants (f16; catalogued models only), beside the
    weight bytes every step reads (``weights_quant``). Right: cumulative KV bytes read over a generation of n
    tokens from an empty cache — Σ over the steps, growing as n² (core: ``kv_cache_bytes_read``).
    """
    ctx = [int(c) for c in context]
    if not ctx:
        raise ValueError("kv_cache needs at least one context length")
    m = _model(model)
    fig, axes = _new_figure(ax, 2, (12.5, 5.0))
    heads = _head_variants(model, variants)
    data: Dict[str, Any] = {"model": m.id, "context": ctx, "batch": batch, "per_step": {}, "cumulative": {}}
    styles = ["-", "--", ":", "-."]
    lines = []
    for i, kv in enumerate(kv_dtypes):
        lines.append((f"{heads[0][0]}, KV {kv}", heads[0][1], kv, "C0", styles[i % len(styles)]))
    for j, (name, mv) in enumerate(heads[1:]):
        lines.append((f"{name}, KV {kv_dtypes[0]}", mv, kv_dtypes[0], f"C{j + 1}", "-"))
    for label, mv, kv, color, ls in lines:
        per = [_core.kv_cache_bytes(mv._core, batch, c, kv) for c in ctx]
        cum = [_core.kv_cache_bytes_read(mv._core, batch, 0, c, kv) for c in ctx]
        data["per_step"][label] = per
        data["cumulative"][label] = cum
        axes[0].plot(ctx, per, ls, color=color, marker="o", ms=3, lw=1.8, label=label, gid=f"per_step:{label}")
        if len(axes) == 2:
            axes[1].plot(ctx, cum, ls, color=color, marker="o", ms=3, lw=1.8, label=label,
                         gid=f"cumulative:{label}")
    if weights_quant:
        # the weights a decode step reads (every matrix but the embedding table; the active experts at this
        # batch): the core's count, from a plan on any device (the count does not depend on it)
        plan = _core.EstimatePlan(m._core, _device(_all_devices()[0])._core, weights_quant, "f16", False, "llama.cpp", 1,
                                  0)
        wb = plan.weights_read_per_step(float(batch))
        data["weight_bytes"] = wb
        axes[0].axhline(wb, color="gray", lw=1.2, ls="--", gid="weights")
        axes[0].annotate(f"weights ({weights_quant}) read every step: {_si(wb, 'B')} (no embedding table)",
                         (ctx[0], wb), xytext=(2, 4), textcoords="offset points", fontsize=8, color="gray")
    for a in axes:
        _log_axes(a, yunit="B")
        a.set_xscale("log", base=2)
        a.set_xticks(ctx, [f"{c // 1024}k" if c >= 1024 else str(c) for c in ctx])
        a.xaxis.set_minor_formatter(NullFormatter())
        a.legend(fontsize=7.5)
    axes[0].set_xlabel("context (tokens in the cache)")
    axes[0].set_ylabel(f"KV bytes read per decode step (B, batch {batch})")
    axes[0].set_title(title or f"{m.id}: KV cache read every step")
    if len(axes) == 2:
        axes[1].set_xlabel("tokens generated n (from an empty cache)")
        axes[1].set_ylabel("KV bytes read over the n steps (B)")
        axes[1].set_title("Cumulative KV reads grow as n²")
    return _keep(fig, data)


# ---- batching --------------------------------------------------------------------------------------------
def batching(model: Any = "llama-3.1-8b", device: DeviceLike = "h100-sxm", *, quant: str = "BF16",
             batches: Sequence[int] = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024),
             contexts: Sequence[int] = (128, 2048), dtype: str = "fp16", engine: str = "cuda-graphs",
             kv_dtype: str = "f16", flash_attention: Optional[bool] = None, title: Optional[str] = None, ax: Any = None
             ) -> Figure:
    """Decode arithmetic intensity and tokens/s vs batch, and where decode crosses the ridge point.

    One decode step at each context in ``contexts`` (tokens already in each sequence's cache) for each batch:
    left, its arithmetic intensity (FLOP per DRAM byte) beside the device's ridge point for ``dtype``, with
    the core's ``compute_bound_batch`` (the smallest batch whose step is compute-bound, derated ceilings)
    marked; right, aggregate decode tokens/s. Hollow points do not fit in the device's memory. Weights are
    read once per step whatever the batch, the KV cache once per sequence: long contexts cap the intensity,
    so batching alone may never cross the ridge. ``engine`` defaults to a compiled serving engine.
    """
    m = _model(model)
    d = _device(device)
    bs = [int(b) for b in batches]
    cs = [int(c) for c in contexts]
    if not bs or not cs:
        raise ValueError("batching needs at least one batch size and one context")
    fig, axes = _new_figure(ax, 2, (12.5, 5.0))
    ridge = d.ridge_point(dtype)
    data: Dict[str, Any] = {"model": m.id, "device": d.id, "quant": quant, "engine": engine, "dtype": dtype,
                            "ridge_point": ridge, "batches": bs, "contexts": {}}
    a0 = axes[0]
    a0.axhline(ridge, color="black", lw=1.5, ls="--", gid=f"ridge:{d.id}:dram")
    a0.annotate(f"{d.id} ridge point {ridge:.0f} FLOP/B ({dtype})", (bs[0], ridge), xytext=(2, -12),
                textcoords="offset points", fontsize=8)
    for i, c in enumerate(cs):
        color = f"C{i}"
        ests = [_estimate(model=m, quant=quant, device=d, prompt_tokens=c, gen_tokens=1, batch=b, engine=engine,
                          kv_dtype=kv_dtype, flash_attention=flash_attention) for b in bs]
        cd: Dict[str, Any] = {"decode_intensity": [e.decode_intensity for e in ests],
              "decode_tokens_per_s_total": [e.decode_tokens_per_s_total for e in ests],
              "decode_bound": [e.decode_bound for e in ests], "fits": [e.fits for e in ests],
              "compute_bound_batch": ests[0].compute_bound_batch}
        data["contexts"][c] = cd
        cbb = cd["compute_bound_batch"]
        label = f"context {c}: " + (f"compute-bound from batch {cbb:g}" if cbb else "never compute-bound")
        panels = [(a0, "decode_intensity")] + ([(axes[1], "decode_tokens_per_s_total")] if len(axes) == 2 else [])
        for a, key in panels:
            a.plot(bs, cd[key], "-", color=color, lw=1.8, label=label, gid=f"{key}:{c}")
            for b, y, fits in zip(bs, cd[key], cd["fits"]):
                a.plot([b], [y], "o", color=color, mfc=color if fits else "white", ms=5)
        if cbb:
            for a, _ in panels:
                a.axvline(cbb, color=color, lw=1, ls=":", gid=f"compute_bound_batch:{c}" if a is a0 else None)
    for a in axes:
        _log_axes(a)
        a.set_xscale("log", base=2)
        a.set_xticks(bs, [str(b) for b in bs], fontsize=8)
        a.xaxis.set_minor_formatter(NullFormatter())
        a.set_xlabel("batch (sequences decoded together)")
        a.legend(fontsize=8, loc="lower right")
    _plain_log_formatter(a0.yaxis)
    a0.set_ylabel("decode step arithmetic intensity (FLOP/byte)")
    a0.set_title(title or f"{m.id} {quant} on {d.id} ({engine}): decode intensity")
    if len(axes) == 2:
        axes[1].yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        axes[1].yaxis.set_major_formatter(_eng("tok/s"))
        axes[1].set_ylabel("decode tokens/s, all sequences (tok/s)")
        axes[1].set_title("Aggregate decode throughput (hollow: does not fit in memory)")
    return _keep(fig, data)


def serving(model: Any, quant: str, deployments: Union[DeviceLike, Sequence[Any]], *, prompt_tokens: int = 1000,
            gen_tokens: int = 1000, concurrency: Sequence[int] = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024),
            engine: str = "vllm", parallel: str = "TP1", x: str = "itl", title: Optional[str] = None,
            ax: Any = None) -> Figure:
    """Output tokens/s per GPU against inter-token latency (``x="itl"``) or TTFT (``x="ttft"``) over a sweep of
    closed-loop clients: the throughput-latency curve serving engines are compared by, one curve per deployment.

    ``deployments``: device ids, or (device, parallel) pairs ("h100-sxm", "TP4") to compare parallelisms; each point
    is one rp.serve at that concurrency (labelled with it), hollow where the queue grows past the scheduler's limit.
    """
    from .serving import serve_sweep

    if x not in ("itl", "ttft"):
        raise ValueError(f"serving: x must be 'itl' or 'ttft', got {x!r}")
    items = _as_list(deployments) if not isinstance(deployments, tuple) or len(deployments) != 2 or \
        not isinstance(deployments[1], str) else [deployments]
    deps: List[Tuple[Device, str]] = []
    for item in items:
        if isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[1], str):
            deps.append((_device(item[0]), item[1]))
        else:
            deps.append((_device(item), parallel))
    if not deps:
        raise ValueError("serving: give at least one device")
    conc = [int(c) for c in concurrency]
    if not conc:
        raise ValueError("serving: concurrency is empty")
    fig, axes = _new_figure(ax, 1, (8.0, 5.2))
    a = axes[0]
    m = _model(model)
    data: Dict[str, Any] = {"model": m.id, "quant": quant, "engine": engine, "prompt_tokens": prompt_tokens,
                            "gen_tokens": gen_tokens, "x": x, "curves": []}
    key = "itl_s" if x == "itl" else "ttft_s"
    for (d, par), color in zip(deps, _colors(len(deps))):
        df = serve_sweep(m, quant, d, prompt_tokens=prompt_tokens, gen_tokens=gen_tokens, concurrency=conc,
                         engine=engine, parallel=par)
        xs = [v * 1e3 for v in df[key]]
        ys = list(df["output_tokens_per_s_per_device"])
        queued = [b >= cap - 0.5 and c > cap for c, b, cap in zip(df["concurrency"], df["running_batch"],
                                                                 df["max_running_batch"])]
        label = f"{d.id} {par}"
        a.plot(xs, ys, "-", color=color, lw=1.8, label=label, gid=f"serving:{d.id}:{par}")
        for i, (c, xv, yv, q) in enumerate(zip(conc, xs, ys, queued)):
            a.plot([xv], [yv], "o", color=color, mfc="white" if q else color, ms=5)
            if len(conc) <= 6 or i % 2 == 0 or i == len(conc) - 1:  # every other label on long sweeps
                a.annotate(str(c), (xv, yv), xytext=(3, -9), textcoords="offset points", fontsize=7, color=color)
        data["curves"].append({"device": d.id, "parallel": par, "concurrency": conc,
                               key: list(df[key]), "output_tokens_per_s_per_device": ys,
                               "output_tokens_per_s": list(df["output_tokens_per_s"]),
                               "running_batch": list(df["running_batch"])})
    a.set_xscale("log")
    a.set_yscale("log")
    a.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    a.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    a.xaxis.set_minor_formatter(NullFormatter())
    a.yaxis.set_major_formatter(_eng("tok/s"))
    a.set_xlabel("inter-token latency (ms)" if x == "itl" else "time to first token (ms)")
    a.set_ylabel("output tokens/s per GPU")
    a.set_title(title or f"{m.id} {quant} served by {engine}, {prompt_tokens}/{gen_tokens} tokens\n"
                         f"labels: concurrent clients; hollow: more clients than the scheduler runs (queueing)",
                fontsize=10)
    a.grid(True, which="both", alpha=0.3)
    a.legend(fontsize=8, loc="lower right")
    _declutter(fig)
    return _keep(fig, data)


# ---- validation ------------------------------------------------------------------------------------------
def validation(fits: Any = None, *, title: Optional[str] = None, ax: Any = None) -> Figure:
    """Estimated against measured tokens/s on the calibration corpus: decode (left) and prefill (right), log-log.

    Every point of each engine fit of ``tests/validation/fits.json`` (``fits``: a fit's name or a list of names;
    default all, as ``rooflinepy validate`` lists them): the committed defaults' estimate (filled), the estimate of a
    fit made without the point's device (leave-one-device-out, hollow; where a fit's tables span two devices or more)
    and the pure roofline (grey ×). On the diagonal an estimate equals the measurement; the band is ±10 %. The legend
    gives each table's MAPE per phase. The numbers are :func:`rooflinepy.validation.cross_validate`'s (the core's
    fits and estimates) and :func:`rooflinepy.validation.cross_validation_summary`'s; one ``ax``: decode only.
    """
    from . import validation as _validation

    every = _validation.fits()
    names = [str(f["name"]) for f in every]
    chosen = list(names) if fits is None else [str(x) for x in _as_list(fits)]
    if not chosen:
        raise ValueError(f"validation: fits is empty; the fits are: {'; '.join(names)}")
    for n in chosen:
        if n not in names:
            raise ValueError(f"validation: unknown fit {n!r}; the fits are: {'; '.join(names)}")
    fig, axes = _new_figure(ax, 2, (12.5, 5.6))
    data: Dict[str, Any] = {"fits": chosen, "rows": [], "summary": []}
    for name in chosen:
        cv = _validation.cross_validate(every[names.index(name)])
        for s in _validation.cross_validation_summary(cv):
            data["summary"].append({"fit": name, **s})
        for r in cv.to_dict("records"):
            data["rows"].append({"fit": name, "table": r["table"], "device": r["device"], "model": r["model"],
                                 "quant": r["quant"], "test": r["test"], "phase": r["phase"],
                                 "measured": r["measured"], "defaults": r["defaults"], "lodo": r["lodo"],
                                 "roofline": r["roofline"]})
    tables = list(dict.fromkeys(r["table"] for r in data["rows"]))
    colors = dict(zip(tables, _colors(len(tables))))
    summary = {(s["table"], s["phase"]): s for s in data["summary"]}
    for a, phase in zip(axes, ("decode", "prefill")):
        rows = [r for r in data["rows"] if r["phase"] == phase]
        a.set_xlabel(f"measured {phase} tokens/s")
        a.set_ylabel(f"estimated {phase} tokens/s")
        values = [v for r in rows for v in (r["measured"], r["defaults"], r["lodo"], r["roofline"])
                  if math.isfinite(v) and v > 0]
        if not values:
            a.text(0.5, 0.5, f"no {phase} points in these fits", transform=a.transAxes, ha="center", va="center")
            a.set_xticks([])
            a.set_yticks([])
            continue
        lo, hi = min(values) / 1.3, max(values) * 1.3
        a.fill_between([lo, hi], [lo / 1.1, hi / 1.1], [lo * 1.1, hi * 1.1], color="0.5", alpha=0.12, lw=0,
                       label="±10 %")
        a.plot([lo, hi], [lo, hi], "-", color="0.3", lw=0.8)
        roof = [r for r in rows if r["roofline"] > 0]
        a.plot([r["measured"] for r in roof], [r["roofline"] for r in roof], "x", color="0.6", ms=4,
               label="pure roofline", gid=f"roofline:{phase}", zorder=2)
        for table in tables:
            own = [r for r in rows if r["table"] == table]
            if not own:
                continue
            s = summary[(table, phase)]
            a.plot([r["measured"] for r in own], [r["defaults"] for r in own], "o", color=colors[table], ms=4.5,
                   label=f"{table}: {s['defaults']:.1f} %", gid=f"defaults:{table}:{phase}", zorder=4)
            lodo = [r for r in own if math.isfinite(r["lodo"])]
            if lodo:
                a.plot([r["measured"] for r in lodo], [r["lodo"] for r in lodo], "o", mfc="none", color=colors[table],
                       ms=7, label=f"  leave-one-device-out: {s['lodo']:.1f} %", gid=f"lodo:{table}:{phase}",
                       zorder=3)
        _log_axes(a, "tok/s", "tok/s")
        a.set_xlim(lo, hi)
        a.set_ylim(lo, hi)
        a.set_title(f"{phase}: estimate against measurement (MAPE per table)", fontsize=10)
        a.legend(fontsize=7, loc="upper left")
    if title:
        fig.suptitle(title)
    return _keep(fig, data)
