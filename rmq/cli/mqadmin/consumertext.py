"""Java's text forms of consumer-side values that mqadmin prints: `UtilAll`'s date forms,
`ConsumerRunningInfo.formatString()` and its analyses (subscription consistency, blocked
process queues), `ProcessQueueInfo.toString()`.  (`MQVersion` names are
`rmq.remoting.codes.version_desc`.)

Shared by the consumer-family commands (cmd_consumer.py): consumerConnection, consumerStatus,
consumerProgress and startMonitoring.  Java hash-table iteration orders are reproduced where
the Java side iterates a HashMap/HashSet (`java_hash_set`) or a ConcurrentHashMap/Properties
(`concurrent_hash_map_order`) it decoded.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from rmq.cli.mqadmin.javafmt import jformat
from rmq.common.javahash import java_hash, java_hash_order_by

if TYPE_CHECKING:
    from rmq.remoting.bodies.consumerinfo import ConsumerRunningInfo, ProcessQueueInfo

PROP_CONSUME_ORDERLY = "PROP_CONSUMEORDERLY"
REBALANCE_SETTLE_MS = 2 * 60 * 1000
"""analyzeSubscription compares subscriptions only of a consumer started this long ago."""
BLOCKED_MS = 60 * 1000
"""analyzeProcessQueue: a queue with cached messages and no consumption for longer is blocked."""


def front(text: str, width: int) -> str:
    """`UtilAll.frontStringAtLeast`: at most `width` characters of `text`."""
    return text[:width]


def date_time(millis: int) -> str:
    """`UtilAll.formatDate(new Date(millis), "yyyy-MM-dd HH:mm:ss")`, local time."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(millis / 1000))


def concurrent_hash_map_order(keys: list[str]) -> list[str]:
    """The order Java iterates a `ConcurrentHashMap` of 16 bins (what a Java 9+ `Properties`
    holds too) filled with `keys` in this order: its bins in index order; a new key goes to
    the end of its bin; at 3/4 of the bins the table doubles and each bin splits in two, its
    last run of nodes going to one side in order and the nodes before that run put in front
    in reverse (as `ConcurrentHashMap.transfer` rebuilds them)."""
    size = 16
    bins: list[list[tuple[int, str]]] = [[] for _ in range(size)]
    for count, key in enumerate(dict.fromkeys(keys), start=1):
        h = java_hash(key) & 0xFFFFFFFF
        spread = (h ^ (h >> 16)) & 0x7FFFFFFF
        bins[spread & (size - 1)].append((spread, key))
        if count >= size - (size >> 2):
            bins = [side for chain in bins for side in _split(chain, size)]
            bins = bins[0::2] + bins[1::2]
            size *= 2
    return [key for chain in bins for _, key in chain]


def _split(chain: list[tuple[int, str]], size: int) -> tuple[list[tuple[int, str]], ...]:
    """One bin of a ConcurrentHashMap resize: (the low bin, the high bin)."""
    if not chain:
        return [], []
    last_run = len(chain) - 1
    while last_run > 0 and (chain[last_run - 1][0] & size) == (chain[-1][0] & size):
        last_run -= 1
    low = [node for node in chain[last_run:] if not node[0] & size]
    high = [node for node in chain[last_run:] if node[0] & size]
    for node in chain[:last_run]:
        (high if node[0] & size else low).insert(0, node)
    return low, high


def java_hash_set(names: list[str]) -> list[str]:
    """A HashSet/HashMap of strings, filled in this order, as Java iterates it."""
    return java_hash_order_by(names, java_hash)


def _is_push(info: ConsumerRunningInfo) -> bool:
    from rmq.remoting.bodies.client import ConsumeType
    from rmq.remoting.bodies.consumerinfo import PROP_CONSUME_TYPE

    return info.properties.get(PROP_CONSUME_TYPE) == ConsumeType.CONSUME_PASSIVELY.name


def same_subscriptions(infos: Mapping[str, ConsumerRunningInfo], now: int) -> bool:
    """`ConsumerRunningInfo.analyzeSubscription` over the members by client id: a push group
    started over two minutes ago must have one non-empty subscription set."""
    from rmq.remoting.bodies.consumerinfo import PROP_CONSUMER_START_TIMESTAMP

    first = next(iter(infos.values()))
    started = int(first.properties.get(PROP_CONSUMER_START_TIMESTAMP, "0") or 0)
    if not (_is_push(first) and now - started > REBALANCE_SETTLE_MS):
        return True
    expected = _subscription_keys(first)
    if any(_subscription_keys(info) != expected for info in infos.values()):
        return False
    return bool(expected)


def _subscription_keys(info: ConsumerRunningInfo) -> list[tuple[str, str]]:
    return sorted((sub.topic, sub.sub_string) for sub in info.subscription_set)


