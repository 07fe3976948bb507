"""Calibration: a device's measured ceilings (a profile; format in ``calibration/README.md``) against its datasheet.

>>> import rooflinepy as rp
>>> prof = rp.calibration.calibrate_cpu("host.json", quick=True)   # doctest: +SKIP
>>> host = rp.device_from_profile("host.json")                       # doctest: +SKIP
>>> dev = rp.device("h200").calibrated("h200.json")                  # doctest: +SKIP
>>> rp.calibration.report("h200.json")                               # doctest: +SKIP

Every number comes from the C++ core (``rooflinepy._core.calibration``); this module loads, converts and tabulates.
"""
from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple, Union, cast

from . import _core
from ._device import Device, DeviceLike, _core_device, database
from ._device import device as _lookup
from ._wrap import CoreAttribute

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Profile", "ProfileLike", "load_profile", "parse_profile", "calibrated", "device_from_profile", "report",
           "calibrate_cpu", "fit_roofline", "time_eigen", "REPORT_COLUMNS"]


class Profile:
    """A calibration profile: what a tool measured on one device (format in ``calibration/README.md``)."""

    __slots__ = ("_core",)

    def __init__(self, core: _core.calibration.Profile) -> None:
        self._core = core

    date: CoreAttribute[str] = CoreAttribute("when it was measured (ISO 8601)")
    tool_name: CoreAttribute[str] = CoreAttribute("the tool that measured it")
    tool_version: CoreAttribute[str] = CoreAttribute("the tool's version")
    origin: CoreAttribute[str] = CoreAttribute("the file it was read from")
    notes: CoreAttribute[str] = CoreAttribute("free-text notes")
    device_name: CoreAttribute[str] = CoreAttribute("the device's name as its runtime reports it")
    device_kind: CoreAttribute[str] = CoreAttribute("'gpu' or 'cpu'")

    @property
    def measurements(self) -> List[Dict[str, Any]]:
        """One dict per measured ceiling: ceiling, level, dtype, unit, kernel, min, median, max, si_unit, ..."""
        return self._core.measurements

    @property
    def fits(self) -> List[Dict[str, Any]]:
        """Roofline fits of swept kernels: name, kernel, model, the fitted ceilings and the points."""
        return self._core.fits

    def to_json(self, indent: int = 2) -> str:
        """The profile as schema-conforming JSON text."""
        return self._core.to_json(indent)

    def __repr__(self) -> str:
        return repr(self._core)


ProfileLike = Union[str, "os.PathLike[str]", Profile, _core.calibration.Profile, Dict[str, Any]]
"""A profile, its path, or a dict of its JSON."""

REPORT_COLUMNS = ["ceiling", "dtype", "unit", "level", "measured", "datasheet", "ratio", "si_unit", "kernel",
                  "cache", "min", "max", "repetitions", "verified", "feeds_model", "applied", "source", "note"]


def parse_profile(json_text: str, origin: str = "<string>") -> Profile:
    """A profile from JSON text, validated by the core (ValueError naming the field otherwise)."""
    return Profile(_core.calibration.parse_profile(json_text, origin))


def load_profile(source: ProfileLike) -> Profile:
    """A profile from a path, a parsed :class:`Profile`, or a dict of the profile's JSON."""
    if isinstance(source, Profile):
        return source
    if isinstance(source, _core.calibration.Profile):
        return Profile(source)
    if isinstance(source, dict):
        return parse_profile(json.dumps(source), "<dict>")
    from ._validate import path as _path

    return Profile(_core.calibration.load_profile(_path(source, "profile", "load_profile")))


def calibrated(device: DeviceLike, profile: ProfileLike) -> Device:
    """``device`` with the profile's measured ceilings in place of the datasheet's (see ``Device.calibrated``)."""
    return Device(_core.calibration.calibrated(_core_device(device), load_profile(profile)._core))


def device_from_profile(profile: ProfileLike) -> Device:
    """The measured device alone: for a CPU profile, the host itself (vendor 'host', kind 'cpu')."""
    return Device(_core.calibration.device_from_profile(load_profile(profile)._core))


def _datasheet(profile: Profile, device: Optional[DeviceLike]) -> Optional[Device]:
    if device is not None:
        return _lookup(device)
    did = _core.calibration.datasheet_device_id(profile.device_name, database()._core)
    return database().get(did) if did else None


