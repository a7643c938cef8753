"""Cluster, name server and broker-config operations of the mqadmin commands (none prints).

What they send, after DefaultMQAdminExt / MQClientAPIImpl of 4.9.8:

* `namesrv_configs` / `update_namesrv_config`: GET_NAMESRV_CONFIG / UPDATE_NAMESRV_CONFIG to
  each given name server (default: the admin client's), the configs keyed as Java's
  `HashMap(4)` of addresses iterates;
* `put_kv_config` / `delete_kv_config`: PUT_KV_CONFIG / DELETE_KV_CONFIG to every name
  server; a refusal of any raises after all were asked (the last refusal);
* `wipe_write_perm` / `add_write_perm`: WIPE_WRITE_PERM_OF_BROKER / ADD_WRITE_PERM_OF_BROKER
  to every name server, one `PermChange` each (the topic count, or the failure);
* `broker_config` / `update_broker_config`: GET_BROKER_CONFIG / UPDATE_BROKER_CONFIG on one
  broker; the bodies are `key=value` lines written as MixAll.properties2String writes them
  and read as Properties.load reads them.  An update (of a broker or a name server) returns
  the server's remark: rmq's servers list there the keys that do not take effect at once
  ("maxMessageSize takes effect after a restart"), Apache's send none;
* `measure_send_rt`: clusterRT's timed sends to one broker's own topic;
* `masters_and_slaves`, `master_addrs`, `cluster_addrs`: mqadmin's CommandUtil views of a
  cluster, in the order Java iterates them (`None` when the cluster is unknown: mqadmin
  prints its `[error]` line then).

Config maps are returned in Java's hash-map order of their keys (`properties_order`), which
keeps the body's order among keys of one hash bucket; mqadmin's commands print them in the
order of the ConcurrentHashMap behind a JDK 17 `Properties` (rmq.cli.mqadmin.consumertext).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rmq.client.admin import AdminClient, AdminError
from rmq.client.api.consumerqueries import query_topic_consume_by_who
from rmq.client.api.namesrv import get_all_topic_list
from rmq.client.api.request import request_broker, request_namesrv
from rmq.client.errors import ClientError
from rmq.client.message import Message
from rmq.client.producer import Producer
from rmq.common import javaprops
from rmq.common.javahash import java_hash_order
from rmq.remoting.bodies import MASTER_ID, ClusterInfo, TopicRouteData
from rmq.remoting.codes import RequestCode
from rmq.remoting.command import Buffer, create_request
from rmq.remoting.errors import RemotingError
from rmq.remoting.headers import (
    AddWritePermOfBrokerRequestHeader,
    AddWritePermOfBrokerResponseHeader,
    DeleteKVConfigRequestHeader,
    PutKVConfigRequestHeader,
    WipeWritePermOfBrokerRequestHeader,
    WipeWritePermOfBrokerResponseHeader,
)

CLUSTER_ERROR = (
    "Make sure the specified clusterName exists or the name server connected to is correct."
)
"""CommandUtil's message for an unknown cluster."""


def properties_order(properties: Mapping[str, str]) -> dict[str, str]:
    """`properties` in the order Java iterates a Properties filled in this order."""
    return {key: properties[key] for key in java_hash_order(properties)}


def properties_text(properties: Mapping[str, str]) -> str:
    """MixAll.properties2String: `key=value` lines, nothing escaped."""
    return "".join(f"{key}={value}\n" for key, value in properties.items())


def _parse_properties(body: Buffer | None) -> dict[str, str]:
    text = bytes(body or b"").decode("utf-8", errors="replace")
    return properties_order(javaprops.loads(text))


@dataclass(frozen=True)
class ServerConfig:
    """One server's configuration, in the order mqadmin prints it."""

    addr: str
    properties: dict[str, str]


def _namesrvs(admin: AdminClient, addrs: Sequence[str] | None) -> list[str]:
    return list(addrs) if addrs else list(admin.namesrv_addrs)


async def namesrv_configs(
    admin: AdminClient, addrs: Sequence[str] | None = None
) -> list[ServerConfig]:
    """GET_NAMESRV_CONFIG from each name server, one after the other (the first refusal or
    unreachable server raises)."""
    configs: dict[str, ServerConfig] = {}
    for addr in _namesrvs(admin, addrs):
        request = create_request(RequestCode.GET_NAMESRV_CONFIG)
        response = await request_namesrv(admin.remoting, addr, request, admin.timeout)
        configs[addr] = ServerConfig(addr, _parse_properties(response.body))
    return [configs[addr] for addr in java_hash_order(configs, table_size=4)]


