"""Master/slave clusters from `rmq cluster up --keep-going`, with real processes, as a user
runs them: what issue 14 promises of replication, end to end.

* SYNC_MASTER: broker-a's master is killed with SIGKILL while `rmq produce` sends one
  message after another; every message it acknowledged is on the slave, and both
  `rmq consume` and Apache's C++ client read all of them from it.  A send straight to the
  slave is refused with SERVICE_NOT_AVAILABLE.
* ASYNC_MASTER under a steady 5,000 msg/s (batches from rmq's client): the slave's lag,
  sampled from the master's runtime info every 0.2 s, stays under one second of the
  traffic, and `rmq cluster broker-status` reports it.  The slave killed with SIGKILL and
  started again from its file asks for its own max offset and catches up byte for byte.
* 2m-2s: a running producer (`rmq produce`) and a running consumer group (`rmq consume -g`)
  keep working through a master's death: later sends all go to the other master, and the
  messages the group had not read yet from the dead master come from its slave.

`@pytest.mark.stress` runs the steady load for a minute instead of six seconds.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from rmq.remoting.bodies import KVTable, TopicConfigSerializeWrapper
from rmq.remoting.codes import RequestCode, ResponseCode
from tests.cli_forkserver import run as cli_run
from tests.integration.cluster_up_process import ClusterUp, clusters, start_cluster
from tests.interop.cpp_client import run_cpp
from tests.procs import RemotingSession, RmqProcesses, rmq_command, send_header

__all__ = ["clusters"]

KEEP_GOING = ("--keep-going",)


def rmq_env() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if not key.startswith("RMQ_")}


def rmq(namesrv: str, *args: str, timeout: float = 60) -> bytes:
    result = cli_run(
        [*rmq_command(args), "-n", namesrv], capture_output=True, timeout=timeout, env=rmq_env()
    )
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout


def ndjson(data: bytes) -> list[Any]:
    return [json.loads(line) for line in data.splitlines()]


def wait_for(what: str, condition: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {timeout}s"
        time.sleep(0.1)


@pytest.fixture
def session() -> Iterator[RemotingSession]:
    with RemotingSession(timeout=10) as remoting:
        yield remoting


def runtime_info(session: RemotingSession, addr: str) -> dict[str, str]:
    response = session.invoke(addr, RequestCode.GET_BROKER_RUNTIME_INFO)
    assert response.code == ResponseCode.SUCCESS, response.remark
    return dict(KVTable.decode(bytes(response.body or b"{}")).table)


def knows_topic(session: RemotingSession, addr: str, topic: str) -> bool:
    """Whether the broker's topic table has `topic` (a slave copies it every 10 s)."""
    response = session.invoke(addr, RequestCode.GET_ALL_TOPIC_CONFIG)
    assert response.code == ResponseCode.SUCCESS, response.remark
    return (
        topic
        in TopicConfigSerializeWrapper.decode(bytes(response.body or b"{}")).topic_config_table
    )


