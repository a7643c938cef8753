"""`rmq mqadmin` cluster, route, topic-list, config, KV, write-permission and broker-status
commands against rmq's own cluster (tests/integration/mqadmin_cluster.py: broker-a and
broker-b, `MqaTopic` on both, a consumer group with running members), and the dispatcher's
exit codes: a parse error, an unknown command and a failed command exit 1."""

from __future__ import annotations

import asyncio
import re
import subprocess

from rmq.client import api
from rmq.common import fastjson
from rmq.remoting.client import RemotingClient
from tests.integration.mqadmin_cluster import CLUSTER, GROUP, TOPIC, MqadminCluster
from tests.procs import rmq_command

SUBCOMMAND_EXCEPTION = "org.apache.rocketmq.tools.command.SubCommandException"


def lines(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines() if line.strip()]


def kv_value(cluster: MqadminCluster, namespace: str, key: str) -> str | None:
    async def get() -> str | None:
        remoting = RemotingClient()
        try:
            return await api.get_kv_config(remoting, cluster.namesrv_addr, namespace, key, 5.0)
        finally:
            await remoting.close()

    return asyncio.run(get())


def config_table(text: str) -> dict[str, str]:
    found = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=  ")
        if sep:
            found[key.strip()] = value
    return found


def test_cluster_list_shows_both_brokers_with_their_version(
    mqadmin_cluster: MqadminCluster,
) -> None:
    result = mqadmin_cluster.run("clusterList")
    assert result.returncode == 0, result.stderr
    header, *rows = lines(result.stdout)
    assert header[:5] == ["#Cluster", "Name", "#Broker", "Name", "#BID"]
    assert [row[:5] for row in rows] == [
        [CLUSTER, name, "0", mqadmin_cluster.broker_addrs[name], "V4_9_8"]
        for name in ("broker-a", "broker-b")
    ]
    for row in rows:
        assert re.fullmatch(r"\d+\.\d{2}\(\d+,\d+ms\)", row[5]), row
        assert re.fullmatch(r"\d+\.\d{4}", row[-1]), row


def test_cluster_list_more_stats_counts_today_s_puts(mqadmin_cluster: MqadminCluster) -> None:
    result = mqadmin_cluster.run("clusterList", "-m")
    assert result.returncode == 0, result.stderr
    header, *rows = lines(result.stdout)
    assert header[-1] == "#OutTotalToday"
    assert [row[:2] for row in rows] == [[CLUSTER, "broker-a"], [CLUSTER, "broker-b"]]
    # four messages went to each broker today, and the group consumed them
    assert all(int(row[4]) >= 4 and int(row[5]) >= 4 for row in rows), rows


def test_topic_list_names_topics_and_the_groups_consuming_them(
    mqadmin_cluster: MqadminCluster,
) -> None:
    plain = mqadmin_cluster.run("topicList")
    assert plain.returncode == 0, plain.stderr
    topics = plain.stdout.splitlines()
    assert {TOPIC, f"%RETRY%{GROUP}", "broker-a", "broker-b", CLUSTER} <= set(topics)
    by_cluster = mqadmin_cluster.run("topicList", "-c")
    assert by_cluster.returncode == 0, by_cluster.stderr
    rows = lines(by_cluster.stdout)
    assert rows[0] == ["#Cluster", "Name", "#Topic", "#Consumer", "Group"]
    assert [CLUSTER, TOPIC, GROUP] in rows
    assert not any(row[1].startswith("%RETRY%") for row in rows[1:])


def test_topic_route_as_json_and_as_a_list(mqadmin_cluster: MqadminCluster) -> None:
    as_json = mqadmin_cluster.run("topicRoute", "-t", TOPIC)
    assert as_json.returncode == 0, as_json.stderr
    route = fastjson.loads(as_json.stdout)
    assert sorted(data["brokerName"] for data in route["brokerDatas"]) == ["broker-a", "broker-b"]
    assert {data["readQueueNums"] for data in route["queueDatas"]} == {4}
    assert '\n\t"brokerDatas":[' in as_json.stdout  # fastjson's pretty form: tabs
    as_list = mqadmin_cluster.run("topicRoute", "-t", TOPIC, "-l")
    assert as_list.returncode == 0, as_list.stderr
    rows = lines(as_list.stdout)
    addr_a = mqadmin_cluster.broker_addrs["broker-a"]
    assert rows[1] == [CLUSTER, "broker-a", f"{{0={addr_a}}}", "4", "4", "6"]
    assert rows[-1] == ["Total:", "2", "8", "8"]


