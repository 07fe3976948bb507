"""Command-line pieces the subcommands share."""
from __future__ import annotations

import argparse
from typing import List, Optional

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
