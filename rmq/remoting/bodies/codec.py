"""The one JSON codec of every RocketMQ body: Java beans declared as dataclasses.

A body class is a slotted dataclass that inherits :class:`Body`.  Its fields are the Java
bean's properties; the declaration is the whole schema, and the codec derives from it, once
per class, a table of ``(attribute, Java key, reader, writer, required)`` sorted by Java key:

* the Java key is the camelCase of the attribute (``broker_addrs`` -> ``brokerAddrs``); a
  property whose getter gives another name (``getClientID`` -> ``clientID``) says so with
  ``field(metadata=java_key("clientID"))``;
* the field's type picks the reader and writer: ``str``, ``int`` (Java int and long),
  ``float`` (Java double), ``bool``, an ``Enum`` (Java enum), another body, ``list[X]`` (Java
  ``List``), ``JavaSet[X]`` (Java ``Set``: a list here, written as a tuple so that fastjson's
  pretty format keeps it inline as Java does), ``dict[K, V]`` with ``str``, ``int`` or body
  keys (a body key, a MessageQueue, is written as a JSON object), and ``X | None``;
* a field without a default is one Java leaves null but no meaningful body omits (a topic,
  a group, a client id): decoding a body without it raises :class:`BodyError` naming the
  body and the key.  Every other field carries the Java default and a missing key keeps it.

Writing (:meth:`Body.to_json`) gives the dict fastjson writes for the bean: properties in
alphabetical order, null ones left out, enums by name, integer map keys as ``int`` and
MessageQueue keys as the queue itself (both written bare by :func:`rmq.common.fastjson.dumps`).
:meth:`Body.encode` turns that into bytes in fastjson's default form, the name server's
standard-JSON route variant (``standard=True``) or the pretty form of the config files.

Reading (:meth:`Body.from_json`, :meth:`Body.decode`) is as lenient as fastjson: an enum as
its name or ordinal (Java sends names, the C++ client ordinals), numbers given as strings and
strings given as numbers, integer and MessageQueue map keys bare or quoted, nulls and
unknown keys ignored.  Whatever cannot be read raises :class:`BodyError`, whose text gives
the path to the bad property (``HeartbeatData.consumerDataSet: ConsumerData.consumeType:
...``).
"""

from __future__ import annotations

import dataclasses
import enum
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Annotated, Any, NamedTuple, Self, TypeVar, cast

from rmq.common import fastjson
from rmq.common.javanames import camel_case
from rmq.remoting.errors import RemotingError

__all__ = ["Body", "BodyError", "Buffer", "JavaSet", "java_key"]

T = TypeVar("T")

Buffer = bytes | bytearray | memoryview


class _JavaSetMarker:
    """Marks a list whose Java declaration is a Set."""


JavaSet = Annotated[list[T], _JavaSetMarker]
"""A Java ``Set`` property: a list in Python, in the order it was received or built."""

_KEY = "java_key"


def java_key(key: str) -> dict[str, str]:
    """Field metadata for a property whose Java key is not the camelCase of its attribute."""
    return {_KEY: key}


class BodyError(RemotingError, ValueError):
    """A body that cannot be decoded into the class its request or response needs."""


Reader = Callable[[Any], Any]
Writer = Callable[[Any], Any]


class _Property(NamedTuple):
    attr: str
    key: str
    read: Reader
    write: Writer
    required: bool


_TABLES: dict[type, tuple[_Property, ...]] = {}


class Body:
    """Base of every body class: fastjson's JSON form, generic over the declared fields."""

    __slots__ = ()

    def to_json(self) -> dict[str, Any]:
        """The bean as fastjson writes it: properties sorted by key, nulls left out."""
        json: dict[str, Any] = {}
        for prop in _table(type(self)):
            value = getattr(self, prop.attr)
            if value is not None:
                json[prop.key] = prop.write(value)
        return json

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        """Build the body from parsed JSON (see the module docstring for what is accepted)."""
        if not isinstance(obj, Mapping):
            raise BodyError(f"{cls.__name__}: expected a JSON object, got {_kind(obj)}")
        values: dict[str, Any] = {}
        for prop in _table(cls):
            raw = obj.get(prop.key)
            if raw is None:
                if prop.required:
                    raise BodyError(f"{cls.__name__}: <{prop.key}> is missing")
                continue
            try:
                values[prop.attr] = prop.read(raw)
            except (ArithmeticError, LookupError, TypeError, ValueError) as exc:
                raise BodyError(f"{cls.__name__}.{prop.key}: {exc}") from None
        return cast("Callable[..., Self]", cls)(**values)

    def encode(self, *, standard: bool = False, pretty: bool = False) -> bytes:
        """UTF-8 fastjson text: default form, ``standard`` route variant, or ``pretty``."""
        return fastjson.dumps_bytes(self.to_json(), standard=standard, pretty=pretty)

    @classmethod
    def decode(cls, data: Buffer) -> Self:
        """Parse a body as fastjson would (quoted or bare keys, trailing whitespace)."""
        try:
            obj = fastjson.loads(data)
        except ValueError as exc:
            raise BodyError(f"{cls.__name__}: {exc}") from None
        return cls.from_json(obj)


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _table(cls: type) -> tuple[_Property, ...]:
    table = _TABLES.get(cls)
    if table is None:
        table = _TABLES[cls] = _build_table(cls)
    return table


