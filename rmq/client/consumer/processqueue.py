"""The process queue: a push consumer's in-memory state for one message queue it owns.

Pulled messages wait here, keyed by queue offset, until the listener has consumed them.
What a consumer may commit follows from that: in concurrent mode messages finish out of
order, so the committable offset is the *smallest* offset still held (everything below it
is done), or one past the largest offset ever held when nothing is left
(:meth:`ProcessQueue.remove_messages`).  A crash then redelivers at most what was in flight:
at-least-once.

Orderly mode takes messages out in offset order (:meth:`take_messages`) into a "consuming"
set; success commits them (:meth:`commit` returns the next offset), a failure puts them back
to be consumed again (:meth:`make_messages_to_consume_again`, :meth:`rollback`).

The held offsets are a dict (offset -> message) plus a min-heap of offsets with lazy
deletion, so inserting, removing and finding the smallest offset are all O(log n) whatever
order messages come back in.  Everything runs on the consumer's event loop: no locks.

Also here: the counters flow control reads (message count and body bytes), the ``dropped``
flag that stops a queue's pull loop and consume tasks once rebalance gives the queue away,
and the broker-lock state of orderly consumption (``locked``, ``last_lock_timestamp``; a lock
is trusted for 30 s, :data:`REBALANCE_LOCK_MAX_LIVE_TIME`, and renewed every 20 s,
:data:`REBALANCE_LOCK_INTERVAL`), with ``consume_lock``, held during each listener call so
that a queue is never unlocked on the broker while its messages are being consumed.
"""

from __future__ import annotations

import asyncio
import heapq
from collections.abc import Iterable

from rmq.client.messageext import MessageExt
from rmq.common.msgconst import PROPERTY_MAX_OFFSET
from rmq.common.timeutil import now_millis
from rmq.remoting.bodies.consumerinfo import ProcessQueueInfo

__all__ = [
    "PULL_MAX_IDLE_TIME",
    "REBALANCE_LOCK_INTERVAL",
    "REBALANCE_LOCK_MAX_LIVE_TIME",
    "ProcessQueue",
]

REBALANCE_LOCK_MAX_LIVE_TIME = 30_000
"""How long (ms) a broker lock is trusted after it was last granted."""

REBALANCE_LOCK_INTERVAL = 20_000
"""How often (ms) an orderly consumer renews its broker locks."""

PULL_MAX_IDLE_TIME = 120_000
"""A queue not pulled for this long (ms) is considered stuck and is rebuilt by rebalance."""


