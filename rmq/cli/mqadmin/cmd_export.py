"""mqadmin's statsAll and export commands (exportMetadata, exportConfigs, exportMetrics),
printing and writing what mqadmin 4.9.8 does (loaded by `dispatch.MODULES`).

The export commands write JSON files (`metadata.json`, `topic.json`, `subscriptionGroup.json`,
`configs.json`, `metrics.json`) under `-f` (default `/tmp/rocketmq/export`), creating the
directory, with the members and values fastjson writes (indented; a missing value is left
out, as fastjson leaves out a map's null values).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from rmq.cli.mqadmin.javafmt import jprintf
from rmq.cli.mqadmin.registry import Invocation, Opt, failing, subcommand

DEFAULT_EXPORT_PATH = "/tmp/rocketmq/export"


def write_json(path: str, document: Any) -> None:
    """MixAll.string2FileNotSafe of the document's JSON (parent directories created)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(document, indent="\t", ensure_ascii=False), encoding="utf-8")


def export_path(inv: Invocation, name: str) -> str:
    """Where an export command writes `name`: under `-f`, else the default directory."""
    base = inv.value("f") if inv.has("f") else DEFAULT_EXPORT_PATH
    return f"{base}/{name}"


def _present(table: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in table.items() if value is not None}


@subcommand(
    39,
    "statsAll",
    "Topic and Consumer tps stats",
    Opt("a", "activeTopic", False, False, "print active topic only"),
    Opt("t", "topic", True, False, "print select topic only"),
)
async def stats_all(inv: Invocation) -> None:
    from rmq.client.adminops.consumer import all_topic_names
    from rmq.client.adminops.export import stats_topics, topic_traffic

    with failing("StatsAllSubCommand"):
        async with inv.admin() as admin:
            topics = await all_topic_names(admin)
            jprintf(
                inv.out,
                "%-64s  %-64s %12s %11s %11s %14s %14s%n",
                *("#Topic", "#Consumer Group", "#Accumulation", "#InTPS", "#OutTPS"),
                *("#InMsg24Hour", "#OutMsg24Hour"),
            )
            active = inv.has("a")
            for topic in stats_topics(topics, inv.values.get("t")):
                try:
                    traffic = await topic_traffic(admin, topic)
                except Exception:
                    continue  # mqadmin skips a topic it cannot read
                for group in traffic.groups:
                    if active and traffic.in_day <= 0 and group.out_day <= 0:
                        continue
                    jprintf(
                        inv.out,
                        "%-64s  %-64s %12d %11.2f %11.2f %14d %14d%n",
                        topic[:64],
                        group.group[:64],
                        group.accumulation,
                        traffic.in_tps,
                        group.out_tps,
                        traffic.in_day,
                        group.out_day,
                    )
                if not traffic.groups and (not active or traffic.in_day > 0):
                    jprintf(
                        inv.out,
                        "%-64s  %-64s %12d %11.2f %11s %14d %14s%n",
                        *(topic[:64], "", 0, traffic.in_tps, "", traffic.in_day, "NO_CONSUMER"),
                    )


@subcommand(
    54,
    "exportMetadata",
    "export metadata",
    Opt("c", "clusterName", True, False, "choose a cluster to export"),
    Opt("b", "brokerAddr", True, False, "choose a broker to export"),
    Opt("f", "filePath", True, False, "export metadata.json path | default /tmp/rocketmq/export"),
    Opt("t", "topic", False, False, "only export topic metadata"),
    Opt("g", "subscriptionGroup", False, False, "only export subscriptionGroup metadata"),
    Opt("s", "specialTopic", False, False, "need retryTopic and dlqTopic"),
)
async def export_metadata(inv: Invocation) -> None:
    from rmq.client.adminops.export import cluster_metadata
    from rmq.client.adminops.topic import user_groups, user_topics

    with failing("ExportMetadataCommand"):
        broker, cluster = inv.value("b"), inv.value("c")
        special = inv.has("s")
        if broker is not None:
            if not inv.has("t") and not inv.has("g"):
                return  # mqadmin exports nothing from one broker without -t or -g
            async with inv.admin() as admin:
                if inv.has("t"):
                    path = export_path(inv, "topic.json")
                    wrapper: Any = await user_topics(admin, broker, special_topics=special)
                else:
                    path = export_path(inv, "subscriptionGroup.json")
                    wrapper = await user_groups(admin, broker)
            write_json(path, wrapper.to_json())
            jprintf(inv.out, "export %s success", path)
            return
        if cluster is None:
            inv.print_usage()
            return
        async with inv.admin() as admin:
            found = await cluster_metadata(admin, cluster=cluster, special_topics=special)
        document: dict[str, Any] = {}
        if inv.has("t"):
            document["topicConfigTable"] = _configs(found.topics)
            path = export_path(inv, "topic.json")
        elif inv.has("g"):
            document["subscriptionGroupTable"] = _configs(found.groups)
            path = export_path(inv, "subscriptionGroup.json")
        else:
            document["topicConfigTable"] = _configs(found.topics)
            document["subscriptionGroupTable"] = _configs(found.groups)
            path = export_path(inv, "metadata.json")
        document["exportTime"] = int(time.time() * 1000)
        write_json(path, document)
        jprintf(inv.out, "export %s success%n", path)


