"""`rmq monitor` against rmq's own two-broker cluster with a running group
(tests/integration/mqadmin_cluster.py): the rows of a round in json and ndjson, the table,
stopping on SIGTERM, and the failure paths."""

from __future__ import annotations

import json
import signal
import subprocess

from tests.cli_forkserver import run as cli_run
from tests.integration.mqadmin_cluster import GROUP, MEMBERS, TOPIC, MqadminCluster
from tests.integration.test_friendly_config import as_json, rmq
from tests.procs import rmq_command


def test_monitor_one_round(mqadmin_cluster: MqadminCluster) -> None:
    rows = as_json(rmq(mqadmin_cluster, "monitor", "--rounds", "1", "-o", "json"))
    row = next(row for row in rows if row["group"] == GROUP and row["topic"] == TOPIC)
    assert row["round"] == 1
    assert row["timestamp"] > 0
    assert row["lag"] == 0
    assert row["singleQueueMaxLag"] == 0
    assert row["delayMs"] >= 0
    assert row["members"] == MEMBERS
    table = rmq(mqadmin_cluster, "monitor", "--rounds", "1")
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].startswith("round 1 at ")
    assert lines[1].split() == [
        "GROUP",
        "TOPIC",
        "LAG",
        "SINGLE",
        "QUEUE",
        "MAX",
        "LAG",
        "DELAY",
        "MS",
        "MEMBERS",
    ]
    assert next(line.split()[:4] for line in lines[2:] if line.split()[:2] == [GROUP, TOPIC]) == [
        GROUP,
        TOPIC,
        "0",
        "0",
    ]


def test_monitor_rounds_as_ndjson(mqadmin_cluster: MqadminCluster) -> None:
    done = rmq(mqadmin_cluster, "monitor", "--rounds", "2", "--interval", "0", "-o", "ndjson")
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    ours = [row for row in rows if row["group"] == GROUP and row["topic"] == TOPIC]
    assert [row["round"] for row in ours] == [1, 2]
    assert ours[0]["timestamp"] <= ours[1]["timestamp"]


def test_monitor_stops_on_sigterm(mqadmin_cluster: MqadminCluster) -> None:
    process = subprocess.Popen(
        rmq_command(
            ["monitor", "-n", mqadmin_cluster.namesrv_addr, "--interval", "3600", "-o", "ndjson"]
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        first = json.loads(process.stdout.readline())
        assert first["round"] == 1
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_monitor_failures(mqadmin_cluster: MqadminCluster) -> None:
    done = rmq(mqadmin_cluster, "monitor", "--rounds", "0")
    assert done.returncode == 2
    assert len(done.stderr.splitlines()) == 1
    done = cli_run(
        rmq_command(["monitor", "-n", "127.0.0.1:1", "--rounds", "1"]),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.splitlines()[0].startswith("rmq: error: cannot reach the server")
    assert len(done.stderr.splitlines()) == 1
