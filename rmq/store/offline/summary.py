"""What is in a store and in what state, computed offline over a
:class:`~rmq.store.offline.reader.StoreReader`.

:func:`overview` answers it as a whole: file counts and sizes, the commitlog's offset range,
topics and queues with message counts (from the consume queues' offset ranges, found by
binary search, not by reading messages), the time range (first and newest record, the newest
found by walking only the part of the last file after the newest consume queue entry),
whether a broker holds the ``lock`` file now, else whether the last shutdown was clean (no
``abort`` file), and the checkpoint.  Also here: every queue's range
(:func:`queue_summaries`), where a queue offset's entry sits and the holes between a
queue's files, and the checkpoint with where abnormal recovery would start looking.
Results are plain dataclasses; nothing here writes, locks or repairs.
"""

from __future__ import annotations

import enum
import itertools
from dataclasses import dataclass, field
from pathlib import Path

from rmq.store.checkpoint import RECOVERY_MARGIN_MS
from rmq.store.consumequeue import CQ_STORE_UNIT_SIZE
from rmq.store.offline.files import file_size
from rmq.store.offline.queues import QueueRange
from rmq.store.offline.reader import StoreReader


class ShutdownState(enum.StrEnum):
    """What the ``lock`` and ``abort`` files say about the broker of a store."""

    RUNNING = "running"
    CLEAN = "clean"
    UNCLEAN = "unclean"


@dataclass(frozen=True, slots=True)
class QueueSummary:
    """A consume queue's offset range and files."""

    topic: str
    queue_id: int
    min_offset: int
    max_offset: int
    messages: int
    files: int
    bytes: int


@dataclass(frozen=True, slots=True)
class TopicSummary:
    topic: str
    queues: int
    messages: int


@dataclass(slots=True)
class Overview:
    """The answer of :func:`overview`; timestamps in ms, None when unknown."""

    root: str
    commitlog_dir: str
    commitlog_files: int
    commitlog_bytes: int
    min_physical_offset: int
    max_physical_offset: int
    first_store_timestamp: int | None
    last_store_timestamp: int | None
    topics: int
    queues: int
    messages: int
    consume_queue_files: int
    consume_queue_bytes: int
    index_files: int
    index_bytes: int
    index_entries: int
    lock_held: bool
    lock_holder_pid: int | None
    abort_file: bool
    shutdown: ShutdownState
    physic_msg_timestamp: int | None
    logics_msg_timestamp: int | None
    index_msg_timestamp: int | None
    topic_summaries: list[TopicSummary] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class CheckpointInfo:
    """The checkpoint file and where abnormal recovery would start looking."""

    path: str
    physic_msg_timestamp: int
    logics_msg_timestamp: int
    index_msg_timestamp: int
    recovery_timestamp: int
    recovery_with_index_timestamp: int


def queue_summaries(reader: StoreReader) -> list[QueueSummary]:
    """Every consume queue with its offset range and files, sorted by topic and queue id."""
    summaries = []
    for topic, queue_id in reader.consume_queues():
        summaries.append(
            _queue_summary(reader, topic, queue_id, reader.queue_range(topic, queue_id))
        )
    return summaries


def _queue_summary(
    reader: StoreReader, topic: str, queue_id: int, queue_range: QueueRange
) -> QueueSummary:
    files = reader.consume_queue_files(topic, queue_id)
    return QueueSummary(
        topic,
        queue_id,
        queue_range.min_offset,
        queue_range.max_offset,
        queue_range.max_offset - queue_range.min_offset,
        len(files),
        sum(f.size for f in files),
    )


