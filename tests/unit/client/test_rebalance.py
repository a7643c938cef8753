"""Rebalance against a real name server and broker running in the test's own event loop:
start offsets per consume-from-where, the owned-queue diff, the split between two members of
a group, and the broker locks of orderly consumption."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Any

from rmq.client import api
from rmq.client.consumer.allocate import AllocateMessageQueueAveragely
from rmq.client.consumer.offsetstore import (
    LocalFileOffsetStore,
    OffsetStore,
    RemoteBrokerOffsetStore,
)
from rmq.client.consumer.rebalance import PullRequest, Rebalance
from rmq.client.errors import ClientErrorCode, MQClientError
from rmq.client.instance import ClientInstance
from rmq.client.message import Message
from rmq.client.producer import Producer
from rmq.common.config import build_broker_configs, build_namesrv_configs
from rmq.common.timeutil import now_millis
from rmq.remoting.bodies import (
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    MessageModel,
    MessageQueue,
    SubscriptionData,
)
from rmq.server.broker.controller import BrokerController
from rmq.server.namesrv.server import NamesrvController
from tests.procs import SMALL_STORE_PROPS, broker_ports, free_broker_port, free_port

GROUP = "rebalance-group"
TOPIC = "RebalanceTopic"
_instances = itertools.count()


def run(scenario: Callable[[str], Coroutine[Any, Any, None]], tmp_path: Path) -> None:
    """Run ``scenario(namesrv_addr)`` with a name server and a broker up, within 30 s."""

    async def with_cluster() -> None:
        async with cluster(tmp_path) as namesrv_addr:
            await scenario(namesrv_addr)

    asyncio.run(asyncio.wait_for(with_cluster(), 30))


@contextlib.asynccontextmanager
async def cluster(tmp_path: Path) -> AsyncIterator[str]:
    broker_port = free_broker_port()
    namesrv_port = free_port(avoid=broker_ports(broker_port))
    namesrv_configs, _ = build_namesrv_configs(
        {
            "listenPort": str(namesrv_port),
            "bindAddress": "127.0.0.1",
            "kvConfigPath": str(tmp_path / "kvConfig.json"),
        }
    )
    namesrv_addr = f"127.0.0.1:{namesrv_port}"
    broker_props = {
        "brokerName": "broker-a",
        "brokerIP1": "127.0.0.1",
        "bindAddress": "127.0.0.1",
        "listenPort": str(broker_port),
        "namesrvAddr": namesrv_addr,
        "storePathRootDir": str(tmp_path / "store"),
        **{key: str(value) for key, value in SMALL_STORE_PROPS.items()},
    }
    broker_configs, _ = build_broker_configs(broker_props)
    namesrv = NamesrvController(namesrv_configs)
    broker = BrokerController(broker_configs, config_file=str(tmp_path / "broker.conf"))
    await namesrv.start()
    await broker.start()
    try:
        yield namesrv_addr
    finally:
        await broker.stop()
        await namesrv.stop()


async def produce(namesrv_addr: str, per_queue: dict[int, int], topic: str = TOPIC) -> None:
    async with Producer("rebalance-producer", namesrv_addr) as producer:
        for queue_id, count in per_queue.items():
            for n in range(count):
                await producer.send(Message(topic, f"{queue_id}-{n}".encode(), queue_id=queue_id))


class Member:
    """A registered consumer of GROUP as the client instance sees one."""

    def __init__(self, model: MessageModel = MessageModel.CLUSTERING) -> None:
        self.group = GROUP
        self.model = model
        self.subscription = SubscriptionData.from_expression(TOPIC, "*")

    def consumer_data(self) -> ConsumerData:
        return ConsumerData(
            group_name=GROUP,
            consume_type=ConsumeType.CONSUME_PASSIVELY,
            message_model=self.model,
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            subscription_data_set=[self.subscription],
        )

    def rebalance_now(self) -> None:
        """Rebalance is driven by the test."""


@contextlib.asynccontextmanager
async def member(
    namesrv_addr: str,
    *,
    model: MessageModel = MessageModel.CLUSTERING,
    consume_from_where: ConsumeFromWhere = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
    consume_timestamp: int = 0,
    orderly: bool = False,
    store: Callable[[ClientInstance], OffsetStore] | None = None,
) -> AsyncIterator[tuple[Rebalance, list[PullRequest]]]:
    """A started instance with a registered member and its Rebalance; the list collects the
    pull requests the rebalance dispatches."""
    instance = ClientInstance(namesrv_addr, f"member-{next(_instances)}")
    await instance.start()
    registered = Member(model)
    instance.register_consumer(registered)

    offset_store = (
        store(instance)
        if store is not None
        else RemoteBrokerOffsetStore(instance.remoting, GROUP, instance.broker_address)
    )
    dispatched: list[PullRequest] = []
    rebalance = Rebalance(
        instance,
        GROUP,
        model,
        AllocateMessageQueueAveragely(),
        offset_store,
        consume_from_where=consume_from_where,
        consume_timestamp=consume_timestamp,
        orderly=orderly,
        dispatch_pull=dispatched.append,
    )
    rebalance.subscriptions[TOPIC] = registered.subscription
    await instance.get_route(TOPIC)
    await instance.send_heartbeat_to_all_brokers()
    try:
        yield rebalance, dispatched
    finally:
        await rebalance.destroy()
        await instance.shutdown()


def queue(queue_id: int, topic: str = TOPIC) -> MessageQueue:
    return MessageQueue(topic, "broker-a", queue_id)


def local_store(tmp_path: Path) -> Callable[[ClientInstance], OffsetStore]:
    return lambda instance: LocalFileOffsetStore(instance.client_id, GROUP, tmp_path / "offsets")


# --- start offsets ------------------------------------------------------------------------


def test_without_a_stored_offset_consume_from_where_picks_the_start(tmp_path: Path) -> None:
    async def scenario(namesrv_addr: str) -> None:
        await produce(namesrv_addr, {0: 3})
        await asyncio.sleep(0.3)
        middle = now_millis()  # the broker answers the message stored nearest to it: the 4th
        await produce(namesrv_addr, {0: 2})
        starts = {}
        for where in ConsumeFromWhere:
            async with member(
                namesrv_addr,
                model=MessageModel.BROADCASTING,
                consume_from_where=where,
                consume_timestamp=middle,
                store=local_store(tmp_path),
            ) as (rebalance, _):
                starts[where] = (
                    await rebalance.compute_pull_from_where(queue(0)),
                    await rebalance.compute_pull_from_where(queue(0, f"%RETRY%{GROUP}")),
                )
        assert starts == {
            ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET: (5, 0),
            ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST: (5, 0),
            ConsumeFromWhere.CONSUME_FROM_MIN_OFFSET: (5, 0),
            ConsumeFromWhere.CONSUME_FROM_MAX_OFFSET: (5, 0),
            ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET: (0, 0),
            ConsumeFromWhere.CONSUME_FROM_TIMESTAMP: (3, 0),
        }

    run(scenario, tmp_path)


def test_a_stored_offset_wins_and_a_failed_store_read_leaves_the_queue_out(
    tmp_path: Path,
) -> None:
    async def scenario(namesrv_addr: str) -> None:
        await produce(namesrv_addr, {0: 4, 1: 4})
        offsets = local_store(tmp_path)
        async with member(namesrv_addr, model=MessageModel.BROADCASTING, store=offsets) as (
            rebalance,
            _,
        ):
            rebalance.offset_store.update_offset(queue(1), 2, increase_only=False)
            await rebalance.offset_store.persist(queue(1))
            assert await rebalance.compute_pull_from_where(queue(1)) == 2

        async def unreachable(mq: MessageQueue) -> str:
            raise MQClientError(ClientErrorCode.BROKER_NOT_EXIST_EXCEPTION, "gone")

        def failing(instance: ClientInstance) -> OffsetStore:
            return RemoteBrokerOffsetStore(instance.remoting, GROUP, unreachable)

        async with member(namesrv_addr, store=failing) as (rebalance, dispatched):
            assert await rebalance.compute_pull_from_where(queue(0)) == -1
            assert await rebalance.update_process_queue_table(TOPIC, {queue(0)}) is False
            assert (rebalance.process_queue_table, dispatched) == ({}, [])

    run(scenario, tmp_path)


# --- the owned-queue diff -----------------------------------------------------------------


def test_new_queues_get_pull_requests_and_removed_ones_commit_and_drop(tmp_path: Path) -> None:
    async def scenario(namesrv_addr: str) -> None:
        await produce(namesrv_addr, {0: 3, 1: 5})
        async with member(
            namesrv_addr, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
        ) as (rebalance, dispatched):
            assert await rebalance.update_process_queue_table(TOPIC, {queue(0), queue(1)})
            assert sorted((r.mq.queue_id, r.next_offset) for r in dispatched) == [(0, 0), (1, 0)]
            first_pq = rebalance.process_queue_table[queue(0)]
            assert await rebalance.update_process_queue_table(TOPIC, {queue(0), queue(1)}) is False

            rebalance.offset_store.update_offset(queue(0), 2, increase_only=True)
            assert await rebalance.update_process_queue_table(TOPIC, {queue(1)})
            assert first_pq.dropped
            assert set(rebalance.process_queue_table) == {queue(1)}
            assert queue(0) not in rebalance.offset_store.clone_offset_table()

            instance = rebalance.instance
            addr = await instance.broker_address(queue(0))
            for _ in range(100):  # the commit of a dropped queue is oneway
                committed = await api.query_consumer_offset(
                    instance.remoting, addr, GROUP, queue(0), 3.0
                )
                if committed == 2:
                    break
                await asyncio.sleep(0.02)
            assert committed == 2

            dispatched.clear()
            await rebalance.update_process_queue_table(TOPIC, {queue(0), queue(1)})
            assert [(r.mq, r.next_offset) for r in dispatched] == [(queue(0), 2)]

    run(scenario, tmp_path)


def test_two_members_of_a_group_split_the_topic_and_broadcasting_takes_it_all(
    tmp_path: Path,
) -> None:
    async def scenario(namesrv_addr: str) -> None:
        await produce(namesrv_addr, {0: 1})
        async with member(namesrv_addr) as (first, _), member(namesrv_addr) as (second, _):
            await first.do_rebalance()
            await second.do_rebalance()
            owned = [set(first.process_queue_table), set(second.process_queue_table)]
            assert owned[0].isdisjoint(owned[1])
            assert owned[0] | owned[1] == {queue(n) for n in range(4)}
            assert sorted(len(share) for share in owned) == [2, 2]
            ids = sorted(await first.consumer_id_list(TOPIC))
            assert ids == sorted([first.instance.client_id, second.instance.client_id])
            mine = AllocateMessageQueueAveragely().allocate(
                GROUP, first.instance.client_id, sorted(queue(n) for n in range(4)), ids
            )
            assert owned[0] == set(mine)

        async with member(
            namesrv_addr, model=MessageModel.BROADCASTING, store=local_store(tmp_path)
        ) as (broadcast, _):
            await broadcast.do_rebalance()
            assert set(broadcast.process_queue_table) == {queue(n) for n in range(4)}

    run(scenario, tmp_path)


def test_queues_of_a_topic_no_longer_subscribed_are_dropped(tmp_path: Path) -> None:
    async def scenario(namesrv_addr: str) -> None:
        await produce(namesrv_addr, {0: 1})
        async with member(namesrv_addr) as (rebalance, _):
            await rebalance.do_rebalance()
            pqs = list(rebalance.process_queue_table.values())
            assert len(pqs) == 4
            del rebalance.subscriptions[TOPIC]
            await rebalance.do_rebalance()
            assert rebalance.process_queue_table == {}
            assert all(pq.dropped for pq in pqs)

    run(scenario, tmp_path)


# --- orderly consumption: broker locks ----------------------------------------------------


def test_an_orderly_member_takes_only_queues_it_could_lock(tmp_path: Path) -> None:
    async def scenario(namesrv_addr: str) -> None:
        await produce(namesrv_addr, {0: 1})
        both = {queue(0), queue(1)}
        async with (
            member(namesrv_addr, orderly=True) as (holder, _),
            member(namesrv_addr, orderly=True) as (waiter, waiting),
        ):
            assert await holder.update_process_queue_table(TOPIC, both)
            assert all(pq.locked for pq in holder.process_queue_table.values())
            assert await waiter.update_process_queue_table(TOPIC, both) is False
            assert waiting == []

            await holder.lock_all()
            lock_time = holder.process_queue_table[queue(0)].last_lock_timestamp
            assert now_millis() - lock_time < 5_000

            await holder.update_process_queue_table(TOPIC, {queue(1)})  # unlocks queue 0
            for _ in range(100):
                if await waiter.update_process_queue_table(TOPIC, both):
                    break
                await asyncio.sleep(0.02)
            assert set(waiter.process_queue_table) == {queue(0)}

            await holder.unlock_all()
            assert not holder.process_queue_table[queue(1)].locked
            assert await waiter.lock(queue(1))
            await holder.lock_all()
            assert not holder.process_queue_table[queue(1)].locked

    run(scenario, tmp_path)
