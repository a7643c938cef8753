"""The Apache C++ client produces and consumes through real `rmq namesrv` + `rmq broker`.

The issue's client acceptance at full size: 2,000 messages per case (tags, two keys, UTF-8
properties, every tenth body over 4 KiB, which the client compresses), sent by two producer
processes at once.  A push consumer in a fresh group gets every message exactly once and
intact from an auto-created topic and from one created with UPDATE_AND_CREATE_TOPIC; with a
tag filter only the subscribed tags arrive; an orderly consumer keeps every queue's order
under queue locks; two consumers of one group split the queues.  Every test uses a topic and
a group of its own, so one name server and one broker serve the module.  Consumers keep
listening for a moment after the last expected message, so late duplicates would be seen.

The helpers (`message`, `produce`, `consume`, `waiting_consumers`, `assert_intact`) serve the
other C++ client tests of the broker too.
"""

from __future__ import annotations

import time
import zlib
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest

from rmq.common.sysflag import COMPRESSED_FLAG
from rmq.store.offline.reader import StoreReader
from tests.integration.test_broker_admin import create_topic, wait_for_route
from tests.interop.cpp_client import CppProcess, run_cpp, send_all, start_cpp, unique_name
from tests.procs import RemotingSession, RmqProcess, RmqProcesses

pytestmark = pytest.mark.interop

MESSAGES = 2000
PRODUCERS = 2
QUEUES = 4
PROPERTY_NAMES = ["city", "note"]
LINGER = 1.0
"""Seconds a consumer keeps listening after the last message it waits for."""
COMPRESS_OVER = 4096
"""The C++ client compresses bodies of at least this many bytes."""


@pytest.fixture(scope="module")
def broker(module_processes: RmqProcesses, namesrv: RmqProcess) -> Iterator[RmqProcess]:
    process = module_processes.start_broker("cpp-broker", namesrv=namesrv)
    yield process
    process.stop_cleanly()


def message(n: int, tags: str = "TagA") -> dict[str, Any]:
    """Message ``n`` (its body starts with ``body-<n>-``): every tenth body is over 4 KiB,
    two keys, UTF-8 properties."""
    body = f"body-{n}-" + ("x" * 5000 if n % 10 == 0 else "short")
    return {
        "body": body,
        "tags": tags,
        "keys": f"key-{n} order-{n % 7}",
        "properties": {"city": f"Zürich-{n}", "note": "消息 ✓"},
    }


def number(body: str) -> int:
    return int(body.split("-")[1])


def produce(
    namesrv: RmqProcess,
    topic: str,
    messages: Sequence[Mapping[str, Any]],
    producers: int = PRODUCERS,
    **spec: Any,
) -> list[tuple[Mapping[str, Any], dict[str, Any]]]:
    """Send ``messages`` with ``producers`` C++ producer processes at once (round robin);
    every message with its acknowledgement."""
    batches = [messages[first::producers] for first in range(producers)]
    return send_all(namesrv.addr, topic, batches, **spec)


def consume_spec(namesrv: RmqProcess, topic: str, **spec: Any) -> dict[str, Any]:
    return {
        "namesrv": namesrv.addr,
        "topic": topic,
        "properties": PROPERTY_NAMES,
        "linger": LINGER,
        "max_wait": 60,
        **spec,
    }


def consume(namesrv: RmqProcess, topic: str, **spec: Any) -> list[dict[str, Any]]:
    """Once the name server routes ``topic`` (an auto-created topic is registered after its
    first message), run a C++ push consumer until ``count`` messages (and `LINGER`); what it
    received."""
    with RemotingSession() as session:
        wait_for_route(session, namesrv, topic)
    full_spec = consume_spec(namesrv, topic, **spec)
    run = run_cpp("consume", full_spec, timeout=full_spec["max_wait"] + 30)
    messages: list[dict[str, Any]] = run.result["messages"]
    return messages


