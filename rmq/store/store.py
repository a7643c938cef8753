"""The message store facade: what the broker (and tests, and benchmarks) call.

:class:`MessageStore` ties the pieces of one store directory together: the commitlog
(:mod:`rmq.store.commitlog`), the consume queues and the index (built on dispatch), the
checkpoint, the lock and abort files, the flush threads and expiry.

Lifecycle.  :meth:`MessageStore.start` takes the directory lock (a second process fails with
a clear error), maps every file, recovers, creates the ``abort`` file and starts the flush
threads.  Recovery is *normal* when the previous run removed its ``abort`` file (walk the
last three commitlog files, cut a torn tail) and *abnormal* otherwise (walk from the newest
commitlog file whose first record is older than the checkpoint says is safely flushed,
re-dispatching every valid record).  Either way the consume queues and the index are cut
back to the valid commitlog end, records the consume queues have not seen yet are
dispatched, and the queue offsets of the append path are rebuilt from the consume queues.
:attr:`MessageStore.recovery` says what was found and cut.  :meth:`MessageStore.shutdown`
flushes everything, removes the ``abort`` file and releases the lock.

Dispatch.  :meth:`MessageStore.dispatch` writes one record's consume queue entry (unless it
is a transactional PREPARED or ROLLBACK record) and its index keys (the unique key and every
KEYS token, unless ROLLBACK).  The commitlog calls it inline after each single append,
recovery and replication call it for records read back; :meth:`MessageStore.dispatch_batch`
does the same for the records of one batch (never transactional) in one call, with the
fields the append already worked out.  Dispatching a record again is harmless and completes
what a kill interrupted: the consume queue skips an entry it holds (rewriting its last entry
when that differs, i.e. was left half written), and the index adds, for the newest message
it holds, only the keys it lacks.  Once the consume queue holds the entries,
:attr:`MessageStore.arrival_listener` (the broker's long polling) is told the queue's new
end: once per record, or once per batch for each tags code in it.

Reads.  :meth:`MessageStore.get_messages` is the pull path: consume-queue entries from the
requested offset, filtered by tags code (and optionally by the record), returned as
zero-copy slices of the commitlog mapping with Apache's status and next-offset rules and
batch limits.  Lookups by physical offset, offset message id, key and time are here too.

Threads.  Writes (puts, dispatch, recovery) happen on one thread, the broker's event loop,
under the commitlog lock.  The flush threads only ``msync`` and update the checkpoint.  SYNC
flush waiters registered with :meth:`MessageStore.request_flush` are called back on the flush
thread.  Reads are safe from any thread.  :meth:`MessageStore.run_cleanup` may run on a timer
thread.
"""

from __future__ import annotations

import enum
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from rmq.common.config import BrokerRole, FlushDiskType, MessageStoreConfig
from rmq.common.delay import parse_delay_levels
from rmq.common.message import DispatchInfo, MessageRecord, PreparedBatch, decode_record
from rmq.common.msgconst import KEY_SEPARATOR
from rmq.common.msgid import decode_offset_msg_id, pack_host
from rmq.common.recordwalk import MIN_RECORD_SIZE, RecordError, store_timestamp_at
from rmq.common.sysflag import (
    TRANSACTION_NOT_TYPE,
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    TRANSACTION_TYPE_MASK,
)
from rmq.common.timeutil import now_millis
from rmq.store.checkpoint import StoreCheckpoint
from rmq.store.cleanup import CleanupResult, CleanupService, DiskUsage, disk_used_ratio
from rmq.store.commitlog import CommitLog, InnerMessage, PutMessageResult, PutMessageStatus
from rmq.store.consumequeue import (
    CQ_STORE_UNIT_SIZE,
    ConsumeQueue,
    ConsumeQueueStore,
    iter_entries,
)
from rmq.store.errors import StoreError
from rmq.store.flush import CommitLogFlushService, LogicsFlushService
from rmq.store.indexfile import IndexService
from rmq.store.layout import StoreLayout
from rmq.store.lockfile import (
    StoreLock,
    abort_file_exists,
    create_abort_file,
    delete_abort_file,
)
from rmq.store.mappedfile import Allocate, TruncatedRange

log = logging.getLogger("rmq.store")

MIN_SCAN_ENTRIES = 800

