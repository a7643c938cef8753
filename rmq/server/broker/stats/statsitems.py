"""The broker's named stats items: what VIEW_BROKER_STATS_DATA and GET_CONSUME_STATS read.

Apache's ``BrokerStatsManager`` keeps, per stats name, a table of items keyed by a string
(``topic``, ``topic@group``, ``topic@queueId``, ...).  An item is two counters, ``value`` and
``times``, and three :class:`SampledWindow` rings of snapshots of them:

==========  ===============  ===========  ===============================================
window      sampled every    snapshots    spans
==========  ===============  ===========  ===============================================
minute      10 s             7            the last minute
hour        10 min           7            the last hour
day         1 h              25           the last day
==========  ===============  ===========  ===============================================

The broker's timers call :meth:`BrokerStatsItems.sample_minute` / ``sample_hour`` /
``sample_day`` at those rates from the broker's start, as Apache's scheduled executor does,
so an item created between two samples has empty windows until the next one.  The first
snapshot of a window is preceded by a zero snapshot one interval earlier, so the first sample
already shows what was counted since the item appeared.  A window's :class:`StatsSnapshot` is
the difference between its newest and oldest snapshot: ``sum`` of values, ``tps`` (sum per
second between the two), ``avgpt`` (sum per time counted) and ``times``; an empty window is
all zeros.

The items 4.9.8 fills, and with what (key, value, times):

* a stored send: TOPIC_PUT_NUMS (topic as stored, messages, 1), TOPIC_PUT_SIZE (bytes, 1),
  BROKER_PUT_NUMS (cluster name, messages; ``times`` never counts), and for a message parked
  in ``SCHEDULE_TOPIC_XXXX`` QUEUE_PUT_NUMS / QUEUE_PUT_SIZE (``topic@queueId``);
* a consumer's send-back: SNDBCK_PUT_NUMS (``topic@group``, the message's original topic),
  plus the put items of the schedule topic when it was parked for a retry;
* a pull that found messages, and the transaction check reading half and op messages:
  GROUP_GET_NUMS / GROUP_GET_SIZE (``topic@group``), BROKER_GET_NUMS (cluster name) and, for a
  pull, GROUP_GET_LATENCY (``queueId@topic@group`` with ``enableDetailStat``, else
  ``topic@group``; the pull's milliseconds);
* a delayed message delivered (``enableScheduleMessageStats``): QUEUE_GET_NUMS / QUEUE_GET_SIZE
  (``SCHEDULE_TOPIC_XXXX@<level - 1>@SCHEDULE_CONSUMER``), GROUP_GET_NUMS / GROUP_GET_SIZE
  (``SCHEDULE_TOPIC_XXXX@SCHEDULE_CONSUMER``) and the put items of its real topic.

The QUEUE_* tables exist only with ``enableDetailStat`` (Apache's default).  The other names
Apache declares (GROUP_GET_FROM_DISK_*, BROKER_GET_FROM_DISK_*, COMMERCIAL_*) have tables
that nothing fills, so asking for them finds no item, as on Apache's broker.

Memory stays bounded: each window keeps at most 25 snapshots, and with ``autoDeleteUnusedStats``
the items of a deleted topic or group go (:meth:`BrokerStatsItems.topic_deleted`,
:meth:`BrokerStatsItems.group_deleted`), as Apache drops them.  Everything runs on the
broker's event loop, so there are no locks.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from rmq.common.naming import RMQ_SYS_SCHEDULE_TOPIC
from rmq.common.timeutil import now_millis

MINUTE_SAMPLE_INTERVAL_S = 10.0
HOUR_SAMPLE_INTERVAL_S = 600.0
DAY_SAMPLE_INTERVAL_S = 3600.0
SCHEDULE_CONSUMER_GROUP = "SCHEDULE_CONSUMER"

QUEUE_PUT_NUMS = "QUEUE_PUT_NUMS"
QUEUE_PUT_SIZE = "QUEUE_PUT_SIZE"
QUEUE_GET_NUMS = "QUEUE_GET_NUMS"
QUEUE_GET_SIZE = "QUEUE_GET_SIZE"
TOPIC_PUT_NUMS = "TOPIC_PUT_NUMS"
TOPIC_PUT_SIZE = "TOPIC_PUT_SIZE"
GROUP_GET_NUMS = "GROUP_GET_NUMS"
GROUP_GET_SIZE = "GROUP_GET_SIZE"
GROUP_GET_LATENCY = "GROUP_GET_LATENCY"
SNDBCK_PUT_NUMS = "SNDBCK_PUT_NUMS"
BROKER_PUT_NUMS = "BROKER_PUT_NUMS"
BROKER_GET_NUMS = "BROKER_GET_NUMS"
UNFILLED_STATS = (
    "GROUP_GET_FROM_DISK_NUMS",
    "GROUP_GET_FROM_DISK_SIZE",
    "BROKER_GET_FROM_DISK_NUMS",
    "BROKER_GET_FROM_DISK_SIZE",
    "COMMERCIAL_SEND_TIMES",
    "COMMERCIAL_RCV_TIMES",
    "COMMERCIAL_SEND_SIZE",
    "COMMERCIAL_RCV_SIZE",
    "COMMERCIAL_RCV_EPOLLS",
    "COMMERCIAL_SNDBCK_TIMES",
    "COMMERCIAL_PERM_FAILURES",
)
"""Names Apache's broker declares tables for but never fills."""
_QUEUE_STATS = (QUEUE_PUT_NUMS, QUEUE_PUT_SIZE, QUEUE_GET_NUMS, QUEUE_GET_SIZE)


