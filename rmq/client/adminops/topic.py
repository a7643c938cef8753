"""Topic, group, order-conf, store-maintenance and export operations, after mqadmin 4.9.8.

Each operation takes an `AdminClient` and returns a dataclass; nothing here prints, so
`rmq mqadmin` and the friendly commands format the same results.  Where mqadmin walks a
Java hash set or map (the masters of a cluster, the broker names of the cluster info), the
results come in that order (`java_hash_order`), since mqadmin prints in it.

* `update_subscription_group` / `delete_subscription_group`: UPDATE_AND_CREATE_SUBSCRIPTIONGROUP
  and DELETE_SUBSCRIPTIONGROUP to one broker or to every master of a cluster; deleting from a
  cluster also deletes the group's retry and dead-letter topics (as `deleteTopic` does);
  `group_footprint` says beforehand which of those the group has (the broker answers SUCCESS
  for a group it does not know);
* `update_topic_perm`: the topic's queue counts and sysflag from its route, the new perm to a
  master of the route or to every master of a cluster;
* `group_configs`: a group's settings on every broker name of the cluster info;
* `order_conf` / `put_order_conf` / `delete_order_conf`: the ORDER_TOPIC_CONFIG KV entry;
* `store_maintenance`: one of CLEAN_EXPIRED_CONSUMEQUEUE, DELETE_EXPIRED_COMMITLOG and
  CLEAN_UNUSED_TOPIC to one broker, to every broker (slaves too) of a cluster or of every
  cluster;
* `allocate_queues`: AllocateMessageQueueAveragely over the topic's readable queues;
* `user_topics` / `user_groups`: a broker's topic and group tables without system entries.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum

from rmq.client import api
from rmq.client.admin import (
    ORDER_TOPIC_CONFIG_NAMESPACE,
    AdminClient,
    AdminError,
    TopicDeletion,
)
from rmq.client.adminops.cluster import (
    cluster_addrs,
    delete_kv_config,
    master_addrs,
    put_kv_config,
)
from rmq.client.adminops.consumer import offset_groups
from rmq.client.errors import RouteNotFound
from rmq.common import naming
from rmq.common.javahash import java_hash_order
from rmq.common.naming import CID_RMQ_SYS_PREFIX, DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX
from rmq.common.perm import is_readable
from rmq.remoting.bodies import (
    MASTER_ID,
    ClusterInfo,
    MessageQueue,
    SubscriptionGroupConfig,
    SubscriptionGroupWrapper,
    TopicConfig,
    TopicConfigSerializeWrapper,
)
from rmq.remoting.bodies.consumerinfo import in_hash_map_order
from rmq.remoting.codes import RequestCode
from rmq.remoting.command import create_request
from rmq.remoting.headers import DeleteSubscriptionGroupRequestHeader

EXPORT_TIMEOUT = 10.0
"""Seconds mqadmin's export commands give the topic and group table requests."""

SYSTEM_GROUPS = naming.SYSTEM_GROUPS - {naming.SCHEDULE_CONSUMER_GROUP}
"""The groups mqadmin leaves out of a broker's user groups (besides `CID_RMQ_SYS_*`): the
client's system groups but the schedule consumer's."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a request to several brokers did: where it succeeded, in the order it was sent,
    and why it failed elsewhere."""

    done: list[str]
    failures: dict[str, Exception] = field(default_factory=dict)


async def _each(addrs: Sequence[str], call: Callable[[str], Awaitable[object]]) -> Outcome:
    """`call(addr)` for every address at once; successes keep the order of `addrs`."""
    results = await asyncio.gather(*(call(addr) for addr in addrs), return_exceptions=True)
    failures: dict[str, Exception] = {}
    for addr, result in zip(addrs, results, strict=True):
        if isinstance(result, BaseException) and not isinstance(result, Exception):
            raise result
        if isinstance(result, Exception):
            failures[addr] = result
    return Outcome([addr for addr in addrs if addr not in failures], failures)


async def _targets(admin: AdminClient, broker_addr: str | None, cluster: str | None) -> list[str]:
    if broker_addr is not None:
        return [broker_addr]
    assert cluster is not None
    masters = master_addrs(await admin.cluster_info(), cluster)
    if not masters:
        raise AdminError(f"cluster {cluster!r} has no master broker")
    return masters


# -- groups ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GroupUpdate:
    """What `update_subscription_group` did: the config sent, where it took and where not."""

    config: SubscriptionGroupConfig
    outcome: Outcome