TagsFilter = Callable[[int], bool]
"""Decides from a consume-queue tags code whether a message may match the subscription."""

RecordFilter = Callable[[memoryview], bool]
"""Decides from the stored record (e.g. its properties, for SQL92) whether it matches."""

FlushCallback = Callable[[PutMessageStatus], None]
"""Gets PUT_OK once the record is on disk, FLUSH_DISK_TIMEOUT when that took too long."""

ArrivalListener = Callable[[str, int, int, int], None]
"""Told ``(topic, queue id, next queue offset, tags code)`` when messages reach a consume queue."""


class GetMessageStatus(enum.Enum):
    """Outcome of :meth:`MessageStore.get_messages`, as Apache's ``GetMessageStatus``."""

    FOUND = enum.auto()
    NO_MATCHED_MESSAGE = enum.auto()
    MESSAGE_WAS_REMOVING = enum.auto()
    OFFSET_FOUND_NULL = enum.auto()
    OFFSET_OVERFLOW_BADLY = enum.auto()
    OFFSET_OVERFLOW_ONE = enum.auto()
    OFFSET_TOO_SMALL = enum.auto()
    NO_MATCHED_LOGIC_QUEUE = enum.auto()
    NO_MESSAGE_IN_QUEUE = enum.auto()


@dataclass(slots=True)
class GetMessageResult:
    """Messages found by a pull, as zero-copy views of the commitlog.

    ``messages[i]`` is the whole stored record at ``physical_offsets[i]``; the pull response
    body is their concatenation.  ``next_begin_offset``, ``min_offset`` and ``max_offset``
    follow the pull table of the spec.
    """

    status: GetMessageStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    messages: list[memoryview] = field(default_factory=list)
    physical_offsets: list[int] = field(default_factory=list)
    buffer_total_size: int = 0
    suggest_pulling_from_slave: bool = False

    @property
    def message_count(self) -> int:
        return len(self.messages)


@dataclass(slots=True)
class QueryMessageResult:
    """Messages found by key (QUERY_MESSAGE), oldest first, with the index's freshness."""

    messages: list[memoryview]
    physical_offsets: list[int]
    index_last_update_timestamp: int
    index_last_update_phy_offset: int


@dataclass(slots=True)
class RecoveryResult:
    """What :meth:`MessageStore.start` found: normal or abnormal, the valid commitlog range,
    how many records were re-dispatched, and every byte range it cut."""

    abnormal: bool
    start_offset: int = 0
    end_offset: int = 0
    dispatched: int = 0
    truncated: list[TruncatedRange] = field(default_factory=list)


def _physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 8 << 30