@dataclass(frozen=True, slots=True)
class StatsSnapshot:
    """What a window counted: Apache's ``StatsSnapshot``."""

    sum: int = 0
    tps: float = 0.0
    avgpt: float = 0.0
    times: int = 0


class SampledWindow:
    """A ring of ``(timestamp, times, value)`` snapshots taken every ``interval_ms``."""

    __slots__ = ("_interval_ms", "_snapshots")

    def __init__(self, interval_ms: int, keep: int) -> None:
        self._interval_ms = interval_ms
        self._snapshots: deque[tuple[int, int, int]] = deque(maxlen=keep)

    def sample(self, now: int, times: int, value: int) -> None:
        if not self._snapshots:
            self._snapshots.append((now - self._interval_ms, 0, 0))
        self._snapshots.append((now, times, value))

    def snapshot(self) -> StatsSnapshot:
        if not self._snapshots:
            return StatsSnapshot()
        (first_time, first_times, first_value) = self._snapshots[0]
        (last_time, last_times, last_value) = self._snapshots[-1]
        total = last_value - first_value
        elapsed = last_time - first_time
        times = last_times - first_times
        return StatsSnapshot(
            sum=total,
            tps=total * 1000 / elapsed if elapsed > 0 else 0.0,
            avgpt=total / times if times > 0 else 0.0,
            times=times,
        )


class StatsItem:
    """One key's counters and their minute, hour and day windows."""

    __slots__ = ("day", "hour", "minute", "times", "value")

    def __init__(self) -> None:
        self.value = 0
        self.times = 0
        self.minute = SampledWindow(int(MINUTE_SAMPLE_INTERVAL_S * 1000), 7)
        self.hour = SampledWindow(int(HOUR_SAMPLE_INTERVAL_S * 1000), 7)
        self.day = SampledWindow(int(DAY_SAMPLE_INTERVAL_S * 1000), 25)


class StatsItemSet:
    """The items of one stats name, by key."""

    __slots__ = ("items",)

    def __init__(self) -> None:
        self.items: dict[str, StatsItem] = {}

    def add(self, key: str, value: int, times: int) -> None:
        item = self.items.get(key)
        if item is None:
            item = self.items[key] = StatsItem()
        item.value += value
        item.times += times

    def delete_where(self, doomed: Callable[[str], bool]) -> None:
        self.items = {key: item for key, item in self.items.items() if not doomed(key)}


