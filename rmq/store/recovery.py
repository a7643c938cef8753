"""Store recovery: from the files a previous run left to a consistent store.

Recovery is *normal* when the previous run removed its ``abort`` file (walk the last three
commitlog files, cut a torn tail) and *abnormal* otherwise (walk from the newest commitlog
file whose first record is older than the checkpoint says is safely flushed, re-dispatching
every valid record).  Either way the consume queues and the index are cut back to the valid
commitlog end, records the consume queues have not seen yet are dispatched, and the queue
offsets of the append path are rebuilt from the consume queues.  :func:`recover` returns what
was found and cut as a :class:`RecoveryResult`.

Before anything is cut, every consume queue gets the start check of
:mod:`rmq.store.queuecheck` (a few entries per file against the records they point at); a
queue that fails, or that could not be loaded, has the damaged file set aside
(:mod:`rmq.store.setaside`) and is rebuilt from the commitlog, as is one whose entry abnormal
recovery's re-dispatch finds holding another record.  When the index is behind (an index
file set aside, or a previous run that could not create one), its keys are caught up last
(:mod:`rmq.store.indexlag`).

The commitlog walk is :func:`~rmq.store.salvage.salvage_walk`: it keeps every intact record,
skipping a record whose body CRC is wrong and searching past damaged framing for the next
record that checks out; consume queue entries pointing into a skipped span become pre-blank
entries (pulls pass over them).  Re-dispatching is
:meth:`~rmq.store.dispatch.Dispatcher.redispatch`, so recovery repeats exactly what the
append path did.  A last commitlog file cut short on disk is grown back to its mapped size
first.  What was found, skipped and removed is logged and written to a report file
(:mod:`rmq.store.recoveryreport`).
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from rmq.common.config import MessageStoreConfig
from rmq.store.checkpoint import StoreCheckpoint
from rmq.store.commitlog import CommitLog
from rmq.store.consumequeue import ConsumeQueue, ConsumeQueueStore
from rmq.store.dispatch import Dispatcher
from rmq.store.mappedfile import TruncatedRange
from rmq.store.queuecheck import check_queues, rebuild_queues, set_queue_aside
from rmq.store.recoveryreport import report_recovery
from rmq.store.salvage import SkippedSpan, count_records_from, salvage_walk
from rmq.store.setaside import SetAside, SetAsideDir

log = logging.getLogger("rmq.store")


@dataclass(slots=True)
class RecoveryResult:
    """What :meth:`MessageStore.start` found: normal or abnormal, the valid commitlog range,
    how many records were re-dispatched, every byte range it cut and every damaged span it
    skipped, the records and the consume queue / index entries it removed (per
    ``topic/queueId``), the files it grew back, and the report file written (if any)."""

    abnormal: bool
    start_offset: int = 0
    end_offset: int = 0
    dispatched: int = 0
    truncated: list[TruncatedRange] = field(default_factory=list)
    skipped: list[SkippedSpan] = field(default_factory=list)
    dropped_records: int = 0
    consume_queue_removed: dict[str, int] = field(default_factory=dict)
    consume_queue_blanked: dict[str, int] = field(default_factory=dict)
    index_removed: int = 0
    restored: list[tuple[str, int]] = field(default_factory=list)
    set_aside: list[SetAside] = field(default_factory=list)
    rebuilt_queues: dict[str, int] = field(default_factory=dict)
    reindexed_from: int = -1
    report: Path | None = None


def recover(
    config: MessageStoreConfig,
    commitlog: CommitLog,
    dispatcher: Dispatcher,
    checkpoint: StoreCheckpoint,
    *,
    abnormal: bool,
    store_root: Path | None = None,
    set_aside: SetAsideDir | None = None,
    rebuild: Collection[ConsumeQueue] = (),
) -> RecoveryResult:
    """Recover a store whose files are loaded (see the module docstring); the report file
    goes under ``store_root`` (none when None).  ``set_aside`` holds the damaged files the
    loading already moved away, and takes those the consume queue check finds; ``rebuild``
    are the queues loading left empty, to be rebuilt from the commitlog."""
    consume_queues = dispatcher.consume_queues
    index = dispatcher.index
    set_aside = set_aside if set_aside is not None else SetAsideDir(consume_queues.layout.root)
    result = RecoveryResult(abnormal=abnormal)
    restored = commitlog.queue.restore_last_file_size()
    if restored is not None:
        result.restored.append(restored)
    min_timestamp = (
        checkpoint.min_timestamp_index()
        if index is not None and config.message_index_safe
        else checkpoint.min_timestamp()
    )
    start = commitlog.recovery_start(abnormal, min_timestamp)
    check_crc = config.check_crc_on_recover
    damaged = [*rebuild, *_check_queues(commitlog, consume_queues, start, abnormal, set_aside)]
    _rebuild(commitlog, dispatcher, damaged, check_crc, result)
    on_record = dispatcher.redispatch if abnormal else None
    dispatcher.redispatched = 0
    end, result.skipped = salvage_walk(commitlog, start, check_crc=check_crc, on_record=on_record)
    conflicting = [queue for queue in consume_queues if queue.conflict is not None]
    for queue in conflicting:
        path, queue_offset = queue.conflict or ("", 0)
        set_queue_aside(
            queue,
            Path(path),
            f"queue offset {queue_offset} holds another record's entry",
            set_aside,
        )
    _rebuild(commitlog, dispatcher, conflicting, check_crc, result)
    result.start_offset = start
    result.end_offset = end
    result.dropped_records = count_records_from(commitlog, end)
    result.truncated = commitlog.truncate(end)
    before = {(queue.topic, queue.queue_id): queue.max_offset for queue in consume_queues}
    consume_queues.truncate_dirty(end)
    for queue in consume_queues:
        removed = before.get((queue.topic, queue.queue_id), 0) - queue.max_offset
        if removed > 0:
            result.consume_queue_removed[f"{queue.topic}/{queue.queue_id}"] = removed
    if index is not None:
        result.index_removed = index.truncate_dirty(end)
    _rebuild_queue_offsets(commitlog, consume_queues)
    _catch_up(commitlog, dispatcher, end, check_crc)
    result.dispatched = dispatcher.redispatched
    if result.skipped:
        spans = [(span.offset, span.offset + span.length) for span in result.skipped]
        for queue in consume_queues:
            blanked = queue.blank_entries_in(spans)
            if blanked:
                result.consume_queue_blanked[f"{queue.topic}/{queue.queue_id}"] = blanked
    consume_queues.correct_min_offsets(max(commitlog.min_offset(), 0))
    lag = dispatcher.index_lag
    if lag is not None and lag.behind:
        result.reindexed_from = lag.behind_from
        lag.catch_up(commitlog)
    result.set_aside = list(set_aside.moved)
    result.report = report_recovery(result, store_root)
    return result


def _check_queues(
    commitlog: CommitLog,
    consume_queues: ConsumeQueueStore,
    start: int,
    abnormal: bool,
    set_aside: SetAsideDir,
) -> list[ConsumeQueue]:
    """Find each queue's end, run the start check (:mod:`rmq.store.queuecheck`) and cut
    the queue there; a queue that fails has its failing file set aside and is emptied.
    Returns the queues that failed."""
    ends = [(queue, queue.find_end()) for queue in consume_queues]
    failed = []
    for queue, mapped, problem in check_queues(ends, commitlog, start if abnormal else -1):
        set_queue_aside(queue, Path(mapped.path), problem, set_aside)
        failed.append(queue)
    for queue, end in ends:
        if queue not in failed:
            queue.cut_at(end)
    return failed


def _rebuild(
    commitlog: CommitLog,
    dispatcher: Dispatcher,
    queues: list[ConsumeQueue],
    check_crc: bool,
    result: RecoveryResult,
) -> None:
    if not queues:
        return
    rebuild_queues(commitlog, dispatcher, queues, check_crc)
    for queue in queues:
        name = f"{queue.topic}/{queue.queue_id}"
        result.rebuilt_queues[name] = queue.max_offset - queue.min_offset
        log.info("rebuilt consume queue %s: %d entries", name, result.rebuilt_queues[name])


def _catch_up(commitlog: CommitLog, dispatcher: Dispatcher, end: int, check_crc: bool) -> None:
    """Dispatch the records after the newest one the consume queues hold (passing over the
    damaged spans as the recovery walk did)."""
    consume_queues = dispatcher.consume_queues
    start = max(
        max((queue.max_physical_offset for queue in consume_queues), default=-1),
        commitlog.min_offset(),
        0,
    )
    if start < end:
        salvage_walk(commitlog, start, check_crc=check_crc, on_record=dispatcher.redispatch)
        _rebuild_queue_offsets(commitlog, consume_queues)


def _rebuild_queue_offsets(commitlog: CommitLog, consume_queues: ConsumeQueueStore) -> None:
    commitlog.topic_queue_table = {
        (queue.topic, queue.queue_id): queue.max_offset for queue in consume_queues
    }
