"""Replication between real `rmq broker` processes: an ASYNC_MASTER or SYNC_MASTER and a
SLAVE of the same brokerName (brokerId 1) that learns the master's HA address from its
registration.

The slave's commitlog must become byte for byte the master's, its consume queues rebuilt
(GET_MAX_OFFSET and VIEW_MESSAGE_BY_ID asked of the slave), a SYNC_MASTER send answered only
once the slave holds the message, SLAVE_NOT_AVAILABLE without a slave, FLUSH_SLAVE_TIMEOUT
with the slave stopped (SIGSTOP), and a restarted slave catches up from its own max offset.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rmq.common.message import decode_record, encode_batch
from rmq.common.msgid import decode_offset_msg_id
from rmq.remoting.bodies import KVTable
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand
from rmq.remoting.headers import (
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    SendMessageResponseHeader,
    ViewMessageRequestHeader,
)
from tests.procs import LOOPBACK, RemotingSession, RmqProcess, RmqProcesses, send_header

TOPIC = "ReplicatedTopic"
HA_PROPS = {"brokerIP2": LOOPBACK, "haSendHeartbeatInterval": 500, "slaveTimeout": 1500}


def commitlog(process: RmqProcess) -> Path:
    return process.home / "store" / "commitlog" / f"{0:020d}"


def runtime_info(session: RemotingSession, broker: RmqProcess) -> dict[str, str]:
    response = session.invoke(broker.addr, RequestCode.GET_BROKER_RUNTIME_INFO)
    assert response.code == ResponseCode.SUCCESS, response.remark
    return dict(KVTable.decode(bytes(response.body or b"{}")).table)


def send(
    session: RemotingSession, broker: RmqProcess, body: bytes, *, batch: bool = False
) -> RemotingCommand:
    header = send_header(TOPIC, {"WAIT": "true"}, producer_group="ReplicationProducer", batch=batch)
    code = RequestCode.SEND_BATCH_MESSAGE if batch else RequestCode.SEND_MESSAGE_V2
    return session.invoke(broker.addr, code, header, body=body, timeout=10)


def batch_of(*bodies: bytes) -> bytes:
    return encode_batch([(0, body, b"") for body in bodies])


def max_offset(session: RemotingSession, broker: RmqProcess) -> int:
    header = GetMaxOffsetRequestHeader(topic=TOPIC, queue_id=0)
    response = session.invoke(broker.addr, RequestCode.GET_MAX_OFFSET, header)
    assert response.code == ResponseCode.SUCCESS, response.remark
    return response.read_header(GetMaxOffsetResponseHeader).offset


def master_end(session: RemotingSession, master: RmqProcess) -> int:
    return int(runtime_info(session, master)["commitLogMaxOffset"])


def wait_replicated(session: RemotingSession, master: RmqProcess, slave: RmqProcess) -> bytes:
    """Poll until the slave's first commitlog file starts with the master's bytes; those."""
    deadline = time.monotonic() + 30
    while True:
        end = master_end(session, master)
        expected = commitlog(master).read_bytes()[:end]
        path = commitlog(slave)
        if end and path.exists() and path.read_bytes()[:end] == expected:
            return expected
        assert time.monotonic() < deadline, f"slave never caught up to {end}\n{slave.log_tail()}"
        time.sleep(0.05)


def wait_connected(session: RemotingSession, master: RmqProcess) -> None:
    deadline = time.monotonic() + 30
    while runtime_info(session, master).get("haConnectionCount") != "1":
        assert time.monotonic() < deadline, f"no slave connected\n{master.log_tail()}"
        time.sleep(0.05)


def start_pair(
    processes: RmqProcesses, namesrv: RmqProcess, role: str, name: str
) -> tuple[RmqProcess, RmqProcess]:
    master = processes.start_broker(
        f"{name}-m", namesrv=namesrv, props={**HA_PROPS, "brokerName": name, "brokerRole": role}
    )
    slave = start_slave(processes, namesrv, name)
    return master, slave


def start_slave(processes: RmqProcesses, namesrv: RmqProcess, name: str) -> RmqProcess:
    props = {**HA_PROPS, "brokerName": name, "brokerRole": "SLAVE", "brokerId": 1}
    return processes.start_broker(f"{name}-s", namesrv=namesrv, props=props)


@pytest.fixture
def session() -> Iterator[RemotingSession]:
    with RemotingSession(timeout=10) as remoting:
        yield remoting


def test_the_slave_holds_the_masters_commitlog_and_rebuilds_its_queues(
    rmq_processes: RmqProcesses, namesrv: RmqProcess, session: RemotingSession
) -> None:
    master, slave = start_pair(rmq_processes, namesrv, "ASYNC_MASTER", "ha-async")
    sent = [send(session, master, f"replicated {i}".encode()) for i in range(30)]
    assert {response.code for response in sent} == {ResponseCode.SUCCESS}

    wait_replicated(session, master, slave)
    assert max_offset(session, slave) == max_offset(session, master) == 30
    last = sent[-1].read_header(SendMessageResponseHeader)
    offset = decode_offset_msg_id(last.msg_id).physical_offset
    viewed = session.invoke(
        slave.addr, RequestCode.VIEW_MESSAGE_BY_ID, ViewMessageRequestHeader(offset=offset)
    )
    assert viewed.code == ResponseCode.SUCCESS, viewed.remark
    assert decode_record(viewed.body or b"").body == b"replicated 29"
    info = runtime_info(session, master)
    assert info["haConnectionCount"] == "1"
    assert info["haSlaveFallBehindBytes"] == "0"


def test_sync_master_answers_after_the_slave_holds_the_message(
    rmq_processes: RmqProcesses, namesrv: RmqProcess, session: RemotingSession
) -> None:
    master = rmq_processes.start_broker(
        "ha-sync-m",
        namesrv=namesrv,
        props={**HA_PROPS, "brokerName": "ha-sync", "brokerRole": "SYNC_MASTER"},
    )
    alone = send(session, master, b"no slave yet")
    assert alone.code == ResponseCode.SLAVE_NOT_AVAILABLE
    assert max_offset(session, master) == 1  # stored all the same

    slave = start_slave(rmq_processes, namesrv, "ha-sync")
    wait_connected(session, master)
    for i in range(5):
        answer = send(session, master, f"synced {i}".encode())
        assert answer.code == ResponseCode.SUCCESS, answer.remark
        end = master_end(session, master)
        assert commitlog(slave).read_bytes()[:end] == commitlog(master).read_bytes()[:end]

    os.kill(slave.popen.pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        stalled = send(session, master, b"the slave sleeps")
        assert stalled.code == ResponseCode.FLUSH_SLAVE_TIMEOUT
        assert time.monotonic() - started >= 1.4  # slaveTimeout=1500
        assert max_offset(session, master) == 7
    finally:
        os.kill(slave.popen.pid, signal.SIGCONT)
    wait_replicated(session, master, slave)


def test_a_restarted_slave_catches_up_from_its_own_max_offset(
    rmq_processes: RmqProcesses, namesrv: RmqProcess, session: RemotingSession
) -> None:
    master, slave = start_pair(rmq_processes, namesrv, "ASYNC_MASTER", "ha-restart")
    for i in range(10):
        assert send(session, master, f"before {i}".encode()).code == ResponseCode.SUCCESS
    held = len(wait_replicated(session, master, slave))
    slave.stop_cleanly()
    for i in range(10):
        assert send(session, master, f"while away {i}".encode()).code == ResponseCode.SUCCESS
    slave = rmq_processes.restart_broker(slave, namesrv)
    wait_replicated(session, master, slave)
    assert max_offset(session, slave) == 20
    assert f"requests offset {held}" in master.log_text()


def test_sync_flush_and_sync_master_batches(
    rmq_processes: RmqProcesses, namesrv: RmqProcess, session: RemotingSession
) -> None:
    durable = {"flushDiskType": "SYNC_FLUSH"}
    master = rmq_processes.start_broker(
        "ha-batch-m",
        namesrv=namesrv,
        props={**HA_PROPS, **durable, "brokerName": "ha-batch", "brokerRole": "SYNC_MASTER"},
    )
    alone = send(session, master, batch_of(b"a", b"b"), batch=True)
    assert alone.code == ResponseCode.SLAVE_NOT_AVAILABLE
    slave = start_slave(rmq_processes, namesrv, "ha-batch")
    wait_connected(session, master)
    answer = send(session, master, batch_of(b"c", b"d", b"e"), batch=True)
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    end = master_end(session, master)
    assert commitlog(slave).read_bytes()[:end] == commitlog(master).read_bytes()[:end]
    os.kill(slave.popen.pid, signal.SIGSTOP)
    try:
        stalled = send(session, master, batch_of(b"f", b"g"), batch=True)
        assert stalled.code == ResponseCode.FLUSH_SLAVE_TIMEOUT
        assert stalled.read_header(SendMessageResponseHeader).queue_offset == 5
    finally:
        os.kill(slave.popen.pid, signal.SIGCONT)
    wait_replicated(session, master, slave)
    assert max_offset(session, slave) == 7
