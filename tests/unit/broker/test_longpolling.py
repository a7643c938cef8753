"""Long polling: parked pulls wake on arrival, answer on timeout and vanish with their client."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from rmq.common.sysflag import PULL_SUBSCRIPTION
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand
from rmq.server.broker.context import BrokerContext
from rmq.store.putmessage import InnerMessage
from tests.unit.broker.helpers import (
    GROUP,
    SUSPEND_AND_SUBSCRIPTION,
    TOPIC,
    Serving,
    pull_request,
    put,
    records,
    run,
    serving_broker,
    until,
)
from tests.unit.remoting.wire import cpp_request

pytestmark = pytest.mark.serving_broker

HOLD_MS = 10_000  # far longer than any test waits: only an arrival can answer in time


def parked_pull(serving: Serving, **fields: Any) -> asyncio.Task[RemotingCommand]:
    request = pull_request(sys_flag=SUSPEND_AND_SUBSCRIPTION, suspend_ms=HOLD_MS, **fields)
    return asyncio.create_task(serving.invoke(request, timeout=30.0))


def test_an_arriving_message_answers_a_parked_pull_at_once(broker: BrokerContext) -> None:
    async def scenario() -> None:
        async with Serving(broker) as serving:
            waiting = parked_pull(serving)
            await until(lambda: broker.pull_hold.held_count() == 1)
            assert not waiting.done()
            arrived = time.monotonic()
            put(broker, body=b"news")
            response = await asyncio.wait_for(waiting, 1.0)
            assert time.monotonic() - arrived < 1.0
            assert broker.pull_hold.held_count() == 0
        assert (response.code, response.remark) == (ResponseCode.SUCCESS, "FOUND")
        assert [r.body for r in records(response)] == [b"news"]

    run(scenario())


def test_every_pull_parked_on_the_queue_wakes_and_other_queues_stay_parked(
    broker: BrokerContext,
) -> None:
    async def scenario() -> None:
        async with Serving(broker) as serving:
            first = parked_pull(serving)
            second = parked_pull(serving, group="CID_other")
            elsewhere = parked_pull(serving, queue_id=2)
            await until(lambda: broker.pull_hold.held_count() == 3)
            put(broker, queue_id=0)
            answers = await asyncio.wait_for(asyncio.gather(first, second), 1.0)
            assert [r.code for r in answers] == [ResponseCode.SUCCESS] * 2
            assert not elsewhere.done()
            assert broker.pull_hold.held_count() == 1
            put(broker, queue_id=2)
            assert (await asyncio.wait_for(elsewhere, 1.0)).code == ResponseCode.SUCCESS

    run(scenario())


def test_a_message_of_another_tag_leaves_the_pull_parked(broker: BrokerContext) -> None:
    async def scenario() -> None:
        async with Serving(broker) as serving:
            waiting = parked_pull(serving, subscription="TagA")
            await until(lambda: broker.pull_hold.held_count() == 1)
            put(broker, "TagB", body=b"b")
            await asyncio.sleep(0.1)
            assert not waiting.done()
            put(broker, "TagA", body=b"a")
            response = await asyncio.wait_for(waiting, 1.0)
        assert [r.body for r in records(response)] == [b"a"]
        assert response.ext_fields is not None
        assert response.ext_fields["nextBeginOffset"] == "2"

    run(scenario())


def test_an_expired_pull_is_answered_not_found(broker: BrokerContext) -> None:
    put(broker)

    async def scenario() -> None:
        async with Serving(broker) as serving:
            started = time.monotonic()
            response = await serving.pull(
                offset=1, sys_flag=SUSPEND_AND_SUBSCRIPTION, suspend_ms=300
            )
            elapsed = time.monotonic() - started
            assert broker.pull_hold.held_count() == 0
        assert (response.code, response.remark) == (
            ResponseCode.PULL_NOT_FOUND,
            "OFFSET_OVERFLOW_ONE",
        )
        assert response.ext_fields is not None
        assert response.ext_fields["nextBeginOffset"] == "1"
        assert 0.3 <= elapsed < 3.0

    run(scenario())


def test_without_the_suspend_flag_not_found_is_answered_at_once(broker: BrokerContext) -> None:
    async def scenario() -> None:
        async with Serving(broker) as serving:
            response = await serving.pull(sys_flag=PULL_SUBSCRIPTION, suspend_ms=HOLD_MS)
            assert broker.pull_hold.held_count() == 0
        assert response.code == ResponseCode.PULL_NOT_FOUND

    run(scenario())


def test_a_closed_connection_takes_its_parked_pulls_along(broker: BrokerContext) -> None:
    ext_fields: dict[str, object] = {
        "consumerGroup": GROUP,
        "topic": TOPIC,
        "queueId": 0,
        "queueOffset": "0",
        "maxMsgNums": 32,
        "sysFlag": SUSPEND_AND_SUBSCRIPTION,
        "commitOffset": "0",
        "suspendTimeoutMillis": str(HOLD_MS),
        "subscription": "*",
        "subVersion": "0",
    }

    async def scenario() -> None:
        async with Serving(broker) as serving:
            reader, writer = await asyncio.open_connection("127.0.0.1", serving.server.port)
            for opaque in (1, 2):
                writer.write(cpp_request(RequestCode.PULL_MESSAGE, opaque, ext_fields))
            await until(lambda: broker.pull_hold.held_count() == 2)
            writer.close()
            await until(lambda: broker.pull_hold.held_count() == 0)
            assert await reader.read() == b""

    run(scenario())


def test_server_shutdown_releases_parked_pulls(broker: BrokerContext) -> None:
    async def scenario() -> None:
        serving = Serving(broker)
        async with serving:
            waiting = parked_pull(serving)
            await until(lambda: broker.pull_hold.held_count() == 1)
        assert broker.pull_hold.held_count() == 0
        waiting.cancel()

    run(scenario())


def test_an_unreported_arrival_is_found_by_the_periodic_check(broker: BrokerContext) -> None:
    async def scenario() -> None:
        async with Serving(broker) as serving:
            waiting = parked_pull(serving)
            await until(lambda: broker.pull_hold.held_count() == 1)
            broker.store.put_message(InnerMessage(TOPIC, 0, b"quiet"))
            await asyncio.sleep(0.05)
            assert not waiting.done()
            broker.pull_hold.check_hold_requests()
            response = await asyncio.wait_for(waiting, 1.0)
        assert [r.body for r in records(response)] == [b"quiet"]

    run(scenario())


def test_short_polling_holds_for_the_short_polling_time_whatever_arrives(tmp_path: Path) -> None:
    async def scenario(broker: BrokerContext) -> None:
        async with Serving(broker) as serving:
            started = time.monotonic()
            waiting = parked_pull(serving)
            await until(lambda: broker.pull_hold.held_count() == 1)
            put(broker, body=b"later")
            await asyncio.sleep(0.1)
            assert not waiting.done()
            response = await waiting
            elapsed = time.monotonic() - started
        assert [r.body for r in records(response)] == [b"later"]
        assert 0.3 <= elapsed < 3.0

    with serving_broker(tmp_path, long_polling_enable=False, short_polling_time_mills=300) as b:
        run(scenario(b))


def test_a_closed_connection_drops_its_own_pulls_only(broker: BrokerContext) -> None:
    """Pulls are indexed by connection: closing one drops its pulls on every queue, leaves
    the others parked, and nothing of a released pull stays indexed."""
    hold = broker.pull_hold

    class FakeConnection:
        pass

    async def scenario() -> None:
        one, two = FakeConnection(), FakeConnection()
        parked = {
            (name, queue_id): asyncio.create_task(
                hold.hold(connection, TOPIC, queue_id, 0, None, HOLD_MS)  # type: ignore[arg-type]
            )
            for name, connection in (("one", one), ("two", two))
            for queue_id in range(3)
        }
        await until(lambda: hold.held_count() == 6)
        hold.channel_closed(one)  # type: ignore[arg-type]
        for queue_id in range(3):
            assert await parked["one", queue_id] is False
        assert hold.held_count() == 3
        assert not any(task.done() for key, task in parked.items() if key[0] == "two")
        put(broker, queue_id=1)
        await until(lambda: parked["two", 1].done())
        assert parked["two", 1].result() is True
        assert hold.held_count() == 2
        hold.channel_closed(two)  # type: ignore[arg-type]
        assert await parked["two", 0] is False
        assert await parked["two", 2] is False
        assert hold.held_count() == 0
        assert hold._by_connection == {}

    run(scenario())
