"""A soak: 8 producers and 8 consumers against a real `rmq broker`, its memory and open files
sampled all along.

The producers (8 rmq `Producer`s, each its own client instance) send 256-byte messages at a
steady pace to one topic of 8 queues; the consumers are two groups of 4 `PushConsumer`s,
started, and their queue shares settled, before the first send.  Every few seconds the
broker's anonymous memory (RssAnon in /proc/<pid>/status: mapped store files do not count)
and its open descriptors (/proc/<pid>/fd) are sampled.

What is asserted:

* **no growth trend**: the samples after the warm-up (the first fifth of the run) are cut in
  thirds; the last third's largest RssAnon is at most 10 % (and 8 MiB of slack for small
  numbers) above the first third's largest, and its largest descriptor count at most 4 above
  the first third's;
* **exactly once per group**: every message a producer saw acknowledged (SEND_OK) is consumed
  exactly once by each group while the groups are steady, up to a mark sent to every queue
  at the end (a send that failed may or may not have been stored; it is not counted; the
  consumers' shutdown afterwards hands queues over and may deliver again: not counted);
* the broker is still running and more than a quarter of the sends asked for were
  acknowledged.

A 30 s sample in `make test`; 30 minutes under `make stress`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field

import pytest

from rmq.client import api
from rmq.client.consumer import ConsumeFromWhere, ConsumeStatus, MessageExt, PushConsumer
from rmq.client.errors import ClientError
from rmq.client.message import Message
from rmq.client.producer import Producer
from rmq.remoting.bodies import TopicConfig
from rmq.remoting.client import RemotingClient
from rmq.remoting.errors import RemotingError
from tests.fuzzing import STRESS_MARKS
from tests.procs import RmqProcess, RmqProcesses

TOPIC = "SoakTopic"
QUEUES = 8
PRODUCERS = 8
GROUPS = ("soak-a", "soak-b")
MEMBERS = 4
RATE = 25
"""Messages a second per producer."""
BODY = b"s" * 256
SAMPLE_EVERY = 2.0
RSS_GROWTH = 0.10
RSS_SLACK = 8 << 20
FD_SLACK = 4


@dataclass
class Sample:
    at: float
    rss_anon: int
    open_files: int


@dataclass
class Soak:
    broker: RmqProcess
    acked: list[str] = field(default_factory=list)
    failed: int = 0
    consumed: dict[str, Counter[str]] = field(default_factory=dict)
    samples: list[Sample] = field(default_factory=list)
    deliveries: dict[str, list[str]] = field(default_factory=dict)
    counting: bool = True
    """Message id -> where each delivery came from (member, queue, offset)."""
    shares: list[list[set[int]]] = field(default_factory=list)
    """Each consumer's queue ids, at the start of the sends and whenever they changed."""


async def sampler(soak: Soak, stop: asyncio.Event, note_shares: Callable[[], None]) -> None:
    while not stop.is_set():
        broker = soak.broker
        soak.samples.append(Sample(time.monotonic(), broker.rss_anon(), broker.open_files()))
        note_shares()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), SAMPLE_EVERY)


async def produce(soak: Soak, producer: Producer, until: float) -> None:
    """Send at RATE a second until `until` (monotonic), one send at a time."""
    sent = 0
    start = time.monotonic()
    while (now := time.monotonic()) < until:
        pause = start + sent / RATE - now
        if pause > 0:
            await asyncio.sleep(pause)  # pacing, not waiting for a condition
        sent += 1
        try:
            result = await producer.send(Message(TOPIC, BODY, tags="soak"))
        except (ClientError, RemotingError):
            soak.failed += 1
            continue
        soak.acked.append(result.msg_id)


def listener(
    soak: Soak, group: str, member: str
) -> Callable[[list[MessageExt]], Awaitable[ConsumeStatus]]:
    """Counts the deliveries to `group` until the run's end: the consumers' shutdown that
    follows moves the queues of each member leaving to those still running, which may
    deliver again what was consumed but not committed yet (at least once, as RocketMQ
    promises for a group whose members change)."""

    async def consume(messages: list[MessageExt]) -> ConsumeStatus:
        if soak.counting:
            for message in messages:
                soak.consumed[group][message.msg_id] += 1
                where = f"{member} q{message.queue_id}@{message.queue_offset}"
                soak.deliveries.setdefault(message.msg_id, []).append(where)
        return ConsumeStatus.CONSUME_SUCCESS

    return consume


async def until(condition: Callable[[], bool], timeout: float) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.1)


