"""The broker's second, "fast" (VIP) port, `listenPort - 2`, on real `rmq` processes.

Java clients with `vipChannelEnabled` send everything but pulls there.  It serves what
Apache's BrokerController registers on its fast server: every request the main port serves
except PULL_MESSAGE, which is answered REQUEST_CODE_NOT_SUPPORTED.  The name server only
learns `listenPort`.  A fast port that cannot be bound stops the start with one line naming
it.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rmq.common.message import iter_records
from rmq.remoting.bodies import (
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    HeartbeatData,
    MessageModel,
    SubscriptionData,
)
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, create_request
from rmq.remoting.headers import (
    GetConsumerConnectionListRequestHeader,
    PullMessageRequestHeader,
    SendMessageResponseHeader,
)
from tests.cli_forkserver import run as cli_run
from tests.procs import (
    LOOPBACK,
    SMALL_STORE_PROPS,
    RemotingSession,
    RmqProcess,
    RmqProcesses,
    free_broker_port,
    free_port,
    registered_brokers,
    rmq_command,
    send_header,
    write_properties,
)
from tests.procs import pull_header as procs_pull_header

FAST_PORT_CODES = (
    RequestCode.SEND_MESSAGE,
    RequestCode.SEND_MESSAGE_V2,
    RequestCode.SEND_BATCH_MESSAGE,
    RequestCode.CONSUMER_SEND_MSG_BACK,
    RequestCode.QUERY_MESSAGE,
    RequestCode.VIEW_MESSAGE_BY_ID,
    RequestCode.HEART_BEAT,
    RequestCode.UNREGISTER_CLIENT,
    RequestCode.CHECK_CLIENT_CONFIG,
    RequestCode.GET_CONSUMER_LIST_BY_GROUP,
    RequestCode.UPDATE_CONSUMER_OFFSET,
    RequestCode.QUERY_CONSUMER_OFFSET,
    RequestCode.END_TRANSACTION,
    # Apache's admin processor, the fast server's default processor, serves these.
    RequestCode.LOCK_BATCH_MQ,
    RequestCode.UNLOCK_BATCH_MQ,
    RequestCode.GET_BROKER_RUNTIME_INFO,
    RequestCode.GET_ALL_TOPIC_CONFIG,
    RequestCode.GET_MAX_OFFSET,
    RequestCode.UPDATE_AND_CREATE_TOPIC,
    RequestCode.GET_CONSUMER_CONNECTION_LIST,
)
"""Codes Apache's broker serves on both ports, answered the same way on both here."""


@pytest.fixture(scope="module")
def broker(module_processes: RmqProcesses, namesrv: RmqProcess) -> Iterator[RmqProcess]:
    process = module_processes.start_broker("fast-port-broker", namesrv=namesrv)
    yield process
    process.stop_cleanly()


def fast_addr(process: RmqProcess) -> str:
    return f"{LOOPBACK}:{process.port - 2}"


def send_v2(session: RemotingSession, addr: str, topic: str, body: bytes) -> RemotingCommand:
    properties = {"TAGS": "TagFast", "WAIT": "true"}
    header = send_header(topic, properties, producer_group="FastPortProducer")
    return session.invoke(addr, RequestCode.SEND_MESSAGE_V2, header, body=body)


def pull_header(topic: str) -> PullMessageRequestHeader:
    return procs_pull_header(topic, "FastPortConsumer")


def test_the_name_server_learns_only_the_main_port(broker: RmqProcess, namesrv: RmqProcess) -> None:
    addresses = registered_brokers(namesrv.addr).values()

    assert broker.addr in addresses
    assert fast_addr(broker) not in addresses


def test_a_message_sent_to_the_fast_port_is_pulled_from_the_main_port(broker: RmqProcess) -> None:
    with RemotingSession() as session:
        sent = send_v2(session, fast_addr(broker), "FastPortTopic", b"through the fast port")
        assert sent.code == ResponseCode.SUCCESS, sent.remark
        answer = sent.read_header(SendMessageResponseHeader)

        pulled = session.invoke(broker.addr, RequestCode.PULL_MESSAGE, pull_header("FastPortTopic"))

    assert pulled.code == ResponseCode.SUCCESS, pulled.remark
    records = [record for _, record in iter_records(pulled.body or b"")]
    assert [record.body for record in records] == [b"through the fast port"]
    (record,) = records
    assert (record.topic, record.tags, record.queue_offset) == (
        "FastPortTopic",
        "TagFast",
        answer.queue_offset,
    )
    assert record.offset_msg_id == answer.msg_id
    assert record.store_host == broker.addr, "records carry the main port as their store host"


