"""Producer against scripted brokers on 127.0.0.1: queue selection, retries and failover,
validation, compression, unique ids, ordered and batch sends, async and oneway sends."""

from __future__ import annotations

import asyncio
import struct
import zlib
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from rmq.client.api import SendResult, SendStatus
from rmq.client.errors import ClientErrorCode, MQBrokerError, MQClientError
from rmq.client.message import Message
from rmq.client.producer import BUSY_BACKOFF, Producer, select_by_hash
from rmq.common.properties import decode_properties
from rmq.remoting.bodies import MessageQueue
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.headers import SendMessageRequestHeader
from tests.unit.client.fakes import (
    FakeBroker,
    FakeNamesrv,
    closed_port_addr,
    route_of,
    run,
    until,
)

Scenario = Callable[[Producer, list[FakeBroker]], Awaitable[None]]


@asynccontextmanager
async def cluster(
    broker_names: list[str], *, queues: int = 4, **options: Any
) -> AsyncIterator[tuple[Producer, list[FakeBroker]]]:
    """A started producer over a fake name server whose topic "T" lives on these brokers."""
    namesrv = FakeNamesrv()
    brokers = [FakeBroker(name) for name in broker_names]
    for server in (namesrv, *brokers):
        await server.start()
    namesrv.routes["T"] = route_of({b.name: b.addr for b in brokers}, queues=queues)
    producer = Producer("PG", namesrv.addr, **options)
    await producer.start()
    try:
        yield producer, brokers
    finally:
        await producer.shutdown()
        for server in (namesrv, *brokers):
            await server.close()


def scenario_on(broker_names: list[str], scenario: Scenario, **options: Any) -> None:
    async def main() -> None:
        async with cluster(broker_names, **options) as (producer, brokers):
            await scenario(producer, brokers)

    run(main())


def sent_properties(broker: FakeBroker) -> list[dict[str, str]]:
    return [decode_properties(header.properties or "") for header in broker.send_headers()]


# --- selection -------------------------------------------------------------------------------


def test_sends_go_round_robin_over_every_queue_of_every_broker() -> None:
    async def scenario(producer: Producer, brokers: list[FakeBroker]) -> None:
        results = [await producer.send(Message("T", b"m")) for _ in range(16)]
        used = Counter((r.message_queue.broker_name, r.message_queue.queue_id) for r in results)
        assert used == {(b.name, q): 2 for b in brokers for q in range(4)}
        headers = [h for b in brokers for h in b.send_headers()]
        assert all(h.bname in ("broker-a", "broker-b") for h in headers)

    scenario_on(["broker-a", "broker-b"], scenario)


def test_select_by_hash_uses_the_java_string_hash() -> None:
    queues = [MessageQueue("T", "b", i) for i in range(5)]
    # "hello".hashCode() == 99162322 -> 99162322 % 5 == 2;
    # "polygenelubricants".hashCode() == -2147483648 -> Java's % gives -3, made positive: 3
    assert select_by_hash(queues, "hello").queue_id == 2
    assert select_by_hash(queues, "polygenelubricants").queue_id == 3


def test_sends_with_one_sharding_key_stay_on_one_queue() -> None:
    async def scenario(producer: Producer, brokers: list[FakeBroker]) -> None:
        for key in ("order-1", "order-2", "order-3"):
            results = [await producer.send(Message("T", b"m"), sharding_key=key) for _ in range(5)]
            assert len({r.message_queue for r in results}) == 1
            queues = [q for b in brokers for q in (MessageQueue("T", b.name, i) for i in range(4))]
            assert results[0].message_queue == select_by_hash(queues, key)

    scenario_on(["broker-a", "broker-b"], scenario)


def test_a_selector_and_a_pinned_queue_id_choose_the_queue() -> None:
    async def scenario(producer: Producer, brokers: list[FakeBroker]) -> None:
        last = await producer.send(Message("T", b"m"), selector=lambda queues, _: queues[-1])
        assert last.message_queue == MessageQueue("T", "broker-b", 3)
        pinned = await producer.send(Message("T", b"m", queue_id=2))
        assert pinned.message_queue.queue_id == 2
        with pytest.raises(MQClientError, match="no write queue 9"):
            await producer.send(Message("T", b"m", queue_id=9))

    scenario_on(["broker-a", "broker-b"], scenario)


# --- retries and failover --------------------------------------------------------------------