async def update_namesrv_config(
    admin: AdminClient, properties: Mapping[str, str], addrs: Sequence[str] | None = None
) -> list[tuple[str, str | None]]:
    """UPDATE_NAMESRV_CONFIG on each name server in turn; the servers updated, each with its
    answer's remark."""
    body = properties_text(properties).encode()
    done = []
    for addr in _namesrvs(admin, addrs):
        request = create_request(RequestCode.UPDATE_NAMESRV_CONFIG, body=body)
        response = await request_namesrv(admin.remoting, addr, request, admin.timeout)
        done.append((addr, response.remark))
    return done


async def _on_every_namesrv(admin: AdminClient, code: RequestCode, header: object) -> None:
    """Send to every name server in turn; the last refusal raises once all were asked."""
    refusal: Exception | None = None
    for addr in admin.namesrv_addrs:
        try:
            await request_namesrv(admin.remoting, addr, create_request(code, header), admin.timeout)
        except Exception as exc:
            if not isinstance(exc, asyncio.CancelledError):
                refusal = exc
    if refusal is not None:
        raise refusal


async def put_kv_config(admin: AdminClient, namespace: str, key: str, value: str) -> None:
    """PUT_KV_CONFIG on every name server."""
    header = PutKVConfigRequestHeader(namespace=namespace, key=key, value=value)
    await _on_every_namesrv(admin, RequestCode.PUT_KV_CONFIG, header)


async def delete_kv_config(admin: AdminClient, namespace: str, key: str) -> None:
    """DELETE_KV_CONFIG on every name server."""
    header = DeleteKVConfigRequestHeader(namespace=namespace, key=key)
    await _on_every_namesrv(admin, RequestCode.DELETE_KV_CONFIG, header)


@dataclass(frozen=True)
class PermChange:
    """One name server's answer to a write-permission change of a broker."""

    namesrv_addr: str
    topic_count: int | None
    error: Exception | None = None


async def _perm_changes(admin: AdminClient, broker_name: str, *, add: bool) -> list[PermChange]:
    changes = []
    for addr in admin.namesrv_addrs:
        if add:
            request = create_request(
                RequestCode.ADD_WRITE_PERM_OF_BROKER,
                AddWritePermOfBrokerRequestHeader(broker_name=broker_name),
            )
        else:
            request = create_request(
                RequestCode.WIPE_WRITE_PERM_OF_BROKER,
                WipeWritePermOfBrokerRequestHeader(broker_name=broker_name),
            )
        try:
            response = await request_namesrv(admin.remoting, addr, request, admin.timeout)
        except Exception as exc:
            changes.append(PermChange(addr, None, exc))
            continue
        if add:
            count = response.read_header(AddWritePermOfBrokerResponseHeader).add_topic_count
        else:
            count = response.read_header(WipeWritePermOfBrokerResponseHeader).wipe_topic_count
        changes.append(PermChange(addr, count))
    return changes


async def wipe_write_perm(admin: AdminClient, broker_name: str) -> list[PermChange]:
    """WIPE_WRITE_PERM_OF_BROKER on every name server: how many topics each changed."""
    return await _perm_changes(admin, broker_name, add=False)


async def add_write_perm(admin: AdminClient, broker_name: str) -> list[PermChange]:
    """ADD_WRITE_PERM_OF_BROKER on every name server: how many topics each changed."""
    return await _perm_changes(admin, broker_name, add=True)


async def broker_config(admin: AdminClient, addr: str) -> dict[str, str]:
    """GET_BROKER_CONFIG: the broker's configuration in the order mqadmin prints it."""
    request = create_request(RequestCode.GET_BROKER_CONFIG)
    response = await request_broker(admin.remoting, addr, request, admin.timeout)
    return _parse_properties(response.body)


async def update_broker_config(
    admin: AdminClient, addr: str, properties: Mapping[str, str]
) -> str | None:
    """UPDATE_BROKER_CONFIG on one broker; its answer's remark."""
    body = properties_text(properties).encode()
    request = create_request(RequestCode.UPDATE_BROKER_CONFIG, body=body)
    response = await request_broker(admin.remoting, addr, request, admin.timeout)
    return response.remark


