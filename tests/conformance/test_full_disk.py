"""A full disk, differential: Apache's broker and rmq's, each with its store on its own small
tmpfs, filled to 96 % by a filler file, then emptied again.

Both must refuse sends with the same code and remark (SERVICE_NOT_AVAILABLE, "the broker's
disk is full", the disks' used ratios normalised) and take them again once the filler is
deleted, keeping every message they acknowledged.  Apache notices in its disk check (every
10 s); rmq when a send arrives (at most a second later), which the test asserts too.  Needs
root to mount the tmpfs (skipped with the reason otherwise).
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import pytest

from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand
from tests.conformance.clusters import BROKER_PROPS
from tests.conformance.java import start_apache_broker
from tests.conformance.test_raw_slave import SERVICE_NOT_AVAILABLE_REMARK
from tests.conformance.test_raw_slave import _answer as answer_of
from tests.procs import (
    RemotingSession,
    RmqProcess,
    RmqProcesses,
    queue_offset_ranges,
    send_header,
)
from tests.tmpfs import fill, mounted_tmpfs

TOPIC = "FullDiskTopic"
MIB = 1024 * 1024
KINDS = ("apache", "rmq")


def send(session: RemotingSession, broker: RmqProcess, n: int) -> RemotingCommand:
    header = send_header(TOPIC, {"WAIT": "true"}, producer_group="FullDiskProducer")
    return session.invoke(
        broker.addr, RequestCode.SEND_MESSAGE_V2, header, body=b"message %d" % n, timeout=15
    )


def test_a_full_disk_refuses_sends_and_takes_them_again(tmp_path: Path) -> None:
    processes = RmqProcesses(tmp_path)
    session = RemotingSession()
    with contextlib.ExitStack() as stack:
        disks = {
            kind: stack.enter_context(mounted_tmpfs(tmp_path / f"{kind}-disk", 96))
            for kind in KINDS
        }
        stack.callback(processes.kill_all)
        stack.callback(session.close)
        props = {
            kind: {**BROKER_PROPS, "storePathRootDir": disks[kind] / "store"} for kind in KINDS
        }
        props["apache"]["storePathCommitLog"] = disks["apache"] / "store" / "commitlog"
        brokers = {
            "apache": start_apache_broker(
                processes, "apache-full-disk", namesrv_addr=None, props=props["apache"]
            ),
            "rmq": processes.start_broker("rmq-full-disk", namesrv=None, props=props["rmq"]),
        }
        acked = dict.fromkeys(KINDS, 0)
        for kind in KINDS:
            first = send(session, brokers[kind], 0)
            assert first.code == ResponseCode.SUCCESS, (kind, first.remark)
            acked[kind] += 1
        fillers = {kind: fill(disks[kind], 4 * MIB) for kind in KINDS}
        refused: dict[str, RemotingCommand] = {}
        waited: dict[str, float] = {}
        for kind in KINDS:
            started = time.monotonic()
            while time.monotonic() - started < 60:
                answer = send(session, brokers[kind], acked[kind])
                if answer.code != ResponseCode.SUCCESS:
                    refused[kind] = answer
                    break
                acked[kind] += 1
                time.sleep(0.1)
            waited[kind] = time.monotonic() - started
        assert answer_of(refused["apache"]) == (
            ResponseCode.SERVICE_NOT_AVAILABLE,
            SERVICE_NOT_AVAILABLE_REMARK,
        )
        assert answer_of(refused["rmq"]) == answer_of(refused["apache"])
        assert waited["rmq"] < 5, waited  # noticed at put time, not at the next disk check
        for filler in fillers.values():
            filler.unlink()
        for kind in KINDS:
            deadline = time.monotonic() + 60
            while (taken := send(session, brokers[kind], acked[kind])).code != 0:
                assert taken.code == ResponseCode.SERVICE_NOT_AVAILABLE, (kind, taken.remark)
                if time.monotonic() > deadline:
                    pytest.fail(f"{kind} still refuses sends a minute after space came back")
                time.sleep(0.2)
            acked[kind] += 1
            ranges = queue_offset_ranges(brokers[kind].addr, TOPIC, [0])
            assert ranges[0] == (0, acked[kind]), (kind, ranges)
