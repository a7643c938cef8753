"""Message admin operations: looking messages up, where each group stands with one, reading
a queue's messages with the tools' pull group, and the consume queue's entries.

Each operation takes the `AdminClient` (its name servers, its connections, its timeout) and
returns what the brokers answered, as mqadmin 4.9.8's `DefaultMQAdminExt` gets it; nothing
here prints.

* `view_message`: VIEW_MESSAGE_BY_ID at the broker and commitlog offset an offset message id
  names, only when that broker is one the name server lists;
* `message_by_id`: the message an id names, offset id or unique key (`rmq.common.msglookup`:
  the rule `rmq inspect by-id` applies offline), looked up in one topic or in every topic;
* `query_messages`: QUERY_MESSAGE by key (or by unique key) to one broker of every broker name
  of the topic's route, then Java's client-side check of each answer (the index matches key
  hashes): the key must be one of the message's KEYS and the topic its topic; a unique-key
  query keeps the earliest stored message with that UNIQ_KEY;
* `message_tracks`: for every group that consumes the message's topic, whether it has
  consumed the message (`DefaultMQAdminExtImpl.messageTrackDetail`): the group's connection
  list says how it consumes, its consume stats whether its offset on the message's queue is
  past the message;
* `consume_directly`: CONSUME_MESSAGE_DIRECTLY through the broker that stored the message;
* `queue_pulls`: a queue read from one offset to another with the tools' pull group, as
  printMsg and consumeMessage read it, every pull's answer kept;
* `subscribe_queues`: a topic's readable queues in the order a Java `HashSet` gives them
  (what mqadmin's pull consumer iterates);
* `consume_queue`: QUERY_CONSUME_QUEUE entries of one queue.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Sequence
from dataclasses import dataclass

from rmq.client import api
from rmq.client.admin import AdminClient
from rmq.client.adminops.consumer import (
    GroupOffline,
    all_topic_names,
    consume_stats,
    consumer_connection,
)
from rmq.client.api import PullStatus
from rmq.client.consumer.pull import PullConsumer, PullResult
from rmq.client.errors import MQBrokerError, MQClientError, RouteNotFound
from rmq.client.messageext import MessageExt
from rmq.common.message import MessageRecord
from rmq.common.msgconst import PROPERTY_KEYS
from rmq.common.msglookup import offset_id_of, unique_key_matches
from rmq.remoting.bodies import (
    MASTER_ID,
    ConsumeType,
    MessageQueue,
    QueryConsumeQueueResponseBody,
)
from rmq.remoting.bodies.consumerinfo import ConsumeMessageDirectlyResult, in_hash_map_order
from rmq.remoting.codes import ResponseCode

TOOLS_CONSUMER_GROUP = "TOOLS_CONSUMER"
"""The group mqadmin's pull consumers pull as (`MixAll.TOOLS_CONSUMER_GROUP`)."""

LONG_MAX = 2**63 - 1

KEY_QUERY_MAX = 64
"""queryMsgByKey asks each broker for at most this many messages."""

UNIQUE_KEY_QUERY_MAX = 32

TOPIC_LOOKUPS_AT_ONCE = 8
"""`message_by_id` asks about this many topics at a time when it looks in every topic."""

NOT_ONLINE_DESC = (
    "org.apache.rocketmq.client.exception.MQClientException: CODE: 206  DESC: Not found the"
    " consumer group connection\nFor more information, please visit the url,"
    " http://rocketmq.apache.org/docs/faq/, org.apache.rocketmq.tools.admin"
    ".DefaultMQAdminExtImpl.examineConsumerConnectionInfo(DefaultMQAdminExtImpl.java:365)"
)
"""What mqadmin shows for a group with no connection (Java's exception, first stack frame)."""


class TrackType(enum.Enum):
    """Where a group stands with one message (`TrackType` of Apache's tools)."""

    CONSUMED = "CONSUMED"
    CONSUMED_BUT_FILTERED = "CONSUMED_BUT_FILTERED"
    PULL = "PULL"
    NOT_CONSUME_YET = "NOT_CONSUME_YET"
    NOT_ONLINE = "NOT_ONLINE"
    UNKNOWN = "UNKNOWN"


@dataclass(frozen=True, slots=True)
class MessageTrack:
    """One group and the message: how far it got, or why that is not known."""

    consumer_group: str
    track_type: TrackType
    exception_desc: str | None = None


def _no_message_by_id() -> MQClientError:
    return MQClientError(ResponseCode.NO_MESSAGE, "query message by id finished, but no message.")


async def broker_hosts(admin: AdminClient) -> set[str]:
    """The address of every broker, master or slave, the name server lists."""
    info = await admin.cluster_info()
    return {addr for data in info.broker_addr_table.values() for addr in data.broker_addrs.values()}


