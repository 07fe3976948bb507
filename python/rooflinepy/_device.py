"""Device and DeviceDB (wrappers of the core's, see :mod:`._wrap`) and the hardware database lookups."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple, Union

from . import _core
from ._roofline import OpCost, Timing, _core_op
from ._wrap import CoreAttribute

if TYPE_CHECKING:
    from .calibration import ProfileLike

__all__ = ["Device", "DeviceDB", "DeviceLike", "database", "device", "devices", "load_device"]


class Device:
    """A device of the hardware database: memory levels, compute peaks per format, efficiency, each with its source.

    Get one with :func:`rooflinepy.device` (by id or alias), :func:`rooflinepy.load_device` (a JSON file) or from a
    calibration profile. Immutable.
    """

    __slots__ = ("_core",)

    def __init__(self, core: _core.Device) -> None:
        self._core = core

    id: CoreAttribute[str] = CoreAttribute("database id (``a100-sxm-80gb``)")
    name: CoreAttribute[str] = CoreAttribute("marketing name")
    vendor: CoreAttribute[str] = CoreAttribute("vendor (nvidia, amd, apple, host ...)")
    family: CoreAttribute[str] = CoreAttribute("product family")
    kind: CoreAttribute[str] = CoreAttribute("'gpu', 'cpu', 'soc' ...")
    architecture: CoreAttribute[str] = CoreAttribute("micro-architecture")
    aliases: CoreAttribute[List[str]] = CoreAttribute("other names it is found by")
    release_year: CoreAttribute[int] = CoreAttribute("year of release (0: unknown)")
    compute_units: CoreAttribute[int] = CoreAttribute("SMs, CUs or GPU cores")
    compute_unit_name: CoreAttribute[str] = CoreAttribute("what a compute unit is called (SM, CU, core)")
    boost_clock_hz: CoreAttribute[float] = CoreAttribute("boost clock [Hz]")
    vector_clock_hz: CoreAttribute[float] = CoreAttribute(
        "clock of the vector peaks where the tensor peaks are quoted at a lower one [Hz] (0: the boost clock)")
    tdp_w: CoreAttribute[float] = CoreAttribute("board power [W] (0: unknown)")
    notes: CoreAttribute[str] = CoreAttribute("free-text notes of the database entry")
    origin: CoreAttribute[str] = CoreAttribute("the file (or profile) the device was read from")
    sram_per_unit_bytes: CoreAttribute[float] = CoreAttribute("on-chip SRAM of one compute unit [B]")
    l2_working_set: CoreAttribute[float] = CoreAttribute(
        "L2 a working set can count on [B]: its measured working set, else its capacity (0: no L2 in the data)")
    interconnect_bandwidth: CoreAttribute[float] = CoreAttribute(
        "device-to-device bandwidth, one direction [B/s] (0: none)")

    @property
    def efficiency(self) -> Dict[str, Any]:
        """Derating: dram_bandwidth_fraction, dram_applies_to_measured, compute_fraction, launch_overhead_s, source,
        uncertain."""
        d: Dict[str, Any] = self._core.efficiency
        return d

    def peak_flops(self, dtype: str, unit: str = "matrix") -> float:
        """Dense peak FLOP/s; unit ``"matrix"`` falls back to ``"vector"`` where the device has no matrix units."""
        return self._core.peak_flops(dtype, unit)

    def issue_lanes_per_s(self) -> float:
        """Thread instructions the compute units issue per second (an NVIDIA SM: 128 per clock) at the clock of the
        vector peaks: the rate of a kernel bound by its instruction issue; 0 where the data does not say."""
        return self._core.issue_lanes_per_s()

    def peak_unit(self, dtype: str, unit: str = "matrix") -> str:
        """The unit whose peak ``peak_flops(dtype, unit)`` returns (``"matrix"`` falls back to ``"vector"``)."""
        return self._core.peak_unit(dtype, unit)

    def bandwidth(self, level: str = "dram") -> float:
        """Bytes/s of a memory level: ``"dram"``, ``"l2"`` or ``"sram"``."""
        return self._core.bandwidth(level)

    def capacity(self, level: str = "dram") -> float:
        """Bytes of a memory level (SRAM: summed over compute units)."""
        return self._core.capacity(level)

    def ridge_point(self, dtype: str, level: str = "dram", unit: str = "matrix") -> float:
        """Peak FLOP/s over bandwidth: the arithmetic intensity (FLOP/byte) where an op stops being memory-bound."""
        return self._core.ridge_point(dtype, level, unit)

    def ridge_multiple(self, op: OpCost, dtype: str, level: str = "dram", unit: str = "matrix") -> float:
        """The op's arithmetic intensity as a multiple of this device's ridge point."""
        return self._core.ridge_multiple(_core_op(op), dtype, level, unit)

    def time(self, op: OpCost, ideal: bool = False) -> Timing:
        """Roofline time of an op. ``ideal=True``: datasheet ceilings, no launch overhead; default: derated by the
        device's efficiency and with launch overhead."""
        return Timing(self._core.time(_core_op(op), ideal))

    def compute_peaks(self) -> List[Dict[str, Any]]:
        """Every compute peak: dtype, unit, flops_per_s, source, uncertain."""
        return self._core.compute_peaks()

    def memory_levels(self) -> List[Dict[str, Any]]:
        """Every memory level: level, type, bandwidth (B/s, None if unknown), capacity (B), source, uncertain; an L2
        with a measured working set also working_set (B)."""
        return self._core.memory_levels()

    def to_json(self, indent: int = 2) -> str:
        """Schema-conforming JSON of this device (hardware_db/schema.json)."""
        return self._core.to_json(indent)

    def to_dict(self) -> Dict[str, Any]:
        """The device's JSON (:meth:`to_json`) as a dict."""
        d: Dict[str, Any] = json.loads(self._core.to_json())
        return d

    def calibrated(self, profile: ProfileLike) -> Device:
        """This device with a calibration profile's measured ceilings in place of the datasheet's (path, Profile or
        dict). Measured ceilings are marked measured and not derated again; a measured launch overhead replaces the
        efficiency's; a measurement above the datasheet is applied and flagged in its record's 'uncertain'."""
        from . import calibration

        return calibration.calibrated(self, profile)

    def __repr__(self) -> str:
        return repr(self._core)

    def __reduce__(self) -> Tuple[Callable[..., Device], Tuple[_core.Device]]:
        return Device, (self._core,)

    def _repr_html_(self) -> str:
        from ._html import device_html

        return device_html(self)