def process_queue_warnings(client_id: str, info: ConsumerRunningInfo, now: int) -> str:
    """`ConsumerRunningInfo.analyzeProcessQueue`: queues that cannot lock, cannot unlock or
    look blocked, one line each."""
    if not _is_push(info):
        return ""
    orderly = info.properties.get(PROP_CONSUME_ORDERLY, "").lower() == "true"
    lines = []
    for mq, pq in sorted(info.mq_table.items()):
        queue = mq.java_text()
        if orderly and not pq.locked:
            lines.append(
                jformat(
                    "%s %s can't lock for a while, %dms%n",
                    client_id,
                    queue,
                    now - pq.last_lock_timestamp,
                )
            )
        elif orderly and pq.droped and pq.try_unlock_times > 0:
            lines.append(
                jformat(
                    "%s %s unlock %d times, still failed%n", client_id, queue, pq.try_unlock_times
                )
            )
        elif not orderly:
            idle = now - pq.last_consume_timestamp
            if idle > BLOCKED_MS and pq.cached_msg_count > 0:
                lines.append(
                    jformat(
                        "%s %s can't consume for a while, maybe blocked, %dms%n",
                        client_id,
                        queue,
                        idle,
                    )
                )
    return "".join(lines)


def running_info_text(info: ConsumerRunningInfo) -> str:
    """`ConsumerRunningInfo.formatString()`: properties, subscriptions, offsets, queue
    details, rates and the stacks when asked for."""
    info = info.sorted()
    parts = ["#Consumer Properties#\n"]
    parts += [
        jformat("%-40s: %s%n", key, info.properties[key])
        for key in concurrent_hash_map_order(list(info.properties))
    ]
    parts.append("\n\n#Consumer Subscription#\n")
    for index, sub in enumerate(info.subscription_set, start=1):
        parts.append(
            jformat(
                "%03d Topic: %-40s ClassFilter: %-8s SubExpression: %s%n",
                index,
                sub.topic,
                sub.class_filter_mode,
                sub.sub_string,
            )
        )
    parts.append("\n\n#Consumer Offset#\n")
    parts.append(
        jformat("%-64s  %-32s  %-4s  %-20s%n", "#Topic", "#Broker Name", "#QID", "#Consumer Offset")
    )
    for mq, pq in info.mq_table.items():
        parts.append(
            jformat(
                "%-32s  %-32s  %-4d  %-20d%n",
                mq.topic,
                mq.broker_name,
                mq.queue_id,
                pq.commit_offset,
            )
        )
    parts.append("\n\n#Consumer MQ Detail#\n")
    parts.append(
        jformat(
            "%-64s  %-32s  %-4s  %-20s%n", "#Topic", "#Broker Name", "#QID", "#ProcessQueueInfo"
        )
    )
    for mq, pq in info.mq_table.items():
        parts.append(
            jformat(
                "%-64s  %-32s  %-4d  %s%n",
                mq.topic,
                mq.broker_name,
                mq.queue_id,
                process_queue_text(pq),
            )
        )
    parts.append("\n\n#Consumer RT&TPS#\n")
    parts.append(
        jformat(
            "%-64s  %14s %14s %14s %14s %18s %25s%n",
            "#Topic",
            "#Pull RT",
            "#Pull TPS",
            "#Consume RT",
            "#ConsumeOK TPS",
            "#ConsumeFailed TPS",
            "#ConsumeFailedMsgsInHour",
        )
    )
    for topic, status in info.status_table.items():
        parts.append(
            jformat(
                "%-32s  %14.2f %14.2f %14.2f %14.2f %18.2f %25d%n",
                topic,
                status.pull_rt,
                status.pull_tps,
                status.consume_rt,
                status.consume_ok_tps,
                status.consume_failed_tps,
                status.consume_failed_msgs,
            )
        )
    if info.jstack is not None:
        parts.append("\n\n#Consumer jstack#\n")
        parts.append(info.jstack)
    return "".join(parts)


def process_queue_text(pq: ProcessQueueInfo) -> str:
    """`ProcessQueueInfo.toString()` (its times as `UtilAll.timeMillisToHumanString`, the
    index files' name form)."""
    from rmq.store.layout import index_file_name

    return jformat(
        "ProcessQueueInfo [commitOffset=%d, cachedMsgMinOffset=%d, cachedMsgMaxOffset=%d, "
        "cachedMsgCount=%d, cachedMsgSizeInMiB=%d, transactionMsgMinOffset=%d, "
        "transactionMsgMaxOffset=%d, transactionMsgCount=%d, locked=%s, tryUnlockTimes=%d, "
        "lastLockTimestamp=%s, droped=%s, lastPullTimestamp=%s, lastConsumeTimestamp=%s]",
        pq.commit_offset,
        pq.cached_msg_min_offset,
        pq.cached_msg_max_offset,
        pq.cached_msg_count,
        pq.cached_msg_size_in_mib,
        pq.transaction_msg_min_offset,
        pq.transaction_msg_max_offset,
        pq.transaction_msg_count,
        pq.locked,
        pq.try_unlock_times,
        index_file_name(pq.last_lock_timestamp),
        pq.droped,
        index_file_name(pq.last_pull_timestamp),
        index_file_name(pq.last_consume_timestamp),
    )