def overview(reader: StoreReader) -> Overview:
    """See the module docstring."""
    layout = reader.layout
    commitlog = reader.commitlog_files()
    newest_entry: int | None = None
    summaries = []
    for topic, queue_id in reader.consume_queues():
        queue_range = reader.queue_range(topic, queue_id)
        last = queue_range.last_entry
        if last is not None and queue_range.max_offset > queue_range.min_offset:
            newest_entry = max(newest_entry or 0, last.physical_offset)
        summaries.append(_queue_summary(reader, topic, queue_id, queue_range))
    first = next(reader.scan(), None)
    newest, end = reader.data_end(newest_entry)
    index_files = reader.index_files()
    lock = reader.lock_status()
    abort = reader.abort_file_present()
    checkpoint = reader.checkpoint()
    by_topic: dict[str, list[QueueSummary]] = {}
    for summary in summaries:
        by_topic.setdefault(summary.topic, []).append(summary)
    return Overview(
        root=str(layout.root),
        commitlog_dir=str(layout.commitlog),
        commitlog_files=len(commitlog),
        commitlog_bytes=sum(f.size for f in commitlog),
        min_physical_offset=reader.min_physical_offset,
        max_physical_offset=end,
        first_store_timestamp=None if first is None else first.store_timestamp,
        last_store_timestamp=None if newest is None else newest.store_timestamp,
        topics=len(by_topic),
        queues=len(summaries),
        messages=sum(s.messages for s in summaries),
        consume_queue_files=sum(s.files for s in summaries),
        consume_queue_bytes=sum(s.bytes for s in summaries),
        index_files=len(index_files),
        index_bytes=sum(file_size(info.path) for info in index_files),
        index_entries=sum(max(info.index_count - 1, 0) for info in index_files),
        lock_held=lock is not None and lock.locked,
        lock_holder_pid=None if lock is None else lock.pid,
        abort_file=abort,
        shutdown=_shutdown_state(lock is not None and lock.locked, abort),
        physic_msg_timestamp=None if checkpoint is None else checkpoint.physic_msg_timestamp,
        logics_msg_timestamp=None if checkpoint is None else checkpoint.logics_msg_timestamp,
        index_msg_timestamp=None if checkpoint is None else checkpoint.index_msg_timestamp,
        topic_summaries=[
            TopicSummary(topic, len(queues), sum(q.messages for q in queues))
            for topic, queues in sorted(by_topic.items())
        ],
    )


def _shutdown_state(locked: bool, abort: bool) -> ShutdownState:
    if locked:
        return ShutdownState.RUNNING
    return ShutdownState.UNCLEAN if abort else ShutdownState.CLEAN


def checkpoint_info(reader: StoreReader) -> CheckpointInfo | None:
    """The decoded checkpoint; None when the file is missing or too short."""
    checkpoint = reader.checkpoint()
    if checkpoint is None:
        return None
    physic, logics, index = checkpoint
    recovery = max(min(physic, logics) - RECOVERY_MARGIN_MS, 0)
    return CheckpointInfo(
        str(reader.layout.checkpoint),
        physic,
        logics,
        index,
        recovery,
        min(recovery, index),
    )


def queue_entry_location(
    reader: StoreReader, topic: str, queue_id: int, queue_offset: int
) -> tuple[Path, int] | None:
    """The consume queue file holding ``queue_offset`` and the entry's byte offset in it."""
    position = queue_offset * CQ_STORE_UNIT_SIZE
    for store_file in reader.consume_queue_files(topic, queue_id):
        if store_file.start <= position < store_file.start + store_file.size:
            return store_file.path, position - store_file.start
    return None


@dataclass(frozen=True, slots=True)
class QueueGap:
    """Queue offsets ``[first, end)`` that no consume queue file holds (a file is missing)."""

    first: int
    end: int
    next_file: Path


def queue_gaps(reader: StoreReader, topic: str, queue_id: int) -> list[QueueGap]:
    """The holes between consecutive files of a consume queue."""
    files = reader.consume_queue_files(topic, queue_id)
    gaps = []
    for before, after in itertools.pairwise(files):
        end = before.start + before.size
        if end < after.start:
            gaps.append(
                QueueGap(end // CQ_STORE_UNIT_SIZE, after.start // CQ_STORE_UNIT_SIZE, after.path)
            )
    return gaps
