"""The friendly `rmq topic` and `rmq cluster` verbs on the admin API (create, update and
delete with the default cluster, TOPIC or -t, perm, allocate, stats; broker-status, rt,
consume-stats, write-perm, the store clean-ups) against the two-broker cluster of
tests/integration/mqadmin_cluster.py: every verb's json fields, its table, and its failures."""

from __future__ import annotations

import json
import os
import subprocess
import time
from typing import Any

import pytest

from tests.cli_forkserver import run as cli_run
from tests.integration.mqadmin_cluster import BROKERS, CLUSTER, GROUP, QUEUES, TOPIC, MqadminCluster
from tests.procs import rmq_command


def rmq(cluster: MqadminCluster, *args: str) -> subprocess.CompletedProcess[str]:
    """`rmq ARGS -n <name server>`, stdin not a terminal, no NAMESRV_ADDR or RMQ_OUTPUT."""
    env = {k: v for k, v in os.environ.items() if k not in ("NAMESRV_ADDR", "RMQ_OUTPUT")}
    return cli_run(
        rmq_command([*args, "-n", cluster.namesrv_addr]),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        env={**env, "HOME": str(cluster.home)},
        check=False,
    )


def as_json(cluster: MqadminCluster, *args: str) -> Any:
    done = rmq(cluster, *args, "-o", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def table(cluster: MqadminCluster, *args: str) -> list[list[str]]:
    done = rmq(cluster, *args)
    assert done.returncode == 0, done.stderr
    return [line.split() for line in done.stdout.splitlines()]


def fails(cluster: MqadminCluster, code: int, *args: str) -> str:
    """Run a command that must fail with `code` and one line on stderr; that line."""
    done = rmq(cluster, *args)
    assert (done.returncode, done.stdout) == (code, ""), done
    assert len(done.stderr.splitlines()) == 1 and done.stderr.startswith("rmq: error: ")
    return done.stderr


def masters(cluster: MqadminCluster) -> list[str]:
    return sorted(cluster.broker_addrs.values())


def wait_route(cluster: MqadminCluster, topic: str) -> dict[str, Any]:
    """The topic's route once both brokers have registered it."""
    deadline = time.monotonic() + 30
    while True:
        done = rmq(cluster, "topic", "route", topic, "-o", "json")
        if done.returncode == 0:
            route: dict[str, Any] = json.loads(done.stdout)
            if len(route["brokerDatas"]) == len(BROKERS):
                return route
        assert time.monotonic() < deadline, done.stderr
        time.sleep(0.1)


# -- topic ------------------------------------------------------------------------------------


def test_create_defaults_to_the_only_cluster_and_refuses_an_existing_topic(
    mqadmin_cluster: MqadminCluster,
) -> None:
    created = as_json(mqadmin_cluster, "topic", "create", "FvNew", "-r", "2", "-w", "2")
    assert created["topic"] == "FvNew"
    assert (created["readQueueNums"], created["writeQueueNums"], created["perm"]) == (2, 2, 6)
    assert created["brokerAddrs"] == masters(mqadmin_cluster)
    route = wait_route(mqadmin_cluster, "FvNew")
    assert [q["readQueueNums"] for q in route["queueDatas"]] == [2, 2]
    again = fails(mqadmin_cluster, 1, "topic", "create", "-t", "FvNew")
    assert "topic 'FvNew' already exists" in again
    updated = as_json(mqadmin_cluster, "topic", "update", "FvNew", "-r", "3", "-w", "3")
    assert (updated["readQueueNums"], updated["brokerAddrs"]) == (3, masters(mqadmin_cluster))
    rows = table(mqadmin_cluster, "topic", "create", "FvNewTable")
    assert ["TOPIC", "FvNewTable"] in rows


def test_delete_defaults_to_the_only_cluster(mqadmin_cluster: MqadminCluster) -> None:
    as_json(mqadmin_cluster, "topic", "update", "-t", "FvDoomed")
    wait_route(mqadmin_cluster, "FvDoomed")
    plan = as_json(mqadmin_cluster, "topic", "delete", "FvDoomed", "--dry-run")
    assert plan[0]["target"] == f"every master of cluster {CLUSTER}"
    assert "refusing" in fails(mqadmin_cluster, 2, "topic", "delete", "FvDoomed")
    deleted = as_json(mqadmin_cluster, "topic", "delete", "-t", "FvDoomed", "--yes")
    assert (deleted["cluster"], deleted["brokerAddrs"]) == (CLUSTER, masters(mqadmin_cluster))
    assert "not found" in fails(mqadmin_cluster, 1, "topic", "route", "FvDoomed")


def test_topic_is_an_argument_or_t(mqadmin_cluster: MqadminCluster) -> None:
    for verb in ("route", "status", "clusters"):
        assert as_json(mqadmin_cluster, "topic", verb, TOPIC) == as_json(
            mqadmin_cluster, "topic", verb, "-t", TOPIC
        )
        assert "two topics" in fails(mqadmin_cluster, 2, "topic", verb, TOPIC, "-t", "Other")
        assert "missing topic" in fails(mqadmin_cluster, 2, "topic", verb)


def test_perm_keeps_the_queue_counts(mqadmin_cluster: MqadminCluster) -> None:
    as_json(mqadmin_cluster, "topic", "update", "FvPerm", "-r", "2", "-w", "2")
    wait_route(mqadmin_cluster, "FvPerm")
    plan = as_json(mqadmin_cluster, "topic", "perm", "FvPerm", "R", "--dry-run")
    assert [row["request"] for row in plan] == ["UPDATE_AND_CREATE_TOPIC"]
    assert plan[0]["extFields"]["perm"] == "4" and plan[0]["extFields"]["readQueueNums"] == "2"
    done = as_json(mqadmin_cluster, "topic", "perm", "FvPerm", "R")
    assert done == {
        "topic": "FvPerm",
        "perm": 4,
        "oldPerm": 6,
        "readQueueNums": 2,
        "writeQueueNums": 2,
        "brokerAddrs": masters(mqadmin_cluster),
        "unchanged": False,
    }
    addr = mqadmin_cluster.broker_addrs["broker-a"]
    same = as_json(mqadmin_cluster, "topic", "perm", "FvPerm", "4", "--broker", addr)
    assert (same["unchanged"], same["brokerAddrs"]) == (True, [])
    assert "not found" in fails(mqadmin_cluster, 1, "topic", "perm", "FvNoSuch", "RW")
    assert "perm" in fails(mqadmin_cluster, 2, "topic", "perm", "FvPerm", "RZ")


def test_allocate_shares_the_readable_queues(mqadmin_cluster: MqadminCluster) -> None:
    shares = as_json(mqadmin_cluster, "topic", "allocate", TOPIC, "--ip", "10.0.0.1,10.0.0.2")
    assert [row["client"] for row in shares] == ["10.0.0.1", "10.0.0.2"]
    assert [len(row["queues"]) for row in shares] == [QUEUES, QUEUES]
    every = {(q["brokerName"], q["queueId"]) for row in shares for q in row["queues"]}
    assert every == {(name, queue) for name in BROKERS for queue in range(QUEUES)}
    assert all(q["topic"] == TOPIC for row in shares for q in row["queues"])
    header, *rows = table(mqadmin_cluster, "topic", "allocate", "-t", TOPIC, "-i", "10.0.0.1")
    assert header == ["CLIENT", "QUEUES"] and rows[0][0] == "10.0.0.1"
    assert "--ip" in fails(mqadmin_cluster, 2, "topic", "allocate", TOPIC)
    assert "not found" in fails(mqadmin_cluster, 1, "topic", "allocate", "FvNoSuch", "-i", "x")


def test_stats_of_one_topic_and_of_all(mqadmin_cluster: MqadminCluster) -> None:
    (row,) = as_json(mqadmin_cluster, "topic", "stats", TOPIC)
    assert list(row) == [
        "topic", "group", "accumulation", "inTps", "outTps", "inMsg24Hour", "outMsg24Hour",
    ]  # fmt: skip
    assert (row["topic"], row["group"], row["accumulation"]) == (TOPIC, GROUP, 0)
    assert row["inTps"] >= 0 and row["outTps"] >= 0
    every = as_json(mqadmin_cluster, "topic", "stats")
    assert TOPIC in {r["topic"] for r in every}
    assert not any(r["topic"].startswith("%") for r in every)
    header = table(mqadmin_cluster, "topic", "stats", TOPIC)[0]
    assert header[:3] == ["TOPIC", "GROUP", "ACCUMULATION"]
    assert "not found" in fails(mqadmin_cluster, 1, "topic", "stats", "FvNoSuch")


# -- cluster ----------------------------------------------------------------------------------


def test_broker_status(mqadmin_cluster: MqadminCluster) -> None:
    rows = as_json(mqadmin_cluster, "cluster", "broker-status")
    assert {row["brokerAddr"] for row in rows} == set(masters(mqadmin_cluster))
    versions = {
        row["brokerAddr"]: row["value"] for row in rows if row["key"] == "brokerVersionDesc"
    }
    assert versions == dict.fromkeys(masters(mqadmin_cluster), "V4_9_8")
    addr = mqadmin_cluster.broker_addrs["broker-b"]
    one = as_json(mqadmin_cluster, "cluster", "broker-status", "--broker", addr)
    assert {row["brokerAddr"] for row in one} == {addr}
    assert [row["key"] for row in one] == sorted(row["key"] for row in one)
    assert table(mqadmin_cluster, "cluster", "broker-status")[0] == [
        "BROKER",
        "ADDR",
        "KEY",
        "VALUE",
    ]
    unknown = fails(mqadmin_cluster, 1, "cluster", "broker-status", "--cluster", "NoCluster")
    assert f"cluster 'NoCluster' is not known to the name server (known: {CLUSTER})" in unknown


def test_rt_sends_to_every_broker(mqadmin_cluster: MqadminCluster) -> None:
    rows = as_json(mqadmin_cluster, "cluster", "rt", "--amount", "3", "--size", "16")
    assert [(r["cluster"], r["brokerName"]) for r in rows] == [(CLUSTER, b) for b in BROKERS]
    assert all((r["successCount"], r["failCount"]) == (3, 0) for r in rows)
    assert all(r["rtMs"] >= 0 for r in rows)
    assert "not known" in fails(mqadmin_cluster, 1, "cluster", "rt", "--cluster", "NoCluster")


def test_consume_stats_show_the_group_caught_up(mqadmin_cluster: MqadminCluster) -> None:
    rows = as_json(mqadmin_cluster, "cluster", "consume-stats")
    mine = [r for r in rows if (r["topic"], r["group"]) == (TOPIC, GROUP)]
    assert sorted((r["brokerName"], r["queueId"]) for r in mine) == [
        (name, queue) for name in BROKERS for queue in range(QUEUES)
    ]
    assert all(r["lag"] == 0 and r["consumerOffset"] == r["brokerOffset"] == 1 for r in mine)
    assert {r["brokerAddr"] for r in mine} == set(masters(mqadmin_cluster))
    header = table(mqadmin_cluster, "cluster", "consume-stats")[0]
    assert header[:2] == ["TOPIC", "GROUP"] and header[-2:] == ["LAST", "TIME"]
    assert "cannot reach" in fails(
        mqadmin_cluster, 1, "cluster", "consume-stats", "--broker", "127.0.0.1:1"
    )


def _perm_of(cluster: MqadminCluster, broker: str) -> int:
    route = as_json(cluster, "topic", "route", TOPIC)
    perm: int = next(q["perm"] for q in route["queueDatas"] if q["brokerName"] == broker)
    return perm


def test_write_perm_wipe_and_add(mqadmin_cluster: MqadminCluster) -> None:
    plan = as_json(mqadmin_cluster, "cluster", "write-perm", "wipe", "broker-b", "--dry-run")
    assert plan == [
        {
            "request": "WIPE_WRITE_PERM_OF_BROKER",
            "code": 205,
            "target": f"name server {mqadmin_cluster.namesrv_addr}",
            "extFields": {"brokerName": "broker-b"},
        }
    ]
    assert "refusing" in fails(mqadmin_cluster, 2, "cluster", "write-perm", "wipe", "broker-b")
    (wiped,) = as_json(mqadmin_cluster, "cluster", "write-perm", "wipe", "broker-b", "--yes")
    try:
        assert wiped["namesrvAddr"] == mqadmin_cluster.namesrv_addr
        assert wiped["topicCount"] >= 1 and wiped["error"] is None
        assert _perm_of(mqadmin_cluster, "broker-b") == 4
    finally:
        (added,) = as_json(mqadmin_cluster, "cluster", "write-perm", "add", "broker-b")
    assert added["topicCount"] >= 1 and added["error"] is None
    assert _perm_of(mqadmin_cluster, "broker-b") == 6


@pytest.mark.parametrize(
    ("verb", "request_name"),
    [
        ("clean-expired-cq", "CLEAN_EXPIRED_CONSUMEQUEUE"),
        ("clean-unused-topic", "CLEAN_UNUSED_TOPIC"),
        ("delete-expired-commitlog", "DELETE_EXPIRED_COMMITLOG"),
    ],
)
def test_store_clean_ups(mqadmin_cluster: MqadminCluster, verb: str, request_name: str) -> None:
    (plan,) = as_json(mqadmin_cluster, "cluster", verb, "--dry-run")
    assert (plan["request"], plan["target"]) == (request_name, f"every broker of cluster {CLUSTER}")
    assert "refusing" in fails(mqadmin_cluster, 2, "cluster", verb)
    done = as_json(mqadmin_cluster, "cluster", verb, "--yes")
    assert done == {"request": request_name, "brokerAddrs": masters(mqadmin_cluster)}
    addr = mqadmin_cluster.broker_addrs["broker-a"]
    assert as_json(mqadmin_cluster, "cluster", verb, "--broker", addr, "-y")["brokerAddrs"] == [
        addr
    ]
    assert "not known" in fails(mqadmin_cluster, 1, "cluster", verb, "--cluster", "NoCluster", "-y")
    assert ["REQUEST", request_name] in table(mqadmin_cluster, "cluster", verb, "--yes")
    # the shared topic's queues survive the clean-up
    assert len(as_json(mqadmin_cluster, "topic", "status", TOPIC)) == len(BROKERS) * QUEUES
