"""``rp.explore()``: an interactive explorer for Jupyter (ipywidgets, the optional ``explore`` extra).

Pick a model, quantization, device(s), engine, batch, prompt / generated tokens and context; the explorer shows
tokens/s with its prediction interval and the bound of each phase for every device picked, the first device's
estimate with its per-op breakdown, and its roofline with the model's ops on it. Every control change makes one
``rp.estimate`` call per device (a kept plan: microseconds) and redraws; every number shown is the core's.

A combination the core refuses (a format the engine cannot run on that device, a prompt past the model's
context, ...) shows the core's message in place of the numbers; nothing raises from a control change.

>>> import rooflinepy as rp
>>> ex = rp.explore(model="llama-3.1-8b", quant="Q4_K_M", devices=["m4-pro", "rtx-4090"])
>>> ex                                    # in a notebook: the controls and the panels
>>> ex.controls["batch"].value = 8        # what a user's click does; ex.estimates now holds batch 8
"""
from __future__ import annotations

import io
from html import escape
from typing import Any, Dict, List, Optional, Sequence, Union

from . import _core
from . import _validate as _v
from ._device import devices as _all_devices
from ._engine import engines as _all_engines
from ._html import _STYLE, _seconds, _table, estimate_html
from .inference import Estimate, ModelLike, Model
from .inference import estimate as _estimate
from .inference import model as _model
from .inference import models as _all_models
from .inference import quants as _all_quants

__all__ = ["explore", "Explorer", "LIMITS"]

LIMITS: Dict[str, int] = {"batch": 65536, "prompt_tokens": 1 << 22, "gen_tokens": 1 << 22, "context_tokens": 1 << 22,
                          "ubatch_tokens": 1 << 16}
"""The largest value each integer control accepts (its widget's max); the smallest is 1 (0 for context_tokens
and gen_tokens, and for ubatch_tokens, where 0 means the engine's default)."""

_INT_MIN = {"batch": 1, "prompt_tokens": 1, "gen_tokens": 0, "context_tokens": 0, "ubatch_tokens": 0}


def _widgets() -> Any:
    try:
        import ipywidgets  # type: ignore[import-untyped]
    except ImportError:
        raise ImportError("rp.explore needs ipywidgets: pip install 'rooflinepy[explore]'") from None
    return ipywidgets


