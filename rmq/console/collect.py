"""One round of metric collection: the requests rocketmq-exporter sends, turned into series.

`collect_round(admin)` returns a `rmq.console.metrics.Round` with every series the cluster
gives now.  It runs the exporter's six collection tasks side by side, each from the name
server's cluster info and topic list, through the admin API of rmq.client only:

* topic offsets: GET_TOPIC_STATS_INFO per topic, max offsets summed per broker name:
  `rocketmq_producer_offset`, `rocketmq_topic_retry_offset` (`%RETRY%` topics) and
  `rocketmq_topic_dlq_offset` (`%DLQ%` topics, labelled with the group);
* producers: GET_ALL_PRODUCER_INFO to every master: `rocketmq_producer_count` per group;
* consumers: per topic (dead-letter topics aside) its groups (QUERY_TOPIC_CONSUME_BY_WHO),
  each group's connections (GET_CONSUMER_CONNECTION_LIST: `rocketmq_group_count`, the
  message model and, per member, GET_CONSUMER_RUNNING_INFO: the `rocketmq_client_*` rates)
  and consume stats (GET_CONSUME_STATS): the lag `rocketmq_group_diff` / `_retrydiff` for a
  clustering group, `rocketmq_consumer_offset` per broker and
  `rocketmq_group_get_latency_by_storetime`: per queue, now minus the store time of the
  message at the group's offset (PULL_MESSAGE of one message; 0 when caught up), the
  largest per broker;
* topic traffic: VIEW_BROKER_STATS_DATA on each master of a topic's route:
  `rocketmq_producer_tps` / `_message_size` (TOPIC_PUT_NUMS / TOPIC_PUT_SIZE, the minute's
  rate), and per group `rocketmq_consumer_tps` / `_message_size` (GROUP_GET_NUMS /
  GROUP_GET_SIZE) and `rocketmq_send_back_nums` (SNDBCK_PUT_NUMS, the minute's sum);
* broker traffic: BROKER_PUT_NUMS / BROKER_GET_NUMS keyed by cluster on each master:
  `rocketmq_broker_tps` / `rocketmq_broker_qps`;
* broker runtime: GET_BROKER_RUNTIME_INFO of each master: the `rocketmq_brokeruntime_*`
  series, and of each slave: `rocketmq_broker_commitlog_diff` (master's commit log max
  offset minus the slave's).

A failed request costs only the series it would have given (logged at debug level): a
broker that is down, a stats item a broker never counted or a group gone offline never
stops the round.  Labels are the exporter's; `cluster` is the cluster of the broker the
value comes from (the exporter uses the first cluster the name server lists, the same name
on a one-cluster deployment).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import TypeVar

from rmq.client.admin import AdminClient
from rmq.client.adminops.consumer import (
    all_topic_names,
    consume_stats,
    consumer_connection,
    consumer_running_info,
    producer_table,
    pull_one,
)
from rmq.client.adminops.stats import (
    BROKER_GET_NUMS,
    BROKER_PUT_NUMS,
    GROUP_GET_NUMS,
    GROUP_GET_SIZE,
    SNDBCK_PUT_NUMS,
    TOPIC_PUT_NUMS,
    TOPIC_PUT_SIZE,
    broker_stats,
    topic_consumers,
)
from rmq.common.naming import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX
from rmq.console.metrics import Round, runtime_labels, runtime_values
from rmq.remoting.bodies import MASTER_ID, ClusterInfo
from rmq.remoting.bodies.admin import ConsumerConnection, ConsumeStats
from rmq.remoting.bodies.client import MessageModel, MessageQueue

log = logging.getLogger(__name__)

T = TypeVar("T")

PARALLEL_REQUESTS = 8
"""Topics (or brokers) worked on at once in one task of a round."""


async def _quietly(call: Awaitable[T], what: str) -> T | None:
    """`call`'s result, or None (logged) when it fails: one failure costs its series only."""
    try:
        return await call
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # a broker down, an item never counted, a group offline
        log.debug("metrics: %s failed: %s", what, exc)
        return None


