"""mqadmin commands of the cluster family: clusters, routes, topic lists, name server and
broker configuration, KV configs, write permissions and broker runtime status, printing what
mqadmin 4.9.8 prints.

Where mqadmin walks a Java hash map or set (clusters, topics, config properties, the brokers
of a cluster), the lines come in Java's iteration order (rmq.common.javahash), and where it
sorts (broker names, runtime keys) they are sorted the same way.
"""

from __future__ import annotations

import datetime
import math
import time
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal
from typing import TYPE_CHECKING

from rmq.cli.mqadmin.consumertext import concurrent_hash_map_order
from rmq.cli.mqadmin.javafmt import jformat, jprintf, jstr, parse_bool, parse_int
from rmq.cli.mqadmin.registry import (
    JAVA_BLANKS,
    SUB_COMMAND_EXCEPTION,
    Invocation,
    MqadminFailure,
    Opt,
    broker_exception,
    failing,
    subcommand,
)
from rmq.common.javahash import java_hash_order
from rmq.common.naming import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX

if TYPE_CHECKING:
    from rmq.client.admin import AdminClient
    from rmq.client.adminops import cluster as ops
    from rmq.client.producer import Producer
    from rmq.remoting.bodies import ClusterInfo, TopicRouteData

CONFIG_LINE = "%-50s=  %s\n"


def _error_line(inv: Invocation) -> None:
    """CommandUtil's `[error]` line for an unknown cluster (no line break, as in Java)."""
    from rmq.client.adminops import cluster as ops

    jprintf(inv.out, "[error] %s", ops.CLUSTER_ERROR)


def _java_map(mapping: dict[int, str]) -> str:
    """`HashMap<Long, String>.toString()`."""
    return "{" + ", ".join(f"{key}={value}" for key, value in mapping.items()) + "}"


# -- topics and routes -----------------------------------------------------------------------

ROUTE_FORMAT = "%-45s %-32s %-50s %-10s %-11s %-5s%n"


@subcommand(
    7,
    "topicRoute",
    "Examine topic route info",
    Opt("t", "topic", True, True, "topic name"),
    Opt("l", "list", False, False, "Use list format to print data"),
)
async def topic_route(inv: Invocation) -> None:
    with failing("TopicRouteSubCommand"):
        async with inv.admin() as admin:
            route = await admin.topic_route(inv.value("t") or "")
    if not inv.has("l"):
        jprintf(inv.out, "%s%n", _route_json(route))
        return
    queues = {data.broker_name: data for data in route.queue_datas}
    jprintf(inv.out, ROUTE_FORMAT, "#ClusterName", "#BrokerName", "#BrokerAddrs", "#ReadQueue",
            "#WriteQueue", "#Perm")  # fmt: skip
    read = write = 0
    for broker in sorted(route.broker_datas, key=lambda data: data.broker_name):
        queue = queues[broker.broker_name]
        read += queue.read_queue_nums
        write += queue.write_queue_nums
        jprintf(inv.out, ROUTE_FORMAT, broker.cluster, broker.broker_name,
                _java_map(broker.broker_addrs), queue.read_queue_nums, queue.write_queue_nums,
                queue.perm)  # fmt: skip
    jprintf(inv.out, "%s%n", "-" * 158)
    jprintf(inv.out, ROUTE_FORMAT, "Total:", len(queues), "", read, write, "")


def _route_json(route: TopicRouteData) -> str:
    """`TopicRouteData.toJson(true)`: fastjson's pretty form, bean properties by name."""
    from rmq.common.fastjson import dumps

    brokers = [
        {
            "brokerAddrs": dict(sorted(data.broker_addrs.items())),
            "brokerName": data.broker_name,
            "cluster": data.cluster,
        }
        for data in route.broker_datas
    ]
    queues = [
        {
            "brokerName": data.broker_name,
            "perm": data.perm,
            "readQueueNums": data.read_queue_nums,
            "topicSysFlag": data.topic_sys_flag,
            "writeQueueNums": data.write_queue_nums,
        }
        for data in route.queue_datas
    ]
    bean = {
        "brokerDatas": brokers,
        "filterServerTable": route.filter_server_table,
        "orderTopicConf": route.order_topic_conf,
        "queueDatas": queues,
    }
    return dumps(bean, pretty=True)


