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

__version__: str = _core.__version__

__all__ = [
    "__version__", "Device", "DeviceDB", "OpCost", "Timing", "ops",
    "devices", "device", "database", "dtypes", "data_dir", "load_device", "evaluate",
]

_DB: Optional[DeviceDB] = None


def data_dir() -> Path:
    """Folder of the installed databases (``hardware_db``)."""
    return Path(__file__).resolve().parent / "data"


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
