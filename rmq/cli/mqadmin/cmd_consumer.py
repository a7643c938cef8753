"""mqadmin commands of the consumer family: group progress, connections, status, producers,
offset clones and resets (registered with rmq.cli.mqadmin.registry.subcommand).

Each command calls one operation of rmq.client.adminops.consumer and prints what mqadmin
4.9.8's command prints, format string for format string; a failure raises MqadminFailure
with the message of mqadmin's SubCommandException.  Java hash-table orders are reproduced
where mqadmin iterates a HashMap or HashSet it decoded (group names, topics, queues).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from rmq.cli.mqadmin.consumertext import (
    concurrent_hash_map_order,
    date_time,
    front,
    java_hash_set,
    process_queue_warnings,
    running_info_text,
    same_subscriptions,
)
from rmq.cli.mqadmin.javafmt import jformat, jprintf, parse_bool, parse_int
from rmq.cli.mqadmin.registry import Invocation, Opt, failing, subcommand
from rmq.common.naming import MONITOR_CONSUMER_GROUP, RMQ_SYS_OFFSET_MOVED_EVENT

if TYPE_CHECKING:
    from rmq.client.admin import AdminClient
    from rmq.client.adminops import consumer as ops
    from rmq.client.consumer import MessageExt
    from rmq.remoting.bodies import ConsumerConnection, ConsumeStats, MessageQueue
    from rmq.remoting.bodies.consumerinfo import ConsumerRunningInfo

T = TypeVar("T")


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
    from rmq.client.adminops import consumer as ops

    broker = inv.value("b") or ""
    with failing("BrokerConsumeStatsSubCommad"):
        is_order = parse_bool(inv.value("o"))
        timeout_ms = parse_int(inv.value("t"), 64) if inv.has("t") else 50000
        level = parse_int(inv.value("l"), 64) if inv.has("l") else 0
        async with inv.admin() as admin:
            stats_list = await ops.broker_consume_stats(admin, broker, is_order, timeout_ms / 1000)
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
    from rmq.client.adminops import consumer as ops
    from rmq.remoting.codes import version_desc

    async with inv.admin() as admin:
        with failing("ProducerConnectionSubCommand"):
            connection = await ops.producer_connection(
                admin, inv.value("g") or "", inv.value("t") or ""
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
    from rmq.client.adminops import consumer as ops
    from rmq.remoting.codes import version_desc

    async with inv.admin() as admin:
        with failing("ConsumerConnectionSubCommand"):
            cc = await ops.consumer_connection(admin, inv.value("g") or "", inv.value("b"))
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
    for topic in concurrent_hash_map_order(list(cc.subscription_table)):
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
    from rmq.client.adminops import consumer as ops

    async with inv.admin() as admin:
        with failing("ProducerSubCommand"):
            table = await ops.producer_table(admin, inv.value("b") or "")
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
    from rmq.client.adminops import consumer as ops

    show_ip = parse_bool(inv.value("s"))
    group = inv.value("g")
    if group is None:
        await _all_groups_progress(inv)
        return
    async with inv.admin() as admin:
        with failing("ConsumerProgressSubCommand"):
            stats = await ops.consume_stats(admin, group, everywhere=True)
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
    from rmq.client.adminops import consumer as ops
    from rmq.client.errors import ClientError
    from rmq.remoting.errors import RemotingError

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
    from rmq.client.adminops import consumer as ops

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
        with failing("ConsumerProgressSubCommand"):
            topics = await ops.all_topic_names(admin)
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
    from rmq.client.errors import ClientError
    from rmq.remoting.errors import RemotingError

    try:
        return await work
    except (ClientError, RemotingError):
        return None


def _group_row(
    group: str, stats: ConsumeStats | None, cc: ConsumerConnection | None
) -> tuple[str, int, str, str, str, int, int]:
    """GroupConsumeInfo's columns: group, members, min version (OFFLINE), type, model, TPS,
    summed lag."""
    from rmq.remoting.bodies.client import ConsumeType
    from rmq.remoting.codes import version_desc

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
    from rmq.client.adminops import consumer as ops
    from rmq.client.errors import ClientError
    from rmq.remoting.codes import version_desc
    from rmq.remoting.errors import RemotingError

    name = "ConsumerStatusSubCommand"
    group = inv.value("g") or ""
    jstack = inv.has("s")
    async with inv.admin() as admin:
        with failing(name):
            cc = await ops.consumer_connection(admin, group, inv.value("b"))
        client_id = inv.value("i")
        if client_id is not None:
            with failing(name):
                info = await ops.consumer_running_info(admin, group, client_id, jstack)
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


# -- startMonitoring (38) ------------------------------------------------------------------

MONITOR = "[MONITOR] "
NOTIFY = MONITOR + " [NOTIFY] "
ROUND_LINE = "========================================="
FIRST_ROUND_DELAY = 20.0
ROUND_INTERVAL = 60.0
"""MonitorService's schedule: the first round 20 s after the start, then one a minute."""


