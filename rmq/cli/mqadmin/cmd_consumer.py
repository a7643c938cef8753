"""mqadmin commands of the consumer family: group progress, connections, status, producers,
offset clones and resets (registered with rmq.cli.mqadmin.registry.subcommand).

Each command calls one operation of rmq.client.adminops.consumer and prints what mqadmin
4.9.8's command prints, format string for format string; a failure raises MqadminFailure
with the message of mqadmin's SubCommandException.  Java hash-table orders are reproduced
where mqadmin iterates a HashMap or HashSet it decoded (group names, topics, queues).
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import TypeVar

from rmq.cli.mqadmin.javafmt import jformat, jprintf
from rmq.cli.mqadmin.registry import Invocation, MqadminFailure, Opt, subcommand
from rmq.client.admin import AdminClient
from rmq.client.adminops import consumer as ops
from rmq.client.errors import ClientError
from rmq.common.javahash import java_hash, java_hash_order_by
from rmq.remoting.bodies import ConsumerConnection, ConsumeStats, MessageQueue
from rmq.remoting.bodies.client import ConsumeType
from rmq.remoting.bodies.consumerinfo import (
    PROP_CONSUME_TYPE,
    PROP_CONSUMER_START_TIMESTAMP,
    ConsumerRunningInfo,
    ProcessQueueInfo,
    in_hash_map_order,
)
from rmq.remoting.errors import RemotingError

T = TypeVar("T")

PROP_CONSUME_ORDERLY = "PROP_CONSUMEORDERLY"
REBALANCE_SETTLE_MS = 2 * 60 * 1000
"""analyzeSubscription compares subscriptions only of a consumer started this long ago."""
BLOCKED_MS = 60 * 1000
"""analyzeProcessQueue: a queue with cached messages and no consumption for longer is blocked."""


def _releases() -> list[tuple[int, int, int]]:
    """The releases of `MQVersion.Version` from 3.1.8 on: 3.3 to 3.9 have no x.y.0."""
    early = [
        (3, minor, patch) for minor in (1, 2) for patch in range(10) if (minor, patch) >= (1, 8)
    ]
    late_three = [(3, minor, patch) for minor in range(3, 10) for patch in range(1, 10)]
    return (
        early
        + late_three
        + [(major, minor, patch) for major in (4, 5) for minor in range(10) for patch in range(10)]
    )


@functools.cache
def _version_names() -> tuple[str, ...]:
    from rmq.server.broker.clientcallprocessor import V3_1_8_SNAPSHOT, old_version_desc

    names = [old_version_desc(ordinal) for ordinal in range(V3_1_8_SNAPSHOT)]
    for major, minor, patch in _releases():
        names += [f"V{major}_{minor}_{patch}_SNAPSHOT", f"V{major}_{minor}_{patch}"]
    return (*names, "HIGHER_VERSION")


def version_desc(version: int) -> str:
    """`MQVersion.getVersionDesc`: the `Version` enum name of an ordinal (V4_9_8 for 409);
    past the last one, the last one (HIGHER_VERSION)."""
    names = _version_names()
    return names[min(version, len(names) - 1)]


def front(text: str, width: int) -> str:
    """`UtilAll.frontStringAtLeast`: at most `width` characters of `text`."""
    return text[:width]


def date_time(millis: int) -> str:
    """`UtilAll.formatDate(new Date(millis), "yyyy-MM-dd HH:mm:ss")`, local time."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(millis / 1000))


def java_hash_set(names: list[str]) -> list[str]:
    """A HashSet/HashMap of strings, filled in this order, as Java iterates it."""
    return java_hash_order_by(names, java_hash)


async def _failing(name: str, work: Awaitable[T]) -> T:
    """`work`'s result; a client error fails the command as `<name> command failed`."""
    try:
        return await work
    except (ClientError, RemotingError) as exc:
        raise MqadminFailure(f"{name} command failed: {exc}") from exc


def _stats_rows(stats: ConsumeStats) -> list[tuple[MessageQueue, int, int, int]]:
    """(queue, broker offset, consumer offset, last timestamp) sorted by queue."""
    return [
        (mq, row.broker_offset, row.consumer_offset, row.last_timestamp)
        for mq, row in sorted(stats.offset_table.items())
    ]


