"""The metric families of rocketmq-exporter and the store that serves them as Prometheus text.

This module owns what `/metrics` shows: every family's name, help and label names, as
rocketmq-exporter (apache/rocketmq-exporter, the collector `RMQMetricsCollector`) writes them,
so a Grafana dashboard built on that exporter works unchanged; the store of the collected
series, each kept until `expire_after` seconds pass without a round reporting it (the
exporter's `outOfTimeSeconds`, 60 s; a series of the latest round stays until the next
round, so a slow round never blanks it out); and the text exposition format 0.0.4.

All families are gauges and every family is written, with its HELP and TYPE lines, even when
it has no series (as the exporter does).  A round of collection (`rmq.console.collect`)
gathers its samples into a `Round` and hands it to `MetricStore.commit` in one step, so a
scrape sees either the previous round's values or the new ones, never half of each; a
scrape only reads memory, under a lock, and never waits on the cluster.

The broker runtime table (GET_BROKER_RUNTIME_INFO) is turned into the `rocketmq_brokeruntime_*`
values by `runtime_values`, with the exporter's parsing of the text values (`putTps` "a b c"
as the 10, 60 and 600 s windows, `putMessageDistributeTime` "[<=0ms]:n ..." buckets,
`commitLogDirCapacity` "Total : 9.8 GiB, Free : 1.2 GiB.", `remainHowManyDataToFlush`
"1.5 KiB"); a key a broker does not report leaves its series out.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

DEFAULT_EXPIRE_AFTER = 60.0
"""Seconds a series stays after the last round that reported it: the exporter's 60 s."""

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

BROKER = ("cluster", "brokerIP", "broker")
TOPIC = ("cluster", "broker", "topic")
DLQ = ("cluster", "broker", "group")
GROUP = ("cluster", "broker", "topic", "group")
DIFF = ("group", "topic", "countOfOnlineConsumers", "msgModel")
COUNT = ("caddr", "localaddr", "group")
PRODUCER_COUNT = ("cluster", "broker", "group")
CLIENT = ("clientAddr", "clientId", "group", "topic")
RUNTIME = ("cluster", "brokerIP", "brokerHost", "des", "boottime", "broker_version")


@dataclass(frozen=True, slots=True)
class Family:
    """One gauge family: its name, help text and label names."""

    name: str
    help: str
    labels: tuple[str, ...]


def _runtime(suffix: str, help_text: str) -> Family:
    return Family(f"rocketmq_brokeruntime_{suffix}", help_text, RUNTIME)


PMDT_BUCKETS: dict[str, str] = {
    "0ms": "<=0ms",
    "0to10ms": "0~10ms",
    "10to50ms": "10~50ms",
    "50to100ms": "50~100ms",
    "100to200ms": "100~200ms",
    "200to500ms": "200~500ms",
    "500to1s": "500ms~1s",
    "1to2s": "1~2s",
    "2to3s": "2~3s",
    "3to4s": "3~4s",
    "4to5s": "4~5s",
    "5to10s": "5~10s",
    "10stomore": "10s~",
}
"""Family suffix of each put latency bucket -> the bucket's name in putMessageDistributeTime."""

