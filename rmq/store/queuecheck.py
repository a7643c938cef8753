"""The start check of the consume queues, and rebuilding a queue from the commitlog.

Recovery (:mod:`rmq.store.recovery`) takes a consume queue's older files as whole and scans
only the last three up to the first invalid entry, so a file overwritten with other bytes
would go unnoticed until a pull or ``rmq inspect verify`` met it.  :func:`check_queues` looks,
for each file of a queue, at a handful of entries, before anything is cut:

* the first entry and the last one written (the queue's last entry, for the file where the
  queue ends) must be pre-blank, point below the commitlog (expired), or point at a record of
  that topic and queue id with that queue offset and size;
* after the queue's end (the recovery point of the queue) there must be nothing: the entry
  after the one where the queue ends, and the last entry of that file, must be zeros, and so
  must the first entry of every file after it;
* the entries of records that abnormal recovery dispatches again (those at or after the
  offset it walks from) are left to that dispatch, which compares each with its record and
  notes the first that differs (:attr:`~rmq.store.consumequeue.ConsumeQueue.conflict`).

That is two to four entries and as many record headers per file, read straight from the
mappings (docs/benchmarks.md has the start times before and after).  A queue that
fails, or whose files could not even be loaded (:func:`damaged_file`: empty, cut short, not
following on), has the failing file moved aside (:mod:`rmq.store.setaside`), its other files
deleted, and is rebuilt from the commitlog by :func:`rebuild_queues`, one walk for all of them
(records of other queues are passed over without being decoded).

Apache's broker has no such check (and refuses to start on a consume queue file of the wrong
size); docs/spec-notes.md.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Final

from rmq.common.message import DispatchInfo
from rmq.common.recordwalk import Frame, RecordError, frame_at, record_place
from rmq.common.sysflag import (
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    TRANSACTION_TYPE_MASK,
)
from rmq.store.commitlog import CommitLog
from rmq.store.consumequeue import (
    CQ_STORE_UNIT_SIZE,
    ENTRY,
    PRE_BLANK_SIZE,
    ConsumeQueue,
    is_valid_entry,
)
from rmq.store.dispatch import Dispatcher
from rmq.store.errors import StoreError
from rmq.store.layout import list_offset_files
from rmq.store.mappedfile import MappedFile
from rmq.store.salvage import salvage_walk
from rmq.store.setaside import SetAsideDir

log = logging.getLogger("rmq.store")

_ZERO_ENTRY: Final = bytes(CQ_STORE_UNIT_SIZE)
_NOT_QUEUED: Final = (TRANSACTION_PREPARED_TYPE, TRANSACTION_ROLLBACK_TYPE)


def set_queue_aside(queue: ConsumeQueue, path: Path, problem: str, set_aside: SetAsideDir) -> None:
    """Move the damaged file of ``queue`` aside (one WARN naming it) and delete the rest,
    leaving the queue empty for :func:`rebuild_queues`."""
    queue.close()
    moved = set_aside.move(path, problem)
    queue.destroy()
    queue.conflict = None
    log.warning(
        "consume queue file %s is damaged (%s): %s; rebuilding %s/%d from the commitlog",
        path,
        problem,
        f"moved to {moved.moved_to}" if moved.moved_to else "deleted",
        queue.topic,
        queue.queue_id,
    )


def on_load_failure(
    queue: ConsumeQueue, error: StoreError, set_aside: SetAsideDir, rebuild: list[ConsumeQueue]
) -> None:
    """``ConsumeQueueStore.load``'s ``on_damage``: set the file that stopped the load aside
    and note the queue for rebuilding; re-raises ``error`` when no file is to blame."""
    path = damaged_file(queue)
    if path is None:
        raise error
    set_queue_aside(queue, path, str(error).removeprefix(f"{path}: "), set_aside)
    rebuild.append(queue)


def damaged_file(queue: ConsumeQueue) -> Path | None:
    """After the queue failed to load: the first file it could not take (empty, not a
    whole number of entries, not following on from the file before it, or the last one and
    smaller than a new file), None when none is."""
    expected = -1
    listed = list_offset_files(queue.directory)
    for number, (start, path) in enumerate(listed):
        try:
            size = path.stat().st_size
        except OSError:
            return path
        if (
            size == 0
            or size % CQ_STORE_UNIT_SIZE
            or (expected >= 0 and start != expected)
            or (number + 1 == len(listed) and size < queue.mapped_file_size)
        ):
            return path
        expected = start + size
    return None


class _Checker:
    """The entry checks against the commitlog as loaded (one per start, for every queue)."""

    def __init__(self, commitlog: CommitLog, redispatch_from: int) -> None:
        self.commitlog = commitlog
        files = commitlog.queue.files
        self.files = [(mapped.buffer, mapped.file_size) for mapped in files]
        self.starts = [mapped.file_from_offset for mapped in files]
        self.min_offset = self.starts[0] if files else 0
        self.tail = files[-1].file_tail_offset if files else 0
        self.redispatch_from = redispatch_from

    def entry(
        self, queue: ConsumeQueue, topic: bytes, mapped: MappedFile, pos: int, queue_end: bool
    ) -> str | None:
        """What is wrong with the entry at ``pos`` of ``mapped`` (None: nothing)."""
        phy, size, _ = ENTRY.unpack_from(mapped.buffer, pos)
        if size == PRE_BLANK_SIZE:
            return None
        queue_offset = (mapped.file_from_offset + pos) // CQ_STORE_UNIT_SIZE
        if phy >= self.min_offset and size > 0 and phy + size <= self.tail:
            if 0 <= self.redispatch_from <= phy:
                return None
            number = bisect.bisect_right(self.starts, phy) - 1
            buf, file_size = self.files[number]
            place = record_place(buf, phy - self.starts[number], file_size)
            if place == (size, queue.queue_id, queue_offset, phy, topic):
                return None
        elif phy < self.min_offset and is_valid_entry(phy, size):
            return None  # expired
        return self._explain(queue, queue_offset, phy, size, queue_end)

    def _explain(
        self, queue: ConsumeQueue, queue_offset: int, phy: int, size: int, queue_end: bool
    ) -> str | None:
        """Why the entry failed the fast check; None when it passes after all: the queue's
        last entry (``queue_end``) may point past the commitlog, at a tail recovery cuts."""
        if not is_valid_entry(phy, size):
            return f"queue offset {queue_offset} holds no entry (offset {phy}, size {size})"
        if phy + size > self.tail:
            if queue_end:
                return None
            return f"queue offset {queue_offset} points past the commitlog ({phy})"
        where = f"queue offset {queue_offset} points at commitlog offset {phy}"
        record = self.commitlog.get_message(phy, size)
        if record is None:
            return f"{where}, which is not stored"
        try:
            head, _, topic_pos, topic_len, _, end = frame_at(record, 0, size)
        except RecordError as exc:
            return f"{where}: {exc}"
        if end != size or head[6] != phy:
            return f"{where}, a record of {end} bytes, not {size}"
        topic = bytes(record[topic_pos : topic_pos + topic_len]).decode("utf-8", "replace")
        if (topic, head[3]) != (queue.topic, queue.queue_id):
            return f"{where}, a record of {topic} queue {head[3]}"
        if head[5] != queue_offset:
            return f"{where}, a record with queue offset {head[5]}"
        return f"{where}, a record that does not frame"

    @staticmethod
    def zeros(mapped: MappedFile, pos: int) -> str | None:
        if mapped.buffer[pos : pos + CQ_STORE_UNIT_SIZE] == _ZERO_ENTRY:
            return None
        queue_offset = (mapped.file_from_offset + pos) // CQ_STORE_UNIT_SIZE
        return f"data at queue offset {queue_offset}, after the end of the queue"


def check_queues(
    queues: Iterable[tuple[ConsumeQueue, int]], commitlog: CommitLog, redispatch_from: int = -1
) -> Iterator[tuple[ConsumeQueue, MappedFile, str]]:
    """For each ``(queue, end)`` (``end``: where its entries end, from
    :meth:`ConsumeQueue.find_end`) whose files fail the start check (see the module
    docstring): the queue, its first failing file and why.  Entries pointing at or past
    ``redispatch_from`` (when not negative) are left to abnormal recovery's dispatch."""
    checker = _Checker(commitlog, redispatch_from)
    unit = CQ_STORE_UNIT_SIZE
    for queue, end in queues:
        topic = queue.topic.encode()
        for mapped in queue.files:
            base = mapped.file_from_offset
            if base >= end:
                problem = checker.zeros(mapped, 0)
            else:
                written = min(end - base, mapped.file_size)
                problem = checker.entry(queue, topic, mapped, 0, base + unit == end)
                if problem is None and written > unit:
                    last = written - unit
                    problem = checker.entry(queue, topic, mapped, last, base + written == end)
                for pos in (written + unit, mapped.file_size - unit):
                    if problem is None and written + unit <= pos <= mapped.file_size - unit:
                        problem = checker.zeros(mapped, pos)
            if problem is not None:
                yield queue, mapped, problem
                break


def rebuild_queues(
    commitlog: CommitLog, dispatcher: Dispatcher, queues: Iterable[ConsumeQueue], check_crc: bool
) -> int:
    """Write the entries of ``queues`` (emptied by the caller) again from every record of the
    commitlog, in one walk; returns how many entries were written."""
    wanted = {(queue.topic.encode(), queue.queue_id) for queue in queues}
    if not wanted:
        return 0
    consume_queues = dispatcher.consume_queues
    written = 0

    def select(view: memoryview, frame: Frame) -> bool:
        _, _, prefix, _, _, body_end, topic_end = frame
        return (bytes(view[body_end + 1 : topic_end]), prefix[3]) in wanted

    def on_record(info: DispatchInfo) -> None:
        nonlocal written
        if info.sys_flag & TRANSACTION_TYPE_MASK in _NOT_QUEUED:
            return
        consume_queues.put(
            info.topic,
            info.queue_id,
            info.queue_offset,
            info.physical_offset,
            info.total_size,
            dispatcher.entry_tags_code(info),
            info.store_timestamp,
        )
        written += 1

    start = max(commitlog.min_offset(), 0)
    salvage_walk(commitlog, start, check_crc=check_crc, on_record=on_record, select=select)
    return written