# -- brokerConsumeStats (19) ---------------------------------------------------------------


@subcommand(
    19,
    "brokerConsumeStats",
    "Fetch broker consume stats data",
    Opt("b", "brokerAddr", True, True, "Broker address"),
    Opt("t", "timeoutMillis", True, False, "request timeout Millis"),
    Opt("l", "level", True, False, "threshold of print diff"),
    Opt("o", "order", True, False, "order topic"),
)
async def broker_consume_stats(inv: Invocation) -> None:
    name = "BrokerConsumeStatsSubCommad"
    broker = inv.value("b") or ""
    is_order = (inv.value("o") or "").lower() == "true"
    try:
        timeout_ms = int(inv.value("t") or 50000)
        level = int(inv.value("l") or 0)
    except ValueError as exc:
        raise MqadminFailure(f"{name} command failed: {exc}") from exc
    async with inv.admin() as admin:
        stats_list = await _failing(
            name, ops.broker_consume_stats(admin, broker, is_order, timeout_ms / 1000)
        )
    row = "%-64s  %-64s  %-32s  %-4s  %-20s  %-20s  %-20s  %s%n"
    jprintf(
        inv.out,
        row,
        "#Topic",
        "#Group",
        "#Broker Name",
        "#QID",
        "#Broker Offset",
        "#Consumer Offset",
        "#Diff",
        "#LastTime",
    )
    row = "%-64s  %-64s  %-32s  %-4d  %-20d  %-20d  %-20d  %s%n"
    for by_group in stats_list.consume_stats_list:
        for group, stats_of_group in by_group.items():
            for stats in stats_of_group:
                for mq, broker_offset, consumer_offset, last in _stats_rows(stats):
                    diff = broker_offset - consumer_offset
                    if diff < level or last <= 0:
                        continue
                    jprintf(
                        inv.out,
                        row,
                        front(mq.topic, 64),
                        group,
                        front(mq.broker_name, 32),
                        mq.queue_id,
                        broker_offset,
                        consumer_offset,
                        diff,
                        date_time(last),
                    )
    jprintf(inv.out, "%nDiff Total: %d%n", stats_list.total_diff)


# -- producerConnection (20), consumerConnection (21), producer (25) -------------------------


@subcommand(
    20,
    "producerConnection",
    "Query producer's socket connection and client version",
    Opt("g", "producerGroup", True, True, "producer group name"),
    Opt("t", "topic", True, True, "topic name"),
)
async def producer_connection(inv: Invocation) -> None:
    async with inv.admin() as admin:
        connection = await _failing(
            "ProducerConnectionSubCommand",
            ops.producer_connection(admin, inv.value("g") or "", inv.value("t") or ""),
        )
    for index, conn in enumerate(connection.connection_set, start=1):
        jprintf(
            inv.out,
            "%04d  %-32s %-22s %-8s %s%n",
            index,
            conn.client_id,
            conn.client_addr,
            conn.language.name,
            version_desc(conn.version),
        )


@subcommand(
    21,
    "consumerConnection",
    "Query consumer's socket connection, client version and subscription",
    Opt("g", "consumerGroup", True, True, "consumer group name"),
    Opt("b", "brokerAddr", True, False, "broker address"),
)
async def consumer_connection(inv: Invocation) -> None:
    async with inv.admin() as admin:
        cc = await _failing(
            "ConsumerConnectionSubCommand",
            ops.consumer_connection(admin, inv.value("g") or "", inv.value("b")),
        )
    row = "%-36s %-22s %-10s %s%n"
    jprintf(inv.out, row, "#ClientId", "#ClientAddr", "#Language", "#Version")
    for conn in cc.connection_set:
        jprintf(
            inv.out,
            row,
            conn.client_id,
            conn.client_addr,
            conn.language.name,
            version_desc(conn.version),
        )
    jprintf(inv.out, "%nBelow is subscription:\n")
    jprintf(inv.out, "%-20s %s%n", "#Topic", "#SubExpression")
    for topic in java_hash_set(list(cc.subscription_table)):
        subscription = cc.subscription_table[topic]
        jprintf(inv.out, "%-20s %s%n", subscription.topic, subscription.sub_string)
    jprintf(inv.out, "\n")
    jprintf(inv.out, "ConsumeType: %s%n", _name(cc.consume_type))
    jprintf(inv.out, "MessageModel: %s%n", _name(cc.message_model))
    jprintf(inv.out, "ConsumeFromWhere: %s%n", _name(cc.consume_from_where))