class BrokerStatsItems:
    """Apache's ``BrokerStatsManager`` (see the module docstring)."""

    def __init__(
        self,
        cluster_name: str,
        *,
        queue_stats: bool = True,
        schedule_stats: bool = True,
        clock: Callable[[], int] = now_millis,
    ) -> None:
        self._cluster_name = cluster_name
        self._queue_stats = queue_stats
        self._schedule_stats = schedule_stats
        self._clock = clock
        names = [
            TOPIC_PUT_NUMS,
            TOPIC_PUT_SIZE,
            GROUP_GET_NUMS,
            GROUP_GET_SIZE,
            GROUP_GET_LATENCY,
            SNDBCK_PUT_NUMS,
            BROKER_PUT_NUMS,
            BROKER_GET_NUMS,
            *UNFILLED_STATS,
        ]
        if queue_stats:
            names.extend(_QUEUE_STATS)
        self._sets = {name: StatsItemSet() for name in names}

    def _add(self, name: str, key: str, value: int, times: int = 1) -> None:
        item_set = self._sets.get(name)
        if item_set is not None:
            item_set.add(key, value, times)

    # -- counting ------------------------------------------------------------------------

    def put(self, topic: str, queue_id: int, msg_num: int, size: int) -> None:
        """A send of ``msg_num`` messages (``size`` bytes) stored in ``topic``."""
        if topic == RMQ_SYS_SCHEDULE_TOPIC:
            self._add(QUEUE_PUT_NUMS, f"{topic}@{queue_id}", msg_num)
            self._add(QUEUE_PUT_SIZE, f"{topic}@{queue_id}", size)
        self._add(TOPIC_PUT_NUMS, topic, msg_num)
        self._add(TOPIC_PUT_SIZE, topic, size)
        self._add(BROKER_PUT_NUMS, self._cluster_name, msg_num, 0)

    def send_back(
        self, group: str, back_topic: str, stored_topic: str, queue_id: int, size: int
    ) -> None:
        """A consumer's send-back of a ``back_topic`` message, stored (``size`` bytes) in
        ``stored_topic``: only a message parked for a retry counts as a put."""
        if stored_topic == RMQ_SYS_SCHEDULE_TOPIC:
            self._add(TOPIC_PUT_NUMS, stored_topic, 1)
            self._add(TOPIC_PUT_SIZE, stored_topic, size)
            self._add(QUEUE_PUT_NUMS, f"{stored_topic}@{queue_id}", 1)
            self._add(QUEUE_PUT_SIZE, f"{stored_topic}@{queue_id}", size)
        self._add(SNDBCK_PUT_NUMS, f"{back_topic}@{group}", 1)

    def get(self, group: str, topic: str, msg_num: int, size: int) -> None:
        """``msg_num`` messages (``size`` bytes) of ``topic`` read for ``group``."""
        self._add(GROUP_GET_NUMS, f"{topic}@{group}", msg_num)
        self._add(GROUP_GET_SIZE, f"{topic}@{group}", size)
        self._add(BROKER_GET_NUMS, self._cluster_name, msg_num, 0)

    def pull_latency(self, group: str, topic: str, queue_id: int, elapsed_ms: int) -> None:
        """How long a pull that found messages took."""
        key = f"{queue_id}@{topic}@{group}" if self._queue_stats else f"{topic}@{group}"
        self._add(GROUP_GET_LATENCY, key, elapsed_ms)

    def delivered(self, level: int, topic: str, msg_num: int, size: int) -> None:
        """A delayed message of ``level`` delivered to its real ``topic``."""
        if not self._schedule_stats:
            return
        schedule, group = RMQ_SYS_SCHEDULE_TOPIC, SCHEDULE_CONSUMER_GROUP
        self._add(QUEUE_GET_NUMS, f"{schedule}@{level - 1}@{group}", msg_num)
        self._add(QUEUE_GET_SIZE, f"{schedule}@{level - 1}@{group}", size)
        self._add(GROUP_GET_NUMS, f"{schedule}@{group}", msg_num)
        self._add(GROUP_GET_SIZE, f"{schedule}@{group}", size)
        self._add(TOPIC_PUT_NUMS, topic, msg_num)
        self._add(TOPIC_PUT_SIZE, topic, size)
        self._add(BROKER_PUT_NUMS, self._cluster_name, msg_num, 0)

    # -- sampling (the broker's timers) ---------------------------------------------------

    def sample_minute(self) -> None:
        """Every 10 s: a snapshot into every item's minute window."""
        now = self._clock()
        for item_set in self._sets.values():
            for item in item_set.items.values():
                item.minute.sample(now, item.times, item.value)

    def sample_hour(self) -> None:
        """Every 10 min: a snapshot into every item's hour window."""
        now = self._clock()
        for item_set in self._sets.values():
            for item in item_set.items.values():
                item.hour.sample(now, item.times, item.value)

    def sample_day(self) -> None:
        """Every hour: a snapshot into every item's day window."""
        now = self._clock()
        for item_set in self._sets.values():
            for item in item_set.items.values():
                item.day.sample(now, item.times, item.value)

    # -- reading and forgetting ----------------------------------------------------------

    def item(self, name: str, key: str) -> StatsItem | None:
        """The item ``key`` of stats ``name``, None when either is unknown."""
        item_set = self._sets.get(name)
        return item_set.items.get(key) if item_set is not None else None

    def group_get_tps(self, group: str, topic: str) -> float:
        """Messages per second ``group`` got from ``topic`` over the last minute."""
        item = self.item(GROUP_GET_NUMS, f"{topic}@{group}")
        return item.minute.snapshot().tps if item is not None else 0.0

    def topic_deleted(self, topic: str) -> None:
        """Forget the items of ``topic``."""
        prefix, infix = f"{topic}@", f"@{topic}@"
        self._sets[TOPIC_PUT_NUMS].delete_where(topic.__eq__)
        self._sets[TOPIC_PUT_SIZE].delete_where(topic.__eq__)
        for name in (GROUP_GET_NUMS, GROUP_GET_SIZE, SNDBCK_PUT_NUMS, *_QUEUE_STATS):
            if name in self._sets:
                self._sets[name].delete_where(lambda key: key.startswith(prefix))
        self._sets[GROUP_GET_LATENCY].delete_where(lambda key: infix in key)

    def group_deleted(self, group: str) -> None:
        """Forget the items of ``group``."""
        suffix = f"@{group}"
        names = (GROUP_GET_NUMS, GROUP_GET_SIZE, SNDBCK_PUT_NUMS, GROUP_GET_LATENCY)
        for name in (*names, QUEUE_GET_NUMS, QUEUE_GET_SIZE):
            if name in self._sets:
                self._sets[name].delete_where(lambda key: key.endswith(suffix))