def test_pull_and_unknown_codes_on_the_fast_port_are_not_supported(broker: RmqProcess) -> None:
    with RemotingSession() as session:
        pull = session.invoke(
            fast_addr(broker), RequestCode.PULL_MESSAGE, pull_header("FastPortTopic")
        )
        unknown = session.invoke(fast_addr(broker), 9999)

    assert (pull.code, pull.remark) == (
        ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
        f" request type {RequestCode.PULL_MESSAGE.value} not supported",
    )
    assert (unknown.code, unknown.remark) == (
        ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
        " request type 9999 not supported",
    )


@pytest.mark.parametrize("code", FAST_PORT_CODES)
def test_the_fast_port_answers_as_the_main_port(broker: RmqProcess, code: int) -> None:
    # No header and no body: each code reaches its processor, which answers the same way on
    # both ports (mostly SYSTEM_ERROR naming the missing header field).
    with RemotingSession() as session:
        main = session.invoke(broker.addr, code)
        fast = session.invoke(fast_addr(broker), code)

    assert (fast.code, fast.remark) == (main.code, main.remark)
    assert fast.code != ResponseCode.REQUEST_CODE_NOT_SUPPORTED, fast.remark


def test_a_consumer_gone_from_the_fast_port_is_dropped(broker: RmqProcess) -> None:
    group = "FastPortGroup"
    heartbeat = HeartbeatData(
        client_id="127.0.0.1@fast#1",
        consumer_data_set=[
            ConsumerData(
                group_name=group,
                consume_type=ConsumeType.CONSUME_PASSIVELY,
                message_model=MessageModel.CLUSTERING,
                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                subscription_data_set=[SubscriptionData.from_expression("FastPortTopic", "*")],
            )
        ],
    )
    lookup = GetConsumerConnectionListRequestHeader(consumer_group=group)
    with RemotingSession() as observer:
        with RemotingSession() as client:
            beat = client.send(
                fast_addr(broker), create_request(RequestCode.HEART_BEAT, body=heartbeat.encode())
            )
            assert beat.code == ResponseCode.SUCCESS, beat.remark
            online = observer.invoke(broker.addr, RequestCode.GET_CONSUMER_CONNECTION_LIST, lookup)
            assert online.code == ResponseCode.SUCCESS, online.remark

        deadline = time.monotonic() + 5
        while True:
            gone = observer.invoke(broker.addr, RequestCode.GET_CONSUMER_CONNECTION_LIST, lookup)
            if gone.code == ResponseCode.CONSUMER_NOT_ONLINE:
                break
            assert time.monotonic() < deadline, "the closed fast-port channel was not dropped"
            time.sleep(0.05)


def test_standalone_serves_the_fast_port(rmq_processes: RmqProcesses) -> None:
    process = rmq_processes.start_standalone("fast-port-standalone")

    with RemotingSession() as session:
        sent = send_v2(session, fast_addr(process), "StandaloneFast", b"standalone")
        pulled = session.invoke(
            process.addr, RequestCode.PULL_MESSAGE, pull_header("StandaloneFast")
        )

    assert sent.code == ResponseCode.SUCCESS, sent.remark
    assert [record.body for _, record in iter_records(pulled.body or b"")] == [b"standalone"]
    process.stop_cleanly()


@pytest.mark.parametrize("command", ["broker", "standalone"])
def test_a_taken_fast_port_stops_the_start(tmp_path: Path, command: str) -> None:
    port = free_broker_port()
    store = tmp_path / "store"
    conf = write_properties(
        tmp_path / "broker.conf",
        {
            "brokerIP1": LOOPBACK,
            "bindAddress": LOOPBACK,
            "listenPort": port,
            "storePathRootDir": store,
            **SMALL_STORE_PROPS,
        },
    )
    args = ["broker", "-c", str(conf)]
    if command == "standalone":
        args = ["standalone", "-c", str(conf), "--namesrv-port", str(free_port())]
    with socket.socket() as taken:
        taken.bind((LOOPBACK, port - 2))
        taken.listen()
        result = cli_run(
            rmq_command(args),
            capture_output=True,
            text=True,
            timeout=30,
            env={**os.environ, "HOME": str(tmp_path)},
        )

    assert result.returncode == 1, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("rmq: error:")]
    option = "--broker-port" if command == "standalone" else "listenPort (--port)"
    assert errors == [
        f"rmq: error: cannot listen on {LOOPBACK}:{port - 2}, the broker's fast port "
        "(listenPort - 2): Address already in use; is another server using the port? "
        f"choose another with {option}"
    ]
    assert "Traceback" not in result.stderr
    assert not (store / "abort").exists(), "the store was shut down cleanly"
    with socket.socket() as main:
        main.bind((LOOPBACK, port))  # the main port was released


def test_a_listen_port_without_room_for_the_fast_port_is_refused(tmp_path: Path) -> None:
    conf = write_properties(tmp_path / "broker.conf", {"listenPort": 2})
    result = cli_run(
        rmq_command(["broker", "-c", str(conf)]),
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "HOME": str(tmp_path)},
    )

    assert result.returncode == 2
    assert "listenPort=2: expected 3..65534" in result.stderr
