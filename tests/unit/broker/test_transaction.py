"""Transactional messages: END_TRANSACTION and the transaction check, against a real store.

Half messages are sent through the broker's own send path (SEND_MESSAGE with ``TRAN_MSG``),
END_TRANSACTION requests are built as a producer sends them, and the records the broker
writes are read back from the commitlog and consume-queue files with the spec's layouts.
Producers asked about a transaction are stand-in channels that record what they were sent.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rmq.common.config import BrokerRole
from rmq.remoting.bodies import TopicConfig
from rmq.remoting.codes import LanguageCode, RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, create_request
from rmq.remoting.connection import Connection, RemotingEndpoint
from rmq.remoting.headers import EndTransactionRequestHeader, SendMessageRequestHeader
from rmq.server.broker.client.clientmanager import ClientChannelInfo
from rmq.server.broker.context import BrokerContext
from rmq.server.broker.processor.sendprocessor import SendMessageProcessor
from rmq.server.broker.transaction.transaction import EndTransactionProcessor
from rmq.server.broker.transaction.transactioncheck import TransactionalMessageCheckService
from rmq.store.store import GetMessageStatus
from tests.unit.broker import helpers
from tests.unit.broker.test_schedule import LEVELS, Clock, cq_entries, parse_record, read_record

T0 = 1_700_000_000_000
BROKER_IP = "192.168.0.10"
STORE_HOST = struct.pack(">4Bi", 192, 168, 0, 10, 10911)
TOPIC = "TopicA"
GROUP = "pg"
HALF = "RMQ_SYS_TRANS_HALF_TOPIC"
OP = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
CHECK_MAX = "TRANS_CHECK_MAX_TIME_TOPIC"
TRANS_GROUP = "CID_RMQ_SYS_TRANS"
TAG_A = 2598919  # "TagA".hashCode()
TAG_D = 100  # "d".hashCode()
UNIQ_KEY = "0A0102030000A2B4C6D800000000001F"
COMMIT, ROLLBACK, NOT_TYPE = 8, 12, 0
SENT_PROPERTIES = {
    "TRAN_MSG": "true",
    "PGROUP": GROUP,
    "UNIQ_KEY": UNIQ_KEY,
    "TAGS": "TagA",
    "KEYS": "order-1",
    "WAIT": "true",
}


class ProducerChannel:
    """A producer connection that records the requests the broker sends it."""

    remote_addr = "10.1.2.3:40000"
    closed = False

    def __init__(self) -> None:
        self.sent: list[RemotingCommand] = []

    def close(self) -> None:
        self.closed = True

    async def send_oneway(self, request: RemotingCommand) -> None:
        request.mark_oneway()
        self.sent.append(request)


def make_broker(root: Path, clock: Clock, **broker: Any) -> BrokerContext:
    """The broker's context over ``root`` (the schedule tests' delay levels), with TopicA."""
    context = helpers.make_broker(
        root,
        broker=broker,
        store={"store_path_root_dir": str(root), "message_delay_level": LEVELS},
        clock=clock,
    )
    context.topic_config_manager.update(
        TopicConfig(topic_name=TOPIC, read_queue_nums=4, write_queue_nums=4)
    )
    return context


def root_of(broker: BrokerContext) -> Path:
    return Path(broker.store_config.store_path_root_dir)


@pytest.fixture
def clock() -> Clock:
    return Clock(T0)


@pytest.fixture
def broker(tmp_path: Path, clock: Clock) -> Iterator[BrokerContext]:
    controller = make_broker(tmp_path, clock)
    yield controller
    controller.store.shutdown()


def call(handler: Any, request: RemotingCommand) -> RemotingCommand | None:
    async def run() -> RemotingCommand | None:
        connection = Connection(RemotingEndpoint(max_frame_size=1 << 24, idle_timeout=None))
        connection.remote_address = ("10.1.2.3", 40000)
        result: RemotingCommand | None = await handler(connection, request)
        return result

    return asyncio.run(run())


def send_half(broker: BrokerContext, body: bytes = b"order paid", **extra: str) -> int:
    """Send a transactional message to TopicA queue 2; returns the half message's offset."""
    properties = {**SENT_PROPERTIES, **extra}
    header = SendMessageRequestHeader(
        producer_group=GROUP,
        topic=TOPIC,
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=2,
        sys_flag=0x4,
        born_timestamp=T0,
        flag=5,
        properties="\x02".join(f"{k}\x01{v}" for k, v in properties.items()),
    )
    request = create_request(RequestCode.SEND_MESSAGE, header, body=body)
    response = call(SendMessageProcessor(broker).send_message, request)
    assert response is not None and response.code == ResponseCode.SUCCESS
    return half_entries(broker)[-1]


