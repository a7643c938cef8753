"""A real `rmq broker` whose store is on a small tmpfs that fills up.

Each test mounts its own tmpfs (root only: skipped with the reason otherwise), starts a broker
on it, fills the file system with a filler file, and checks that sends are refused with code
14 (SERVICE_NOT_AVAILABLE) with one ERROR line for the episode, that sends succeed again once
the filler is deleted, and that every message answered SEND_OK can be pulled.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand
from tests.brokercalls import pull_bodies, query_by_key
from tests.cli_forkserver import run as cli_run
from tests.procs import (
    RemotingSession,
    RmqProcess,
    RmqProcesses,
    rmq_command,
    send_header,
)
from tests.tmpfs import fill, mounted_tmpfs

MIB = 1024 * 1024


@pytest.fixture
def small_disk(rmq_processes: RmqProcesses, tmp_path: Path) -> Iterator[Path]:
    """A 96 MiB tmpfs; the test's processes are killed before it is unmounted."""
    with mounted_tmpfs(tmp_path / "disk", 96) as mount:
        try:
            yield mount
        finally:
            rmq_processes.kill_all()


def start_broker(processes: RmqProcesses, disk: Path, **props: object) -> RmqProcess:
    return processes.start_broker(
        "full-disk-broker",
        namesrv=None,
        props={
            "storePathRootDir": str(disk / "store"),
            "mappedFileSizeCommitLog": 16 * MIB,
            "maxHashSlotNum": 5_000,
            "maxIndexNum": 20_000,
            **props,
        },
    )


def send(session: RemotingSession, broker: RmqProcess, topic: str, body: bytes) -> RemotingCommand:
    header = send_header(topic, {"WAIT": "true"}, producer_group="FullDiskProducer")
    return session.invoke(broker.addr, RequestCode.SEND_MESSAGE_V2, header, body=body)


def send_until_taken(
    session: RemotingSession, broker: RmqProcess, topic: str, body: bytes
) -> RemotingCommand:
    """Send until the broker takes the message (it looks at the disk again within a second)."""
    deadline = time.monotonic() + 30
    while True:
        answer = send(session, broker, topic, body)
        if answer.code == ResponseCode.SUCCESS or time.monotonic() > deadline:
            return answer
        assert answer.code == ResponseCode.SERVICE_NOT_AVAILABLE, answer.remark
        time.sleep(0.05)


def refusal_errors(broker: RmqProcess) -> list[str]:
    return [line for line in broker.log_text().splitlines() if "refusing puts" in line]


def test_a_commitlog_file_that_cannot_be_created_refuses_sends_until_space_is_back(
    rmq_processes: RmqProcesses, small_disk: Path
) -> None:
    broker = start_broker(rmq_processes, small_disk)
    topic = "FullDiskTopic"
    acked: list[bytes] = []
    with RemotingSession(timeout=10) as session:
        first = send(session, broker, topic, b"first")
        assert first.code == ResponseCode.SUCCESS, first.remark
        acked.append(b"first")
        # 12 MiB free (87 % used): less than the next 16 MiB commitlog file
        filler = fill(small_disk, 12 * MIB)
        answers = []
        for n in range(400):
            body = b"%06d" % n + bytes(100 * 1024)
            answer = send(session, broker, topic, body)
            answers.append(answer.code)
            if answer.code == ResponseCode.SUCCESS:
                acked.append(body)
            if answers[-20:] == [ResponseCode.SERVICE_NOT_AVAILABLE] * 20:
                break
        assert ResponseCode.SYSTEM_ERROR not in answers
        assert answers[-1] == ResponseCode.SERVICE_NOT_AVAILABLE, answers
        assert answers.index(ResponseCode.SERVICE_NOT_AVAILABLE) == len(acked) - 1
        assert len(refusal_errors(broker)) == 1
        assert "disk full: cannot create" in refusal_errors(broker)[0]
        filler.unlink()
        taken = send_until_taken(session, broker, topic, b"after")
        assert taken.code == ResponseCode.SUCCESS, taken.remark
        acked.append(b"after")
        assert pull_bodies(session, broker, topic) == acked
    assert len(refusal_errors(broker)) == 1
    assert "taking puts again" in broker.log_text()