async def _each(items: Iterable[T], work: Callable[[T], Awaitable[object]]) -> None:
    """Run `work` on every item, at most PARALLEL_REQUESTS at once."""
    gate = asyncio.Semaphore(PARALLEL_REQUESTS)

    async def one(item: T) -> None:
        async with gate:
            await _quietly(work(item), f"collecting {item!r}")

    await asyncio.gather(*(one(item) for item in items))


def _masters(info: ClusterInfo) -> list[tuple[str, str, str]]:
    """(cluster, broker name, master address) of every broker name with a master."""
    return [
        (data.cluster, name, addr)
        for name, data in sorted(info.broker_addr_table.items())
        if (addr := data.broker_addrs.get(MASTER_ID))
    ]


def _cluster_of(info: ClusterInfo, broker_name: str) -> str:
    data = info.broker_addr_table.get(broker_name)
    return data.cluster if data is not None else ""


async def collect_round(admin: AdminClient) -> Round:
    """Every series the cluster gives now (see the module docstring).  Raises only when the
    name server cannot give the cluster info; anything else costs its own series."""
    info = await admin.cluster_info()
    topics = await _quietly(all_topic_names(admin), "the topic list") or []
    collected = Round()
    await asyncio.gather(
        _topic_offsets(admin, info, topics, collected),
        _producers(admin, info, collected),
        _consumers(admin, info, topics, collected),
        _topic_traffic(admin, topics, collected),
        _broker_traffic(admin, info, collected),
        _broker_runtime(admin, info, collected),
    )
    return collected


async def _topic_offsets(
    admin: AdminClient, info: ClusterInfo, topics: list[str], out: Round
) -> None:
    async def one(topic: str) -> None:
        sums: dict[str, int] = {}
        for queue in await admin.topic_status(topic):
            sums[queue.broker_name] = sums.get(queue.broker_name, 0) + queue.max_offset
        for broker, total in sums.items():
            cluster = _cluster_of(info, broker)
            if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                labels = {"cluster": cluster, "broker": broker, "topic": topic}
                out.add("rocketmq_topic_retry_offset", labels, total)
            elif topic.startswith(DLQ_GROUP_TOPIC_PREFIX):
                group = topic.removeprefix(DLQ_GROUP_TOPIC_PREFIX)
                labels = {"cluster": cluster, "broker": broker, "group": group}
                out.add("rocketmq_topic_dlq_offset", labels, total)
            else:
                labels = {"cluster": cluster, "broker": broker, "topic": topic}
                out.add("rocketmq_producer_offset", labels, total)

    await _each(topics, one)


async def _producers(admin: AdminClient, info: ClusterInfo, out: Round) -> None:
    async def one(master: tuple[str, str, str]) -> None:
        cluster, broker, addr = master
        table = await producer_table(admin, addr)
        for group, clients in table.data.items():
            labels = {"cluster": cluster, "broker": broker, "group": group}
            out.add("rocketmq_producer_count", labels, len(clients))

    await _each(_masters(info), one)


async def _consumers(admin: AdminClient, info: ClusterInfo, topics: list[str], out: Round) -> None:
    clients_done: set[str] = set()

    async def one(topic: str) -> None:
        for group in await topic_consumers(admin, topic):
            connection = await _quietly(consumer_connection(admin, group), f"members of {group}")
            members = connection.connection_set if connection is not None else []
            model = MessageModel.CLUSTERING
            if connection is not None and connection.message_model is not None:
                model = connection.message_model
            out.add(
                "rocketmq_group_count",
                {
                    "caddr": ",".join(sorted(c.client_addr for c in members)),
                    "localaddr": ",".join(sorted(c.client_id for c in members)),
                    "group": group,
                },
                len(members),
            )
            if connection is not None and members and group not in clients_done:
                clients_done.add(group)
                await _client_rates(admin, group, connection, out)
            stats = await _quietly(consume_stats(admin, group, topic), f"stats of {group}")
            if stats is None or not stats.offset_table:
                continue
            await _group_progress(admin, info, topic, group, stats, len(members), model, out)

    await _each([t for t in topics if not t.startswith(DLQ_GROUP_TOPIC_PREFIX)], one)


