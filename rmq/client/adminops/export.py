"""Traffic statistics and cluster exports, after mqadmin 4.9.8's statsAll, exportMetadata,
exportConfigs and exportMetrics.  Nothing here prints or writes files: each operation returns
what the command shows or writes.

* `topic_traffic`: per topic, its put rate and day count (VIEW_BROKER_STATS_DATA
  TOPIC_PUT_NUMS on every master of its route) and, per group consuming it (asked with
  QUERY_TOPIC_CONSUME_BY_WHO), the get rate, day count (GROUP_GET_NUMS) and accumulation
  (the group's consume stats); a figure a broker cannot give counts as 0, as in mqadmin;
* `cluster_metadata`: the user topics and groups of every master of a cluster merged (queue
  counts of a topic on several masters added up);
* `cluster_configs`: the name server count, the masters' and slaves' counts and a chosen
  subset of every master's configuration;
* `cluster_metrics`: each broker's runtime figures, put rates and day counts.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace

from rmq.client import api
from rmq.client.admin import AdminClient, AdminError
from rmq.client.adminops.cluster import broker_config, master_addrs, masters_and_slaves
from rmq.client.adminops.consumer import consume_stats, consumer_connection
from rmq.client.adminops.topic import user_groups, user_topics
from rmq.common.naming import (
    DLQ_GROUP_TOPIC_PREFIX,
    RETRY_GROUP_TOPIC_PREFIX,
    RMQ_SYS_SCHEDULE_TOPIC,
    RMQ_SYS_TRANS_HALF_TOPIC,
)
from rmq.remoting.bodies import MASTER_ID, SubscriptionGroupConfig, TopicConfig
from rmq.remoting.bodies.brokerstats import BrokerStatsData

TOPIC_PUT_NUMS = "TOPIC_PUT_NUMS"
GROUP_GET_NUMS = "GROUP_GET_NUMS"


def day_sum(data: BrokerStatsData) -> int:
    """mqadmin's compute24HourSum: the day window's sum, else the hour's, else the minute's."""
    for item in (data.stats_day, data.stats_hour, data.stats_minute):
        if item.sum != 0:
            return item.sum
    return 0


async def _stats(admin: AdminClient, addr: str, name: str, key: str) -> BrokerStatsData | None:
    try:
        return await api.view_broker_stats_data(admin.remoting, addr, name, key, admin.timeout)
    except Exception:
        return None


@dataclass(frozen=True, slots=True)
class GroupTraffic:
    """One group's consumption of a topic."""

    group: str
    accumulation: int
    out_tps: float
    out_day: int


@dataclass(frozen=True, slots=True)
class TopicTraffic:
    """A topic's traffic; `groups` empty when no group consumes it."""

    topic: str
    in_tps: float
    in_day: int
    groups: list[GroupTraffic] = field(default_factory=list)


async def topic_traffic(admin: AdminClient, topic: str) -> TopicTraffic:
    """The topic's put and get figures over its route's masters (see the module docstring)."""
    route = await admin.topic_route(topic)
    masters = [addr for data in route.broker_datas if (addr := data.broker_addrs.get(MASTER_ID))]
    first = route.broker_datas[0].select_broker_addr() if route.broker_datas else None
    groups: list[str] = []
    if first is not None:
        groups = await api.query_topic_consume_by_who(admin.remoting, first, topic, admin.timeout)
    put = [await _stats(admin, addr, TOPIC_PUT_NUMS, topic) for addr in masters]
    in_tps = sum(data.stats_minute.tps for data in put if data is not None)
    in_day = sum(day_sum(data) for data in put if data is not None)
    traffic = TopicTraffic(topic, in_tps, in_day)
    for group in groups:
        got = [await _stats(admin, addr, GROUP_GET_NUMS, f"{topic}@{group}") for addr in masters]
        try:
            stats = await consume_stats(admin, group, topic)
            diff = sum(w.broker_offset - w.consumer_offset for w in stats.offset_table.values())
        except Exception:
            diff = 0
        traffic.groups.append(
            GroupTraffic(
                group,
                max(diff, 0),
                sum(data.stats_minute.tps for data in got if data is not None),
                sum(day_sum(data) for data in got if data is not None),
            )
        )
    return traffic


