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
:class:`PushConsumer` the service belongs to, and its tasks run through the consumer's
``spawn``/``later`` so that shutdown cancels them with the rest.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rmq.client import api
from rmq.client.consumer.message import MessageExt
from rmq.client.consumer.processqueue import ProcessQueue
from rmq.client.errors import ClientError
from rmq.remoting.bodies import MessageModel, MessageQueue
from rmq.remoting.errors import RemotingError
from rmq.remoting.headers import ConsumerSendMsgBackRequestHeader

if TYPE_CHECKING:
    from rmq.client.consumer.push import PushConsumer

__all__ = [
    "ConcurrentConsumeService",
    "ConsumeService",
    "ConsumeStatus",
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
class _ConsumeRequest:
    messages: list[MessageExt]
    pq: ProcessQueue
    mq: MessageQueue


class ConsumeService:
    """What both ways of consuming share: the listener call and the send-back."""

    def __init__(self, consumer: PushConsumer, listener: MessageListener) -> None:
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

    async def call_listener(self, messages: list[MessageExt]) -> ConsumeStatus:
        for message in messages:
            message.restore_retry_topic(self.group)
        try:
            status: object = await self.listener(messages)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception(
                "group %s: the listener failed on %d message(s)", self.group, len(messages)
            )
            return ConsumeStatus.RECONSUME_LATER
        if not isinstance(status, ConsumeStatus):
            log.warning(
                "group %s: the listener returned %r, not a ConsumeStatus", self.group, status
            )
            return ConsumeStatus.RECONSUME_LATER
        return status

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

    def __init__(self, consumer: PushConsumer, listener: MessageListener) -> None:
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
                status = await self.call_listener(request.messages)
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

    def __init__(self, consumer: PushConsumer, listener: MessageListener) -> None:
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
            status = await self.call_listener(messages)
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
