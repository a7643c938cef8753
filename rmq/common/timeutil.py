"""The wall clock every rmq layer stamps things with.

RocketMQ stamps records, data versions, heartbeats and message ids with Java's
``System.currentTimeMillis()``: milliseconds since the Unix epoch, from the wall clock (it
may jump when the system time is set).  :func:`now_millis` is that clock, defined once so
that callers which need a fake clock in tests can replace one name.  :func:`parse_time` reads
a time a user typed (``--begin``, ``--since``, a Spark option) as such milliseconds.
"""

from __future__ import annotations

import datetime
import time

__all__ = ["now_millis", "parse_time"]


def now_millis() -> int:
    """Milliseconds since the Unix epoch, as Java's ``System.currentTimeMillis()``."""
    return time.time_ns() // 1_000_000


def parse_time(text: str) -> int:
    """Epoch milliseconds from epoch milliseconds or an ISO 8601 date or time (a time
    without a zone is local); ValueError otherwise."""
    word = text.strip()
    if word.isdigit():
        return int(word)
    try:
        moment = datetime.datetime.fromisoformat(word)
    except ValueError:
        raise ValueError(
            f"{text!r} is neither epoch milliseconds nor an ISO 8601 time "
            "(2024-05-01, 2024-05-01T12:00:00Z)"
        ) from None
    return int(moment.timestamp() * 1000)
