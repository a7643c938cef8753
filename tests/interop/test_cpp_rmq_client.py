"""rmq's client and the Apache C++ client exchange messages through one rmq broker.

Messages sent by rmq's producer are consumed by a C++ push consumer, and messages sent by
the C++ producer are consumed by rmq's push consumer, with topic, tags, keys, UTF-8
properties and bodies intact.  Every tenth body is over 4 KiB, so each side also reads the
other side's zlib-compressed bodies.  (The C++ wrapper passes bodies as C strings, so the
bodies are text; binary bodies are covered by rmq-to-rmq tests.)
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest

from rmq.client.consumer import ConsumeFromWhere, ConsumeStatus, MessageExt, PushConsumer
from rmq.client.message import Message
from rmq.client.producer import Producer, SendStatus
from tests.interop.cpp_client import unique_name
from tests.interop.test_cpp_broker import assert_intact, consume, message, produce
from tests.procs import RmqProcess, RmqProcesses

pytestmark = pytest.mark.interop

MESSAGES = 500
PROPERTY_NAMES = ("city", "note")


@pytest.fixture(scope="module")
def broker(module_processes: RmqProcesses, namesrv: RmqProcess) -> Iterator[RmqProcess]:
    process = module_processes.start_broker("interop-broker", namesrv=namesrv)
    yield process
    process.stop_cleanly()


async def rmq_send(namesrv: RmqProcess, topic: str, messages: Sequence[Mapping[str, Any]]) -> None:
    async with Producer(unique_name("GID_rmq_producer"), namesrv.addr) as producer:
        for fields in messages:
            result = await producer.send(
                Message(
                    topic,
                    fields["body"].encode(),
                    tags=fields["tags"],
                    keys=fields["keys"].split(" "),
                    properties=dict(fields["properties"]),
                )
            )
            assert result.status is SendStatus.SEND_OK


async def rmq_receive(namesrv: RmqProcess, topic: str, count: int) -> list[dict[str, Any]]:
    """Run an rmq push consumer in a fresh group until ``count`` messages arrived, then
    half a second more (so a duplicate would be seen); the messages in the C++ driver's
    result shape."""
    received: list[dict[str, Any]] = []
    done = asyncio.Event()

    async def listener(batch: list[MessageExt]) -> ConsumeStatus:
        for ext in batch:
            received.append(
                {
                    "topic": ext.topic,
                    "tags": ext.tags,
                    "keys": " ".join(ext.keys),
                    "body": ext.body.decode(),
                    "properties": {name: ext.properties.get(name) for name in PROPERTY_NAMES},
                    "reconsume_times": ext.reconsume_times,
                }
            )
        if len(received) >= count:
            done.set()
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer(
        unique_name("GID_rmq_consumer"),
        namesrv.addr,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    )
    consumer.subscribe(topic, "*")
    consumer.register_listener(listener)
    async with consumer:
        await asyncio.wait_for(done.wait(), 60)
        await asyncio.sleep(0.5)
    return received


def test_messages_from_rmq_reach_the_cpp_consumer_intact(
    broker: RmqProcess, namesrv: RmqProcess
) -> None:
    topic = unique_name("RmqToCpp")
    sent = [message(n) for n in range(MESSAGES)]
    asyncio.run(rmq_send(namesrv, topic, sent))

    received = consume(namesrv, topic, count=MESSAGES)

    assert_intact(received, topic, sent)


def test_messages_from_the_cpp_producer_reach_rmq_intact(
    broker: RmqProcess, namesrv: RmqProcess
) -> None:
    topic = unique_name("CppToRmq")
    sent = [message(n, tags="TagB") for n in range(MESSAGES)]
    acknowledged = produce(namesrv, topic, sent)
    assert all(ack["ok"] for _, ack in acknowledged)

    received = asyncio.run(rmq_receive(namesrv, topic, MESSAGES))

    assert_intact(received, topic, sent)
