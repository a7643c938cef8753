"""A trace dispatcher's shutdown ends even when its worker is cancelled at the moment a
trace context arrives (Python 3.11's `asyncio.wait_for` then returns the context and drops
the cancellation: a worker stopped only by `cancel()` ran on, and `rmq consume --trace -c N`
hung after printing its N messages), and it still sends what was queued."""

from __future__ import annotations

import asyncio
from typing import Any

from rmq.client.trace import TraceDispatcher
from rmq.common.trace import TraceBean, TraceContext, TraceType


class StubProducer:
    """Takes the trace messages instead of sending them."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    def send_async(self, message: Any, on_success: Any, on_exception: Any) -> asyncio.Task[None]:
        self.bodies.append(message.body)

        async def done() -> None:
            on_success(None)

        return asyncio.get_running_loop().create_task(done())

    async def shutdown(self) -> None:
        return None


def context(n: int) -> TraceContext:
    return TraceContext(TraceType.SubBefore, beans=[TraceBean(topic="T", msg_id=f"id-{n}")])


async def one_round() -> StubProducer:
    dispatcher = TraceDispatcher("127.0.0.1:1", "g", "CONSUME", flush_after=60)
    stub = StubProducer()
    dispatcher.producer = stub  # type: ignore[assignment]
    dispatcher._worker = asyncio.get_running_loop().create_task(dispatcher._run())
    dispatcher.append(context(1))
    await asyncio.sleep(0)  # the worker took it: records pending, it waits with a timeout
    await asyncio.sleep(0)
    dispatcher.append(context(2))  # the get completes ...
    await asyncio.wait_for(dispatcher.shutdown(), 5)  # ... as the cancel arrives
    return stub


def test_shutdown_ends_when_the_cancel_meets_an_arriving_context() -> None:
    for _ in range(20):
        stub = asyncio.run(one_round())
        assert len(stub.bodies) == 1
        assert b"id-1" in stub.bodies[0] and b"id-2" in stub.bodies[0]