@subcommand(
    9,
    "topicClusterList",
    "get cluster info for topic",
    Opt("t", "topic", True, True, "topic name"),
)
async def topic_cluster_list(inv: Invocation) -> None:
    from rmq.client.adminops import cluster as ops

    with failing("TopicClusterSubCommand"):
        async with inv.admin() as admin:
            info = await admin.cluster_info()
            route = await admin.topic_route(inv.value("t") or "")
        if not route.broker_datas:
            raise MqadminFailure("TopicClusterSubCommand command failed: no broker in the route")
    first = route.broker_datas[0].broker_name
    clusters = [name for name in ops.cluster_names(info) if first in info.cluster_addr_table[name]]
    for name in java_hash_order(clusters):
        jprintf(inv.out, "%s%n", name)


@subcommand(
    27,
    "topicList",
    "Fetch all topic list from name server",
    Opt("c", "clusterModel", False, False, "clusterModel"),
)
async def topic_list(inv: Invocation) -> None:
    from rmq.client.adminops import cluster as ops

    with failing("TopicListSubCommand"):
        async with inv.admin() as admin:
            if not inv.has("c"):
                for topic in await ops.all_topics(admin):
                    jprintf(inv.out, "%s%n", topic)
                return
            info = await admin.cluster_info()
            jprintf(inv.out, "%-20s  %-48s  %-48s%n", "#Cluster Name", "#Topic", "#Consumer Group")
            for topic in await ops.all_topics(admin):
                if topic.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX)):
                    continue
                cluster: str | None = ""
                groups: list[str] = []
                try:
                    route = await admin.topic_route(topic)
                    cluster = ops.first_broker_cluster(info, route)
                    groups = await ops.consumer_groups(admin, route, topic)
                except Exception:
                    pass
                for group in groups or [""]:
                    jprintf(inv.out, "%-20s  %-64s  %-64s%n", jstr(cluster)[:20], topic[:64],
                            group[:64])  # fmt: skip


# -- clusters --------------------------------------------------------------------------------


@subcommand(
    26,
    "clusterList",
    "List all of clusters",
    Opt("m", "moreStats", False, False, "Print more stats"),
    Opt("i", "interval", True, False, "specify intervals numbers, it is in seconds"),
)
async def cluster_list(inv: Invocation) -> None:
    import asyncio

    interval = 1.0
    if inv.has("i"):
        try:
            interval = parse_int(inv.values.get("i"), 64)
        except ValueError as exc:
            raise MqadminFailure(f"java.lang.NumberFormatException: {exc}") from None
    rounds = 0
    with failing("ClusterListSubCommand"):
        async with inv.admin() as admin:
            while True:
                if rounds:
                    await asyncio.sleep(interval)
                rounds += 1
                info = await admin.cluster_info()
                if inv.has("m"):
                    await _cluster_more_stats(inv, admin, info)
                else:
                    await _cluster_base_info(inv, admin, info)
                inv.out.flush()
                if not inv.has("i"):
                    return


def _brokers(info: ClusterInfo) -> list[tuple[str, str, int, str]]:
    """(cluster, broker name, broker id, address) as clusterList walks them."""
    from rmq.client.adminops import cluster as ops

    rows = []
    for cluster in ops.cluster_names(info):
        for name in sorted(info.cluster_addr_table[cluster]):
            data = info.broker_addr_table.get(name)
            if data is None:
                continue
            for broker_id in sorted(data.broker_addrs):
                rows.append((cluster, name, broker_id, data.broker_addrs[broker_id]))
    return rows


BASE_FORMAT = "%-16s  %-22s  %-4s  %-22s %-16s %19s %19s %10s %5s %6s%n"


