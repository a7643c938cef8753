"""`rmq mqadmin` consumer and producer commands against two rmq brokers with a running group
(tests/integration/mqadmin_cluster.py): progress, connections, status, producers, offset
clones and resets, each output checked field by field."""

from __future__ import annotations

import asyncio
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rmq.client import api
from rmq.remoting.bodies import MessageQueue
from rmq.remoting.client import RemotingClient
from tests.cli_forkserver import run as cli_run
from tests.integration.mqadmin_cluster import (
    BROKERS,
    CLUSTER,
    GROUP,
    MEMBERS,
    MESSAGES,
    QUEUES,
    TOPIC,
    MqadminCluster,
)
from tests.procs import rmq_command

PRODUCER_GROUP = "MqaLiveProducers"


def _rmq(cluster: MqadminCluster, *args: str, stdin: str | None = None) -> str:
    done = cli_run(
        rmq_command([*args, "-n", cluster.namesrv_addr]),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _ok(cluster: MqadminCluster, command: str, *args: str) -> list[str]:
    done = cluster.run(command, *args)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return done.stdout.splitlines()


def _columns(line: str) -> list[str]:
    return re.split(r"\s{2,}", line.strip())


def _committed(cluster: MqadminCluster, group: str, topic: str = TOPIC) -> dict[str, int]:
    """The group's committed offset per `<broker>:<queue>` of the topic (-1: none)."""

    async def ask() -> dict[str, int]:
        remoting = RemotingClient()
        try:
            offsets = {}
            for name, addr in cluster.broker_addrs.items():
                for queue_id in range(QUEUES):
                    mq = MessageQueue(topic, name, queue_id)
                    offset = await api.query_consumer_offset(remoting, addr, group, mq, 5.0)
                    offsets[f"{name}:{queue_id}"] = -1 if offset is None else offset
            return offsets
        finally:
            await remoting.close()

    return asyncio.run(ask())


@pytest.fixture
def live_producer(mqadmin_cluster: MqadminCluster) -> Iterator[str]:
    """A connected `rmq produce` of group PRODUCER_GROUP (it heartbeats while stdin is open);
    yields its client id as the brokers list it."""
    process = subprocess.Popen(
        rmq_command(["produce", TOPIC, "-n", mqadmin_cluster.namesrv_addr, "-g", PRODUCER_GROUP]),
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        client_id = ""
        for _ in range(200):
            done = mqadmin_cluster.run("producerConnection", "-g", PRODUCER_GROUP, "-t", TOPIC)
            if done.returncode == 0 and done.stdout:
                client_id = done.stdout.split()[1]
                break
            assert process.poll() is None, "rmq produce exited"
            time.sleep(0.2)
        assert client_id, "the producer never showed up on the brokers"
        yield client_id
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=30)


def test_consumer_progress_of_the_group(mqadmin_cluster: MqadminCluster) -> None:
    lines = _ok(mqadmin_cluster, "consumerProgress", "-g", GROUP)
    assert _columns(lines[0]) == [
        "#Topic",
        "#Broker Name",
        "#QID",
        "#Broker Offset",
        "#Consumer Offset",
        "#Diff",
        "#LastTime",
    ]
    rows = [line.split() for line in lines[1:] if line and not line.startswith(("Consume", "Diff"))]
    topic_rows = [row for row in rows if row[0] == TOPIC]
    assert [(row[1], int(row[2])) for row in topic_rows] == [
        (name, queue) for name in BROKERS for queue in range(QUEUES)
    ]
    assert all(row[3] == row[4] == "1" and row[5] == "0" for row in topic_rows)
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\d", row[6]) for row in topic_rows)
    assert {row[0] for row in rows} == {TOPIC, f"%RETRY%{GROUP}"}
    assert re.fullmatch(r"Consume TPS: \d+\.\d\d", lines[-2])
    assert lines[-1] == "Diff Total: 0"


def test_consumer_progress_with_client_ip(mqadmin_cluster: MqadminCluster) -> None:
    lines = _ok(mqadmin_cluster, "consumerProgress", "-g", GROUP, "-s", "true")
    assert "#Client IP" in lines[0]
    topic_rows = [line.split() for line in lines if line.startswith(TOPIC)]
    assert len(topic_rows) == len(BROKERS) * QUEUES
    assert all(re.fullmatch(r"[\d.]+", row[5]) for row in topic_rows), topic_rows


def test_consumer_progress_of_every_group(mqadmin_cluster: MqadminCluster) -> None:
    lines = _ok(mqadmin_cluster, "consumerProgress")
    assert _columns(lines[0]) == [
        "#Group",
        "#Count",
        "#Version",
        "#Type",
        "#Model",
        "#TPS",
        "#Diff Total",
    ]
    row = next(line.split() for line in lines[1:] if line.split()[0] == GROUP)
    assert row[1:5] == [str(MEMBERS), "V4_9_8", "PUSH", "CLUSTERING"]
    assert row[6] == "0"


def test_diff_total_after_consuming_four_of_ten(
    mqadmin_cluster: MqadminCluster, tmp_path: Path
) -> None:
    """The issue's acceptance line: 10 messages, `rmq consume -c 4`, Diff Total: 6."""
    topic, group = "MqaProgressTopic", "MqaProgressGroup"
    _rmq(
        mqadmin_cluster, "topic", "update", "-t", topic, "--cluster", CLUSTER, "-r", "4", "-w", "4"
    )
    records = "".join(f'{{"body":"m{n}"}}\n' for n in range(10))
    _rmq(mqadmin_cluster, "produce", topic, stdin=records)
    consumed = _rmq(mqadmin_cluster, "consume", topic, "-g", group, "--from", "first", "-c", "4")
    assert len(consumed.splitlines()) == 4
    lines = _ok(mqadmin_cluster, "consumerProgress", "-g", group)
    assert lines[-1] == "Diff Total: 6"
    # the group is offline now: skipAccumulatedMessage commits the ends directly
    skipped = _ok(mqadmin_cluster, "skipAccumulatedMessage", "-g", group, "-t", topic)
    assert _columns(skipped[0]) == [
        "#brokerName",
        "#queueId",
        "#brokerOffset",
        "#consumerOffset",
        "#timestampOffset",
        "#rollbackOffset",
    ]
    rows = [line.split() for line in skipped[1:]]
    assert sorted((row[0], int(row[1])) for row in rows) == [
        (name, queue) for name in BROKERS for queue in range(QUEUES)
    ]
    assert all(row[2] == row[4] == row[5] for row in rows)
    assert sum(int(row[2]) - int(row[3]) for row in rows) == 6
    assert _ok(mqadmin_cluster, "consumerProgress", "-g", group)[-1] == "Diff Total: 0"


def test_consumer_connection(mqadmin_cluster: MqadminCluster) -> None:
    lines = _ok(mqadmin_cluster, "consumerConnection", "-g", GROUP)
    assert _columns(lines[0]) == ["#ClientId", "#ClientAddr", "#Language", "#Version"]
    members = [line.split() for line in lines[1 : 1 + MEMBERS]]
    assert all(row[2:] == ["JAVA", "V4_9_8"] and "@" in row[0] for row in members)
    assert lines[1 + MEMBERS : 4 + MEMBERS] == [
        "",
        "Below is subscription:",
        "#Topic               #SubExpression",
    ]
    assert sorted(lines[4 + MEMBERS : 6 + MEMBERS]) == sorted(
        [f"{TOPIC:<20} *", f"{'%RETRY%' + GROUP:<20} *"]
    )
    assert lines[-3:] == [
        "ConsumeType: CONSUME_PASSIVELY",
        "MessageModel: CLUSTERING",
        "ConsumeFromWhere: CONSUME_FROM_FIRST_OFFSET",
    ]


def test_consumer_status_writes_each_members_running_info(
    mqadmin_cluster: MqadminCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    lines = _ok(mqadmin_cluster, "consumerStatus", "-g", GROUP)
    assert _columns(lines[0]) == ["#Index", "#ClientId", "#Version", "#ConsumerRunningInfoFile"]
    rows = [line.split() for line in lines[1 : 1 + MEMBERS]]
    assert [row[0] for row in rows] == ["1", "2"]
    for _, client_id, version, path in rows:
        assert version == "V4_9_8"
        assert path.endswith(f"/{client_id}")
        text = (tmp_path / path).read_text()
        assert text.startswith("#Consumer Properties#\n")
        assert f"consumerGroup                           : {GROUP}" in text
    assert lines[1 + MEMBERS :] == [
        "",
        "",
        "Same subscription in the same group of consumer",
        "",
        "Rebalance OK",
    ]
    one = _ok(mqadmin_cluster, "consumerStatus", "-g", GROUP, "-i", rows[0][1])
    assert one[0] == "#Consumer Properties#"
    assert "#Consumer RT&TPS#" in one


def test_producer_connection_and_producers(
    mqadmin_cluster: MqadminCluster, live_producer: str
) -> None:
    lines = _ok(mqadmin_cluster, "producerConnection", "-g", PRODUCER_GROUP, "-t", TOPIC)
    assert len(lines) == 1
    row = lines[0].split()
    assert row[:2] == ["0001", live_producer]
    assert re.fullmatch(r"127\.0\.0\.1:\d+", row[2])
    assert row[3:] == ["JAVA", "V4_9_8"]
    broker = mqadmin_cluster.broker_addrs[BROKERS[0]]
    producers = _ok(mqadmin_cluster, "producer", "-b", broker)
    mine = [line for line in producers if f"producer group ({PRODUCER_GROUP})" in line]
    assert len(mine) == 1
    assert re.fullmatch(
        rf"producer group \({PRODUCER_GROUP}\) instance : clientId={re.escape(live_producer)},"
        r"remoteIP=/127\.0\.0\.1:\d+, language=JAVA, version=409, lastUpdateTimestamp=\d+",
        mine[0],
    )


def test_broker_consume_stats(mqadmin_cluster: MqadminCluster) -> None:
    broker = mqadmin_cluster.broker_addrs[BROKERS[1]]
    lines = _ok(mqadmin_cluster, "brokerConsumeStats", "-b", broker)
    assert _columns(lines[0])[:4] == ["#Topic", "#Group", "#Broker Name", "#QID"]
    rows = [line.split() for line in lines[1:] if line.startswith(TOPIC)]
    assert [(row[1], row[2], row[3]) for row in rows] == [
        (GROUP, BROKERS[1], str(queue)) for queue in range(QUEUES)
    ]
    assert all(row[4:7] == ["1", "1", "0"] for row in rows)
    assert lines[-2:] == ["", "Diff Total: 0"]
    # -l 1 leaves out every queue without lag
    assert [
        line
        for line in _ok(mqadmin_cluster, "brokerConsumeStats", "-b", broker, "-l", "1")
        if line.startswith(TOPIC)
    ] == []


def test_clone_group_offset(mqadmin_cluster: MqadminCluster) -> None:
    done = mqadmin_cluster.run("cloneGroupOffset", "-s", GROUP, "-d", "MqaClonedGroup", "-t", TOPIC)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        f"clone group offset success. srcGroup[{GROUP}], destGroup=[MqaClonedGroup], topic[{TOPIC}]"
    )
    assert _committed(mqadmin_cluster, "MqaClonedGroup") == _committed(mqadmin_cluster, GROUP)
    assert sum(_committed(mqadmin_cluster, "MqaClonedGroup").values()) == MESSAGES


def test_reset_offset_by_time_to_now_through_the_members(mqadmin_cluster: MqadminCluster) -> None:
    lines = _ok(mqadmin_cluster, "resetOffsetByTime", "-g", GROUP, "-t", TOPIC, "-s", "now")
    assert lines[0] == (
        f"rollback consumer offset by specified group[{GROUP}], topic[{TOPIC}], force[true], "
        "timestamp(string)[now], timestamp(long)[-1]"
    )
    assert _columns(lines[1]) == ["#brokerName", "#queueId", "#offset"]
    rows = sorted((row[0], int(row[1]), int(row[2])) for row in map(str.split, lines[2:]))
    assert rows == [(name, queue, 1) for name in BROKERS for queue in range(QUEUES)]


def test_failures_exit_non_zero(mqadmin_cluster: MqadminCluster) -> None:
    done = mqadmin_cluster.run("consumerConnection", "-g", "MqaNobody")
    assert done.returncode == 1
    assert "ConsumerConnectionSubCommand command failed" in done.stderr
    done = mqadmin_cluster.run("resetOffsetByTime", "-g", GROUP, "-t", TOPIC, "-s", "yesterday")
    assert done.returncode == 1
    assert "ResetOffsetByTimeCommand command failed" in done.stderr


def test_start_monitoring_reports_each_group(mqadmin_cluster: MqadminCluster) -> None:
    """The first round comes 20 s after the start; the command runs until interrupted."""
    process = subprocess.Popen(
        rmq_command(["mqadmin", "startMonitoring", "-n", mqadmin_cluster.namesrv_addr]),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        report = []
        for line in process.stdout:
            report.append(line.rstrip("\n"))
            if line.endswith("endRound\n"):
                break
    finally:
        process.kill()
        process.wait(timeout=30)
    rule = "[MONITOR] ========================================="
    assert report[0] == rule + "beginRound"
    assert report[-1] == rule + "endRound"
    for topic in (TOPIC, f"%RETRY%{GROUP}"):
        assert (
            f"[MONITOR] reportUndoneMsgs: UndoneMsgs [consumerGroup={GROUP}, topic={topic}, "
            "undoneMsgsTotal=0, undoneMsgsSingleMQ=0, undoneMsgsDelayTimeMills=0]"
        ) in report
    assert not [line for line in report if "[NOTIFY]" in line]
