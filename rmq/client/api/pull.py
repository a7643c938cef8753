"""Pulling messages and a queue's offsets: PULL_MESSAGE, a group's committed offsets, a queue's
min/max offsets and store times, search by time."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from rmq.client.api.request import request_broker
from rmq.common.message import MessageRecord, iter_records
from rmq.remoting.bodies import (
    MessageQueue,
)
from rmq.remoting.client import RemotingClient
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, create_request
from rmq.remoting.headers import (
    GetEarliestMsgStoretimeRequestHeader,
    GetEarliestMsgStoretimeResponseHeader,
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    GetMinOffsetRequestHeader,
    GetMinOffsetResponseHeader,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    SearchOffsetRequestHeader,
    SearchOffsetResponseHeader,
    UpdateConsumerOffsetRequestHeader,
)

H = TypeVar("H")


class PullStatus(enum.Enum):
    FOUND = ResponseCode.SUCCESS
    NO_NEW_MSG = ResponseCode.PULL_NOT_FOUND
    NO_MATCHED_MSG = ResponseCode.PULL_RETRY_IMMEDIATELY
    OFFSET_ILLEGAL = ResponseCode.PULL_OFFSET_MOVED


_PULL_ACCEPTED = frozenset(status.value for status in PullStatus)


@dataclass(slots=True)
class PullResult:
    """A pull answer.  `body` holds the stored records end to end (FOUND only) as a view of
    the response frame: walk it with `rmq.common.message.iter_records`."""

    status: PullStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    suggest_which_broker_id: int
    body: memoryview | None

    def records(self) -> list[MessageRecord]:
        """The records of `body` (stops at the first that does not decode, as Java does)."""
        if self.body is None:
            return []
        return [record for _, record in iter_records(self.body)]


async def pull_message(
    remoting: RemotingClient, addr: str, header: PullMessageRequestHeader, timeout: float
) -> PullResult:
    """PULL_MESSAGE.  With the suspend bit in `header.sys_flag` the broker may hold the
    request up to `header.suspend_timeout_millis`: `timeout` must be longer than that."""
    request = create_request(RequestCode.PULL_MESSAGE, header)
    response = await request_broker(remoting, addr, request, timeout, _PULL_ACCEPTED)
    answer = response.read_header(PullMessageResponseHeader)
    body = response.body
    return PullResult(
        PullStatus(response.code),
        answer.next_begin_offset,
        answer.min_offset,
        answer.max_offset,
        answer.suggest_which_broker_id,
        memoryview(body) if body else None,
    )


async def query_consumer_offset(
    remoting: RemotingClient, addr: str, group: str, mq: MessageQueue, timeout: float
) -> int | None:
    """QUERY_CONSUMER_OFFSET: the offset `group` committed for `mq`, or None when the
    broker has none (QUERY_NOT_FOUND)."""
    header = QueryConsumerOffsetRequestHeader(
        consumer_group=group, topic=mq.topic, queue_id=mq.queue_id, bname=mq.broker_name
    )
    request = create_request(RequestCode.QUERY_CONSUMER_OFFSET, header)
    accepted = frozenset({ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND})
    response = await request_broker(remoting, addr, request, timeout, accepted)
    if response.code == ResponseCode.QUERY_NOT_FOUND:
        return None
    return response.read_header(QueryConsumerOffsetResponseHeader).offset


def _update_offset_request(group: str, mq: MessageQueue, offset: int) -> RemotingCommand:
    header = UpdateConsumerOffsetRequestHeader(
        consumer_group=group,
        topic=mq.topic,
        queue_id=mq.queue_id,
        commit_offset=offset,
        bname=mq.broker_name,
    )
    return create_request(RequestCode.UPDATE_CONSUMER_OFFSET, header)


async def update_consumer_offset(
    remoting: RemotingClient,
    addr: str,
    group: str,
    mq: MessageQueue,
    offset: int,
    timeout: float,
) -> None:
    """UPDATE_CONSUMER_OFFSET: commit `offset` for `group` on `mq` and wait for the answer."""
    request = _update_offset_request(group, mq, offset)
    await request_broker(remoting, addr, request, timeout)


async def update_consumer_offset_oneway(
    remoting: RemotingClient, addr: str, group: str, mq: MessageQueue, offset: int
) -> None:
    """UPDATE_CONSUMER_OFFSET sent oneway (what the Java consumer's periodic commit does)."""
    await remoting.invoke_oneway(addr, _update_offset_request(group, mq, offset))


async def _broker_answer(
    remoting: RemotingClient,
    addr: str,
    code: int,
    header: object,
    answer: type[H],
    timeout: float,
) -> H:
    """The response header `answer` of a request the broker must answer with SUCCESS."""
    response = await request_broker(remoting, addr, create_request(code, header), timeout)
    return response.read_header(answer)


@dataclass(frozen=True, slots=True)
class _QueueRequest(Generic[H]):
    """A request about one queue whose header names only the queue, and its answer header."""

    code: int
    header: Callable[..., object]
    answer: type[H]


_MAX_OFFSET = _QueueRequest(
    RequestCode.GET_MAX_OFFSET, GetMaxOffsetRequestHeader, GetMaxOffsetResponseHeader
)
_MIN_OFFSET = _QueueRequest(
    RequestCode.GET_MIN_OFFSET, GetMinOffsetRequestHeader, GetMinOffsetResponseHeader
)
_EARLIEST_STORE_TIME = _QueueRequest(
    RequestCode.GET_EARLIEST_MSG_STORETIME,
    GetEarliestMsgStoretimeRequestHeader,
    GetEarliestMsgStoretimeResponseHeader,
)


async def _queue_answer(
    remoting: RemotingClient, addr: str, mq: MessageQueue, spec: _QueueRequest[H], timeout: float
) -> H:
    """The answer to `spec` about `mq`."""
    header = spec.header(topic=mq.topic, queue_id=mq.queue_id, bname=mq.broker_name)
    return await _broker_answer(remoting, addr, spec.code, header, spec.answer, timeout)


async def get_max_offset(
    remoting: RemotingClient, addr: str, mq: MessageQueue, timeout: float
) -> int:
    """GET_MAX_OFFSET: the queue offset the next message of `mq` will get."""
    return (await _queue_answer(remoting, addr, mq, _MAX_OFFSET, timeout)).offset


async def get_min_offset(
    remoting: RemotingClient, addr: str, mq: MessageQueue, timeout: float
) -> int:
    """GET_MIN_OFFSET: the oldest queue offset of `mq` still stored."""
    return (await _queue_answer(remoting, addr, mq, _MIN_OFFSET, timeout)).offset


async def get_earliest_msg_store_time(
    remoting: RemotingClient, addr: str, mq: MessageQueue, timeout: float
) -> int:
    """GET_EARLIEST_MSG_STORETIME: the store time (ms) of the oldest message of `mq`."""
    return (await _queue_answer(remoting, addr, mq, _EARLIEST_STORE_TIME, timeout)).timestamp


async def search_offset(
    remoting: RemotingClient, addr: str, mq: MessageQueue, timestamp: int, timeout: float
) -> int:
    """SEARCH_OFFSET_BY_TIMESTAMP: the queue offset of the message of `mq` whose store time
    is nearest to `timestamp` (ms), which may be stored before it.

    The broker binary-searches one consume queue file (the first modified at or after
    `timestamp`, else the last) by store time: a message stored exactly then wins, else the
    nearer of the last one stored before and the first one stored after (the earlier on a
    tie).  An empty queue answers 0."""
    header = SearchOffsetRequestHeader(
        topic=mq.topic, queue_id=mq.queue_id, timestamp=timestamp, bname=mq.broker_name
    )
    code = RequestCode.SEARCH_OFFSET_BY_TIMESTAMP
    answer = await _broker_answer(remoting, addr, code, header, SearchOffsetResponseHeader, timeout)
    return answer.offset