# Runtime families fed by one integer or decimal key of the runtime table.
RUNTIME_KEYS: dict[str, str] = {
    "msg_put_total_today_now": "msgPutTotalTodayNow",
    "msg_gettotal_today_now": "msgGetTotalTodayNow",
    "dispatch_behind_bytes": "dispatchBehindBytes",
    "put_message_size_total": "putMessageSizeTotal",
    "put_message_average_size": "putMessageAverageSize",
    "query_threadpool_queue_capacity": "queryThreadPoolQueueCapacity",
    "remain_transientstore_buffer_numbs": "remainTransientStoreBufferNumbs",
    "earliest_message_timestamp": "earliestMessageTimeStamp",
    "putmessage_entire_time_max": "putMessageEntireTimeMax",
    "start_accept_sendrequest_time": "startAcceptSendRequestTimeStamp",
    "send_threadpool_queue_size": "sendThreadPoolQueueSize",
    "putmessage_times_total": "putMessageTimesTotal",
    "getmessage_entire_time_max": "getMessageEntireTimeMax",
    "pagecache_lock_time_mills": "pageCacheLockTimeMills",
    "commitlog_disk_ratio": "commitLogDiskRatio",
    "consumequeue_disk_ratio": "consumeQueueDiskRatio",
    "dispatch_maxbuffer": "dispatchMaxBuffer",
    "pull_threadpoolqueue_capacity": "pullThreadPoolQueueCapacity",
    "send_threadpoolqueue_capacity": "sendThreadPoolQueueCapacity",
    "pull_threadpoolqueue_size": "pullThreadPoolQueueSize",
    "query_threadpoolqueue_size": "queryThreadPoolQueueSize",
    "pull_threadpoolqueue_headwait_timemills": "pullThreadPoolQueueHeadWaitTimeMills",
    "query_threadpoolqueue_headwait_timemills": "queryThreadPoolQueueHeadWaitTimeMills",
    "send_threadpoolqueue_headwait_timemills": "sendThreadPoolQueueHeadWaitTimeMills",
    "msg_gettotal_yesterdaymorning": "msgGetTotalYesterdayMorning",
    "msg_puttotal_yesterdaymorning": "msgPutTotalYesterdayMorning",
    "msg_gettotal_todaymorning": "msgGetTotalTodayMorning",
    "msg_puttotal_todaymorning": "msgPutTotalTodayMorning",
    "commitlog_maxoffset": "commitLogMaxOffset",
    "commitlog_minoffset": "commitLogMinOffset",
}

TPS_KEYS: dict[str, str] = {
    "getfound_tps": "getFoundTps",
    "gettotal_tps": "getTotalTps",
    "gettransfered_tps": "getTransferedTps",
    "getmiss_tps": "getMissTps",
    "put_tps": "putTps",
}
"""Runtime families of a TPS triple, each written as <prefix>10, <prefix>60, <prefix>600."""

TPS_WINDOWS = ("10", "60", "600")

FAMILIES: tuple[Family, ...] = (
    Family("rocketmq_group_diff", "GroupDiff", DIFF),
    Family("rocketmq_group_retrydiff", "GroupRetryDiff", DIFF),
    Family("rocketmq_group_dlqdiff", "GroupDLQDiff", DIFF),
    Family("rocketmq_group_count", "GroupCount", COUNT),
    Family("rocketmq_producer_offset", "TopicOffset", TOPIC),
    Family("rocketmq_topic_retry_offset", "TopicRetryOffset", TOPIC),
    Family("rocketmq_topic_dlq_offset", "TopicRetryOffset", DLQ),
    Family("rocketmq_producer_tps", "TopicPutNums", TOPIC),
    Family("rocketmq_producer_message_size", "TopicPutMessageSize", TOPIC),
    Family("rocketmq_consumer_tps", "GroupGetNums", GROUP),
    Family("rocketmq_group_consume_tps", "GroupConsumeTPS", GROUP),
    Family("rocketmq_consumer_offset", "GroupBrokerTotalOffset", GROUP),
    Family("rocketmq_group_consume_total_offset", "GroupConsumeTotalOffset", GROUP),
    Family("rocketmq_consumer_message_size", "GroupGetMessageSize", GROUP),
    Family("rocketmq_send_back_nums", "SendBackNums", GROUP),
    Family("rocketmq_group_get_latency_by_storetime", "GroupGetLatencyByStoreTime", GROUP),
    Family("rocketmq_producer_count", "ProducerCount", PRODUCER_COUNT),
    Family("rocketmq_client_consume_fail_msg_count", "consumerClientFailedMsgCounts", CLIENT),
    Family("rocketmq_client_consume_fail_msg_tps", "consumerClientFailedTPS", CLIENT),
    Family("rocketmq_client_consume_ok_msg_tps", "consumerClientOKTPS", CLIENT),
    Family("rocketmq_client_consume_rt", "consumerClientRT", CLIENT),
    Family("rocketmq_client_consumer_pull_rt", "consumerClientPullRT", CLIENT),
    Family("rocketmq_client_consumer_pull_tps", "consumerClientPullTPS", CLIENT),
    Family("rocketmq_broker_tps", "BrokerPutNums", BROKER),
    Family("rocketmq_broker_qps", "BrokerGetNums", BROKER),
    Family("rocketmq_broker_commitlog_diff", "BrokerCommitLogDiff", BROKER),
    *(
        _runtime(f"pmdt_{suffix}", f"PutMessageDistributeTimeMap{suffix}")
        for suffix in PMDT_BUCKETS
    ),
    *(_runtime(suffix, f"brokerRuntime {key}") for suffix, key in RUNTIME_KEYS.items()),
    *(
        _runtime(f"{prefix}{window}", f"brokerRuntime {key} {window} s")
        for prefix, key in TPS_KEYS.items()
        for window in TPS_WINDOWS
    ),
    _runtime("commitlogdir_capacity_free", "brokerRuntimeCommitLogDirCapacityFree"),
    _runtime("commitlogdir_capacity_total", "brokerRuntimeCommitLogDirCapacityTotal"),
    _runtime("remain_howmanydata_toflush", "brokerRuntimeRemainHowManyDataToFlush"),
    _runtime("put_latency_99", "brokerRuntimePutLatency99"),
    _runtime("put_latency_999", "brokerRuntimePutLatency999"),
)