class Explorer:
    """The widgets of :func:`explore` and what they show. ``controls`` maps each input's name (``model``,
    ``quant``, ``devices``, ``engine``, ``kv_dtype``, ``flash_attention``, ``batch``, ``prompt_tokens``,
    ``gen_tokens``, ``context_tokens``, ``ubatch_tokens``) to its widget; ``estimates`` holds the current estimate
    per device (empty while ``error`` says why there is none); ``summary``, ``details`` (HTML) and ``figure``
    (a PNG image) are the panels; ``widget`` is the whole box, which a notebook displays."""

    def __init__(self, model: ModelLike, quant: str, devices: Sequence[str], engine: str, batch: int,
                 prompt_tokens: int, gen_tokens: int, context_tokens: int, kv_dtype: str, flash_attention: Optional[bool],
                 ubatch_tokens: int, figure: bool, max_ops: int) -> None:
        w = _widgets()
        self._figure_enabled = figure
        self._max_ops = max_ops
        self.estimates: Dict[str, Estimate] = {}
        self.error: str = ""
        self.updates: int = 0
        self._custom_model: Optional[Model] = model if isinstance(model, Model) else None
        model_options = _all_models()
        model_value = _model(model).id if self._custom_model is None else "(given model)"
        if self._custom_model is not None:
            model_options = ["(given model)"] + model_options
        device_options = _all_devices()
        devices = [_device_id(d) for d in devices]  # ids for aliases; the core's did-you-mean for unknown names
        quant_options = _all_quants()
        if quant not in quant_options:
            quant_options = [quant] + quant_options  # the core judges it (a GGUF name it knows under another case)
        engine_options = _all_engines()
        if engine not in engine_options:
            raise KeyError(_core.unknown_name_message("engine", engine, engine_options))
        kv_options = _core.kv_format_names()
        if kv_dtype not in kv_options:
            raise KeyError(_core.unknown_name_message("kv_dtype", kv_dtype, kv_options))
        layout = w.Layout(width="auto")
        style = {"description_width": "initial"}
        c: Dict[str, Any] = {
            "model": w.Dropdown(options=model_options, value=model_value, description="model", style=style),
            "quant": w.Dropdown(options=quant_options, value=quant, description="quant", style=style),
            "devices": w.SelectMultiple(options=device_options, value=tuple(devices), rows=6, description="devices",
                                        style=style),
            "engine": w.Dropdown(options=engine_options, value=engine, description="engine", style=style),
            "kv_dtype": w.Dropdown(options=kv_options, value=kv_dtype, description="KV cache", style=style),
            "flash_attention": w.Dropdown(options=[("engine's default", "auto"), ("on", "on"), ("off", "off")],
                                          value={None: "auto", True: "on", False: "off"}[flash_attention],
                                          description="flash attention"),
        }
        ints = {"batch": batch, "prompt_tokens": prompt_tokens, "gen_tokens": gen_tokens,
                "context_tokens": context_tokens, "ubatch_tokens": ubatch_tokens}
        labels = {"batch": "batch", "prompt_tokens": "prompt tokens", "gen_tokens": "generated tokens",
                  "context_tokens": "context (already cached)", "ubatch_tokens": "micro-batch (0: engine's)"}
        for name, value in ints.items():
            lo, hi = _INT_MIN[name], LIMITS[name]
            if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
                raise ValueError(f"explore: {name} must be an integer in [{lo}, {hi}], got {value!r}")
            c[name] = w.BoundedIntText(value=value, min=lo, max=hi, description=labels[name], style=style,
                                       layout=w.Layout(width="240px"))
        self.controls = c
        self.summary = w.HTML()
        self.details = w.HTML()
        self.figure = w.Image(format="png", layout=w.Layout(max_width="760px"))
        left = w.VBox([c["model"], c["quant"], c["engine"], c["kv_dtype"], c["flash_attention"]], layout=layout)
        mid = w.VBox([c["batch"], c["prompt_tokens"], c["gen_tokens"], c["context_tokens"], c["ubatch_tokens"]],
                     layout=layout)
        panels: List[Any] = [w.HBox([left, mid, c["devices"]]), self.summary]
        panels += [w.HBox([self.details, self.figure])] if figure else [self.details]
        self.widget = w.VBox(panels)
        for widget in c.values():
            widget.observe(self._on_change, names="value")
        self.update()

    # ---- what a control change does -----------------------------------------------------------------------
    def _on_change(self, _change: Any) -> None:
        self.update()

    def _model_value(self) -> ModelLike:
        name = self.controls["model"].value
        if name == "(given model)" and self._custom_model is not None:
            return self._custom_model
        return str(name)

    def values(self) -> Dict[str, Any]:
        """The inputs as the controls hold them now (keyword arguments of ``rp.estimate``, plus ``devices``)."""
        c = self.controls
        ub = int(c["ubatch_tokens"].value)
        return {"model": self._model_value(), "quant": c["quant"].value, "devices": list(c["devices"].value),
                "engine": c["engine"].value, "kv_dtype": c["kv_dtype"].value,
                "flash_attention": {"auto": None, "on": True, "off": False}[c["flash_attention"].value],
                "batch": int(c["batch"].value),
                "prompt_tokens": int(c["prompt_tokens"].value), "gen_tokens": int(c["gen_tokens"].value),
                "context_tokens": int(c["context_tokens"].value), "ubatch_tokens": ub if ub > 0 else None}

    def update(self) -> None:
        """Estimate every device picked with the controls' values and redraw the panels (what each control change
        calls)."""
        v = self.values()
        self.updates += 1
        devices = v.pop("devices")
        self.estimates = {}
        errors: List[str] = []
        if not devices:
            errors.append("pick at least one device")
        for d in devices:
            try:
                self.estimates[d] = _estimate(device=d, **v)
            except (ValueError, KeyError, TypeError) as e:
                errors.append(f"{d}: {e.args[0] if e.args else e}")
        self.error = "; ".join(errors)
        self.summary.value = self._summary_html(errors)
        first = next(iter(self.estimates.values()), None)
        self.details.value = "" if first is None else self._details_html(first)
        if self._figure_enabled:
            self.figure.value = b"" if first is None else self._figure_png(first)

    # ---- the panels -----------------------------------------------------------------------------------------
    def _summary_html(self, errors: List[str]) -> str:
        def rate(x: float, lo: float, hi: float) -> str:
            return f"{x:.4g} ({lo:.4g} – {hi:.4g})" if x > 0 and hi > 0 else f"{x:.4g}"

        rows = [[d, rate(e.prefill_tokens_per_s, *e.prefill_tokens_per_s_interval), e.prefill_bound or "-",
                 rate(e.decode_tokens_per_s, *e.decode_tokens_per_s_interval), e.decode_bound or "-",
                 f"{e.decode_tokens_per_s_total:.4g}", _seconds(e.ttft_s), "yes" if e.fits else "NO"]
                for d, e in self.estimates.items()]
        html = _STYLE + _table("tokens/s (prediction interval) and the bound of each phase",
                               ["device", "prefill tok/s", "prefill bound", "decode tok/s per sequence",
                                "decode bound", "decode tok/s, all sequences", "TTFT", "fits"],
                               rows, numeric=(1, 3, 5, 6))
        if errors:
            html += "".join(f'<p class="rooflinepy-error" style="color:#b00">{escape(e)}</p>' for e in errors)
        return html

    def _details_html(self, e: Estimate) -> str:
        rows = [[r[0], r[1], r[9] or "-", f"{r[2]:g}", f"{r[5]:.3g}", _seconds(r[6]), f"{r[8]:.3g}", r[7]]
                for r in e._breakdown_rows() if r[6] > 0]
        return (estimate_html(e)
                + _table(f"breakdown on {e.device} (every op of each phase)",
                         ["phase", "op", "kernel", "count", "FLOP/B", "time", "FLOP/s", "bound"], rows,
                         numeric=(3, 4, 5, 6)))

    def _figure_png(self, e: Estimate) -> bytes:
        from matplotlib.figure import Figure

        from . import plot

        fig = Figure(figsize=(7.6, 5.2))
        ax = fig.add_subplot()
        plot.roofline(e.device, e, dtype="fp16", ax=ax, max_ops=self._max_ops,
                      title=f"{e.model} {e.quant} on {e.device} ({e.engine}): the slowest ops of each phase")
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=80, bbox_inches="tight")
        return buf.getvalue()

    # ---- display --------------------------------------------------------------------------------------------
    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)

    def __repr__(self) -> str:
        v = self.values()
        shown = ", ".join(f"{d}: decode {e.decode_tokens_per_s:.4g} tok/s" for d, e in self.estimates.items())
        model = v["model"] if isinstance(v["model"], str) else v["model"].id
        return f"<Explorer {model} {v['quant']} ({v['engine']}) — {shown or self.error}>"