def _name(value: object) -> str | None:
    """A Java enum's toString (its name), None for null."""
    return None if value is None else str(getattr(value, "name", value))


@subcommand(
    25,
    "producer",
    "Query producer's instances, connection, status, etc.",
    Opt("b", "broker", True, True, "broker address"),
)
async def producer(inv: Invocation) -> None:
    async with inv.admin() as admin:
        table = await _failing(
            "ProducerSubCommand", ops.producer_table(admin, inv.value("b") or "")
        )
    for group in java_hash_set(list(table.data)):
        producers = table.data[group]
        if not producers:
            jprintf(inv.out, "producer group (%s) instances are empty\n", group)
            continue
        for info in producers:
            text = jformat(
                "clientId=%s,remoteIP=%s, language=%s, version=%d, lastUpdateTimestamp=%d",
                info.client_id,
                info.remote_ip,
                info.language.name,
                info.version,
                info.last_update_timestamp,
            )
            jprintf(inv.out, "producer group (%s) instance : %s\n", group, text)


# -- consumerProgress (22) -------------------------------------------------------------------


@subcommand(
    22,
    "consumerProgress",
    "Query consumers's progress, speed",
    Opt("g", "groupName", True, False, "consumer group name"),
    Opt("s", "showClientIP", True, False, "Show Client IP per Queue"),
)
async def consumer_progress(inv: Invocation) -> None:
    show_ip = inv.has("s") and (inv.value("s") or "").lower() == "true"
    group = inv.value("g")
    if group is None:
        await _all_groups_progress(inv)
        return
    async with inv.admin() as admin:
        stats = await _failing("ConsumerProgressSubCommand", ops.consume_stats(admin, group))
        owners = await _queue_owners(admin, group) if show_ip else {}
    if show_ip:
        jprintf(
            inv.out,
            "%-64s  %-32s  %-4s  %-20s  %-20s  %-20s %-20s  %s%n",
            "#Topic",
            "#Broker Name",
            "#QID",
            "#Broker Offset",
            "#Consumer Offset",
            "#Client IP",
            "#Diff",
            "#LastTime",
        )
    else:
        jprintf(
            inv.out,
            "%-64s  %-32s  %-4s  %-20s  %-20s  %-20s  %s%n",
            "#Topic",
            "#Broker Name",
            "#QID",
            "#Broker Offset",
            "#Consumer Offset",
            "#Diff",
            "#LastTime",
        )
    diff_total = 0
    for mq, broker_offset, consumer_offset, last in _stats_rows(stats):
        diff = broker_offset - consumer_offset
        diff_total += diff
        last_time = "N/A" if last == 0 else date_time(last)
        head = (
            front(mq.topic, 64),
            front(mq.broker_name, 32),
            mq.queue_id,
            broker_offset,
            consumer_offset,
        )
        if show_ip:
            jprintf(
                inv.out,
                "%-64s  %-32s  %-4d  %-20d  %-20d  %-20s %-20d  %s%n",
                *head,
                owners.get(mq, "N/A"),
                diff,
                last_time,
            )
        else:
            jprintf(
                inv.out, "%-64s  %-32s  %-4d  %-20d  %-20d  %-20d  %s%n", *head, diff, last_time
            )
    jprintf(inv.out, "%n")
    jprintf(inv.out, "Consume TPS: %.2f%n", stats.consume_tps)
    jprintf(inv.out, "Diff Total: %d%n", diff_total)


async def _queue_owners(admin: AdminClient, group: str) -> dict[MessageQueue, str]:
    """Queue -> the IP part of the client id of the member holding it (empty on failure)."""
    owners: dict[MessageQueue, str] = {}
    try:
        cc = await ops.consumer_connection(admin, group)
        for conn in cc.connection_set:
            info = await ops.consumer_running_info(admin, group, conn.client_id)
            for mq in info.mq_table if info is not None else ():
                owners[mq] = conn.client_id.split("@")[0]
    except (ClientError, RemotingError):
        pass
    return owners


