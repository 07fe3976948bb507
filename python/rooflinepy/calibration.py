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
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from . import _core
from ._core import Device
from ._core.calibration import Profile

__all__ = ["Profile", "load_profile", "parse_profile", "calibrated", "device_from_profile", "report",
           "calibrate_cpu", "fit_roofline", "time_eigen", "REPORT_COLUMNS"]

ProfileLike = Union[str, "os.PathLike[str]", Profile, Dict[str, Any]]

REPORT_COLUMNS = ["ceiling", "dtype", "unit", "level", "measured", "datasheet", "ratio", "si_unit", "kernel",
                  "cache", "min", "max", "repetitions", "verified", "feeds_model", "applied", "source", "note"]


def parse_profile(json_text: str, origin: str = "<string>") -> Profile:
    """A profile from JSON text, validated by the core (ValueError naming the field otherwise)."""
    return _core.calibration.parse_profile(json_text, origin)


def load_profile(source: ProfileLike) -> Profile:
    """A profile from a path, a parsed :class:`Profile`, or a dict of the profile's JSON."""
    if isinstance(source, Profile):
        return source
    if isinstance(source, dict):
        return parse_profile(json.dumps(source), "<dict>")
    return _core.calibration.load_profile(os.fspath(source))


def calibrated(device: Union[str, Device], profile: ProfileLike) -> Device:
    """``device`` with the profile's measured ceilings in place of the datasheet's (see ``Device.calibrated``)."""
    from . import device as _lookup

    return _core.calibration.calibrated(_lookup(device), load_profile(profile))


def device_from_profile(profile: ProfileLike) -> Device:
    """The measured device alone: for a CPU profile, the host itself (vendor 'host', kind 'cpu')."""
    return _core.calibration.device_from_profile(load_profile(profile))


def _datasheet(profile: Profile, device: Union[None, str, Device]) -> Optional[Device]:
    from . import database
    from . import device as _lookup

    if device is not None:
        return _lookup(device)
    did = _core.calibration.datasheet_device_id(profile.device_name, database())
    return database().get(did) if did else None


def report(profile: ProfileLike, device: Union[None, str, Device] = None):
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
    df = pd.DataFrame(_core.calibration.report(p, ds), columns=REPORT_COLUMNS)
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
    prof = _core.calibration.calibrate_cpu(quick=quick, threads=threads, pin=pin, dram_array_bytes=dram_array_bytes,
                                           repetitions=repetitions, options_text=options_text, verbose=verbose)
    if output is not None:
        text = prof.to_json()
        with open(os.fspath(output), "w", encoding="utf-8") as f:
            f.write(text + "\n")
        prof = parse_profile(text, os.fspath(output))
    return prof


def fit_roofline(points: Sequence[Tuple[float, float, float]], fit_overhead: bool = True,
                 fixed_overhead_s: float = 0.0) -> Dict[str, float]:
    """Fit ``seconds = max(bytes / bandwidth, flops / peak) + overhead`` to ``(flops, bytes, seconds)`` points."""
    return _core.calibration.fit_roofline([tuple(map(float, p)) for p in points], fit_overhead, fixed_overhead_s)


def time_eigen(op: str, m: int, n: int, k: int, dtype: str = "fp32", threads: int = 0, repetitions: int = 5,
               warmup: int = 1) -> Dict[str, Any]:
    """Time an Eigen GEMM (``op="gemm"``: C[m×n] = A[m×k]·B[k×n]) or GEMV (``op="gemv"``: y[n] = W[n×k]·x[k], m
    ignored) on the host's pinned threads: ``{median_s, min_s, max_s, flops, bytes, verified, ...}``."""
    return _core.calibration.time_eigen(op, m, n, k, dtype, threads, repetitions, warmup)