def half_entries(broker: BrokerContext) -> list[int]:
    return [entry[0] for entry in cq_entries(root_of(broker), HALF, 0)]


def end_transaction(
    broker: BrokerContext,
    action: int,
    commit_log_offset: int,
    queue_offset: int = 0,
    *,
    group: str = GROUP,
    from_check: bool = False,
) -> RemotingCommand | None:
    header = EndTransactionRequestHeader(
        producer_group=group,
        tran_state_table_offset=queue_offset,
        commit_log_offset=commit_log_offset,
        commit_or_rollback=action,
        from_transaction_check=from_check,
        msg_id="C0A8000A00002A9F" + f"{commit_log_offset:016X}",
        transaction_id=UNIQ_KEY,
    )
    request = create_request(RequestCode.END_TRANSACTION, header)
    request.mark_oneway()
    request.remark = "local transaction done"
    return call(EndTransactionProcessor(broker, clock=lambda: T0 + 1).end_transaction, request)


def op_records(broker: BrokerContext) -> list[dict[str, Any]]:
    return [read_record(root_of(broker), entry[0]) for entry in cq_entries(root_of(broker), OP, 0)]


# -- END_TRANSACTION --------------------------------------------------------------------------


def test_commit_writes_a_consumable_commit_record_and_an_op_record(
    broker: BrokerContext,
) -> None:
    half_offset = send_half(broker)
    response = end_transaction(broker, COMMIT, half_offset)
    assert response is not None and response.code == ResponseCode.SUCCESS

    [(physical_offset, _, tags_code)] = cq_entries(root_of(broker), TOPIC, 2)
    assert tags_code == TAG_A
    record = read_record(root_of(broker), physical_offset)
    assert record["topic"] == TOPIC
    assert record["queue_id"] == 2
    assert record["queue_offset"] == 0
    assert record["sys_flag"] & 0xC == COMMIT
    assert record["prepared_transaction_offset"] == half_offset
    assert record["body"] == b"order paid"
    assert record["flag"] == 5
    assert record["born_timestamp"] == T0
    assert record["properties"] == {
        **SENT_PROPERTIES,
        "CLUSTER": "DefaultCluster",
        "REAL_TOPIC": TOPIC,
        "REAL_QID": "2",
    }
    pulled = broker.store.get_messages(TOPIC, 2, 0, 32)
    assert pulled.status is GetMessageStatus.FOUND
    assert pulled.physical_offsets == [physical_offset]

    [op] = op_records(broker)
    assert op["topic"] == OP
    assert op["queue_id"] == 0
    assert op["body"] == b"0"
    assert op["properties_text"] == "WAIT\x01true\x02TAGS\x01d"
    assert op["born_host"] == STORE_HOST
    assert op["born_timestamp"] == T0 + 1
    assert cq_entries(root_of(broker), OP, 0)[0][2] == TAG_D
    assert OP not in broker.topic_config_manager.topic_config_table