async def _all_groups_progress(inv: Invocation) -> None:
    jprintf(
        inv.out,
        "%-64s  %-6s  %-24s %-5s  %-14s  %-7s  %s%n",
        "#Group",
        "#Count",
        "#Version",
        "#Type",
        "#Model",
        "#TPS",
        "#Diff Total",
    )
    async with inv.admin() as admin:
        topics = await _failing("ConsumerProgressSubCommand", ops.all_topic_names(admin))
        for topic in java_hash_set(topics):
            if not topic.startswith(ops.RETRY_GROUP_TOPIC_PREFIX):
                continue
            group = topic[len(ops.RETRY_GROUP_TOPIC_PREFIX) :]
            stats = await _quietly(ops.consume_stats(admin, group))
            cc = await _quietly(ops.consumer_connection(admin, group))
            jprintf(
                inv.out, "%-64s  %-6d  %-24s %-5s  %-14s  %-7d  %d%n", *_group_row(group, stats, cc)
            )


async def _quietly(work: Awaitable[T]) -> T | None:
    """`work`'s result, None when it fails (mqadmin logs those and prints the row anyway)."""
    try:
        return await work
    except (ClientError, RemotingError):
        return None


def _group_row(
    group: str, stats: ConsumeStats | None, cc: ConsumerConnection | None
) -> tuple[str, int, str, str, str, int, int]:
    """GroupConsumeInfo's columns: group, members, min version (OFFLINE), type, model, TPS,
    summed lag."""
    tps = int(stats.consume_tps) if stats is not None else 0
    diff = (
        sum(row.broker_offset - row.consumer_offset for row in stats.offset_table.values())
        if stats
        else 0
    )
    count = len(cc.connection_set) if cc is not None else 0
    if cc is None or count == 0:
        return front(group, 64), 0, "OFFLINE", "", "", tps, diff
    push = cc.consume_type is ConsumeType.CONSUME_PASSIVELY
    version = version_desc(min(conn.version for conn in cc.connection_set))
    model = _name(cc.message_model) or "null" if push else ""
    return front(group, 64), count, version, "PUSH" if push else "PULL", model, tps, diff


# -- consumerStatus (23) ---------------------------------------------------------------------


@subcommand(
    23,
    "consumerStatus",
    "Query consumer's internal data structure",
    Opt("g", "consumerGroup", True, True, "consumer group name"),
    Opt("i", "clientId", True, False, "The consumer's client id"),
    Opt("b", "brokerAddr", True, False, "broker address"),
    Opt("s", "jstack", False, False, "Run jstack command in the consumer progress"),
)
async def consumer_status(inv: Invocation) -> None:
    name = "ConsumerStatusSubCommand"
    group = inv.value("g") or ""
    jstack = inv.has("s")
    async with inv.admin() as admin:
        cc = await _failing(name, ops.consumer_connection(admin, group, inv.value("b")))
        client_id = inv.value("i")
        if client_id is not None:
            info = await _failing(name, ops.consumer_running_info(admin, group, client_id, jstack))
            if info is not None:
                jprintf(inv.out, "%s", running_info_text(info))
            return
        now = int(time.time() * 1000)
        infos: dict[str, ConsumerRunningInfo] = {}
        jprintf(
            inv.out,
            "%-10s %-40s %-20s %s%n",
            "#Index",
            "#ClientId",
            "#Version",
            "#ConsumerRunningInfoFile",
        )
        for conn in cc.connection_set:
            try:
                info = await ops.consumer_running_info(admin, group, conn.client_id, jstack)
            except (ClientError, RemotingError) as exc:
                sys.stderr.write(f"{exc}\n")
                continue
            if info is None:
                continue
            infos[conn.client_id] = info
            path = f"{now}/{conn.client_id}"
            _write_quietly(Path(path), running_info_text(info))
            jprintf(
                inv.out,
                "%-10d %-40s %-20s %s%n",
                len(infos),
                conn.client_id,
                version_desc(conn.version),
                path,
            )
    if not infos:
        return
    ordered = dict(sorted(infos.items()))
    if same_subscriptions(ordered, now):
        jprintf(inv.out, "%n%nSame subscription in the same group of consumer")
        jprintf(inv.out, "%n%nRebalance %s%n", "OK")
        for client, info in ordered.items():
            jprintf(inv.out, "%s", process_queue_warnings(client, info, now))
    else:
        jprintf(inv.out, "%n%nWARN: Different subscription in the same group of consumer!!!")


