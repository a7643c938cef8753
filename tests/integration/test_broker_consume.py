"""The Apache C++ client consumes through real `rmq namesrv` + `rmq broker` processes.

Its producer sends, its push consumer (concurrent or orderly) receives; every test uses a
topic and a consumer group of its own, so one name server and one broker serve the module.
What is checked is what a user of the client sees: every message exactly once with body,
tags, keys and properties intact, a tag filter, per-queue order under queue locks, two
members of a group splitting the queues, and a consumer that is already waiting getting new
messages at once (long polling).
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import pytest

from rmq.remoting.bodies import GetConsumerListByGroupResponseBody
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.headers import GetConsumerListByGroupRequestHeader
from tests.integration.test_broker_admin import create_topic, wait_for_route
from tests.interop.cpp_client import run_cpp, unique_name
from tests.procs import RemotingSession, RmqProcess, RmqProcesses

pytestmark = pytest.mark.interop

PROPERTY_NAMES = ["city", "note"]
MAX_SPEC_BYTES = 100_000
QUEUES = 4


@pytest.fixture(scope="module")
def broker(module_processes: RmqProcesses, namesrv: RmqProcess) -> Iterator[RmqProcess]:
    process = module_processes.start_broker("consume-broker", namesrv=namesrv)
    yield process
    process.stop_cleanly()


def message(n: int, tags: str = "TagA") -> dict[str, Any]:
    """Message ``n``: every tenth body is over 4 KiB (the client compresses those), two keys
    and UTF-8 properties."""
    body = f"body-{n}-" + ("x" * 5000 if n % 10 == 0 else "short")
    return {
        "body": body,
        "tags": tags,
        "keys": f"key-{n} order-{n % 7}",
        "properties": {"city": f"Zürich-{n}", "note": "消息 ✓"},
    }


def produce(namesrv: RmqProcess, topic: str, messages: list[dict[str, Any]], **spec: Any) -> None:
    """Send ``messages`` with the C++ producer, in runs whose spec fits one command-line
    argument (the driver takes it as argv, at most 128 KiB)."""
    chunk: list[dict[str, Any]] = []
    size = 0
    for fields in messages:
        chunk.append(fields)
        size += len(json.dumps(fields))
        if size > MAX_SPEC_BYTES or fields is messages[-1]:
            run = run_cpp(
                "produce",
                {"namesrv": namesrv.addr, "topic": topic, "messages": chunk, **spec},
                timeout=120,
            )
            failed = [result for result in run.result["results"] if not result["ok"]]
            assert not failed, failed[:3]
            chunk, size = [], 0


def consume(namesrv: RmqProcess, topic: str, **spec: Any) -> list[dict[str, Any]]:
    run = run_cpp(
        "consume",
        {"namesrv": namesrv.addr, "topic": topic, "properties": PROPERTY_NAMES, **spec},
        timeout=float(spec.get("max_wait", 30)) + 60,
    )
    messages: list[dict[str, Any]] = run.result["messages"]
    return messages


def create_routed_topic(broker: RmqProcess, namesrv: RmqProcess, topic: str) -> None:
    """UPDATE_AND_CREATE_TOPIC with four queues, then wait until the name server routes it."""
    with RemotingSession() as session:
        create_topic(session, broker, topic, QUEUES)
        wait_for_route(session, namesrv, topic)


def consumer_ids(broker: RmqProcess, group: str) -> list[str]:
    header = GetConsumerListByGroupRequestHeader(consumer_group=group)
    with RemotingSession() as session:
        response = session.invoke(broker.addr, RequestCode.GET_CONSUMER_LIST_BY_GROUP, header)
    if response.code != ResponseCode.SUCCESS:
        return []
    return GetConsumerListByGroupResponseBody.decode(response.body or b"").consumer_id_list


def wait_for_consumers(broker: RmqProcess, group: str, count: int, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while len(consumer_ids(broker, group)) < count:
        assert time.monotonic() < deadline, f"{group} has not {count} consumers"
        time.sleep(0.1)


class Background:
    """A C++ consumer run in a thread, so the test can produce while it waits."""

    def __init__(self, namesrv: RmqProcess, topic: str, **spec: Any) -> None:
        self.result: list[dict[str, Any]] | None = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(namesrv, topic, spec))
        self._thread.start()

    def _run(self, namesrv: RmqProcess, topic: str, spec: dict[str, Any]) -> None:
        try:
            self.result = consume(namesrv, topic, **spec)
        except BaseException as exc:
            self.error = exc

    def join(self) -> list[dict[str, Any]]:
        self._thread.join()
        if self.error is not None:
            raise self.error
        assert self.result is not None
        return self.result


def waiting_consumers(
    broker: RmqProcess, namesrv: RmqProcess, topic: str, members: int, **spec: Any
) -> list[Background]:
    """``members`` consumers of one fresh group on a routed topic, all registered with the
    broker and past their first rebalance, with pulls parked (nothing is sent yet)."""
    create_routed_topic(broker, namesrv, topic)
    group = unique_name("GID_waiting")
    consumers = [Background(namesrv, topic, group=group, **spec) for _ in range(members)]
    wait_for_consumers(broker, group, members)
    time.sleep(2.0)
    return consumers


def assert_intact(
    received: list[dict[str, Any]], topic: str, sent: dict[str, dict[str, Any]]
) -> None:
    """Every message of ``sent`` (by body) exactly once, as it was sent."""
    bodies = [got["body"] for got in received]
    assert len(bodies) == len(set(bodies)), "a message arrived twice"
    assert set(bodies) == set(sent)
    for got in received:
        original = sent[got["body"]]
        assert got["topic"] == topic
        assert (got["tags"], got["keys"]) == (original["tags"], original["keys"])
        assert got["properties"] == original["properties"]
        assert got["reconsume_times"] == 0


@pytest.mark.parametrize("created_by", ["auto-creation", "UPDATE_AND_CREATE_TOPIC"])
def test_a_fresh_group_receives_every_message_exactly_once_and_intact(
    broker: RmqProcess, namesrv: RmqProcess, created_by: str
) -> None:
    topic = unique_name("ConsumeAll")
    if created_by == "UPDATE_AND_CREATE_TOPIC":
        create_routed_topic(broker, namesrv, topic)
    messages = [message(n, tags=("TagA", "TagB", "TagC")[n % 3]) for n in range(600)]
    produce(namesrv, topic, messages)

    received = consume(namesrv, topic, count=len(messages), max_wait=60)

    assert_intact(received, topic, {m["body"]: m for m in messages})
    per_queue: dict[int, list[int]] = defaultdict(list)
    for got in received:
        per_queue[got["queue_id"]].append(got["queue_offset"])
    assert sorted(per_queue) == list(range(QUEUES))
    for queue_offsets in per_queue.values():
        assert sorted(queue_offsets) == list(range(len(queue_offsets)))


def test_a_tag_filter_delivers_only_the_subscribed_tags(
    broker: RmqProcess, namesrv: RmqProcess
) -> None:
    topic = unique_name("ConsumeTags")
    # Filtered-out tags go first, so in every queue they precede what the consumer waits for.
    unwanted = [message(n, tags=("TagB", "TagD")[n % 2]) for n in range(200)]
    wanted = [message(n, tags=("TagA", "TagC")[n % 2]) for n in range(200, 400)]
    produce(namesrv, topic, unwanted + wanted)

    received = consume(namesrv, topic, expression="TagA || TagC", count=len(wanted), max_wait=60)

    assert_intact(received, topic, {m["body"]: m for m in wanted})


def test_a_waiting_consumer_gets_new_messages_at_once(
    broker: RmqProcess, namesrv: RmqProcess
) -> None:
    topic = unique_name("ConsumeLive")
    messages = [message(n) for n in range(200)]
    (consumer,) = waiting_consumers(broker, namesrv, topic, 1, count=len(messages), max_wait=60)

    started = time.monotonic()
    produce(namesrv, topic, messages)
    received = consumer.join()
    elapsed = time.monotonic() - started

    assert_intact(received, topic, {m["body"]: m for m in messages})
    # Parked pulls are held for 15 s: only a wake-up on arrival answers this fast.
    assert elapsed < 10, f"took {elapsed:.1f} s"


def test_an_orderly_consumer_keeps_queue_order_under_queue_locks(
    broker: RmqProcess, namesrv: RmqProcess
) -> None:
    topic = unique_name("ConsumeOrderly")
    create_routed_topic(broker, namesrv, topic)
    sent: dict[str, dict[str, Any]] = {}
    for queue_id in range(QUEUES):
        batch = [message(1000 * queue_id + n) for n in range(60)]
        produce(namesrv, topic, batch, mode="orderly", orderly_arg=queue_id)
        sent.update((m["body"], m) for m in batch)
    group = unique_name("GID_orderly")

    received = consume(namesrv, topic, group=group, orderly=True, count=len(sent), max_wait=60)

    assert_intact(received, topic, sent)
    per_queue: dict[int, list[int]] = defaultdict(list)
    for got in received:
        per_queue[got["queue_id"]].append(int(got["body"].split("-")[1]))
    assert sorted(per_queue) == list(range(QUEUES))
    for queue_id, sequence in per_queue.items():
        assert sequence == sorted(sequence), f"queue {queue_id} out of order"
        assert [n // 1000 for n in sequence] == [queue_id] * len(sequence)
    log = broker.log_text()
    for queue_id in range(QUEUES):
        assert f"queueId={queue_id}] of group {group} for " in log, log[-2000:]


def test_two_consumers_of_one_group_split_the_queues(
    broker: RmqProcess, namesrv: RmqProcess
) -> None:
    topic = unique_name("ConsumeSplit")
    messages = [message(n) for n in range(400)]
    consumers = waiting_consumers(broker, namesrv, topic, 2, count=len(messages), max_wait=9)

    produce(namesrv, topic, messages)
    first, second = (consumer.join() for consumer in consumers)

    assert_intact(first + second, topic, {m["body"]: m for m in messages})
    first_queues = {got["queue_id"] for got in first}
    second_queues = {got["queue_id"] for got in second}
    assert first_queues and second_queues
    assert not first_queues & second_queues
    assert first_queues | second_queues == set(range(QUEUES))