async def update_subscription_group(
    admin: AdminClient,
    config: SubscriptionGroupConfig,
    *,
    broker_addr: str | None = None,
    cluster: str | None = None,
) -> GroupUpdate:
    """Create or update the group on the broker at `broker_addr`, or on every master of
    `cluster` (one of the two)."""
    body = config.encode()
    remoting = admin.remoting

    async def update(addr: str) -> object:
        request = create_request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body)
        return await api.request_broker(remoting, addr, request, admin.timeout)

    outcome = await _each(await _targets(admin, broker_addr, cluster), update)
    return GroupUpdate(config, outcome)


@dataclass(frozen=True, slots=True)
class GroupDeletion:
    """What `delete_subscription_group` did: the brokers the group went from (in the order
    asked; `failure` is why the next one refused) and, for a cluster, the deletions of its
    retry and dead-letter topics (`topic_failure` is why one failed)."""

    group: str
    broker_addrs: list[str]
    failure: Exception | None = None
    topic_deletions: list[TopicDeletion] = field(default_factory=list)
    topic_failure: Exception | None = None


async def delete_subscription_group(
    admin: AdminClient,
    group: str,
    *,
    remove_offset: bool = False,
    broker_addr: str | None = None,
    cluster: str | None = None,
) -> GroupDeletion:
    """Delete the group from the broker at `broker_addr`, or from every master of `cluster`
    one after the other and then its `%RETRY%` and `%DLQ%` topics from the cluster."""
    remoting = admin.remoting
    header = DeleteSubscriptionGroupRequestHeader(group_name=group, remove_offset=remove_offset)
    done: list[str] = []
    for addr in await _targets(admin, broker_addr, cluster):
        request = create_request(RequestCode.DELETE_SUBSCRIPTIONGROUP, header)
        try:
            await api.request_broker(remoting, addr, request, admin.timeout)
        except Exception as exc:
            return GroupDeletion(group, done, exc)
        done.append(addr)
    if cluster is None:
        return GroupDeletion(group, done)
    deletions: list[TopicDeletion] = []
    try:
        for prefix in (RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX):
            deletions.append(await admin.delete_topic(prefix + group, cluster))
    except Exception as exc:
        return GroupDeletion(group, done, None, deletions, exc)
    return GroupDeletion(group, done, None, deletions)


@dataclass(frozen=True, slots=True)
class GroupFootprint:
    """Where a group is (`group_footprint`): the brokers whose group table holds it (or,
    when its offsets count, whose offset table has it), and which of its retry and
    dead-letter topics the name server has a route for."""

    broker_addrs: list[str]
    topics: list[str]


async def group_footprint(
    admin: AdminClient,
    group: str,
    *,
    offsets: bool = False,
    broker_addr: str | None = None,
    cluster: str | None = None,
) -> GroupFootprint:
    """What `delete_subscription_group` with the same brokers would find to delete."""
    holding = []
    for addr in await _targets(admin, broker_addr, cluster):
        table = (await all_subscription_groups(admin, addr)).subscription_group_table
        if group in table or (offsets and group in await offset_groups(admin, [addr])):
            holding.append(addr)
    topics = []
    for prefix in (RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX) if cluster else ():
        try:
            await admin.topic_route(prefix + group)
        except RouteNotFound:
            continue
        topics.append(prefix + group)
    return GroupFootprint(holding, topics)


