"""rmq's producer against real `rmq namesrv` + `rmq broker` processes.

Every way of sending (sync, async, oneway, batch, ordered, to a topic that does not exist
yet) is followed by raw PULL_MESSAGE requests (`api.pull_message`, records walked with
`rmq.common.message.iter_records`) that check what the broker stored: binary bodies, UTF-8
keys and properties, tags, unique ids and queue offsets.  The last test kills brokers with
SIGKILL under a running producer: it fails over while one is left and then gives up with an
error that says so.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Coroutine, Iterator
from typing import Any

import pytest

from rmq.client import api
from rmq.client.errors import ClientErrorCode, MQClientError
from rmq.client.message import Message
from rmq.client.producer import Producer
from rmq.common.message import MessageRecord
from rmq.common.sysflag import build_pull_flag
from rmq.remoting.bodies import MessageQueue
from rmq.remoting.client import RemotingClient
from rmq.remoting.headers import PullMessageRequestHeader
from tests.procs import RmqProcess, RmqProcesses

TIMEOUT = 5.0
_names = itertools.count()


def topic_name(prefix: str) -> str:
    return f"{prefix}-{next(_names)}"


def run(scenario: Coroutine[Any, Any, None], timeout: float = 30.0) -> None:
    asyncio.run(asyncio.wait_for(scenario, timeout))


@pytest.fixture(scope="module")
def broker(module_processes: RmqProcesses, namesrv: RmqProcess) -> Iterator[RmqProcess]:
    process = module_processes.start_broker("producer-broker", namesrv=namesrv)
    yield process
    process.stop_cleanly()


async def pull_queue(addr: str, mq: MessageQueue, offset: int = 0) -> list[MessageRecord]:
    """Every record of `mq` from `offset` on, by raw pulls with the subscription in the
    header (no heartbeat needed)."""
    records: list[MessageRecord] = []
    async with RemotingClient() as client:
        while True:
            header = PullMessageRequestHeader(
                consumer_group="producer-test-reader",
                topic=mq.topic,
                queue_id=mq.queue_id,
                queue_offset=offset,
                max_msg_nums=32,
                sys_flag=build_pull_flag(commit_offset=False, suspend=False, subscription=True),
                commit_offset=0,
                suspend_timeout_millis=0,
                subscription="*",
                sub_version=0,
                expression_type="TAG",
            )
            result = await api.pull_message(client, addr, header, TIMEOUT)
            if result.status is not api.PullStatus.FOUND:
                return records
            records += result.records()
            offset = result.next_begin_offset


async def pull_topic(addr: str, topic: str, queues: int = 4) -> list[MessageRecord]:
    pulls = [pull_queue(addr, MessageQueue(topic, "", queue_id)) for queue_id in range(queues)]
    return [record for records in await asyncio.gather(*pulls) for record in records]


def test_a_sync_send_is_stored_with_every_field_intact(
    broker: RmqProcess, namesrv: RmqProcess
) -> None:
    topic = topic_name("ProducerSync")
    binary = bytes(range(256)) * 3
    large = ("äöü € " * 2000).encode()  # over 4 KiB: sent compressed

    async def scenario() -> None:
        async with Producer("producer-sync", namesrv.addr) as producer:
            first = await producer.send(
                Message(
                    topic,
                    binary,
                    tags="TagA",
                    keys=["order-1", "clé-2"],
                    properties={"city": "Zürich", "emoji": "🚀"},
                    flag=42,
                )
            )
            second = await producer.send(Message(topic, large, keys="big"))
        assert first.status is api.SendStatus.SEND_OK
        [record] = await pull_queue(broker.addr, first.message_queue, first.queue_offset)
        assert record.body == binary
        assert record.topic == topic and record.tags == "TagA"
        assert record.keys == ["order-1", "clé-2"]
        assert record.properties["city"] == "Zürich" and record.properties["emoji"] == "🚀"
        assert record.flag == 42
        assert record.msg_id == first.msg_id
        assert record.offset_msg_id == first.offset_msg_id
        assert (record.queue_id, record.queue_offset) == (
            first.message_queue.queue_id,
            first.queue_offset,
        )
        [big] = await pull_queue(broker.addr, second.message_queue, second.queue_offset)
        assert big.sys_flag & 0x1 and big.body != large
        assert big.decompressed_body() == large
        assert big.msg_id == second.msg_id

    run(scenario())


def test_a_new_topic_is_created_by_its_first_send_with_four_queues(
    broker: RmqProcess, namesrv: RmqProcess
) -> None:
    topic = topic_name("ProducerAutoCreate")

    async def scenario() -> None:
        async with Producer("producer-auto", namesrv.addr) as producer:
            results = [await producer.send(Message(topic, f"m{i}".encode())) for i in range(8)]
            route = await producer.instance.get_route(topic, refresh=True)
        assert [(q.read_queue_nums, q.write_queue_nums) for q in route.queue_datas] == [(4, 4)]
        assert {r.message_queue.queue_id for r in results} == {0, 1, 2, 3}
        stored = await pull_topic(broker.addr, topic)
        assert sorted(r.body or b"" for r in stored) == sorted(f"m{i}".encode() for i in range(8))

    run(scenario())


def test_async_and_oneway_sends_are_all_stored(broker: RmqProcess, namesrv: RmqProcess) -> None:
    topic = topic_name("ProducerAsync")

    async def scenario() -> None:
        async with Producer("producer-async", namesrv.addr) as producer:
            await producer.send(Message(topic, b"create"))
            tasks = [producer.send_async(Message(topic, f"a{i}".encode())) for i in range(100)]
            results = await asyncio.gather(*tasks)
            for i in range(50):
                await producer.send_oneway(Message(topic, f"o{i}".encode()))
            await producer.send(Message(topic, b"last"))  # answered after the oneway ones
        stored = await pull_topic(broker.addr, topic)
        bodies = {r.body for r in stored}
        assert {f"a{i}".encode() for i in range(100)} <= bodies
        assert {f"o{i}".encode() for i in range(50)} <= bodies
        assert len(stored) == 152
        ids = {r.msg_id for r in stored}
        assert {r.msg_id for r in results} <= ids and len(ids) == 152

    run(scenario())


def test_a_batch_is_stored_as_consecutive_messages_of_one_queue(
    broker: RmqProcess, namesrv: RmqProcess
) -> None:
    topic = topic_name("ProducerBatch")
    msgs = [
        Message(topic, f"batch-{i}".encode() + b"\x00\xff", keys=f"k{i}", tags="B")
        for i in range(32)
    ]

    async def scenario() -> None:
        async with Producer("producer-batch", namesrv.addr) as producer:
            await producer.send(Message(topic, b"create"))
            result = await producer.send_batch(msgs)
        stored = await pull_queue(broker.addr, result.message_queue, result.queue_offset)
        assert [r.body for r in stored] == [m.body for m in msgs]
        assert [r.queue_offset for r in stored] == [result.queue_offset + i for i in range(32)]
        assert [r.msg_id for r in stored] == result.msg_id.split(",")
        assert [r.keys for r in stored] == [[f"k{i}"] for i in range(32)]
        assert {r.tags for r in stored} == {"B"}
        assert [r.offset_msg_id for r in stored] == result.offset_msg_id.split(",")

    run(scenario())


def test_ordered_sends_keep_each_keys_order_in_one_queue(
    broker: RmqProcess, namesrv: RmqProcess
) -> None:
    topic = topic_name("ProducerOrdered")
    keys = [f"order-{n}" for n in range(6)]

    async def scenario() -> None:
        async with Producer("producer-ordered", namesrv.addr) as producer:
            await producer.send(Message(topic, b"create"))
            queue_of: dict[str, set[MessageQueue]] = {key: set() for key in keys}
            for step in range(10):
                for key in keys:
                    msg = Message(topic, f"{key}:{step}".encode(), keys=key)
                    result = await producer.send(msg, sharding_key=key)
                    queue_of[key].add(result.message_queue)
        assert all(len(queues) == 1 for queues in queue_of.values())
        for key, (queue,) in queue_of.items():
            stored = [r for r in await pull_queue(broker.addr, queue) if r.keys == [key]]
            assert [r.body for r in stored] == [f"{key}:{step}".encode() for step in range(10)]

    run(scenario())


def test_a_killed_broker_is_failed_over_until_none_is_left(rmq_processes: RmqProcesses) -> None:
    namesrv = rmq_processes.start_namesrv()
    broker_a = rmq_processes.start_broker("broker-a", namesrv=namesrv)
    broker_b = rmq_processes.start_broker("broker-b", namesrv=namesrv)
    topic = topic_name("ProducerFailover")

    async def scenario() -> None:
        async with Producer("producer-failover", namesrv.addr, fault_isolation=0) as producer:
            before = [await producer.send(Message(topic, b"m")) for _ in range(16)]
            assert {r.message_queue.broker_name for r in before} == {"broker-a", "broker-b"}
            broker_b.kill()
            after = [await producer.send(Message(topic, f"a{i}".encode())) for i in range(16)]
            assert {r.message_queue.broker_name for r in after} == {"broker-a"}
            broker_a.kill()
            with pytest.raises(MQClientError) as error:
                await producer.send(Message(topic, b"lost"))
        assert error.value.code == ClientErrorCode.CONNECT_BROKER_EXCEPTION
        assert "Send [3] times, still failed" in error.value.remark
        assert "broker-a" in error.value.remark and "broker-b" in error.value.remark

    run(scenario())
