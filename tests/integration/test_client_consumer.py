"""rmq's consumers against real `rmq namesrv` + `rmq broker` processes, fed by rmq's producer.

A push consumer gets every message exactly once when nothing rebalances; two members of a
group split the queues and together get everything; broadcasting gives every consumer
everything; an orderly consumer keeps each queue's order and holds the broker locks; the
start position follows consume-from-where; a tag expression filters, hash collisions
included; committed offsets let a restarted group continue where it stopped; and a broker
killed with SIGKILL and restarted mid-run loses nothing the producer saw acknowledged.  The
pull consumer reads explicit offsets and commits them.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import Counter
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest

from rmq.client import api
from rmq.client.consumer import (
    ConsumeFromWhere,
    ConsumeStatus,
    MessageExt,
    MessageModel,
    PullConsumer,
    PullStatus,
    PushConsumer,
)
from rmq.client.errors import ClientError
from rmq.client.message import Message
from rmq.client.producer import Producer
from rmq.common.timeutil import now_millis
from rmq.remoting.bodies import MessageQueue
from rmq.remoting.client import RemotingClient
from rmq.remoting.errors import RemotingError
from tests.procs import RmqProcess, RmqProcesses

_names = itertools.count()


def name(prefix: str) -> str:
    return f"{prefix}-{next(_names)}"


def run(scenario: Coroutine[Any, Any, None], timeout: float = 40.0) -> None:
    asyncio.run(asyncio.wait_for(scenario, timeout))


@pytest.fixture(scope="module")
def broker(module_processes: RmqProcesses, namesrv: RmqProcess) -> Iterator[RmqProcess]:
    process = module_processes.start_broker("consumer-broker", namesrv=namesrv)
    yield process
    process.stop_cleanly()


async def produce(
    namesrv_addr: str,
    topic: str,
    bodies: list[bytes],
    *,
    tags: Callable[[int], str | None] = lambda n: None,
    sharding_key: Callable[[int], str] | None = None,
) -> list[str]:
    """Send `bodies` (16 in flight; in order per sharding key when one is given); returns
    the message ids."""
    async with Producer(name("producer"), namesrv_addr) as producer:

        async def send(n: int) -> str:
            message = Message(
                topic,
                bodies[n],
                tags=tags(n),
                keys=[f"key-{n}", "ключ"],
                properties={"seq": str(n), "note": "ünïcode"},
            )
            key = sharding_key(n) if sharding_key is not None else None
            return (await producer.send(message, sharding_key=key)).msg_id

        if sharding_key is not None:
            return [await send(n) for n in range(len(bodies))]
        ids: list[str] = []
        for start in range(0, len(bodies), 16):
            ids += await asyncio.gather(
                *(send(n) for n in range(start, min(start + 16, len(bodies))))
            )
        return ids


class Collector:
    """A listener that keeps every message it was given."""

    def __init__(self) -> None:
        self.messages: list[MessageExt] = []
        self._changed = asyncio.Event()

    async def __call__(self, messages: list[MessageExt]) -> ConsumeStatus:
        self.messages += messages
        self._changed.set()
        return ConsumeStatus.CONSUME_SUCCESS

    @property
    def ids(self) -> list[str]:
        return [message.msg_id for message in self.messages]

    async def wait_for(self, count: int, timeout: float = 20.0) -> None:
        async with asyncio.timeout(timeout):
            while len(self.messages) < count:
                self._changed.clear()
                await self._changed.wait()


def consumer(
    namesrv: RmqProcess,
    group: str,
    topic: str,
    collector: Collector,
    expression: str = "*",
    *,
    orderly: bool = False,
    **options: Any,
) -> PushConsumer:
    push = PushConsumer(group, namesrv.addr, **options)
    push.subscribe(topic, expression)
    push.register_listener(collector, orderly=orderly)
    return push


async def until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.05)


async def settle(
    namesrv_addr: str, topic: str, collectors: list[Collector], tag: str | None = None
) -> None:
    """Send a mark to every queue (the producer takes the queues in turn) and wait until
    each collector has it, then forget the marks: every queue's pulls have then passed
    everything sent before, so a message that was going to arrive twice has arrived."""
    marks = set(await produce(namesrv_addr, topic, [b"mark"] * 8, tags=lambda n: tag))
    await until(lambda: all(marks <= set(c.ids) for c in collectors), 20)
    for collector in collectors:
        collector.messages = [m for m in collector.messages if m.msg_id not in marks]


def bodies(count: int, prefix: str = "m") -> list[bytes]:
    """Every fourth body is binary (not UTF-8)."""
    return [
        bytes([0xFF, 0xFE, n % 256]) + prefix.encode() if n % 4 == 3 else f"{prefix}-{n}".encode()
        for n in range(count)
    ]


FIRST = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET


# --- clustering -----------------------------------------------------------------------------


def test_a_push_consumer_gets_every_message_exactly_once_and_intact(
    broker: RmqProcess, namesrv: RmqProcess
) -> None:
    topic = name("PushAll")
    sent_bodies = bodies(2000)

    async def scenario() -> None:
        ids = await produce(namesrv.addr, topic, sent_bodies, tags=lambda n: f"Tag{n % 3}")
        collector = Collector()
        async with consumer(namesrv, name("all"), topic, collector, consume_from_where=FIRST):
            await collector.wait_for(len(ids))
            await settle(namesrv.addr, topic, [collector])
        assert Counter(collector.ids) == Counter(ids)
        by_seq = {int(m.properties["seq"]): m for m in collector.messages}
        assert [by_seq[n].body for n in range(len(sent_bodies))] == sent_bodies
        record = by_seq[7].to_record_dict()
        assert (record["topic"], record["brokerName"], record["tags"]) == (
            topic,
            "consumer-broker",
            "Tag1",
        )
        assert record["keys"] == ["key-7", "ключ"]
        assert record["properties"]["note"] == "ünïcode"
        assert record["bodyEncoding"] == "base64"

    run(scenario())


def test_two_members_of_a_group_split_the_queues_and_together_get_everything(
    broker: RmqProcess, namesrv: RmqProcess
) -> None:
    topic = name("Split")
    group = name("split")

    async def scenario() -> None:
        await produce(namesrv.addr, topic, [b"create"])
        first, second = Collector(), Collector()
        async with (
            consumer(namesrv, group, topic, first, consume_from_where=FIRST) as one,
            consumer(namesrv, group, topic, second, consume_from_where=FIRST) as two,
        ):

            def queues(push: PushConsumer) -> set[int]:
                return {mq.queue_id for mq in push.process_queue_table if mq.topic == topic}

            await until(lambda: len(queues(one)) == 2 and len(queues(two)) == 2)
            assert queues(one).isdisjoint(queues(two))
            ids = await produce(namesrv.addr, topic, bodies(1000))
            await until(lambda: len(set(first.ids) | set(second.ids)) == len(ids) + 1, 20)
            assert {m.queue_id for m in first.messages[-100:]} <= queues(one)
            assert {m.queue_id for m in second.messages[-100:]} <= queues(two)
        assert set(ids) <= set(first.ids) | set(second.ids)

    run(scenario())


def test_a_shutdown_right_after_a_rebalance_request_completes(
    broker: RmqProcess, namesrv: RmqProcess
) -> None:
    topic = name("Stop")

    async def scenario() -> None:
        ids = await produce(namesrv.addr, topic, [b"create"])
        group = name("stop")
        collector = Collector()
        push = consumer(namesrv, group, topic, collector, consume_from_where=FIRST)
        await push.start()
        rebalance = push._rebalance
        assert rebalance is not None
        rebalancing = rebalance.do_rebalance
        idle = False

        async def observed_rebalance() -> None:
            nonlocal idle
            idle = False
            await rebalancing()
            idle = True  # the service goes straight back to waiting for the next request

        rebalance.do_rebalance = observed_rebalance  # type: ignore[method-assign]
        push.rebalance_now()
        await collector.wait_for(len(ids))
        await until(lambda: idle and not push._rebalance_wanted.is_set())
        push.rebalance_now()  # as NOTIFY_CONSUMER_IDS_CHANGED arriving just now does
        await asyncio.wait_for(push.shutdown(), 10)
        assert push.process_queue_table == {}
        (message,) = collector.messages
        mq = MessageQueue(topic, message.broker_name, message.queue_id)
        async with RemotingClient() as remoting:
            committed = await api.query_consumer_offset(remoting, broker.addr, group, mq, 3.0)
        assert committed == message.queue_offset + 1

    run(scenario())


def test_committed_offsets_let_a_restarted_group_continue_where_it_stopped(
    broker: RmqProcess, namesrv: RmqProcess
) -> None:
    topic = name("Resume")
    group = name("resume")

    async def scenario() -> None:
        before = await produce(namesrv.addr, topic, bodies(300, "before"))
        first = Collector()
        async with consumer(namesrv, group, topic, first, consume_from_where=FIRST):
            await first.wait_for(len(before))
        assert Counter(first.ids) == Counter(before)

        after = await produce(namesrv.addr, topic, bodies(200, "after"))
        again = Collector()
        async with consumer(namesrv, group, topic, again):
            await again.wait_for(len(after))
            await settle(namesrv.addr, topic, [again])
        assert Counter(again.ids) == Counter(after)

    run(scenario())


def test_a_tag_expression_filters_and_hash_collisions_are_dropped_by_the_client(
    broker: RmqProcess, namesrv: RmqProcess
) -> None:
    topic = name("Tags")
    tags = ["A", "B", "C", "Aa", "BB"]  # "Aa" and "BB" share Java's String.hashCode

    async def scenario() -> None:
        ids = await produce(namesrv.addr, topic, bodies(250), tags=lambda n: tags[n % 5])
        wanted = {ids[n] for n in range(250) if tags[n % 5] in ("A", "Aa")}
        collector = Collector()
        async with consumer(
            namesrv, name("tags"), topic, collector, "A || Aa", consume_from_where=FIRST
        ) as push:
            await collector.wait_for(len(wanted))
            await until(lambda: sum(pq.msg_count for pq in push.process_queue_table.values()) == 0)
            await settle(namesrv.addr, topic, [collector], tag="A")
        assert Counter(collector.ids) == Counter(wanted)
        assert {m.tags for m in collector.messages} == {"A", "Aa"}

    run(scenario())


def test_an_orderly_consumer_keeps_each_queues_order_and_holds_the_locks(
    broker: RmqProcess, namesrv: RmqProcess
) -> None:
    topic = name("Orderly")
    group = name("orderly")
    keys = [f"order-{k}" for k in range(8)]

    async def scenario() -> None:
        count = 400
        ids = await produce(
            namesrv.addr,
            topic,
            [f"{keys[n % 8]}:{n // 8}".encode() for n in range(count)],
            sharding_key=lambda n: keys[n % 8],
        )
        collector = Collector()
        async with consumer(
            namesrv, group, topic, collector, orderly=True, consume_from_where=FIRST
        ) as push:
            await collector.wait_for(count)
            owned = sorted(mq for mq in push.process_queue_table if mq.topic == topic)
            assert len(owned) == 4
            async with RemotingClient() as remoting:
                others = await api.lock_batch_mq(
                    remoting, broker.addr, group, "10.9.9.9@intruder", owned, 3.0
                )
                assert others == []
        async with RemotingClient() as remoting:
            freed = await api.lock_batch_mq(
                remoting, broker.addr, group, "10.9.9.9@intruder", owned, 3.0
            )
            assert sorted(freed) == owned
        assert Counter(collector.ids) == Counter(ids)
        per_queue: dict[int, list[int]] = {}
        per_key: dict[str, list[int]] = {}
        for message in collector.messages:
            per_queue.setdefault(message.queue_id, []).append(message.queue_offset)
            key, seq = message.body.decode().split(":")
            per_key.setdefault(key, []).append(int(seq))
        assert all(offsets == sorted(offsets) for offsets in per_queue.values())
        assert all(seqs == list(range(count // 8)) for seqs in per_key.values())

    run(scenario())


def test_a_failed_message_is_sent_back_and_the_offset_moves_past_it(
    broker: RmqProcess, namesrv: RmqProcess
) -> None:
    topic = name("Retry")
    group = name("retry")

    async def scenario() -> None:
        ids = await produce(namesrv.addr, topic, bodies(20))
        seen: list[str] = []

        async def fail_the_first(messages: list[MessageExt]) -> ConsumeStatus:
            seen.extend(m.msg_id for m in messages)
            if messages[0].msg_id == ids[0] and messages[0].reconsume_times == 0:
                return ConsumeStatus.RECONSUME_LATER
            return ConsumeStatus.CONSUME_SUCCESS

        push = PushConsumer(group, namesrv.addr, consume_from_where=FIRST)
        push.subscribe(topic)
        push.register_listener(fail_the_first)
        async with push:
            await until(lambda: set(ids) <= set(seen))
            first = next(mq for mq in push.process_queue_table if mq.topic == topic)
            await until(lambda: all(pq.msg_count == 0 for pq in push.process_queue_table.values()))
        async with RemotingClient() as remoting:
            for queue_id in range(4):
                mq = MessageQueue(topic, first.broker_name, queue_id)
                committed = await api.query_consumer_offset(remoting, broker.addr, group, mq, 3.0)
                assert committed == await api.get_max_offset(remoting, broker.addr, mq, 3.0)
            level_3 = MessageQueue("SCHEDULE_TOPIC_XXXX", first.broker_name, 2)
            waiting = await api.get_max_offset(remoting, broker.addr, level_3, 3.0)
            assert waiting >= 1, "the failed message waits for its redelivery (delay level 3)"

    run(scenario())


# --- broadcasting and start positions -------------------------------------------------------


def test_broadcasting_gives_every_consumer_everything(
    broker: RmqProcess, namesrv: RmqProcess, tmp_path: Path
) -> None:
    topic = name("Broadcast")
    group = name("broadcast")

    async def scenario() -> None:
        ids = await produce(namesrv.addr, topic, bodies(500))
        collectors = [Collector(), Collector()]
        consumers = [
            consumer(
                namesrv,
                group,
                topic,
                collector,
                message_model=MessageModel.BROADCASTING,
                consume_from_where=FIRST,
                instance_name=f"broadcast-{n}",
                offset_store_dir=tmp_path,
            )
            for n, collector in enumerate(collectors)
        ]
        async with consumers[0], consumers[1]:
            for collector in collectors:
                await collector.wait_for(len(ids))
            await settle(namesrv.addr, topic, collectors)
        for collector in collectors:
            assert Counter(collector.ids) == Counter(ids)
        files = sorted(tmp_path.glob(f"*@broadcast-*/{group}/offsets.json"))
        assert len(files) == 2

    run(scenario())


def test_start_positions_last_and_timestamp(
    broker: RmqProcess, namesrv: RmqProcess, tmp_path: Path
) -> None:
    topic = name("From")

    async def started(
        where: ConsumeFromWhere, collector: Collector, **options: Any
    ) -> PushConsumer:
        push = consumer(
            namesrv,
            name("from"),
            topic,
            collector,
            message_model=MessageModel.BROADCASTING,
            consume_from_where=where,
            offset_store_dir=tmp_path,
            instance_name=name("from"),
            **options,
        )
        await push.start()
        await until(lambda: len(push.process_queue_table) == 4)
        return push

    async def scenario() -> None:
        old = await produce(namesrv.addr, topic, bodies(100, "old"))
        await asyncio.sleep(0.3)
        middle = now_millis()
        newer = await produce(namesrv.addr, topic, bodies(40, "newer"))

        from_last = Collector()
        last = await started(ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET, from_last)
        from_time = Collector()
        timestamp = await started(
            ConsumeFromWhere.CONSUME_FROM_TIMESTAMP, from_time, consume_timestamp=middle
        )
        latest = await produce(namesrv.addr, topic, bodies(30, "latest"))
        await from_last.wait_for(len(latest))
        await from_time.wait_for(len(newer) + len(latest))
        await asyncio.sleep(1.0)
        await last.shutdown()
        await timestamp.shutdown()
        assert Counter(from_last.ids) == Counter(latest)
        assert Counter(from_time.ids) == Counter(newer + latest)
        assert not set(old) & set(from_time.ids)

        # Clustering with a fresh group: the broker answers offset 0 for queues that still
        # hold their first message, so LAST_OFFSET starts there, as in RocketMQ.
        fresh = Collector()
        async with consumer(namesrv, name("fresh"), topic, fresh):
            await fresh.wait_for(len(old) + len(newer) + len(latest))

    run(scenario())


# --- the pull consumer ----------------------------------------------------------------------


def test_the_pull_consumer_reads_offsets_and_commits_them(
    broker: RmqProcess, namesrv: RmqProcess
) -> None:
    topic = name("Pull")
    group = name("pull")

    async def scenario() -> None:
        ids = await produce(
            namesrv.addr, topic, bodies(60), tags=lambda n: "even" if n % 2 == 0 else "odd"
        )
        async with PullConsumer(group, namesrv.addr, broker_suspend_max_time=0.5) as pull:
            mqs = await pull.fetch_subscribe_message_queues(topic)
            assert [mq.queue_id for mq in mqs] == [0, 1, 2, 3]
            got: list[str] = []
            for mq in mqs:
                assert await pull.fetch_consume_offset(mq) in (-1, 0)
                offset = await pull.min_offset(mq)
                while True:
                    result = await pull.pull(mq, offset, 8, "even")
                    if result.status is PullStatus.FOUND:
                        got += [m.msg_id for m in result.messages]
                    elif result.status is not PullStatus.NO_MATCHED_MSG:  # only odd ones read
                        assert result.status is PullStatus.NO_NEW_MSG
                        break
                    offset = result.next_begin_offset
                assert offset == await pull.max_offset(mq)
                await pull.update_consume_offset(mq, offset)
                assert await pull.fetch_consume_offset(mq) == offset
            assert Counter(got) == Counter(ids[::2])

            held = asyncio.get_running_loop().time()
            at_end = await pull.pull(mqs[0], await pull.max_offset(mqs[0]), 8, block=True)
            assert (at_end.status, at_end.messages) == (PullStatus.NO_NEW_MSG, [])
            assert asyncio.get_running_loop().time() - held >= 0.4, "the broker held the pull"

    run(scenario(), 60)


# --- failure --------------------------------------------------------------------------------


def test_a_broker_killed_and_restarted_mid_run_loses_nothing_acknowledged(
    rmq_processes: RmqProcesses,
) -> None:
    namesrv = rmq_processes.start_namesrv()
    victim = rmq_processes.start_broker("victim", namesrv=namesrv)
    topic = name("Crash")

    async def scenario() -> None:
        acknowledged = await produce(namesrv.addr, topic, [b"create"])
        collector = Collector()
        async with (
            Producer(name("crash-producer"), namesrv.addr, send_timeout=2.0) as producer,
            consumer(namesrv, name("crash"), topic, collector, consume_from_where=FIRST),
        ):

            async def send(n: int) -> None:
                try:
                    result = await producer.send(Message(topic, f"crash-{n}".encode()))
                except (ClientError, RemotingError):
                    return
                acknowledged.append(result.msg_id)

            for n in range(300):
                await send(n)
            await collector.wait_for(100)
            victim.kill()
            for n in range(300, 320):
                await send(n)
            await asyncio.to_thread(rmq_processes.restart_broker, victim, namesrv)
            for n in range(320, 600):
                await send(n)
            assert len(acknowledged) >= 581
            await until(lambda: set(acknowledged) <= set(collector.ids), 40)

    run(scenario(), 90)