def test_a_retryable_broker_error_is_retried_on_the_other_broker() -> None:
    async def scenario(producer: Producer, brokers: list[FakeBroker]) -> None:
        for broker in brokers:
            broker.send_codes = [ResponseCode.SYSTEM_ERROR]
        result = await producer.send(Message("T", b"m"))
        assert result.status is SendStatus.SEND_OK
        # attempt 1 fails on one broker, attempt 2 on the other, attempt 3 succeeds
        second, first = sorted(brokers, key=lambda b: len(b.sends))
        assert (len(first.sends), len(second.sends)) == (2, 1)
        assert result.message_queue.broker_name == first.name
        ids = {p["UNIQ_KEY"] for b in brokers for p in sent_properties(b)}
        assert ids == {result.msg_id}

    scenario_on(["broker-a", "broker-b"], scenario)


def test_system_busy_is_retried_after_a_backoff() -> None:
    async def scenario(producer: Producer, brokers: list[FakeBroker]) -> None:
        brokers[0].send_codes = [ResponseCode.SYSTEM_BUSY, ResponseCode.SYSTEM_BUSY]
        started = asyncio.get_running_loop().time()
        result = await producer.send(Message("T", b"m"))
        waited = asyncio.get_running_loop().time() - started
        assert result.status is SendStatus.SEND_OK
        assert len(brokers[0].sends) == 3
        assert waited >= BUSY_BACKOFF * 2.5  # 0.1 s, then 0.2 s

    scenario_on(["broker-a"], scenario)


def test_a_non_retryable_broker_error_is_raised_at_once_with_its_remark() -> None:
    async def scenario(producer: Producer, brokers: list[FakeBroker]) -> None:
        brokers[0].send_codes = [ResponseCode.MESSAGE_ILLEGAL]
        with pytest.raises(MQBrokerError) as error:
            await producer.send(Message("T", b"m"))
        assert error.value.code == ResponseCode.MESSAGE_ILLEGAL
        assert error.value.remark == "scripted failure 13 of broker-a"
        assert len(brokers[0].sends) == 1

    scenario_on(["broker-a"], scenario)


def test_when_every_attempt_fails_the_error_names_attempts_and_brokers() -> None:
    async def scenario(producer: Producer, brokers: list[FakeBroker]) -> None:
        brokers[0].send_codes = [ResponseCode.SERVICE_NOT_AVAILABLE] * 3
        with pytest.raises(MQClientError) as error:
            await producer.send(Message("T", b"m"))
        assert error.value.code == ResponseCode.SERVICE_NOT_AVAILABLE
        assert "Send [3] times, still failed" in error.value.remark
        assert "BrokersSent: [broker-a, broker-a, broker-a]" in error.value.remark
        assert "scripted failure 14 of broker-a" in error.value.remark
        assert isinstance(error.value.__cause__, MQBrokerError)
        assert len(brokers[0].sends) == 3

    scenario_on(["broker-a"], scenario)


def test_retry_times_bound_the_attempts() -> None:
    async def scenario(producer: Producer, brokers: list[FakeBroker]) -> None:
        brokers[0].send_codes = [ResponseCode.SYSTEM_ERROR] * 5
        with pytest.raises(MQClientError, match=r"Send \[1\] times"):
            await producer.send(Message("T", b"m"))
        assert len(brokers[0].sends) == 1

    scenario_on(["broker-a"], scenario, retry_times_when_send_failed=0)


def test_an_unreachable_broker_fails_over_and_is_then_avoided() -> None:
    async def scenario() -> None:
        namesrv, alive = FakeNamesrv(), FakeBroker("broker-b")
        await namesrv.start()
        await alive.start()
        dead_addr = await closed_port_addr()
        namesrv.routes["T"] = route_of({"broker-a": dead_addr, "broker-b": alive.addr})
        async with Producer("PG", namesrv.addr) as producer:
            results = [await producer.send(Message("T", b"m")) for _ in range(10)]
        assert {r.message_queue.broker_name for r in results} == {"broker-b"}
        assert len(alive.sends) == 10
        await alive.close()
        await namesrv.close()

    run(scenario())


def test_with_no_broker_left_the_error_says_the_connection_failed() -> None:
    async def scenario() -> None:
        namesrv = FakeNamesrv()
        await namesrv.start()
        dead_addr = await closed_port_addr()
        namesrv.routes["T"] = route_of({"broker-a": dead_addr})
        async with Producer("PG", namesrv.addr) as producer:
            with pytest.raises(MQClientError) as error:
                await producer.send(Message("T", b"m"))
        assert error.value.code == ClientErrorCode.CONNECT_BROKER_EXCEPTION
        assert "Send [3] times" in error.value.remark and dead_addr in error.value.remark
        await namesrv.close()

    run(scenario())