class Lines:
    """The lines a child writes to a pipe, collected by a thread (JSON-decoded)."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.rows: list[Any] = []
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: IO[bytes]) -> None:
        for line in stream:
            self.rows.append(json.loads(line))

    def wait_count(self, count: int, what: str, timeout: float = 60.0) -> None:
        wait_for(f"{what} ({len(self.rows)} of {count})", lambda: len(self.rows) >= count, timeout)

    def join(self, timeout: float = 60.0) -> None:
        self._thread.join(timeout)
        assert not self._thread.is_alive()


def start_rmq(namesrv: str, *args: str, stdin: int = subprocess.DEVNULL) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [*rmq_command(args), "-n", namesrv],
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=rmq_env(),
    )


def write_lines(stream: IO[bytes], first: int, count: int) -> None:
    for line in range(first, first + count):
        stream.write(json.dumps({"body": f"m{line}"}).encode() + b"\n")
    stream.flush()


# -- SYNC_MASTER: nothing acknowledged is lost ------------------------------------------------


def test_sync_master_killed_under_load_loses_no_acknowledged_message(
    clusters: list[ClusterUp], tmp_path: Path, session: RemotingSession
) -> None:
    cluster = start_cluster("2m-2s-sync", tmp_path, options=KEEP_GOING)
    clusters.append(cluster)
    namesrv, master, slave = (
        cluster.namesrv_addr,
        cluster.addr("broker-a"),
        cluster.addr("broker-a-s"),
    )
    rmq(namesrv, "topic", "update", "Acked", "--broker", master, "-r", "4", "-w", "4")

    producer = start_rmq(namesrv, "produce", "Acked", stdin=subprocess.PIPE)
    assert producer.stdin is not None and producer.stdout is not None
    results = Lines(producer.stdout)
    stop_writing = threading.Event()

    def keep_sending() -> None:
        assert producer.stdin is not None
        line = 1
        try:
            while not stop_writing.is_set():
                write_lines(producer.stdin, line, 10)
                line += 10
                time.sleep(0.005)
        except BrokenPipeError:  # the first failed send stops `rmq produce`
            pass

    writer = threading.Thread(target=keep_sending, daemon=True)
    writer.start()
    results.wait_count(200, "acknowledged sends before the kill")
    wait_for("the slave copies the topic", lambda: knows_topic(session, slave, "Acked"), 30)
    results.wait_count(len(results.rows) + 50, "sends under way at the kill")
    os.kill(cluster.child_pids()["broker-a"], signal.SIGKILL)
    assert producer.wait(60) == 1  # a send failed: broker-a has no master any more
    stop_writing.set()
    writer.join(10)
    results.join()
    acked = {f"m{row['line']}" for row in results.rows if row["status"] == "SEND_OK"}
    assert len(acked) == len(results.rows) >= 250
    wait_for("cluster up reports the death", lambda: "broker-a (pid" in cluster.stderr(), 30)

    # Read until every acknowledged message came (the slave may hold one more: stored and
    # replicated while its answer was lost with the master).
    reader = start_rmq(namesrv, "consume", "Acked", "-g", "FromTheSlave", "--from", "first")
    assert reader.stdout is not None
    consumed = Lines(reader.stdout)
    try:
        wait_for(
            "rmq consume reads every acknowledged message from the slave",
            lambda: {record["body"] for record in consumed.rows} >= acked,
        )
    finally:
        reader.send_signal(signal.SIGINT)
        reader.wait(30)
    assert {record["brokerName"] for record in consumed.rows} == {"broker-a"}

    cpp = run_cpp(
        "consume",
        {"namesrv": namesrv, "topic": "Acked", "count": len(acked), "linger": 3, "max_wait": 60},
        timeout=120,
    )
    assert {message["body"] for message in cpp.result["messages"]} >= acked, cpp.stderr

    header = send_header("Acked", {"WAIT": "true"}, producer_group="StraightToTheSlave")
    refused = session.invoke(slave, RequestCode.SEND_MESSAGE_V2, header, body=b"no")
    assert refused.code == ResponseCode.SERVICE_NOT_AVAILABLE, refused


# -- ASYNC_MASTER: the lag under a steady load, a slave restarted ----------------------------


def steady_load(namesrv: str, topic: str, rate: int, seconds: float) -> subprocess.Popen[bytes]:
    figures = (str(rate), str(seconds))
    return subprocess.Popen(
        [sys.executable, "-m", "tests.integration.paced_producer", namesrv, topic, *figures],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=rmq_env(),
    )


def finished(load: subprocess.Popen[bytes], timeout: float = 120.0) -> dict[str, float]:
    out, err = load.communicate(timeout=timeout)
    assert load.returncode == 0, err.decode()
    summary: dict[str, float] = json.loads(out)
    return summary


def commitlog_bytes(cluster: ClusterUp, broker: str, end: int) -> bytes:
    path = cluster.directory / "store" / broker / "commitlog" / f"{0:020d}"
    return path.read_bytes()[:end] if path.exists() else b""


def run_async_master_lag(
    clusters: list[ClusterUp],
    tmp_path: Path,
    session: RemotingSession,
    rmq_processes: RmqProcesses,
    seconds: float,
    spikes_allowed: float,
) -> None:
    rate = 5_000
    cluster = start_cluster(
        "2m-2s-async",
        tmp_path,
        options=KEEP_GOING,
        props={"mappedFileSizeCommitLog": 256 * 1024 * 1024},
    )
    clusters.append(cluster)
    namesrv, master = cluster.namesrv_addr, cluster.addr("broker-a")
    rmq(namesrv, "topic", "update", "Steady", "--broker", master, "-r", "4", "-w", "4")
    start = int(runtime_info(session, master)["commitLogMaxOffset"])

    load = steady_load(namesrv, "Steady", rate, seconds)
    lags = []
    while load.poll() is None:
        info = runtime_info(session, master)
        assert info.get("haConnectionCount") == "1", info
        lags.append(int(info["haSlaveFallBehindBytes"]))
        time.sleep(0.2)
    summary = finished(load)
    end = int(runtime_info(session, master)["commitLogMaxOffset"])
    assert summary["failed"] == 0
    assert summary["rate"] >= 0.9 * rate, summary  # the load was the steady rate asked for
    one_second = (end - start) / summary["seconds"]
    assert len(lags) >= seconds * 2
    # A slave starved of CPU for a moment (the suite runs on as many workers as cores) falls
    # behind for that moment; what must hold is that the lag does not stay there (below: once
    # the load ends the status reports it under a second again).
    over = [lag for lag in lags if lag >= one_second]
    assert len(over) <= spikes_allowed * len(lags), (over, len(lags), one_second)

    status = json.loads(rmq(namesrv, "cluster", "broker-status", "--broker", master, "-o", "json"))
    reported = {row["key"]: row["value"] for row in status}
    assert int(reported["haSlaveFallBehindBytes"]) < one_second
    assert reported["haConnectionCount"] == "1"
    wait_for(
        "the slave holds the master's commitlog",
        lambda: (
            commitlog_bytes(cluster, "broker-a-s", end) == commitlog_bytes(cluster, "broker-a", end)
        ),
    )

    # The slave killed and started again from its file asks for its own max offset.
    os.kill(cluster.child_pids()["broker-a-s"], signal.SIGKILL)
    wait_for("cluster up reports the slave's death", lambda: "broker-a-s (pid" in cluster.stderr())
    assert finished(steady_load(namesrv, "Steady", 1_000, 1))["failed"] == 0
    away_end = int(runtime_info(session, master)["commitLogMaxOffset"])
    slave = rmq_processes.start(
        "broker-a-s",
        ["broker", "-c", str(cluster.directory / "broker-a-s.properties")],
        port=int(cluster.addr("broker-a-s").rpartition(":")[2]),
    )
    wait_for(
        "the restarted slave catches up",
        lambda: (
            commitlog_bytes(cluster, "broker-a-s", away_end)
            == commitlog_bytes(cluster, "broker-a", away_end)
        ),
    )
    master_log = (cluster.directory / "logs" / "broker-a.log").read_text(encoding="utf-8")
    asked = [int(word) for word in re.findall(r"requests offset (\d+)", master_log)]
    assert asked[0] == 0  # the first connection, empty
    assert end <= asked[-1] < away_end  # the restart: from what it held, not from scratch
    slave.stop_cleanly()


def test_async_master_lag_stays_under_a_second_of_a_steady_load_and_a_slave_catches_up(
    clusters: list[ClusterUp],
    tmp_path: Path,
    session: RemotingSession,
    rmq_processes: RmqProcesses,
) -> None:
    run_async_master_lag(clusters, tmp_path, session, rmq_processes, seconds=6, spikes_allowed=0.2)


@pytest.mark.stress
@pytest.mark.skipif(os.environ.get("RMQ_STRESS") != "1", reason="set RMQ_STRESS=1 (make stress)")
def test_async_master_lag_stays_under_a_second_of_a_minute_of_steady_load(
    clusters: list[ClusterUp],
    tmp_path: Path,
    session: RemotingSession,
    rmq_processes: RmqProcesses,
) -> None:
    run_async_master_lag(clusters, tmp_path, session, rmq_processes, seconds=60, spikes_allowed=0.0)


# -- 2m-2s: a producer and a consumer group through a master's death -------------------------


def test_a_producer_and_a_consumer_group_keep_working_through_a_masters_death(
    clusters: list[ClusterUp], tmp_path: Path, session: RemotingSession
) -> None:
    cluster = start_cluster("2m-2s-sync", tmp_path, options=KEEP_GOING)
    clusters.append(cluster)
    namesrv = cluster.namesrv_addr
    rmq(namesrv, "topic", "update", "Failover", "-r", "4", "-w", "4")
    slaves = [cluster.addr("broker-a-s"), cluster.addr("broker-b-s")]
    wait_for(
        "the slaves copy the topic",
        lambda: all(knows_topic(session, slave, "Failover") for slave in slaves),
        30,
    )
    producer = start_rmq(namesrv, "produce", "Failover", stdin=subprocess.PIPE)
    consumer = start_rmq(namesrv, "consume", "Failover", "-g", "Survivors", "--from", "first")
    assert producer.stdin is not None and producer.stdout is not None
    assert consumer.stdout is not None
    sent, received = Lines(producer.stdout), Lines(consumer.stdout)
    try:
        write_lines(producer.stdin, 1, 40)
        sent.wait_count(40, "first sends")
        received.wait_count(40, "first messages consumed")

        # The group falls behind (stopped), broker-a's master dies holding unread messages.
        consumer.send_signal(signal.SIGSTOP)
        write_lines(producer.stdin, 41, 40)
        sent.wait_count(80, "sends while the group is stopped")
        unread_on_a = {
            f"m{row['line']}" for row in sent.rows[40:] if row["brokerName"] == "broker-a"
        }
        assert unread_on_a
        os.kill(cluster.child_pids()["broker-a"], signal.SIGKILL)
        wait_for("cluster up reports the death", lambda: "broker-a (pid" in cluster.stderr(), 30)

        write_lines(producer.stdin, 81, 40)
        sent.wait_count(120, "sends after the death")
        after = sent.rows[80:]
        assert {(row["status"], row["brokerName"]) for row in after} == {("SEND_OK", "broker-b")}
        assert producer.poll() is None  # still running, nothing failed

        consumer.send_signal(signal.SIGCONT)
        everything = {f"m{line}" for line in range(1, 121)}
        wait_for(
            "the group reads the rest, broker-a's from the slave",
            lambda: {record["body"] for record in received.rows} >= everything,
            90,
        )
        from_slave = [record for record in received.rows if record["body"] in unread_on_a]
        assert {record["brokerName"] for record in from_slave} == {"broker-a"}
    finally:
        consumer.send_signal(signal.SIGCONT)
        for process in (producer, consumer):
            process.send_signal(signal.SIGINT)
            process.wait(30)
