"""rooflinepy: how fast can this operator, this model, on this device, possibly go — and what stops it?

A thin Python layer over the C++ core (``rooflinepy._core``). Every FLOP and byte is counted in the core;
this package turns names into objects and results into Python values, tables and plots.

One wrapping style (see :mod:`rooflinepy._wrap`): every public type is a Python class holding its core object in
``_core`` and delegating to it, typed for mypy (the core itself is typed by the generated stubs ``_core/*.pyi``).
Device and DeviceDB live in ``_device.py``, OpCost, Timing and CeilingTimes in ``_roofline.py``, Engine,
EngineBackend and LinearKernel in ``_engine.py``, Model, Architecture, Estimate and FitReport in ``inference.py``,
Profile in ``calibration.py``.
"""
from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Dict, List

from . import _core


def data_dir() -> Path:
    """Folder of the installed databases (``hardware_db``, ``engine_db``, ``model_db``)."""
    return Path(__file__).parent / "data"


_core.set_data_directory(str(data_dir()))  # the installed databases, unless $ROOFLINE_DATA_DIR names others

from . import ops  # noqa: E402
from ._device import Device, DeviceDB, DeviceLike, _core_device, database, device, devices, load_device  # noqa: E402
from ._engine import Engine, EngineBackend, LinearKernel, engine, engines  # noqa: E402
from ._roofline import CeilingTimes, OpCost, Timing, _core_op  # noqa: E402
from .inference import (Architecture, Estimate, FitReport, Model, ModelLike, calibrate_from_measurements,  # noqa: E402
                        estimate, model, models, quants)
from .inference import model as _model  # noqa: E402  (for functions whose argument is called model)

__version__: str = _core.__version__

__all__ = [
    "__version__", "Device", "DeviceDB", "DeviceLike", "OpCost", "Timing", "CeilingTimes", "ops",
    "devices", "device", "database", "dtypes", "data_dir", "load_device", "evaluate",
    "Model", "ModelLike", "Architecture", "Estimate", "FitReport", "Engine", "EngineBackend", "LinearKernel",
    "models", "model", "quants", "engine", "engines", "estimate", "calibrate_from_measurements",
]


def dtypes() -> List[str]:
    """Names of the number formats devices have peaks for."""
    return _core.dtypes()


def evaluate(op: OpCost, device: DeviceLike, ideal: bool = False) -> Timing:
    """Roofline time of ``op`` on ``device`` (same as ``device.time(op)``)."""
    return Timing(_core.evaluate(_core_op(op), _core_device(device), ideal))


# ---- serving: continuous batching on a deployment (rooflinepy.serving) ------------------------------------------
from .serving import AllReduceTime, ServingEstimate, all_reduce_time, parse_parallel, serve, serve_sweep  # noqa: E402

__all__ += ["serve", "serve_sweep", "parse_parallel", "ServingEstimate", "all_reduce_time", "AllReduceTime"]

# ---- calibration: measured ceilings (rooflinepy.calibration) -------------------------------------------------
from . import calibration  # noqa: E402


def device_from_profile(profile: calibration.ProfileLike) -> Device:
    """The measured device alone, from a calibration profile (path, Profile or dict): for a CPU profile the host
    itself (vendor 'host', kind 'cpu', family 'host-cpu'), every ceiling measured."""
    return calibration.device_from_profile(profile)


__all__ += ["calibration", "device_from_profile"]

# ---- rp.explore: the interactive explorer for Jupyter (ipywidgets is optional, imported when called) --------------
from .explore import Explorer, explore  # noqa: E402

__all__ += ["explore", "Explorer"]


# ---- rp.plot, loaded on first use (matplotlib is optional) ----------------------------------------------------
if TYPE_CHECKING:
    from . import plot
else:
    def __getattr__(name: str) -> ModuleType:
        if name == "plot":
            return importlib.import_module(".plot", __name__)
        raise AttributeError(f"module 'rooflinepy' has no attribute '{name}'")


def format_info(name: str) -> Dict[str, Any]:
    """A number format's size and work: bits and bytes per element (scales included), the format its
    arithmetic runs in, dequantization FLOPs per element (``"fp16"``, ``"Q4_K"``, ``"int4-g128"`` ...)."""
    return dict(_core.format_info(name))


def kv_cache_bytes(model: ModelLike, context: float, batch: float = 1, kv_dtype: str = "f16") -> float:
    """Bytes of the KV cache of ``batch`` sequences of ``context`` tokens: what one decode step reads."""
    return _core.kv_cache_bytes(_model(model)._core, batch, context, kv_dtype)


def kv_cache_bytes_read(model: ModelLike, gen_tokens: float, prompt_tokens: float = 0, batch: float = 1,
                        kv_dtype: str = "f16") -> float:
    """KV-cache bytes read over ``gen_tokens`` decode steps after ``prompt_tokens``: each step reads the whole
    cache, so this grows as gen_tokens² (closed form in the core; sliding-window layers capped)."""
    return _core.kv_cache_bytes_read(_model(model)._core, batch, prompt_tokens, gen_tokens, kv_dtype)


__all__ += ["plot", "format_info", "kv_cache_bytes", "kv_cache_bytes_read"]


# ---- sweeps and the inverse questions (rooflinepy.sweep): every point estimated in the core ---------------------
from .sweep import BatchAnswer, StreamedSweep, cheapest, max_batch, pareto, sweep, sweep_chunks  # noqa: E402

__all__ += ["sweep", "sweep_chunks", "StreamedSweep", "max_batch", "cheapest", "pareto", "BatchAnswer"]
