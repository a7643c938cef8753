"""`rmq mqadmin` topic, group, order-conf, maintenance, statistics and export commands against
two rmq brokers with a running group (tests/integration/mqadmin_cluster.py), each output
checked field by field and each change checked through a second command.

Commands that change state work on topics and groups of their own (`GtTopic...`,
`GtGroup...`); the shared topic holds message n alone in queue n // 2 of broker-a (even n)
or broker-b (odd n), all consumed by the group.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.integration.mqadmin_cluster import (
    BROKERS,
    CLUSTER,
    GROUP,
    MESSAGES,
    QUEUES,
    TOPIC,
    MqadminCluster,
)


def _ok(cluster: MqadminCluster, command: str, *args: str) -> str:
    done = cluster.run(command, *args)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return done.stdout


def _masters(cluster: MqadminCluster) -> set[str]:
    return set(cluster.broker_addrs.values())


def _status_rows(text: str) -> list[list[str]]:
    lines = text.splitlines()
    assert lines[0].split("  ")[0] == "#Broker Name"
    return [re.split(r"\s{2,}", line.strip()) for line in lines[1:]]


def test_update_topic_on_the_cluster(mqadmin_cluster: MqadminCluster) -> None:
    out = _ok(mqadmin_cluster, "updateTopic", "-c", CLUSTER, "-t", "GtTopic1", "-r", "3", "-w", "3")
    *created, config = out.split("\n")
    assert {line for line in created} == {
        f"create topic to {addr} success." for addr in _masters(mqadmin_cluster)
    }
    assert config == (
        "TopicConfig [topicName=GtTopic1, readQueueNums=3, writeQueueNums=3, perm=RW-, "
        "topicFilterType=SINGLE_TAG, topicSysFlag=0, order=false]"
    )
    rows = _status_rows(_ok(mqadmin_cluster, "topicStatus", "-t", "GtTopic1"))
    assert [(row[0], row[1]) for row in rows] == [
        (name, str(queue)) for name in sorted(BROKERS) for queue in range(3)
    ]


def test_update_topic_on_one_broker_with_order(mqadmin_cluster: MqadminCluster) -> None:
    addr = mqadmin_cluster.broker_addrs["broker-a"]
    out = _ok(mqadmin_cluster, "updateTopic", "-b", addr, "-t", "GtOrder", "-w", "2", "-o", "true")
    assert out.startswith(
        f"set broker orderConf. isOrder=true, orderConf=[broker-a:2]create topic to {addr} "
        "success.\nTopicConfig [topicName=GtOrder, readQueueNums=8, writeQueueNums=2, "
    )
    assert out.endswith("order=true]")
    got = _ok(mqadmin_cluster, "updateOrderConf", "-t", "GtOrder", "-m", "get")
    assert got == "get orderConf success. topic=[GtOrder], orderConf=[broker-a:2] "


def test_order_conf_put_get_delete(mqadmin_cluster: MqadminCluster) -> None:
    conf = "broker-a:4;broker-b:4"
    put = _ok(mqadmin_cluster, "updateOrderConf", "-t", "GtConf", "-v", conf, "-m", "put")
    assert put == f"update orderConf success. topic=[GtConf], orderConf=[{conf}]"
    got = _ok(mqadmin_cluster, "updateOrderConf", "-t", "GtConf", "-m", "get")
    assert got == f"get orderConf success. topic=[GtConf], orderConf=[{conf}] "
    deleted = _ok(mqadmin_cluster, "updateOrderConf", "-t", "GtConf", "-m", "delete")
    assert deleted == "delete orderConf success. topic=[GtConf]"
    gone = mqadmin_cluster.run("updateOrderConf", "-t", "GtConf", "-m", "get")
    assert gone.returncode == 1 and gone.stdout == ""
    assert "UpdateOrderConfCommand command failed" in gone.stderr


def test_delete_topic(mqadmin_cluster: MqadminCluster) -> None:
    _ok(mqadmin_cluster, "updateTopic", "-c", CLUSTER, "-t", "GtDoomed")
    out = _ok(mqadmin_cluster, "deleteTopic", "-c", CLUSTER, "-t", "GtDoomed")
    assert out == (
        f"delete topic [GtDoomed] from cluster [{CLUSTER}] success.\n"
        "delete topic [GtDoomed] from NameServer success.\n"
    )
    status = mqadmin_cluster.run("topicStatus", "-t", "GtDoomed")
    assert status.returncode == 1
    assert "TopicStatusSubCommand command failed" in status.stderr


def test_update_topic_perm(mqadmin_cluster: MqadminCluster) -> None:
    _ok(mqadmin_cluster, "updateTopic", "-c", CLUSTER, "-t", "GtPerm", "-r", "2", "-w", "2")
    out = _ok(mqadmin_cluster, "updateTopicPerm", "-c", CLUSTER, "-t", "GtPerm", "-p", "4")
    assert set(out.splitlines()) == {
        f"update topic perm from 6 to 4 in {addr} success." for addr in _masters(mqadmin_cluster)
    }
    addr = mqadmin_cluster.broker_addrs["broker-b"]
    same = _ok(mqadmin_cluster, "updateTopicPerm", "-b", addr, "-t", "GtPerm", "-p", "4")
    assert same == "new perm equals to the old one!\n"
    back = _ok(mqadmin_cluster, "updateTopicPerm", "-b", addr, "-t", "GtPerm", "-p", "6")
    assert back == (
        f"update topic perm from 4 to 6 in {addr} success.\n"
        "TopicConfig [topicName=GtPerm, readQueueNums=2, writeQueueNums=2, perm=RW-, "
        "topicFilterType=SINGLE_TAG, topicSysFlag=0, order=false].\n"
    )
    stranger = mqadmin_cluster.run("updateTopicPerm", "-b", "10.9.9.9:1", "-t", "GtPerm", "-p", "2")
    assert stranger.returncode == 1
    assert stranger.stdout == "updateTopicPerm error broker not exit or broker is not master!.\n"


def test_topic_status(mqadmin_cluster: MqadminCluster) -> None:
    rows = _status_rows(_ok(mqadmin_cluster, "topicStatus", "-t", TOPIC))
    assert [(row[0], row[1]) for row in rows] == [
        (name, str(queue)) for name in sorted(BROKERS) for queue in range(QUEUES)
    ]
    for row in rows:
        assert row[2:4] == ["0", "1"]  # one message in every queue
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}", row[4])


def test_allocate_mq(mqadmin_cluster: MqadminCluster) -> None:
    out = _ok(mqadmin_cluster, "allocateMQ", "-t", TOPIC, "-i", "10.0.0.1,10.0.0.2,10.0.0.3")
    result = json.loads(out)["result"]
    assert set(result) == {"10.0.0.1", "10.0.0.2", "10.0.0.3"}
    shares = [result[ip] for ip in ("10.0.0.1", "10.0.0.2", "10.0.0.3")]
    assert [len(share) for share in shares] == [3, 3, 2]
    queues = [(mq["brokerName"], mq["queueId"]) for share in shares for mq in share]
    assert sorted(queues) == [(name, q) for name in sorted(BROKERS) for q in range(QUEUES)]
    assert all(mq["topic"] == TOPIC for share in shares for mq in share)


def test_sub_group_update_show_delete(mqadmin_cluster: MqadminCluster) -> None:
    out = _ok(
        mqadmin_cluster, "updateSubGroup", "-c", CLUSTER, "-g", "GtGroup", "-r", "5", "-q", "2"
    )
    *created, config = out.split("\n")
    assert set(created) == {
        f"create subscription group to {addr} success." for addr in _masters(mqadmin_cluster)
    }
    assert config == (
        "SubscriptionGroupConfig [groupName=GtGroup, consumeEnable=true, "
        "consumeFromMinEnable=false, consumeBroadcastEnable=false, retryQueueNums=2, "
        "retryMaxTimes=5, brokerId=0, whichBrokerWhenConsumeSlowly=1, "
        "notifyConsumerIdsChangedEnable=true]"
    )
    shown = _ok(mqadmin_cluster, "getConsumerConfig", "-g", "GtGroup")
    sections = re.findall(r"^=+(\w+):([\w-]+)=+$", shown, re.MULTILINE)
    assert sorted(sections) == [(CLUSTER, name) for name in sorted(BROKERS)]
    assert shown.count(f"{'retryMaxTimes':<40}=  5\n") == 2
    assert shown.count(f"{'consumeFromMinEnable':<40}=  false\n") == 2

    deleted = _ok(mqadmin_cluster, "deleteSubGroup", "-c", CLUSTER, "-g", "GtGroup")
    lines = deleted.splitlines()
    assert set(lines[:2]) == {
        f"delete subscription group [GtGroup] from broker [{addr}] in cluster [{CLUSTER}] success."
        for addr in _masters(mqadmin_cluster)
    }
    assert lines[2:] == [
        f"delete topic [%RETRY%GtGroup] from cluster [{CLUSTER}] success.",
        "delete topic [%RETRY%GtGroup] from NameServer success.",
        f"delete topic [%DLQ%GtGroup] from cluster [{CLUSTER}] success.",
        "delete topic [%DLQ%GtGroup] from NameServer success.",
    ]
    assert _ok(mqadmin_cluster, "getConsumerConfig", "-g", "GtGroup") == ""


def test_get_consumer_config_of_the_running_group(mqadmin_cluster: MqadminCluster) -> None:
    shown = _ok(mqadmin_cluster, "getConsumerConfig", "-g", GROUP)
    sections = re.findall(r"^=+(\w+):([\w-]+)=+$", shown, re.MULTILINE)
    assert sorted(sections) == [(CLUSTER, name) for name in sorted(BROKERS)]
    assert shown.count(f"{'groupName':<40}=  {GROUP}\n") == 2
    names = re.findall(r"^(\w+)\s+=  ", shown, re.MULTILINE)
    assert names[:9] == [
        "groupName",
        "consumeEnable",
        "consumeFromMinEnable",
        "consumeBroadcastEnable",
        "retryQueueNums",
        "retryMaxTimes",
        "brokerId",
        "whichBrokerWhenConsumeSlowly",
        "notifyConsumerIdsChangedEnable",
    ]


def test_store_maintenance(mqadmin_cluster: MqadminCluster) -> None:
    addr = mqadmin_cluster.broker_addrs["broker-a"]
    for command in ("cleanExpiredCQ", "deleteExpiredCommitLog", "cleanUnusedTopic"):
        assert _ok(mqadmin_cluster, command, "-c", CLUSTER) == "success"
        assert _ok(mqadmin_cluster, command, "-b", addr) == "success"
        assert _ok(mqadmin_cluster, command) == "success"
        unknown = mqadmin_cluster.run(command, "-c", "NoSuchCluster")
        assert unknown.returncode == 1 and unknown.stdout == "false"
    # the shared topic's queues survive the clean-ups
    rows = _status_rows(_ok(mqadmin_cluster, "topicStatus", "-t", TOPIC))
    assert len(rows) == len(BROKERS) * QUEUES


def test_stats_all(mqadmin_cluster: MqadminCluster) -> None:
    out = _ok(mqadmin_cluster, "statsAll", "-t", TOPIC)
    header, *rows = out.splitlines()
    assert header.split() == [
        "#Topic",
        "#Consumer",
        "Group",
        "#Accumulation",
        "#InTPS",
        "#OutTPS",
        "#InMsg24Hour",
        "#OutMsg24Hour",
    ]
    assert len(rows) == 1
    topic, group, accumulation, in_tps, out_tps, in_day, out_day = rows[0].split()
    assert (topic, group, accumulation) == (TOPIC, GROUP, "0")
    assert re.fullmatch(r"\d+\.\d\d", in_tps) and re.fullmatch(r"\d+\.\d\d", out_tps)
    # day counts come from the brokers' stats samples (every 10 s): 0 before the first one;
    # a group's gets count re-pulls after its rebalances too
    assert int(in_day) in (0, MESSAGES) and int(out_day) >= 0
    assert rows[0].index(GROUP) == 66  # "%-64s  %-64s"


def test_export_metadata(mqadmin_cluster: MqadminCluster, tmp_path: Path) -> None:
    out = _ok(mqadmin_cluster, "exportMetadata", "-c", CLUSTER, "-f", str(tmp_path))
    assert out == f"export {tmp_path}/metadata.json success\n"
    document = json.loads((tmp_path / "metadata.json").read_text())
    topic = document["topicConfigTable"][TOPIC]
    assert (topic["readQueueNums"], topic["writeQueueNums"]) == (2 * QUEUES, 2 * QUEUES)
    assert GROUP in document["subscriptionGroupTable"]
    assert not any(name.startswith("%") for name in document["topicConfigTable"])
    assert "TBW102" not in document["topicConfigTable"]
    assert isinstance(document["exportTime"], int)

    addr = mqadmin_cluster.broker_addrs["broker-b"]
    out = _ok(mqadmin_cluster, "exportMetadata", "-b", addr, "-t", "-s", "-f", str(tmp_path))
    assert out == f"export {tmp_path}/topic.json success"
    one = json.loads((tmp_path / "topic.json").read_text())
    assert one["topicConfigTable"][TOPIC]["readQueueNums"] == QUEUES
    assert f"%RETRY%{GROUP}" in one["topicConfigTable"]
    assert set(one["dataVersion"]) == {"counter", "timestamp"}


def test_export_configs(mqadmin_cluster: MqadminCluster, tmp_path: Path) -> None:
    out = _ok(mqadmin_cluster, "exportConfigs", "-c", CLUSTER, "-f", str(tmp_path))
    assert out == f"export {tmp_path}/configs.json success"
    document = json.loads((tmp_path / "configs.json").read_text())
    assert document["clusterScale"] == {
        "namesrvSize": 1,
        "masterBrokerSize": 2,
        "slaveBrokerSize": 0,
    }
    assert set(document["brokerConfigs"]) == set(BROKERS)
    for name, config in document["brokerConfigs"].items():
        assert config["brokerName"] == name
        assert config["brokerClusterName"] == CLUSTER
        assert config["brokerId"] == "0"
        assert len(config) == 16


def test_export_metrics(mqadmin_cluster: MqadminCluster, tmp_path: Path) -> None:
    out = _ok(mqadmin_cluster, "exportMetrics", "-c", CLUSTER, "-f", str(tmp_path))
    assert out == f"export {tmp_path}/metrics.json success"
    document = json.loads((tmp_path / "metrics.json").read_text())
    report = document["evaluateReport"]
    assert set(report) == set(BROKERS)
    for broker in report.values():
        quota = broker["runtimeQuota"]
        assert quota["topicSize"] >= 1 and quota["groupSize"] >= 1
        assert set(quota["tps"]) == {"normalInTps", "normalOutTps", "transInTps", "scheduleInTps"}
        assert broker["runtimeVersion"]["rocketmqVersion"] == "V4_9_8"
        assert broker["runtimeVersion"]["clientInfo"]  # the group's running members
    totals = document["totalData"]
    assert set(totals) == {"totalTps", "totalOneDayNum"}
    assert totals["totalOneDayNum"]["normalOneDayInNum"] == sum(
        broker["runtimeQuota"]["oneDayNum"]["normalOneDayInNum"] for broker in report.values()
    )
