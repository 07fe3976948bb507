"""How the public types wrap the core: composition, one way.

Every public type is a Python class holding its C++ object in the slot ``_core``; its attributes and methods delegate
to that object, so mypy sees the Python signatures and the stubs (``_core/*.pyi``) type what comes back. A plain
attribute of the core object is declared with :class:`CoreAttribute`; anything that converts (names to objects, core
results to their wrappers) is an ordinary method or property.
"""
from __future__ import annotations

from typing import Any, Generic, Optional, TypeVar, overload

T = TypeVar("T")


class CoreAttribute(Generic[T]):
    """A read-only attribute of the wrapped core object: ``obj.name`` is ``obj._core.name``, of type ``T``.

    ``id: CoreAttribute[str] = CoreAttribute("the device id")`` in a class body declares ``obj.id`` a ``str``
    with that docstring.
    """

    def __init__(self, doc: str) -> None:
        self.__doc__ = doc
        self._name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    @overload
    def __get__(self, obj: None, owner: Optional[type] = None) -> CoreAttribute[T]: ...

    @overload
    def __get__(self, obj: object, owner: Optional[type] = None) -> T: ...

    def __get__(self, obj: Any, owner: Optional[type] = None) -> Any:
        if obj is None:
            return self
        return getattr(obj._core, self._name)