class ProcessQueue:
    """Messages of one owned queue between pull and consumption (see the module docstring)."""

    def __init__(self) -> None:
        self._messages: dict[int, MessageExt] = {}
        self._offsets: list[int] = []  # min-heap over _messages' keys, may hold removed ones
        self._consuming: dict[int, MessageExt] = {}  # orderly: taken, not yet committed
        self.msg_count = 0
        self.msg_size = 0
        self.queue_offset_max = 0
        self.msg_acc_count = 0  # messages the broker held beyond the last pulled one
        self.consuming = False
        self.dropped = False
        self.locked = False
        self.try_unlock_times = 0
        self.consume_lock = asyncio.Lock()  # held while the listener consumes (orderly)
        now = now_millis()
        self.last_lock_timestamp = now
        self.last_pull_timestamp = now
        self.last_consume_timestamp = now

    # --- state checks ---

    def is_lock_expired(self) -> bool:
        return now_millis() - self.last_lock_timestamp > REBALANCE_LOCK_MAX_LIVE_TIME

    def is_pull_expired(self) -> bool:
        return now_millis() - self.last_pull_timestamp > PULL_MAX_IDLE_TIME

    def has_temp_message(self) -> bool:
        """Whether pulled messages are waiting to be consumed."""
        return bool(self._messages)

    def max_span(self) -> int:
        """Largest minus smallest held queue offset (0 when empty)."""
        if not self._messages:
            return 0
        return max(self._messages) - self._first_offset()

    # --- concurrent and orderly consumption ---

    def put_messages(self, messages: Iterable[MessageExt]) -> bool:
        """Hold freshly pulled messages (an offset already held is ignored).

        Returns True when the queue was idle and a consumer should be dispatched for it
        (orderly mode dispatches one consume task per queue at a time).
        """
        last = None
        for message in messages:
            offset = message.queue_offset
            if offset not in self._messages:
                self._messages[offset] = message
                heapq.heappush(self._offsets, offset)
                self.msg_count += 1
                self.msg_size += len(message.body)
                self.queue_offset_max = offset
            last = message
        dispatch = bool(self._messages) and not self.consuming
        if dispatch:
            self.consuming = True
        if last is not None:
            max_offset = last.properties.get(PROPERTY_MAX_OFFSET)
            if max_offset is not None:
                backlog = int(max_offset) - last.queue_offset
                if backlog > 0:
                    self.msg_acc_count = backlog
        return dispatch

    def remove_messages(self, messages: Iterable[MessageExt]) -> int:
        """Forget consumed messages; returns the offset now safe to commit.

        That is the smallest offset still held, or ``queue_offset_max + 1`` when none is;
        -1 when nothing was held at all (nothing to commit).
        """
        self.last_consume_timestamp = now_millis()
        if not self._messages:
            return -1
        for message in messages:
            held = self._messages.pop(message.queue_offset, None)
            if held is not None:
                self.msg_count -= 1
                self.msg_size -= len(held.body)
        if not self._messages:
            self.msg_count = 0
            self.msg_size = 0
            self._offsets.clear()
            return self.queue_offset_max + 1
        return self._first_offset()

    def take_messages(self, batch_size: int) -> list[MessageExt]:
        """Orderly: take up to ``batch_size`` messages in offset order into the consuming set.

        Taking nothing marks the queue idle, so the next pull dispatches a consumer again.
        """
        self.last_consume_timestamp = now_millis()
        taken: list[MessageExt] = []
        while self._messages and len(taken) < batch_size:
            offset = self._first_offset()
            heapq.heappop(self._offsets)
            message = self._messages.pop(offset)
            self._consuming[offset] = message
            taken.append(message)
        if not taken:
            self.consuming = False
        return taken

    def commit(self) -> int:
        """Orderly: the taken messages are done; returns the next offset to commit (-1 when
        nothing was taken)."""
        if not self._consuming:
            return -1
        self.msg_count -= len(self._consuming)
        self.msg_size -= sum(len(message.body) for message in self._consuming.values())
        if self.msg_count == 0:
            self.msg_size = 0
        next_offset = max(self._consuming) + 1
        self._consuming.clear()
        return next_offset

    def make_messages_to_consume_again(self, messages: Iterable[MessageExt]) -> None:
        """Orderly: put taken messages back, to be taken again first."""
        for message in messages:
            offset = message.queue_offset
            self._consuming.pop(offset, None)
            self._messages[offset] = message
            heapq.heappush(self._offsets, offset)

    def rollback(self) -> None:
        """Orderly: put every taken message back."""
        self.make_messages_to_consume_again(list(self._consuming.values()))

    def clear(self) -> None:
        """Forget everything held (the queue's offset is being reset)."""
        self._messages.clear()
        self._offsets.clear()
        self._consuming.clear()
        self.msg_count = 0
        self.msg_size = 0
        self.queue_offset_max = 0

    def info(self, commit_offset: int) -> ProcessQueueInfo:
        """This queue's part of a consumer's running info (GET_CONSUMER_RUNNING_INFO)."""
        held, taken = self._messages, self._consuming
        return ProcessQueueInfo(
            commit_offset=commit_offset,
            cached_msg_min_offset=self._first_offset() if held else 0,
            cached_msg_max_offset=max(held) if held else 0,
            cached_msg_count=len(held),
            cached_msg_size_in_mib=self.msg_size // (1024 * 1024),
            transaction_msg_min_offset=min(taken) if taken else 0,
            transaction_msg_max_offset=max(taken) if taken else 0,
            transaction_msg_count=len(taken),
            locked=self.locked,
            try_unlock_times=self.try_unlock_times,
            last_lock_timestamp=self.last_lock_timestamp,
            droped=self.dropped,
            last_pull_timestamp=self.last_pull_timestamp,
            last_consume_timestamp=self.last_consume_timestamp,
        )

    def _first_offset(self) -> int:
        """The smallest held offset; drops heap entries of messages already removed."""
        offsets = self._offsets
        while offsets[0] not in self._messages:
            heapq.heappop(offsets)
        return offsets[0]
