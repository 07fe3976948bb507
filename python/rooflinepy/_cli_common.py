"""Command-line pieces the subcommands share."""
from __future__ import annotations

import argparse
import json
import math
from typing import Any, List, Mapping, Optional

_FLASH = {"on": True, "1": True, "off": False, "0": False, "auto": None}


def add_flash_attn(p: argparse.ArgumentParser, both: bool = False) -> None:
    """-fa / --flash-attn as llama-bench takes it: on, off or auto (the engine's default); a bare -fa is on."""
    choices = list(_FLASH) + (["both"] if both else [])
    p.add_argument("-fa", "--flash-attn", nargs="?", const="on", default="auto", choices=choices,
                   help="flash attention: on, off or auto, the engine's default (llama-bench's -fa auto)"
                   + ("; both: off and on" if both else ""))


def flash_attn(value: str) -> Optional[bool]:
    """The -fa value as estimate() takes it: True, False or None (the engine's default)."""
    return _FLASH[value]


def flash_attn_axis(value: str) -> List[Optional[bool]]:
    """The -fa value as a sweep axis."""
    return [False, True] if value == "both" else [_FLASH[value]]


def _strict(x: Any) -> Any:
    """``x`` with every non-finite float as None, arrays and numpy scalars as plain lists and numbers."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, Mapping):
        return {k: _strict(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_strict(v) for v in x]
    tolist = getattr(x, "tolist", None)  # numpy arrays and scalars
    if callable(tolist) and not isinstance(x, (str, bytes)):
        return _strict(tolist())
    return x


def json_text(data: Any) -> str:
    """What every ``--json`` prints: ``data`` as strict JSON (RFC 8259), indented. A value the numbers lack (NaN: a
    leave-one-out of a one-device fit, a datasheet figure not given) or an unbounded one (inf) is null; json.dumps
    alone would write the NaN / Infinity tokens that jq, JSON.parse and most parsers reject. Objects JSON has no
    type for are written as their str()."""
    return json.dumps(_strict(data), indent=2, allow_nan=False, default=str)