async def _client_rates(
    admin: AdminClient, group: str, connection: ConsumerConnection, out: Round
) -> None:
    for member in connection.connection_set:
        running = await _quietly(
            consumer_running_info(admin, group, member.client_id), f"running info of {group}"
        )
        if running is None:
            continue
        for topic, status in running.status_table.items():
            labels = {
                "clientAddr": member.client_addr,
                "clientId": member.client_id,
                "group": group,
                "topic": topic,
            }
            out.add("rocketmq_client_consume_fail_msg_count", labels, status.consume_failed_msgs)
            out.add("rocketmq_client_consume_fail_msg_tps", labels, status.consume_failed_tps)
            out.add("rocketmq_client_consume_ok_msg_tps", labels, status.consume_ok_tps)
            out.add("rocketmq_client_consume_rt", labels, status.consume_rt)
            out.add("rocketmq_client_consumer_pull_rt", labels, status.pull_rt)
            out.add("rocketmq_client_consumer_pull_tps", labels, status.pull_tps)


async def _group_progress(
    admin: AdminClient,
    info: ClusterInfo,
    topic: str,
    group: str,
    stats: ConsumeStats,
    online: int,
    model: MessageModel,
    out: Round,
) -> None:
    clustering = model is MessageModel.CLUSTERING
    if clustering:
        diff = sum(w.broker_offset - w.consumer_offset for w in stats.offset_table.values())
        name = (
            "rocketmq_group_retrydiff"
            if topic.startswith(RETRY_GROUP_TOPIC_PREFIX)
            else "rocketmq_group_diff"
        )
        labels = {
            "group": group,
            "topic": topic,
            "countOfOnlineConsumers": online,
            "msgModel": model.value,
        }
        out.add(name, labels, diff)
    offsets: dict[str, int] = {}
    for mq, wrapper in stats.offset_table.items():
        offsets[mq.broker_name] = offsets.get(mq.broker_name, 0) + wrapper.consumer_offset
    for broker, total in offsets.items():
        labels = {"cluster": _cluster_of(info, broker), "broker": broker}
        out.add("rocketmq_consumer_offset", {**labels, "topic": topic, "group": group}, total)
    if not clustering:
        return
    latency: dict[str, int] = {}
    now = int(time.time() * 1000)
    for mq, wrapper in sorted(stats.offset_table.items(), key=lambda item: str(item[0])):
        lag = 0
        if wrapper.broker_offset != wrapper.consumer_offset:
            stored = await _store_time(admin, info, mq, wrapper.consumer_offset)
            lag = now - stored if stored is not None else 0
        latency[mq.broker_name] = max(latency.get(mq.broker_name, 0), lag, 0)
    for broker, lag in latency.items():
        labels = {"cluster": _cluster_of(info, broker), "broker": broker}
        out.add(
            "rocketmq_group_get_latency_by_storetime",
            {**labels, "topic": topic, "group": group},
            lag,
        )


async def _store_time(
    admin: AdminClient, info: ClusterInfo, mq: MessageQueue, offset: int
) -> int | None:
    """Store time of the message at `offset` of `mq` (of the queue's first message when the
    offset is no longer in the queue); None when none can be read."""
    from rmq.client.api import PullStatus

    data = info.broker_addr_table.get(mq.broker_name)
    addr = data.select_broker_addr() if data is not None else None
    if addr is None:
        return None
    result = await _quietly(pull_one(admin, addr, mq, offset), f"a message of {mq}")
    if result is not None and result.status is PullStatus.OFFSET_ILLEGAL:
        result = await _quietly(pull_one(admin, addr, mq, result.min_offset), f"{mq}'s first")
    if result is None or result.status is not PullStatus.FOUND:
        return None
    records = result.records()
    return records[0].store_timestamp if records else None


