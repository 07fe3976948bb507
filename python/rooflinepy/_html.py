"""HTML tables for Jupyter of Device, OpCost, Timing and Estimate: what their ``_repr_html_`` methods return.

Every number shown is read from the object (the core's result); nothing is computed here but unit prefixes.
"""
from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING, Any, Iterable, List, Optional, Sequence

if TYPE_CHECKING:
    from ._device import Device
    from ._roofline import OpCost, Timing
    from .inference import Estimate

_STYLE = ("<style>.rooflinepy-table td,.rooflinepy-table th{padding:2px 8px;text-align:left}"
          ".rooflinepy-table td.num{text-align:right;font-variant-numeric:tabular-nums}"
          ".rooflinepy-table caption{font-weight:bold;text-align:left}</style>")


def _si(x: Optional[float], unit: str = "", digits: int = 4) -> str:
    if x is None:
        return "-"
    if x != x:  # NaN
        return "-"
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= factor:
            return f"{x / factor:.{digits}g} {prefix}{unit}"
    return f"{x:.{digits}g} {unit}".rstrip()


def _seconds(s: Optional[float]) -> str:
    if s is None:
        return "-"
    if s == 0:
        return "0 s"
    for factor, unit in ((1, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")):
        if s >= factor:
            return f"{s / factor:.4g} {unit}"
    return f"{s:.3g} s"


def _cell(v: Any, num: bool = False, title: Optional[str] = None) -> str:
    cls = ' class="num"' if num else ""
    t = f' title="{escape(title)}"' if title else ""
    return f"<td{cls}{t}>{escape(str(v))}</td>"


def _table(caption: str, header: Sequence[str], rows: Iterable[Sequence[Any]], numeric: Sequence[int] = ()) -> str:
    out: List[str] = [f'<table class="rooflinepy-table"><caption>{escape(caption)}</caption>']
    if header:
        out.append("<tr>" + "".join(f"<th>{escape(h)}</th>" for h in header) + "</tr>")
    for r in rows:
        cells: List[str] = []
        for i, v in enumerate(r):
            if isinstance(v, tuple):  # (text, tooltip)
                cells.append(_cell(v[0], i in numeric, v[1]))
            else:
                cells.append(_cell(v, i in numeric))
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "".join(out)


def _looks_numeric(v: Any) -> bool:
    """A value right-aligned as a number: one that starts like one ('3.35 TB/s', '-', '0.8'), not a word."""
    s = str(v[0] if isinstance(v, tuple) else v).strip()
    return bool(s) and (s[0].isdigit() or (s[0] in "+-." and len(s) > 1 and s[1].isdigit()))


def _kv(caption: str, pairs: Iterable[Sequence[Any]]) -> str:
    """A two-column table of (name, value): names left-aligned, values right-aligned where they are numbers."""
    out: List[str] = [f'<table class="rooflinepy-table"><caption>{escape(caption)}</caption>']
    for name, value in pairs:
        tip = value[1] if isinstance(value, tuple) else None
        text = value[0] if isinstance(value, tuple) else value
        out.append("<tr>" + _cell(name) + _cell(text, _looks_numeric(text), tip) + "</tr>")
    out.append("</table>")
    return "".join(out)


# ---- Device ----------------------------------------------------------------------------------------------
def device_html(d: Device) -> str:
    head = [("id", d.id), ("aliases", ", ".join(d.aliases) or "-"), ("vendor / family", f"{d.vendor} / {d.family}"),
            ("compute units", f"{d.compute_units} {d.compute_unit_name}s"),
            ("boost clock", _si(d.boost_clock_hz, "Hz"))]
    if d.vector_clock_hz:
        head.append(("vector clock", _si(d.vector_clock_hz, "Hz")))
    if d.tdp_w:
        head.append(("TDP", f"{d.tdp_w:.0f} W"))
    mem_rows: List[List[Any]] = []
    for m in d.memory_levels():
        note = m["source"] + (f" (uncertain: {m['uncertain']})" if m["uncertain"] else "")
        capacity = _si(m["capacity"], "B") + (f" ({_si(m['working_set'], 'B')} working set)" if m.get("working_set") else "")
        mem_rows.append([m["level"], m["type"], (_si(m["bandwidth"], "B/s"), note), capacity])
    comp_rows: List[List[Any]] = []
    for p in d.compute_peaks():
        try:
            ridge = f"{d.ridge_point(p['dtype'], level='dram', unit=p['unit']):.1f}"
        except KeyError:
            ridge = "-"
        note = p["source"] + (f" (uncertain: {p['uncertain']})" if p["uncertain"] else "")
        comp_rows.append([p["dtype"], p["unit"], (_si(p["flops_per_s"], "OP/s" if p["dtype"].startswith("int") else "FLOP/s"), note), ridge])
    e = d.efficiency
    eff = (f"{e['dram_bandwidth_fraction']:.2f} of DRAM bandwidth, {e['compute_fraction']:.2f} of compute, "
           f"{_seconds(e['launch_overhead_s'])} per launch")
    return (_STYLE + f"<div><b>{escape(d.name)}</b>" + _kv("device", head)
            + _table("memory (hover a bandwidth for its source)", ["level", "type", "bandwidth", "capacity"],
                     mem_rows, numeric=(2, 3))
            + _table("compute, dense (hover a peak for its source)",
                     ["format", "unit", "peak", "ridge point vs DRAM (FLOP/B)"], comp_rows, numeric=(2, 3))
            + f"<p>efficiency: {escape(eff)}</p></div>")


# ---- OpCost ----------------------------------------------------------------------------------------------
def opcost_html(op: OpCost) -> str:
    dd = op.to_dict()
    rows = [("FLOPs", _si(op.flops, "FLOP"))]
    for t in dd.get("flop_terms", []):
        rows.append((f"  {t['unit']} {t['dtype']}", _si(t["flops"], "FLOP")))
    rows.append(("arithmetic intensity (DRAM)", f"{op.arithmetic_intensity:.4g} FLOP/B"))
    for level in ("dram", "l2", "sram"):
        r, w = op.bytes_read(level), op.bytes_written(level)
        if r or w or level == "dram":
            rows.append((f"{level.upper()} bytes read / written", f"{_si(r, 'B')} / {_si(w, 'B')}"))
    rows.append(("DRAM bytes total", _si(op.bytes, "B")))
    rows.append(("kernel launches", f"{op.launches:g}"))
    return _STYLE + _kv(f"OpCost {op.name}", rows)


# ---- Timing ----------------------------------------------------------------------------------------------
def timing_html(t: Timing) -> str:
    rows = [("time", _seconds(t.seconds)), ("bound", t.bound), ("compute time", _seconds(t.compute_seconds))]
    for level, s in t.memory_seconds.items():
        rows.append((f"{level.upper()} time", _seconds(s)))
    rows += [("launch overhead", _seconds(t.overhead_seconds)), ("FLOPs", _si(t.flops, "FLOP")),
             ("attainable (roofline)", _si(t.attainable_flops, "FLOP/s")),
             ("achieved", _si(t.achieved_flops, "FLOP/s")), ("ceilings", t.ceilings)]
    return _STYLE + _kv("Timing", rows)


# ---- Estimate --------------------------------------------------------------------------------------------
def estimate_html(e: Estimate) -> str:
    c = e.ceilings
    mem = e.memory
    head = [("model", e.model), ("quantization", f"{e.quant} ({e.bits_per_weight:.3g} bits/weight, "
                                                 f"{_si(e.weight_bytes, 'B')})"),
            ("device / engine", f"{e.device} / {e.engine}"),
            ("attention", f"KV cache {e.kv_dtype}, flash attention {'on' if e.flash_attention else 'off'}"),
            ("workload", f"batch {e.batch:g}, prompt {e.prompt_tokens:g}, generate {e.gen_tokens:g}"
                         + (f", {e.tensor_parallel} devices ({e.split_mode} split)" if e.tensor_parallel > 1 else ""))]
    def ival(lo: float, hi: float) -> str:
        return f"{lo:.4g} – {hi:.4g}" if hi > 0 else "-"

    perf = [["prefill", f"{e.prefill_tokens_per_s:.4g}", ival(*e.prefill_tokens_per_s_interval),
             f"{c['prefill_tokens_per_s']:.4g}", e.prefill_bound or "-", _seconds(e.prefill_s)],
            ["decode (per sequence)", f"{e.decode_tokens_per_s:.4g}", ival(*e.decode_tokens_per_s_interval),
             f"{c['decode_tokens_per_s']:.4g}", e.decode_bound or "-", _seconds(e.decode_s)]]
    if e.batch > 1:
        perf.append(["decode (all sequences)", f"{e.decode_tokens_per_s_total:.4g}", "", "", "", ""])
    more = [("TTFT", _seconds(e.ttft_s)), ("total time", _seconds(e.total_s)),
            ("decode ceiling from weights alone", f"{c['decode_weights_tokens_per_s']:.4g} tok/s"),
            ("decode arithmetic intensity", f"{e.decode_intensity:.4g} FLOP/B"),
            ("compute-bound from batch", f"{e.compute_bound_batch:g}" if e.compute_bound_batch else "never (≤ 1e6)")]
    if e.speculative_tokens_per_cycle:
        more.append(("speculative tokens per target pass", f"{e.speculative_tokens_per_cycle:.4g}"))
    memory = [(k, _si(mem[k], "B")) for k in ("weights", "kv_cache", "activations", "overhead", "total", "capacity")]
    memory.append(("fits", "yes" if e.fits else "NO"))
    memory += [("max batch that fits", f"{e.max_batch:g}"), ("max context that fits", f"{e.max_context:g}")]
    return (_STYLE + "<div>" + _kv("Estimate", head)
            + _table("throughput", ["phase", "tokens/s", "prediction interval", "roofline tokens/s", "bound", "time"], perf,
                     numeric=(1, 3, 5))
            + _kv("details", more) + _kv("memory", memory) + "</div>")