class MessageStore:
    """One broker's message store (see the module docstring).

    ``store_host`` is the broker's own address as ``ip:port`` (goes into every record and
    offset message id).  ``allocate`` (file preallocation), ``clock`` (store timestamps, ms)
    and ``disk_usage`` (used-space ratio of a path) are replaceable for tests.

    ``arrival_listener``, when set, is called on the writer thread, inside the append lock,
    each time dispatch has put messages into a consume queue: ``(topic, queue id, the queue
    offset after the last of them, tags code)``.  Set it after :meth:`start`, so that
    recovery does not call it.  PREPARED and ROLLBACK records, which get no consume queue
    entry, are not reported; a batch is reported once for each distinct tags code in it.
    """

    def __init__(
        self,
        config: MessageStoreConfig,
        *,
        store_host: str = "127.0.0.1:10911",
        allocate: Allocate = os.posix_fallocate,
        clock: Callable[[], int] = now_millis,
        disk_usage: DiskUsage = disk_used_ratio,
    ) -> None:
        self.config = config
        self.layout = StoreLayout.of(config.store_path_root_dir, config.commit_log_dir)
        host, _, port = store_host.rpartition(":")
        self.store_host = pack_host(host.strip("[]"), int(port))
        self.sync_flush = config.flush_disk_type is FlushDiskType.SYNC_FLUSH
        self.commitlog = CommitLog(
            self.layout.commitlog,
            config.mapped_file_size_commit_log,
            store_host=self.store_host,
            max_message_size=config.max_message_size,
            dispatch=self.dispatch,
            dispatch_batch=self.dispatch_batch,
            delay_levels=parse_delay_levels(config.message_delay_level),
            allocate=allocate,
            clock=clock,
        )
        self.consume_queues = ConsumeQueueStore(self.layout, config.mapped_file_size_consume_queue)
        self.index: IndexService | None = None
        if config.message_index_enable:
            self.index = IndexService(
                self.layout.index, config.max_hash_slot_num, config.max_index_num
            )
        self.recovery = RecoveryResult(abnormal=False)
        self._lock = StoreLock(self.layout.root)
        self._checkpoint: StoreCheckpoint | None = None
        self._commitlog_flush: CommitLogFlushService | None = None
        self._logics_flush: LogicsFlushService | None = None
        self._cleanup = CleanupService(self, disk_usage)
        self._memory_budget = _physical_memory() * config.access_message_in_memory_max_ratio // 100
        self._correct_offsets = (
            config.broker_role is not BrokerRole.SLAVE or config.offset_check_in_slave
        )
        self._redispatch_from = -1
        self._redispatched = 0
        self._replica_dispatched = 0
        self.running = False
        self.disk_full = False
        self.arrival_listener: ArrivalListener | None = None

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> RecoveryResult:
        """Lock, load, recover and start flushing; returns what recovery did.

        Raises :class:`StoreError` (or its subclass ``StoreLockedError``) when the store
        cannot be opened.
        """
        self._lock.acquire()
        try:
            abnormal = abort_file_exists(self.layout.abort)
            os.makedirs(self.layout.root, exist_ok=True)
            self._checkpoint = StoreCheckpoint(self.layout.checkpoint)
            self.commitlog.queue.load()
            self.consume_queues.load()
            if self.index is not None:
                self.index.load()
            self.recovery = self._recover(abnormal)
            create_abort_file(self.layout.abort)
        except BaseException:
            self._close_files()
            self._lock.release()
            raise
        self._start_flush_services(self._checkpoint)
        self.running = True
        return self.recovery

    def shutdown(self) -> None:
        """Flush everything, remove the ``abort`` file and release the lock."""
        if not self.running:
            return
        self.running = False
        assert self._commitlog_flush is not None and self._logics_flush is not None
        self._commitlog_flush.shutdown()
        self._logics_flush.shutdown()
        self._close_files()
        delete_abort_file(self.layout.abort)
        self._lock.release()

    def _close_files(self) -> None:
        self.commitlog.queue.close()
        self.consume_queues.close()
        if self.index is not None:
            self.index.close()
        if self._checkpoint is not None:
            self._checkpoint.close()
            self._checkpoint = None

    def _start_flush_services(self, checkpoint: StoreCheckpoint) -> None:
        config = self.config
        self._commitlog_flush = CommitLogFlushService(
            self.commitlog.queue,
            checkpoint,
            sync=self.sync_flush,
            interval_ms=config.flush_interval_commit_log,
            least_pages=config.flush_commit_log_least_pages,
            thorough_interval_ms=config.flush_commit_log_thorough_interval,
            sync_flush_timeout_ms=config.sync_flush_timeout,
        )
        self._logics_flush = LogicsFlushService(
            self.flush_logics,
            interval_ms=config.flush_interval_consume_queue,
            least_pages=config.flush_consume_queue_least_pages,
            thorough_interval_ms=config.flush_consume_queue_thorough_interval,
        )
        self._commitlog_flush.start()
        self._logics_flush.start()

    # -- recovery ------------------------------------------------------------------------

    def _recover(self, abnormal: bool) -> RecoveryResult:
        config = self.config
        commitlog = self.commitlog
        checkpoint = self._checkpoint
        assert checkpoint is not None
        self.consume_queues.recover()
        result = RecoveryResult(abnormal=abnormal)
        min_timestamp = (
            checkpoint.min_timestamp_index()
            if self.index is not None and config.message_index_safe
            else checkpoint.min_timestamp()
        )
        start = commitlog.recovery_start(abnormal, min_timestamp)
        on_record = self._redispatch if abnormal else None
        self._redispatched = 0
        end = commitlog.scan(start, check_crc=config.check_crc_on_recover, on_record=on_record)
        result.start_offset = start
        result.end_offset = end
        result.truncated = commitlog.truncate(end)
        for cut in result.truncated:
            log.warning(
                "recovery cut %d bytes of %s at position %d", cut.length, cut.path, cut.position
            )
        self.consume_queues.truncate_dirty(end)
        if self.index is not None:
            self.index.truncate_dirty(end)
        self._rebuild_queue_offsets()
        self._catch_up(end)
        self._replica_dispatched = end
        result.dispatched = self._redispatched
        self.consume_queues.correct_min_offsets(max(commitlog.min_offset(), 0))
        log.info(
            "%s recovery: commitlog valid from %d to %d, %d records dispatched",
            "abnormal" if abnormal else "normal",
            start,
            end,
            result.dispatched,
        )
        return result

    def _catch_up(self, end: int) -> None:
        """Dispatch the records after the newest one the consume queues hold."""
        start = max(
            max((queue.max_physical_offset for queue in self.consume_queues), default=-1),
            self.commitlog.min_offset(),
            0,
        )
        if start < end:
            self.commitlog.scan(start, check_crc=False, on_record=self._redispatch)
            self._rebuild_queue_offsets()

    def _rebuild_queue_offsets(self) -> None:
        self.commitlog.topic_queue_table = {
            (queue.topic, queue.queue_id): queue.max_offset for queue in self.consume_queues
        }

    # -- dispatch ------------------------------------------------------------------------

    def dispatch(
        self,
        topic: str,
        queue_id: int,
        queue_offset: int,
        physical_offset: int,
        size: int,
        tags_code: int,
        store_timestamp: int,
        sys_flag: int,
        keys: str | None,
        uniq_key: str | None,
    ) -> None:
        """Build the consume queue entry and index keys of one record (idempotent)."""
        try:
            consumable = self._dispatch_record(
                topic,
                queue_id,
                queue_offset,
                physical_offset,
                size,
                tags_code,
                store_timestamp,
                sys_flag & TRANSACTION_TYPE_MASK,
                keys,
                uniq_key,
            )
        except StoreError as exc:
            self._dispatch_failed(physical_offset, exc)
            return
        listener = self.arrival_listener
        if listener is not None and consumable:
            listener(topic, queue_id, queue_offset + 1, tags_code)

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
        dispatch_record = self._dispatch_record
        offset = physical_offset
        try:
            for size, tags_code, keys, uniq_key in zip(
                batch.sizes, batch.tags_codes, batch.keys, batch.uniq_keys, strict=True
            ):
                dispatch_record(
                    topic,
                    queue_id,
                    queue_offset,
                    offset,
                    size,
                    tags_code,
                    store_timestamp,
                    TRANSACTION_NOT_TYPE,
                    keys,
                    uniq_key,
                )
                queue_offset += 1
                offset += size
        except StoreError as exc:
            self._dispatch_failed(offset, exc)
            return
        listener = self.arrival_listener
        if listener is not None:
            for tags_code in dict.fromkeys(batch.tags_codes):
                listener(topic, queue_id, queue_offset, tags_code)

    def _dispatch_record(
        self,
        topic: str,
        queue_id: int,
        queue_offset: int,
        physical_offset: int,
        size: int,
        tags_code: int,
        store_timestamp: int,
        tran_type: int,
        keys: str | None,
        uniq_key: str | None,
    ) -> bool:
        """Write one record's consume queue entry and index keys; returns whether it has a
        consume queue entry (not PREPARED or ROLLBACK).  Raises StoreError."""
        consumable = (
            tran_type != TRANSACTION_PREPARED_TYPE and tran_type != TRANSACTION_ROLLBACK_TYPE
        )
        if consumable:
            self.consume_queues.put(
                topic, queue_id, queue_offset, physical_offset, size, tags_code, store_timestamp
            )
        index = self.index
        if index is not None and tran_type != TRANSACTION_ROLLBACK_TYPE and (keys or uniq_key):
            index.put_keys(
                topic,
                keys.split(KEY_SEPARATOR) if keys else (),
                uniq_key,
                physical_offset,
                store_timestamp,
            )
        return consumable

    def _dispatch_failed(self, physical_offset: int, exc: StoreError) -> None:
        """A consume queue or index file could not be created: retry from this record
        before the next append."""
        log.error("dispatch of the record at %d failed, will retry: %s", physical_offset, exc)
        if self._redispatch_from < 0:
            self._redispatch_from = physical_offset

    def _redispatch(self, info: DispatchInfo) -> None:
        self._redispatched += 1
        self.dispatch(
            info.topic,
            info.queue_id,
            info.queue_offset,
            info.physical_offset,
            info.total_size,
            self.commitlog.dispatch_tags_code(info),
            info.store_timestamp,
            info.sys_flag,
            info.keys,
            info.uniq_key,
        )

    def _retry_dispatch(self) -> None:
        """Re-dispatch from the first record whose dispatch failed (a file could not be
        created); called before the next append, under the commitlog lock."""
        start, self._redispatch_from = self._redispatch_from, -1
        self.commitlog.scan(start, check_crc=False, on_record=self._redispatch)

    # -- writing -------------------------------------------------------------------------

    def put_message(self, msg: InnerMessage) -> PutMessageResult:
        """Append one message (see :class:`~rmq.store.commitlog.InnerMessage`)."""
        if not self.running or self.disk_full:
            return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE)
        if self._redispatch_from >= 0:
            with self.commitlog.lock:
                self._retry_dispatch()
        return self.commitlog.put_message(msg)

    def put_messages(self, batch: InnerMessage) -> PutMessageResult:
        """Append a SEND_BATCH_MESSAGE batch atomically (``batch.body`` is the batch body)."""
        if not self.running or self.disk_full:
            return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE)
        if self._redispatch_from >= 0:
            with self.commitlog.lock:
                self._retry_dispatch()
        return self.commitlog.put_messages(batch)

    def request_flush(self, result: PutMessageResult, callback: FlushCallback) -> None:
        """Call ``callback`` when ``result``'s records are durable as the flush mode requires.

        ASYNC_FLUSH: at once (PUT_OK), on the calling thread.  SYNC_FLUSH: from the flush
        thread after the group commit that covers them (PUT_OK), or FLUSH_DISK_TIMEOUT after
        ``syncFlushTimeout`` ms.  Only for successful puts whose producer waits (WAIT=true).
        """
        service = self._commitlog_flush
        if not self.sync_flush or service is None or not self.running:
            callback(PutMessageStatus.PUT_OK)  # after shutdown everything was flushed
            return
        service.request_flush(
            result.next_offset,
            lambda flushed: callback(
                PutMessageStatus.PUT_OK if flushed else PutMessageStatus.FLUSH_DISK_TIMEOUT
            ),
        )

    def append_to_commitlog(self, start_offset: int, data: bytes | memoryview) -> bool:
        """Slave side of replication: append the master's bytes and dispatch the records
        they complete (a record split across two transfers is dispatched with the second)."""
        if not self.commitlog.append_data(start_offset, data):
            return False
        with self.commitlog.lock:
            self._replica_dispatched = self.commitlog.scan(
                max(self._replica_dispatched, self.commitlog.min_offset()),
                check_crc=False,
                on_record=self._redispatch,
            )
        return True

    def flush_logics(self, least_pages: int) -> None:
        """Flush consume queues (and on a thorough flush the index), then the checkpoint."""
        checkpoint = self._checkpoint
        logics_timestamp = self.consume_queues.flush(least_pages)
        if checkpoint is None:
            return
        if logics_timestamp:
            checkpoint.logics_msg_timestamp = logics_timestamp
        if least_pages == 0 and self.index is not None:
            index_timestamp = self.index.flush()
            if index_timestamp:
                checkpoint.index_msg_timestamp = index_timestamp
        checkpoint.flush()

    def flush(self) -> int:
        """Flush the commitlog now (on the calling thread); returns the flushed offset."""
        return self.commitlog.queue.flush(0)

    # -- reading -------------------------------------------------------------------------

    def get_messages(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        max_msg_nums: int,
        tags_filter: TagsFilter | None = None,
        record_filter: RecordFilter | None = None,
    ) -> GetMessageResult:
        """Read up to ``max_msg_nums`` messages of a queue from queue ``offset`` (a pull).

        Scans at most ``max(800, max_msg_nums)`` consume-queue entries, never past the end
        of the consume-queue file holding ``offset``; stops at the transfer limits (256 KiB /
        32 messages from memory, 64 KiB / 8 from disk by default), always taking the first
        match.
        """
        max_physical = self.commitlog.max_offset()
        queue = self.consume_queues.find(topic, queue_id)
        if queue is None:
            return GetMessageResult(
                GetMessageStatus.NO_MATCHED_LOGIC_QUEUE, self._next_offset(offset, 0), 0, 0
            )
        min_offset = queue.min_offset
        max_offset = queue.max_offset
        if max_offset == 0:
            status, next_offset = GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0
        elif offset < min_offset:
            status, next_offset = GetMessageStatus.OFFSET_TOO_SMALL, min_offset
        elif offset == max_offset:
            status, next_offset = GetMessageStatus.OFFSET_OVERFLOW_ONE, offset
        elif offset > max_offset:
            status, next_offset = GetMessageStatus.OFFSET_OVERFLOW_BADLY, max_offset
        else:
            entries = queue.get_entries(offset, max(MIN_SCAN_ENTRIES, max_msg_nums))
            if entries is None:
                return GetMessageResult(
                    GetMessageStatus.OFFSET_FOUND_NULL,
                    self._next_offset(offset, self._roll_next_queue_file(offset)),
                    min_offset,
                    max_offset,
                )
            result = GetMessageResult(
                GetMessageStatus.NO_MATCHED_MESSAGE, offset, min_offset, max_offset
            )
            self._collect(result, entries, max_msg_nums, max_physical, tags_filter, record_filter)
            return result
        return GetMessageResult(
            status, self._next_offset(offset, next_offset), min_offset, max_offset
        )

    def _collect(
        self,
        result: GetMessageResult,
        entries: memoryview,
        max_msg_nums: int,
        max_physical: int,
        tags_filter: TagsFilter | None,
        record_filter: RecordFilter | None,
    ) -> None:
        config = self.config
        commitlog = self.commitlog
        memory_budget = self._memory_budget
        messages = result.messages
        next_file_start = -1
        scanned = 0
        last_physical = 0
        for physical_offset, size, tags_code in iter_entries(entries):
            scanned += 1
            last_physical = physical_offset
            if physical_offset < next_file_start:
                continue
            if messages:
                if len(messages) >= max_msg_nums:
                    scanned -= 1
                    break
                in_disk = max_physical - physical_offset > memory_budget
                if in_disk:
                    max_bytes = config.max_transfer_bytes_on_message_in_disk
                    max_count = config.max_transfer_count_on_message_in_disk
                else:
                    max_bytes = config.max_transfer_bytes_on_message_in_memory
                    max_count = config.max_transfer_count_on_message_in_memory
                if result.buffer_total_size + size > max_bytes or len(messages) >= max_count:
                    scanned -= 1
                    break
            if tags_filter is not None and not tags_filter(tags_code):
                continue
            record = commitlog.get_message(physical_offset, size)
            if record is None:
                if not messages:
                    result.status = GetMessageStatus.MESSAGE_WAS_REMOVING
                next_file_start = self._roll_next_commitlog_file(physical_offset)
                continue
            if record_filter is not None and not record_filter(record):
                continue
            messages.append(record)
            result.physical_offsets.append(physical_offset)
            result.buffer_total_size += size
            result.status = GetMessageStatus.FOUND
            next_file_start = -1
        result.next_begin_offset += scanned
        result.suggest_pulling_from_slave = max_physical - last_physical > memory_budget

    def _next_offset(self, old: int, new: int) -> int:
        return new if self._correct_offsets else old

    def _roll_next_queue_file(self, offset: int) -> int:
        per_file = self.consume_queues.mapped_file_size // CQ_STORE_UNIT_SIZE
        return offset + per_file - offset % per_file

    def _roll_next_commitlog_file(self, offset: int) -> int:
        size = self.config.mapped_file_size_commit_log
        return offset + size - offset % size

    def _queue(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        return self.consume_queues.find(topic, queue_id)

    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int:
        """The next queue offset to be written (0 for an unknown queue)."""
        queue = self._queue(topic, queue_id)
        return queue.max_offset if queue is not None else 0

    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int:
        """The first readable queue offset (-1 for an unknown queue, as Apache)."""
        queue = self._queue(topic, queue_id)
        return queue.min_offset if queue is not None else -1

    def get_commitlog_offset_in_queue(self, topic: str, queue_id: int, queue_offset: int) -> int:
        """The physical offset of the message at ``queue_offset`` (0 when unknown)."""
        queue = self._queue(topic, queue_id)
        entry = queue.entry_at(queue_offset) if queue is not None else None
        return entry.physical_offset if entry is not None else 0

    def get_offset_in_queue_by_time(self, topic: str, queue_id: int, timestamp: int) -> int:
        """The queue offset of the message stored closest to ``timestamp`` (ms)."""
        queue = self._queue(topic, queue_id)
        if queue is None:
            return 0
        return queue.search_offset_by_time(
            timestamp, self.pickup_store_timestamp, max(self.commitlog.min_offset(), 0)
        )

    def get_message_store_timestamp(self, topic: str, queue_id: int, queue_offset: int) -> int:
        """Store time of the message at ``queue_offset`` (-1 when unknown)."""
        queue = self._queue(topic, queue_id)
        entry = queue.entry_at(queue_offset) if queue is not None else None
        if entry is None:
            return -1
        return self.pickup_store_timestamp(entry.physical_offset, entry.size)

    def get_earliest_message_time(self, topic: str, queue_id: int) -> int:
        """Store time of the first readable message of a queue (-1 when none)."""
        queue = self._queue(topic, queue_id)
        if queue is None:
            return -1
        return self.get_message_store_timestamp(topic, queue_id, queue.min_offset)

    def pickup_store_timestamp(self, physical_offset: int, size: int) -> int:
        """Store time of the record at ``physical_offset`` (-1 when not stored)."""
        record = self.commitlog.get_message(physical_offset, size)
        if record is None or size < MIN_RECORD_SIZE:
            return -1
        return store_timestamp_at(record, 0)

    def min_physical_offset(self) -> int:
        return self.commitlog.min_offset()

    def max_physical_offset(self) -> int:
        return self.commitlog.max_offset()

    def select_one_message_by_offset(self, physical_offset: int) -> memoryview | None:
        """The whole stored record at ``physical_offset`` (zero copy), or None."""
        return self.commitlog.record_at(physical_offset)

    def look_message_by_offset(self, physical_offset: int) -> MessageRecord | None:
        """The decoded record at ``physical_offset``, or None."""
        record = self.commitlog.record_at(physical_offset)
        if record is None:
            return None
        try:
            return decode_record(record)
        except RecordError:
            return None

    def look_message_by_msg_id(self, offset_msg_id: str) -> MessageRecord | None:
        """The record an offset message id points at (VIEW_MESSAGE_BY_ID), or None.

        Raises ValueError for a string that is not an offset message id.
        """
        return self.look_message_by_offset(decode_offset_msg_id(offset_msg_id).physical_offset)

    def query_message(
        self, topic: str, key: str, max_num: int, begin: int, end: int
    ) -> QueryMessageResult:
        """Messages indexed under ``key`` (a KEYS token or the unique key) stored within
        ``[begin, end]`` ms, oldest first; callers re-check the keys (hashes may collide)."""
        index = self.index
        if index is None:
            return QueryMessageResult([], [], 0, 0)
        offsets = sorted(set(index.query(topic, key, max_num, begin, end)))
        messages = []
        found = []
        for physical_offset in offsets:
            record = self.commitlog.record_at(physical_offset)
            if record is not None:
                messages.append(record)
                found.append(physical_offset)
        return QueryMessageResult(
            messages, found, index.last_update_timestamp, index.last_update_phy_offset
        )

    def delete_topics(self, topics: Sequence[str]) -> None:
        """Forget the consume queues (files included) and queue offsets of ``topics``."""
        doomed = set(topics)
        with self.commitlog.lock:
            for topic in doomed:
                self.consume_queues.delete_topic(topic)
            self.commitlog.topic_queue_table = {
                key: value
                for key, value in self.commitlog.topic_queue_table.items()
                if key[0] not in doomed
            }

    # -- expiry --------------------------------------------------------------------------

    def run_cleanup(self, now: float | None = None) -> CleanupResult:
        """Delete expired commitlog files, then consume queue and index files that only
        point below the new commitlog minimum (see :mod:`rmq.store.cleanup`)."""
        return self._cleanup.run(now)

    def execute_delete_files_manually(self) -> None:
        """``deleteExpiredCommitLog``: delete expired files on the next runs, whatever the hour."""
        self._cleanup.delete_manually()