def _write_quietly(path: Path, text: str) -> None:
    """`MixAll.string2FileNotSafe`: write the file (and its directory); failures ignored."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError:
        pass


def _is_push(info: ConsumerRunningInfo) -> bool:
    return info.properties.get(PROP_CONSUME_TYPE) == ConsumeType.CONSUME_PASSIVELY.name


def same_subscriptions(infos: Mapping[str, ConsumerRunningInfo], now: int) -> bool:
    """`ConsumerRunningInfo.analyzeSubscription` over the members by client id: a push group
    started over two minutes ago must have one non-empty subscription set."""
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
        queue = _queue_text(mq)
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


def _queue_text(mq: MessageQueue) -> str:
    """`MessageQueue.toString()`."""
    return f"MessageQueue [topic={mq.topic}, brokerName={mq.broker_name}, queueId={mq.queue_id}]"


def running_info_text(info: ConsumerRunningInfo) -> str:
    """`ConsumerRunningInfo.formatString()`: properties, subscriptions, offsets, queue
    details, rates and the stacks when asked for."""
    info = info.sorted()
    parts = ["#Consumer Properties#\n"]
    parts += [
        jformat("%-40s: %s%n", key, info.properties[key])
        for key in java_hash_set(list(info.properties))
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


def human_millis(millis: int) -> str:
    """`UtilAll.timeMillisToHumanString`: yyyyMMddHHmmssSSS in local time."""
    return time.strftime("%Y%m%d%H%M%S", time.localtime(millis // 1000)) + f"{millis % 1000:03d}"


def process_queue_text(pq: ProcessQueueInfo) -> str:
    """`ProcessQueueInfo.toString()`."""
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
        human_millis(pq.last_lock_timestamp),
        pq.droped,
        human_millis(pq.last_pull_timestamp),
        human_millis(pq.last_consume_timestamp),
    )


# -- cloneGroupOffset (24) -------------------------------------------------------------------


@subcommand(
    24,
    "cloneGroupOffset",
    "clone offset from other group.",
    Opt("s", "srcGroup", True, True, "set source consumer group"),
    Opt("d", "destGroup", True, True, "set destination consumer group"),
    Opt("t", "topic", True, True, "set the topic"),
    Opt("o", "offline", True, False, "the group or the topic is offline"),
)
async def clone_group_offset(inv: Invocation) -> None:
    src, dest, topic = inv.value("s") or "", inv.value("d") or "", inv.value("t") or ""
    async with inv.admin() as admin:
        await _failing("CloneGroupOffsetCommand", ops.clone_group_offset(admin, src, dest, topic))
    jprintf(
        inv.out,
        "clone group offset success. srcGroup[%s], destGroup=[%s], topic[%s]",
        src,
        dest,
        topic,
    )


# -- resetOffsetByTime (32), skipAccumulatedMessage (33) -----------------------------------


def parse_timestamp(text: str) -> int:
    """mqadmin's -s: `now` (-1), epoch milliseconds, or `yyyy-MM-dd#HH:mm:ss:SSS` local."""
    if text == "now":
        return -1
    try:
        return int(text)
    except ValueError:
        pass
    try:
        moment = datetime.strptime(text, "%Y-%m-%d#%H:%M:%S:%f")
    except ValueError as exc:
        raise MqadminFailure(f"ResetOffsetByTimeCommand command failed: {exc}") from exc
    return int(moment.timestamp() * 1000)


def _force(inv: Invocation) -> bool:
    """-f: Java's Boolean.valueOf (only "true", any case, is true); absent means true."""
    return not inv.has("f") or (inv.value("f") or "").lower() == "true"


