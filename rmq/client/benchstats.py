"""The figures of the load generators in `rmq.client.bench`: latency samples and their
percentiles, and the send schedule of a rate-limited run.

* `Latencies` keeps every sample (ms) in a flat `array('d')`, per interval and for the whole
  run, so percentiles are exact; `summarize` gives count, average, maximum and the nearest-rank
  p50, p99 and p99.9 (`percentile`).
* `RateSchedule` is the token bucket of `rmq bench produce --rate N`: send k (counted from 0)
  is due at `start + k * cost / rate`, where `cost` is the messages a send carries.  A sender
  takes the next due time, sleeps until it if it is early and sends at once if it is late; its
  latency is then measured from the due time, not from when the send finally went out, so a
  broker that stalls is charged for every send the stall delayed (the "coordinated omission"
  that a closed loop of senders hides).  Due times never drift: a slow stretch is followed by
  sends back to back until the schedule is met again.
"""

from __future__ import annotations

import array
from dataclasses import dataclass


@dataclass(frozen=True)
class LatencySummary:
    """Count, average, maximum and percentiles of a set of latencies (ms)."""

    count: int
    average: float
    maximum: float
    p50: float
    p99: float
    p999: float


def percentile(ordered: array.array[float] | list[float], fraction: float) -> float:
    """The nearest-rank percentile of sorted samples: the smallest sample with at least
    `fraction` of all samples at or below it (0.0 when there are none)."""
    count = len(ordered)
    if not count:
        return 0.0
    rank = -(-count * round(fraction * 1000) // 1000)  # ceil(count * fraction), exact
    return ordered[max(0, rank - 1)]


def summarize(samples: array.array[float]) -> LatencySummary:
    """Count, average, maximum and nearest-rank percentiles of `samples`."""
    count = len(samples)
    if not count:
        return LatencySummary(0, 0.0, 0.0, 0.0, 0.0, 0.0)
    ordered = sorted(samples)
    return LatencySummary(
        count,
        sum(ordered) / count,
        ordered[-1],
        percentile(ordered, 0.50),
        percentile(ordered, 0.99),
        percentile(ordered, 0.999),
    )


class Latencies:
    """Latency samples (ms) of the current interval and of the whole run."""

    __slots__ = ("_all", "_window")

    def __init__(self) -> None:
        self._all = array.array("d")
        self._window = array.array("d")

    def add(self, millis: float) -> None:
        self._window.append(millis)

    def take_window(self) -> LatencySummary:
        """The interval's summary; the interval's samples join the run's and a new one begins."""
        window = self._window
        self._all.extend(window)
        self._window = array.array("d")
        return summarize(window)

    def total(self) -> LatencySummary:
        self._all.extend(self._window)
        self._window = array.array("d")
        return summarize(self._all)


class RateSchedule:
    """Due times of sends carrying `cost` messages each at `rate` messages per second,
    the first at `start` (seconds on any monotonic clock)."""

    __slots__ = ("_next", "cost", "rate", "start")

    def __init__(self, rate: float, start: float, cost: int = 1) -> None:
        if rate <= 0:
            raise ValueError(f"rate must be positive, not {rate}")
        self.rate = rate
        self.start = start
        self.cost = cost
        self._next = 0

    def take(self) -> float:
        """The due time of the next send."""
        due = self.start + self._next * self.cost / self.rate
        self._next += 1
        return due

    @property
    def taken(self) -> int:
        """How many due times were handed out."""
        return self._next
