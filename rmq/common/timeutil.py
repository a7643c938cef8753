"""The wall clock every rmq layer stamps things with.

RocketMQ stamps records, data versions, heartbeats and message ids with Java's
``System.currentTimeMillis()``: milliseconds since the Unix epoch, from the wall clock (it
may jump when the system time is set).  :func:`now_millis` is that clock, defined once so
that callers which need a fake clock in tests can replace one name.
"""

from __future__ import annotations

import time

__all__ = ["now_millis"]


def now_millis() -> int:
    """Milliseconds since the Unix epoch, as Java's ``System.currentTimeMillis()``."""
    return time.time_ns() // 1_000_000
