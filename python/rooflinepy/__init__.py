"""rooflinepy: how fast can this operator, this model, on this device, possibly go — and what stops it?

A thin Python layer over the C++ core (``rooflinepy._core``). Every FLOP and byte is counted in the core;
this package turns names into objects and results into Python values, tables and plots.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import List, Optional, Union

from . import _core
from ._core import Device, DeviceDB, OpCost, Timing
from . import ops
from .inference import (Estimate, Model, calibrate_from_measurements, engine, engines, estimate, model, models,
                        quants)

__version__: str = _core.__version__

__all__ = [
    "__version__", "Device", "DeviceDB", "OpCost", "Timing", "ops",
    "devices", "device", "database", "dtypes", "data_dir", "load_device", "evaluate",
    "Model", "Estimate", "models", "model", "quants", "engine", "engines", "estimate", "calibrate_from_measurements",
]

_DB: Optional[DeviceDB] = None


def data_dir() -> Path:
    """Folder of the installed databases (``hardware_db``)."""
    return Path(__file__).parent / "data"


def _hardware_dir() -> str:
    env = os.environ.get("ROOFLINEPY_HARDWARE_DB")
    if env:
        return env
    return str(data_dir() / "hardware_db")


def database() -> DeviceDB:
    """The hardware database, loaded once (``$ROOFLINEPY_HARDWARE_DB`` overrides the installed one)."""
    global _DB
    if _DB is None:
        _DB = DeviceDB.load_directory(_hardware_dir())
    return _DB


def devices() -> List[str]:
    """Ids of every device in the database, sorted."""
    return database().ids()


def device(name: Union[str, Device]) -> Device:
    """A device by id or alias, case-insensitive (``"a100"``, ``"H100-SXM"``, ``"m4-pro"``)."""
    if isinstance(name, Device):
        return name
    return database().get(name)


def load_device(path: Union[str, os.PathLike]) -> Device:
    """A device from a JSON file of the hardware_db schema (not added to the database)."""
    return _core.load_device(os.fspath(path))


def dtypes() -> List[str]:
    """Names of the number formats devices have peaks for."""
    return _core.dtypes()


def evaluate(op: OpCost, device: Union[str, Device], ideal: bool = False) -> Timing:
    """Roofline time of ``op`` on ``device`` (same as ``device.time(op)``)."""
    return _core.evaluate(op, globals()["device"](device), ideal)


def _device_to_dict(self: Device) -> dict:
    import json

    return json.loads(self.to_json())


Device.to_dict = _device_to_dict  # type: ignore[attr-defined]


# ---- calibration: measured ceilings (rooflinepy.calibration) -------------------------------------------------
from . import calibration  # noqa: E402


def device_from_profile(profile: "calibration.ProfileLike") -> Device:
    """The measured device alone, from a calibration profile (path, Profile or dict): for a CPU profile the host
    itself (vendor 'host', kind 'cpu', family 'host-cpu'), every ceiling measured."""
    return calibration.device_from_profile(profile)


def _device_calibrated(self: Device, profile: "calibration.ProfileLike") -> Device:
    """This device with a calibration profile's measured ceilings in place of the datasheet's (path, Profile or
    dict). Measured ceilings are marked measured and not derated again; a measured launch overhead replaces the
    efficiency's; a measurement above the datasheet is applied and flagged in its record's 'uncertain'."""
    return calibration.calibrated(self, profile)


Device.calibrated = _device_calibrated  # type: ignore[attr-defined]
__all__ += ["calibration", "device_from_profile"]


# ---- notebooks: HTML tables (_repr_html_) and rp.plot (loaded on first use: matplotlib is optional) ----------
from . import _html  # noqa: E402,F401  (attaches _repr_html_ to Device, OpCost, Timing, Estimate)


def __getattr__(name: str):
    if name == "plot":
        import importlib

        return importlib.import_module(".plot", __name__)
    raise AttributeError(f"module 'rooflinepy' has no attribute '{name}'")


def format_info(name: str) -> dict:
    """A number format's size and work: bits and bytes per element (scales included), the format its
    arithmetic runs in, dequantization FLOPs per element (``"fp16"``, ``"Q4_K"``, ``"int4-g128"`` ...)."""
    return dict(_core.format_info(name))


def kv_cache_bytes(model: "Union[str, Model]", context: float, batch: float = 1, kv_dtype: str = "f16") -> float:
    """Bytes of the KV cache of ``batch`` sequences of ``context`` tokens: what one decode step reads."""
    return _core.kv_cache_bytes(globals()["model"](model)._m, batch, context, kv_dtype)


def kv_cache_bytes_read(model: "Union[str, Model]", gen_tokens: float, prompt_tokens: float = 0, batch: float = 1,
                        kv_dtype: str = "f16") -> float:
    """KV-cache bytes read over ``gen_tokens`` decode steps after ``prompt_tokens``: each step reads the whole
    cache, so this grows as gen_tokens² (closed form in the core; sliding-window layers capped)."""
    return _core.kv_cache_bytes_read(globals()["model"](model)._m, batch, prompt_tokens, gen_tokens, kv_dtype)


__all__ += ["plot", "format_info", "kv_cache_bytes", "kv_cache_bytes_read"]


# ---- sweeps and the inverse questions (rooflinepy.sweep): every point estimated in the core ---------------------
from .sweep import BatchAnswer, cheapest, max_batch, pareto, sweep  # noqa: E402

__all__ += ["sweep", "max_batch", "cheapest", "pareto", "BatchAnswer"]