async def all_subscription_groups(
    admin: AdminClient, addr: str, timeout: float | None = None
) -> SubscriptionGroupWrapper:
    """GET_ALL_SUBSCRIPTIONGROUP_CONFIG: the broker's group table."""
    request = create_request(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
    response = await api.request_broker(
        admin.remoting, addr, request, timeout if timeout is not None else admin.timeout
    )
    return SubscriptionGroupWrapper.decode(api.body_of(response, addr, "the group table"))


@dataclass(frozen=True, slots=True)
class GroupConfigAt:
    """A group's settings on one broker name, with the cluster of that broker name."""

    cluster: str | None
    broker_name: str
    config: SubscriptionGroupConfig


async def group_configs(admin: AdminClient, group: str) -> list[GroupConfigAt]:
    """The group's settings on every broker name of the cluster info that has it (asking the
    master, else a slave), in the order of mqadmin's broker table."""
    info = await admin.cluster_info()
    clusters = java_hash_order(info.cluster_addr_table)
    found: list[GroupConfigAt] = []
    for name in java_hash_order(info.broker_addr_table):
        addr = info.broker_addr_table[name].select_broker_addr()
        if addr is None:
            continue
        config = (await all_subscription_groups(admin, addr)).subscription_group_table.get(group)
        if config is None:
            continue
        cluster = next((c for c in clusters if name in info.cluster_addr_table[c]), None)
        found.append(GroupConfigAt(cluster, name, config))
    return found


# -- topics ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PermUpdate:
    """What `update_topic_perm` did: the config sent (queue counts and sysflag from the
    route), the perm it replaced, the brokers it went to; `unchanged` when the broker asked
    already had that perm (nothing sent)."""

    config: TopicConfig
    old_perm: int
    broker_addrs: list[str]
    unchanged: bool = False


NOT_A_MASTER = "updateTopicPerm error broker not exit or broker is not master!."


async def update_topic_perm(
    admin: AdminClient,
    topic: str,
    perm: int,
    *,
    broker_addr: str | None = None,
    cluster: str | None = None,
) -> PermUpdate:
    """Give the topic `perm` on the master at `broker_addr` (which must be a master of the
    route: AdminError `NOT_A_MASTER` otherwise) or on every master of `cluster`; the other
    settings are those of the route's first queue data, as mqadmin takes them."""
    route = await admin.topic_route(topic)
    if not route.queue_datas:
        raise AdminError(f"topic {topic!r} has no queue data in its route")
    first = route.queue_datas[0]
    config = TopicConfig(
        topic_name=topic,
        read_queue_nums=first.read_queue_nums,
        write_queue_nums=first.write_queue_nums,
        perm=perm,
        topic_sys_flag=first.topic_sys_flag,
    )
    remoting = admin.remoting
    if broker_addr is not None:
        name = next(
            (
                data.broker_name
                for data in route.broker_datas
                if data.broker_addrs.get(MASTER_ID) == broker_addr
            ),
            None,
        )
        if name is None:
            raise AdminError(NOT_A_MASTER)
        old = next((q.perm for q in route.queue_datas if q.broker_name == name), 0)
        if old == perm:
            return PermUpdate(config, old, [], unchanged=True)
        await api.update_and_create_topic(remoting, broker_addr, config, admin.timeout)
        return PermUpdate(config, old, [broker_addr])
    addrs = await _targets(admin, None, cluster)
    for addr in addrs:
        await api.update_and_create_topic(remoting, addr, config, admin.timeout)
    return PermUpdate(config, first.perm, addrs)


async def all_topic_configs(
    admin: AdminClient, addr: str, timeout: float
) -> TopicConfigSerializeWrapper:
    """GET_ALL_TOPIC_CONFIG: the broker's topic table."""
    request = create_request(RequestCode.GET_ALL_TOPIC_CONFIG)
    response = await api.request_broker(admin.remoting, addr, request, timeout)
    return TopicConfigSerializeWrapper.decode(api.body_of(response, addr, "the topic table"))


async def user_topics(
    admin: AdminClient, addr: str, *, special_topics: bool = False
) -> TopicConfigSerializeWrapper:
    """The broker's topic table without its system topics and, unless `special_topics`,
    without retry and dead-letter topics (mqadmin's getUserTopicConfig)."""
    wrapper, system = await asyncio.gather(
        all_topic_configs(admin, addr, EXPORT_TIMEOUT),
        api.get_system_topic_list_from_broker(admin.remoting, addr, EXPORT_TIMEOUT),
    )
    skip = set(system)
    special = (RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX)
    wrapper.topic_config_table = {
        name: config
        for name, config in wrapper.topic_config_table.items()
        if name not in skip and (special_topics or not name.startswith(special))
    }
    return wrapper


async def user_groups(admin: AdminClient, addr: str) -> SubscriptionGroupWrapper:
    """The broker's group table without the system groups (mqadmin's
    getUserSubscriptionGroup)."""
    wrapper = await all_subscription_groups(admin, addr, EXPORT_TIMEOUT)
    wrapper.subscription_group_table = {
        name: config
        for name, config in wrapper.subscription_group_table.items()
        if not name.startswith(CID_RMQ_SYS_PREFIX) and name not in SYSTEM_GROUPS
    }
    return wrapper


# -- order conf -----------------------------------------------------------------------------


async def order_conf(admin: AdminClient, topic: str) -> str:
    """The topic's order conf; AdminError when the name server has none."""
    remoting = admin.remoting
    value = await admin._ask_namesrv(
        lambda addr: api.get_kv_config(
            remoting, addr, ORDER_TOPIC_CONFIG_NAMESPACE, topic, admin.timeout
        )
    )
    if value is None:
        raise AdminError(f"no order conf for topic {topic!r}")
    return value


def cluster_order_conf(info: ClusterInfo, cluster: str, write_queue_nums: int) -> str:
    """`brokerName:queueNums` of every broker name of `cluster` in the order of mqadmin's
    hash set of them, ';'-joined (what `updateTopic -c ... -o true` writes)."""
    names = java_hash_order(info.cluster_addr_table.get(cluster, []))
    return ";".join(f"{name}:{write_queue_nums}" for name in names)


async def put_order_conf(admin: AdminClient, topic: str, conf: str) -> None:
    """Write the topic's order conf to every name server."""
    await put_kv_config(admin, ORDER_TOPIC_CONFIG_NAMESPACE, topic, conf)


async def delete_order_conf(admin: AdminClient, topic: str) -> None:
    """Delete the topic's order conf from every name server."""
    await delete_kv_config(admin, ORDER_TOPIC_CONFIG_NAMESPACE, topic)


def raise_failures(action: str, outcome: Outcome) -> None:
    """AdminError naming every failure of `outcome`, if any."""
    if outcome.failures:
        detail = "; ".join(f"{addr}: {exc}" for addr, exc in outcome.failures.items())
        raise AdminError(f"failed to {action}: {detail}", outcome.failures)


# -- store maintenance ----------------------------------------------------------------------


class Maintenance(Enum):
    """The three store maintenance requests."""

    CLEAN_EXPIRED_CONSUMEQUEUE = "clean expired consume queues"
    DELETE_EXPIRED_COMMITLOG = "delete expired commitlog files"
    CLEAN_UNUSED_TOPIC = "clean unused topics"


_MAINTENANCE_CALLS = {
    Maintenance.CLEAN_EXPIRED_CONSUMEQUEUE: api.clean_expired_consume_queue,
    Maintenance.DELETE_EXPIRED_COMMITLOG: api.delete_expired_commitlog,
    Maintenance.CLEAN_UNUSED_TOPIC: api.clean_unused_topic,
}


async def store_maintenance(
    admin: AdminClient,
    what: Maintenance,
    *,
    broker_addr: str | None = None,
    cluster: str | None = None,
) -> list[str]:
    """Send `what` to the broker at `broker_addr`, else to every broker (slaves too) of
    `cluster`, else of every cluster; returns the brokers asked (none for an unknown
    cluster); any refusal raises AdminError."""
    if broker_addr is not None:
        addrs = [broker_addr]
    else:
        info = await admin.cluster_info()
        clusters = [cluster] if cluster else list(info.cluster_addr_table)
        addrs = [addr for name in clusters for addr in cluster_addrs(info, name) or []]
    call = _MAINTENANCE_CALLS[what]
    remoting = admin.remoting
    outcome = await _each(addrs, lambda addr: call(remoting, addr, admin.timeout))
    raise_failures(what.value, outcome)
    return outcome.done


# -- allocation -----------------------------------------------------------------------------


def allocate_averagely(
    queues: Sequence[MessageQueue], clients: Sequence[str], client: str
) -> list[MessageQueue]:
    """AllocateMessageQueueAveragely: `client`'s share of `queues` among `clients` (a
    contiguous run, the first `len(queues) % len(clients)` clients taking one more); none
    for a client not in the list."""
    if client not in clients or not queues:
        return []
    index, count, total = clients.index(client), len(clients), len(queues)
    mod = total % count
    if total <= count:
        size = 1
    elif mod > 0 and index < mod:
        size = total // count + 1
    else:
        size = total // count
    start = index * size if mod > 0 and index < mod else index * size + mod
    return [queues[(start + i) % total] for i in range(min(size, total - start))]


async def allocate_queues(
    admin: AdminClient, topic: str, clients: Sequence[str]
) -> dict[str, list[MessageQueue]]:
    """Each client's share of the topic's readable queues as mqadmin allocateMQ computes it
    (the queues in the order of Java's hash set of them), the clients in the order of the
    hash map mqadmin writes them from."""
    route = await admin.topic_route(topic)
    queues = [
        MessageQueue(topic, data.broker_name, queue_id)
        for data in route.queue_datas
        if is_readable(data.perm)
        for queue_id in range(data.read_queue_nums)
    ]
    ordered = list(in_hash_map_order(dict.fromkeys(queues)))
    if not ordered:
        raise AdminError(f"topic {topic!r} has no readable queue")
    shares = {client: allocate_averagely(ordered, clients, client) for client in clients}
    return {client: shares[client] for client in java_hash_order(shares)}