def report(profile: ProfileLike, device: Optional[DeviceLike] = None) -> pd.DataFrame:
    """Measured vs datasheet, one row per measured (or fitted) ceiling, as a pandas DataFrame.

    ``device``: the datasheet to compare with (an id, alias or Device); by default the database device whose name
    the runtime-reported name matches ("NVIDIA H200" -> h200-sxm), or none (a host CPU), when the datasheet columns
    are empty. Columns: ceiling, dtype, unit, level, measured, datasheet, ratio (measured / datasheet), si_unit,
    kernel, cache, min, max, repetitions, verified, feeds_model, applied (the measurement the model takes), source
    (of the datasheet number), note. ``df.attrs`` holds the profile's origin and the datasheet device's id.
    """
    import pandas as pd

    p = load_profile(profile)
    ds = _datasheet(p, device)
    df = pd.DataFrame(_core.calibration.report(p._core, None if ds is None else ds._core), columns=REPORT_COLUMNS)
    for col in ("datasheet", "ratio"):
        df[col] = df[col].astype(float)
    for col in ("dtype", "unit", "level", "cache", "source", "note"):
        df[col] = df[col].astype(object).where(df[col].notna(), None)
    df.attrs["profile"] = p.origin
    df.attrs["device"] = ds.id if ds is not None else None
    df.attrs["measured_device"] = p.device_name
    return df


def calibrate_cpu(output: Union[None, str, "os.PathLike[str]"] = None, *, quick: bool = False, threads: int = 0,
                  pin: bool = True, dram_array_bytes: float = 0.0, repetitions: int = 0, verbose: bool = False,
                  options_text: str = "") -> Profile:
    """Measure this host's ceilings (about a minute; ``quick=True``: seconds, smaller arrays) and return the profile;
    write it to ``output`` when given. The measurement runs in C++ with the GIL released."""
    from . import _validate as _v

    out = None if output is None else _v.path(output, "output", "calibrate_cpu")
    threads = _v.whole(threads, "threads", "calibrate_cpu", 0, 1 << 20)  # the core bounds it by this host's CPUs
    f = None
    if out is not None:  # opened before a minute of measuring, so that a bad path fails at once
        if os.path.isdir(out):
            raise ValueError(f"calibrate_cpu: output '{out}' is a directory; give a file name (host.json)")
        try:
            f = open(out, "w", encoding="utf-8")
        except OSError as e:
            raise ValueError(f"calibrate_cpu: cannot write output '{out}': {e.strerror or e}") from None
    try:
        prof = Profile(_core.calibration.calibrate_cpu(quick=quick, threads=threads, pin=pin,
                                                       dram_array_bytes=dram_array_bytes, repetitions=repetitions,
                                                       options_text=options_text, verbose=verbose))
        if f is not None and out is not None:
            text = prof.to_json()
            try:
                f.write(text + "\n")
                f.close()
            except OSError as e:
                raise ValueError(f"calibrate_cpu: cannot write output '{out}': {e.strerror or e}") from None
            prof = parse_profile(text, out)
    finally:
        if f is not None and not f.closed:
            try:
                f.close()
            except OSError:
                pass
    return prof


def fit_roofline(points: Sequence[Tuple[float, float, float]], fit_overhead: bool = True,
                 fixed_overhead_s: float = 0.0) -> Dict[str, float]:
    """Fit ``seconds = max(bytes / bandwidth, flops / peak) + overhead`` to ``(flops, bytes, seconds)`` points."""
    # each point as floats; the core checks it holds three
    pts = cast(List[Tuple[float, float, float]], [tuple(map(float, p)) for p in points])
    fit: Dict[str, float] = _core.calibration.fit_roofline(pts, fit_overhead, fixed_overhead_s)
    return fit


def time_eigen(op: str, m: int, n: int, k: int, dtype: str = "fp32", threads: int = 0, repetitions: int = 5,
               warmup: int = 1) -> Dict[str, Any]:
    """Time an Eigen GEMM (``op="gemm"``: C[m×n] = A[m×k]·B[k×n]) or GEMV (``op="gemv"``: y[n] = W[n×k]·x[k], m
    ignored) on the host's pinned threads: ``{median_s, min_s, max_s, flops, bytes, verified, ...}``."""
    run: Dict[str, Any] = _core.calibration.time_eigen(op, m, n, k, dtype, threads, repetitions, warmup)
    return run