def test_topic_cluster_list(mqadmin_cluster: MqadminCluster) -> None:
    result = mqadmin_cluster.run("topicClusterList", "-t", TOPIC)
    assert (result.returncode, result.stdout) == (0, f"{CLUSTER}\n"), result.stderr


def test_name_server_config_read_and_updated(mqadmin_cluster: MqadminCluster) -> None:
    before = mqadmin_cluster.run("getNamesrvConfig")
    assert before.returncode == 0, before.stderr
    assert before.stdout.startswith(f"============{mqadmin_cluster.namesrv_addr}============\n")
    port = mqadmin_cluster.namesrv_addr.rsplit(":", 1)[1]
    assert config_table(before.stdout)["listenPort"] == port
    old = config_table(before.stdout)["productEnvName"]
    try:
        update = mqadmin_cluster.run("updateNamesrvConfig", "-k", "productEnvName", "-v", "MqaEnv")
        assert update.returncode == 0, update.stderr
        assert update.stdout == (
            f"update name server config success![{mqadmin_cluster.namesrv_addr}]\n"
            "productEnvName : MqaEnv\n"
        )
        after = mqadmin_cluster.run("getNamesrvConfig")
        assert config_table(after.stdout)["productEnvName"] == "MqaEnv"
    finally:
        mqadmin_cluster.run("updateNamesrvConfig", "-k", "productEnvName", "-v", old)


def test_kv_config_created_and_deleted(mqadmin_cluster: MqadminCluster) -> None:
    put = mqadmin_cluster.run("updateKvConfig", "-s", "MqaSpace", "-k", "MqaKey", "-v", " v1 ")
    assert (put.returncode, put.stdout) == (0, "create or update kv config to namespace success.\n")
    assert kv_value(mqadmin_cluster, "MqaSpace", "MqaKey") == "v1"  # trimmed as Java trims
    gone = mqadmin_cluster.run("deleteKvConfig", "-s", "MqaSpace", "-k", "MqaKey")
    assert (gone.returncode, gone.stdout) == (0, "delete kv config from namespace success.\n")
    assert kv_value(mqadmin_cluster, "MqaSpace", "MqaKey") is None


def route_perms(cluster: MqadminCluster) -> dict[str, int]:
    result = cluster.run("topicRoute", "-t", TOPIC)
    return {
        data["brokerName"]: data["perm"] for data in fastjson.loads(result.stdout)["queueDatas"]
    }


def test_write_perm_wiped_and_added_back(mqadmin_cluster: MqadminCluster) -> None:
    namesrv = mqadmin_cluster.namesrv_addr
    try:
        wipe = mqadmin_cluster.run("wipeWritePerm", "-b", "broker-b")
        assert wipe.returncode == 0, wipe.stderr
        match = re.fullmatch(
            rf"wipe write perm of broker\[broker-b\] in name server\[{namesrv}\] OK, (\d+)\n",
            wipe.stdout,
        )
        assert match is not None and int(match.group(1)) >= 1, wipe.stdout
        assert route_perms(mqadmin_cluster) == {"broker-a": 6, "broker-b": 4}
    finally:
        add = mqadmin_cluster.run("addWritePerm", "-b", "broker-b")
    assert add.returncode == 0, add.stderr
    assert add.stdout.startswith(
        f"add write perm of broker[broker-b] in name server[{namesrv}] OK, "
    )
    assert route_perms(mqadmin_cluster) == {"broker-a": 6, "broker-b": 6}


def test_broker_config_of_one_broker_and_of_the_cluster(mqadmin_cluster: MqadminCluster) -> None:
    addr_a, addr_b = (mqadmin_cluster.broker_addrs[name] for name in ("broker-a", "broker-b"))
    one = mqadmin_cluster.run("getBrokerConfig", "-b", addr_a)
    assert one.returncode == 0, one.stderr
    assert one.stdout.startswith(f"============{addr_a}============\n")
    assert config_table(one.stdout)["brokerName"] == "broker-a"
    assert one.stdout.endswith("\n\n")
    both = mqadmin_cluster.run("getBrokerConfig", "-c", CLUSTER)
    assert both.returncode == 0, both.stderr
    titles = sorted(line for line in both.stdout.splitlines() if line.startswith("====="))
    assert titles == sorted(f"============Master: {addr}============" for addr in (addr_a, addr_b))


