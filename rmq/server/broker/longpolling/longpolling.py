"""Long polling: pull requests parked until a message arrives for their queue or they time out.

A push consumer pulls with FLAG_SUSPEND and a suspend timeout (15 s for the C++ and Java
clients).  When the pull finds nothing new (PULL_NOT_FOUND), the pull processor does not
answer at once: it parks the request here with :meth:`PullRequestHoldService.hold` and awaits
the outcome, then runs the pull once more and answers whatever it finds (Apache's
``PullRequestHoldService``).  A parked request is released

* by :meth:`~PullRequestHoldService.notify_message_arriving`, which the broker calls whenever
  the store dispatches a message to a queue: every request parked on that queue whose offset
  is now below the queue's max offset, and whose subscription may match the new message's tags
  code, is woken; a request of an SQL92 subscription only when a message from its offset on
  makes the expression true (read back from the store: Apache evaluates the dispatched
  message's properties).  The waiting handler resumes in the next turn of the event loop, so a
  consumer learns of a message as soon as it is stored;
* when its timeout expires (one timer per parked request), to answer "not found";
* by :meth:`~PullRequestHoldService.channel_closed` when its connection closes: nobody is left
  to answer, so the request is dropped;
* by cancellation of the waiting handler (server shutdown): the request removes itself.

Parked requests are keyed by (topic, queue id), and indexed by connection too, so a closing
connection drops its own requests without a scan of all the others; each is an asyncio future
that resolves to True (run the pull again) or False (drop it).  Arrivals are ignored while
``longPollingEnable`` is off (Apache's store stops reporting them then): the pull processor
parks requests for ``shortPollingTimeMills`` and they are simply answered when that expires.
:meth:`~PullRequestHoldService.check_hold_requests` compares every parked request with the
store's max offsets (Apache runs it every 5 s) for arrivals that were not reported.

Everything runs on the broker's event loop; ``notify_message_arriving`` must be called on
that loop's thread (the store dispatches there).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from rmq.common.config import BrokerConfig
from rmq.remoting.connection import Connection
from rmq.store.store import MessageStore, RecordFilter, TagsFilter

log = logging.getLogger("rmq.broker")


@dataclass(slots=True, eq=False)
class _HeldPull:
    """One parked pull request; hashed by identity."""

    connection: Connection
    pull_from_offset: int
    tags_filter: TagsFilter | None
    record_filter: RecordFilter | None
    outcome: asyncio.Future[bool]

    def release(self, run_again: bool) -> None:
        if not self.outcome.done():
            self.outcome.set_result(run_again)


class PullRequestHoldService:
    """The pull requests parked on one broker, by queue."""

    def __init__(self, store: MessageStore, broker_config: BrokerConfig) -> None:
        self._store = store
        self._broker_config = broker_config
        self._held: dict[tuple[str, int], dict[_HeldPull, None]] = {}
        self._by_connection: dict[Connection, dict[_HeldPull, tuple[str, int]]] = {}

    async def hold(
        self,
        connection: Connection,
        topic: str,
        queue_id: int,
        pull_from_offset: int,
        tags_filter: TagsFilter | None,
        timeout_ms: int,
        *,
        record_filter: RecordFilter | None = None,
    ) -> bool:
        """Park a pull of ``topic``/``queue_id`` that found nothing at ``pull_from_offset``.

        Returns True when the pull should run again (a message arrived or the timeout
        expired), False when the connection closed meanwhile.  ``tags_filter`` is the
        subscription's test of a tags code (None: every message matches), ``record_filter``
        its test of a stored record (SQL92; None: none).
        """
        loop = asyncio.get_running_loop()
        key = (topic, queue_id)
        held = _HeldPull(
            connection, pull_from_offset, tags_filter, record_filter, loop.create_future()
        )
        self._held.setdefault(key, {})[held] = None
        self._by_connection.setdefault(connection, {})[held] = key
        timer = loop.call_later(max(timeout_ms, 0) / 1000, held.release, True)
        try:
            return await held.outcome
        finally:
            timer.cancel()
            self._forget(key, held)

    def _forget(self, key: tuple[str, int], held: _HeldPull) -> None:
        queue_requests = self._held.get(key)
        if queue_requests is not None:
            queue_requests.pop(held, None)
            if not queue_requests:
                del self._held[key]
        parked = self._by_connection.get(held.connection)
        if parked is not None:
            parked.pop(held, None)
            if not parked:
                del self._by_connection[held.connection]

    def notify_message_arriving(
        self, topic: str, queue_id: int, max_offset: int, tags_code: int | None = None
    ) -> None:
        """A message was dispatched to ``topic``/``queue_id``: the queue's max offset is now
        ``max_offset``, and ``tags_code`` is the new message's (None: unknown, matches every
        subscription).  Wakes the requests parked on the queue that it concerns."""
        if not self._broker_config.long_polling_enable:
            return
        key = (topic, queue_id)
        queue_requests = self._held.get(key)
        if not queue_requests:
            return
        store_max_offset: int | None = None
        for held in list(queue_requests):
            newest = max_offset
            if newest <= held.pull_from_offset:
                if store_max_offset is None:
                    store_max_offset = self._store.get_max_offset_in_queue(topic, queue_id)
                newest = store_max_offset
            if newest <= held.pull_from_offset:
                continue
            tags_filter = held.tags_filter
            if tags_code is not None and tags_filter is not None and not tags_filter(tags_code):
                continue
            if tags_code is not None and not self._record_arrived(topic, queue_id, held):
                continue
            self._forget(key, held)
            held.release(True)

    def _record_arrived(self, topic: str, queue_id: int, held: _HeldPull) -> bool:
        """Whether a message from the request's offset on passes its record filter."""
        if held.record_filter is None:
            return True
        result = self._store.get_messages(
            topic, queue_id, held.pull_from_offset, 1, None, held.record_filter
        )
        return bool(result.messages)

    def check_hold_requests(self) -> None:
        """Wake every parked request whose queue has grown past its offset, whatever the tags
        (Apache's periodic check, for arrivals that were not reported)."""
        for topic, queue_id in list(self._held):
            max_offset = self._store.get_max_offset_in_queue(topic, queue_id)
            self.notify_message_arriving(topic, queue_id, max_offset)

    def channel_closed(self, connection: Connection) -> None:
        """Drop every request parked by ``connection``: nobody is left to answer."""
        parked = self._by_connection.pop(connection, None)
        if not parked:
            return
        dropped = len(parked)
        for held, key in parked.items():
            self._forget(key, held)
            held.release(False)
        if dropped:
            log.debug("dropped %d pull requests parked by %s", dropped, connection)

    def held_count(self) -> int:
        """How many pull requests are parked right now."""
        return sum(map(len, self._held.values()))