async def _cluster_base_info(inv: Invocation, admin: AdminClient, info: ClusterInfo) -> None:
    jprintf(inv.out, BASE_FORMAT, "#Cluster Name", "#Broker Name", "#BID", "#Addr", "#Version",
            "#InTPS(LOAD)", "#OutTPS(LOAD)", "#PCWait(ms)", "#Hour", "#SPACE")  # fmt: skip
    for cluster, name, broker_id, addr in _brokers(info):
        table: dict[str, str] = {}
        tps_in = tps_out = 0.0
        try:
            table = await admin.broker_runtime_info(addr)
            tps_in = float(table["putTps"].split(" ")[0])
            tps_out = float(table["getTransferedTps"].split(" ")[0])
        except Exception:
            pass
        hour = space = 0.0
        earliest = table.get("earliestMessageTimeStamp", "")
        if earliest:
            hour = (time.time() * 1000 - int(earliest)) / 1000.0 / 60.0 / 60.0
        ratio = table.get("commitLogDiskRatio", "")
        if ratio:
            space = float(ratio)
        jprintf(inv.out, BASE_FORMAT, cluster, name, broker_id, addr,
                table.get("brokerVersionDesc", ""),
                jformat("%9.2f(%s,%sms)", tps_in, table.get("sendThreadPoolQueueSize"),
                        table.get("sendThreadPoolQueueHeadWaitTimeMills")),
                jformat("%9.2f(%s,%sms)", tps_out, table.get("pullThreadPoolQueueSize"),
                        table.get("pullThreadPoolQueueHeadWaitTimeMills")),
                table.get("pageCacheLockTimeMills"), jformat("%2.2f", hour),
                jformat("%.4f", space))  # fmt: skip


MORE_HEADER = "%-16s  %-32s %14s %14s %14s %14s%n"
MORE_FORMAT = "%-16s  %-32s %14d %14d %14d %14d%n"


def _counter(table: dict[str, str]) -> Callable[[str], int]:
    return lambda key: parse_int(table.get(key), 64)


async def _cluster_more_stats(inv: Invocation, admin: AdminClient, info: ClusterInfo) -> None:
    jprintf(inv.out, MORE_HEADER, "#Cluster Name", "#Broker Name", "#InTotalYest",
            "#OutTotalYest", "#InTotalToday", "#OutTotalToday")  # fmt: skip
    for cluster, name, _broker_id, addr in _brokers(info):
        figures = [0, 0, 0, 0]
        try:
            table = await admin.broker_runtime_info(addr)
            count = _counter(table)
            figures = [
                count("msgPutTotalTodayMorning") - count("msgPutTotalYesterdayMorning"),
                count("msgGetTotalTodayMorning") - count("msgGetTotalYesterdayMorning"),
                count("msgPutTotalTodayNow") - count("msgPutTotalTodayMorning"),
                count("msgGetTotalTodayNow") - count("msgGetTotalTodayMorning"),
            ]
        except Exception:
            pass
        jprintf(inv.out, MORE_FORMAT, cluster, name, *figures)


def _print_properties(inv: Invocation, properties: dict[str, str]) -> None:
    """A config's `key=  value` lines as Java iterates the Properties it loaded them into
    (a ConcurrentHashMap in Java 9+)."""
    for key in concurrent_hash_map_order(list(properties)):
        jprintf(inv.out, CONFIG_LINE, key, properties[key])


# -- name server -----------------------------------------------------------------------------


def _server_list(inv: Invocation) -> list[str] | None:
    """The -n list as these commands split it (None without -n)."""
    servers = inv.values.get("n")
    if not servers:
        return None
    parts = servers.strip(JAVA_BLANKS).split(";")
    while parts and parts[-1] == "":
        parts.pop()
    return parts or None