def test_flush_disk_timeout_is_a_result_not_an_error() -> None:
    async def scenario(producer: Producer, brokers: list[FakeBroker]) -> None:
        brokers[0].send_codes = [ResponseCode.FLUSH_DISK_TIMEOUT]
        result = await producer.send(Message("T", b"m"))
        assert result.status is SendStatus.FLUSH_DISK_TIMEOUT
        assert len(brokers[0].sends) == 1

    scenario_on(["broker-a"], scenario)


# --- what goes on the wire -------------------------------------------------------------------


def test_the_request_carries_the_message_fields_and_a_fresh_unique_id() -> None:
    async def scenario(producer: Producer, brokers: list[FakeBroker]) -> None:
        msg = Message(
            "T",
            b"\x00\x01binary\xff",
            tags="TagA",
            keys=["k1", "clé"],
            properties={"city": "Zürich"},
            flag=7,
            delay_level=3,
        )
        results = [await producer.send(msg) for _ in range(3)]
        headers = brokers[0].send_headers()
        header = headers[0]
        assert (header.producer_group, header.topic, header.default_topic) == ("PG", "T", "TBW102")
        assert (header.default_topic_queue_nums, header.flag, header.sys_flag) == (4, 7, 0)
        assert header.batch is False and header.bname == "broker-a"
        assert brokers[0].sends[0].body == b"\x00\x01binary\xff"
        properties = sent_properties(brokers[0])
        assert {k: v for k, v in properties[0].items() if k != "UNIQ_KEY"} == {
            "city": "Zürich",
            "TAGS": "TagA",
            "KEYS": "k1 clé",
            "DELAY": "3",
            "WAIT": "true",
        }
        ids = [p["UNIQ_KEY"] for p in properties]
        assert ids == [r.msg_id for r in results]
        assert len(set(ids)) == 3 and all(len(i) == 32 for i in ids)
        assert msg.properties == {"city": "Zürich"}

    scenario_on(["broker-a"], scenario)


def test_bodies_from_4_kib_are_zlib_compressed_with_the_zlib_sysflag() -> None:
    async def scenario(producer: Producer, brokers: list[FakeBroker]) -> None:
        big = bytes(range(256)) * 16  # exactly 4096 bytes
        await producer.send(Message("T", big))
        await producer.send(Message("T", big[:-1]))
        compressed, plain = brokers[0].send_headers()
        assert compressed.sys_flag == 0x301
        assert zlib.decompress(brokers[0].sends[0].body or b"") == big
        assert plain.sys_flag == 0
        assert brokers[0].sends[1].body == big[:-1]

    scenario_on(["broker-a"], scenario)


@pytest.mark.parametrize(
    ("msg", "text"),
    [
        (Message("T", b""), "the message body length is zero"),
        (Message("T", b"x" * (4 * 1024 * 1024 + 1)), "the message body size over max value"),
        (Message("bad topic", b"x"), "contains illegal characters"),
        (Message("SCHEDULE_TOPIC_XXXX", b"x"), "is forbidden"),
        (Message("T", b"x", properties={"UNIQ_KEY": "x"}), "The Property<UNIQ_KEY> is used"),
        (Message("T", b"x", properties={"k": " "}), "can not be null or blank"),
    ],
)
def test_invalid_messages_are_refused_before_anything_is_sent(msg: Message, text: str) -> None:
    async def scenario(producer: Producer, brokers: list[FakeBroker]) -> None:
        with pytest.raises(MQClientError, match=text):
            await producer.send(msg)
        assert brokers[0].sends == []

    scenario_on(["broker-a"], scenario)


def test_a_batch_is_one_request_with_the_batch_layout() -> None:
    async def scenario(producer: Producer, brokers: list[FakeBroker]) -> None:
        msgs = [
            Message("T", b"first", tags="A", flag=1),
            Message("T", b"\xff" * 5000, keys="k2"),
        ]
        result = await producer.send_batch(msgs)
        [request] = brokers[0].sends
        assert request.code == RequestCode.SEND_BATCH_MESSAGE
        header = request.read_header(SendMessageRequestHeader)
        assert header.batch is True and header.sys_flag == 0
        assert header.properties == "WAIT\x01true"
        inner = parse_batch(bytes(request.body or b""))
        assert [(flag, body) for flag, body, _ in inner] == [(1, b"first"), (0, b"\xff" * 5000)]
        properties = [decode_properties(text) for _, _, text in inner]
        assert properties[0]["TAGS"] == "A" and properties[1]["KEYS"] == "k2"
        ids = [p["UNIQ_KEY"] for p in properties]
        assert result.msg_id == ",".join(ids) and ids[0] != ids[1]

    scenario_on(["broker-a"], scenario)