def create_routed_topic(broker: RmqProcess, namesrv: RmqProcess, topic: str) -> None:
    """UPDATE_AND_CREATE_TOPIC with `QUEUES` queues, then wait until the name server routes
    it."""
    with RemotingSession() as session:
        create_topic(session, broker, topic, QUEUES)
        wait_for_route(session, namesrv, topic)


def waiting_consumers(
    broker: RmqProcess, namesrv: RmqProcess, topic: str, members: int, **spec: Any
) -> list[CppProcess]:
    """``members`` C++ consumers of one fresh group on a new routed topic, started and
    settled: each one's last rebalance saw all ``members`` and together they took every
    queue once.  Nothing is sent yet."""
    create_routed_topic(broker, namesrv, topic)
    group = unique_name("GID_waiting")
    full_spec = consume_spec(namesrv, topic, group=group, **spec)
    consumers = [
        start_cpp("consume", full_spec, timeout=full_spec["max_wait"] + 30) for _ in range(members)
    ]
    try:
        wait_settled(consumers, topic)
    except BaseException:
        for consumer in consumers:
            consumer.close()
        raise
    return consumers


def wait_settled(consumers: list[CppProcess], topic: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while True:
        allocations = [consumer.allocation(topic) for consumer in consumers]
        taken = [queue for a in allocations if a is not None for queue in sorted(a.queue_ids)]
        if all(a is not None and len(a.members) == len(consumers) for a in allocations) and sorted(
            taken
        ) == list(range(QUEUES)):
            return
        for consumer in consumers:
            assert consumer.popen.poll() is None, consumer.wait()
        assert time.monotonic() < deadline, f"consumers of {topic} not settled: {allocations}"
        time.sleep(0.05)


def stop_when_all_received(consumers: list[CppProcess], count: int, timeout: float = 60) -> None:
    """Wait until ``consumers`` received ``count`` messages together, give late duplicates
    `LINGER` seconds, then stop them."""
    deadline = time.monotonic() + timeout
    while sum(consumer.progress() for consumer in consumers) < count:
        assert time.monotonic() < deadline, [consumer.progress() for consumer in consumers]
        time.sleep(0.05)
    time.sleep(LINGER)
    for consumer in consumers:
        consumer.stop()


def assert_intact(
    received: list[dict[str, Any]], topic: str, sent: Sequence[Mapping[str, Any]]
) -> None:
    """Every message of ``sent`` exactly once (by body), as it was sent."""
    by_body = {fields["body"]: fields for fields in sent}
    bodies = [got["body"] for got in received]
    assert len(bodies) == len(set(bodies)), "a message arrived twice"
    assert set(bodies) == set(by_body)
    for got in received:
        original = by_body[got["body"]]
        assert got["topic"] == topic
        assert (got["tags"], got["keys"]) == (original["tags"], original["keys"])
        assert got["properties"] == original["properties"]
        assert got["reconsume_times"] == 0


def queue_offsets(received: list[dict[str, Any]]) -> dict[int, list[int]]:
    """Queue id -> the queue offsets received from it, in arrival order."""
    per_queue: dict[int, list[int]] = defaultdict(list)
    for got in received:
        per_queue[got["queue_id"]].append(got["queue_offset"])
    return per_queue


def assert_stored_compressed_over_4k(
    broker: RmqProcess, topic: str, sent: Sequence[Mapping[str, Any]]
) -> None:
    """The records of ``topic`` in the broker's store: bodies of at least 4 KiB were
    compressed by the client (sysFlag bit 0) and inflate to what was sent."""
    by_body = {fields["body"].encode(): fields for fields in sent}
    stored = 0
    with StoreReader(broker.home / "store") as store:
        for queue_id in range(QUEUES):
            for stored_message in store.read_queue(topic, queue_id):
                record = stored_message.record
                assert record is not None, stored_message.error
                assert record.body is not None
                compressed = bool(record.sys_flag & COMPRESSED_FLAG)
                body = zlib.decompress(record.body) if compressed else record.body
                assert body in by_body
                assert compressed == (len(body) >= COMPRESS_OVER)
                stored += 1
    assert stored == len(sent)


@pytest.mark.parametrize("created_by", ["auto-creation", "UPDATE_AND_CREATE_TOPIC"])
def test_a_fresh_group_receives_every_message_exactly_once_and_intact(
    broker: RmqProcess, namesrv: RmqProcess, created_by: str
) -> None:
    topic = unique_name("ConsumeAll")
    if created_by == "UPDATE_AND_CREATE_TOPIC":
        create_routed_topic(broker, namesrv, topic)
    messages = [message(n, tags=("TagA", "TagB", "TagC")[n % 3]) for n in range(MESSAGES)]
    produce(namesrv, topic, messages)

    received = consume(namesrv, topic, count=len(messages))

    assert_intact(received, topic, messages)
    per_queue = queue_offsets(received)
    assert sorted(per_queue) == list(range(QUEUES))
    for offsets in per_queue.values():
        assert sorted(offsets) == list(range(len(offsets)))
    assert_stored_compressed_over_4k(broker, topic, messages)


def test_a_tag_filter_delivers_only_the_subscribed_tags(
    broker: RmqProcess, namesrv: RmqProcess
) -> None:
    topic = unique_name("ConsumeTags")
    # Each producer sends its filtered-out tags first, so in every queue they precede the
    # last message the consumer waits for.
    unwanted = [message(n, tags=("TagB", "TagD")[n % 2]) for n in range(MESSAGES // 2)]
    wanted = [message(n, tags=("TagA", "TagC")[n % 2]) for n in range(MESSAGES // 2, MESSAGES)]
    produce(namesrv, topic, unwanted + wanted)

    received = consume(namesrv, topic, expression="TagA || TagC", count=len(wanted))

    assert_intact(received, topic, wanted)


def test_an_orderly_consumer_keeps_queue_order_under_queue_locks(
    broker: RmqProcess, namesrv: RmqProcess
) -> None:
    topic = unique_name("ConsumeOrderly")
    create_routed_topic(broker, namesrv, topic)
    per_queue = MESSAGES // QUEUES
    batches = [
        [{**message(per_queue * queue_id + n), "orderly_arg": queue_id} for n in range(per_queue)]
        for queue_id in range(QUEUES)
    ]
    # One producer per queue, each sending its queue's messages in order.
    sent = send_all(namesrv.addr, topic, batches, mode="orderly")
    group = unique_name("GID_orderly")

    received = consume(namesrv, topic, group=group, orderly=True, count=MESSAGES)

    assert_intact(received, topic, [fields for batch in batches for fields in batch])
    acknowledged = {fields["body"]: (ack["queue_id"], ack["offset"]) for fields, ack in sent}
    assert {got["body"]: (got["queue_id"], got["queue_offset"]) for got in received} == (
        acknowledged
    )
    arrivals: dict[int, list[int]] = defaultdict(list)
    for got in received:
        arrivals[got["queue_id"]].append(number(got["body"]))
    assert sorted(arrivals) == list(range(QUEUES))
    for queue_id, sequence in arrivals.items():
        assert sequence == [per_queue * queue_id + n for n in range(per_queue)], queue_id
    log = broker.log_text()
    for queue_id in range(QUEUES):
        locked = f"lock MessageQueue [topic={topic}, brokerName={broker.name}, queueId={queue_id}]"
        assert f"- {locked} of group {group} for " in log, log[-2000:]


def test_two_consumers_of_one_group_split_the_queues(
    broker: RmqProcess, namesrv: RmqProcess
) -> None:
    topic = unique_name("ConsumeSplit")
    messages = [message(n) for n in range(MESSAGES)]
    consumers = waiting_consumers(broker, namesrv, topic, 2, count=len(messages))
    with consumers[0], consumers[1]:
        produce(namesrv, topic, messages)
        stop_when_all_received(consumers, len(messages))
        first, second = (consumer.wait().result["messages"] for consumer in consumers)

    assert_intact(first + second, topic, messages)
    first_queues = {got["queue_id"] for got in first}
    second_queues = {got["queue_id"] for got in second}
    assert first_queues and second_queues
    assert not first_queues & second_queues
    assert first_queues | second_queues == set(range(QUEUES))