def _configs(table: dict[str, Any]) -> dict[str, Any]:
    return {name: config.to_json() for name, config in table.items()}


@subcommand(
    55,
    "exportConfigs",
    "export configs",
    Opt("c", "clusterName", True, True, "choose a cluster to export"),
    Opt("f", "filePath", True, False, "export configs.json path | default /tmp/rocketmq/export"),
)
async def export_configs(inv: Invocation) -> None:
    from rmq.client.adminops.export import cluster_configs

    with failing("ExportConfigsCommand"):
        async with inv.admin() as admin:
            found = await cluster_configs(admin, inv.value("c") or "")
        path = export_path(inv, "configs.json")
        scale = {
            "namesrvSize": found.namesrv_count,
            "masterBrokerSize": found.master_count,
            "slaveBrokerSize": found.slave_count,
        }
        write_json(path, {"brokerConfigs": found.broker_configs, "clusterScale": scale})
        jprintf(inv.out, "export %s success", path)


@subcommand(
    56,
    "exportMetrics",
    "export metrics",
    Opt("c", "clusterName", True, True, "choose a cluster to export"),
    Opt("f", "filePath", True, False, "export metrics.json path | default /tmp/rocketmq/export"),
)
async def export_metrics(inv: Invocation) -> None:
    from rmq.client.adminops.export import cluster_metrics
    from rmq.remoting.codes import CURRENT_VERSION, version_desc

    with failing("ExportMetricsCommand"):
        async with inv.admin() as admin:
            brokers = await cluster_metrics(admin, inv.value("c") or "")
        report: dict[str, Any] = {}
        tps = dict.fromkeys(
            ("totalNormalInTps", "totalNormalOutTps", "totalTransInTps", "totalScheduleInTps"),
            0.0,
        )
        day_names = ("normalOneDayInNum", "normalOneDayOutNum", "transOneDayInNum")
        days = dict.fromkeys((*day_names, "scheduleOneDayInNum"), 0)
        for name, m in brokers.items():
            broker_tps = {
                "normalInTps": m.normal_in_tps,
                "normalOutTps": m.normal_out_tps,
                "transInTps": m.trans_in_tps,
                "scheduleInTps": m.schedule_in_tps,
            }
            broker_days = {
                "normalOneDayInNum": m.normal_day_in,
                "normalOneDayOutNum": m.normal_day_out,
                "transOneDayInNum": m.trans_day_in,
                "scheduleOneDayInNum": m.schedule_day_in,
            }
            for key, value in broker_tps.items():
                tps["total" + key[0].upper() + key[1:]] += value
            for key, count in broker_days.items():
                days[key] += count
            quota = {
                "diskRatio": _present(
                    {
                        "commitLogDiskRatio": m.commitlog_disk_ratio,
                        "consumeQueueDiskRatio": m.consume_queue_disk_ratio,
                    }
                ),
                "tps": broker_tps,
                "oneDayNum": broker_days,
                "messageAverageSize": m.message_average_size,
                "topicSize": m.topic_count,
                "groupSize": m.group_count,
            }
            clients = [f"{language}%{version_desc(version)}" for language, version in m.clients]
            report[name] = {
                "runtimeEnv": _present({"cpuNum": m.cpu_num, "totalMemKBytes": m.total_mem_kbytes}),
                "runtimeQuota": _present(quota),
                "runtimeVersion": {
                    "rocketmqVersion": version_desc(CURRENT_VERSION),
                    "clientInfo": clients,
                },
            }
        path = export_path(inv, "metrics.json")
        totals = {"totalTps": tps, "totalOneDayNum": days}
        write_json(path, {"evaluateReport": report, "totalData": totals})
        jprintf(inv.out, "export %s success", path)