def test_rollback_delivers_nothing_and_writes_the_op_record(broker: BrokerContext) -> None:
    send_half(broker)
    second = send_half(broker, b"second")
    response = end_transaction(broker, ROLLBACK, second, 1)
    assert response is not None and response.code == ResponseCode.SUCCESS
    assert broker.store.get_max_offset_in_queue(TOPIC, 2) == 0
    assert [op["body"] for op in op_records(broker)] == [b"1"]


def test_unknown_outcome_is_ignored(broker: BrokerContext) -> None:
    half_offset = send_half(broker)
    assert end_transaction(broker, NOT_TYPE, half_offset) is None
    assert end_transaction(broker, NOT_TYPE, half_offset, from_check=True) is None
    assert cq_entries(root_of(broker), TOPIC, 2) == []
    assert op_records(broker) == []


@pytest.mark.parametrize(
    ("group", "queue_offset", "shift", "remark"),
    [
        ("other-group", 0, 0, "The producer group wrong"),
        (GROUP, 7, 0, "The transaction state table offset wrong"),
        (GROUP, 0, 10_000, "Find prepared transaction message failed"),
    ],
)
@pytest.mark.parametrize("action", [COMMIT, ROLLBACK])
def test_end_transaction_that_does_not_match_its_half_message_is_refused(
    broker: BrokerContext, group: str, queue_offset: int, shift: int, remark: str, action: int
) -> None:
    half_offset = send_half(broker)
    response = end_transaction(broker, action, half_offset + shift, queue_offset, group=group)
    assert response is not None
    assert (response.code, response.remark) == (ResponseCode.SYSTEM_ERROR, remark)
    assert cq_entries(root_of(broker), TOPIC, 2) == []
    assert op_records(broker) == []


def test_slave_refuses_end_transaction(tmp_path: Path, clock: Clock) -> None:
    broker = make_broker(tmp_path, clock)
    try:
        half_offset = send_half(broker)
        broker.store_config.broker_role = BrokerRole.SLAVE
        response = end_transaction(broker, COMMIT, half_offset)
        assert response is not None and response.code == ResponseCode.SLAVE_NOT_AVAILABLE
        assert cq_entries(root_of(broker), TOPIC, 2) == []
    finally:
        broker.store.shutdown()


# -- the transaction check --------------------------------------------------------------------


def connect_producer(broker: BrokerContext) -> ProducerChannel:
    channel = ProducerChannel()
    broker.client_manager.register_producer(
        GROUP, ClientChannelInfo(channel, "10.1.2.3@1234", LanguageCode.CPP, 399)
    )
    return channel


def run_check(broker: BrokerContext, clock: Clock, now: int) -> None:
    clock.now = now
    service = TransactionalMessageCheckService(broker, clock=clock)

    async def run() -> None:
        await service.check()
        for _ in range(3):
            await asyncio.sleep(0)

    asyncio.run(run())


def check_offsets(broker: BrokerContext) -> tuple[int, int]:
    offsets = broker.consumer_offset_manager
    return offsets.query(TRANS_GROUP, HALF, 0), offsets.query(TRANS_GROUP, OP, 0)


def offset_msg_id(physical_offset: int) -> str:
    return (STORE_HOST + struct.pack(">q", physical_offset)).hex().upper()


