"""The admin calls a broker makes on a running consumer, end to end: a real `rmq broker`, an
rmq push consumer that has consumed a topic, and an admin client asking the broker for the
consumer's offsets (INVOKE_BROKER_TO_GET_CONSUMER_STATUS -> 221), its running info (307), a
direct consumption (309) and an offset reset (INVOKE_BROKER_TO_RESET_OFFSET -> 220).  The
answers carry the consumer's real state, and the reset makes it consume everything again."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator

import pytest

from rmq.client import api
from rmq.common.naming import retry_topic
from rmq.remoting.bodies import MessageQueue
from rmq.remoting.bodies.consumerinfo import (
    PROP_CONSUME_ORDERLY,
    PROP_CONSUME_TYPE,
    PROP_NAMESERVER_ADDR,
    CMResult,
)
from rmq.remoting.client import RemotingClient
from tests.integration.test_client_consumer import (
    FIRST,
    Collector,
    consumer,
    name,
    produce,
    run,
)
from tests.procs import RmqProcess, RmqProcesses

TIMEOUT = 5.0


@pytest.fixture(scope="module")
def broker(module_processes: RmqProcesses, namesrv: RmqProcess) -> Iterator[RmqProcess]:
    process = module_processes.start_broker("admin-calls-broker", namesrv=namesrv)
    yield process
    process.stop_cleanly()


async def eventually(get: Callable[[], Awaitable[int]], expected: int) -> None:
    """Wait until ``get()`` returns ``expected`` (asked every 50 ms, for up to 15 s)."""
    async with asyncio.timeout(15):
        while await get() != expected:
            await asyncio.sleep(0.05)


async def committed(admin: RemotingClient, addr: str, group: str, mqs: list[MessageQueue]) -> int:
    """The sum of the group's offsets the broker has (-1 while a queue has none)."""
    offsets = [await api.query_consumer_offset(admin, addr, group, mq, TIMEOUT) for mq in mqs]
    return -1 if None in offsets else sum(o for o in offsets if o is not None)


def test_the_broker_reaches_a_running_push_consumer(
    broker: RmqProcess, namesrv: RmqProcess
) -> None:
    topic = name("AdminCalls")
    group = name("admin-calls")
    count = 8

    async def scenario() -> None:
        ids = await produce(namesrv.addr, topic, [f"m-{n}".encode() for n in range(count)])
        collector = Collector()
        push = consumer(
            namesrv,
            group,
            topic,
            collector,
            consume_from_where=FIRST,
            persist_consumer_offset_interval=0.2,
        )
        admin = RemotingClient()
        async with push:
            await collector.wait_for(count)
            client_id = push.instance.client_id
            queues = sorted(mq for mq in push.process_queue_table if mq.topic == topic)
            assert len(queues) == 4

            # 223 -> 221: the consumer's offsets, once every message's consumption is counted
            async def status() -> dict[MessageQueue, int]:
                table = await api.invoke_broker_to_get_consumer_status(
                    admin, broker.addr, topic, group, TIMEOUT
                )
                assert list(table) == [client_id]
                return table[client_id]

            async def status_total() -> int:
                return sum((await status()).values())

            await eventually(status_total, count)
            assert set(await status()) == set(queues)

            # 307: subscriptions, owned queues with their offsets, settings and rates
            info = await api.get_consumer_running_info(
                admin, broker.addr, group, client_id, TIMEOUT
            )
            assert {sub.topic for sub in info.subscription_set} == {topic, retry_topic(group)}
            assert [mq for mq in info.mq_table if mq.topic == topic] == queues
            assert sum(info.mq_table[mq].commit_offset for mq in queues) == count
            assert info.properties[PROP_CONSUME_TYPE] == "CONSUME_PASSIVELY"
            assert info.properties[PROP_NAMESERVER_ADDR] == f"{namesrv.addr};"
            assert info.properties[PROP_CONSUME_ORDERLY] == "false"
            assert info.properties["consumerGroup"] == group
            assert info.status_table[topic].consume_ok_tps > 0
            assert info.status_table[topic].pull_tps > 0
            assert info.jstack is None
            with_stacks = await api.get_consumer_running_info(
                admin, broker.addr, group, client_id, TIMEOUT, jstack=True
            )
            assert with_stacks.jstack is not None and "Task: " in with_stacks.jstack

            # 309: the listener gets the stored message once more
            first = collector.messages[0]
            result = await api.consume_message_directly(
                admin, broker.addr, group, client_id, first.offset_msg_id, TIMEOUT
            )
            assert result.consume_result is CMResult.CR_SUCCESS
            assert not result.order
            assert collector.ids.count(first.msg_id) == 2
            assert collector.messages[-1].body == first.body

            # 222 -> 220: back to the first offsets, and everything is consumed again
            await eventually(lambda: committed(admin, broker.addr, group, queues), count)
            table = await api.invoke_broker_to_reset_offset(
                admin, broker.addr, topic, group, 0, TIMEOUT, is_force=True
            )
            assert table == dict.fromkeys(queues, 0)
            await collector.wait_for(2 * count + 1)
            again = Counter(collector.ids)
            assert all(again[msg_id] >= 2 for msg_id in ids)
        await admin.close()

    run(scenario(), 60)
