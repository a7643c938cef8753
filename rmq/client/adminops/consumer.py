"""Admin operations on consumer and producer groups: their progress, connections, running
info, offset resets and clones, as mqadmin 4.9.8's `DefaultMQAdminExt` performs them.

Each operation takes an `AdminClient`, never prints, and returns the bodies or small
dataclasses the mqadmin commands (rmq/cli/mqadmin/cmd_consumer.py) and the friendly verbs
format.  Where mqadmin asks "the brokers of a group" it means the brokers in the route of the
group's retry topic `%RETRY%<group>`, one address each (the master, else a slave).

Failures: a broker refusing raises `MQBrokerError` (its code and remark); an answer mqadmin
treats as "not online" (no queue in the merged stats, no connection) raises `GroupOffline`,
whose `code` is CONSUMER_NOT_ONLINE as in Java's `MQClientException`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from rmq.client import api
from rmq.client.admin import AdminClient, AdminError
from rmq.client.errors import ClientError, MQBrokerError, RouteNotFound
from rmq.common.javahash import java_hash, java_hash_order_by
from rmq.common.naming import SYSTEM_GROUPS, TOOLS_CONSUMER_GROUP, is_sys_consumer_group
from rmq.common.sysflag import PULL_SUBSCRIPTION
from rmq.remoting.bodies import (
    ConsumerConnection,
    ConsumerOffsetSerializeWrapper,
    ConsumeStats,
    ConsumeStatsList,
    MessageQueue,
    OffsetWrapper,
    ProducerConnection,
    ProducerTableInfo,
    TopicRouteData,
)
from rmq.remoting.bodies.consumerinfo import ConsumerRunningInfo, in_hash_map_order
from rmq.remoting.codes import MQVersion, RequestCode, ResponseCode
from rmq.remoting.command import Buffer, create_request
from rmq.remoting.errors import RemotingError
from rmq.remoting.headers import (
    GetConsumerConnectionListRequestHeader,
    GetConsumeStatsRequestHeader,
    GetProducerConnectionListRequestHeader,
    PullMessageRequestHeader,
)

RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"

GROUP_STATS_TIMEOUT_FACTOR = 3
"""mqadmin gives the consume-stats, clone and running-info requests three times its timeout."""


class GroupOffline(AdminError):
    """What mqadmin reports as CONSUMER_NOT_ONLINE: the group has no stats or no connection."""

    code = ResponseCode.CONSUMER_NOT_ONLINE


def retry_topic(group: str) -> str:
    """`MixAll.getRetryTopic`: the retry topic whose route says which brokers know `group`."""
    return RETRY_GROUP_TOPIC_PREFIX + group


def route_addrs(route: TopicRouteData) -> list[str]:
    """One address per broker of the route, in route order: the master, else a slave."""
    return [addr for data in route.broker_datas if (addr := data.select_broker_addr())]


async def _random_broker(admin: AdminClient, topic: str) -> str | None:
    """The address of a random broker of `topic`'s route (mqadmin's pick for connections)."""
    route = await admin.topic_route(topic)
    if not route.broker_datas:
        return None
    return random.choice(route.broker_datas).select_broker_addr()


async def _answer(
    admin: AdminClient, addr: str, code: RequestCode, header: object, timeout: float | None = None
) -> Buffer:
    """The body of the broker's SUCCESS answer to one request (MQBrokerError otherwise)."""
    request = create_request(code, header)
    response = await api.request_broker(
        admin.remoting, addr, request, admin.timeout if timeout is None else timeout
    )
    return api.body_of(response, addr, f"the answer to {code.name}")


async def _broker_consume_stats(
    admin: AdminClient, addr: str, group: str, topic: str | None, timeout: float
) -> ConsumeStats:
    """GET_CONSUME_STATS to one broker: the group's queues there (only `topic`'s if given)."""
    header = GetConsumeStatsRequestHeader(consumer_group=group, topic=topic)
    return ConsumeStats.decode(
        await _answer(admin, addr, RequestCode.GET_CONSUME_STATS, header, timeout)
    )


