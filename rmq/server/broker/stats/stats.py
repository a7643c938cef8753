"""Broker statistics: message put/get counters, moving TPS windows and put latency.

:class:`BrokerStats` is what GET_BROKER_RUNTIME_INFO reports about traffic, the numbers
Apache keeps in its ``StoreStatsService`` and ``BrokerStats``:

* Counters, bumped by the processors on every request and therefore only plain integer
  additions: messages put (a batch counts each message) and their bytes, failed puts, pulls
  that found messages and pulls that found none, messages handed to consumers, and the
  longest put / pull.
* The named stats items (TOPIC_PUT_NUMS, GROUP_GET_NUMS, ...) with their minute, hour and day
  windows, Apache's ``BrokerStatsManager``: :attr:`BrokerStats.items`
  (:mod:`rmq.server.broker.stats.statsitems`).
* TPS over the last 10, 60 and 600 seconds: :meth:`BrokerStats.sample` (the broker calls it
  every second) appends a snapshot of the counters to a ring of 601; a window's TPS is the
  counter difference between the newest snapshot and the one ``window`` samples older,
  divided by the time between them.  Reported as Apache does, ``"<10s> <60s> <600s>"``.
  While fewer samples than a window exist the oldest one is used instead, so the triple is
  always three numbers (Apache leaves that part empty, which its own ``clusterList`` cannot
  parse).
* Put latency: every put's duration (ms) lands in a 13-bucket distribution
  (``[<=0ms]`` .. ``[10s~]``) and in the finer buckets Apache derives ``putLatency99`` /
  ``putLatency999`` from.  Both are rotated once a minute; the runtime info shows the last
  complete minute, as Apache does (the distribution is ``null`` before the first minute is
  complete, the percentiles 0.00).
* Day totals: :meth:`BrokerStats.record_day` (the broker calls it at local midnight) moves
  "today morning" to "yesterday morning" and takes the current totals as "today morning".

Everything runs on the broker's event loop, so there are no locks.  Times are wall-clock
milliseconds from an injectable clock.
"""

from __future__ import annotations

import bisect
import itertools
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from rmq.common.timeutil import now_millis
from rmq.server.broker.stats.statsitems import BrokerStatsItems
from rmq.store.putmessage import PutMessageResult

SAMPLE_WINDOWS = (10, 60, 600)
"""Seconds of the three TPS windows, in the order they are reported."""
MAX_SAMPLES = SAMPLE_WINDOWS[-1] + 1
LATENCY_ROTATE_MS = 60_000
"""How long a put latency distribution collects before it becomes the reported one."""

_DISTRIBUTION_BOUNDS = (1, 10, 50, 100, 200, 500, 1000, 2000, 3000, 4000, 5000, 10_000)
_DISTRIBUTION_NAMES = (
    "[<=0ms]",
    "[0~10ms]",
    "[10~50ms]",
    "[50~100ms]",
    "[100~200ms]",
    "[200~500ms]",
    "[500ms~1s]",
    "[1~2s]",
    "[2~3s]",
    "[3~4s]",
    "[4~5s]",
    "[5~10s]",
    "[10s~]",
)


def _latency_bounds() -> tuple[int, ...]:
    """Upper bounds (ms) of the percentile buckets: 1 ms steps to 20, 2 to 50, 5 to 100,
    10 to 200, 50 to 500, 100 to 1000, 1000 to 10000 (Apache's buckets)."""
    steps = ((1, 20), (2, 15), (5, 10), (10, 10), (50, 6), (100, 5), (1000, 9))
    bounds = list(itertools.accumulate(step for step, times in steps for _ in range(times)))
    return tuple(bounds)


_LATENCY_BOUNDS = _latency_bounds()


@dataclass(frozen=True, slots=True)
class _Sample:
    timestamp: int
    put: int
    get_found: int
    get_miss: int
    transferred: int


def _tps(old: int, new: int, elapsed_ms: int) -> float:
    return (new - old) * 1000 / elapsed_ms if elapsed_ms > 0 else 0.0


def format_runtime(elapsed_ms: int) -> str:
    """``[ D days, H hours, M minutes, S seconds ]``, Apache's ``runtime`` text."""
    seconds, _ = divmod(max(elapsed_ms, 0), 1000)
    minutes, seconds = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    return f"[ {days:,} days, {hours} hours, {minutes} minutes, {seconds} seconds ]"


def percentile(counts: list[int], bounds: tuple[int, ...], fraction: float) -> float:
    """The latency under which ``fraction`` of the puts counted in ``counts`` finished.

    ``counts[i]`` holds the puts up to ``bounds[i]`` ms (the last entry: longer than every
    bound); within a bucket the value is interpolated linearly, as Apache does.
    """
    total = sum(counts)
    rank = int(total * fraction)
    passed = 0
    for index, count in enumerate(counts):
        if rank <= passed + count:
            upper = bounds[index] if index < len(bounds) else bounds[-1]
            lower = bounds[index - 1] if index > 0 else 0
            share = (rank - passed) / count if count else 0.0
            return lower + (upper - lower) * share
        passed += count
    return 0.0


