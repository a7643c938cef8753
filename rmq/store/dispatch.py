"""Dispatch: from a stored record to its consume queue entry and index keys.

:meth:`Dispatcher.dispatch` writes one record's consume queue entry (unless it is a
transactional PREPARED or ROLLBACK record) and its index keys (the unique key and every KEYS
token, unless ROLLBACK), from a :class:`~rmq.store.putmessage.DispatchRequest`.  The
commitlog calls it inline after each single append; :meth:`Dispatcher.dispatch_batch` does
the same for the records of one batch (never transactional) in one call, with the fields the
append already worked out.  Records read back from the commitlog (abnormal recovery, catch-up,
replication, retry) go through :meth:`Dispatcher.dispatch_from`, which walks them with
:meth:`~rmq.store.commitlog.CommitLog.scan`; a parked delayed message read back gets its
delivery time as tags code, as at its append.

Dispatching a record again is harmless and completes what a kill interrupted: the consume
queue skips an entry it holds (rewriting its last entry when that differs, i.e. was left half
written), and the index adds, for the newest message it holds, only the keys it lacks.  Once
the consume queue holds the entries, :attr:`Dispatcher.arrival_listener` (the broker's long
polling) is told the queue's new end: once per record, or once per batch for each tags code
in it.

An index file that cannot be created does not hold anything up: the keys wait in
:class:`~rmq.store.indexlag.IndexLag` and are indexed later.  A consume queue file that
cannot be created (a full disk) does not fail the append that was already written either: the
dispatcher notes the first record it could not dispatch (:attr:`Dispatcher.retry_from`, and
why: :attr:`Dispatcher.failure`) and leaves every later record alone (dispatch stays in
commitlog order); :meth:`Dispatcher.retry` re-dispatches from there and stops again at the
first record that still fails, so a retry on a disk still full costs one attempt.  The store
refuses puts meanwhile and retries (:mod:`rmq.store.diskguard`); the dispatcher itself logs
nothing, the store logs once per episode.

Everything here runs on the writer thread, under the commitlog lock.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from rmq.common.delay import deliver_timestamp
from rmq.common.message import DispatchInfo, PreparedBatch
from rmq.common.msgconst import KEY_SEPARATOR, PROPERTY_DELAY_TIME_LEVEL
from rmq.common.naming import RMQ_SYS_SCHEDULE_TOPIC
from rmq.common.sysflag import (
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    TRANSACTION_TYPE_MASK,
)
from rmq.store.commitlog import CommitLog
from rmq.store.consumequeue import ConsumeQueueStore
from rmq.store.errors import StoreError
from rmq.store.indexlag import IndexLag
from rmq.store.indexservice import IndexService
from rmq.store.putmessage import DispatchRequest

log = logging.getLogger("rmq.store")

ArrivalListener = Callable[[str, int, int, int], None]
"""Told ``(topic, queue id, next queue offset, tags code)`` when messages reach a consume queue."""


class Dispatcher:
    """Builds the consume queues and the index of one store from its commitlog records.

    ``index`` is None when the store keeps no index (``messageIndexEnable=false``); keys go
    to it through ``index_lag`` (:mod:`rmq.store.indexlag`; one without a marker file when
    not given), so an index file that cannot be created leaves the keys for later.
    ``delay_levels[level - 1]`` is the delay of each level in ms (the tags code of a parked
    message read back is its delivery time).  :attr:`redispatched` counts the records read
    back and dispatched.
    """

    def __init__(
        self,
        consume_queues: ConsumeQueueStore,
        index: IndexService | None,
        delay_levels: tuple[int, ...],
        index_lag: IndexLag | None = None,
    ) -> None:
        self.consume_queues = consume_queues
        self.index = index
        self.index_lag = index_lag
        if index_lag is None and index is not None:
            self.index_lag = IndexLag(index)
        self.delay_levels = delay_levels
        self.arrival_listener: ArrivalListener | None = None
        self.retry_from = -1
        self.failure: StoreError | None = None
        self.redispatched = 0
        self.attempts = 0

    def dispatch(self, request: DispatchRequest) -> None:
        """Build the consume queue entry and index keys of one record (idempotent)."""
        if self.retry_from >= 0:
            return  # behind a record that could not be dispatched: the retry covers it
        self.attempts += 1
        tran_type = request.sys_flag & TRANSACTION_TYPE_MASK
        consumable = (
            tran_type != TRANSACTION_PREPARED_TYPE and tran_type != TRANSACTION_ROLLBACK_TYPE
        )
        topic = request.topic
        physical_offset = request.physical_offset
        store_timestamp = request.store_timestamp
        try:
            if consumable:
                self.consume_queues.put(
                    topic,
                    request.queue_id,
                    request.queue_offset,
                    physical_offset,
                    request.size,
                    request.tags_code,
                    store_timestamp,
                )
            index = self.index_lag
            keys = request.keys
            uniq_key = request.uniq_key
            if index is not None and tran_type != TRANSACTION_ROLLBACK_TYPE and (keys or uniq_key):
                index.put_keys(
                    topic,
                    keys.split(KEY_SEPARATOR) if keys else (),
                    uniq_key,
                    physical_offset,
                    store_timestamp,
                )
        except StoreError as exc:
            self._failed(physical_offset, exc)
            return
        listener = self.arrival_listener
        if listener is not None and consumable:
            listener(topic, request.queue_id, request.queue_offset + 1, request.tags_code)

    def dispatch_batch(
        self,
        topic: str,
        queue_id: int,
        queue_offset: int,
        physical_offset: int,
        batch: PreparedBatch,
        store_timestamp: int,
    ) -> None:
        """Build the consume queue entries and index keys of the records of one batch,
        stored from ``physical_offset`` on with queue offsets from ``queue_offset``."""
        if self.retry_from >= 0:
            return
        self.attempts += 1
        put_entry = self.consume_queues.put
        index = self.index_lag
        offset = physical_offset
        try:
            for size, tags_code, keys, uniq_key in zip(
                batch.sizes, batch.tags_codes, batch.keys, batch.uniq_keys, strict=True
            ):
                put_entry(topic, queue_id, queue_offset, offset, size, tags_code, store_timestamp)
                if index is not None and (keys or uniq_key):
                    index.put_keys(
                        topic,
                        keys.split(KEY_SEPARATOR) if keys else (),
                        uniq_key,
                        offset,
                        store_timestamp,
                    )
                queue_offset += 1
                offset += size
        except StoreError as exc:
            self._failed(offset, exc)
            return
        listener = self.arrival_listener
        if listener is not None:
            for tags_code in dict.fromkeys(batch.tags_codes):
                listener(topic, queue_id, queue_offset, tags_code)

    def _failed(self, physical_offset: int, exc: StoreError) -> None:
        """A consume queue file could not be created: later records wait, and
        :meth:`retry` starts from this one."""
        log.debug("dispatch of the record at %d failed: %s", physical_offset, exc)
        if self.retry_from < 0:
            self.retry_from = physical_offset
            self.failure = exc

    # -- records read back ---------------------------------------------------------------

    def redispatch(self, info: DispatchInfo) -> None:
        """Dispatch a record read back from the commitlog."""
        self.redispatched += 1
        self.dispatch(
            DispatchRequest(
                info.topic,
                info.queue_id,
                info.queue_offset,
                info.physical_offset,
                info.total_size,
                self.entry_tags_code(info),
                info.store_timestamp,
                info.sys_flag,
                info.keys,
                info.uniq_key,
            )
        )

    def entry_tags_code(self, info: DispatchInfo) -> int:
        """The consume-queue tags code of a record read back: delivery time when parked."""
        if info.topic == RMQ_SYS_SCHEDULE_TOPIC:
            level = info.properties.get(PROPERTY_DELAY_TIME_LEVEL, "")
            if level.isdigit() and int(level) > 0:
                return deliver_timestamp(int(level), info.store_timestamp, self.delay_levels)
        return info.tags_code

    def dispatch_from(self, commitlog: CommitLog, start_offset: int) -> int:
        """Dispatch the valid records of ``commitlog`` from ``start_offset`` on; returns the
        offset where they end."""
        return commitlog.scan(start_offset, check_crc=False, on_record=self.redispatch)

    def retry(self, commitlog: CommitLog) -> bool:
        """Re-dispatch from the first record whose dispatch failed, up to the end of the
        commitlog or the first record that fails again (under the commitlog lock); True
        when every record is dispatched."""
        start, self.retry_from, self.failure = self.retry_from, -1, None
        self.dispatch_from(commitlog, start)
        return self.retry_from < 0