DeviceLike = Union[str, Device, _core.Device]
"""What a function taking a device accepts: an id or alias, a :class:`Device`, or the core's Device."""


class DeviceDB:
    """Devices by id or alias, case-insensitive. :func:`rooflinepy.database` is the installed hardware_db."""

    __slots__ = ("_core",)

    def __init__(self, core: Optional[_core.DeviceDB] = None) -> None:
        self._core: _core.DeviceDB = _core.DeviceDB() if core is None else core

    @staticmethod
    def load_directory(directory: Union[str, os.PathLike[str]]) -> DeviceDB:
        """Every device JSON file of a folder, validated (errors name the file and the field)."""
        return DeviceDB(_core.DeviceDB.load_directory(os.fspath(directory)))

    @staticmethod
    def default_directory() -> str:
        """The core's default hardware_db folder."""
        return _core.DeviceDB.default_directory()

    def add(self, device: DeviceLike) -> None:
        """Add a device (a copy); its id and aliases must be new."""
        self._core.add(_core_device(device))

    def get(self, name: str) -> Device:
        """A device by id or alias (KeyError naming the closest otherwise)."""
        return Device(self._core.get(name))

    def ids(self) -> List[str]:
        """Every id, sorted."""
        return self._core.ids()

    def __len__(self) -> int:
        return len(self._core)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._core

    def __repr__(self) -> str:
        return f"<DeviceDB of {len(self)} devices>"


_DB: Optional[DeviceDB] = None


def _hardware_dir() -> str:
    return str(Path(_core.data_directory()) / "hardware_db")


def database() -> DeviceDB:
    """The hardware database, loaded once (``$ROOFLINE_DATA_DIR/hardware_db`` overrides the installed one)."""
    global _DB
    if _DB is None:
        _DB = DeviceDB.load_directory(_hardware_dir())
    return _DB


def devices() -> List[str]:
    """Ids of every device in the database, sorted."""
    return database().ids()


def device(name: DeviceLike) -> Device:
    """A device by id or alias, case-insensitive (``"a100"``, ``"H100-SXM"``, ``"m4-pro"``); a Device is returned
    as it is."""
    if isinstance(name, Device):
        return name
    return Device(_core_device(name))


def _core_device(d: DeviceLike) -> _core.Device:
    """The core's Device of a name, a Device or a core Device."""
    if isinstance(d, Device):
        return d._core
    if isinstance(d, _core.Device):
        return d
    if not isinstance(d, str):
        raise TypeError(f"device must be a device id (str) or a Device, got {d!r} ({type(d).__name__})")
    return database()._core.get(d)


def load_device(path: Union[str, os.PathLike[str]]) -> Device:
    """A device from a JSON file of the hardware_db schema (not added to the database)."""
    from ._validate import path as _path

    return Device(_core.load_device(_path(path, "path", "load_device")))