@subcommand(43, "getNamesrvConfig", "Get configs of name server.")
async def get_namesrv_config(inv: Invocation) -> None:
    from rmq.client.adminops import cluster as ops

    with failing("GetNamesrvConfigCommand"):
        async with inv.admin() as admin:
            configs = await ops.namesrv_configs(admin, _server_list(inv))
    for config in configs:
        jprintf(inv.out, "============%s============\n", config.addr)
        _print_properties(inv, config.properties)


@subcommand(
    44,
    "updateNamesrvConfig",
    "Update configs of name server.",
    Opt("k", "key", True, True, "config key"),
    Opt("v", "value", True, True, "config value"),
)
async def update_namesrv_config(inv: Invocation) -> None:
    from rmq.client.adminops import cluster as ops

    key, value = inv.value("k") or "", inv.value("v") or ""
    servers = _server_list(inv)
    with failing("UpdateNamesrvConfigCommand"):
        async with inv.admin() as admin:
            await ops.update_namesrv_config(admin, {key: value}, servers)
    shown = "" if servers is None else "[" + ", ".join(servers) + "]"
    jprintf(inv.out, "update name server config success!%s\n%s : %s\n", shown, key, value)


@subcommand(
    28,
    "updateKvConfig",
    "Create or update KV config.",
    Opt("s", "namespace", True, True, "set the namespace"),
    Opt("k", "key", True, True, "set the key name"),
    Opt("v", "value", True, True, "set the key value"),
)
async def update_kv_config(inv: Invocation) -> None:
    from rmq.client.adminops import cluster as ops

    with failing("UpdateKvConfigCommand"):
        async with inv.admin() as admin:
            await ops.put_kv_config(
                admin, inv.value("s") or "", inv.value("k") or "", inv.value("v") or ""
            )
    jprintf(inv.out, "create or update kv config to namespace success.%n")


@subcommand(
    29,
    "deleteKvConfig",
    "Delete KV config.",
    Opt("s", "namespace", True, True, "set the namespace"),
    Opt("k", "key", True, True, "set the key name"),
)
async def delete_kv_config(inv: Invocation) -> None:
    from rmq.client.adminops import cluster as ops

    with failing("DeleteKvConfigCommand"):
        async with inv.admin() as admin:
            await ops.delete_kv_config(admin, inv.value("s") or "", inv.value("k") or "")
    jprintf(inv.out, "delete kv config from namespace success.%n")


async def _write_perm(inv: Invocation, *, add: bool) -> None:
    from rmq.client.adminops import cluster as ops

    name = inv.value("b") or ""
    verb = "add" if add else "wipe"
    command_class = "AddWritePermSubCommand" if add else "WipeWritePermSubCommand"
    with failing(command_class, "command failed" if add else " command failed"):
        async with inv.admin() as admin:
            changes = await (ops.add_write_perm if add else ops.wipe_write_perm)(admin, name)
    failed = []
    for change in changes:
        if change.error is None:
            jprintf(inv.out, "%s write perm of broker[%s] in name server[%s] OK, %d%n", verb,
                    name, change.namesrv_addr, change.topic_count)  # fmt: skip
        else:
            jprintf(inv.out, "%s write perm of broker[%s] in name server[%s] Failed%n", verb,
                    name, change.namesrv_addr)  # fmt: skip
            failed.append(f"{change.namesrv_addr}: {change.error}")
    if failed:
        raise MqadminFailure(f"{command_class}: " + "; ".join(failed))


@subcommand(
    30,
    "wipeWritePerm",
    "Wipe write perm of broker in all name server you defined in the -n param",
    Opt("b", "brokerName", True, True, "broker name"),
)
async def wipe_write_perm(inv: Invocation) -> None:
    await _write_perm(inv, add=False)


@subcommand(
    31,
    "addWritePerm",
    "Add write perm of broker in all name server you defined in the -n param",
    Opt("b", "brokerName", True, True, "broker name"),
)
async def add_write_perm(inv: Invocation) -> None:
    await _write_perm(inv, add=True)


# -- brokers ---------------------------------------------------------------------------------