async def _topic_traffic(admin: AdminClient, topics: list[str], out: Round) -> None:
    async def one(topic: str) -> None:
        route = await admin.topic_route(topic)
        masters = [
            (data.cluster, data.broker_name, addr)
            for data in route.broker_datas
            if (addr := data.broker_addrs.get(MASTER_ID))
        ]
        for cluster, broker, addr in masters:
            labels = {"cluster": cluster, "broker": broker, "topic": topic}
            for item, name in (
                (TOPIC_PUT_NUMS, "rocketmq_producer_tps"),
                (TOPIC_PUT_SIZE, "rocketmq_producer_message_size"),
            ):
                data = await _quietly(broker_stats(admin, addr, item, topic), f"{item} {topic}")
                if data is not None:
                    out.add(name, labels, round(data.stats_minute.tps, 2))
        for group in await topic_consumers(admin, topic):
            key = f"{topic}@{group}"
            for cluster, broker, addr in masters:
                labels = {"cluster": cluster, "broker": broker, "topic": topic, "group": group}
                for item, name in (
                    (GROUP_GET_NUMS, "rocketmq_consumer_tps"),
                    (GROUP_GET_SIZE, "rocketmq_consumer_message_size"),
                    (SNDBCK_PUT_NUMS, "rocketmq_send_back_nums"),
                ):
                    data = await _quietly(broker_stats(admin, addr, item, key), f"{item} {key}")
                    if data is None:
                        continue
                    minute = data.stats_minute
                    value = minute.sum if item == SNDBCK_PUT_NUMS else round(minute.tps, 2)
                    out.add(name, labels, value)

    await _each(
        [t for t in topics if not t.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX))],
        one,
    )


async def _broker_traffic(admin: AdminClient, info: ClusterInfo, out: Round) -> None:
    async def one(master: tuple[str, str, str]) -> None:
        cluster, broker, addr = master
        labels = {"cluster": cluster, "brokerIP": addr, "broker": broker}
        for item, name in (
            (BROKER_PUT_NUMS, "rocketmq_broker_tps"),
            (BROKER_GET_NUMS, "rocketmq_broker_qps"),
        ):
            data = await _quietly(broker_stats(admin, addr, item, cluster), f"{item} {addr}")
            if data is not None:
                out.add(name, labels, round(data.stats_minute.tps, 2))

    await _each(_masters(info), one)


async def _broker_runtime(admin: AdminClient, info: ClusterInfo, out: Round) -> None:
    async def one(name: str) -> None:
        data = info.broker_addr_table[name]
        master = data.broker_addrs.get(MASTER_ID)
        master_table = None
        if master is not None:
            master_table = await _quietly(admin.broker_runtime_info(master), f"runtime {master}")
        if master is not None and master_table:
            labels = runtime_labels(data.cluster, master, master_table)
            for family, value in runtime_values(master_table).items():
                out.add(family, labels, value)
        for broker_id, addr in sorted(data.broker_addrs.items()):
            if broker_id == MASTER_ID or not master_table:
                continue
            table = await _quietly(admin.broker_runtime_info(addr), f"runtime {addr}")
            try:
                diff = int(master_table["commitLogMaxOffset"]) - int(
                    (table or {})["commitLogMaxOffset"]
                )
            except (KeyError, ValueError):
                continue
            labels = {"cluster": data.cluster, "brokerIP": addr, "broker": name}
            out.add("rocketmq_broker_commitlog_diff", labels, diff)

    await _each(sorted(info.broker_addr_table), one)
