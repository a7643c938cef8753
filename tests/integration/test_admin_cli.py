"""`rmq topic ...` and `rmq cluster list` against a real two-broker cluster.

One `rmq namesrv` (with orderMessageEnable, so routes carry order confs) and two `rmq broker`
processes, broker-a and broker-b, in the default cluster; every command runs as
`python -m rmq ...` in a subprocess, its `-o json` output is checked field by field and its
table output for the rows a person would look for.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.headers import SendMessageRequestHeader
from tests.cli_forkserver import run as cli_run
from tests.procs import LOOPBACK, RemotingSession, RmqProcess, RmqProcesses, free_port

CLUSTER = "DefaultCluster"
CLUSTER_LIST_KEYS = [
    "cluster",
    "brokerName",
    "brokerId",
    "addr",
    "version",
    "inTps",
    "outTps",
    "sendQueueSize",
    "sendQueueHeadWaitMs",
    "pullQueueSize",
    "pullQueueHeadWaitMs",
    "pageCacheLockTimeMs",
    "earliestMessageTimestamp",
    "commitlogDiskRatio",
    "inTotalYesterday",
    "outTotalYesterday",
    "inTotalToday",
    "outTotalToday",
    "error",
    "role",
    "term",
    "committedIndex",
]


@dataclass
class Cluster:
    namesrv: RmqProcess
    broker_a: RmqProcess
    broker_b: RmqProcess
    env: dict[str, str]

    def rmq(self, *args: str, namesrv: str | None = None) -> subprocess.CompletedProcess[str]:
        """`python -m rmq ARGS -n <name server>` with stdin not a terminal."""
        return cli_run(
            [sys.executable, "-m", "rmq", *args, "-n", namesrv or self.namesrv.addr],
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def json(self, *args: str) -> Any:
        """The parsed `-o json` output of a command that must succeed."""
        result = self.rmq(*args, "-o", "json")
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    def route(self, topic: str, brokers: int) -> Any:
        """The topic's route once it lists `brokers` broker names (brokers re-register
        with the name server right after a topic change, not within the request)."""
        deadline = time.monotonic() + 10
        while True:
            result = self.rmq("topic", "route", topic, "-o", "json")
            if result.returncode == 0:
                route = json.loads(result.stdout)
                if len(route["brokerDatas"]) == brokers:
                    return route
            assert time.monotonic() < deadline, result.stderr
            time.sleep(0.1)


@pytest.fixture(scope="module")
def cluster(module_processes: RmqProcesses) -> Iterator[Cluster]:
    namesrv = module_processes.start_namesrv("admin-namesrv", props={"orderMessageEnable": True})
    broker_a = module_processes.start_broker("broker-a", namesrv=namesrv)
    broker_b = module_processes.start_broker("broker-b", namesrv=namesrv)
    home = module_processes.root / "cli-home"
    home.mkdir()
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("RMQ_") and name not in ("NAMESRV_ADDR", "XDG_CONFIG_HOME")
    }
    env["HOME"] = str(home)
    yield Cluster(namesrv, broker_a, broker_b, env)
    for process in (broker_a, broker_b, namesrv):
        process.stop_cleanly()


def send(broker: RmqProcess, topic: str, queue_id: int, count: int) -> None:
    """Store `count` messages in one queue with plain SEND_MESSAGE requests."""
    with RemotingSession() as session:
        for index in range(count):
            header = SendMessageRequestHeader(
                producer_group="admin-test",
                topic=topic,
                default_topic="TBW102",
                default_topic_queue_nums=4,
                queue_id=queue_id,
                sys_flag=0,
                born_timestamp=int(time.time() * 1000),
                flag=0,
            )
            body = f"message {index}".encode()
            response = session.invoke(broker.addr, RequestCode.SEND_MESSAGE, header, body=body)
            assert response.code == ResponseCode.SUCCESS, response.remark


def table_lines(result: subprocess.CompletedProcess[str]) -> list[list[str]]:
    assert result.returncode == 0, result.stderr
    return [line.split() for line in result.stdout.splitlines()]


# -- cluster list -----------------------------------------------------------------------------


def test_cluster_list_json_has_both_brokers_field_by_field(cluster: Cluster) -> None:
    rows = cluster.json("cluster", "list")
    assert [list(row) for row in rows] == [CLUSTER_LIST_KEYS] * 2
    assert [(row["brokerName"], row["addr"]) for row in rows] == [
        ("broker-a", cluster.broker_a.addr),
        ("broker-b", cluster.broker_b.addr),
    ]
    for row in rows:
        assert (row["cluster"], row["brokerId"], row["version"]) == (CLUSTER, 0, "V4_9_8")
        assert row["error"] is None
        assert (row["role"], row["term"], row["committedIndex"]) == ("MASTER", None, None)
        # A broker up for less than 11 s has no full 10 s TPS window yet: Apache (and rmq)
        # then report the word empty, which the client shows as null.
        for tps in (row["inTps"], row["outTps"]):
            assert tps is None or (isinstance(tps, float) and tps >= 0), row
        assert 0 < row["commitlogDiskRatio"] < 1
        for key in ("sendQueueSize", "pullQueueSize", "pageCacheLockTimeMs", "inTotalToday"):
            assert isinstance(row[key], int) and row[key] >= 0, key
        assert isinstance(row["earliestMessageTimestamp"], int)


def test_cluster_list_table_has_a_row_per_broker(cluster: Cluster) -> None:
    header, *rows = table_lines(cluster.rmq("cluster", "list"))
    assert header[:5] == ["CLUSTER", "BROKER", "NAME", "BROKER", "ID"]
    assert [row[:4] for row in rows] == [
        [CLUSTER, "broker-a", "0", cluster.broker_a.addr],
        [CLUSTER, "broker-b", "0", cluster.broker_b.addr],
    ]
    wide_header = table_lines(cluster.rmq("cluster", "list", "-o", "wide"))[0]
    assert wide_header[-1] == "ERROR"


def test_cluster_list_ndjson_is_one_broker_per_line(cluster: Cluster) -> None:
    result = cluster.rmq("cluster", "list", "-o", "ndjson")
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [row["brokerName"] for row in rows] == ["broker-a", "broker-b"]


# -- topic update, route, list, clusters ------------------------------------------------------


def test_update_on_the_cluster_creates_the_topic_on_both_masters(cluster: Cluster) -> None:
    topic = "AdminClusterTopic"
    update = cluster.json(
        "topic", "update", "-t", topic, "--cluster", CLUSTER, "-r", "4", "-w", "2", "--order"
    )
    assert update == {
        "topic": topic,
        "readQueueNums": 4,
        "writeQueueNums": 2,
        "perm": 6,
        "topicFilterType": "SINGLE_TAG",
        "topicSysFlag": 0,
        "order": True,
        "brokerAddrs": sorted([cluster.broker_a.addr, cluster.broker_b.addr]),
        "orderConf": "broker-a:2;broker-b:2",
    }
    route = cluster.route(topic, brokers=2)
    assert route == {
        "topic": topic,
        "orderTopicConf": "broker-a:2;broker-b:2",
        "brokerDatas": [
            {
                "cluster": CLUSTER,
                "brokerName": "broker-a",
                "brokerAddrs": {"0": cluster.broker_a.addr},
            },
            {
                "cluster": CLUSTER,
                "brokerName": "broker-b",
                "brokerAddrs": {"0": cluster.broker_b.addr},
            },
        ],
        "queueDatas": [
            {
                "brokerName": name,
                "readQueueNums": 4,
                "writeQueueNums": 2,
                "perm": 6,
                "topicSysFlag": 0,
            }
            for name in ("broker-a", "broker-b")
        ],
        "filterServerTable": {},
    }
    assert cluster.json("topic", "clusters", topic) == [{"cluster": CLUSTER}]
    assert {"topic": topic, "clusters": [CLUSTER]} in cluster.json("topic", "list")
    in_cluster = cluster.json("topic", "list", "--cluster", CLUSTER)
    assert {"topic": topic, "clusters": [CLUSTER]} in in_cluster
    assert [row["topic"] for row in in_cluster] == sorted(row["topic"] for row in in_cluster)


def test_update_on_one_broker_with_a_letter_perm(cluster: Cluster) -> None:
    topic = "AdminBrokerTopic"
    update = cluster.json(
        "topic", "update", "-t", topic, "--broker", cluster.broker_a.addr, "-p", "R"
    )
    assert (update["perm"], update["readQueueNums"], update["writeQueueNums"]) == (4, 8, 8)
    assert (update["brokerAddrs"], update["orderConf"]) == ([cluster.broker_a.addr], None)
    route = cluster.route(topic, brokers=1)
    assert route["orderTopicConf"] is None
    assert route["queueDatas"] == [
        {
            "brokerName": "broker-a",
            "readQueueNums": 8,
            "writeQueueNums": 8,
            "perm": 4,
            "topicSysFlag": 0,
        }
    ]
    header, *rows = table_lines(cluster.rmq("topic", "route", topic))
    assert header[:4] == ["CLUSTER", "BROKER", "NAME", "BROKER"]
    assert rows == [[CLUSTER, "broker-a", f"0={cluster.broker_a.addr}", "8", "8", "4"]]


def test_topic_list_table_shows_topics_with_their_clusters(cluster: Cluster) -> None:
    cluster.json("topic", "update", "-t", "AdminListed", "--broker", cluster.broker_b.addr)
    cluster.route("AdminListed", brokers=1)
    header, *rows = table_lines(cluster.rmq("topic", "list"))
    assert header == ["TOPIC", "CLUSTERS"]
    assert ["AdminListed", CLUSTER] in rows
    assert ["broker-a", CLUSTER] not in rows  # a broker's own topic is shown only with --all
    header, *rows = table_lines(cluster.rmq("topic", "list", "--all"))
    assert ["broker-a", CLUSTER] in rows  # every broker registers a topic named after itself


# -- topic status -----------------------------------------------------------------------------


def test_status_reports_queue_offsets_and_last_store_time(cluster: Cluster) -> None:
    topic = "AdminStatusTopic"
    cluster.json(
        "topic", "update", "-t", topic, "--broker", cluster.broker_b.addr, "-r", "2", "-w", "2"
    )
    cluster.route(topic, brokers=1)
    before = int(time.time() * 1000)
    send(cluster.broker_b, topic, queue_id=1, count=3)
    after = int(time.time() * 1000)
    empty, filled = cluster.json("topic", "status", topic)
    assert empty == {
        "brokerName": "broker-b",
        "queueId": 0,
        "minOffset": 0,
        "maxOffset": 0,
        "lastUpdateTimestamp": 0,
        "brokerAddr": cluster.broker_b.addr,
    }
    assert {key: filled[key] for key in ("brokerName", "queueId", "minOffset", "maxOffset")} == {
        "brokerName": "broker-b",
        "queueId": 1,
        "minOffset": 0,
        "maxOffset": 3,
    }
    assert before <= filled["lastUpdateTimestamp"] <= after
    header, first, second = table_lines(cluster.rmq("topic", "status", topic))
    assert header[-2:] == ["LAST", "UPDATED"]
    assert first == ["broker-b", "0", "0", "0"]
    assert second[:4] == ["broker-b", "1", "0", "3"]
    assert second[4] == time.strftime(
        "%Y-%m-%d", time.localtime(filled["lastUpdateTimestamp"] / 1000)
    )


# -- topic describe ---------------------------------------------------------------------------


def test_describe_shows_route_and_queue_offsets_together(cluster: Cluster) -> None:
    topic = "AdminDescribeTopic"
    cluster.json("topic", "update", "-t", topic, "--cluster", CLUSTER, "-r", "2", "-w", "2")
    cluster.route(topic, brokers=2)
    send(cluster.broker_a, topic, queue_id=1, count=2)
    send(cluster.broker_b, topic, queue_id=0, count=3)
    data = cluster.json("topic", "describe", topic)
    assert {key: value for key, value in data.items() if key not in ("route", "queues")} == {
        "topic": topic,
        "clusters": [CLUSTER],
        "brokers": 2,
        "readQueueNums": 4,
        "writeQueueNums": 4,
        "perm": 6,
        "order": False,
        "messages": 5,
    }
    assert data["route"] == cluster.json("topic", "route", topic)
    status = cluster.json("topic", "status", topic)
    assert data["queues"] == status
    assert [(q["brokerName"], q["queueId"], q["maxOffset"]) for q in status] == [
        ("broker-a", 0, 0),
        ("broker-a", 1, 2),
        ("broker-b", 0, 3),
        ("broker-b", 1, 0),
    ]
    lines = table_lines(cluster.rmq("topic", "describe", "-t", topic))
    assert lines[:8] == [
        ["TOPIC", topic],
        ["CLUSTERS", CLUSTER],
        ["BROKERS", "2"],
        ["READ", "QUEUE", "NUMS", "4"],
        ["WRITE", "QUEUE", "NUMS", "4"],
        ["PERM", "6"],
        ["ORDER", "false"],
        ["MESSAGES", "5"],
    ]
    assert ["BROKERS"] in lines and ["QUEUES"] in lines
    assert [CLUSTER, "broker-b", f"0={cluster.broker_b.addr}", "2", "2", "6"] in lines
    queue_rows = [line[:4] for line in lines if line[:2] == ["broker-b", "0"]]
    assert queue_rows[-1] == ["broker-b", "0", "0", "3"]
    unknown = cluster.rmq("topic", "describe", "NoSuchTopic")
    assert unknown.returncode == 1 and "topic 'NoSuchTopic' not found" in unknown.stderr


# -- delete -----------------------------------------------------------------------------------


def test_delete_removes_the_topic_from_both_brokers_and_the_name_server(cluster: Cluster) -> None:
    topic = "AdminDeletedTopic"
    cluster.json("topic", "update", "-t", topic, "--cluster", CLUSTER)
    cluster.route(topic, brokers=2)
    refused = cluster.rmq("topic", "delete", topic, "--cluster", CLUSTER)
    assert refused.returncode == 2
    assert "without confirmation; pass --yes" in refused.stderr
    cluster.route(topic, brokers=2)

    deleted = cluster.json("topic", "delete", topic, "--cluster", CLUSTER, "--yes")
    assert deleted == {
        "topic": topic,
        "cluster": CLUSTER,
        "brokerAddrs": sorted([cluster.broker_a.addr, cluster.broker_b.addr]),
        "namesrvAddrs": [cluster.namesrv.addr],
    }
    gone = cluster.rmq("topic", "route", topic)
    assert gone.returncode == 1
    assert f"topic '{topic}' not found" in gone.stderr
    assert topic not in [row["topic"] for row in cluster.json("topic", "list")]
    status = cluster.rmq("topic", "status", topic)
    assert status.returncode == 1


# -- dry runs ---------------------------------------------------------------------------------


def test_dry_run_update_prints_the_request_and_sends_nothing(cluster: Cluster) -> None:
    topic = "AdminDryRunTopic"
    plan = cluster.json(
        "topic", "update", "-t", topic, "--broker", cluster.broker_a.addr, "--dry-run"
    )
    assert plan == [
        {
            "request": "UPDATE_AND_CREATE_TOPIC",
            "code": 17,
            "target": f"broker {cluster.broker_a.addr}",
            "extFields": {
                "topic": topic,
                "defaultTopic": "TBW102",
                "readQueueNums": "8",
                "writeQueueNums": "8",
                "perm": "6",
                "topicFilterType": "SINGLE_TAG",
                "topicSysFlag": "0",
                "order": "false",
            },
        }
    ]
    # A real update sent after the dry run: once its route shows, the broker has registered
    # its whole topic table, which would hold the dry run's topic had it been sent.
    marker = "AdminDryRunMarker"
    cluster.json("topic", "update", "-t", marker, "--broker", cluster.broker_a.addr)
    cluster.route(marker, brokers=1)
    assert cluster.rmq("topic", "route", topic).returncode == 1
    assert topic not in [row["topic"] for row in cluster.json("topic", "list")]


def test_dry_run_delete_keeps_the_topic(cluster: Cluster) -> None:
    topic = "AdminKeptTopic"
    cluster.json("topic", "update", "-t", topic, "--cluster", CLUSTER)
    cluster.route(topic, brokers=2)
    result = cluster.rmq("topic", "delete", topic, "--cluster", CLUSTER, "--dry-run", "-o", "json")
    assert result.returncode == 0, result.stderr
    assert "nothing was sent" in result.stderr
    plan = json.loads(result.stdout)
    assert [(row["request"], row["code"], row["target"]) for row in plan] == [
        ("DELETE_TOPIC_IN_BROKER", 215, f"every master of cluster {CLUSTER}"),
        ("DELETE_TOPIC_IN_NAMESRV", 216, f"name server {cluster.namesrv.addr}"),
    ]
    assert plan[1]["extFields"] == {"topic": topic, "clusterName": CLUSTER}
    # As above: the marker's route proves both brokers registered after the dry run.
    marker = "AdminKeptMarker"
    cluster.json("topic", "update", "-t", marker, "--cluster", CLUSTER)
    cluster.route(marker, brokers=2)
    assert len(cluster.json("topic", "route", topic)["brokerDatas"]) == 2
    assert topic in [row["topic"] for row in cluster.json("topic", "list")]


def test_dry_run_does_not_even_connect(cluster: Cluster) -> None:
    nowhere = f"{LOOPBACK}:{free_port()}"
    result = cluster.rmq(
        "topic", "update", "-t", "X", "--cluster", CLUSTER, "--order", "--dry-run", namesrv=nowhere
    )
    assert result.returncode == 0, result.stderr
    assert "PUT_KV_CONFIG" in result.stdout and nowhere in result.stdout


# -- errors -----------------------------------------------------------------------------------


def test_route_of_an_unknown_topic_fails_with_a_clear_message(cluster: Cluster) -> None:
    result = cluster.rmq("topic", "route", "NoSuchTopic")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.splitlines() == [
        "rmq: error: topic 'NoSuchTopic' not found: the name server has no route for it; "
        "check the name with 'rmq topic list', or create it with 'rmq topic update'"
    ]


@pytest.mark.parametrize(
    "args",
    [
        ("-t", "T", "--broker", "127.0.0.1:1", "-p", "RZ"),
        ("-t", "T", "--broker", "127.0.0.1:1", "-p", "9"),
        ("-t", "T", "--broker", "127.0.0.1:1", "--cluster", CLUSTER),
        ("T", "-t", "U", "--cluster", CLUSTER),
        ("--cluster", CLUSTER),
        ("-t", "bad topic", "--cluster", CLUSTER),
        ("-t", "T", "--cluster", CLUSTER, "-r", "-1"),
    ],
)
def test_bad_update_usage_exits_2_before_sending(cluster: Cluster, args: tuple[str, ...]) -> None:
    result = cluster.rmq("topic", "update", *args)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("rmq: error: ") and len(result.stderr.splitlines()) == 1


def test_unknown_cluster_fails_naming_the_known_ones(cluster: Cluster) -> None:
    result = cluster.rmq("topic", "update", "-t", "T", "--cluster", "NoCluster")
    assert result.returncode == 1
    assert "cluster 'NoCluster' is not known to the name server (known: DefaultCluster)" in (
        result.stderr
    )
    assert cluster.rmq("topic", "list", "--cluster", "NoCluster").returncode == 1


def test_unreachable_servers_fail_with_exit_1(cluster: Cluster) -> None:
    nowhere = f"{LOOPBACK}:{free_port()}"
    result = cluster.rmq("cluster", "list", namesrv=nowhere)
    assert result.returncode == 1
    assert "cannot reach the server" in result.stderr and nowhere in result.stderr
    dead_broker = cluster.rmq("topic", "update", "-t", "T", "--broker", nowhere)
    assert dead_broker.returncode == 1
    assert f"create or update topic 'T': failed on {nowhere}" in dead_broker.stderr


def test_status_of_an_unknown_topic_fails(cluster: Cluster) -> None:
    result = cluster.rmq("topic", "status", "NoSuchTopic")
    assert result.returncode == 1
    assert "topic 'NoSuchTopic' not found" in result.stderr


def test_acl_list_of_a_broker_without_the_request_says_so(cluster: Cluster) -> None:
    """A broker that does not serve GET_BROKER_CLUSTER_ACL_CONFIG (54): rmq's without ACL,
    as Apache's since 4.9.8."""
    result = cluster.rmq("acl", "list", "--broker", cluster.broker_a.addr)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.splitlines() == [
        f"rmq: error: broker {cluster.broker_a.addr} does not list accounts: it does not serve "
        "GET_BROKER_CLUSTER_ACL_CONFIG (54), as Apache's brokers since 4.9.8 and rmq's without "
        "aclEnable=true; see 'rmq acl list --versions'"
    ]
