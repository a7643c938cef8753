"""What the console's pages show, read from the cluster through the admin API.

Each function answers one page with plain data (dataclasses, lists, dicts); `rmq.console.pages`
renders them.  The list pages ask each broker once, never each topic or group, so they stay
quick with hundreds of topics and thousands of groups (the dashboard's complaint #281):

* topics: GET_ALL_TOPIC_CONFIG of every broker (queue counts, perm, order flag) and the
  system topic list;
* groups: GET_ALL_SUBSCRIPTIONGROUP_CONFIG and GET_BROKER_CONSUME_STATS of every broker
  (every group's lag in one answer), members asked only of groups with progress;
* messages by time range: SEARCH_OFFSET_BY_TIMESTAMP for the range's two ends on each queue,
  then pulls of the page's offsets only: the range is positioned by the broker's lookup,
  never by a capped scan.  Pulls are made as the tools consumer group, which commits nothing;
* dead letters: the same time-range search on a group's `%DLQ%<group>` topic.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from rmq.client import api
from rmq.client.admin import AdminClient, BrokerStatus, QueueStatus, broker_status, describe
from rmq.client.adminops.cluster import broker_config
from rmq.client.adminops.consumer import (
    broker_consume_stats,
    consume_stats,
    consumer_connection,
    consumer_running_info,
    every_broker,
    producer_table,
    pull_one,
)
from rmq.client.adminops.message import (
    MessageTrack,
    message_by_id,
    message_tracks,
    query_messages,
)
from rmq.client.adminops.stats import topic_consumers
from rmq.client.adminops.topic import all_subscription_groups, all_topic_configs
from rmq.client.adminops.trace import query_trace
from rmq.client.errors import MQClientError, RouteNotFound
from rmq.common.message import MessageRecord
from rmq.common.naming import (
    DLQ_GROUP_TOPIC_PREFIX,
    RETRY_GROUP_TOPIC_PREFIX,
    SYSTEM_GROUPS,
    dlq_topic,
    is_sys_consumer_group,
    is_system_topic,
)
from rmq.common.trace import TraceView
from rmq.remoting.bodies import MASTER_ID
from rmq.remoting.bodies.admin import ConsumerConnection
from rmq.remoting.bodies.brokerquery import ProducerInfo
from rmq.remoting.bodies.client import MessageQueue
from rmq.remoting.bodies.consumerinfo import ConsumerRunningInfo
from rmq.remoting.bodies.route import TopicRouteData
from rmq.remoting.codes import ResponseCode

PARALLEL = 16
"""Requests of one page in flight at once."""

PAGE_SIZE = 20
"""Messages on one page of a time-range search."""

PULL_BATCH = 32
"""Messages one pull asks for."""

# -- cluster -----------------------------------------------------------------------------------


GONE = "the name server no longer lists it"


async def brokers(
    admin: AdminClient, seen: dict[str, tuple[str, str, int]] | None = None
) -> list[BrokerStatus]:
    """Every broker with its runtime figures (a broker that is down has its `error`).

    `seen` (address -> cluster, broker name, id) remembers the brokers listed before: one
    the name server no longer lists (it went away and its registration with it) is shown
    down with GONE, until it is listed again."""
    listed = await admin.cluster_list()
    if seen is None:
        return listed
    for status in listed:
        seen[status.addr] = (status.cluster, status.broker_name, status.broker_id)
    present = {status.addr for status in listed}
    gone = [
        broker_status(cluster, name, broker_id, addr, {}, GONE)
        for addr, (cluster, name, broker_id) in seen.items()
        if addr not in present
    ]
    return sorted(listed + gone, key=lambda s: (s.cluster, s.broker_name, s.broker_id))


def replication(statuses: list[BrokerStatus]) -> dict[str, str]:
    """What the cluster page says of each broker's replication, by address.

    A slave is as far behind as its commitlog's end lags its master's (`commitLogMaxOffset`
    of both runtime tables, which Apache's brokers report as rmq's do).  A master says how
    many slaves the name server lists with it, and, where rmq's broker reports them
    (`haConnectionCount`, `haSlaveFallBehindBytes`: only while a slave is connected; Apache
    4.9.8's runtime table has no replication entries), how many are connected and the bytes
    no slave has acknowledged yet.  A DLedger node replicates through its group (its term and
    committed index show that), and a broker alone has nothing to say: both get none."""

    def end(status: BrokerStatus) -> int | None:
        value = status.runtime_info.get("commitLogMaxOffset")
        return int(value) if value is not None and value.lstrip("-").isdigit() else None

    groups: dict[tuple[str, str], list[BrokerStatus]] = {}
    for status in statuses:
        groups.setdefault((status.cluster, status.broker_name), []).append(status)
    said: dict[str, str] = {}
    for members in groups.values():
        if any(m.term is not None for m in members):
            continue
        master = next((m for m in members if m.broker_id == MASTER_ID), None)
        slaves = [m for m in members if m.broker_id != MASTER_ID]
        if master is not None and slaves:
            text = f"{len(slaves)} slave{'s' if len(slaves) > 1 else ''}"
            info = master.runtime_info
            if "haConnectionCount" in info:
                text += f", {info['haConnectionCount']} connected"
                text += f", {info.get('haSlaveFallBehindBytes', '0')} bytes unacknowledged"
            said[master.addr] = text
        for slave in slaves:
            if master is None or master.error is not None:
                said[slave.addr] = "its master is down"
                continue
            ahead, behind = end(master), end(slave)
            if ahead is not None and behind is not None:
                said[slave.addr] = f"{max(0, ahead - behind)} bytes behind its master"
    return said


async def broker_detail(admin: AdminClient, addr: str) -> tuple[dict[str, str], dict[str, str]]:
    """A broker's runtime table and configuration."""
    runtime, config = await asyncio.gather(
        admin.broker_runtime_info(addr), broker_config(admin, addr)
    )
    return runtime, config


async def namesrv_status(admin: AdminClient) -> list[tuple[str, str | None]]:
    """Each name server given, with None when it answers, else why not."""

    async def one(addr: str) -> tuple[str, str | None]:
        try:
            await api.get_broker_cluster_info(admin.remoting, addr, admin.timeout)
        except Exception as exc:  # down, refused, timed out: shown on the page
            return addr, describe(exc)
        return addr, None

    return list(await asyncio.gather(*(one(addr) for addr in admin.namesrv_addrs)))


async def current_namesrv(admin: AdminClient) -> str:
    """The name server the console asks first."""
    return admin.current_namesrv


# -- topics ------------------------------------------------------------------------------------


@dataclass(slots=True)
class TopicRow:
    """One topic of the topic list, summed over the brokers that hold it."""

    name: str
    kind: str
    brokers: list[str] = field(default_factory=list)
    read_queues: int = 0
    write_queues: int = 0
    perm: int = 0


def topic_kind(name: str, order: bool, system: set[str]) -> str:
    """NORMAL, ORDER, RETRY, DLQ or SYSTEM, as the dashboard's type filter names them."""
    if name.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return "RETRY"
    if name.startswith(DLQ_GROUP_TOPIC_PREFIX):
        return "DLQ"
    if is_system_topic(name, system):
        return "SYSTEM"
    return "ORDER" if order else "NORMAL"


async def topics(admin: AdminClient) -> list[TopicRow]:
    """Every topic of every broker, with its kind and queue counts, sorted by name."""
    addrs = await every_broker(admin)
    info = await admin.cluster_info()
    names = {
        addr: name
        for name, data in info.broker_addr_table.items()
        for addr in data.broker_addrs.values()
    }

    async def one(addr: str) -> tuple[str, dict[str, tuple[int, int, int, bool]], list[str]]:
        wrapper, system = await asyncio.gather(
            all_topic_configs(admin, addr, admin.timeout * 3),
            api.get_system_topic_list_from_broker(admin.remoting, addr, admin.timeout),
        )
        table = {
            name: (c.read_queue_nums, c.write_queue_nums, c.perm, c.order)
            for name, c in wrapper.topic_config_table.items()
        }
        return addr, table, list(system)

    answers = await asyncio.gather(*(one(addr) for addr in addrs), return_exceptions=True)
    rows: dict[str, TopicRow] = {}
    for answer in answers:
        if isinstance(answer, BaseException):
            continue
        addr, table, system = answer
        for name, (read, write, perm, order) in table.items():
            row = rows.get(name)
            if row is None:
                row = rows[name] = TopicRow(name, topic_kind(name, order, set(system)), perm=perm)
            row.brokers.append(names.get(addr, addr))
            row.read_queues += read
            row.write_queues += write
    return sorted(rows.values(), key=lambda row: row.name)


@dataclass(slots=True)
class TopicDetail:
    """A topic's route, its queues' offsets and the groups consuming it with their lag."""

    name: str
    route: TopicRouteData
    queues: list[QueueStatus]
    groups: list[tuple[str, int, int]]
    """(group, lag, last consume time in ms) of each group with progress on the topic."""


async def topic_detail(admin: AdminClient, topic: str) -> TopicDetail:
    route, queues, groups = await asyncio.gather(
        admin.topic_route(topic), admin.topic_status(topic), topic_consumers(admin, topic)
    )

    async def lag(group: str) -> tuple[str, int, int]:
        try:
            stats = await consume_stats(admin, group, topic)
        except Exception:  # a group known but without progress on this topic
            return group, 0, 0
        values = stats.offset_table.values()
        diff = sum(max(w.broker_offset - w.consumer_offset, 0) for w in values)
        return group, diff, max((w.last_timestamp for w in values), default=0)

    return TopicDetail(topic, route, queues, list(await asyncio.gather(*map(lag, sorted(groups)))))


# -- consumer groups ---------------------------------------------------------------------------


def _system_group(name: str) -> bool:
    return name in SYSTEM_GROUPS or is_sys_consumer_group(name)


@dataclass(slots=True)
class GroupRow:
    """One group of the group list: its lag summed over brokers and topics (retry topics
    apart), its consume TPS and how many clients it has online (None: not asked, it has no
    progress anywhere)."""

    name: str
    lag: int = 0
    retry_lag: int = 0
    tps: float = 0.0
    topics: set[str] = field(default_factory=set)
    clients: int | None = None
    model: str = ""
    system: bool = False


async def groups(admin: AdminClient) -> list[GroupRow]:
    """Every group any broker knows (its subscription table), sorted by name."""
    addrs = await every_broker(admin)
    tables = await asyncio.gather(
        *(all_subscription_groups(admin, addr, admin.timeout * 3) for addr in addrs),
        return_exceptions=True,
    )
    progress = await asyncio.gather(
        *(broker_consume_stats(admin, addr, False, admin.timeout * 3) for addr in addrs),
        return_exceptions=True,
    )
    rows: dict[str, GroupRow] = {}
    for table in tables:
        if isinstance(table, BaseException):
            continue
        for name in table.subscription_group_table:
            rows.setdefault(name, GroupRow(name, system=_system_group(name)))
    active: set[str] = set()
    for answer in progress:
        if isinstance(answer, BaseException):
            continue
        for entry in answer.consume_stats_list:
            for name, stats_list in entry.items():
                row = rows.setdefault(name, GroupRow(name, system=_system_group(name)))
                for stats in stats_list:
                    row.tps += stats.consume_tps
                    for mq, wrapper in stats.offset_table.items():
                        diff = max(wrapper.broker_offset - wrapper.consumer_offset, 0)
                        if mq.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                            row.retry_lag += diff
                        else:
                            row.lag += diff
                            row.topics.add(mq.topic)
                        active.add(name)
    gate = asyncio.Semaphore(PARALLEL)

    async def members(row: GroupRow) -> None:
        async with gate:
            try:
                connection = await consumer_connection(admin, row.name)
            except Exception:  # offline: no member
                row.clients = 0
                return
            row.clients = len(connection.connection_set)
            if connection.message_model is not None:
                row.model = connection.message_model.name

    await asyncio.gather(*(members(rows[name]) for name in sorted(active)))
    return sorted(rows.values(), key=lambda row: row.name)


@dataclass(slots=True)
class GroupDetail:
    """A group's progress per queue and its online members (None: none online)."""

    name: str
    queues: list[tuple[MessageQueue, int, int, int]]
    """(queue, broker offset, consumer offset, last consume time in ms), sorted."""
    connection: ConsumerConnection | None
    error: str | None = None
    running: dict[str, ConsumerRunningInfo] = field(default_factory=dict)
    """Each online client's running info (GET_CONSUMER_RUNNING_INFO), by client id; a client
    that did not answer is left out."""


async def group_detail(admin: AdminClient, group: str) -> GroupDetail:
    async def progress() -> tuple[list[tuple[MessageQueue, int, int, int]], str | None]:
        try:
            stats = await consume_stats(admin, group, everywhere=True)
        except Exception as exc:  # no progress yet, no route
            return [], describe(exc)
        rows = [
            (mq, w.broker_offset, w.consumer_offset, w.last_timestamp)
            for mq, w in stats.offset_table.items()
        ]
        return sorted(rows, key=lambda r: (r[0].topic, r[0].broker_name, r[0].queue_id)), None

    async def members() -> ConsumerConnection | None:
        try:
            return await consumer_connection(admin, group)
        except Exception:  # offline
            return None

    (queues, error), connection = await asyncio.gather(progress(), members())
    running: dict[str, ConsumerRunningInfo] = {}
    for member in connection.connection_set if connection is not None else []:
        try:
            info = await consumer_running_info(admin, group, member.client_id)
        except Exception:  # the client did not answer in time: its info is left out
            continue
        if info is not None:
            running[member.client_id] = info
    return GroupDetail(group, queues, connection, error, running)


# -- producers ---------------------------------------------------------------------------------


async def producers(admin: AdminClient) -> list[tuple[str, str, ProducerInfo]]:
    """(group, broker name, client) of every producer connected to a master, sorted; a
    broker that does not answer costs its own rows."""
    info = await admin.cluster_info()
    masters = [
        (name, addr)
        for name, data in sorted(info.broker_addr_table.items())
        if (addr := data.broker_addrs.get(MASTER_ID))
    ]
    tables = await asyncio.gather(
        *(producer_table(admin, addr) for _, addr in masters), return_exceptions=True
    )
    rows = [
        (group, name, client)
        for (name, _), table in zip(masters, tables, strict=True)
        if not isinstance(table, BaseException)
        for group, clients in table.data.items()
        for client in clients
    ]
    return sorted(rows, key=lambda row: (row[0], row[1], row[2].client_id))


# -- messages ----------------------------------------------------------------------------------


async def by_key(admin: AdminClient, topic: str, key: str) -> list[MessageRecord]:
    """The messages of `topic` with `key` among their keys (none: an empty list)."""
    try:
        return await query_messages(admin, topic, key)
    except MQClientError as exc:
        if exc.code != ResponseCode.NO_MESSAGE:
            raise
        return []


async def trace(admin: AdminClient, msg_id: str, trace_topic: str) -> list[TraceView]:
    """The trace rows of `msg_id` in `trace_topic` (`rmq message trace`'s), oldest first;
    none (or no such topic: no client traced to it yet): an empty list."""
    try:
        views = await query_trace(admin, msg_id, trace_topic)
    except RouteNotFound:
        return []
    except MQClientError as exc:
        if exc.code != ResponseCode.NO_MESSAGE:
            raise
        return []
    return sorted(views, key=lambda view: view.timestamp)


async def by_id(admin: AdminClient, msg_id: str, topic: str | None) -> MessageRecord | None:
    """The message `msg_id` names (an offset id or a unique key), None when there is none."""
    try:
        return await message_by_id(admin, msg_id, topic or None)
    except Exception:  # not found, or a malformed id
        return None


async def tracks(admin: AdminClient, record: MessageRecord) -> list[MessageTrack]:
    """Each group consuming the message's topic and how far it got with the message (the
    dashboard's TRACK); empty when that cannot be read."""
    try:
        return await message_tracks(admin, record)
    except Exception:  # no route, no broker: the message page shows none
        return []


@dataclass(slots=True)
class RangePage:
    """One page of a time-range search: its messages and the total the range holds."""

    messages: list[MessageRecord]
    total: int
    page: int
    pages: int


async def by_time(
    admin: AdminClient, topic: str, begin: int, end: int, page: int = 1, size: int = PAGE_SIZE
) -> RangePage:
    """Page `page` (from 1, of `size` messages) of the messages of `topic` stored in
    [begin, end] ms: every queue positioned by SEARCH_OFFSET_BY_TIMESTAMP at both ends, the
    page's offsets pulled only."""
    route = await admin.topic_route(topic)
    spans: list[tuple[str, MessageQueue, int, int]] = []

    async def stored(addr: str, mq: MessageQueue, offset: int) -> int | None:
        result = await pull_one(admin, addr, mq, offset)
        records = result.records() if result.status is api.PullStatus.FOUND else []
        return records[0].store_timestamp if records else None

    async def span(addr: str, mq: MessageQueue) -> tuple[str, MessageQueue, int, int]:
        """The queue's offsets stored in [begin, end]: the broker gives the message nearest
        each end, which may lie just outside the range; one pull at each end settles it."""
        low, high, last = await asyncio.gather(
            api.search_offset(admin.remoting, addr, mq, begin, admin.timeout),
            api.search_offset(admin.remoting, addr, mq, end, admin.timeout),
            api.get_max_offset(admin.remoting, addr, mq, admin.timeout),
        )
        high = min(high, last - 1)
        if low <= high:
            first, final = await asyncio.gather(stored(addr, mq, low), stored(addr, mq, high))
            if first is not None and first < begin:
                low += 1
            if final is not None and final > end:
                high -= 1
        return addr, mq, low, high + 1

    work = []
    for data in route.broker_datas:
        addr = data.broker_addrs.get(MASTER_ID) or data.select_broker_addr()
        if addr is None:
            continue
        queues = max(
            (q.read_queue_nums for q in route.queue_datas if q.broker_name == data.broker_name),
            default=0,
        )
        for queue_id in range(queues):
            work.append(span(addr, MessageQueue(topic, data.broker_name, queue_id)))
    spans = [s for s in await asyncio.gather(*work) if s[3] > s[2]]
    spans.sort(key=lambda s: (s[1].broker_name, s[1].queue_id))
    total = sum(high - low for _, _, low, high in spans)
    pages = max(1, -(-total // size))
    page = min(max(page, 1), pages)
    skip = (page - 1) * size
    found: list[MessageRecord] = []
    for addr, mq, low, high in spans:
        if len(found) >= size:
            break
        if skip >= high - low:
            skip -= high - low
            continue
        offset, skip = low + skip, 0
        while offset < high and len(found) < size:
            result = await pull_one(admin, addr, mq, offset, min(PULL_BATCH, high - offset))
            records = result.records() if result.status is api.PullStatus.FOUND else []
            if not records:
                break
            for record in records:
                if record.queue_offset >= high or len(found) >= size:
                    break
                found.append(record)
            offset = records[-1].queue_offset + 1
    found = [r for r in found if begin <= r.store_timestamp <= end]  # a guard: ends settled
    return RangePage(found, total, page, pages)


# -- dead letters ------------------------------------------------------------------------------


async def dlq_groups(admin: AdminClient) -> list[str]:
    """The groups with a dead-letter topic (`%DLQ%<group>`) on some broker, sorted."""
    return sorted(
        row.name[len(DLQ_GROUP_TOPIC_PREFIX) :] for row in await topics(admin) if row.kind == "DLQ"
    )


async def dead_letters(
    admin: AdminClient, group: str, begin: int, end: int, page: int = 1, size: int = PAGE_SIZE
) -> RangePage | None:
    """Page `page` of `group`'s dead letters stored in [begin, end] ms (`by_time` on its
    `%DLQ%` topic); None when the group has no dead-letter topic (nothing ever went there)."""
    try:
        await admin.topic_route(dlq_topic(group))
    except RouteNotFound:
        return None
    return await by_time(admin, dlq_topic(group), begin, end, page, size)