def stats_topics(topics: list[str], selected: str | None) -> list[str]:
    """The topics statsAll reports: no retry or dead-letter topic, only `selected` if given."""
    return [
        topic
        for topic in topics
        if not topic.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX))
        and (not selected or topic == selected)
    ]


async def _masters(admin: AdminClient, cluster: str) -> list[str]:
    masters = master_addrs(await admin.cluster_info(), cluster)
    if masters is None:
        raise AdminError(f"cluster {cluster!r} is not known to the name server")
    return masters


@dataclass(frozen=True, slots=True)
class Metadata:
    """The merged user topics and groups of a cluster's masters (or of one broker)."""

    topics: dict[str, TopicConfig]
    groups: dict[str, SubscriptionGroupConfig]


async def cluster_metadata(
    admin: AdminClient,
    *,
    cluster: str | None = None,
    broker_addr: str | None = None,
    special_topics: bool = False,
) -> Metadata:
    """The user topics and groups of the broker at `broker_addr`, or of every master of
    `cluster` merged: a topic's queue counts and a group's retry queue counts are added up
    over the masters that have it."""
    addrs = [broker_addr] if broker_addr is not None else await _masters(admin, cluster or "")
    topics: dict[str, TopicConfig] = {}
    groups: dict[str, SubscriptionGroupConfig] = {}
    for addr in addrs:
        wrapper = await user_topics(admin, addr, special_topics=special_topics)
        for name, config in wrapper.topic_config_table.items():
            seen = topics.get(name)
            if seen is not None:
                config = replace(
                    config,
                    read_queue_nums=config.read_queue_nums + seen.read_queue_nums,
                    write_queue_nums=config.write_queue_nums + seen.write_queue_nums,
                )
            topics[name] = config
        for name, group in (await user_groups(admin, addr)).subscription_group_table.items():
            seen_group = groups.get(name)
            if seen_group is not None:
                group = replace(
                    group, retry_queue_nums=group.retry_queue_nums + seen_group.retry_queue_nums
                )
            groups[name] = group
    return Metadata(topics, groups)


EXPORTED_BROKER_KEYS = (
    "brokerClusterName",
    "brokerId",
    "brokerName",
    "brokerRole",
    "fileReservedTime",
    "filterServerNums",
    "flushDiskType",
    "maxMessageSize",
    "messageDelayLevel",
    "msgTraceTopicName",
    "slaveReadEnable",
    "traceOn",
    "traceTopicEnable",
    "useTLS",
    "autoCreateTopicEnable",
    "autoCreateSubscriptionGroup",
)
"""The broker settings exportConfigs writes."""


@dataclass(frozen=True, slots=True)
class ClusterConfigs:
    """What exportConfigs writes: broker name -> chosen settings, and the cluster's scale."""

    broker_configs: dict[str, dict[str, str]]
    namesrv_count: int
    master_count: int
    slave_count: int


async def cluster_configs(admin: AdminClient, cluster: str) -> ClusterConfigs:
    """The chosen settings of every master of `cluster` and the cluster's scale; AdminError
    when a master lacks one of the settings (mqadmin fails then too)."""
    layout = masters_and_slaves(await admin.cluster_info(), cluster) or {}
    configs: dict[str, dict[str, str]] = {}
    for master in layout:
        config = await broker_config(admin, master)
        missing = [key for key in EXPORTED_BROKER_KEYS if key not in config]
        if missing:
            raise AdminError(f"broker {master} does not report {', '.join(missing)}")
        configs[config["brokerName"]] = {key: config[key] for key in EXPORTED_BROKER_KEYS}
    slaves = sum(len(addrs) for addrs in layout.values())
    return ClusterConfigs(configs, len(admin.namesrv_addrs), len(layout), slaves)