def _build_table(cls: type) -> tuple[_Property, ...]:
    hints = typing.get_type_hints(cls, include_extras=True)
    props = []
    for field in dataclasses.fields(cls):
        read, write = _converter(hints[field.name])
        required = (
            field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING
        )
        key = field.metadata.get(_KEY, camel_case(field.name))
        props.append(_Property(field.name, key, read, write, required))
    return tuple(sorted(props, key=lambda prop: prop.key))


# ------------------------------------------------------------------------- converters

_INT_TEXT = re.compile(r"\s*[+-]?[0-9]+\s*")


def _same(value: Any) -> Any:
    return value


def _read_str(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    raise TypeError(f"expected a string, got {_kind(value)}")


def _read_int(value: Any) -> int:
    if isinstance(value, bool):
        raise TypeError("expected a number, got bool")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value)
    if isinstance(value, str) and _INT_TEXT.fullmatch(value):
        return int(value)
    raise ValueError(f"expected an integer, got {value!r}")


def _read_float(value: Any) -> float:
    if isinstance(value, bool):
        raise TypeError("expected a number, got bool")
    if isinstance(value, (int, float, str)):
        return float(value)
    raise TypeError(f"expected a number, got {_kind(value)}")


_TRUE_TEXT = frozenset({"true", "1"})
_FALSE_TEXT = frozenset({"false", "0"})


def _read_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value == 1
    if isinstance(value, str) and value.lower() in _TRUE_TEXT | _FALSE_TEXT:
        return value.lower() in _TRUE_TEXT
    raise ValueError(f"expected a boolean, got {value!r}")


_SCALARS: dict[Any, tuple[Reader, Writer]] = {
    str: (_read_str, _same),
    int: (_read_int, _same),
    float: (_read_float, float),
    bool: (_read_bool, _same),
}


def _enum_reader(cls: type[enum.Enum]) -> Reader:
    members = tuple(cls)

    def read(value: Any) -> enum.Enum:
        if isinstance(value, str) and value in cls.__members__:
            return cls[value]
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(members):
            return members[value]
        raise ValueError(f"{value!r} is neither a {cls.__name__} name nor its ordinal")

    return read


def _enum_name(value: enum.Enum) -> str:
    return value.name


def _to_json(value: Body) -> dict[str, Any]:
    return value.to_json()


def _array(value: Any) -> list[Any] | tuple[Any, ...]:
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"expected a JSON array, got {_kind(value)}")
    return value


def _object(value: Any) -> Mapping[Any, Any]:
    if not isinstance(value, Mapping):
        raise TypeError(f"expected a JSON object, got {_kind(value)}")
    return value


def _is_body(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, Body)


def _key_reader(annotation: Any) -> Reader:
    """Map keys: strings, integers (bare or quoted) or bodies (a JSON object, or its text)."""
    if not _is_body(annotation):
        return _SCALARS[annotation][0]
    body_cls = cast(type[Body], annotation)

    def read(key: Any) -> Body:
        if isinstance(key, fastjson.FastjsonKey):
            return body_cls.from_json(key.__fastjson_key__())
        if isinstance(key, str):
            return body_cls.from_json(fastjson.loads(key))
        raise TypeError(f"expected a {body_cls.__name__} key, got {_kind(key)}")

    return read


def _converter(annotation: Any) -> tuple[Reader, Writer]:
    """The reader and writer of one property type (see the module docstring)."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        (annotation,) = [arg for arg in args if arg is not type(None)]
        return _converter(annotation)
    if origin is Annotated:
        read, write = _converter(args[0])
        if _JavaSetMarker in args[1:]:
            return read, lambda items: tuple(write(items))
        return read, write
    if origin is list:
        read_item, write_item = _converter(args[0])
        return (
            lambda items: [read_item(item) for item in _array(items) if item is not None],
            lambda items: [write_item(item) for item in items],
        )
    if origin is dict:
        read_key = _key_reader(args[0])
        read_value, write_value = _converter(args[1])
        return (
            lambda table: {
                read_key(key): read_value(value)
                for key, value in _object(table).items()
                if value is not None
            },
            lambda table: {key: write_value(value) for key, value in table.items()},
        )
    if _is_body(annotation):
        return cast(type[Body], annotation).from_json, _to_json
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return _enum_reader(annotation), _enum_name
    if annotation in _SCALARS:
        return _SCALARS[annotation]
    raise TypeError(f"unsupported body property type {annotation!r}")