# -- reads --------------------------------------------------------------------------------


async def all_topic_names(admin: AdminClient) -> list[str]:
    """Every topic the name server knows (GET_ALL_TOPIC_LIST_FROM_NAMESERVER), as it lists
    them."""
    remoting = admin.remoting
    topics = await admin._ask_namesrv(  # the client's name server failover
        lambda addr: api.get_all_topic_list(remoting, addr, admin.timeout)
    )
    return list(topics.topic_list)


async def consume_stats(
    admin: AdminClient, group: str, topic: str | None = None, *, everywhere: bool = False
) -> ConsumeStats:
    """GET_CONSUME_STATS on every broker of the group, merged: each queue's broker and
    consumer offsets and last consume time, and the summed consume TPS.

    The group's brokers are those of its retry topic's route.  With `everywhere`, a group
    without a retry topic (its offsets were cloned, or committed by a client that never
    subscribed) is asked for on every broker the name server lists, and the route's
    RouteNotFound stands only when no broker has an offset of it (mqadmin fails there)."""
    try:
        addrs = route_addrs(await admin.topic_route(retry_topic(group)))
    except RouteNotFound:
        if not everywhere:
            raise
        merged = await _merged_stats(admin, await every_broker(admin), group, topic)
        if not merged.offset_table:
            raise
        return merged
    merged = await _merged_stats(admin, addrs, group, topic)
    if not merged.offset_table:
        raise GroupOffline(
            "Not found the consumer group consume stats, because return offset table is empty,"
            " maybe the consumer not consume any message"
        )
    return merged


async def _merged_stats(
    admin: AdminClient, addrs: list[str], group: str, topic: str | None
) -> ConsumeStats:
    merged = ConsumeStats()
    for addr in addrs:
        timeout = admin.timeout * GROUP_STATS_TIMEOUT_FACTOR
        stats = await _broker_consume_stats(admin, addr, group, topic, timeout)
        merged.offset_table.update(stats.offset_table)
        merged.consume_tps += stats.consume_tps
    return merged


async def every_broker(admin: AdminClient) -> list[str]:
    """One address per broker name the name server lists (the master, else a slave),
    sorted by broker name."""
    info = await admin.cluster_info()
    return [
        addr
        for _, data in sorted(info.broker_addr_table.items())
        if (addr := data.select_broker_addr())
    ]


async def consumer_connection(
    admin: AdminClient, group: str, broker_addr: str | None = None
) -> ConsumerConnection:
    """GET_CONSUMER_CONNECTION_LIST to `broker_addr`, else to a random broker of the group:
    the members' connections, subscriptions and consume settings."""
    addr = broker_addr or await _random_broker(admin, retry_topic(group))
    connection = ConsumerConnection()
    if addr:
        header = GetConsumerConnectionListRequestHeader(consumer_group=group)
        code = RequestCode.GET_CONSUMER_CONNECTION_LIST
        connection = ConsumerConnection.decode(await _answer(admin, addr, code, header))
    if not connection.connection_set:
        raise GroupOffline("Not found the consumer group connection")
    return connection


async def producer_connection(admin: AdminClient, group: str, topic: str) -> ProducerConnection:
    """GET_PRODUCER_CONNECTION_LIST to a random broker of `topic`: the group's producers."""
    addr = await _random_broker(admin, topic)
    connection = ProducerConnection()
    if addr:
        header = GetProducerConnectionListRequestHeader(producer_group=group)
        code = RequestCode.GET_PRODUCER_CONNECTION_LIST
        connection = ProducerConnection.decode(await _answer(admin, addr, code, header))
    if not connection.connection_set:
        raise AdminError("Not found the producer group connection")
    return connection