async def all_topics(admin: AdminClient) -> list[str]:
    """GET_ALL_TOPIC_LIST_FROM_NAMESERVER, in the order Java iterates the topic set."""
    remoting = admin.remoting
    topics = await admin._ask_namesrv(
        lambda addr: get_all_topic_list(remoting, addr, admin.timeout)
    )
    return java_hash_order(topics.topic_list)


def cluster_names(info: ClusterInfo) -> list[str]:
    """The cluster names as Java iterates the client's clusterAddrTable."""
    return java_hash_order(info.cluster_addr_table)


def first_broker_cluster(info: ClusterInfo, route: TopicRouteData) -> str | None:
    """The cluster of the route's first broker (mqadmin's findTopicBelongToWhichCluster)."""
    if not route.broker_datas:
        raise AdminError("the topic's route has no broker")
    first = route.broker_datas[0].broker_name
    for name in cluster_names(info):
        if first in info.cluster_addr_table[name]:
            return name
    return None


async def consumer_groups(admin: AdminClient, route: TopicRouteData, topic: str) -> list[str]:
    """QUERY_TOPIC_CONSUME_BY_WHO to the first broker of the route (as Java iterates the
    answer's group set); no groups when that broker has no address."""
    for broker in route.broker_datas:
        addr = broker.select_broker_addr()
        if addr is None:
            break
        groups = await query_topic_consume_by_who(admin.remoting, addr, topic, admin.timeout)
        return java_hash_order(groups)
    return []


@dataclass(frozen=True)
class SendRt:
    """clusterRT's measure of one broker: sends that succeeded and failed, and the summed
    wall-clock milliseconds of every send but the first."""

    success: int
    failed: int
    elapsed_ms: int


async def measure_send_rt(producer: Producer, topic: str, body: bytes, amount: int) -> SendRt:
    """Send `amount` messages of `body` to `topic` one after the other (a failed send counts
    and the run goes on), timed in whole milliseconds as System.currentTimeMillis."""
    success = failed = elapsed = 0
    for index in range(amount):
        start = time.time_ns() // 1_000_000
        try:
            await producer.send(Message(topic, body))
            success += 1
        except (ClientError, RemotingError):
            failed += 1
        if index:
            elapsed += time.time_ns() // 1_000_000 - start
    return SendRt(success, failed, elapsed)


# -- CommandUtil ----------------------------------------------------------------------------


def _broker_names(info: ClusterInfo, cluster: str) -> list[str] | None:
    names = info.cluster_addr_table.get(cluster)
    return None if names is None else java_hash_order(names)


def _ids(addrs: Mapping[int, str]) -> list[int]:
    return sorted(addrs, key=lambda broker_id: (broker_id ^ (broker_id >> 32)) & 0xFFFFFFFF)


def masters_and_slaves(info: ClusterInfo, cluster: str) -> dict[str, list[str]] | None:
    """CommandUtil.fetchMasterAndSlaveDistinguish: master address -> slave addresses."""
    names = _broker_names(info, cluster)
    if names is None:
        return None
    found: dict[str, list[str]] = {}
    for name in names:
        data = info.broker_addr_table.get(name)
        if data is None:
            continue
        master = data.broker_addrs.get(MASTER_ID)
        slaves = found[str(master)] = []
        slaves += [data.broker_addrs[i] for i in _ids(data.broker_addrs) if i != MASTER_ID]
    return {addr: found[addr] for addr in java_hash_order(found, table_size=4)}


def master_addrs(info: ClusterInfo, cluster: str) -> list[str] | None:
    """CommandUtil.fetchMasterAddrByClusterName: the masters, as a HashSet iterates them."""
    names = _broker_names(info, cluster)
    if names is None:
        return None
    addrs = [
        info.broker_addr_table[name].broker_addrs[MASTER_ID]
        for name in names
        if name in info.broker_addr_table and MASTER_ID in info.broker_addr_table[name].broker_addrs
    ]
    return java_hash_order(addrs)


def cluster_addrs(info: ClusterInfo, cluster: str) -> list[str] | None:
    """CommandUtil.fetchMasterAndSlaveAddrByClusterName: every broker of the cluster."""
    names = _broker_names(info, cluster)
    if names is None:
        return None
    addrs = []
    for name in names:
        data = info.broker_addr_table.get(name)
        if data is not None:
            addrs += [data.broker_addrs[i] for i in _ids(data.broker_addrs)]
    return java_hash_order(addrs)
