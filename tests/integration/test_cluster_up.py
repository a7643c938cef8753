"""`rmq cluster up` with real processes: the layouts start, register under the right ids and
roles, carry messages, and stop as documented.

* 2m-noslave: the name server lists broker-a and broker-b as masters; messages sent with
  `rmq produce` spread over both and come back from `rmq consume`; Ctrl-C (SIGINT) exits
  130 and leaves no child running; the written files then run on their own (`rmq namesrv
  -c`, `rmq broker -c broker-a.properties`) on the store the cluster left, whose messages
  are still there.
* 2m-2s-async: four brokers, the slaves under id 1 of their master's name, each running
  the role its file gives (GET_BROKER_CONFIG); sends and reads work; SIGTERM exits 0.
* dledger: three brokers of one DLedger group, all registered under broker-a, one (the
  elected leader) as master, the printed rows holding the ids and roles the election gave;
  sends and reads work; SIGTERM exits 0.
* A child that dies (SIGKILL) is reported by name and the others are stopped (exit 1).
* A port in use stops the command before it writes or starts anything (exit 1).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from collections import Counter
from pathlib import Path
from typing import Any

from tests.cli_forkserver import run as cli_run
from tests.integration.cluster_up_process import (
    ClusterUp,
    clusters,
    free_cluster_ports,
    start_cluster,
)
from tests.procs import LOOPBACK, RmqProcesses, rmq_command, wait_registered

__all__ = ["clusters"]


def rmq(namesrv: str, *args: str, input: bytes = b"", timeout: float = 60) -> bytes:
    result = cli_run(
        [*rmq_command(args), "-n", namesrv],
        input=input,
        capture_output=True,
        timeout=timeout,
        env={key: value for key, value in os.environ.items() if not key.startswith("RMQ_")},
    )
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout


def ndjson(data: bytes) -> list[Any]:
    return [json.loads(line) for line in data.splitlines()]


def send(namesrv: str, topic: str, count: int) -> list[Any]:
    records = "".join(json.dumps({"body": f"m{n}"}) + "\n" for n in range(count)).encode()
    results = ndjson(rmq(namesrv, "produce", topic, input=records))
    assert {row["status"] for row in results} == {"SEND_OK"}
    return results


def registered(namesrv: str) -> dict[tuple[str, int], str]:
    rows = json.loads(rmq(namesrv, "cluster", "list", "-o", "json"))
    return {(row["brokerName"], row["brokerId"]): row["addr"] for row in rows}


def wait_gone(pids: list[int], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while any(Path(f"/proc/{pid}").exists() for pid in pids):
        assert time.monotonic() < deadline, f"still running: {pids}"
        time.sleep(0.05)


def test_2m_noslave_carries_messages_stops_on_ctrl_c_and_its_files_run_alone(
    clusters: list[ClusterUp], rmq_processes: RmqProcesses, tmp_path: Path
) -> None:
    cluster = start_cluster("2m-noslave", tmp_path)
    clusters.append(cluster)
    namesrv = cluster.namesrv_addr
    assert registered(namesrv) == {
        ("broker-a", 0): f"{LOOPBACK}:{cluster.base_port}",
        ("broker-b", 0): f"{LOOPBACK}:{cluster.base_port + 10}",
    }
    assert [(row["brokerName"], row["role"]) for row in cluster.rows] == [
        ("broker-a", "ASYNC_MASTER"),
        ("broker-b", "ASYNC_MASTER"),
    ]

    rmq(namesrv, "topic", "update", "Spread", "-r", "4", "-w", "4")
    results = send(namesrv, "Spread", 40)
    assert Counter(row["brokerName"] for row in results) == {"broker-a": 20, "broker-b": 20}
    consumed = ndjson(rmq(namesrv, "consume", "Spread", "-e"))
    assert sorted(record["body"] for record in consumed) == sorted(f"m{n}" for n in range(40))

    pids = cluster.child_pids()
    assert sorted(pids) == ["broker-a", "broker-b", "namesrv"]
    assert cluster.signal(signal.SIGINT) == 130, cluster.stderr()
    wait_gone(list(pids.values()))
    assert "stopping the brokers, then the name server" in cluster.stderr()

    # The files alone, on the store the cluster left.
    namesrv_process = rmq_processes.start(
        "namesrv",
        ["namesrv", "-c", str(cluster.directory / "namesrv.properties")],
        port=cluster.namesrv_port,
    )
    broker_a = rmq_processes.start(
        "broker-a",
        ["broker", "-c", str(cluster.directory / "broker-a.properties")],
        port=cluster.base_port,
    )
    wait_registered(namesrv, broker_a.addr, 30, broker_a)
    on_a = {row["msgId"] for row in results if row["brokerName"] == "broker-a"}
    again = ndjson(rmq(namesrv, "consume", "Spread", "-e", "--group", "AfterRestart"))
    assert {record["msgId"] for record in again} == on_a
    broker_a.stop_cleanly()
    namesrv_process.stop_cleanly()


def test_2m_2s_async_registers_masters_and_slaves_in_their_roles(
    clusters: list[ClusterUp], tmp_path: Path
) -> None:
    cluster = start_cluster("2m-2s-async", tmp_path)
    clusters.append(cluster)
    namesrv, base = cluster.namesrv_addr, cluster.base_port
    assert registered(namesrv) == {
        ("broker-a", 0): f"{LOOPBACK}:{base}",
        ("broker-a", 1): f"{LOOPBACK}:{base + 100}",
        ("broker-b", 0): f"{LOOPBACK}:{base + 10}",
        ("broker-b", 1): f"{LOOPBACK}:{base + 110}",
    }
    for name, role in (
        ("broker-a", "ASYNC_MASTER"),
        ("broker-a-s", "SLAVE"),
        ("broker-b", "ASYNC_MASTER"),
        ("broker-b-s", "SLAVE"),
    ):
        config = json.loads(
            rmq(namesrv, "broker-config", "get", "--broker", cluster.addr(name), "-o", "json")
        )[0]["config"]
        assert (config["brokerRole"], config["listenPort"]) == (
            role,
            cluster.addr(name).rpartition(":")[2],
        )

    rmq(namesrv, "topic", "update", "Pairs", "-r", "2", "-w", "2")
    results = send(namesrv, "Pairs", 20)
    assert {row["brokerName"] for row in results} == {"broker-a", "broker-b"}
    consumed = ndjson(rmq(namesrv, "consume", "Pairs", "-e"))
    assert Counter(record["msgId"] for record in consumed) == Counter(
        row["msgId"] for row in results
    )

    pids = cluster.child_pids()
    assert len(pids) == 5
    assert cluster.signal(signal.SIGTERM) == 0, cluster.stderr()
    wait_gone(list(pids.values()))


def test_a_child_that_dies_is_reported_and_the_others_stopped(
    clusters: list[ClusterUp], tmp_path: Path
) -> None:
    cluster = start_cluster("2m-noslave", tmp_path)
    clusters.append(cluster)
    pids = cluster.child_pids()
    os.kill(pids["broker-b"], signal.SIGKILL)
    assert cluster.popen.wait(60) == 1
    wait_gone(list(pids.values()))
    last = cluster.stderr().strip().splitlines()[-1]
    assert last.startswith(f"rmq: error: broker-b (pid {pids['broker-b']}) exited with code -9")
    assert f"see {cluster.directory / 'logs' / 'broker-b.log'}" in last


def test_a_port_in_use_stops_it_before_anything_is_written(tmp_path: Path) -> None:
    namesrv_port, base_port = free_cluster_ports("2m-2s-sync")
    directory = tmp_path / "cluster"
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind((LOOPBACK, base_port + 111))  # broker-b-s's HA port
        taken.listen()
        result = cli_run(
            rmq_command(
                [
                    *("cluster", "up", "2m-2s-sync", "--dir", str(directory)),
                    *("--namesrv-port", str(namesrv_port), "--base-port", str(base_port)),
                ]
            ),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 1
    assert result.stderr.startswith(
        f"rmq: error: port {base_port + 111}, broker-b-s's HA port (listenPort + 1), is not free"
    )
    assert "choose another --base-port" in result.stderr
    assert not directory.exists()


def test_dledger_elects_one_master_among_three_and_carries_messages(
    clusters: list[ClusterUp], tmp_path: Path
) -> None:
    cluster = start_cluster("dledger", tmp_path)
    clusters.append(cluster)
    namesrv, base = cluster.namesrv_addr, cluster.base_port
    nodes = {f"{LOOPBACK}:{base + 100 * i}" for i in range(3)}
    ids = registered(namesrv)
    assert {addr for (name, _), addr in ids.items() if name == "broker-a"} == nodes
    assert ("broker-a", 0) in ids
    assert sorted(row["role"] for row in cluster.rows) == ["FOLLOWER", "FOLLOWER", "LEADER"]
    assert {(row["brokerName"], row["brokerId"]): row["addr"] for row in cluster.rows} == ids
    roles = {
        row["addr"]: row["role"]
        for row in json.loads(rmq(namesrv, "cluster", "list", "-o", "json"))
    }
    assert roles[ids[("broker-a", 0)]] == "LEADER"

    rmq(namesrv, "topic", "update", "Votes", "-r", "2", "-w", "2")
    results = send(namesrv, "Votes", 10)
    consumed = ndjson(rmq(namesrv, "consume", "Votes", "-e"))
    assert Counter(record["msgId"] for record in consumed) == Counter(
        row["msgId"] for row in results
    )

    pids = cluster.child_pids()
    assert len(pids) == 4
    assert cluster.signal(signal.SIGTERM) == 0, cluster.stderr()
    wait_gone(list(pids.values()))