def test_unresolved_half_message_is_checked_and_the_answer_commits_it(
    broker: BrokerContext, clock: Clock
) -> None:
    producer = connect_producer(broker)
    first = send_half(broker)
    run_check(broker, clock, T0 + 7000)

    [_, copy] = half_entries(broker)
    copy_record = read_record(root_of(broker), copy)
    assert copy_record["topic"] == HALF
    assert copy_record["properties"]["TRANSACTION_CHECK_TIMES"] == "1"
    assert copy_record["flag"] == 5
    [request] = producer.sent
    assert request.code == RequestCode.CHECK_TRANSACTION_STATE
    assert request.is_oneway
    assert request.ext_fields == {
        "tranStateTableOffset": "1",
        "commitLogOffset": str(copy),
        "msgId": UNIQ_KEY,
        "transactionId": UNIQ_KEY,
        "offsetMsgId": offset_msg_id(copy),
    }
    assert request.body is not None
    sent = parse_record(bytes(request.body))
    assert sent["total_size"] == len(request.body)
    assert (sent["topic"], sent["queue_id"]) == (TOPIC, 2)
    assert (sent["queue_offset"], sent["physical_offset"]) == (1, copy)
    assert sent["store_timestamp"] == read_record(root_of(broker), first)["store_timestamp"]
    assert sent["body"] == b"order paid"
    assert sent["properties"]["TRANSACTION_CHECK_TIMES"] == "1"
    assert check_offsets(broker) == (1, -1)

    response = end_transaction(broker, COMMIT, copy, 1, from_check=True)
    assert response is not None and response.code == ResponseCode.SUCCESS
    [(committed, _, _)] = cq_entries(root_of(broker), TOPIC, 2)
    assert read_record(root_of(broker), committed)["prepared_transaction_offset"] == copy

    run_check(broker, clock, T0 + 20_000)
    assert len(producer.sent) == 1
    assert check_offsets(broker) == (2, 1)


def test_young_half_message_is_left_for_a_later_round(broker: BrokerContext, clock: Clock) -> None:
    producer = connect_producer(broker)
    send_half(broker)
    run_check(broker, clock, T0 + 5000)
    assert producer.sent == []
    assert len(half_entries(broker)) == 1
    assert check_offsets(broker) == (-1, -1)


def test_resolved_half_message_is_not_checked(broker: BrokerContext, clock: Clock) -> None:
    producer = connect_producer(broker)
    rolled_back = send_half(broker)
    end_transaction(broker, ROLLBACK, rolled_back)
    run_check(broker, clock, T0 + 7000)
    assert producer.sent == []
    assert check_offsets(broker) == (1, 1)


def test_half_message_checked_too_often_moves_to_the_check_max_topic(
    tmp_path: Path, clock: Clock
) -> None:
    broker = make_broker(tmp_path, clock, transaction_check_max=2)
    try:
        producer = connect_producer(broker)
        send_half(broker)
        for round_time in (T0 + 7000, T0 + 14_000, T0 + 21_000):
            run_check(broker, clock, round_time)
        assert len(producer.sent) == 2
        [(physical_offset, _, _)] = cq_entries(tmp_path, CHECK_MAX, 0)
        moved = read_record(tmp_path, physical_offset)
        assert moved["body"] == b"order paid"
        assert moved["properties"]["TRANSACTION_CHECK_TIMES"] == "2"
        config = broker.topic_config_manager.select(CHECK_MAX)
        assert config is not None
        assert (config.read_queue_nums, config.write_queue_nums, config.perm) == (1, 1, 6)
        assert check_offsets(broker) == (3, -1)
    finally:
        broker.store.shutdown()


def test_half_message_without_a_connected_producer_is_still_counted(
    broker: BrokerContext, clock: Clock
) -> None:
    send_half(broker)
    run_check(broker, clock, T0 + 7000)
    [_, copy] = half_entries(broker)
    assert read_record(root_of(broker), copy)["properties"]["TRANSACTION_CHECK_TIMES"] == "1"
    assert check_offsets(broker) == (1, -1)


def test_half_message_inside_its_immunity_time_is_deferred_unchecked(
    broker: BrokerContext, clock: Clock
) -> None:
    producer = connect_producer(broker)
    send_half(broker, CHECK_IMMUNITY_TIME_IN_SECONDS="20")
    run_check(broker, clock, T0 + 7000)
    assert producer.sent == []
    [_, copy] = half_entries(broker)
    assert read_record(root_of(broker), copy)["properties"]["TRAN_PREPARED_QUEUE_OFFSET"] == "0"
    assert check_offsets(broker) == (1, -1)

    run_check(broker, clock, T0 + 21_000)
    [request] = producer.sent
    assert request.ext_fields is not None
    assert request.ext_fields["tranStateTableOffset"] == "2"
