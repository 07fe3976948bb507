"""The checks every public entry point makes of its arguments before the core sees them: type and, where the core
does not already check it, meaning. Each raises TypeError or ValueError naming the function, the parameter, the
value and what is allowed; the core checks ranges (and names the parameter the same way)."""
from __future__ import annotations

import numbers
import os
from typing import Any, Optional, Tuple, Type, Union

PathLike = Union[str, "os.PathLike[str]"]


def flag(value: Any, name: str, where: str, *, ints: bool = False,
         allowed: str = "True or False") -> bool:
    """True/False (numpy's too; with ``ints`` also 1/0, as a table column holds them); a string such as 'false' is
    refused, not read as true."""
    t = type(value)
    if value is None:
        raise TypeError(f"{where}: {name} must be {allowed}, got None")
    if t is bool or (t.__module__ == "numpy" and t.__name__ in ("bool_", "bool")):  # numpy 2 calls it numpy.bool
        return bool(value)
    if ints and isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise TypeError(f"{where}: {name} must be {allowed}, got {value!r}")


def optional_flag(value: Any, name: str, where: str, *, ints: bool = False) -> Optional[bool]:
    """flag(), or None: the engine's default."""
    return None if value is None else flag(value, name, where, ints=ints,
                                           allowed="True, False or None (the engine's default)")


def number(value: Any, name: str, where: str, *, allow_none: bool = False) -> Optional[float]:
    """A real number (int, float, numpy's); the core checks its range. None only where allowed."""
    t = type(value)
    if t is float or t is int:  # the common case, without the ABC check below (bool is neither)
        return float(value)
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        allowed = "a number" + (" or None" if allow_none else "")
        raise TypeError(f"{where}: {name} must be {allowed}, got {value!r} ({type(value).__name__})")
    return float(value)


def whole(value: Any, name: str, where: str, lo: int, hi: int) -> int:
    """A whole number within [lo, hi] (an integral float too)."""
    v = number(value, name, where)
    assert v is not None
    if not (lo <= v <= hi) or v != int(v):
        raise ValueError(f"{where}: {name} must be a whole number within [{lo}, {hi}], got {value!r}")
    return int(v)


def text(value: Any, name: str, where: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{where}: {name} must be a str, got {value!r} ({type(value).__name__})")
    return value


def instance(value: Any, types: Tuple[Type[Any], ...], name: str, where: str, allowed: str) -> Any:
    if not isinstance(value, types):
        raise TypeError(f"{where}: {name} must be {allowed}, got {value!r} ({type(value).__name__})")
    return value


def path(value: Any, name: str, where: str) -> str:
    """A file path (str or os.PathLike) without a NUL character (the OS would open the file named before it)."""
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{where}: {name} must be a path (str or os.PathLike), got {value!r} ({type(value).__name__})")
    p = os.fspath(value)
    if not isinstance(p, str):
        raise TypeError(f"{where}: {name} must be a text path, got {p!r}")
    if "\0" in p:
        raise ValueError(f"{where}: {name} {p!r} contains a NUL character; a file name cannot hold one")
    return p
