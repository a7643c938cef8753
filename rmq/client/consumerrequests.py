"""The requests a broker sends a client about its consumers on an admin tool's behalf, and the
client's answers, after Apache's ``ClientRemotingProcessor``:

* RESET_CONSUMER_CLIENT_OFFSET (220, oneway): the group's consumer moves the queues of the
  body's table (ResetOffsetBody) to the offsets given; nothing is answered;
* GET_CONSUMER_STATUS_FROM_CLIENT (221): the consumer's offsets of one topic
  (GetConsumerStatusBody.messageQueueTable; empty for a group this client has no consumer of);
* GET_CONSUMER_RUNNING_INFO (307): the consumer's ConsumerRunningInfo, with the client's name
  servers (``PROP_NAMESERVER_ADDR``, each followed by ``;``), consume type and version added
  here and, when ``jstackEnable``, the stacks of the process's threads and tasks;
* CONSUME_MESSAGE_DIRECTLY (309): the stored message in the body is handed to the listener
  and its ConsumeMessageDirectlyResult is the answer.

A SUCCESS carries Java's remark "not set any response code".  307 and 309 for a group this
client has no push consumer of answer SYSTEM_ERROR "The Consumer Group <G> not exist in this
consumer" (rmq's pull consumer has no state to report: 221 is empty for it too).  The
consumer does the work (:class:`ConsumerAnswers`; the push consumer's is
:mod:`rmq.client.consumer.runstate`).
"""

from __future__ import annotations

import asyncio
import sys
import threading
import traceback
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from rmq.remoting.bodies import MessageQueue, ResetOffsetBody
from rmq.remoting.bodies.consumerinfo import (
    PROP_CLIENT_VERSION,
    PROP_CONSUME_TYPE,
    PROP_NAMESERVER_ADDR,
    ConsumeMessageDirectlyResult,
    ConsumerRunningInfo,
    GetConsumerStatusBody,
)
from rmq.remoting.client import RemotingClient
from rmq.remoting.codes import CURRENT_VERSION, MQVersion, RequestCode, ResponseCode
from rmq.remoting.command import UNSET_RESPONSE_REMARK, RemotingCommand, create_response
from rmq.remoting.connection import Connection
from rmq.remoting.headers import (
    ConsumeMessageDirectlyResultRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetConsumerStatusRequestHeader,
    ResetOffsetRequestHeader,
)

__all__ = ["ConsumerAnswers", "register_consumer_requests"]


@runtime_checkable
class ConsumerAnswers(Protocol):
    """What a registered consumer answers for the broker's calls."""

    def consumer_offsets(self, topic: str) -> dict[MessageQueue, int]:
        """The offsets the consumer holds for ``topic``'s queues."""
        ...

    async def reset_offset(self, topic: str, offsets: dict[MessageQueue, int]) -> None:
        """Move the owned queues among ``offsets`` to the offsets given."""
        ...

    async def running_info(self) -> ConsumerRunningInfo:
        """Settings, subscriptions, owned queues and rates (without the client's part)."""
        ...

    async def consume_directly(
        self, record: bytes, broker_name: str | None
    ) -> ConsumeMessageDirectlyResult:
        """Hand the stored message ``record`` to the listener."""
        ...


def _no_consumer(group: str) -> RemotingCommand:
    return create_response(
        ResponseCode.SYSTEM_ERROR, f"The Consumer Group <{group}> not exist in this consumer"
    )


def stacks_text() -> str:
    """The stacks of every thread and of every task of the running loop (Java's jstack)."""
    lines: list[str] = []
    names = {thread.ident: thread.name for thread in threading.enumerate()}
    for ident, frame in sys._current_frames().items():
        lines.append(f"Thread: {names.get(ident, ident)}")
        lines += (line.rstrip("\n") for line in traceback.format_stack(frame))
    for task in asyncio.all_tasks():
        lines.append(f"Task: {task.get_name()}")
        lines += (line.rstrip("\n") for line in traceback.format_list(task_stack(task)))
    return "\n".join(lines) + "\n"


def task_stack(task: asyncio.Task[object]) -> traceback.StackSummary:
    return traceback.StackSummary.extract((frame, frame.f_lineno) for frame in task.get_stack())


def register_consumer_requests(
    remoting: RemotingClient,
    find_consumer: Callable[[str], ConsumerAnswers | None],
    namesrv_addrs: Callable[[], list[str]],
) -> None:
    """Serve 220, 221, 307 and 309 on ``remoting`` for the consumers ``find_consumer`` finds
    by group."""

    async def reset_offset(connection: Connection, request: RemotingCommand) -> None:
        header = request.read_header(ResetOffsetRequestHeader)
        offsets = ResetOffsetBody.decode(request.body).offset_table if request.body else {}
        consumer = find_consumer(header.group)
        if consumer is not None:
            await consumer.reset_offset(header.topic, offsets)

    async def consumer_status(connection: Connection, request: RemotingCommand) -> RemotingCommand:
        header = request.read_header(GetConsumerStatusRequestHeader)
        consumer = find_consumer(header.group)
        offsets = consumer.consumer_offsets(header.topic) if consumer is not None else {}
        body = GetConsumerStatusBody(message_queue_table=offsets)
        return create_response(ResponseCode.SUCCESS, UNSET_RESPONSE_REMARK, body=body.encode())

    async def running_info(connection: Connection, request: RemotingCommand) -> RemotingCommand:
        header = request.read_header(GetConsumerRunningInfoRequestHeader)
        consumer = find_consumer(header.consumer_group)
        if consumer is None:
            return _no_consumer(header.consumer_group)
        info = await consumer.running_info()
        info.properties[PROP_NAMESERVER_ADDR] = "".join(f"{a};" for a in namesrv_addrs())
        info.properties[PROP_CONSUME_TYPE] = "CONSUME_PASSIVELY"
        info.properties[PROP_CLIENT_VERSION] = MQVersion(CURRENT_VERSION).name
        if header.jstack_enable:
            info.jstack = stacks_text()
        body = info.sorted().encode()
        return create_response(ResponseCode.SUCCESS, UNSET_RESPONSE_REMARK, body=body)

    async def consume_directly(connection: Connection, request: RemotingCommand) -> RemotingCommand:
        header = request.read_header(ConsumeMessageDirectlyResultRequestHeader)
        consumer = find_consumer(header.consumer_group)
        if consumer is None:
            return _no_consumer(header.consumer_group)
        result = await consumer.consume_directly(bytes(request.body or b""), header.broker_name)
        return create_response(ResponseCode.SUCCESS, UNSET_RESPONSE_REMARK, body=result.encode())

    remoting.register(RequestCode.RESET_CONSUMER_CLIENT_OFFSET, reset_offset)
    remoting.register(RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT, consumer_status)
    remoting.register(RequestCode.GET_CONSUMER_RUNNING_INFO, running_info)
    remoting.register(RequestCode.CONSUME_MESSAGE_DIRECTLY, consume_directly)
