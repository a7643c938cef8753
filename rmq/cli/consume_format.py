"""What `rmq consume` prints for a message: the NDJSON record, or a `--format` template.

A template is text with fields and escapes, in the kcat/rpk style:

    %t topic              %k keys (space-separated)    %v body (raw bytes, decompressed)
    %S body size (bytes)  %g tags                      %h properties as name=value,...
    %p queue id           %o queue offset              %T store timestamp (ms)
    %i msgId              %b broker name               %% a percent sign
    \\n newline   \\t tab   \\r carriage return   \\\\ backslash

Widths, as printf has them: ``%[-][WIDTH][.MAX]X``.  WIDTH pads the field with spaces to at
least that many characters, on the left (right-aligned) or with ``-`` on the right
(left-aligned); ``.MAX`` cuts it to at most MAX characters.  ``%-20k``, ``%10S``, ``%.40v``,
``%-12.12g``.  A field counts characters when its text is UTF-8 and bytes when not.  The
template ``json`` is the NDJSON record (the default output).

`FIELDS` is the one table of fields: the templates, `--help` and the error messages read it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from rmq.client.consumer import MessageExt

Render = Callable[["MessageExt"], bytes]

_FORMAT_HINT = "'-f' / '--format'"
_ESCAPES = {"n": b"\n", "t": b"\t", "r": b"\r", "\\": b"\\"}
_SPEC = re.compile(r"(-?)(\d*)(?:\.(\d+))?(.?)")


def _headers(msg: MessageExt) -> bytes:
    return ",".join(f"{name}={value}" for name, value in msg.properties.items()).encode()


FIELDS: dict[str, tuple[str, Render]] = {
    "t": ("topic", lambda msg: msg.topic.encode()),
    "k": ("keys (space-separated)", lambda msg: " ".join(msg.keys).encode()),
    "v": ("body (raw bytes)", lambda msg: msg.body),
    "S": ("body size in bytes", lambda msg: str(len(msg.body)).encode()),
    "g": ("tags", lambda msg: (msg.tags or "").encode()),
    "h": ("properties as name=value,...", _headers),
    "p": ("queue id", lambda msg: str(msg.queue_id).encode()),
    "o": ("queue offset", lambda msg: str(msg.queue_offset).encode()),
    "T": ("store timestamp (ms)", lambda msg: str(msg.store_timestamp).encode()),
    "i": ("msgId", lambda msg: msg.msg_id.encode()),
    "b": ("broker name", lambda msg: msg.broker_name.encode()),
}
"""Field letter: (meaning, the field's bytes of a message)."""

FIELD_HELP = ", ".join(f"%{code} {meaning}" for code, (meaning, _) in FIELDS.items())
"""The fields for help texts: "%t topic, %k keys (space-separated), ..."."""


def fit(value: bytes, left: bool, width: int, most: int | None) -> bytes:
    """`value` cut to `most` and padded to `width` characters (bytes when not UTF-8)."""
    try:
        text = value.decode()
    except UnicodeDecodeError:
        raw = value if most is None else value[:most]
        return raw.ljust(width) if left else raw.rjust(width)
    if most is not None:
        text = text[:most]
    return (text.ljust(width) if left else text.rjust(width)).encode()


def _sized(field: Render, left: bool, width: int, most: int | None) -> Render:
    def render(msg: MessageExt) -> bytes:
        return fit(field(msg), left, width, most)

    return render


def compile_template(template: str) -> Render:
    """A `--format` template as a function of a message (BadParameter for a bad one);
    "json" is the NDJSON record."""
    if template == "json":
        return render_record
    parts: list[bytes | Render] = []
    literal = bytearray()
    position = 0
    while position < len(template):
        char = template[position]
        position += 1
        if char == "\\":
            code = template[position : position + 1]
            position += 1
            if code not in _ESCAPES:
                raise click.BadParameter(
                    f"unknown escape \\{code}: use \\n \\t \\r \\\\", param_hint=_FORMAT_HINT
                )
            literal += _ESCAPES[code]
        elif char == "%":
            spec = _SPEC.match(template, position)
            assert spec is not None, "every part of the pattern is optional"
            left, width, most, code = spec.groups()
            position = spec.end()
            if code == "%" and not (left or width or most):
                literal += b"%"
                continue
            if code not in FIELDS:
                known = " ".join(f"%{name}" for name in FIELDS)
                raise click.BadParameter(
                    f"unknown field %{spec.group(0)}: use {known} or %% "
                    "(widths as printf: %-20k, %10S, %.40v)",
                    param_hint=_FORMAT_HINT,
                )
            if literal:
                parts.append(bytes(literal))
                literal.clear()
            field = FIELDS[code][1]
            if width or most:
                field = _sized(
                    field, bool(left), int(width or 0), None if most is None else int(most)
                )
            parts.append(field)
        else:
            literal += char.encode()
    if literal:
        parts.append(bytes(literal))

    def render(msg: MessageExt) -> bytes:
        return b"".join(part if isinstance(part, bytes) else part(msg) for part in parts)

    return render


def render_record(msg: MessageExt) -> bytes:
    """The message record as one NDJSON line."""
    import orjson

    return orjson.dumps(msg.to_record_dict()) + b"\n"