class BrokerStats:
    """Traffic counters and TPS windows of one broker (see the module docstring)."""

    def __init__(
        self, clock: Callable[[], int] = now_millis, items: BrokerStatsItems | None = None
    ) -> None:
        self._clock = clock
        self.items = items if items is not None else BrokerStatsItems("DefaultCluster", clock=clock)
        self.boot_timestamp = clock()
        self.put_total = 0
        self.put_size_total = 0
        self.put_failed = 0
        self.put_time_max = 0
        self.get_found = 0
        self.get_miss = 0
        self.get_transferred = 0
        self.get_time_max = 0
        self.put_total_yesterday_morning = 0
        self.put_total_today_morning = 0
        self.get_total_yesterday_morning = 0
        self.get_total_today_morning = 0
        self._samples: deque[_Sample] = deque(maxlen=MAX_SAMPLES)
        self._distribution = [0] * len(_DISTRIBUTION_NAMES)
        self._last_distribution: list[int] | None = None
        self._latency = [0] * (len(_LATENCY_BOUNDS) + 1)
        self._last_latency = [0] * (len(_LATENCY_BOUNDS) + 1)
        self._rotated_at = self.boot_timestamp
        self.sample()

    # -- called per request --------------------------------------------------------------

    def on_put(self, result: PutMessageResult, elapsed_ms: int) -> None:
        """The outcome of a put that took ``elapsed_ms``: what was stored is counted (each
        message of a batch), a put that stored nothing counts as failed."""
        if result.wrote_bytes <= 0:
            self.put_failed += 1
            return
        self.put_total += result.msg_num
        self.put_size_total += result.wrote_bytes
        self._distribution[bisect.bisect_right(_DISTRIBUTION_BOUNDS, elapsed_ms)] += 1
        self._latency[bisect.bisect_left(_LATENCY_BOUNDS, elapsed_ms)] += 1
        if elapsed_ms > self.put_time_max:
            self.put_time_max = elapsed_ms

    def on_get(self, msg_num: int, elapsed_ms: int = 0) -> None:
        """A pull that returned ``msg_num`` messages (0: none found)."""
        if msg_num:
            self.get_found += 1
            self.get_transferred += msg_num
        else:
            self.get_miss += 1
        if elapsed_ms > self.get_time_max:
            self.get_time_max = elapsed_ms

    # -- called on timers ----------------------------------------------------------------

    def sample(self) -> None:
        """Snapshot the counters (every second); rotates the latency buckets every minute."""
        now = self._clock()
        self._samples.append(
            _Sample(now, self.put_total, self.get_found, self.get_miss, self.get_transferred)
        )
        if now - self._rotated_at >= LATENCY_ROTATE_MS:
            self._rotated_at = now
            self._last_distribution = self._distribution
            self._distribution = [0] * len(_DISTRIBUTION_NAMES)
            self._last_latency = self._latency
            self._latency = [0] * (len(_LATENCY_BOUNDS) + 1)

    def record_day(self) -> None:
        """Start a new day: today's morning totals become yesterday's."""
        self.put_total_yesterday_morning = self.put_total_today_morning
        self.get_total_yesterday_morning = self.get_total_today_morning
        self.put_total_today_morning = self.put_total
        self.get_total_today_morning = self.get_transferred

    # -- reports -------------------------------------------------------------------------

    def _window_tps(self, value: Callable[[_Sample], int]) -> list[float | None]:
        """TPS over each window; None while fewer than window + 1 samples exist (Apache then
        reports the window as an empty word)."""
        samples = self._samples
        result: list[float | None] = []
        for window in SAMPLE_WINDOWS:
            if len(samples) <= window:
                result.append(None)
                continue
            oldest, newest = samples[len(samples) - 1 - window], samples[-1]
            result.append(_tps(value(oldest), value(newest), newest.timestamp - oldest.timestamp))
        return result

    def runtime_info(self) -> dict[str, str]:
        """The store statistics part of GET_BROKER_RUNTIME_INFO (Apache's key names)."""
        put_tps = self._window_tps(lambda s: s.put)
        found_tps = self._window_tps(lambda s: s.get_found)
        miss_tps = self._window_tps(lambda s: s.get_miss)
        transferred_tps = self._window_tps(lambda s: s.transferred)
        total_tps: list[float | None] = [
            (found or 0.0) + (miss or 0.0) for found, miss in zip(found_tps, miss_tps, strict=True)
        ]
        times_total = self.put_total or 1
        last = self._last_distribution
        distribution = (
            "null"
            if last is None
            else "".join(
                f"{name}:{count} " for name, count in zip(_DISTRIBUTION_NAMES, last, strict=True)
            )
        )
        return {
            "bootTimestamp": str(self.boot_timestamp),
            "runtime": format_runtime(self._clock() - self.boot_timestamp),
            "putMessageEntireTimeMax": str(self.put_time_max),
            "putMessageTimesTotal": str(times_total),
            "putMessageFailedTimes": str(self.put_failed),
            "putMessageSizeTotal": str(self.put_size_total),
            "putMessageDistributeTime": distribution,
            "putMessageAverageSize": repr(self.put_size_total / times_total),
            "dispatchMaxBuffer": "0",
            "getMessageEntireTimeMax": str(self.get_time_max),
            "putTps": _triple(put_tps),
            "getFoundTps": _triple(found_tps),
            "getMissTps": _triple(miss_tps),
            "getTotalTps": _triple(total_tps),
            "getTransferedTps": _triple(transferred_tps),
            "putLatency99": f"{percentile(self._last_latency, _LATENCY_BOUNDS, 0.99):.2f}",
            "putLatency999": f"{percentile(self._last_latency, _LATENCY_BOUNDS, 0.999):.2f}",
            "msgPutTotalYesterdayMorning": str(self.put_total_yesterday_morning),
            "msgPutTotalTodayMorning": str(self.put_total_today_morning),
            "msgPutTotalTodayNow": str(self.put_total),
            "msgGetTotalYesterdayMorning": str(self.get_total_yesterday_morning),
            "msgGetTotalTodayMorning": str(self.get_total_today_morning),
            "msgGetTotalTodayNow": str(self.get_transferred),
        }


def _triple(values: list[float | None]) -> str:
    """Three windows as Apache joins them: a window without enough samples is empty, so a
    broker up for 30 s reports `putTps` as "12.5  " (10 s window only)."""
    return " ".join("" if value is None else repr(value) for value in values)