def test_a_consume_queue_file_that_cannot_be_created_is_written_once_space_is_back(
    rmq_processes: RmqProcesses, small_disk: Path
) -> None:
    # 12 MiB consume queue files: the first message of a new queue needs one
    broker = start_broker(rmq_processes, small_disk, mappedFileSizeConsumeQueue=600_000 * 20)
    with RemotingSession(timeout=10) as session:
        assert send(session, broker, "FullDiskOld", b"old").code == ResponseCode.SUCCESS
        # 11 MiB free (89 % used): the commitlog file has room, a new queue file does not fit
        filler = fill(small_disk, 11 * MIB)
        stored = send(session, broker, "FullDiskNew", b"stored, not yet dispatched")
        assert stored.code == ResponseCode.SUCCESS, stored.remark
        for topic in ("FullDiskNew", "FullDiskOld", "FullDiskNew"):
            refused = send(session, broker, topic, b"refused")
            assert refused.code == ResponseCode.SERVICE_NOT_AVAILABLE, refused.remark
        assert pull_bodies(session, broker, "FullDiskNew") == []
        assert len(refusal_errors(broker)) == 1
        assert "cannot be dispatched" in refusal_errors(broker)[0]
        filler.unlink()
        taken = send_until_taken(session, broker, "FullDiskNew", b"after")
        assert taken.code == ResponseCode.SUCCESS, taken.remark
        assert pull_bodies(session, broker, "FullDiskNew") == [
            b"stored, not yet dispatched",
            b"after",
        ]
        assert pull_bodies(session, broker, "FullDiskOld") == [b"old"]
    assert len(refusal_errors(broker)) == 1


def index_errors(broker: RmqProcess) -> list[str]:
    return [
        line
        for line in broker.log_text().splitlines()
        if "ERROR" in line and "index" in line.lower()
    ]


def test_an_index_file_that_cannot_be_created_leaves_sends_alone_and_is_caught_up(
    rmq_processes: RmqProcesses, small_disk: Path
) -> None:
    # a 56 MiB index file (400,000 slots, 2,700,000 entries) on a 96 MiB disk
    broker = start_broker(
        rmq_processes,
        small_disk,
        mappedFileSizeCommitLog=8 * MIB,
        maxHashSlotNum=400_000,
        maxIndexNum=2_700_000,
    )
    topic = "IndexFullTopic"
    with RemotingSession(timeout=10) as session:
        # 40 MiB free: the disk is not nearly full, but the index file does not fit
        filler = fill(small_disk, 40 * MIB)
        for n in range(200):
            header = send_header(topic, {"WAIT": "true", "KEYS": f"key-{n}"})
            answer = session.invoke(
                broker.addr, RequestCode.SEND_MESSAGE_V2, header, body=b"body %d" % n
            )
            assert answer.code == ResponseCode.SUCCESS, (n, answer.code, answer.remark)
        assert pull_bodies(session, broker, topic) == [b"body %d" % n for n in range(200)]
        assert query_by_key(session, broker, topic, "key-7") == []
        assert len(index_errors(broker)) == 1, index_errors(broker)
        filler.unlink()
        deadline = time.monotonic() + 30
        while query_by_key(session, broker, topic, "key-7") == [] and time.monotonic() < deadline:
            time.sleep(0.1)
        assert query_by_key(session, broker, topic, "key-7") == [b"body 7"]
        header = send_header(topic, {"WAIT": "true", "KEYS": "key-after"})
        answer = session.invoke(broker.addr, RequestCode.SEND_MESSAGE_V2, header, body=b"after")
        assert answer.code == ResponseCode.SUCCESS, answer.remark
        assert query_by_key(session, broker, topic, "key-after") == [b"after"]
        assert query_by_key(session, broker, topic, "key-199") == [b"body 199"]
    assert len(index_errors(broker)) == 1
    assert "index caught up" in broker.log_text()
    broker.stop_cleanly()
    verify = cli_run(
        rmq_command(["inspect", str(small_disk / "store"), "verify", "-o", "json"]),
        capture_output=True,
        timeout=120,
    )
    assert verify.returncode == 0, verify.stdout.decode()
    assert json.loads(verify.stdout)["ok"] is True
