"""OpCost (what an op does) and Timing (what it takes on a device): wrappers of the core's, see :mod:`._wrap`."""
from __future__ import annotations

import copy
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

from . import _core
from ._wrap import CoreAttribute


class OpCost:
    """FLOPs by unit and number format, bytes read and written per memory level, and kernel launches of one op.

    Made by the builders of :mod:`rooflinepy.ops` (``OpCost()`` is the empty op); ``a + b`` is both ops,
    ``k * a`` (or ``a.scaled(k)``) ``k`` repetitions of ``a``. Every count is the core's.
    """

    __slots__ = ("_core",)

    def __init__(self, core: Optional[_core.OpCost] = None) -> None:
        self._core: _core.OpCost = _core.OpCost() if core is None else core

    @property
    def name(self) -> str:
        """The op's label (``"gemm 4096x4096x4096"`` ...); may be set."""
        return self._core.name

    @name.setter
    def name(self, value: str) -> None:
        self._core.name = value

    flops: CoreAttribute[float] = CoreAttribute("FLOPs, every unit and format (1 FMA = 2 FLOPs)")
    bytes: CoreAttribute[float] = CoreAttribute("DRAM bytes read + written")
    arithmetic_intensity: CoreAttribute[float] = CoreAttribute("FLOP per DRAM byte")
    launches: CoreAttribute[float] = CoreAttribute("kernel launches")

    def bytes_at(self, level: str) -> float:
        """Bytes read + written at a memory level: ``"dram"``, ``"l2"`` or ``"sram"``."""
        return self._core.bytes_at(level)

    def bytes_read(self, level: str = "dram") -> float:
        """Bytes read at a memory level."""
        return self._core.bytes_read(level)

    def bytes_written(self, level: str = "dram") -> float:
        """Bytes written at a memory level."""
        return self._core.bytes_written(level)

    def intensity_at(self, level: str) -> float:
        """FLOP per byte at a memory level."""
        return self._core.intensity_at(level)

    def flops_of(self, unit: str, dtype: str) -> float:
        """FLOPs on one unit (``"matrix"`` or ``"vector"``) in one number format."""
        return self._core.flops_of(unit, dtype)

    def scaled(self, factor: float) -> OpCost:
        """Every count × ``factor`` (``factor`` repetitions of the op)."""
        return OpCost(self._core.scaled(factor))

    def __add__(self, other: OpCost) -> OpCost:
        if not isinstance(other, OpCost):
            return NotImplemented
        return OpCost(self._core + other._core)

    def __mul__(self, factor: float) -> OpCost:
        return OpCost(self._core * factor)

    def __rmul__(self, factor: float) -> OpCost:
        return OpCost(self._core * factor)

    def to_dict(self) -> Dict[str, Any]:
        """name, flops, flop_terms (unit, dtype, flops, overlapped, issue), bytes_read_<level>, bytes_written_<level>,
        bytes, arithmetic_intensity, launches."""
        d: Dict[str, Any] = self._core.to_dict()
        return d

    def __repr__(self) -> str:
        return repr(self._core)

    def __reduce__(self) -> Tuple[Callable[..., OpCost], Tuple[_core.OpCost]]:
        return OpCost, (self._core,)

    def __copy__(self) -> OpCost:  # a copy of its own (the name may be set), as the core's copy is
        return OpCost(copy.copy(self._core))

    def __deepcopy__(self, memo: Dict[int, Any]) -> OpCost:
        return self.__copy__()

    def _repr_html_(self) -> str:
        from ._html import opcost_html

        return opcost_html(self)


def _core_op(op: Union[OpCost, _core.OpCost]) -> _core.OpCost:
    """The core's OpCost of an OpCost (or of the core's own)."""
    if isinstance(op, OpCost):
        return op._core
    if not isinstance(op, _core.OpCost):
        raise TypeError(f"op must be an OpCost (rp.ops.gemm(...), ...), got {op!r} ({type(op).__name__})")
    return op


class CeilingTimes:
    """Seconds against each ceiling of one evaluation; ``total()`` is the timing rule:
    max(overlapped compute, each memory level) + serial compute + launch overhead."""

    __slots__ = ("_core",)

    def __init__(self, core: _core.CeilingTimes) -> None:
        self._core = core

    matrix_s: CoreAttribute[float] = CoreAttribute("compute on matrix units overlapped with memory traffic")
    vector_s: CoreAttribute[float] = CoreAttribute("compute on vector units overlapped with memory traffic")
    serial_s: CoreAttribute[float] = CoreAttribute("compute not overlapped with memory traffic")
    overhead_s: CoreAttribute[float] = CoreAttribute("fixed cost of the kernels")

    @property
    def memory_s(self) -> List[float]:
        """DRAM, L2, SRAM seconds."""
        return list(self._core.memory_s)

    def total(self, matrix_utilization: float = 1.0) -> float:
        """The timing rule, in seconds."""
        return self._core.total(matrix_utilization)

    def bound(self, matrix_utilization: float = 1.0) -> str:
        """The ceiling the total is set by: 'compute', 'memory:<level>', 'overhead' or 'none'."""
        return self._core.bound(matrix_utilization)

    def __repr__(self) -> str:
        return (f"<CeilingTimes matrix {self.matrix_s:.4g} s, vector {self.vector_s:.4g} s, serial {self.serial_s:.4g} "
                f"s, memory {self.memory_s} s, overhead {self.overhead_s:.4g} s>")


class Timing:
    """The roofline time of an op on a device (``device.time(op)``) and what bounds it."""

    __slots__ = ("_core",)

    def __init__(self, core: _core.Timing) -> None:
        self._core = core

    seconds: CoreAttribute[float] = CoreAttribute("the op's time")
    bound: CoreAttribute[str] = CoreAttribute(
        "'compute' | 'memory:dram' | 'memory:l2' | 'memory:sram' | 'overhead' | 'none'")
    compute_seconds: CoreAttribute[float] = CoreAttribute("all compute, matrix and vector, its serial part included")
    serial_seconds: CoreAttribute[float] = CoreAttribute(
        "the part of compute_seconds not overlapped with memory traffic (derated only)")
    overhead_seconds: CoreAttribute[float] = CoreAttribute("launches × launch overhead")
    flops: CoreAttribute[float] = CoreAttribute("the op's FLOPs")
    attainable_flops: CoreAttribute[float] = CoreAttribute("FLOP/s the roofline allows the op")
    achieved_flops: CoreAttribute[float] = CoreAttribute("flops / seconds")
    ceilings: CoreAttribute[str] = CoreAttribute("'ideal' (datasheet, no overhead) or 'derated'")

    @property
    def times(self) -> CeilingTimes:
        """Seconds against each ceiling."""
        return CeilingTimes(self._core.times)

    @property
    def memory_seconds(self) -> Dict[str, float]:
        """Seconds of each memory level the op was timed against, by level name."""
        d: Dict[str, float] = self._core.memory_seconds
        return d

    def to_dict(self) -> Dict[str, Any]:
        """seconds, bound, compute/serial/overhead seconds, memory_seconds_<level> (None: not evaluated), flops,
        attainable_flops, achieved_flops, ceilings."""
        d: Dict[str, Any] = self._core.to_dict()
        return d

    def __repr__(self) -> str:
        return repr(self._core)

    def __reduce__(self) -> Tuple[Callable[..., Timing], Tuple[_core.Timing]]:
        return Timing, (self._core,)

    def _repr_html_(self) -> str:
        from ._html import timing_html

        return timing_html(self)
