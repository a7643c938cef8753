"""Delay levels: parsing ``messageDelayLevel`` and mapping a level to its delay.

``messageDelayLevel`` is a space-separated list such as ``1s 5s 10s 30s 1m ... 2h``; entry i
(1-based) is the delay of level i, a whole number followed by a unit ``s``, ``m``, ``h`` or
``d``.  A delayed message with level L waits in SCHEDULE_TOPIC_XXXX queue L-1; levels above
the highest configured one are clamped to it, as the broker does, and the consume-queue entry
of a scheduled message holds its delivery time (store time + delay) in place of a tags code.
"""

from __future__ import annotations

DEFAULT_MESSAGE_DELAY_LEVEL = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"

_UNIT_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_delay_levels(text: str) -> tuple[int, ...]:
    """Delays in ms, index 0 for level 1; raises ValueError naming the bad entry."""
    levels = []
    for entry in text.split():
        amount, unit = entry[:-1], entry[-1:]
        if unit not in _UNIT_MS or not amount.isdigit():
            raise ValueError(
                f"invalid messageDelayLevel entry {entry!r}: expected a whole number followed "
                "by s, m, h or d (e.g. 5s)"
            )
        levels.append(int(amount) * _UNIT_MS[unit])
    if not levels:
        raise ValueError("messageDelayLevel is empty: it needs at least one level such as 1s")
    return tuple(levels)


def clamp_delay_level(level: int, levels: tuple[int, ...]) -> int:
    """The level the broker stores: levels above the highest are lowered to it."""
    return min(level, len(levels))


def schedule_queue_id(level: int) -> int:
    """The SCHEDULE_TOPIC_XXXX queue of a (clamped) delay level."""
    return level - 1


def deliver_timestamp(level: int, store_timestamp: int, levels: tuple[int, ...]) -> int:
    """When a message stored at ``store_timestamp`` with delay ``level`` is due.

    Levels above the highest are clamped; level 0 or below means "not delayed" and is refused.
    """
    if level < 1:
        raise ValueError(f"delay level {level} is not a delay; levels start at 1")
    return store_timestamp + levels[clamp_delay_level(level, levels) - 1]
