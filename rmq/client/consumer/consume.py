"""The push consumer's consumption: calling the listener, sending failed messages back, and
the two ways of feeding it, as RocketMQ's ConsumeMessageConcurrentlyService and
ConsumeMessageOrderlyService do.

The pull side (:mod:`rmq.client.consumer.push`) hands every pulled batch to the consumer's
:class:`ConsumeService` with :meth:`ConsumeService.submit`; the service decides when the
listener sees it and commits the process queue's offset to the offset store afterwards.

* :class:`ConcurrentConsumeService`: the batch is cut into pieces of
  ``consume_message_batch_max_size`` and queued for ``consume_concurrency`` worker tasks.
  A failed piece is, in clustering mode, sent back to the broker (CONSUMER_SEND_MSG_BACK);
  what cannot be sent back is consumed again locally after :data:`RECONSUME_DELAY`.  The
  committed offset is the process queue's smallest unfinished offset.
* :class:`OrderlyConsumeService`: one task per queue at a time consumes in queue order, in
  clustering mode only while the client holds the queue's broker lock.  A failed batch is
  retried after ``suspend_current_queue_time`` until ``max_reconsume_times`` sends it to the
  DLQ (delay level -1).

The consumer's settings (batch size, concurrency, reconsume limits) are read from the
:class:`PushConsumer` the service belongs to (as a :class:`ConsumeHost`: what the service
uses of it), and its tasks run through the consumer's ``spawn``/``later`` so that shutdown
cancels them with the rest.

Also here, for the running info an admin tool asks for (GET_CONSUMER_RUNNING_INFO):
:class:`ConsumerStats`, the per-topic rates of Apache's ConsumerStatsManager (pull and
consume response times, pulled, consumed and failed messages per second over the last
minute, failed messages over the last hour), and :meth:`ConsumeService.consume_directly`,
CONSUME_MESSAGE_DIRECTLY: one message handed to the listener outside the process queues, its
verdict reported as a :class:`ConsumeMessageDirectlyResult` and nothing committed or sent
back.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Protocol

from rmq.client import api
from rmq.client.consumer.offsetstore import OffsetStore
from rmq.client.consumer.processqueue import ProcessQueue
from rmq.client.consumer.rebalance import Rebalance
from rmq.client.errors import ClientError
from rmq.client.instance import ClientInstance
from rmq.client.messageext import MessageExt
from rmq.client.tracehooks import ConsumeTraceHook
from rmq.common.trace import ConsumeReturnType
from rmq.remoting.bodies import MessageModel, MessageQueue
from rmq.remoting.bodies.consumerinfo import (
    CMResult,
    ConsumeMessageDirectlyResult,
    ConsumeStatusInfo,
)
from rmq.remoting.errors import RemotingError
from rmq.remoting.headers import ConsumerSendMsgBackRequestHeader

__all__ = [
    "ConcurrentConsumeService",
    "ConsumeHost",
    "ConsumeService",
    "ConsumeStatus",
    "ConsumerStats",
    "MessageListener",
    "OrderlyConsumeService",
]

log = logging.getLogger(__name__)

RECONSUME_DELAY = 5.0  # a message that could not be sent back is consumed again after this
SEND_BACK_TIMEOUT = 5.0
MAX_TIME_CONSUME_CONTINUOUSLY = 60.0  # an orderly task yields its queue after this long
DEFAULT_MAX_RECONSUME_TIMES = 16


class ConsumeStatus(enum.Enum):
    """What a listener says about a batch.  In orderly mode RECONSUME_LATER suspends the
    queue for a moment and retries the same batch (Java's SUSPEND_CURRENT_QUEUE_A_MOMENT)."""

    CONSUME_SUCCESS = 0
    RECONSUME_LATER = 1


MessageListener = Callable[[list[MessageExt]], Awaitable[ConsumeStatus | None]]
"""An async callable consuming a batch; None (or an exception) means RECONSUME_LATER."""


@dataclass(slots=True)
class _Series:
    """One measure of one topic: per-second (sum, count) buckets of the last hour."""

    buckets: deque[list[int]] = field(default_factory=deque)  # [second, sum, count]

    def add(self, second: int, value: int) -> None:
        buckets = self.buckets
        if buckets and buckets[-1][0] == second:
            buckets[-1][1] += value
            buckets[-1][2] += 1
        else:
            buckets.append([second, value, 1])
        while buckets[0][0] <= second - _HOUR:
            buckets.popleft()

    def totals(self, since: int) -> tuple[int, int]:
        """(sum, count) of the buckets from second ``since`` on."""
        total = count = 0
        for second, value, times in reversed(self.buckets):
            if second < since:
                break
            total += value
            count += times
        return total, count


_MINUTE = 60
_HOUR = 3600


class ConsumerStats:
    """A push consumer's rates per topic, as ConsumerStatsManager reports them in a running
    info's statusTable: response times are averages per call, TPS the messages of the last
    minute per second (of the time measured, when that is shorter); consumeRT falls back to
    the last hour when the last minute saw no consumption."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._started = clock()
        self._series: dict[tuple[str, str], _Series] = {}

    def _add(self, measure: str, topic: str, value: int, second: int | None = None) -> None:
        key = (measure, topic)
        series = self._series.get(key)
        if series is None:
            series = self._series[key] = _Series()
        series.add(int(self._clock()) if second is None else second, value)

    def inc_pull_rt(self, topic: str, rt_millis: int) -> None:
        """A pull of ``topic`` answered after ``rt_millis``."""
        self._add("pull_rt", topic, rt_millis)

    def inc_pull_tps(self, topic: str, found: int) -> None:
        """A pull of ``topic`` brought ``found`` messages the subscription wants."""
        self._add("pull_tps", topic, found)

    def inc_consume(self, topic: str, rt_millis: int, ok: int, failed: int) -> None:
        """A listener call on messages of ``topic``: how long, how many succeeded or failed."""
        second = int(self._clock())
        self._add("consume_rt", topic, rt_millis, second)
        if ok:
            self._add("consume_ok", topic, ok, second)
        if failed:
            self._add("consume_failed", topic, failed, second)

    def status(self, topic: str) -> ConsumeStatusInfo:
        now = self._clock()
        second = int(now)
        minute_span = min(float(_MINUTE), max(now - self._started, 1.0))
        empty = _Series()

        def minute(measure: str) -> tuple[int, int]:
            return self._series.get((measure, topic), empty).totals(second - _MINUTE + 1)

        def hour(measure: str) -> tuple[int, int]:
            return self._series.get((measure, topic), empty).totals(second - _HOUR + 1)

        def average(totals: tuple[int, int]) -> float:
            return totals[0] / totals[1] if totals[1] else 0.0

        consume_rt = minute("consume_rt")
        if consume_rt[0] == 0:
            consume_rt = hour("consume_rt")
        return ConsumeStatusInfo(
            pull_rt=average(minute("pull_rt")),
            pull_tps=minute("pull_tps")[0] / minute_span,
            consume_rt=average(consume_rt),
            consume_ok_tps=minute("consume_ok")[0] / minute_span,
            consume_failed_tps=minute("consume_failed")[0] / minute_span,
            consume_failed_msgs=hour("consume_failed")[0],
        )


@dataclass(slots=True)
class _ConsumeRequest:
    messages: list[MessageExt]
    pq: ProcessQueue
    mq: MessageQueue


def millis_since(begin: float) -> int:
    """Whole milliseconds since ``time.monotonic()`` was ``begin``."""
    return int((time.monotonic() - begin) * 1000)


class ConsumeHost(Protocol):
    """What a consume service uses of the push consumer it belongs to (the push consumer
    builds its service and is this, so the service needs no push consumer)."""

    group: str
    instance: ClientInstance
    message_model: MessageModel
    consume_concurrency: int
    consume_message_batch_max_size: int
    max_reconsume_times: int
    suspend_current_queue_time: float
    stats: ConsumerStats
    consume_trace: ConsumeTraceHook | None

    @property
    def running(self) -> bool: ...

    @property
    def offset_store(self) -> OffsetStore: ...

    def rebalance_of(self) -> Rebalance: ...

    def spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        """Run a task the consumer owns (cancelled at shutdown)."""
        ...

    def later(self, delay: float, job: Callable[..., Awaitable[None]], *args: Any) -> None:
        """Run ``job(*args)`` after ``delay`` seconds, as a task the consumer owns."""
        ...


class ConsumeService:
    """What both ways of consuming share: the listener call and the send-back."""

    orderly = False

    def __init__(self, consumer: ConsumeHost, listener: MessageListener) -> None:
        self.consumer = consumer
        self.listener = listener

    @property
    def group(self) -> str:
        return self.consumer.group

    @property
    def clustering(self) -> bool:
        return self.consumer.message_model is MessageModel.CLUSTERING

    def services(self) -> list[tuple[Coroutine[Any, Any, None], str]]:
        """The long-running tasks the consumer starts for this service, with their names."""
        return []

    def submit(
        self, messages: list[MessageExt], pq: ProcessQueue, mq: MessageQueue, dispatch: bool
    ) -> None:
        """Consume messages just put into ``pq``; ``dispatch`` says whether the process queue
        was idle before (an orderly queue is then consumed by a new task)."""
        raise NotImplementedError

    async def call_listener(self, messages: list[MessageExt], mq: MessageQueue) -> ConsumeStatus:
        """The listener's verdict on a batch of ``mq``'s messages, counted in the stats."""
        for message in messages:
            message.restore_retry_topic(self.group)
        trace = self.consumer.consume_trace
        traced = trace.before(messages) if trace is not None else None
        begin = time.monotonic()
        status, return_type = await self._verdict(messages)
        ok = len(messages) if status is ConsumeStatus.CONSUME_SUCCESS else 0
        if trace is not None:
            trace.after(traced, len(messages), return_type)
        self.consumer.stats.inc_consume(mq.topic, millis_since(begin), ok, len(messages) - ok)
        return status

    async def _verdict(self, messages: list[MessageExt]) -> tuple[ConsumeStatus, ConsumeReturnType]:
        """The listener's verdict (an exception or a non-status answer is RECONSUME_LATER)
        and how it came, as Java's consume services classify it for the trace: EXCEPTION,
        RETURNNULL, FAILED (RECONSUME_LATER) or SUCCESS."""
        try:
            status: object = await self.listener(messages)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception(
                "group %s: the listener failed on %d message(s)", self.group, len(messages)
            )
            return ConsumeStatus.RECONSUME_LATER, ConsumeReturnType.EXCEPTION
        if not isinstance(status, ConsumeStatus):
            log.warning(
                "group %s: the listener returned %r, not a ConsumeStatus", self.group, status
            )
            return ConsumeStatus.RECONSUME_LATER, ConsumeReturnType.RETURNNULL
        if status is ConsumeStatus.CONSUME_SUCCESS:
            return status, ConsumeReturnType.SUCCESS
        return status, ConsumeReturnType.FAILED

    async def consume_directly(self, message: MessageExt) -> ConsumeMessageDirectlyResult:
        """CONSUME_MESSAGE_DIRECTLY: the listener's verdict on ``message`` alone."""
        message.restore_retry_topic(self.group)
        result = ConsumeMessageDirectlyResult(order=self.orderly, auto_commit=True)
        begin = time.monotonic()
        try:
            status: object = await self.listener([message])
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            result.consume_result = CMResult.CR_THROW_EXCEPTION
            result.remark = f"{type(exc).__name__}: {exc}"
            log.warning("group %s: consuming %s directly failed", self.group, message.msg_id)
        else:
            if status is None:
                result.consume_result = CMResult.CR_RETURN_NULL
            elif status is ConsumeStatus.CONSUME_SUCCESS:
                result.consume_result = CMResult.CR_SUCCESS
            elif status is ConsumeStatus.RECONSUME_LATER:
                result.consume_result = CMResult.CR_LATER
        result.spent_time_mills = millis_since(begin)
        return result

    async def send_message_back(
        self, message: MessageExt, mq: MessageQueue, delay_level: int
    ) -> bool:
        """CONSUMER_SEND_MSG_BACK of a failed message; True when the broker took it."""
        max_times = self.consumer.max_reconsume_times
        header = ConsumerSendMsgBackRequestHeader(
            offset=message.commit_log_offset,
            group=self.group,
            delay_level=delay_level,
            origin_msg_id=message.msg_id,
            origin_topic=message.topic,
            max_reconsume_times=DEFAULT_MAX_RECONSUME_TIMES if max_times == -1 else max_times,
            bname=mq.broker_name,
        )
        instance = self.consumer.instance
        try:
            addr = await instance.broker_address(mq)
            await api.consumer_send_msg_back(instance.remoting, addr, header, SEND_BACK_TIMEOUT)
        except (ClientError, RemotingError) as exc:
            log.warning("group %s: sending %s back failed: %s", self.group, message.msg_id, exc)
            return False
        return True


class ConcurrentConsumeService(ConsumeService):
    """Batches consumed by a pool of worker tasks, in any order."""

    def __init__(self, consumer: ConsumeHost, listener: MessageListener) -> None:
        super().__init__(consumer, listener)
        self._requests: asyncio.Queue[_ConsumeRequest] = asyncio.Queue()

    def services(self) -> list[tuple[Coroutine[Any, Any, None], str]]:
        return [(self._worker(), f"consumer {i}") for i in range(self.consumer.consume_concurrency)]

    def submit(
        self, messages: list[MessageExt], pq: ProcessQueue, mq: MessageQueue, dispatch: bool
    ) -> None:
        self._submit(messages, pq, mq)

    def _submit(self, messages: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> None:
        size = self.consumer.consume_message_batch_max_size
        for start in range(0, len(messages), size):
            self._requests.put_nowait(_ConsumeRequest(messages[start : start + size], pq, mq))

    async def _worker(self) -> None:
        while True:
            request = await self._requests.get()
            if not request.pq.dropped:
                status = await self.call_listener(request.messages, request.mq)
                if not request.pq.dropped:
                    await self._consume_done(request, status)

    async def _consume_done(self, request: _ConsumeRequest, status: ConsumeStatus) -> None:
        pq, mq = request.pq, request.mq
        done = request.messages
        if status is ConsumeStatus.RECONSUME_LATER:
            if self.clustering:
                retry_here = []
                for message in done:
                    if not await self.send_message_back(message, mq, 0):
                        message.reconsume_times += 1
                        retry_here.append(message)
                if retry_here:
                    done = [message for message in done if message not in retry_here]
                    self.consumer.later(RECONSUME_DELAY, self._resubmit, retry_here, pq, mq)
            else:
                for message in done:
                    log.warning(
                        "group %s: broadcast message %s dropped", self.group, message.msg_id
                    )
        offset = pq.remove_messages(done)
        if offset >= 0 and not pq.dropped:
            self.consumer.offset_store.update_offset(mq, offset, increase_only=True)

    async def _resubmit(
        self, messages: list[MessageExt], pq: ProcessQueue, mq: MessageQueue
    ) -> None:
        self._submit(messages, pq, mq)


class OrderlyConsumeService(ConsumeService):
    """Each queue consumed in order by one task at a time, under its broker lock when
    clustering."""

    orderly = True

    def __init__(self, consumer: ConsumeHost, listener: MessageListener) -> None:
        super().__init__(consumer, listener)
        self._queue_locks: dict[MessageQueue, asyncio.Lock] = {}

    def submit(
        self, messages: list[MessageExt], pq: ProcessQueue, mq: MessageQueue, dispatch: bool
    ) -> None:
        if dispatch:
            self.consumer.spawn(self._consume_orderly(mq, pq))

    async def _consume_orderly(self, mq: MessageQueue, pq: ProcessQueue) -> None:
        """Consume ``mq``'s messages in order while this client may (one task at a time)."""
        if pq.dropped:
            return
        lock = self._queue_locks.setdefault(mq, asyncio.Lock())
        async with lock:
            if self.clustering and not (pq.locked and not pq.is_lock_expired()):
                if not pq.dropped:
                    self.consumer.later(0.1, self._lock_and_consume, mq, pq)
                return
            begin = time.monotonic()
            while not pq.dropped:
                if self.clustering and (not pq.locked or pq.is_lock_expired()):
                    self.consumer.later(0.01, self._lock_and_consume, mq, pq)
                    return
                if time.monotonic() - begin > MAX_TIME_CONSUME_CONTINUOUSLY:
                    self.consumer.later(0.01, self._consume_orderly, mq, pq)
                    return
                messages = pq.take_messages(self.consumer.consume_message_batch_max_size)
                if not messages or not await self._consume_batch(messages, mq, pq):
                    return

    async def _consume_batch(
        self, messages: list[MessageExt], mq: MessageQueue, pq: ProcessQueue
    ) -> bool:
        """Consume one batch under the queue's consume lock; True to go on with the next."""
        async with pq.consume_lock:
            if pq.dropped:  # rebalance gave the queue away while we waited for the lock
                return False
            status = await self.call_listener(messages, mq)
        return await self._orderly_done(messages, status, mq, pq)

    async def _orderly_done(
        self, messages: list[MessageExt], status: ConsumeStatus, mq: MessageQueue, pq: ProcessQueue
    ) -> bool:
        """Commit or schedule a retry; True to go on with the queue's next messages."""
        if status is ConsumeStatus.RECONSUME_LATER and await self._must_suspend(messages, mq):
            pq.make_messages_to_consume_again(messages)
            self.consumer.later(
                self.consumer.suspend_current_queue_time, self._consume_orderly, mq, pq
            )
            return False
        offset = pq.commit()
        if offset >= 0 and not pq.dropped:
            self.consumer.offset_store.update_offset(mq, offset, increase_only=False)
        return True

    async def _must_suspend(self, messages: list[MessageExt], mq: MessageQueue) -> bool:
        """Whether a failed orderly batch is retried: yes unless every message has used up
        ``max_reconsume_times`` and went to the DLQ."""
        max_times = self.consumer.max_reconsume_times
        suspend = False
        for message in messages:
            if 0 <= max_times <= message.reconsume_times and await self.send_message_back(
                message, mq, -1
            ):
                continue
            suspend = True
            message.reconsume_times += 1
        return suspend

    async def _lock_and_consume(self, mq: MessageQueue, pq: ProcessQueue) -> None:
        locked = self.consumer.running and await self.consumer.rebalance_of().lock(mq)
        self.consumer.later(0.01 if locked else 3.0, self._consume_orderly, mq, pq)