async def view_message(admin: AdminClient, msg_id: str) -> MessageRecord:
    """The message an offset message id names (VIEW_MESSAGE_BY_ID to the broker in the id);
    MQClientError NO_MESSAGE when the id is not an offset id of a broker the name server
    lists (the address in the id is never connected to otherwise)."""
    where = offset_id_of(msg_id, await broker_hosts(admin))
    if where is None:
        raise _no_message_by_id()
    return await api.view_message(
        admin.remoting, where.address, where.physical_offset, admin.timeout
    )


async def message_by_id(admin: AdminClient, msg_id: str, topic: str | None = None) -> MessageRecord:
    """The message `msg_id` names (`rmq.common.msglookup`): VIEW_MESSAGE_BY_ID when it is an
    offset id of a listed broker, else the earliest message with this unique key in `topic`
    or, without one, in every topic the name server knows; MQClientError NO_MESSAGE when
    there is none."""
    where = offset_id_of(msg_id, await broker_hosts(admin))
    if where is not None:
        return await api.view_message(
            admin.remoting, where.address, where.physical_offset, admin.timeout
        )
    topics = [topic] if topic is not None else await all_topic_names(admin)
    gate = asyncio.Semaphore(TOPIC_LOOKUPS_AT_ONCE)

    async def in_topic(name: str) -> list[MessageRecord]:
        async with gate:
            try:
                return await query_messages(
                    admin, name, msg_id, unique=True, max_num=UNIQUE_KEY_QUERY_MAX
                )
            except RouteNotFound:
                if topic is not None:
                    raise
            except MQClientError as exc:
                if exc.code != ResponseCode.NO_MESSAGE:
                    raise
            return []

    found = [
        record for records in await asyncio.gather(*map(in_topic, topics)) for record in records
    ]
    matches = unique_key_matches(found, msg_id)
    if not matches:
        raise _no_message_by_id()
    return matches[0]


async def query_messages(
    admin: AdminClient,
    topic: str,
    key: str,
    *,
    unique: bool = False,
    max_num: int = KEY_QUERY_MAX,
    begin: int = 0,
    end: int = LONG_MAX,
) -> list[MessageRecord]:
    """The messages of `topic` under `key` (see the module docstring), in the order the
    brokers answered; MQClientError NO_MESSAGE when there is none."""
    route = await admin.topic_route(topic)
    addrs = [addr for data in route.broker_datas if (addr := data.select_broker_addr())]
    found: list[MessageRecord] = []
    for addr in addrs:
        try:
            answer = await api.query_message(
                admin.remoting,
                addr,
                topic,
                key,
                max_num,
                begin,
                end,
                admin.timeout * 3,
                unique_key=unique,
            )
        except (MQBrokerError, OSError, TimeoutError):
            continue
        for record in answer.records:
            if not unique:
                keys = record.properties.get(PROPERTY_KEYS)
                if keys is not None and key in keys.split(" ") and record.topic == topic:
                    found.append(record)
            elif record.msg_id == key:
                if not found:
                    found.append(record)
                elif found[0].store_timestamp > record.store_timestamp:
                    found[:] = [record]
    if not found:
        raise MQClientError(
            ResponseCode.NO_MESSAGE, "query message by key finished, but no message."
        )
    return found


async def message_tracks(admin: AdminClient, record: MessageRecord) -> list[MessageTrack]:
    """Every group consuming the message's topic and how far it got with the message."""
    route = await admin.topic_route(record.topic)
    addrs = [addr for data in route.broker_datas[:1] if (addr := data.select_broker_addr())]
    if not addrs:
        return []
    groups = await api.query_topic_consume_by_who(
        admin.remoting, addrs[0], record.topic, admin.timeout
    )
    return [await _track(admin, record, group) for group in groups]


async def _track(admin: AdminClient, record: MessageRecord, group: str) -> MessageTrack:
    try:
        connection = await consumer_connection(admin, group)
    except MQBrokerError as exc:
        return _broker_failure(group, exc)
    except GroupOffline:
        return MessageTrack(group, TrackType.UNKNOWN, NOT_ONLINE_DESC)
    if connection.consume_type is ConsumeType.CONSUME_ACTIVELY:
        return MessageTrack(group, TrackType.PULL)
    if connection.consume_type is not ConsumeType.CONSUME_PASSIVELY:
        return MessageTrack(group, TrackType.UNKNOWN)
    try:
        consumed = await _consumed(admin, record, group)
    except MQBrokerError as exc:
        return _broker_failure(group, exc)
    except GroupOffline as exc:
        desc = f"CODE:{int(ResponseCode.CONSUMER_NOT_ONLINE)} DESC:{exc}"
        return MessageTrack(group, TrackType.NOT_ONLINE, desc)
    if not consumed:
        return MessageTrack(group, TrackType.NOT_CONSUME_YET)
    for topic, subscription in connection.subscription_table.items():
        tags = subscription.tags_set
        if topic == record.topic and tags and "*" not in tags and record.tags not in tags:
            return MessageTrack(group, TrackType.CONSUMED_BUT_FILTERED)
    return MessageTrack(group, TrackType.CONSUMED)


