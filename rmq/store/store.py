"""The message store facade: what the broker (and tests, and benchmarks) call.

:class:`MessageStore` ties the pieces of one store directory together: the commitlog
(:mod:`rmq.store.commitlog`), the consume queues and the index (built on dispatch), the
checkpoint, the lock and abort files, the flush threads and expiry.

Lifecycle.  :meth:`MessageStore.start` takes the directory lock (a second process fails with
a clear error), maps every file (a damaged one that would stop it is set aside:
:mod:`rmq.store.setaside`), recovers (:mod:`rmq.store.recovery`; what was found and cut
is :attr:`MessageStore.recovery`), creates the ``abort`` file and starts the flush threads.
:meth:`MessageStore.shutdown` flushes everything, removes the ``abort`` file and releases the
lock.

Writes.  :meth:`MessageStore.put_message` and :meth:`MessageStore.put_messages` append to
the commitlog, which dispatches each record inline (:mod:`rmq.store.dispatch`: its consume
queue entry and index keys, then :attr:`MessageStore.arrival_listener`).  A full disk (a
commitlog or consume queue file that cannot be created, or the used space over the limit)
makes puts SERVICE_NOT_AVAILABLE until space is back; a dispatch that failed is then resumed
(:mod:`rmq.store.diskguard`).  An index file that cannot be created refuses nothing: the keys
are indexed later (:mod:`rmq.store.indexlag`).
A slave appends what its master sent with :meth:`MessageStore.append_to_commitlog`.

Reads.  :meth:`MessageStore.get_messages` is the pull path (:mod:`rmq.store.getmessage`).
Lookups by queue offset, physical offset, offset message id, key and time, the offsets and
store times of queues, and the consume queues themselves
(:meth:`MessageStore.get_consume_queue`) are methods of its base :class:`StoreLookups`
(:mod:`rmq.store.lookups`), named as Apache's ``DefaultMessageStore`` names them; callers
outside the store use these, not its parts.

DLedger mode.  With ``enableDLegerCommitLog`` the broker calls :meth:`MessageStore.use_dledger_data`
before :meth:`MessageStore.start` with the data files of its DLedger log: reads (pulls, lookups
by offset, msgId and key) then come from those files, where each record sits 48 bytes after
its entry's position; the classic commitlog is neither loaded, recovered, flushed nor cleaned
up; puts through this store are refused (the broker sends through its DLedger node) and
committed records reach the consume queues and index through :meth:`MessageStore.dispatch_record`.

Threads.  Writes (puts, dispatch, recovery) happen on one thread, the broker's event loop,
under the commitlog lock.  The flush threads only ``msync`` and update the checkpoint.  SYNC
flush waiters registered with :meth:`MessageStore.request_flush` are called back on the flush
thread.  Reads are safe from any thread.  :meth:`MessageStore.run_cleanup` may run on a timer
thread.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Collection, Sequence
from pathlib import Path

from rmq.common.config import BrokerRole, FlushDiskType, MessageStoreConfig
from rmq.common.delay import parse_delay_levels
from rmq.common.message import DispatchInfo
from rmq.common.msgid import pack_host
from rmq.common.naming import RMQ_SYS_SCHEDULE_TOPIC, RMQ_SYS_TRANS_OP_HALF_TOPIC, is_lmq
from rmq.common.timeutil import now_millis
from rmq.store.checkpoint import StoreCheckpoint
from rmq.store.cleanup import (
    CleanupResult,
    CleanupService,
    DiskUsage,
    GroupOffsets,
    disk_used_ratio,
)
from rmq.store.commitlog import CommitLog
from rmq.store.consumequeue import ConsumeQueue, ConsumeQueueStore
from rmq.store.diskguard import PutGate
from rmq.store.dispatch import ArrivalListener, Dispatcher
from rmq.store.dledger import upgrade
from rmq.store.errors import StoreError
from rmq.store.flush import CommitLogFlushService, Handoff, LogicsFlushService
from rmq.store.getmessage import (
    GetMessageResult,
    GetMessageStatus,
    QueueReader,
    RecordFilter,
    TagsFilter,
)
from rmq.store.indexlag import MARKER_FILE, IndexLag
from rmq.store.indexservice import IndexService
from rmq.store.layout import StoreLayout
from rmq.store.lockfile import (
    StoreLock,
    abort_file_exists,
    create_abort_file,
    delete_abort_file,
)
from rmq.store.lookups import QueryMessageResult, StoreLookups
from rmq.store.mappedfile import Allocate, MappedFileQueue
from rmq.store.pageahead import PageAhead
from rmq.store.putmessage import InnerMessage, PutMessageResult, PutMessageStatus
from rmq.store.queuecheck import on_load_failure
from rmq.store.recovery import RecoveryResult, recover
from rmq.store.recoveryreport import REPORT_DIR
from rmq.store.setaside import SetAsideDir, set_aside_empty_tail

__all__ = [
    "ArrivalListener",
    "FlushCallback",
    "GetMessageResult",
    "GetMessageStatus",
    "MessageStore",
    "QueryMessageResult",
    "RecordFilter",
    "RecoveryResult",
    "TagsFilter",
]

log = logging.getLogger("rmq.store")

_NEVER_UNUSED = frozenset({RMQ_SYS_SCHEDULE_TOPIC, RMQ_SYS_TRANS_OP_HALF_TOPIC})
"""Topics ``cleanUnusedTopic`` keeps even when no topic config names them."""

FlushCallback = Callable[[PutMessageStatus], None]
"""Gets PUT_OK once the record is on disk, FLUSH_DISK_TIMEOUT when that took too long."""


class MessageStore(StoreLookups):
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
        self.consume_queues = ConsumeQueueStore(self.layout, config.mapped_file_size_consume_queue)
        self.index: IndexService | None = None
        if config.message_index_enable:
            self.index = IndexService(
                self.layout.index, config.max_hash_slot_num, config.max_index_num
            )
        delay_levels = parse_delay_levels(config.message_delay_level)
        self.index_lag: IndexLag | None = None
        if self.index is not None:
            self.index_lag = IndexLag(self.index, self.layout.root / REPORT_DIR / MARKER_FILE)
        self._dispatcher = Dispatcher(
            self.consume_queues, self.index, delay_levels, index_lag=self.index_lag
        )
        self.commitlog = CommitLog(
            self.layout.commitlog,
            config.mapped_file_size_commit_log,
            store_host=self.store_host,
            max_message_size=config.max_message_size,
            dispatch=self._dispatcher.dispatch,
            dispatch_batch=self._dispatcher.dispatch_batch,
            delay_levels=delay_levels,
            allocate=allocate,
            clock=clock,
        )
        self.recovery = RecoveryResult(abnormal=False)
        self._lock = StoreLock(self.layout.root)
        self._checkpoint: StoreCheckpoint | None = None
        self._commitlog_flush: CommitLogFlushService | None = None
        self._flush_handoff: Handoff | None = None
        self._logics_flush: LogicsFlushService | None = None
        self._page_ahead: PageAhead | None = None
        self._cleanup = CleanupService(self, disk_usage)
        self.group_offsets: GroupOffsets | None = None
        """The consumer groups' offsets (set by the broker): cleanup reports what it deleted
        unconsumed."""
        self.put_gate = PutGate(
            self.commitlog,
            self._dispatcher,
            (self.layout.commitlog, self.layout.consume_queue_root),
            disk_usage,
        )
        self._reader = QueueReader(config, self.commitlog)
        self._replica_dispatched = 0
        self.dledger_dispatched_end = -1
        """DLedger mode: the offset past the newest record the consume queues held at start
        (-1: none), where dispatch resumes."""
        self.dledger = False
        """Whether the commitlog's files are a DLedger log's data files (see the module
        docstring)."""
        self._dledger_data: MappedFileQueue | None = None
        self._classic_below: MappedFileQueue | None = None
        self.dledger_divided = 0
        """DLedger mode: where the DLedger log starts (``dividedCommitlogOffset``; 0 without
        a classic commitlog below it)."""
        self.running = False
        self.disk_full = False

    @property
    def arrival_listener(self) -> ArrivalListener | None:
        return self._dispatcher.arrival_listener

    @arrival_listener.setter
    def arrival_listener(self, listener: ArrivalListener | None) -> None:
        self._dispatcher.arrival_listener = listener

    def use_dledger_data(self, data: MappedFileQueue) -> None:
        """Read records from a DLedger log's data files (``data``, loaded and written by the
        log itself) instead of the commitlog, or below them from a classic commitlog the store
        had (:mod:`rmq.store.dledger.upgrade`); call before :meth:`start`."""
        self._dledger_data = data
        self.dledger = True

    def dispatch_record(self, info: DispatchInfo) -> None:
        """Dispatch one committed DLedger record (consume queue entry, index keys, arrival)."""
        with self.commitlog.lock:
            self._dispatcher.redispatch(info)

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
            set_aside = SetAsideDir(self.layout.root)
            if self.dledger:
                self._start_dledger(abnormal, set_aside)
                return self.recovery
            self._recover_classic(abnormal, set_aside)
            create_abort_file(self.layout.abort)
        except BaseException:
            self._close_files()
            self._lock.release()
            raise
        self._start_flush_services(self._checkpoint)
        self.running = True
        return self.recovery

    def _recover_classic(self, abnormal: bool, set_aside: SetAsideDir) -> None:
        """Load and recover the commitlog, consume queues and index."""
        assert self._checkpoint is not None
        try:
            self.commitlog.queue.load()
        except StoreError:
            if not set_aside_empty_tail(self.layout.commitlog, set_aside):
                raise
            self.commitlog.queue.load()
        rebuild: list[ConsumeQueue] = []
        self.consume_queues.load(
            lambda queue, error: on_load_failure(queue, error, set_aside, rebuild)
        )
        if self.index is not None and self.index_lag is not None:
            reindex_from = self.index.load(
                lambda path, reason: self._set_index_file_aside(path, reason, set_aside)
            )
            self.index_lag.load()
            if reindex_from >= 0:
                self.index_lag.fall_behind(reindex_from, None)
        self.recovery = recover(
            self.config,
            self.commitlog,
            self._dispatcher,
            self._checkpoint,
            abnormal=abnormal,
            store_root=self.layout.root,
            set_aside=set_aside,
            rebuild=rebuild,
        )
        self._replica_dispatched = self.recovery.end_offset

    def _start_dledger(self, abnormal: bool, set_aside: SetAsideDir) -> None:
        """The DLedger log recovers its own files; consume queues are loaded and cut after
        their last valid entry, and dispatch resumes from their end.  A classic commitlog
        in the store stays readable below the DLedger log (recovered and closed the first
        time, :mod:`rmq.store.dledger.upgrade`)."""
        assert self._checkpoint is not None and self._dledger_data is not None
        data = self._dledger_data
        classic = self.commitlog.queue
        self.recovery = RecoveryResult(abnormal=abnormal)
        if upgrade.first_file_offset(classic.store_path) is None:
            self.commitlog.queue = data
            self._load_dledger_queues(set_aside)
        else:
            self._start_below_classic(abnormal, set_aside, classic, data)
        create_abort_file(self.layout.abort)
        self._logics_flush = self._logics_flush_service()
        self._logics_flush.start()
        self.running = True

    def _start_below_classic(
        self,
        abnormal: bool,
        set_aside: SetAsideDir,
        classic: MappedFileQueue,
        data: MappedFileQueue,
    ) -> None:
        """The DLedger log on top of the store's classic commitlog: recovered and closed on
        the first start, loaded on the later ones; reads go through both."""
        self._classic_below = classic  # closed with the store's files from here on
        divided = upgrade.first_file_offset(data.store_path)
        if divided is None:  # the first start on a classic store
            self._recover_classic(abnormal, set_aside)
            divided = upgrade.close_classic_log(classic)
            upgrade.start_dledger_log(data.store_path, data.mapped_file_size, divided)
            log.info("classic commitlog closed at %d: the DLedger log starts there", divided)
            self.dledger_dispatched_end = divided
        else:
            classic.load()
            self._load_dledger_queues(set_aside)
        self.commitlog.queue = upgrade.JoinedFileQueue(classic, data, divided)
        self.dledger_divided = divided

    def _load_dledger_queues(self, set_aside: SetAsideDir) -> None:
        """Load the consume queues (cut after their last valid entry) and the index."""
        self.consume_queues.load(lambda queue, error: on_load_failure(queue, error, set_aside, []))
        self.dledger_dispatched_end = self.consume_queues.recover()
        if self.index is not None and self.index_lag is not None:
            self.index.load(
                lambda path, reason: self._set_index_file_aside(path, reason, set_aside)
            )
            self.index_lag.load()

    @staticmethod
    def _set_index_file_aside(path: Path, reason: str, set_aside: SetAsideDir) -> None:
        moved = set_aside.move(path, reason)
        log.warning(
            "index file %s is damaged (%s): %s; its keys are indexed again from the commitlog",
            path,
            reason,
            f"moved to {moved.moved_to}" if moved.moved_to else "deleted",
        )

    def shutdown(self) -> None:
        """Flush everything, remove the ``abort`` file and release the lock."""
        if not self.running:
            return
        self.running = False
        assert self._logics_flush is not None
        if self._page_ahead is not None:
            self._page_ahead.shutdown()
        if self._commitlog_flush is not None:
            self._commitlog_flush.shutdown()
        self._logics_flush.shutdown()
        self._close_files()
        delete_abort_file(self.layout.abort)
        self._lock.release()

    def _close_files(self) -> None:
        if not self.dledger:  # the DLedger log closes its own files
            self.commitlog.queue.close()
        elif self._classic_below is not None:
            self._classic_below.close()
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
        self._logics_flush = self._logics_flush_service()
        self._commitlog_flush.set_handoff(self._flush_handoff)
        self._commitlog_flush.start()
        self._logics_flush.start()
        self._page_ahead = PageAhead(self.commitlog.queue)
        self._page_ahead.start()

    def _logics_flush_service(self) -> LogicsFlushService:
        config = self.config
        return LogicsFlushService(
            self.flush_logics,
            interval_ms=config.flush_interval_consume_queue,
            least_pages=config.flush_consume_queue_least_pages,
            thorough_interval_ms=config.flush_consume_queue_thorough_interval,
        )

    # -- writing -------------------------------------------------------------------------

    @property
    def writable(self) -> bool:
        """Whether puts are taken: the store runs, its disk is not full and it is no slave's
        (a SLAVE store only receives its master's bytes: every put is SERVICE_NOT_AVAILABLE,
        as Apache's ``checkStoreStatus`` answers)."""
        return (
            self.running
            and not self.disk_full
            and not self.dledger
            and self.config.broker_role is not BrokerRole.SLAVE
        )

    def put_message(self, msg: InnerMessage) -> PutMessageResult:
        """Append one message (see :class:`~rmq.store.putmessage.InnerMessage`)."""
        if not self.writable or not self.put_gate.admit():
            return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE)
        result = self.commitlog.put_message(msg)
        self.put_gate.settle(result)
        return result

    def put_messages(self, batch: InnerMessage) -> PutMessageResult:
        """Append a SEND_BATCH_MESSAGE batch atomically (``batch.body`` is the batch body)."""
        if not self.writable or not self.put_gate.admit():
            return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE)
        result = self.commitlog.put_messages(batch)
        self.put_gate.settle(result)
        return result

    def set_flush_handoff(self, handoff: Handoff | None) -> None:
        """SYNC_FLUSH: deliver the callbacks each group commit settles through ``handoff``
        in one call (see :meth:`CommitLogFlushService.set_handoff`); kept across restarts of
        the flush service."""
        self._flush_handoff = handoff
        if self._commitlog_flush is not None:
            self._commitlog_flush.set_handoff(handoff)

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
            self._replica_dispatched = self._dispatcher.dispatch_from(
                self.commitlog, max(self._replica_dispatched, self.commitlog.min_offset())
            )
        self.put_gate.catch_up()
        return True

    def flush_logics(self, least_pages: int) -> None:
        """Flush consume queues (and on a thorough flush the index), then the checkpoint;
        first, when the index fell behind and it is time, try to catch it up
        (:mod:`rmq.store.indexlag`)."""
        lag = self.index_lag
        if lag is not None and lag.due():
            lag.catch_up(self.commitlog)
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

    def get_flushed_where(self) -> int:
        """The commitlog offset up to which everything is on disk."""
        return self.commitlog.queue.flushed_where

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
        """Read up to ``max_msg_nums`` messages of a queue from queue ``offset`` (a pull; see
        :meth:`rmq.store.getmessage.QueueReader.get_messages`).  A queue never written is
        created empty (no files) as Apache's ``findConsumeQueue`` does, so its pull answers
        NO_MESSAGE_IN_QUEUE."""
        return self._reader.get_messages(
            self.consume_queues.find_or_create(topic, queue_id),
            offset,
            max_msg_nums,
            tags_filter,
            record_filter,
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

    def clean_unused_topics(self, topics_in_use: Collection[str]) -> list[str]:
        """Apache's ``cleanUnusedTopic``: delete the consume queues of every topic not in
        ``topics_in_use``, except ``SCHEDULE_TOPIC_XXXX``, ``RMQ_SYS_TRANS_OP_HALF_TOPIC`` and
        LMQ topics; returns the topics deleted."""
        unused = [
            topic
            for topic in self.topics()
            if topic not in topics_in_use and topic not in _NEVER_UNUSED and not is_lmq(topic)
        ]
        if unused:
            self.delete_topics(unused)
        return unused

    def clean_expired_consume_queues(self) -> list[tuple[str, int]]:
        """Apache's ``cleanExpiredConsumerQueue``: delete every consume queue (but the schedule
        topic's) whose newest entry ends below the commitlog's first offset, forgetting its
        queue offset; returns the (topic, queue id) pairs deleted."""
        with self.commitlog.lock:
            min_offset = self.commitlog.min_offset()
            doomed = []
            for queue in self.consume_queues:
                end = queue.last_physical_end()
                if queue.topic != RMQ_SYS_SCHEDULE_TOPIC and end != -1 and end < min_offset:
                    doomed.append((queue.topic, queue.queue_id))
            for topic, queue_id in doomed:
                self.consume_queues.delete_queue(topic, queue_id)
                self.commitlog.topic_queue_table.pop((topic, queue_id), None)
        return doomed

    # -- expiry --------------------------------------------------------------------------

    def run_cleanup(self, now: float | None = None) -> CleanupResult:
        """Delete expired commitlog files, then consume queue and index files that only
        point below the new commitlog minimum (see :mod:`rmq.store.cleanup`).  Nothing in
        DLedger mode, whose log keeps every file."""
        if self.dledger:
            return CleanupResult()
        return self._cleanup.run(now)

    def execute_delete_files_manually(self) -> None:
        """``deleteExpiredCommitLog``: delete expired files on the next runs, whatever the hour."""
        self._cleanup.delete_manually()
