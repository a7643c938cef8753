"""mqadmin commands on a group's offsets: cloneGroupOffset, resetOffsetByTime and
skipAccumulatedMessage (Apache's command/offset package), loaded by `dispatch.MODULES`.

A reset goes through the group's online members (INVOKE_BROKER_TO_RESET_OFFSET); when the
brokers answer that the group is not online, the offsets are committed directly and the
rollback table printed instead, as mqadmin falls back to its old method.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

from rmq.cli.mqadmin.consumertext import front
from rmq.cli.mqadmin.javafmt import jprintf, parse_bool, parse_int
from rmq.cli.mqadmin.registry import Invocation, Opt, failing, subcommand

if TYPE_CHECKING:
    from rmq.client.adminops import consumer as ops
    from rmq.remoting.bodies import MessageQueue

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
    from rmq.client.adminops import consumer as ops

    src, dest, topic = inv.value("s") or "", inv.value("d") or "", inv.value("t") or ""
    with failing("CloneGroupOffsetCommand"):
        async with inv.admin() as admin:
            await ops.clone_group_offset(admin, src, dest, topic)
    jprintf(
        inv.out,
        "clone group offset success. srcGroup[%s], destGroup=[%s], topic[%s]",
        src,
        dest,
        topic,
    )


# -- resetOffsetByTime (32), skipAccumulatedMessage (33) -----------------------------------


def parse_timestamp(text: str) -> int:
    """mqadmin's -s: `now` (-1), epoch milliseconds (Long.parseLong), or
    `yyyy-MM-dd#HH:mm:ss:SSS` in local time; ValueError for anything else."""
    if text == "now":
        return -1
    try:
        return parse_int(text, 64)
    except ValueError:
        moment = datetime.strptime(text, "%Y-%m-%d#%H:%M:%S:%f")
    return int(moment.timestamp() * 1000)


def _force(inv: Invocation) -> bool:
    """-f: Java's Boolean.valueOf; absent means true."""
    return not inv.has("f") or parse_bool(inv.value("f"))


_RESET_ROW = "%-40s  %-40d  %-40d%n"
_ROLLBACK_ROW = "%-20s  %-20d  %-20d  %-20d  %-20d  %-20d%n"


def _print_offsets(inv: Invocation, offsets: dict[MessageQueue, int]) -> None:
    from rmq.remoting.bodies.consumerinfo import in_hash_map_order

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
    from rmq.client.adminops import consumer as ops

    group, topic, force = inv.value("g") or "", inv.value("t") or "", _force(inv)
    with failing(name):
        async with inv.admin() as admin:
            try:
                offsets = await ops.reset_offset_by_time(
                    admin, topic, group, timestamp, force=force, for_cpp=inv.has("c")
                )
            except ops.GroupOffline:
                offline(await ops.reset_offset_offline(admin, group, topic, timestamp, force=force))
                return
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
    with failing("ResetOffsetByTimeCommand"):
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