async def producer_table(admin: AdminClient, broker_addr: str) -> ProducerTableInfo:
    """GET_ALL_PRODUCER_INFO: every producer group connected to the broker."""
    return await api.get_all_producer_info(admin.remoting, broker_addr, admin.timeout)


async def broker_consume_stats(
    admin: AdminClient, broker_addr: str, is_order: bool, timeout: float
) -> ConsumeStatsList:
    """GET_BROKER_CONSUME_STATS: every group's progress on the broker and its summed lag."""
    return await api.fetch_consume_stats_in_broker(admin.remoting, broker_addr, is_order, timeout)


async def consumer_running_info(
    admin: AdminClient, group: str, client_id: str, jstack: bool = False
) -> ConsumerRunningInfo | None:
    """GET_CONSUMER_RUNNING_INFO through the first broker of the group (None without one)."""
    addrs = route_addrs(await admin.topic_route(retry_topic(group)))
    if not addrs:
        return None
    return await api.get_consumer_running_info(
        admin.remoting,
        addrs[0],
        group,
        client_id,
        admin.timeout * GROUP_STATS_TIMEOUT_FACTOR,
        jstack=jstack,
    )


# -- changes ------------------------------------------------------------------------------


async def clone_group_offset(
    admin: AdminClient, src_group: str, dest_group: str, topic: str
) -> dict[MessageQueue, int]:
    """Commit `src_group`'s consumer offset of every queue it has (0 and above) for
    `dest_group` (UPDATE_CONSUMER_OFFSET to the queue's broker in `topic`'s route); returns
    the offsets written."""
    stats = await consume_stats(admin, src_group)
    route = await admin.topic_route(topic)
    addrs = {data.broker_name: data.select_broker_addr() for data in route.broker_datas}
    written = {}
    for mq, offsets in stats.offset_table.items():
        addr = addrs.get(mq.broker_name)
        if offsets.consumer_offset < 0:
            continue
        if addr is None:
            raise AdminError(f"no broker {mq.broker_name!r} in the route of topic {topic!r}")
        await api.update_consumer_offset(
            admin.remoting, addr, dest_group, mq, offsets.consumer_offset, admin.timeout
        )
        written[mq] = offsets.consumer_offset
    return written


async def reset_offset_by_time(
    admin: AdminClient,
    topic: str,
    group: str,
    timestamp: int,
    *,
    force: bool,
    for_cpp: bool = False,
) -> dict[MessageQueue, int]:
    """INVOKE_BROKER_TO_RESET_OFFSET to every broker of `topic`: the online members move to
    the offsets at `timestamp` (ms; -1: the end); returns the new offsets.  GroupOffline
    when a broker answers CONSUMER_NOT_ONLINE.  `for_cpp` asks the broker for the C++
    client's body (mqadmin's -c)."""
    offsets: dict[MessageQueue, int] = {}
    for addr in route_addrs(await admin.topic_route(topic)):
        try:
            table = await api.invoke_broker_to_reset_offset(
                admin.remoting,
                addr,
                topic,
                group,
                timestamp,
                admin.timeout,
                is_force=force,
                for_cpp=for_cpp,
            )
        except MQBrokerError as exc:
            if exc.code == ResponseCode.CONSUMER_NOT_ONLINE:
                raise GroupOffline(exc.remark or "the consumer group is not online") from exc
            raise
        offsets.update(table)
    return offsets


@dataclass(frozen=True, slots=True)
class RollbackStats:
    """One queue of an offline reset: its offsets before, the offset at the timestamp and
    the offset committed (the old consumer offset when the reset was not applied)."""

    broker_name: str
    queue_id: int
    broker_offset: int
    consumer_offset: int
    timestamp_offset: int
    rollback_offset: int