def _broker_failure(group: str, exc: MQBrokerError) -> MessageTrack:
    kind = (
        TrackType.NOT_ONLINE if exc.code == ResponseCode.CONSUMER_NOT_ONLINE else TrackType.UNKNOWN
    )
    return MessageTrack(group, kind, f"CODE:{exc.code} DESC:{exc.remark}")


async def _consumed(admin: AdminClient, record: MessageRecord, group: str) -> bool:
    """Whether the group's offset on the message's queue (on the master that stored it) is
    past the message."""
    stats = await consume_stats(admin, group)
    info = await admin.cluster_info()
    for mq, offsets in stats.offset_table.items():
        if mq.topic != record.topic or mq.queue_id != record.queue_id:
            continue
        data = info.broker_addr_table.get(mq.broker_name)
        if data is None or data.broker_addrs.get(MASTER_ID) != record.store_host:
            continue
        if offsets.consumer_offset > record.queue_offset:
            return True
    return False


async def consume_directly(
    admin: AdminClient, group: str, client_id: str, record: MessageRecord
) -> ConsumeMessageDirectlyResult:
    """CONSUME_MESSAGE_DIRECTLY of the stored message by member `client_id` of `group`."""
    return await api.consume_message_directly(
        admin.remoting,
        record.store_host,
        group,
        client_id,
        record.offset_msg_id,
        admin.timeout * 3,
    )


async def consume_directly_by_group(
    admin: AdminClient, group: str, record: MessageRecord, client_id: str | None = None
) -> tuple[str, ConsumeMessageDirectlyResult]:
    """`consume_directly` by `client_id`, or by the group's first online member (sorted by
    client id); the member asked and its verdict.  GroupOffline when none is online."""
    member = client_id
    if member is None:
        connections = (await consumer_connection(admin, group)).connection_set
        member = sorted(conn.client_id for conn in connections)[0]
    return member, await consume_directly(admin, group, member, record)


async def subscribe_queues(consumer: PullConsumer, topic: str) -> list[MessageQueue]:
    """The topic's readable queues in Java's `HashSet` order."""
    queues = await consumer.fetch_subscribe_message_queues(topic)
    return list(in_hash_map_order(dict.fromkeys(queues)))


@dataclass(frozen=True, slots=True)
class QueuePull:
    """One pull of `queue_pulls`: its answer and the offset the next pull starts at."""

    result: PullResult
    next_offset: int


async def queue_pulls(
    consumer: PullConsumer,
    mq: MessageQueue,
    expression: str,
    begin: int,
    end: int,
    batch: int = 32,
) -> list[QueuePull]:
    """Pull `mq` from offset `begin` until `end` (exclusive), `batch` at a time, stopping
    after a pull that finds nothing new or an illegal offset (printMsg's loop)."""
    pulls: list[QueuePull] = []
    offset = begin
    while offset < end:
        result = await consumer.pull(mq, offset, batch, expression)
        offset = result.next_begin_offset
        pulls.append(QueuePull(result, offset))
        if result.status in (PullStatus.NO_NEW_MSG, PullStatus.OFFSET_ILLEGAL):
            break
    return pulls


def found_messages(pulls: Sequence[QueuePull]) -> list[MessageExt]:
    """Every message the pulls found, in order."""
    return [message for pull in pulls for message in pull.result.messages]


async def consume_queue(
    admin: AdminClient,
    topic: str,
    queue_id: int,
    index: int,
    count: int,
    group: str | None,
    broker_addr: str | None = None,
) -> tuple[str, QueryConsumeQueueResponseBody | None]:
    """QUERY_CONSUME_QUEUE to `broker_addr`, else to the master of the first broker of the
    topic's route: the address asked and its answer (None when it has no entry at `index`)."""
    if broker_addr is None:
        route = await admin.topic_route(topic)
        broker_addr = (
            route.broker_datas[0].broker_addrs.get(MASTER_ID) if route.broker_datas else None
        )
        if broker_addr is None:
            raise MQClientError(-1, f"no master broker in the route of topic {topic}")
    body = await api.query_consume_queue(
        admin.remoting, broker_addr, topic, queue_id, index, count, group, admin.timeout
    )
    return broker_addr, body
