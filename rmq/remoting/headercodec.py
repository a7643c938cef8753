"""The one codec of custom headers: declaring a header class, and its extFields both ways.

The header classes themselves are declared in :mod:`rmq.remoting.headers` with the
`@header` decorator here, which makes a class a slotted keyword-only dataclass and builds its
codec table.

Field types follow the Java ones: `str`; `int` (Java int/Integer, 32 bits); `Long`
(Java long/Long, 64 bits; an `int` with a range check); `bool` (Java's parseBoolean: only a
case-insensitive "true" is true).  On the wire every value is text.

What rmq does with a bad header (Java only logs and leaves the field null, so its processor
fails later with a NullPointerException that becomes SYSTEM_ERROR): a field is *required*
exactly when it has no default here, i.e. when Java could leave it null; a missing required
field, or a number that does not parse or does not fit its Java type, raises `HeaderError`
naming the header and the field.  The server answers a request whose handler raises it with
SYSTEM_ERROR and the error's text.  Java primitives (`boolean`, `int`, `long`) and boxed
fields with an initialiser can never be null, so they carry their Java default here and a
missing value keeps it.

Encoding writes every field that is not None, in declaration order (short-key order for the
short form); booleans as "true"/"false".  Declaration order is what the ROCKETMQ binary
header needs for the four "fast codec" headers (SendMessageRequestHeaderV2,
PullMessageRequestHeader, PullMessageResponseHeader, SendMessageResponseHeader): their
fields come first in the extFields area, in Java's order, before any other entries; a
command built with `create_request`/`create_response` puts them first in its `ext_fields`.

The codec is driven by a per-class table of `(attribute, key, parser, required)` built once
per class, so decoding a header is one dict lookup and at most one small conversion per field.
A header class is made (its dataclass methods and its table) the first time it is used: a
command-line call that sends two requests makes two of the eighty classes.
"""

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from typing import Annotated, Any, NamedTuple, TypeVar, dataclass_transform

from rmq.common.javanames import camel_case
from rmq.common.lazydata import complete, lazy_dataclass
from rmq.remoting.errors import HeaderError


class _Int64:
    """Marker of a Java long inside `Long`."""


Long = Annotated[int, _Int64]

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _parse_int(text: str) -> int:
    value = int(text)
    if not _INT32_MIN <= value <= _INT32_MAX:
        raise ValueError(f"{value} does not fit a Java int")
    return value


def _parse_long(text: str) -> int:
    value = int(text)
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise ValueError(f"{value} does not fit a Java long")
    return value


def _parse_bool(text: str) -> bool:
    return text.lower() == "true"


_PARSERS: dict[object, Callable[[str], object] | None] = {
    str: None,
    int: _parse_int,
    bool: _parse_bool,
}


def _to_text(value: object) -> str:
    """A field value as Java's `toString()` writes it."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    return str(value)


class _WireField(NamedTuple):
    name: str  # Python attribute
    key: str  # extFields key
    parse: Callable[[str], object] | None  # None: the text is the value
    required: bool


class _HeaderCodec(NamedTuple):
    fields: tuple[_WireField, ...]  # long keys, declaration order
    short_fields: tuple[_WireField, ...]  # V2 short keys, short-key order


_CODECS: dict[type, _HeaderCodec] = {}

H = TypeVar("H")


def wire(
    *, key: str | None = None, short: str | None = None, default: Any = dataclasses.MISSING
) -> Any:
    """Declare a header field whose extFields key is not the camelCase of its name, or that
    has a V2 short key."""
    metadata = {
        name: value for name, value in (("key", key), ("short", short)) if value is not None
    }
    return dataclasses.field(default=default, metadata=metadata)


def _parser_for(annotation: object) -> Callable[[str], object] | None:
    """The text parser of a field annotation such as `str`, `int | None` or `Long`."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        (annotation,) = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
    if typing.get_origin(annotation) is Annotated:
        annotation, *markers = typing.get_args(annotation)
        if _Int64 in markers:
            return _parse_long
    if annotation not in _PARSERS:
        raise TypeError(f"unsupported header field type {annotation!r}")
    return _PARSERS[annotation]


def _build_codec(cls: type) -> _HeaderCodec:
    hints = typing.get_type_hints(cls, include_extras=True)
    fields: list[_WireField] = []
    short_fields: list[tuple[str, _WireField]] = []
    for field in dataclasses.fields(cls):
        parse = _parser_for(hints[field.name])
        required = field.default is dataclasses.MISSING
        key = field.metadata.get("key", camel_case(field.name))
        fields.append(_WireField(field.name, key, parse, required))
        if "short" in field.metadata:
            short = field.metadata["short"]
            short_fields.append((short, _WireField(field.name, short, parse, required)))
    return _HeaderCodec(
        tuple(fields), tuple(f for _, f in sorted(short_fields, key=lambda pair: pair[0]))
    )


_DECLARED: list[type] = []


@dataclass_transform(kw_only_default=True, field_specifiers=(wire,))
def header(cls: type[H]) -> type[H]:
    """Class decorator: `cls` as a keyword-only dataclass with a codec table, both made the
    first time the class is used (:mod:`rmq.common.lazydata`)."""
    declared = lazy_dataclass(kw_only=True, on_complete=_register)(cls)
    _DECLARED.append(declared)
    return declared


def _register(cls: type) -> None:
    _CODECS[cls] = _build_codec(cls)


def _codec(cls: type) -> _HeaderCodec:
    codec = _CODECS.get(cls)
    if codec is None:
        complete(cls)
        codec = _CODECS[cls]
    return codec


def decode_header(
    cls: type[H], ext_fields: Mapping[str, str] | None, *, short_keys: bool = False
) -> H:
    """Build a `cls` header from a command's extFields (see the module docstring for errors)."""
    codec = _codec(cls)
    source = ext_fields if ext_fields is not None else {}
    values: dict[str, object] = {}
    for name, key, parse, required in codec.short_fields if short_keys else codec.fields:
        text = source.get(key)
        if text is None:
            if required:
                raise HeaderError(f"{cls.__name__}: the custom field <{key}> is null")
        elif parse is None:
            values[name] = text
        else:
            try:
                values[name] = parse(text)
            except ValueError:
                raise HeaderError(
                    f"{cls.__name__}: the custom field <{key}> has a bad value {text!r}"
                ) from None
    return cls(**values)


def encode_header(header: object, *, short_keys: bool = False) -> dict[str, str]:
    """The extFields of a header: every field that is not None, as text."""
    codec = _codec(type(header))
    ext_fields: dict[str, str] = {}
    for name, key, _, _ in codec.short_fields if short_keys else codec.fields:
        value = getattr(header, name)
        if value is not None:
            ext_fields[key] = _to_text(value)
    return ext_fields


def header_classes() -> tuple[type, ...]:
    """Every header class declared so far, in declaration order (all of
    :mod:`rmq.remoting.headers` once it is imported), each made."""
    for cls in _DECLARED:
        complete(cls)
    return tuple(_DECLARED)