async def reset_offset_offline(
    admin: AdminClient, group: str, topic: str, timestamp: int, *, force: bool
) -> list[RollbackStats]:
    """Reset the offsets of a group with no online member by committing them directly
    (mqadmin's `resetOffsetByTimestampOld`): per broker of `topic`, the queues of `topic`
    the group has stats for (in Java's HashMap order), else every read queue of the broker
    with its min offset as the consumer offset; each moves to the offset at `timestamp`
    (-1: the max offset) when `force` or when that is not past its consumer offset."""
    route = await admin.topic_route(topic)
    read_queues = {data.broker_name: data.read_queue_nums for data in route.queue_datas}
    remoting = admin.remoting
    stats: list[RollbackStats] = []
    for data in route.broker_datas:
        addr = data.select_broker_addr()
        if addr is None:
            continue
        table = await _broker_consume_stats(admin, addr, group, None, admin.timeout)
        queues = [
            (mq, offsets.broker_offset, offsets.consumer_offset)
            for mq, offsets in in_hash_map_order(table.offset_table).items()
            if mq.topic == topic
        ]
        if not queues:
            status = await api.get_topic_stats_info(remoting, addr, topic, admin.timeout)
            for queue_id in range(read_queues.get(data.broker_name, 0)):
                mq = MessageQueue(topic=topic, broker_name=data.broker_name, queue_id=queue_id)
                offsets = status.offset_table[mq]
                queues.append((mq, offsets.max_offset, offsets.min_offset))
        for mq, broker_offset, consumer_offset in queues:
            if timestamp == -1:
                target = await api.get_max_offset(remoting, addr, mq, admin.timeout)
            else:
                target = await api.search_offset(remoting, addr, mq, timestamp, admin.timeout)
            applied = force or target <= consumer_offset
            if applied:
                await api.update_consumer_offset(remoting, addr, group, mq, target, admin.timeout)
            stats.append(
                RollbackStats(
                    mq.broker_name,
                    mq.queue_id,
                    broker_offset,
                    consumer_offset,
                    target,
                    target if applied else consumer_offset,
                )
            )
    return stats


# -- monitoring -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class UndoneMsgs:
    """One topic of a group in a monitor round: its summed lag, the largest lag of one
    queue, and the largest delay (ms) between a queue's newest message and its last
    consumption."""

    consumer_group: str
    topic: str
    total: int
    single_mq_max: int
    delay_ms: int


@dataclass(frozen=True, slots=True)
class GroupReport:
    """What a monitor round found about one group (MonitorService's round): its topics'
    lag (none when the group has no stats or no connection) and its members' running info
    by client id, sorted."""

    group: str
    undone: list[UndoneMsgs]
    running_infos: dict[str, ConsumerRunningInfo]


async def monitor_round(admin: AdminClient, *, offline: bool = False) -> list[GroupReport]:
    """One round of mqadmin's MonitorService: every group with a retry topic, in the order
    Java iterates the name server's topic set.  With `offline` (`rmq monitor`), also the
    groups that only have committed offsets (`offset_groups`: cloned ones have no retry
    topic), after those, by name; and the lag of groups with no member online, which
    MonitorService leaves out."""
    topics = await all_topic_names(admin)
    groups = [
        topic[len(RETRY_GROUP_TOPIC_PREFIX) :]
        for topic in java_hash_order_by(topics, java_hash)
        if topic.startswith(RETRY_GROUP_TOPIC_PREFIX)
    ]
    if offline:
        try:
            extra = await offset_groups(admin, await every_broker(admin))
        except (ClientError, RemotingError):
            extra = set()
        groups += sorted(extra - set(groups))
    reports = []
    for group in groups:
        undone = await _undone_msgs(admin, group, offline=offline)
        reports.append(GroupReport(group, undone, await _running_infos(admin, group)))
    return reports


