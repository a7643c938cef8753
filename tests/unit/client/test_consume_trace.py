"""What a traced listener call records: the SubAfter code Java's consume services give each
kind of answer (SUCCESS, FAILED for RECONSUME_LATER, EXCEPTION for a listener that raised,
RETURNNULL for one that answered no status), one SubBefore and one SubAfter per call."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rmq.client.consumer.consume import ConsumeService, ConsumeStatus
from rmq.client.consumer.push import PushConsumer
from rmq.client.messageext import MessageExt
from rmq.client.tracehooks import ConsumeTraceHook
from rmq.common.trace import ConsumeReturnType, TraceContext, TraceType
from rmq.remoting.bodies import MessageQueue
from tests.unit.client.test_processqueue import message


class Recorder:
    """A trace dispatcher that keeps what it is given."""

    trace_topic = "RMQ_SYS_TRACE_TOPIC"

    def __init__(self) -> None:
        self.contexts: list[TraceContext] = []

    def append(self, ctx: TraceContext) -> bool:
        self.contexts.append(ctx)
        return True


async def raises(messages: list[MessageExt]) -> ConsumeStatus:
    raise RuntimeError("listener bug")


async def answers_none(messages: list[MessageExt]) -> Any:
    return None


async def later(messages: list[MessageExt]) -> ConsumeStatus:
    return ConsumeStatus.RECONSUME_LATER


async def success(messages: list[MessageExt]) -> ConsumeStatus:
    return ConsumeStatus.CONSUME_SUCCESS


@pytest.mark.parametrize(
    ("listener", "status", "code"),
    [
        (success, ConsumeStatus.CONSUME_SUCCESS, ConsumeReturnType.SUCCESS),
        (later, ConsumeStatus.RECONSUME_LATER, ConsumeReturnType.FAILED),
        (raises, ConsumeStatus.RECONSUME_LATER, ConsumeReturnType.EXCEPTION),
        (answers_none, ConsumeStatus.RECONSUME_LATER, ConsumeReturnType.RETURNNULL),
    ],
)
def test_the_sub_after_code_of_each_kind_of_answer(
    listener: Any, status: ConsumeStatus, code: ConsumeReturnType
) -> None:
    recorder = Recorder()

    async def scenario() -> ConsumeStatus:
        consumer = PushConsumer("TraceCodes", "127.0.0.1:9")
        consumer.consume_trace = ConsumeTraceHook(recorder, "TraceCodes")
        service = ConsumeService(consumer, listener)
        batch = [message(0), message(1)]
        return await service.call_listener(batch, MessageQueue("TopicTest", "broker-a", 1))

    assert asyncio.run(scenario()) is status
    before, after = recorder.contexts
    assert (before.trace_type, after.trace_type) == (TraceType.SubBefore, TraceType.SubAfter)
    assert after.context_code == code
    assert after.success is (code is ConsumeReturnType.SUCCESS)
    assert after.request_id == before.request_id
    assert len(after.beans) == 2
