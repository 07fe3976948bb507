"""Models, quantizations and LLM inference estimates. Every number comes from the C++ core."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import _core

_CATALOG: Optional[Dict[str, Path]] = None  # lower-case id or alias -> file
_IDS: List[str] = []
_MODEL_CACHE: Dict[str, "Model"] = {}


def _model_dir() -> Path:
    env = os.environ.get("ROOFLINEPY_MODEL_DB")
    if env:
        return Path(env)
    return Path(__file__).parent / "data" / "model_db"


def _catalog() -> Dict[str, Path]:
    global _CATALOG, _IDS
    if _CATALOG is None:
        cat: Dict[str, Path] = {}
        ids = []
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


class Model:
    """A decoder-only transformer: its architecture and weight tensors (wraps the core's Model)."""

    def __init__(self, core: "_core.Model"):
        self._m = core

    @classmethod
    def from_hf_config(cls, config: Union[str, os.PathLike, Mapping[str, Any]]) -> "Model":
        """From a HF config.json: a path, or the already-loaded dict. Offline."""
        if isinstance(config, Mapping):
            return cls(_core.Model.from_hf_config(json.dumps(dict(config)), "<dict>"))
        path = os.fspath(config)
        try:
            text = Path(path).read_text()
        except OSError as e:
            raise FileNotFoundError(f"cannot read HF config '{path}': {e.strerror}") from None
        return cls(_core.Model.from_hf_config(text, path))

    @classmethod
    def from_gguf(cls, path: Union[str, os.PathLike]) -> "Model":
        """From a GGUF file's header (never its tensor data): architecture, every tensor's format and bytes."""
        return cls(_core.Model.from_gguf(os.fspath(path)))

    @property
    def arch(self) -> "_core.Architecture":
        return self._m.arch

    @property
    def id(self) -> str:
        return self._m.arch.id or self._m.arch.model_type

    @property
    def parameters(self) -> float:
        """Σ elements of every weight tensor (a tied output head counted once)."""
        return self._m.parameters

    def weight_bytes(self, quant: str) -> float:
        """Bytes of every weight tensor under ``quant`` (a llama.cpp mix such as Q4_K_M, a GPU scheme, or "gguf")."""
        return self._m.weight_bytes(quant)

    def tensors(self, quant: str = "BF16"):
        """Every weight tensor with its format and bytes under ``quant``, as a DataFrame."""
        import pandas as pd

        return pd.DataFrame(self._m.tensors(quant))

    def __repr__(self) -> str:
        return repr(self._m)


def model(name: Union[str, Model]) -> Model:
    """A catalogued model by id or alias, case-insensitive."""
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


def quants() -> List[str]:
    """Every quantization name: llama.cpp mixes (Q4_K_M, Q8_0, BF16, ...) and GPU schemes (fp8, int4-g128, ...)."""
    return list(_core.quant_names())


def engines() -> List[str]:
    """Engine names (``engine=`` of estimate and sweep): llama.cpp, generic, cuda-graphs, gpt-fast."""
    return list(_core.engine_names())


def engine(name: str) -> dict:
    """What an engine does to the op list (launch cost scale, kernels for small GEMMs, whether dequantization hides
    under the loads, fused QKV, how tensor parallel splits the vocabulary and sums partial outputs) and its source."""
    return dict(_core.engine_info(name))


_BREAKDOWN_COLUMNS = ["phase", "op", "count", "flops", "bytes", "intensity", "seconds", "bound"]
_MEMORY_KEYS = ("weights", "kv_cache", "activations", "overhead", "total", "capacity", "fits")


class Estimate:
    """The estimate of one workload. Attributes mirror the core's; ``breakdown`` is a DataFrame."""

    _FIELDS = ["model", "quant", "device", "engine", "parameters", "weight_bytes", "bits_per_weight", "batch",
               "prompt_tokens", "gen_tokens", "tensor_parallel", "prefill_s", "prefill_tokens_per_s", "ttft_s",
               "decode_s", "decode_tokens_per_s", "decode_tokens_per_s_total", "total_s", "prefill_bound",
               "decode_bound", "decode_intensity", "compute_bound_batch", "max_batch", "max_context",
               "speculative_tokens_per_cycle"]

    def __init__(self, core: "_core.Estimate", breakdown_from: Optional[Tuple[Any, ...]] = None):
        # breakdown_from = (plan, batch, prompt, gen): the core estimate was made without its per-op rows; they are
        # made by the same plan when first asked for.
        self._e = core
        self._breakdown_from = breakdown_from
        v = core.values()  # every field in one call (order: see the core's Estimate.values)
        d = self.__dict__
        d.update(zip(self._FIELDS, v))
        self.memory: Dict[str, Any] = dict(zip(_MEMORY_KEYS, v[28:35]))
        self.fits: bool = v[34]
        self.ceilings: Dict[str, Any] = {
            "decode_weights_tokens_per_s": v[25],
            "decode_tokens_per_s": v[26],
            "prefill_tokens_per_s": v[27],
            "decode_bound": d["decode_bound"],
            "prefill_bound": d["prefill_bound"],
            "decode_intensity": d["decode_intensity"],
            "compute_bound_batch": d["compute_bound_batch"],
        }

    def _breakdown_rows(self) -> List[tuple]:
        if self._breakdown_from is not None:
            plan, batch, prompt, gen = self._breakdown_from
            self._e = plan.estimate(batch, prompt, gen, True)
            self._breakdown_from = None
        return self._e.breakdown_rows

    @property
    def breakdown(self):
        import pandas as pd

        return pd.DataFrame(self._breakdown_rows(), columns=_BREAKDOWN_COLUMNS)

    def to_dict(self) -> Dict[str, Any]:
        d = {f: getattr(self, f) for f in self._FIELDS}
        d["memory"] = dict(self.memory)
        d["fits"] = self.fits
        d["ceilings"] = dict(self.ceilings)
        d["breakdown"] = [dict(zip(_BREAKDOWN_COLUMNS, r)) for r in self._breakdown_rows()]
        return d

    def __repr__(self) -> str:
        return (f"<Estimate {self.model} {self.quant} on {self.device} ({self.engine}): "
                f"prefill {self.prefill_tokens_per_s:.1f} tok/s, decode {self.decode_tokens_per_s:.1f} tok/s, "
                f"TTFT {self.ttft_s * 1e3:.1f} ms, {'fits' if self.fits else 'does NOT fit'}>")


_DEVICES: Dict[str, Any] = {}  # device name as given -> Device, while the database stays the same object
_DEVICES_DB: List[Any] = [None]
_PLANS: Dict[tuple, tuple] = {}  # (model, device, configuration) -> (EstimatePlan, model, device)
_PLANS_MAX = 512


def _device(d):
    """A Device from a name (looked up once per name: the database returns a copy per call) or a Device."""
    from . import database, device

    if isinstance(d, str):
        db = database()
        if _DEVICES_DB[0] is not db:
            _DEVICES.clear()
            _DEVICES_DB[0] = db
        hit = _DEVICES.get(d)
        if hit is None:
            hit = device(d)
            if len(_DEVICES) < 4096:
                _DEVICES[d] = hit
        return hit
    return device(d)


def _plan(m: "Model", dev: Any, quant: str, kv_dtype: str, flash_attention: bool, engine: str,
          tensor_parallel: int) -> "_core.EstimatePlan":
    """The core's EstimatePlan for a configuration, built once and kept (the model and device objects are kept alive
    with it, so their ids stay theirs; both are immutable from Python)."""
    key = (id(m), id(dev), quant, kv_dtype, flash_attention, engine, tensor_parallel)
    hit = _PLANS.get(key)
    if hit is None:
        plan = _core.EstimatePlan(m._m, dev, quant, kv_dtype, flash_attention, engine, tensor_parallel)
        if len(_PLANS) >= _PLANS_MAX:
            _PLANS.pop(next(iter(_PLANS)))
        hit = _PLANS[key] = (plan, m, dev)
    return hit[0]


def estimate(model: Union[str, Model], quant: str, device: Any, prompt_tokens: int = 512, gen_tokens: int = 128,
             batch: int = 1, kv_dtype: str = "f16", flash_attention: bool = False, engine: str = "llama.cpp",
             tensor_parallel: int = 1, draft_model: Union[str, Model, None] = None, draft_quant: Optional[str] = None,
             draft_tokens: int = 0, acceptance: float = 0.0) -> Estimate:
    """Estimate prefill and decode of ``batch`` sequences of ``prompt_tokens`` then ``gen_tokens`` tokens.

    ``device`` is a name or a Device (a calibrated one too). Decode runs ``gen_tokens`` steps at contexts
    prompt+1 ... prompt+gen, summed in closed form. ``draft_model`` with ``draft_tokens`` (γ) and
    ``acceptance`` (α) turns on speculative decoding.
    """
    m = globals()["model"](model)
    dev = _device(device)
    if draft_model is None:  # a plan per configuration, kept: the estimate itself is O(1)
        plan = _plan(m, dev, quant, kv_dtype, flash_attention, engine, tensor_parallel)
        return Estimate(plan.estimate(batch, prompt_tokens, gen_tokens, False),
                        (plan, batch, prompt_tokens, gen_tokens))
    draft = globals()["model"](draft_model)._m
    return Estimate(_core.estimate(m._m, dev, quant, batch, prompt_tokens, gen_tokens, kv_dtype,
                                   flash_attention, engine, tensor_parallel, draft, draft_quant or "", draft_tokens,
                                   acceptance))


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


def calibrate_from_measurements(device: Any, measurements: Iterable[Mapping[str, Any]], engine: str = "llama.cpp",
                                kv_dtype: str = "f16", return_report: bool = False):
    """Fit the device's efficiency (achievable DRAM fraction, compute fraction, launch overhead) to measured
    tokens/s by least squares in the core. Each measurement: {"model", "quant", "test" (pp512 / tg128) or
    "prompt_tokens"/"gen_tokens", "tokens_per_s", optional "batch"}. Returns the calibrated Device (and the
    fit report with residuals when ``return_report``)."""
    def number(i: int, meas: Mapping[str, Any], key: str, default: Any = None) -> float:
        value = meas.get(key, default)
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ValueError(f"measurement {i}: field '{key}' must be a number, got {value!r}") from None

    points = []
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
        points.append((m._m, str(meas["quant"]), number(i, meas, "batch", 1), float(prompt), float(gen),
                       number(i, meas, "tokens_per_s"), label))
    dev, report = _core.calibrate_efficiency(_device(device), points, engine, kv_dtype)
    return (dev, report) if return_report else dev