async def offset_groups(admin: AdminClient, addrs: list[str]) -> set[str]:
    """Every group with a committed offset on one of the brokers (GET_ALL_CONSUMER_OFFSET:
    the broker's `topic@group` table), system groups left out."""
    groups = set()
    for addr in addrs:
        body = await _answer(admin, addr, RequestCode.GET_ALL_CONSUMER_OFFSET, None)
        for key in ConsumerOffsetSerializeWrapper.decode(body).offset_table:
            group = key.rpartition("@")[2]
            if group not in SYSTEM_GROUPS and not is_sys_consumer_group(group):
                groups.add(group)
    return groups


async def _undone_msgs(admin: AdminClient, group: str, *, offline: bool) -> list[UndoneMsgs]:
    try:
        stats = await consume_stats(admin, group, everywhere=offline)
        if not offline:
            await consumer_connection(admin, group)
    except (ClientError, RemotingError):
        return []
    by_topic: dict[str, dict[MessageQueue, OffsetWrapper]] = {}
    for mq, offsets in in_hash_map_order(stats.offset_table).items():
        by_topic.setdefault(mq.topic, {})[mq] = offsets
    undone = []
    for topic in java_hash_order_by(by_topic, java_hash):
        queues = by_topic[topic]
        diffs = [offsets.broker_offset - offsets.consumer_offset for offsets in queues.values()]
        delays = [await _delay(admin, mq, offsets.last_timestamp) for mq, offsets in queues.items()]
        undone.append(
            UndoneMsgs(
                group,
                topic,
                sum(diff for diff in diffs if diff > 0),
                max([0, *diffs]),
                max([0, *delays]),
            )
        )
    return undone


async def pull_one(
    admin: AdminClient, addr: str, mq: MessageQueue, offset: int, count: int = 1
) -> api.PullResult:
    """PULL_MESSAGE of one message (up to `count`) of `mq` at `offset` from the broker at
    `addr`, as the tools consumer group (no offset committed): how the admin tools read a
    queue's store times, and the console a page of messages."""
    header = PullMessageRequestHeader(
        consumer_group=TOOLS_CONSUMER_GROUP,
        topic=mq.topic,
        queue_id=mq.queue_id,
        queue_offset=offset,
        max_msg_nums=count,
        sys_flag=PULL_SUBSCRIPTION,
        commit_offset=0,
        suspend_timeout_millis=0,
        subscription="*",
        sub_version=0,
        expression_type="TAG",
        bname=mq.broker_name,
    )
    return await api.pull_message(admin.remoting, addr, header, admin.timeout)


async def _delay(admin: AdminClient, mq: MessageQueue, last_timestamp: int) -> int:
    """Store time of the queue's newest message minus the group's last consume time (0 when
    the group never consumed or the message cannot be read)."""
    if last_timestamp <= 0:
        return 0
    try:
        route = await admin.topic_route(mq.topic)
        addr = next(
            (
                data.select_broker_addr()
                for data in route.broker_datas
                if data.broker_name == mq.broker_name
            ),
            None,
        )
        if addr is None:
            return 0
        max_offset = await api.get_max_offset(admin.remoting, addr, mq, admin.timeout)
        if max_offset <= 0:
            return 0
        result = await pull_one(admin, addr, mq, max_offset - 1)
    except (ClientError, RemotingError):
        return 0
    if result.status is not api.PullStatus.FOUND or result.body is None:
        return 0
    records = result.records()
    return records[0].store_timestamp - last_timestamp if records else 0


async def _running_infos(admin: AdminClient, group: str) -> dict[str, ConsumerRunningInfo]:
    try:
        connection = await consumer_connection(admin, group)
    except (ClientError, RemotingError):
        return {}
    infos = {}
    for conn in connection.connection_set:
        if conn.version < MQVersion.V3_1_8_SNAPSHOT:  # cannot report running info
            continue
        try:
            info = await consumer_running_info(admin, group, conn.client_id)
        except (ClientError, RemotingError):
            continue
        if info is not None:
            infos[conn.client_id] = info
    return dict(sorted(infos.items()))