@subcommand(38, "startMonitoring", "Start Monitoring")
async def start_monitoring(inv: Invocation) -> None:
    """MonitorService: a push consumer of `__MONITOR_CONSUMER` on the offset-moved events and
    a round over every group each minute.  mqadmin writes its reports to the client log;
    rmq mqadmin prints the same lines on stdout.  It runs until interrupted."""
    import asyncio

    from rmq.client.consumer import ConsumeStatus, PushConsumer

    async def offset_moved(messages: list[MessageExt]) -> ConsumeStatus:
        for line in delete_event_lines(messages[:1]):
            _report(inv, line)
        return ConsumeStatus.CONSUME_SUCCESS

    async with inv.admin() as admin:
        consumer = PushConsumer(
            MONITOR_CONSUMER_GROUP, ";".join(admin.namesrv_addrs), consume_concurrency=1
        )
        consumer.subscribe(RMQ_SYS_OFFSET_MOVED_EVENT, "*")
        consumer.register_listener(offset_moved)
        await consumer.start()
        try:
            await asyncio.sleep(FIRST_ROUND_DELAY)
            while True:
                started = time.monotonic()
                await _monitor_round(inv, admin)
                await asyncio.sleep(max(0.0, ROUND_INTERVAL - (time.monotonic() - started)))
        finally:
            await consumer.shutdown()


async def _monitor_round(inv: Invocation, admin: AdminClient) -> None:
    from rmq.client.adminops import consumer as ops
    from rmq.client.errors import ClientError
    from rmq.remoting.errors import RemotingError

    _report(inv, MONITOR + ROUND_LINE + "beginRound")
    try:
        reports = await ops.monitor_round(admin)
    except (ClientError, RemotingError) as exc:
        reports = []
        sys.stderr.write(f"doMonitorWork Exception: {exc}\n")
    now = int(time.time() * 1000)
    for report in reports:
        for undone in report.undone:
            _report(inv, MONITOR + "reportUndoneMsgs: " + undone_text(undone))
        for line in running_info_notices(report.running_infos, now):
            _report(inv, line)
    _report(inv, MONITOR + ROUND_LINE + "endRound")


def _report(inv: Invocation, line: str) -> None:
    inv.out.write(line + "\n")
    inv.out.flush()


def undone_text(undone: ops.UndoneMsgs) -> str:
    """`UndoneMsgs.toString()`."""
    return jformat(
        "UndoneMsgs [consumerGroup=%s, topic=%s, undoneMsgsTotal=%d, undoneMsgsSingleMQ=%d, "
        "undoneMsgsDelayTimeMills=%d]",
        undone.consumer_group,
        undone.topic,
        undone.total,
        undone.single_mq_max,
        undone.delay_ms,
    )


def running_info_notices(infos: dict[str, ConsumerRunningInfo], now: int) -> list[str]:
    """DefaultMonitorListener.reportConsumerRunningInfo: a notice when the members'
    subscriptions differ, and one per member with stuck queues."""
    if not infos:
        return []
    group = next(iter(infos.values())).properties.get("consumerGroup")
    notices = []
    if not same_subscriptions(infos, now):
        notices.append(
            jformat(
                NOTIFY + "reportConsumerRunningInfo: ConsumerGroup: %s, Subscription different",
                group,
            )
        )
    for client_id, info in infos.items():
        warnings = process_queue_warnings(client_id, info, now)
        if warnings:
            notices.append(
                jformat(
                    NOTIFY + "reportConsumerRunningInfo: ConsumerGroup: %s, ClientId: %s, %s",
                    group,
                    client_id,
                    warnings.rstrip("\n"),
                )
            )
    return notices


def delete_event_lines(messages: list[MessageExt]) -> list[str]:
    """reportDeleteMsgsEvent of an OFFSET_MOVED_EVENT message (its body is the
    OffsetMovedEvent's JSON); nothing for a body that does not decode."""
    from rmq.remoting.bodies import MessageQueue

    lines = []
    for message in messages:
        try:
            event = json.loads(message.body)
            mq = event["messageQueue"]
            queue = MessageQueue(mq["topic"], mq["brokerName"], int(mq["queueId"])).java_text()
            moved = jformat(
                "OffsetMovedEvent [consumerGroup=%s, messageQueue=%s, offsetRequest=%d, "
                "offsetNew=%d]",
                event["consumerGroup"],
                queue,
                int(event["offsetRequest"]),
                int(event["offsetNew"]),
            )
        except (ValueError, KeyError, TypeError):
            continue
        lines.append(
            MONITOR
            + "reportDeleteMsgsEvent: "
            + jformat(
                "DeleteMsgsEvent [offsetMovedEvent=%s, eventTimestamp=%d]",
                moved,
                message.store_timestamp,
            )
        )
    return lines
