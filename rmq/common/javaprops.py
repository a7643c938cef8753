"""Java ``.properties`` text: the format of broker.conf, namesrv.conf and config bodies.

RocketMQ reads its config files and the bodies of UPDATE_BROKER_CONFIG / GET_BROKER_CONFIG /
UPDATE_NAMESRV_CONFIG / GET_NAMESRV_CONFIG with ``java.util.Properties.load``.  This module
parses that text by the same rules and writes text that ``Properties.load`` reads back to the
same keys and values.

Reading works in two steps, as Java's does:

1. *Logical lines.*  The text is split into natural lines at ``\\n``, ``\\r`` or ``\\r\\n``.
   Leading blanks (space, tab, form feed) are dropped.  A line that is then empty is skipped;
   so is one starting with ``#`` or ``!`` (a comment; a backslash at its end continues
   nothing).  A line ending in an odd number of backslashes continues on the next natural
   line: the last backslash goes, the next line's leading blanks go, the rest is appended
   (a continuation line is never a comment).  A continuation backslash on the last line of
   the text is dropped.  A line holding nothing but one backslash leaves an empty logical
   line, which is skipped like a blank one (the line after it starts afresh and may be a
   comment), as the JDK 9+ reader does.
2. *Key and value.*  The key runs to the first unescaped ``=``, ``:`` or blank.  Blanks
   after it are skipped, then at most one ``=`` or ``:`` (only when the key ended at a
   blank), then blanks again; the rest of the line is the value, trailing blanks included.
   In both, ``\\t \\n \\r \\f`` are control characters, ``\\uXXXX`` is a UTF-16 code unit
   (surrogate pairs are joined into one character) and any other escaped character stands
   for itself.  A later duplicate key replaces the earlier value and keeps its position.

Writing escapes the way ``Properties.store`` does: backslash, ``\\t \\n \\r \\f``, ``= : # !``,
every space in a key, a leading space in a value, and everything outside printable ASCII as
``\\uXXXX``.  The output is therefore pure ASCII and reads back identically whether the reader
decodes it as UTF-8 (rmq) or ISO-8859-1 (``Properties.load(InputStream)`` in Java).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

_BLANKS = " \t\f"
_NATURAL_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n|$)")
_ESCAPE = re.compile(r"\\(u(?P<hex>[0-9a-fA-F]{4})|.?)", re.DOTALL)
_CONTROL_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_STORE_ESCAPES = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}
_STORE_SPECIAL = frozenset("=:#!")


class PropertiesSyntaxError(ValueError):
    """A ``\\u`` escape without four hex digits (Java: ``Malformed \\uxxxx encoding``)."""


def _natural_lines(text: str) -> list[tuple[str, str]]:
    """The ``(content, terminator)`` pairs of the text's lines."""
    lines = []
    for match in _NATURAL_LINE.finditer(text):
        if not match.group():
            break
        content = match.group().rstrip("\r\n")
        lines.append((content, match.group()[len(content) :]))
    return lines


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """Yield ``(line number, logical line)`` with comments, blanks and continuations handled."""
    lines = _natural_lines(text)
    index = 0
    while index < len(lines):
        start = index + 1
        line = lines[index][0].lstrip(_BLANKS)
        index += 1
        if not line or line[0] in "#!":
            continue
        if line == "\\":
            # A lone continuation backslash leaves an empty line, which Java skips, except
            # as the last line when no "\r\n" follows it: there Java yields an empty key.
            if index == len(lines) and lines[-1][1] != "\r\n":
                yield start, ""
            continue
        parts = []
        piece = line
        while _ends_with_odd_backslashes(piece):
            parts.append(piece[:-1])
            if index == len(lines):
                piece = ""
                break
            piece = lines[index][0].lstrip(_BLANKS)
            index += 1
        parts.append(piece)
        yield start, "".join(parts)


def _ends_with_odd_backslashes(piece: str) -> bool:
    return (len(piece) - len(piece.rstrip("\\"))) % 2 == 1


def _split_key_value(line: str) -> tuple[str, str]:
    key_end = len(line)
    value_start = len(line)
    has_separator = False
    escaped = False
    for index, char in enumerate(line):
        if not escaped and char in "=:":
            key_end, value_start, has_separator = index, index + 1, True
            break
        if not escaped and char in _BLANKS:
            key_end, value_start = index, index + 1
            break
        escaped = char == "\\" and not escaped
    while value_start < len(line):
        char = line[value_start]
        if char not in _BLANKS:
            if has_separator or char not in "=:":
                break
            has_separator = True
        value_start += 1
    return line[:key_end], line[value_start:]


def _join_surrogates(text: str) -> str:
    if any("\ud800" <= char <= "\udfff" for char in text):
        return text.encode("utf-16-be", "surrogatepass").decode("utf-16-be", "surrogatepass")
    return text


def _unescape(text: str, line_number: int) -> str:
    if "\\" not in text:
        return text

    def replace(match: re.Match[str]) -> str:
        escape = match.group(1)
        if match.group("hex") is not None:
            return chr(int(match.group("hex"), 16))
        if escape.startswith("u"):
            raise PropertiesSyntaxError(f"line {line_number}: malformed \\uXXXX escape")
        return _CONTROL_ESCAPES.get(escape, escape)

    return _join_surrogates(_ESCAPE.sub(replace, text))


def loads(text: str) -> dict[str, str]:
    """Parse ``.properties`` text into an ordered ``{key: value}`` dict, as Java does."""
    result: dict[str, str] = {}
    for number, line in _logical_lines(text):
        key, value = _split_key_value(line)
        result[_unescape(key, number)] = _unescape(value, number)
    return result


def _escape(text: str, *, is_key: bool) -> str:
    out = []
    for index, char in enumerate(text):
        code = ord(char)
        if char == " ":
            out.append("\\ " if is_key or index == 0 else " ")
        elif char in _STORE_ESCAPES:
            out.append(_STORE_ESCAPES[char])
        elif char in _STORE_SPECIAL:
            out.append("\\" + char)
        elif 0x20 <= code <= 0x7E:
            out.append(char)
        elif code > 0xFFFF:
            code -= 0x10000
            out.append(f"\\u{0xD800 + (code >> 10):04X}\\u{0xDC00 + (code & 0x3FF):04X}")
        else:
            out.append(f"\\u{code:04X}")
    return "".join(out)


def dumps(props: Mapping[str, str]) -> str:
    """Write ``key=value`` lines (``\\n`` ended, pure ASCII) that Java parses back identically."""
    return "".join(
        f"{_escape(key, is_key=True)}={_escape(value, is_key=False)}\n"
        for key, value in props.items()
    )