def _device_id(name: str) -> str:
    from ._device import device

    return device(name).id  # KeyError with the core's did-you-mean message for an unknown name


def explore(model: ModelLike = "llama-3.1-8b", quant: str = "Q4_K_M",
            devices: Union[str, Sequence[str]] = ("m4-pro", "rtx-4090"), *, engine: str = "llama.cpp",
            batch: int = 1, prompt_tokens: int = 512, gen_tokens: int = 128, context_tokens: int = 0,
            kv_dtype: str = "f16", flash_attention: Optional[bool] = None, ubatch_tokens: int = 0, figure: bool = True,
            max_ops: int = 6) -> Explorer:
    """An interactive explorer of ``rp.estimate`` for Jupyter (needs ipywidgets: ``pip install
    'rooflinepy[explore]'``): the controls start at these values; display the result in a notebook cell.

    ``devices``: device ids (a comma-separated string too). ``ubatch_tokens`` 0: the engine's micro-batch.
    ``figure=False`` leaves out the roofline (no matplotlib needed); ``max_ops`` ops of each phase are drawn.
    """
    if isinstance(devices, str):
        devices = [d.strip() for d in devices.split(",") if d.strip()]
    if not isinstance(devices, (list, tuple)) or not all(isinstance(d, str) for d in devices):
        raise TypeError(f"explore: devices must be device ids (a list of str, or one comma-separated str), "
                        f"got {devices!r}")
    _v.optional_flag(flash_attention, "flash_attention", "explore")
    _v.flag(figure, "figure", "explore")
    if isinstance(max_ops, bool) or not isinstance(max_ops, int) or not 1 <= max_ops <= 64:
        raise ValueError(f"explore: max_ops must be an integer in [1, 64], got {max_ops!r}")
    _v.instance(model, (str, Model), "model", "explore", "a catalogue id or a Model")
    return Explorer(model, quant, list(devices), engine, batch, prompt_tokens, gen_tokens, context_tokens, kv_dtype,
                    flash_attention, ubatch_tokens, figure, max_ops)