async def _print_broker_config(inv: Invocation, admin: AdminClient, title: str, addr: str) -> None:
    from rmq.client.adminops import cluster as ops

    inv.out.write(title)
    _print_properties(inv, await ops.broker_config(admin, addr))
    jprintf(inv.out, "%n")


@subcommand(
    45,
    "getBrokerConfig",
    "Get broker config by cluster or special broker!",
    Opt("b", "brokerAddr", True, False, "get which broker"),
    Opt("c", "clusterName", True, False, "get which cluster"),
)
async def get_broker_config(inv: Invocation) -> None:
    from rmq.client.adminops import cluster as ops

    with failing("GetBrokerConfigCommand"):
        async with inv.admin() as admin:
            if inv.has("b"):
                addr = inv.value("b") or ""
                await _print_broker_config(inv, admin, f"============{addr}============\n", addr)
            elif inv.has("c"):
                found = ops.masters_and_slaves(await admin.cluster_info(), inv.value("c") or "")
                if found is None:
                    _error_line(inv)
                    return
                for master, slaves in found.items():
                    await _print_broker_config(
                        inv, admin, f"============Master: {master}============\n", master
                    )
                    for slave in slaves:
                        title = f"============My Master: {master}=====Slave: {slave}============\n"
                        await _print_broker_config(inv, admin, title, slave)


@subcommand(
    5,
    "updateBrokerConfig",
    "Update broker's config",
    Opt("b", "brokerAddr", True, False, "update which broker"),
    Opt("c", "clusterName", True, False, "update which cluster"),
    Opt("k", "key", True, True, "config key"),
    Opt("v", "value", True, True, "config value"),
)
async def update_broker_config(inv: Invocation) -> None:
    from rmq.client.adminops import cluster as ops
    from rmq.client.errors import MQBrokerError

    properties = {inv.value("k") or "": inv.value("v") or ""}
    command = "UpdateBrokerConfigSubCommand"
    refusals: list[str] = []
    with failing(command):
        async with inv.admin(namesrv_needed=not inv.has("b")) as admin:
            if inv.has("b"):
                addr = inv.value("b") or ""
                try:
                    await ops.update_broker_config(admin, addr, properties)
                except MQBrokerError as exc:  # mqadmin prints the cause under its own line
                    printed = f"{SUB_COMMAND_EXCEPTION}: {command} command failed\nCaused by: "
                    raise MqadminFailure(
                        f"{command} command failed: {exc}", printed=printed + broker_exception(exc)
                    ) from exc
                jprintf(inv.out, "update broker config success, %s\n", addr)
                return
            if not inv.has("c"):
                inv.print_usage()
                return
            masters = ops.master_addrs(await admin.cluster_info(), inv.value("c") or "")
            if masters is None:
                _error_line(inv)
                return
            for addr in masters:
                try:
                    await ops.update_broker_config(admin, addr, properties)
                except Exception as exc:  # mqadmin prints the trace and goes on
                    if isinstance(exc, MQBrokerError):
                        refusals.append(broker_exception(exc))
                    else:
                        refusals.append(f"{addr}: {exc}\n")
                    continue
                jprintf(inv.out, "update broker config success, %s\n", addr)
    if refusals:
        raise MqadminFailure(f"{command}: {len(refusals)} refused", printed="".join(refusals))


@subcommand(
    10,
    "brokerStatus",
    "Fetch broker runtime status data",
    Opt("b", "brokerAddr", True, False, "Broker address"),
    Opt("c", "clusterName", True, False, "which cluster"),
)
async def broker_status(inv: Invocation) -> None:
    from rmq.client.adminops import cluster as ops

    failures = []
    with failing("BrokerStatusSubCommand"):
        async with inv.admin() as admin:
            if inv.has("b"):
                table = await admin.broker_runtime_info(inv.value("b") or "")
                for key in sorted(table):
                    jprintf(inv.out, "%-32s: %s%n", key, table[key])
            elif inv.has("c"):
                addrs = ops.cluster_addrs(await admin.cluster_info(), inv.value("c") or "")
                if addrs is None:
                    _error_line(inv)
                    return
                for addr in addrs:
                    try:
                        table = await admin.broker_runtime_info(addr)
                    except Exception as exc:  # mqadmin prints the trace and goes on
                        failures.append(f"{addr}: {exc}")
                        continue
                    for key in sorted(table):
                        jprintf(inv.out, "%-24s %-32s: %s%n", addr, key, table[key])
    if failures:
        raise MqadminFailure("BrokerStatusSubCommand: " + "; ".join(failures))


