"""fastjson-compatible JSON: the bytes RocketMQ's Java side writes, and a reader as lenient as it.

RocketMQ serializes every JSON body and every ``config/*.json`` file with fastjson 1.2.x,
which differs from standard JSON in ways a peer can see (spec §2.6-2.8, §4.8):

* map keys that are not strings are written bare: ``{0:"10.0.0.1:10911"}``, and an object
  used as a key (a MessageQueue) is written as a nested object: ``{{"brokerName":"b",
  "queueId":0,"topic":"t"}:5}``;
* null values in maps are dropped;
* strings escape control characters, ``\\u007f-\\u009f`` and ``\\u2028``/``\\u2029`` as
  ``\\uXXXX`` (upper-case hex) and leave every other character raw (UTF-8 on the wire);
* doubles print as Java's ``Double.toString`` does (``0.0``, ``1.0E7``, ``1.0E-4``);
* the pretty format of the config files indents with one TAB per level (see below).

Writer.  :func:`dumps` takes plain Python data.  A Java bean is a ``dict``; fastjson writes a
bean's properties sorted by name, so callers either build the dict in that order or pass
``sort_keys=True``.  Keys may be ``str``, ``int``, an ``Enum`` (written by name), or an
object key: a :class:`JsonObjectKey` or any object with a ``__fastjson_key__()`` method
returning the key's properties (so a MessageQueue dataclass can be a key directly).
Values may be ``None``, ``bool``, ``int``, ``float``, ``str``, an ``Enum``, a mapping, a
``list`` (a Java ``List``/array), a ``tuple``/``set``/``frozenset`` (a Java ``Set``; fastjson
writes those inline even in pretty format) or an object key (written as its object, which is
how the properties of a key read back with nested objects are written).

Pretty format (fastjson ``PrettyFormat``, what ``ConfigManager`` persists):

* a non-empty map opens ``{``; each entry with a string key starts on a new line indented
  one TAB deeper and is written ``"key":value`` (no space); entries are separated by ``,``;
  after the last entry a new line at the map's own depth, then ``}``;
* an entry whose key is not a string (``0:12``, an object key) gets no new line before it,
  which is why ``consumerOffset.json`` holds ``{0:12,1:7`` on one line and the closing
  brace on the next;
* a non-empty list puts each element on its own line, one TAB deeper, and the ``]`` on a
  new line at the list's depth; a set is written ``[a,b]`` inline;
* an empty map or collection is ``{}`` / ``[]`` (a map whose entries are all dropped nulls
  still gets its closing line break: ``{`` newline, indent, ``}``).

These rules and the escaping were checked byte for byte against fastjson 1.2.69, the version
RocketMQ 4.9.8 uses.

``standard=True`` is the name server's variant for route data (GET_ROUTEINFO_BY_TOPIC with
version >= 4.9.4 or ``acceptStandardJsonOnly``): map entries sorted, non-string keys written
as quoted strings (an object key becomes the string of its compact JSON), ``/`` and every
character outside printable ASCII escaped, and integers beyond +-(2^53 - 1) written as
strings.

Reader.  :func:`loads` parses with orjson and falls back to :func:`loads_lenient` when orjson
rejects the text or when it holds a run of 19 or more digits (orjson turns integers beyond
64 bits into floats).  The lenient parser accepts what fastjson writes and reads: bare
numeric keys (-> ``int`` keys), object keys (-> :class:`JsonObjectKey`, nested objects and
arrays inside frozen into keys and tuples), unquoted identifier keys, single-quoted strings,
fastjson's extra escapes (``\\v``, ``\\'``, ``\\xHH``, ``\\0``-``\\7``), trailing commas, and
big integers of any size.  Quoted keys stay strings: ``{"0":..}`` gives a ``str`` key.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from enum import Enum
from typing import Any, Protocol, runtime_checkable

import orjson

__all__ = [
    "FastjsonDecodeError",
    "FastjsonKey",
    "JsonObjectKey",
    "dumps",
    "dumps_bytes",
    "loads",
    "loads_lenient",
]

_MAX_SAFE_INTEGER = (1 << 53) - 1


@runtime_checkable
class FastjsonKey(Protocol):
    """An object usable as a map key: written as the JSON object of its properties."""

    def __fastjson_key__(self) -> Mapping[str, Any]: ...


class JsonObjectKey:
    """An immutable, hashable JSON object used as a map key (fastjson's bean-as-key).

    Keeps its properties in the order given (the order they are written in); two keys with
    the same properties are equal whatever their order.  Property values must be hashable.
    """

    __slots__ = ("_items",)
    _items: tuple[tuple[str, Any], ...]

    def __init__(self, properties: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> None:
        items = properties.items() if isinstance(properties, Mapping) else properties
        object.__setattr__(self, "_items", tuple(items))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("JsonObjectKey is immutable")

    @property
    def items(self) -> tuple[tuple[str, Any], ...]:
        return self._items

    def __getitem__(self, name: str) -> Any:
        for key, value in self._items:
            if key == name:
                return value
        raise KeyError(name)

    def __fastjson_key__(self) -> dict[str, Any]:
        return dict(self._items)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, JsonObjectKey):
            return NotImplemented
        return dict(self._items) == dict(other._items)

    def __hash__(self) -> int:
        return hash(frozenset(self._items))

    def __repr__(self) -> str:
        return f"JsonObjectKey({dict(self._items)!r})"


# --------------------------------------------------------------------------------- writer

_SHORT_ESCAPES = {
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
    '"': '\\"',
    "\\": "\\\\",
}
_BROWSER_SHORT_ESCAPES = {**_SHORT_ESCAPES, "/": "\\/"}
_DEFAULT_SPECIAL = re.compile('[\x00-\x1f"\\\\\x7f-\x9f\u2028\u2029]')
_BROWSER_SPECIAL = re.compile('[\x00-\x1f"/\\\\\x7f-\U0010ffff]')


def _unicode_escape(char: str) -> str:
    code = ord(char)
    if code > 0xFFFF:
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04X}\\u{0xDC00 + (code & 0x3FF):04X}"
    return f"\\u{code:04X}"


def _replace_default(match: re.Match[str]) -> str:
    char = match.group()
    return _SHORT_ESCAPES.get(char) or _unicode_escape(char)


def _replace_browser(match: re.Match[str]) -> str:
    char = match.group()
    return _BROWSER_SHORT_ESCAPES.get(char) or _unicode_escape(char)


def _quote_default(text: str) -> str:
    if _DEFAULT_SPECIAL.search(text) is None:
        return f'"{text}"'
    return f'"{_DEFAULT_SPECIAL.sub(_replace_default, text)}"'


def _quote_browser(text: str) -> str:
    return f'"{_BROWSER_SPECIAL.sub(_replace_browser, text)}"'


def _java_double(value: float) -> str:
    """Java's ``Double.toString`` (shortest digits, as fastjson's Ryu writer prints them)."""
    if value == 0.0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    from decimal import Decimal  # here: few programs write a double, every one imports this

    sign, digit_tuple, exponent = Decimal(repr(value)).as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    exponent += len(digit_tuple) - len(digits)
    scientific = exponent + len(digits) - 1
    prefix = "-" if sign else ""
    if -3 <= scientific < 7:
        if scientific < 0:
            return f"{prefix}0.{'0' * (-scientific - 1)}{digits}"
        whole = digits[: scientific + 1].ljust(scientific + 1, "0")
        return f"{prefix}{whole}.{digits[scientific + 1 :] or '0'}"
    return f"{prefix}{digits[0]}.{digits[1:] or '0'}E{scientific}"


def _utf16_order(text: str) -> bytes:
    return text.encode("utf-16-be", "surrogatepass")


def _sorted_items(mapping: Mapping[Any, Any]) -> Iterable[tuple[Any, Any]]:
    """Entries sorted like a Java TreeMap when the keys are all strings or all integers."""
    keys = list(mapping)
    if all(type(key) is str for key in keys):
        keys.sort(key=_utf16_order)
    elif all(isinstance(key, int) and not isinstance(key, bool) for key in keys):
        keys.sort()
    return [(key, mapping[key]) for key in keys]


class _Writer:
    __slots__ = ("out", "pretty", "quote", "sort_keys", "standard", "write_nulls")

    def __init__(self, *, pretty: bool, standard: bool, sort_keys: bool, write_nulls: bool):
        self.out: list[str] = []
        self.pretty = pretty
        self.standard = standard
        self.sort_keys = sort_keys or standard
        self.write_nulls = write_nulls
        self.quote: Callable[[str], str] = _quote_browser if standard else _quote_default

    def value(self, value: Any, depth: int) -> None:
        if value is None:
            self.out.append("null")
        elif isinstance(value, bool):
            self.out.append("true" if value else "false")
        elif isinstance(value, Enum):
            self.out.append(self.quote(value.name))
        elif isinstance(value, str):
            self.out.append(self.quote(value))
        elif isinstance(value, int):
            self.integer(value)
        elif isinstance(value, float):
            self.out.append(_java_double(value) if math.isfinite(value) else "null")
        elif isinstance(value, dict):
            self.mapping(value, depth)
        elif isinstance(value, list):
            self.sequence(value, depth)
        elif isinstance(value, (tuple, set, frozenset)):
            self.inline_collection(value, depth)
        elif isinstance(value, Mapping):
            self.mapping(value, depth)
        elif isinstance(value, FastjsonKey):
            self.mapping(value.__fastjson_key__(), depth)
        else:
            raise TypeError(f"cannot write {type(value).__name__} as fastjson")

    def integer(self, value: int) -> None:
        if self.standard and not -_MAX_SAFE_INTEGER <= value <= _MAX_SAFE_INTEGER:
            self.out.append(f'"{value}"')
        else:
            self.out.append(str(value))

    def mapping(self, mapping: Mapping[Any, Any], depth: int) -> None:
        out = self.out
        if not mapping:
            out.append("{}")
            return
        out.append("{")
        inner = depth + 1
        first = True
        items = _sorted_items(mapping) if self.sort_keys else mapping.items()
        for key, value in items:
            if value is None and not self.write_nulls:
                continue
            if not first:
                out.append(",")
            first = False
            if isinstance(key, str) and not isinstance(key, Enum):
                if self.pretty:
                    out.append("\n" + "\t" * inner)
                out.append(self.quote(key))
            else:
                self.key(key, inner)
            out.append(":")
            self.value(value, inner)
        if self.pretty:
            out.append("\n" + "\t" * depth)
        out.append("}")

    def key(self, key: Any, depth: int) -> None:
        """A non-string key: bare (``0``, ``{...}``), or as a string in the standard variant."""
        if isinstance(key, Enum):
            self.out.append(self.quote(key.name))
        elif isinstance(key, (bool, int, float)):
            text = dumps(key)
            self.out.append(self.quote(text) if self.standard else text)
        elif isinstance(key, FastjsonKey):
            properties = key.__fastjson_key__()
            if self.standard:
                self.out.append(self.quote(dumps(properties, sort_keys=self.sort_keys)))
            else:
                self.mapping(properties, depth)
        else:
            raise TypeError(f"cannot write a {type(key).__name__} map key as fastjson")

    def sequence(self, items: list[Any], depth: int) -> None:
        out = self.out
        if not items:
            out.append("[]")
        elif not self.pretty:
            self.inline_collection(items, depth)
        else:
            inner = depth + 1
            out.append("[")
            for index, item in enumerate(items):
                if index:
                    out.append(",")
                out.append("\n" + "\t" * inner)
                self.value(item, inner)
            out.append("\n" + "\t" * depth + "]")

    def inline_collection(self, items: Iterable[Any], depth: int) -> None:
        out = self.out
        out.append("[")
        for index, item in enumerate(items):
            if index:
                out.append(",")
            self.value(item, depth)
        out.append("]")


def dumps(
    obj: Any,
    *,
    pretty: bool = False,
    standard: bool = False,
    sort_keys: bool = False,
    write_nulls: bool = False,
) -> str:
    """Write ``obj`` as fastjson would.

    ``pretty``: fastjson's PrettyFormat (config files).  ``standard``: the name server's
    standard-JSON variant for route data.  ``sort_keys``: write every map sorted by key (as
    fastjson orders bean properties).  ``write_nulls``: keep ``None`` map values as ``null``
    (fastjson's WriteMapNullValue) instead of dropping them.
    """
    writer = _Writer(pretty=pretty, standard=standard, sort_keys=sort_keys, write_nulls=write_nulls)
    writer.value(obj, 0)
    return "".join(writer.out)


def dumps_bytes(
    obj: Any,
    *,
    pretty: bool = False,
    standard: bool = False,
    sort_keys: bool = False,
    write_nulls: bool = False,
) -> bytes:
    """:func:`dumps` encoded as UTF-8 (a lone surrogate becomes ``?``, as in Java)."""
    text = dumps(
        obj, pretty=pretty, standard=standard, sort_keys=sort_keys, write_nulls=write_nulls
    )
    return text.encode("utf-8", "replace")


# --------------------------------------------------------------------------------- reader


class FastjsonDecodeError(ValueError):
    """Text that even the lenient parser cannot read; ``pos`` is the character offset."""

    def __init__(self, message: str, pos: int) -> None:
        super().__init__(f"{message} at char {pos}")
        self.pos = pos


_WHITESPACE = re.compile(r"[ \t\n\r\f\b]*")
_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_IDENTIFIER = re.compile(r"[^\W\d][\w$]*|\$[\w$]*")
_DOUBLE_QUOTED = re.compile(r'"([^"\\]*(?:\\.[^"\\]*)*)"', re.DOTALL)
_SINGLE_QUOTED = re.compile(r"'([^'\\]*(?:\\.[^'\\]*)*)'", re.DOTALL)
_STRING_ESCAPE = re.compile(
    r"\\(?:u(?P<pair>[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    r"|u(?P<u4>[0-9a-fA-F]{4})|x(?P<x2>[0-9a-fA-F]{2})"
    r"|(?P<char>[\"'\\/bfFnrtv0-7])"
    r"|(?P<bad>.?))",
    re.DOTALL,
)
_LONG_DIGIT_RUN_TEXT = re.compile(r"[0-9]{19}")
# Bytes are searched for a run of 19 digits by mapping every digit to "0" and every other
# byte to " ", then looking for 19 zeros: a tenth of what the regex search costs.
_DIGITS_AS_ZEROS = bytes(0x30 if 0x30 <= byte <= 0x39 else 0x20 for byte in range(256))
_LONG_ZERO_RUN = b"0" * 19
_UNESCAPED = {
    '"': '"',
    "'": "'",
    "\\": "\\",
    "/": "/",
    "b": "\b",
    "f": "\f",
    "F": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
}
_LITERALS: dict[str, Any] = {"true": True, "false": False, "null": None}


def _unescape_match(match: re.Match[str]) -> str:
    """One backslash escape of a string; a surrogate pair escape gives one character."""
    if match.group("pair") is not None:
        high, low = match.group("pair").split("\\u")
        return chr(0x10000 + ((int(high, 16) - 0xD800) << 10) + int(low, 16) - 0xDC00)
    code = match.group("u4") or match.group("x2")
    if code is not None:
        return chr(int(code, 16))
    char = match.group("char")
    if char is None:
        raise ValueError(f"bad escape \\{match.group('bad')}")
    return chr(int(char)) if char in "01234567" else _UNESCAPED[char]


def _freeze(value: Any) -> Any:
    """A hashable form of a parsed value, for use inside an object key."""
    if isinstance(value, dict):
        return JsonObjectKey((key, _freeze(item)) for key, item in value.items())
    if isinstance(value, list):
        return tuple(_freeze(item) for item in value)
    return value


class _Parser:
    __slots__ = ("pos", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, message: str) -> FastjsonDecodeError:
        return FastjsonDecodeError(message, self.pos)

    def skip_whitespace(self) -> str:
        """Skip whitespace; return the next character ('' at the end)."""
        match = _WHITESPACE.match(self.text, self.pos)
        assert match is not None
        self.pos = match.end()
        return self.text[self.pos : self.pos + 1]

    def document(self) -> Any:
        self.skip_whitespace()
        value = self.value()
        if self.skip_whitespace():
            raise self.fail("unexpected text after the JSON value")
        return value

    def value(self) -> Any:
        char = self.text[self.pos : self.pos + 1]
        if char == "{":
            return self.object()
        if char == "[":
            return self.array()
        if char in ('"', "'"):
            return self.string()
        if char == "-" or "0" <= char <= "9":
            return self.number()
        match = _IDENTIFIER.match(self.text, self.pos)
        if match is not None and match.group() in _LITERALS:
            self.pos = match.end()
            return _LITERALS[match.group()]
        raise self.fail("expected a JSON value")

    def string(self) -> str:
        pattern = _DOUBLE_QUOTED if self.text[self.pos] == '"' else _SINGLE_QUOTED
        match = pattern.match(self.text, self.pos)
        if match is None:
            raise self.fail("unterminated string")
        body = match.group(1)
        if "\\" in body:
            try:
                body = _STRING_ESCAPE.sub(_unescape_match, body)
            except ValueError as error:
                raise self.fail(str(error)) from None
        self.pos = match.end()
        return body

    def number(self) -> int | float:
        match = _NUMBER.match(self.text, self.pos)
        if match is None:
            raise self.fail("bad number")
        self.pos = match.end()
        if match.group(1) is None and match.group(2) is None:
            return int(match.group())
        return float(match.group())

    def key(self) -> Any:
        char = self.text[self.pos : self.pos + 1]
        if char in ('"', "'"):
            return self.string()
        if char == "{":
            return _freeze(self.object())
        if char == "-" or "0" <= char <= "9":
            return self.number()
        match = _IDENTIFIER.match(self.text, self.pos)
        if match is None:
            raise self.fail("expected a map key")
        self.pos = match.end()
        return match.group()

    def object(self) -> dict[Any, Any]:
        result: dict[Any, Any] = {}
        self.pos += 1
        char = self.skip_whitespace()
        while char != "}":
            key = self.key()
            if self.skip_whitespace() != ":":
                raise self.fail("expected ':' after a map key")
            self.pos += 1
            self.skip_whitespace()
            result[key] = self.value()
            char = self.skip_whitespace()
            if char == ",":
                self.pos += 1
                char = self.skip_whitespace()
            elif char != "}":
                raise self.fail("expected ',' or '}' in an object")
        self.pos += 1
        return result

    def array(self) -> list[Any]:
        result: list[Any] = []
        self.pos += 1
        char = self.skip_whitespace()
        while char != "]":
            result.append(self.value())
            char = self.skip_whitespace()
            if char == ",":
                self.pos += 1
                char = self.skip_whitespace()
            elif char != "]":
                raise self.fail("expected ',' or ']' in an array")
        self.pos += 1
        return result


def _as_text(data: str | bytes | bytearray | memoryview) -> str:
    if isinstance(data, str):
        return data
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError as error:
        raise FastjsonDecodeError("invalid UTF-8", error.start) from error


def loads_lenient(data: str | bytes | bytearray | memoryview) -> Any:
    """Parse fastjson output (or standard JSON) with the pure-Python lenient parser."""
    text = _as_text(data).removeprefix("\ufeff")
    return _Parser(text).document()


def loads(data: str | bytes | bytearray | memoryview) -> Any:
    """Parse JSON as fastjson accepts it: orjson when it can, the lenient parser otherwise."""
    if isinstance(data, str):
        has_long_digit_run = _LONG_DIGIT_RUN_TEXT.search(data) is not None
    else:
        raw = data if isinstance(data, (bytes, bytearray)) else bytes(data)
        has_long_digit_run = _LONG_ZERO_RUN in raw.translate(_DIGITS_AS_ZEROS)
    if not has_long_digit_run:
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    return loads_lenient(data)