async def soak_run(soak: Soak, namesrv_addr: str, duration: float) -> None:
    async with RemotingClient() as client:
        config = TopicConfig(topic_name=TOPIC, read_queue_nums=QUEUES, write_queue_nums=QUEUES)
        await api.update_and_create_topic(client, soak.broker.addr, config, 10.0)
    consumers: list[PushConsumer] = []
    for group in GROUPS:
        soak.consumed[group] = Counter()
        for index in range(MEMBERS):
            push = PushConsumer(
                group,
                namesrv_addr,
                instance_name=f"{group}-{index}",
                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            )
            push.subscribe(TOPIC, "*")
            push.register_listener(listener(soak, group, f"{group}-{index}"))
            consumers.append(push)
    producers = [
        Producer("soak-producers", namesrv_addr, instance_name=f"producer-{n}")
        for n in range(PRODUCERS)
    ]
    for member in [*consumers, *producers]:
        await member.start()
    try:

        def shares() -> list[set[int]]:
            return [
                {mq.queue_id for mq in push.process_queue_table if mq.topic == TOPIC}
                for push in consumers
            ]

        def settled() -> bool:
            now = shares()
            return all(
                all(len(share) == QUEUES // MEMBERS for share in now[g : g + MEMBERS])
                and set().union(*now[g : g + MEMBERS]) == set(range(QUEUES))
                for g in range(0, len(now), MEMBERS)
            )

        def note_shares() -> None:
            if not soak.shares or soak.shares[-1] != shares():
                soak.shares.append(shares())

        await until(settled, 60)
        note_shares()
        stop = asyncio.Event()
        sampling = asyncio.create_task(sampler(soak, stop, note_shares))
        end = time.monotonic() + duration
        await asyncio.gather(*(produce(soak, producer, end) for producer in producers))
        acked = set(soak.acked)
        await until(
            lambda: all(acked <= soak.consumed[group].keys() for group in GROUPS),
            max(30.0, duration / 10),
        )
        stop.set()
        await sampling
        # A mark in every queue (the producer takes the queues in turn): once both groups
        # have every mark, their pulls have passed everything sent before, so a message
        # that was going to come twice has come.
        marks = {(await producers[0].send(Message(TOPIC, b"mark"))).msg_id for _ in range(QUEUES)}
        await until(lambda: all(marks <= soak.consumed[group].keys() for group in GROUPS), 30)
        soak.counting = False
    finally:
        for member in [*producers, *consumers]:
            await member.shutdown()


def growth_trend(samples: list[Sample]) -> tuple[list[Sample], list[Sample]]:
    """The first and last thirds of the samples after the warm-up (the first fifth)."""
    start = samples[0].at + (samples[-1].at - samples[0].at) / 5
    steady = [s for s in samples if s.at >= start]
    third = len(steady) // 3
    return steady[:third], steady[-third:]


@pytest.fixture
def soak_broker(rmq_processes: RmqProcesses) -> Iterator[tuple[RmqProcess, RmqProcess]]:
    namesrv = rmq_processes.start_namesrv("soak-namesrv")
    broker = rmq_processes.start_broker("soak-broker", namesrv=namesrv)
    yield namesrv, broker
    broker.stop_cleanly()


@pytest.mark.parametrize(
    "duration", [pytest.param(30, id="30s"), pytest.param(1800, id="30min", marks=STRESS_MARKS)]
)
def test_soak_memory_and_files_stay_bounded_and_every_acked_message_is_consumed_once(
    soak_broker: tuple[RmqProcess, RmqProcess], duration: int
) -> None:
    namesrv, broker = soak_broker
    soak = Soak(broker)
    asyncio.run(soak_run(soak, namesrv.addr, duration))

    assert broker.running, broker.log_tail()
    assert len(soak.acked) > PRODUCERS * RATE * duration // 4, (len(soak.acked), soak.failed)
    acked = Counter(soak.acked)
    assert max(acked.values()) == 1, "a message id was acknowledged twice"
    for group in GROUPS:
        counts = soak.consumed[group]
        wrong = {msg_id: soak.deliveries.get(msg_id) for msg_id in acked if counts[msg_id] != 1}
        assert not wrong, f"{group}: not consumed exactly once: {wrong}; shares {soak.shares}"
    first, last = growth_trend(soak.samples)
    assert len(first) >= 3, len(soak.samples)
    rss_first, rss_last = max(s.rss_anon for s in first), max(s.rss_anon for s in last)
    assert rss_last <= rss_first * (1 + RSS_GROWTH) + RSS_SLACK, (rss_first, rss_last)
    files_first = max(s.open_files for s in first)
    files_last = max(s.open_files for s in last)
    assert files_last <= files_first + FD_SLACK, (files_first, files_last)
    print(
        f"soak {duration}s: {len(soak.acked)} acked, {soak.failed} failed sends; RssAnon "
        f"{rss_first >> 20} -> {rss_last >> 20} MiB, fds {files_first} -> {files_last}"
    )
