"""Replication across implementations: an rmq SLAVE replicating from Apache's SYNC_MASTER and
Apache's SLAVE from rmq's, over Apache 4.9's HA protocol.

Each pair shares a brokerName and one name server; the slave learns the master's HA address
(``brokerIP2:listenPort+1``) from its registration.  Messages go to the topic named after the
broker (``brokerTopicEnable``: it exists on master and slave alike) by raw SEND_MESSAGE_V2
frames: the SYNC_MASTER answers SUCCESS only with the slave's ack.  The slave's commitlog must
become the master's byte for byte, and Apache's Java client, pulling from the slave's address
(driver ``SlaveReads.pullFrom``), reads the messages back.  A SYNC_MASTER without a slave is
compared directly: both answer SLAVE_NOT_AVAILABLE alike and keep the message, and both store
a send-back of it for a retry at once (its copy has WAIT=false: it waits for no slave).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand
from rmq.remoting.headers import (
    ConsumerSendMsgBackRequestHeader,
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
)
from tests.conformance.clusters import BROKER_PROPS
from tests.conformance.java import run_driver, start_apache_broker
from tests.procs import LOOPBACK, RemotingSession, RmqProcess, RmqProcesses, send_header

HA_PROPS = {**BROKER_PROPS, "brokerIP2": LOOPBACK, "haSendHeartbeatInterval": 1000}
MESSAGES = 10
NUL = b"\0"


def commitlog(broker: RmqProcess) -> Path:
    return broker.home / "store" / "commitlog" / f"{0:020d}"


def send(session: RemotingSession, broker: RmqProcess, topic: str, body: bytes) -> RemotingCommand:
    properties = {"WAIT": "true", "KEYS": body.decode()}
    header = send_header(topic, properties, producer_group="HaProducer")
    return session.invoke(broker.addr, RequestCode.SEND_MESSAGE_V2, header, body=body, timeout=15)


def queue_max(session: RemotingSession, broker: RmqProcess, topic: str) -> int:
    header = GetMaxOffsetRequestHeader(topic=topic, queue_id=0)
    response = session.invoke(broker.addr, RequestCode.GET_MAX_OFFSET, header)
    assert response.code == ResponseCode.SUCCESS, response.remark
    return response.read_header(GetMaxOffsetResponseHeader).offset


def wait_same_commitlog(
    session: RemotingSession, master: RmqProcess, slave: RmqProcess, topic: str
) -> bytes:
    """Poll until the slave's first commitlog file holds the master's bytes (all of them:
    the master's file is read up to its last non-zero byte); those bytes."""
    deadline = time.monotonic() + 60
    while True:
        written = commitlog(master).read_bytes().rstrip(NUL)
        copy = commitlog(slave).read_bytes() if commitlog(slave).exists() else b""
        if written and copy[: len(written)] == written and not copy[len(written) :].strip(NUL):
            return written
        assert time.monotonic() < deadline, (
            f"the slave holds {len(copy.rstrip(NUL))} of {len(written)} bytes\n{slave.log_tail()}"
        )
        time.sleep(0.1)


@pytest.fixture
def session() -> Iterator[RemotingSession]:
    with RemotingSession(timeout=15) as remoting:
        yield remoting


StartBroker = Callable[[RmqProcesses, str, str, dict[str, object]], RmqProcess]


def start_apache(
    processes: RmqProcesses, name: str, namesrv: str, props: dict[str, object]
) -> RmqProcess:
    return start_apache_broker(processes, name, namesrv_addr=namesrv, props={**HA_PROPS, **props})


def start_rmq(
    processes: RmqProcesses, name: str, namesrv: str, props: dict[str, object]
) -> RmqProcess:
    return processes.start_broker(name, namesrv=namesrv, props={**HA_PROPS, **props})


def replicate(
    processes: RmqProcesses,
    session: RemotingSession,
    group: str,
    start_master: StartBroker,
    start_slave: StartBroker,
) -> None:
    namesrv = processes.start_namesrv()
    master = start_master(
        processes,
        f"{group}-master",
        namesrv.addr,
        {"brokerName": group, "brokerRole": "SYNC_MASTER"},
    )
    alone = send(session, master, group, b"before the slave")
    assert alone.code == ResponseCode.SLAVE_NOT_AVAILABLE, alone.remark
    slave = start_slave(
        processes,
        f"{group}-slave",
        namesrv.addr,
        {"brokerName": group, "brokerRole": "SLAVE", "brokerId": 1},
    )
    wait_same_commitlog(session, master, slave, group)
    for i in range(MESSAGES):
        answer = send(session, master, group, f"replicated-{i}".encode())
        assert answer.code == ResponseCode.SUCCESS, (answer.code, answer.remark)
    wait_same_commitlog(session, master, slave, group)
    assert queue_max(session, slave, group) == queue_max(session, master, group) == MESSAGES + 1

    read = run_driver(
        "SlaveReads.pullFrom",
        {"namesrv": namesrv.addr, "topic": group, "group": f"{group}-reader", "addr": slave.addr},
        home=processes.root / "driver-home",
    )
    assert read["status"] == "FOUND"
    assert read["bodies"] == ["before the slave", *(f"replicated-{i}" for i in range(MESSAGES))]


def test_an_rmq_slave_replicates_an_apache_sync_master(
    rmq_processes: RmqProcesses, session: RemotingSession
) -> None:
    replicate(rmq_processes, session, "ha-apache-rmq", start_apache, start_rmq)


def test_an_apache_slave_replicates_an_rmq_sync_master(
    rmq_processes: RmqProcesses, session: RemotingSession
) -> None:
    replicate(rmq_processes, session, "ha-rmq-apache", start_rmq, start_apache)


def test_a_sync_master_without_a_slave_answers_as_apache(
    rmq_processes: RmqProcesses, session: RemotingSession
) -> None:
    namesrv = rmq_processes.start_namesrv()
    answers = {}
    for kind, start in (("apache", start_apache), ("rmq", start_rmq)):
        name = f"ha-alone-{kind}"
        props: dict[str, object] = {"brokerName": name, "brokerRole": "SYNC_MASTER"}
        broker = start(rmq_processes, name, namesrv.addr, props)
        answer = send(session, broker, name, b"no slave")
        fields = answer.ext_fields or {}
        # the stored message (commitlog offset 0) sent back for a retry: the retry copy is
        # stored with WAIT=false, so it waits for no slave and succeeds
        back_header = ConsumerSendMsgBackRequestHeader(
            offset=0, group=f"{name}-group", delay_level=0, origin_topic=name
        )
        back = session.invoke(broker.addr, RequestCode.CONSUMER_SEND_MSG_BACK, back_header)
        answers[kind] = (
            answer.code,
            answer.remark,
            sorted(fields),
            fields.get("queueId"),
            fields.get("queueOffset"),
            queue_max(session, broker, name),
            back.code,
            back.remark,
        )
    assert answers["apache"][0] == ResponseCode.SLAVE_NOT_AVAILABLE
    assert answers["apache"][5] == 1  # the message is stored all the same
    assert answers["apache"][6:] == (ResponseCode.SUCCESS, None)
    assert answers["rmq"] == answers["apache"]