def parse_batch(body: bytes) -> list[tuple[int, bytes, str]]:
    """(flag, body, properties) of each message, read with the spec's batch layout: TOTALSIZE,
    MAGICCODE, BODYCRC, FLAG, body length, body, properties length (int16), properties."""
    messages = []
    pos = 0
    while pos < len(body):
        total, magic, crc, flag, body_len = struct.unpack_from(">iiiii", body, pos)
        assert (magic, crc) == (0, 0)
        start = pos + 20
        (props_len,) = struct.unpack_from(">h", body, start + body_len)
        props = body[start + body_len + 2 : start + body_len + 2 + props_len]
        assert total == 22 + body_len + props_len
        messages.append((flag, body[start : start + body_len], props.decode()))
        pos += total
    return messages


@pytest.mark.parametrize(
    ("msgs", "text"),
    [
        ([], "the batch has no message"),
        ([Message("T", b"a"), Message("U", b"b")], "should be the same"),
        ([Message("T", b"a", delay_level=2)], "TimeDelayLevel is not supported"),
        ([Message("%RETRY%g", b"a")], "Retry Group is not supported"),
        ([Message("T", b"x" * 3_000_000), Message("T", b"y" * 3_000_000)], "over max value"),
    ],
)
def test_invalid_batches_are_refused(msgs: list[Message], text: str) -> None:
    async def scenario(producer: Producer, brokers: list[FakeBroker]) -> None:
        with pytest.raises(MQClientError, match=text):
            await producer.send_batch(msgs)
        assert brokers[0].sends == []

    scenario_on(["broker-a"], scenario)


# --- async, oneway, lifecycle ----------------------------------------------------------------


def test_many_sends_in_flight_at_once_all_complete() -> None:
    async def scenario(producer: Producer, brokers: list[FakeBroker]) -> None:
        results = await asyncio.gather(*(producer.send(Message("T", b"m")) for _ in range(200)))
        assert len({r.msg_id for r in results}) == 200
        assert sum(len(b.sends) for b in brokers) == 200

    scenario_on(["broker-a", "broker-b"], scenario)


def test_send_async_runs_the_callbacks() -> None:
    async def scenario(producer: Producer, brokers: list[FakeBroker]) -> None:
        successes: list[SendResult] = []
        failures: list[BaseException] = []
        brokers[0].send_codes = [ResponseCode.SUCCESS, ResponseCode.MESSAGE_ILLEGAL]
        ok = producer.send_async(Message("T", b"1"), successes.append, failures.append)
        await ok
        bad = producer.send_async(Message("T", b"2"), successes.append, failures.append)
        with pytest.raises(MQBrokerError):
            await bad
        await until(lambda: len(successes) + len(failures) == 2)
        assert successes == [ok.result()]
        assert isinstance(failures[0], MQBrokerError)

    scenario_on(["broker-a"], scenario)


def test_send_oneway_reaches_the_broker_marked_oneway() -> None:
    async def scenario(producer: Producer, brokers: list[FakeBroker]) -> None:
        await producer.send_oneway(Message("T", b"fire and forget"))
        await until(lambda: len(brokers[0].sends) == 1)
        assert brokers[0].sends[0].is_oneway
        assert brokers[0].sends[0].body == b"fire and forget"

    scenario_on(["broker-a"], scenario)


def test_sending_needs_a_started_producer_and_a_real_group() -> None:
    async def scenario() -> None:
        namesrv = FakeNamesrv()
        await namesrv.start()
        producer = Producer("PG", namesrv.addr)
        with pytest.raises(MQClientError, match="not running"):
            await producer.send(Message("T", b"m"))
        with pytest.raises(MQClientError, match="can not equal DEFAULT_PRODUCER"):
            await Producer("DEFAULT_PRODUCER", namesrv.addr).start()
        with pytest.raises(MQClientError, match="illegal characters"):
            await Producer("bad group", namesrv.addr).start()
        await namesrv.close()

    run(scenario())


def test_an_auto_created_topic_is_sent_through_the_template_route() -> None:
    async def scenario(producer: Producer, brokers: list[FakeBroker]) -> None:
        result = await producer.send(Message("Brand-New", b"m"))
        assert result.message_queue.topic == "Brand-New"
        assert result.message_queue.queue_id < 4
        [header] = brokers[0].send_headers()
        assert (header.topic, header.default_topic) == ("Brand-New", "TBW102")

    async def main() -> None:
        namesrv, broker = FakeNamesrv(), FakeBroker("broker-a")
        await namesrv.start()
        await broker.start()
        namesrv.routes["TBW102"] = route_of({"broker-a": broker.addr}, queues=8)
        async with Producer("PG", namesrv.addr) as producer:
            await scenario(producer, [broker])
        await broker.close()
        await namesrv.close()

    run(main())