def test_broker_config_updated_on_one_broker_and_on_the_cluster(
    mqadmin_cluster: MqadminCluster,
) -> None:
    addr_a, addr_b = (mqadmin_cluster.broker_addrs[name] for name in ("broker-a", "broker-b"))

    def value(addr: str) -> str:
        shown = mqadmin_cluster.run("getBrokerConfig", "-b", addr).stdout
        return config_table(shown)["flushIntervalConsumeQueue"]

    one = mqadmin_cluster.run(
        "updateBrokerConfig", "-b", addr_a, "-k", "flushIntervalConsumeQueue", "-v", "1500"
    )
    assert (one.returncode, one.stdout) == (0, f"update broker config success, {addr_a}\n")
    assert (value(addr_a), value(addr_b)) == ("1500", "1000")
    both = mqadmin_cluster.run(
        "updateBrokerConfig", "-c", CLUSTER, "-k", "flushIntervalConsumeQueue", "-v", "1000"
    )
    assert both.returncode == 0, both.stderr
    assert sorted(both.stdout.splitlines()) == sorted(
        f"update broker config success, {addr}" for addr in (addr_a, addr_b)
    )
    assert (value(addr_a), value(addr_b)) == ("1000", "1000")
    neither = mqadmin_cluster.run("updateBrokerConfig", "-k", "x", "-v", "y")
    assert neither.returncode == 0
    assert neither.stdout.startswith("usage: mqadmin updateBrokerConfig [-b <arg>] [-c <arg>]")


def test_broker_status_of_one_broker_and_of_the_cluster(mqadmin_cluster: MqadminCluster) -> None:
    addr_a = mqadmin_cluster.broker_addrs["broker-a"]
    one = mqadmin_cluster.run("brokerStatus", "-b", addr_a)
    assert one.returncode == 0, one.stderr
    table = dict(line.split(": ", 1) for line in one.stdout.splitlines())
    keys = [key.strip() for key in table]
    assert keys == sorted(keys)
    assert table["brokerVersionDesc".ljust(32)] == "V4_9_8"
    assert int(table["msgPutTotalTodayNow".ljust(32)]) >= 4
    both = mqadmin_cluster.run("brokerStatus", "-c", CLUSTER)
    assert both.returncode == 0, both.stderr
    prefixes = {line.split()[0] for line in both.stdout.splitlines()}
    assert prefixes == set(mqadmin_cluster.broker_addrs.values())


def test_cluster_rt_measures_sends_to_every_broker(mqadmin_cluster: MqadminCluster) -> None:
    argv = ["clusterRT", "-n", mqadmin_cluster.namesrv_addr, "-a", "3", "-s", "16", "-i", "60"]
    process = subprocess.Popen(
        rmq_command(["mqadmin", *argv]), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    try:
        header = process.stdout.readline()
        rows = [process.stdout.readline().split() for _ in mqadmin_cluster.broker_addrs]
    finally:
        process.kill()
        process.wait(timeout=30)
    assert header.split() == ["#Cluster", "Name", "#Broker", "Name", "#RT", "#successCount",
                              "#failCount"]  # fmt: skip
    assert sorted(row[1] for row in rows) == ["broker-a", "broker-b"]
    for row in rows:
        assert row[0] == CLUSTER and re.fullmatch(r"\d+\.\d\d", row[2]), row
        assert row[3:] == ["3", "0"], row


def test_failures_parse_errors_and_unknown_commands_exit_1(
    mqadmin_cluster: MqadminCluster,
) -> None:
    missing = mqadmin_cluster.run("topicRoute")
    assert missing.returncode == 1
    assert missing.stdout.startswith("usage: mqadmin topicRoute [-h] [-l] [-n <arg>] -t <arg>\n")
    unknown = mqadmin_cluster.run("noSuchCommand", namesrv=False)
    assert (unknown.returncode, unknown.stdout) == (1, "The sub command noSuchCommand not exist.\n")
    failed = mqadmin_cluster.run("topicRoute", "-t", "MqaNoSuchTopic")
    assert failed.returncode == 1
    assert failed.stderr.startswith(f"{SUBCOMMAND_EXCEPTION}: TopicRouteSubCommand command failed")
    # -h with the required options given prints the usage and exits 0; without them the
    # missing option is a parse error first, as in Commons-CLI
    helped = mqadmin_cluster.run("TOPICROUTE", "-h", "-t", TOPIC, namesrv=False)
    assert (helped.returncode, helped.stdout) == (0, missing.stdout)
    unhelped = mqadmin_cluster.run("topicroute", "-h", namesrv=False)
    assert (unhelped.returncode, unhelped.stdout) == (1, missing.stdout)