FAMILY_BY_NAME: dict[str, Family] = {family.name: family for family in FAMILIES}

SeriesKey = tuple[str, tuple[str, ...]]
"""A series: its family's name and its label values, in the family's label order."""


@dataclass(slots=True)
class Round:
    """The samples one round of collection gathered, committed to the store together."""

    samples: dict[SeriesKey, float] = field(default_factory=dict)

    def add(self, name: str, labels: Mapping[str, object], value: float) -> None:
        """Set the series of family `name` with `labels` (every label of the family, in any
        order) to `value`; a label the family does not have is a programming error."""
        family = FAMILY_BY_NAME[name]
        if set(labels) != set(family.labels):
            raise ValueError(f"{name} takes labels {family.labels}, not {tuple(labels)}")
        values = tuple(
            "" if labels[label] is None else str(labels[label]) for label in family.labels
        )
        self.samples[(name, values)] = float(value)


class MetricStore:
    """The series collected, each with the time a round last reported it; thread-safe.

    A series the latest round reported stays (however long the next round takes: a round
    slower than the one before must not blank the series out between the two); one the
    latest round did not report goes `expire_after` seconds after the round that last
    reported it.  A round that failed as a whole is committed as an empty round, so its
    series age out.  `clock` is a monotonic clock in seconds (replaceable in tests)."""

    def __init__(
        self,
        expire_after: float = DEFAULT_EXPIRE_AFTER,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.expire_after = expire_after
        self._clock = clock
        self._lock = threading.Lock()
        self._series: dict[SeriesKey, tuple[float, float]] = {}
        self._latest: frozenset[SeriesKey] = frozenset()

    def commit(self, collected: Round) -> None:
        """Take a round's samples: each series it reports gets its new value and time."""
        now = self._clock()
        with self._lock:
            for key, value in collected.samples.items():
                self._series[key] = (value, now)
            self._latest = frozenset(collected.samples)
            self._drop_expired(now)

    def _drop_expired(self, now: float) -> None:
        expired = [
            key
            for key, (_, at) in self._series.items()
            if now - at >= self.expire_after and key not in self._latest
        ]
        for key in expired:
            del self._series[key]

    def snapshot(self) -> dict[SeriesKey, float]:
        """Every series not expired, with its value."""
        with self._lock:
            self._drop_expired(self._clock())
            return {key: value for key, (value, _) in self._series.items()}

    def render(self) -> str:
        """The exposition text of every family (HELP and TYPE, then its series)."""
        return render(self.snapshot())


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def render(series: Mapping[SeriesKey, float]) -> str:
    """Prometheus text format 0.0.4 of `series`, family by family in `FAMILIES` order."""
    by_family: dict[str, list[tuple[tuple[str, ...], float]]] = {}
    for (name, values), value in series.items():
        by_family.setdefault(name, []).append((values, value))
    lines: list[str] = []
    for family in FAMILIES:
        lines.append(f"# HELP {family.name} {family.help}")
        lines.append(f"# TYPE {family.name} gauge")
        for values, value in sorted(by_family.get(family.name, ())):
            labels = ",".join(
                f'{label}="{_escape(text)}"'
                for label, text in zip(family.labels, values, strict=True)
            )
            lines.append(f"{family.name}{{{labels}}} {_number(value)}")
    return "\n".join(lines) + "\n"


# -- the broker runtime table -------------------------------------------------------------

_BYTE_UNITS = "KMGTPE"


def _bytes(number: str, unit: str) -> float:
    """`1.5` `KiB` -> 1536.0: the exporter's reading of a human byte count."""
    power = _BYTE_UNITS.find(unit[:1].upper()) + 1 if unit else 0
    return float(number) * 1024.0**power


def _capacity(text: str) -> tuple[float, float] | None:
    """`Total : 9.8 GiB, Free : 1.2 GiB.` -> (total, free) in bytes; None if unreadable."""
    words = text.split()
    try:
        return _bytes(words[2], words[3].rstrip(",.")), _bytes(words[6], words[7].rstrip(",."))
    except (IndexError, ValueError):
        return None


def _buckets(text: str) -> dict[str, float]:
    """`[<=0ms]:3 [0~10ms]:1 ...` -> {"<=0ms": 3, "0~10ms": 1, ...}."""
    buckets: dict[str, float] = {}
    for word in text.split():
        name, _, count = word.partition(":")
        try:
            buckets[name.strip("[]")] = float(count)
        except ValueError:
            continue
    return buckets


def _float(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def runtime_values(table: Mapping[str, str]) -> dict[str, float]:
    """The `rocketmq_brokeruntime_*` values (family name -> value) of a runtime table."""
    values: dict[str, float] = {}

    def put(suffix: str, value: float | None) -> None:
        if value is not None:
            values[f"rocketmq_brokeruntime_{suffix}"] = value

    for suffix, key in RUNTIME_KEYS.items():
        put(suffix, _float(table.get(key)))
    for prefix, key in TPS_KEYS.items():
        if key in table:
            windows = table[key].split(" ")
            for window, word in zip(TPS_WINDOWS, windows, strict=False):
                put(f"{prefix}{window}", _float(word) if word else 0.0)
    buckets = _buckets(table.get("putMessageDistributeTime", ""))
    for suffix, bucket in PMDT_BUCKETS.items():
        put(f"pmdt_{suffix}", buckets.get(bucket))
    capacity = _capacity(table.get("commitLogDirCapacity", ""))
    if capacity is not None:
        put("commitlogdir_capacity_total", capacity[0])
        put("commitlogdir_capacity_free", capacity[1])
    flush = table.get("remainHowManyDataToFlush", "").split()
    if len(flush) == 2:
        with contextlib.suppress(ValueError):
            put("remain_howmanydata_toflush", _bytes(flush[0], flush[1]))
    put("put_latency_99", _float(table.get("putLatency99", "-1")))
    put("put_latency_999", _float(table.get("putLatency999", "-1")))
    return values


def runtime_labels(cluster: str, addr: str, table: Mapping[str, str]) -> dict[str, str]:
    """The labels of a broker's runtime series: cluster, address, an empty brokerHost (the
    exporter passes ""), the version text, boot time and version number."""
    return {
        "cluster": cluster,
        "brokerIP": addr,
        "brokerHost": "",
        "des": table.get("brokerVersionDesc", ""),
        "boottime": table.get("bootTimestamp", ""),
        "broker_version": table.get("brokerVersion", ""),
    }


def parse_samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    """The series of an exposition text: (name, labels, value) per sample line."""
    found: list[tuple[str, dict[str, str], float]] = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        head, _, value = line.rpartition(" ")
        name, _, rest = head.partition("{")
        labels: dict[str, str] = {}
        for part in _label_parts(rest):
            label, _, quoted = part.partition("=")
            labels[label] = _unescape(quoted[1:-1])
        found.append((name, labels, float(value)))
    return found


def names_and_labels(text: str) -> set[tuple[str, tuple[str, ...]]]:
    """The series of an exposition text as (name, sorted label names): what two exporters
    are compared on, values and label values aside."""
    return {(name, tuple(sorted(labels))) for name, labels, _ in parse_samples(text)}


def _unescape(text: str) -> str:
    out: list[str] = []
    escaped = False
    for char in text:
        if escaped:
            out.append("\n" if char == "n" else char)
            escaped = False
        elif char == "\\":
            escaped = True
        else:
            out.append(char)
    return "".join(out)


def _label_parts(rest: str) -> Iterable[str]:
    """The `name="value"` parts of a series line's label set (after its `{`)."""
    part, quoted, escaped = "", False, False
    for char in rest:
        if escaped:
            part, escaped = part + char, False
        elif char == "\\":
            part, escaped = part + char, True
        elif char == '"':
            part, quoted = part + char, not quoted
        elif char in ",}" and not quoted:
            if part:
                yield part
            part = ""
            if char == "}":
                return
        else:
            part += char
