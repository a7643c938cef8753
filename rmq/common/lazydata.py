"""Dataclasses completed on first use: the declarations of many value classes (custom headers,
remoting bodies) without the cost of making all of them at import.

`dataclasses.dataclass` compiles an `__init__`, `__repr__` and `__eq__` for each class, about
half a millisecond apiece; a module of eighty such classes costs a command-line call 40 ms
before it does anything, though the call uses two of them.  `lazy_dataclass(**options)` is a
class decorator that only records the options: the class gets its dataclass methods (made in
place, as `dataclass(**options)` would, on the same class object) the first time one is
created or anything asks for its fields (`dataclasses.fields`, `is_dataclass`, `replace`).
`on_complete` callbacks run right after, for what is derived from the fields (a codec table).

The classes are not slotted (`slots=True` makes a new class object, which a class bound
everywhere by import cannot become later); the options are otherwise `dataclass`'s.
Completion is thread-safe: two threads creating the first instance of a class make it once.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast, dataclass_transform

T = TypeVar("T")

_LOCK = threading.RLock()


class _Pending:
    __slots__ = ("on_complete", "options")

    def __init__(self, options: dict[str, Any], on_complete: Callable[[type], None] | None):
        self.options = options
        self.on_complete = on_complete


class LazyMeta(type):
    """The metaclass of lazy dataclasses: a class asked for its dataclass attributes before
    it has them completes first."""

    if not TYPE_CHECKING:  # for type checkers the classes are plain dataclasses

        def __getattr__(cls, name: str) -> Any:
            if name.startswith("__dataclass_") and complete(cls):
                return getattr(cls, name)
            raise AttributeError(f"type object {cls.__name__!r} has no attribute {name!r}")


class LazyBase(metaclass=LazyMeta):
    """The base of lazy dataclasses: the first instance completes its class."""

    __slots__ = ()
    __lazy_pending__ = None  # a declared class's own: its _Pending until it is made

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        cls = type(self)
        if not complete(cls):
            raise TypeError(f"{cls.__name__} is not a lazy dataclass")
        cls.__init__(self, *args, **kwargs)  # the generated one, from here on


@dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
def lazy_dataclass(
    *,
    on_complete: Callable[[type], None] | None = None,
    kw_only: bool = False,
    frozen: bool = False,
    eq: bool = True,
    order: bool = False,
    slots: bool = False,
) -> Callable[[type[T]], type[T]]:
    """Class decorator: ``cls`` as a dataclass with these options, made on first use (see
    the module docstring); ``on_complete(cls)`` is called once it is."""
    if slots:
        raise ValueError("a lazy dataclass cannot be slotted")
    options = {"kw_only": kw_only, "frozen": frozen, "eq": eq, "order": order}

    def wrap(cls: type[T]) -> type[T]:
        namespace = {
            key: value
            for key, value in cls.__dict__.items()
            if key not in ("__dict__", "__weakref__")
        }
        namespace["__lazy_pending__"] = _Pending(dict(options), on_complete)
        bases = tuple(base for base in cls.__bases__ if base is not object) or ()
        made = cast("type[T]", LazyMeta(cls.__name__, (*bases, LazyBase), namespace))
        made.__qualname__ = cls.__qualname__
        return made

    return wrap


def complete(cls: type) -> bool:
    """Make ``cls`` the dataclass it was declared as, if it is not yet; whether it is a lazy
    dataclass at all."""
    pending = cls.__dict__.get("__lazy_pending__")
    if pending is None:
        return "__dataclass_fields__" in cls.__dict__ and issubclass(cls, LazyBase)
    with _LOCK:
        pending = cls.__dict__.get("__lazy_pending__")
        if pending is None:  # another thread made it meanwhile
            return True
        # Taken first: whatever asks for the fields while they are being made is told there
        # are none yet, instead of starting over.
        type.__setattr__(cls, "__lazy_pending__", None)
        if cls.__doc__ is None:  # else dataclass builds one from inspect.signature
            cls.__doc__ = f"{cls.__name__}."
        dataclasses.dataclass(cls, **pending.options)
        if pending.on_complete is not None:
            pending.on_complete(cls)
        return True