_RESET_ROW = "%-40s  %-40d  %-40d%n"
_ROLLBACK_ROW = "%-20s  %-20d  %-20d  %-20d  %-20d  %-20d%n"


def _print_offsets(inv: Invocation, offsets: dict[MessageQueue, int]) -> None:
    jprintf(inv.out, "%-40s  %-40s  %-40s%n", "#brokerName", "#queueId", "#offset")
    for mq, offset in in_hash_map_order(offsets).items():
        jprintf(inv.out, _RESET_ROW, front(mq.broker_name, 32), mq.queue_id, offset)


def _print_rollback(inv: Invocation, stats: list[ops.RollbackStats]) -> None:
    jprintf(
        inv.out,
        "%-20s  %-20s  %-20s  %-20s  %-20s  %-20s%n",
        "#brokerName",
        "#queueId",
        "#brokerOffset",
        "#consumerOffset",
        "#timestampOffset",
        "#rollbackOffset",
    )
    for row in stats:
        jprintf(
            inv.out,
            _ROLLBACK_ROW,
            front(row.broker_name, 32),
            row.queue_id,
            row.broker_offset,
            row.consumer_offset,
            row.timestamp_offset,
            row.rollback_offset,
        )


async def _reset(
    inv: Invocation,
    name: str,
    timestamp: int,
    online: Callable[[dict[MessageQueue, int]], None],
    offline: Callable[[list[ops.RollbackStats]], None],
) -> None:
    """Reset the group's offsets on the topic through its online members, else directly."""
    group, topic, force = inv.value("g") or "", inv.value("t") or "", _force(inv)
    async with inv.admin() as admin:
        try:
            offsets = await ops.reset_offset_by_time(
                admin, topic, group, timestamp, force=force, for_cpp=inv.has("c")
            )
        except ops.GroupOffline:
            stats = await _failing(
                name, ops.reset_offset_offline(admin, group, topic, timestamp, force=force)
            )
            offline(stats)
            return
        except (ClientError, RemotingError) as exc:
            raise MqadminFailure(f"{name} command failed: {exc}") from exc
    online(offsets)


@subcommand(
    32,
    "resetOffsetByTime",
    "Reset consumer offset by timestamp(without client restart).",
    Opt("g", "group", True, True, "set the consumer group"),
    Opt("t", "topic", True, True, "set the topic"),
    Opt(
        "s",
        "timestamp",
        True,
        True,
        "set the timestamp[now|currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]",
    ),
    Opt("f", "force", True, False, "set the force rollback by timestamp switch[true|false]"),
    Opt("c", "cplus", False, False, "reset c++ client offset"),
)
async def reset_offset_by_time(inv: Invocation) -> None:
    text = inv.value("s") or ""
    timestamp = parse_timestamp(text)
    group, topic, force = inv.value("g"), inv.value("t"), _force(inv)

    def summary(word: str) -> None:
        jprintf(
            inv.out,
            "rollback consumer offset by specified %s[%s], topic[%s], force[%s], "
            "timestamp(string)[%s], timestamp(long)[%s]%n",
            word,
            group,
            topic,
            force,
            text,
            timestamp,
        )

    def online(offsets: dict[MessageQueue, int]) -> None:
        summary("group")
        _print_offsets(inv, offsets)

    def offline(stats: list[ops.RollbackStats]) -> None:
        summary("consumerGroup")
        _print_rollback(inv, stats)

    await _reset(inv, "ResetOffsetByTimeCommand", timestamp, online, offline)


@subcommand(
    33,
    "skipAccumulatedMessage",
    "Skip all messages that are accumulated (not consumed) currently",
    Opt("g", "group", True, True, "set the consumer group"),
    Opt("t", "topic", True, True, "set the topic"),
    Opt("f", "force", True, False, "set the force rollback by timestamp switch[true|false]"),
)
async def skip_accumulated_message(inv: Invocation) -> None:
    await _reset(
        inv,
        "SkipAccumulationSubCommand",
        -1,
        lambda offsets: _print_offsets(inv, offsets),
        lambda stats: _print_rollback(inv, stats),
    )