@subcommand(
    42,
    "clusterRT",
    "List All clusters Message Send RT",
    Opt("a", "amount", True, False, "message amount | default 100"),
    Opt("s", "size", True, False, "message size | default 128 Byte"),
    Opt("c", "cluster", True, False, "cluster name | default display all cluster"),
    Opt("p", "print log", True, False, "print as tlog | default false"),
    Opt("m", "machine room", True, False, "machine room name | default noname"),
    Opt("i", "interval", True, False, "print interval | default 10 seconds"),
)
async def cluster_rt(inv: Invocation) -> None:
    """Sends to every broker's own topic round after round, until interrupted."""
    import asyncio

    from rmq.client.adminops import cluster as ops
    from rmq.client.producer import Producer

    with failing("CLusterSendMsgRTCommand"):
        async with inv.admin() as admin:
            info = await admin.cluster_info()
            amount = parse_int(inv.value("a"), 64) if inv.has("a") else 100
            size = parse_int(inv.value("s"), 64) if inv.has("s") else 128
            interval = parse_int(inv.value("i"), 64) if inv.has("i") else 10
            tlog = inv.has("p") and parse_bool(inv.value("p"))
            room = inv.value("m") if inv.has("m") else "noname"
            clusters = [inv.value("c") or ""] if inv.has("c") else ops.cluster_names(info)
            if not tlog:
                jprintf(inv.out, "%-24s  %-24s  %-4s  %-8s  %-8s%n", "#Cluster Name",
                        "#Broker Name", "#RT", "#successCount", "#failCount")  # fmt: skip
            group = str(time.time_ns() // 1_000_000)
            async with Producer(group, ";".join(admin.namesrv_addrs)) as producer:
                while True:
                    await _rt_round(inv, producer, info, clusters, amount, b"a" * size, tlog, room)
                    await asyncio.sleep(interval)


async def _rt_round(
    inv: Invocation,
    producer: Producer,
    info: ClusterInfo,
    clusters: list[str],
    amount: int,
    body: bytes,
    tlog: bool,
    room: str | None,
) -> None:
    from rmq.client.adminops import cluster as ops

    for cluster in clusters:
        names = info.cluster_addr_table.get(cluster)
        if names is None:
            jprintf(inv.out, "cluster [%s] not exist", cluster)
            inv.out.flush()
            break
        for name in java_hash_order(names):
            measured = await ops.measure_send_rt(producer, name, body, amount)
            rt = measured.elapsed_ms / (amount - 1) if amount != 1 else _divided_by_zero(measured)
            if not tlog:
                jprintf(inv.out, "%-24s  %-24s  %-8s  %-16s  %-16s%n", cluster, name,
                        jformat("%.2f", rt), measured.success, measured.failed)  # fmt: skip
            else:
                now = datetime.datetime.now(datetime.timezone(datetime.timedelta(hours=8)))
                rounded = Decimal(rt).quantize(Decimal(1), ROUND_HALF_UP)
                jprintf(inv.out, "%s|%s|%s|%s|%s%n", now.strftime("%Y-%m-%d %H:%M:%S"), room,
                        cluster, name, rounded)  # fmt: skip
            inv.out.flush()


def _divided_by_zero(measured: ops.SendRt) -> float:
    """Java's double division by zero: NaN for 0/0, else an infinity."""
    return math.nan if measured.elapsed_ms == 0 else math.copysign(math.inf, measured.elapsed_ms)
