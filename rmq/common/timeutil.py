"""The wall clock every rmq layer stamps things with, and the one reader of times users type.

RocketMQ stamps records, data versions, heartbeats and message ids with Java's
``System.currentTimeMillis()``: milliseconds since the Unix epoch, from the wall clock (it
may jump when the system time is set).  :func:`now_millis` is that clock, defined once so
that callers which need a fake clock in tests can replace one name.

:func:`parse_time` reads a time a user typed (`rmq consume --from @...`, `rmq group
reset-offsets --to @...`, `--begin`/`--end` of inspect, `--since`/`--until` of spark-export)
as such milliseconds.  The grammar, with an optional leading ``@``:

    1714564800000            epoch milliseconds
    2024-05-01               an ISO 8601 date or time (2024-05-01T12:00:00Z, ...+02:00);
    2024-05-01T12:00:00      a time without a zone is local
    -1h  -30m  -10s  -2d     that long before now: a sequence of <number><unit>, the units
    -1h30m  -1.5h  -500ms    ms, s, m, h, d (24 h) and w (7 d), as rpk writes `@-1h`

:func:`format_seconds` is the one way a timeout or wait is written in messages: ``5.0s``,
``250ms``, never the float a deadline computation left (``4.999519347999978s``).
"""

from __future__ import annotations

import datetime
import re
import time

__all__ = ["format_seconds", "now_millis", "parse_duration", "parse_time"]

_UNIT_MILLIS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_UNIT_MILLIS["w"] = 7 * _UNIT_MILLIS["d"]
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?|\.\d+)(ms|s|m|h|d|w)")

TIME_FORMS = (
    "epoch milliseconds, an ISO 8601 time (2024-05-01, 2024-05-01T12:00:00Z) "
    "or -DURATION (-1h, -30m, -10s, -2d: that long ago)"
)
"""The accepted forms, for error messages and help texts."""


def now_millis() -> int:
    """Milliseconds since the Unix epoch, as Java's ``System.currentTimeMillis()``."""
    return time.time_ns() // 1_000_000


def format_seconds(seconds: float) -> str:
    """A timeout for people: tenths of a second from 1 s up (``5.0s``), else whole
    milliseconds (``250ms``)."""
    if seconds < 0.9995:
        return f"{max(round(seconds * 1000), 0)}ms"
    return f"{seconds:.1f}s"


def parse_duration(text: str) -> int:
    """Milliseconds in a duration such as ``1h30m``, ``90s``, ``1.5h``, ``2d``; ValueError
    for anything else."""
    word = text.strip()
    position = 0
    millis = 0.0
    for part in _DURATION_PART.finditer(word):
        if part.start() != position:
            break
        millis += float(part.group(1)) * _UNIT_MILLIS[part.group(2)]
        position = part.end()
    if not word or position != len(word):
        raise ValueError(
            f"{text!r} is not a duration: use <number><unit>..., units ms s m h d w (1h30m, 10s)"
        )
    return round(millis)


def parse_time(text: str, *, now: int | None = None) -> int:
    """Epoch milliseconds from the module docstring's grammar (`now` is the clock for the
    relative form: default `now_millis()`); ValueError otherwise."""
    word = text.strip()
    word = word.removeprefix("@")
    if word.isdigit():
        return int(word)
    if word.startswith("-"):
        try:
            ago = parse_duration(word[1:])
        except ValueError:
            pass
        else:
            return (now_millis() if now is None else now) - ago
    try:
        moment = datetime.datetime.fromisoformat(word)
    except ValueError:
        raise ValueError(f"{text!r} is not a time: use {TIME_FORMS}") from None
    return int(moment.timestamp() * 1000)