@dataclass(frozen=True, slots=True)
class BrokerMetrics:
    """exportMetrics' figures of one master."""

    cpu_num: str | None
    total_mem_kbytes: str | None
    commitlog_disk_ratio: str | None
    consume_queue_disk_ratio: str | None
    normal_in_tps: float
    normal_out_tps: float
    trans_in_tps: float
    schedule_in_tps: float
    normal_day_in: int
    normal_day_out: int
    trans_day_in: int
    schedule_day_in: int
    message_average_size: str | None
    topic_count: int
    group_count: int
    clients: list[tuple[str, int]]
    """(language, version) of the members of the broker's groups, each once."""


def _first_figure(text: str | None) -> float:
    return float(text.split(" ")[0]) if text else 0.0


async def broker_metrics(admin: AdminClient, addr: str) -> BrokerMetrics:
    """The master's runtime figures, configuration, user topics and groups, transaction and
    schedule put stats, and the clients of its groups (`language%version`)."""
    runtime, config, groups, topics = await asyncio.gather(
        admin.broker_runtime_info(addr),
        broker_config(admin, addr),
        user_groups(admin, addr),
        user_topics(admin, addr),
    )
    trans = await _stats(admin, addr, TOPIC_PUT_NUMS, RMQ_SYS_TRANS_HALF_TOPIC)
    schedule = await _stats(admin, addr, TOPIC_PUT_NUMS, RMQ_SYS_SCHEDULE_TOPIC)
    clients: list[tuple[str, int]] = []
    for group in groups.subscription_group_table.values():
        try:
            connection = await consumer_connection(admin, group.group_name)
        except Exception:
            continue
        for conn in connection.connection_set:
            clients.append((conn.language.name, conn.version))

    def day_delta(today: str, yesterday: str) -> int:
        return int(runtime[today]) - int(runtime[yesterday])

    return BrokerMetrics(
        cpu_num=config.get("clientCallbackExecutorThreads"),
        total_mem_kbytes=runtime.get("totalMemKBytes"),
        commitlog_disk_ratio=runtime.get("commitLogDiskRatio"),
        consume_queue_disk_ratio=runtime.get("consumeQueueDiskRatio"),
        normal_in_tps=_first_figure(runtime.get("putTps")),
        normal_out_tps=_first_figure(runtime.get("getTransferedTps")),
        trans_in_tps=trans.stats_minute.tps if trans is not None else 0.0,
        schedule_in_tps=schedule.stats_minute.tps if schedule is not None else 0.0,
        normal_day_in=day_delta("msgPutTotalTodayMorning", "msgPutTotalYesterdayMorning"),
        normal_day_out=day_delta("msgGetTotalTodayMorning", "msgGetTotalYesterdayMorning"),
        trans_day_in=day_sum(trans) if trans is not None else 0,
        schedule_day_in=day_sum(schedule) if schedule is not None else 0,
        message_average_size=runtime.get("putMessageAverageSize"),
        topic_count=len(topics.topic_config_table),
        group_count=len(groups.subscription_group_table),
        clients=list(dict.fromkeys(clients)),
    )


async def cluster_metrics(admin: AdminClient, cluster: str) -> dict[str, BrokerMetrics]:
    """`broker_metrics` of the master of every broker name of `cluster`, by broker name."""
    info = await admin.cluster_info()
    names = info.cluster_addr_table.get(cluster)
    if names is None:
        raise AdminError(f"cluster {cluster!r} is not known to the name server")
    found: dict[str, BrokerMetrics] = {}
    for name in names:
        data = info.broker_addr_table.get(name)
        addr = data.broker_addrs.get(MASTER_ID) if data is not None else None
        if addr is not None:
            found[name] = await broker_metrics(admin, addr)
    return found
