"""Consume queue files read offline: entries found by binary search, queues mapped for
validation, and the entries of a queue in order.

Entries are written one after another, so the end of a file's entries, its pre-blanks (they
come first) and its first entry still in the commitlog are found by binary searches, as a
broker computes a queue's offset range.  :class:`MappedQueue` holds one queue's files
during validation, with how many of its entries the commitlog walk matched.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

from rmq.common.message import MessageRecord
from rmq.store.consumequeue import (
    CQ_STORE_UNIT_SIZE,
    ENTRY,
    PRE_BLANK_SIZE,
    CqEntry,
    is_valid_entry,
)
from rmq.store.errors import StoreError
from rmq.store.layout import list_offset_files
from rmq.store.offline.files import ReadOnlyFile
from rmq.store.offline.problems import ProblemKind, Report


class QueueMessage(NamedTuple):
    """A consume queue entry and the record it points at (None, with ``error``, if unreadable)."""

    queue_offset: int
    entry: CqEntry
    record: MessageRecord | None
    error: str | None


class QueueRange(NamedTuple):
    """A queue's offsets as a broker on this store reports them, and its newest entry."""

    min_offset: int
    max_offset: int
    last_entry: CqEntry | None


class QueueFileInfo(NamedTuple):
    """One consume queue file: its entries up to the first empty one (pre-blanks included)
    and the commitlog offsets its message entries point at (None without any)."""

    path: Path
    start: int
    size: int
    entries: int
    pre_blank_entries: int
    min_physical_offset: int | None
    max_physical_offset: int | None


def valid_entries(mapped: ReadOnlyFile) -> Iterator[tuple[int, int, int]]:
    """(position, commitlog offset, size) of a consume queue file's entries up to the first
    invalid one."""
    usable = mapped.size - mapped.size % CQ_STORE_UNIT_SIZE
    with memoryview(mapped.buf) as view:
        for index, (phy, size, _) in enumerate(ENTRY.iter_unpack(view[:usable])):
            if not is_valid_entry(phy, size):
                return
            yield index * CQ_STORE_UNIT_SIZE, phy, size


def _first_true(low: int, high: int, predicate: Callable[[int], bool]) -> int:
    """The first ``i`` in ``[low, high)`` with ``predicate(i)`` (``predicate`` goes from False
    to True once), ``high`` if there is none."""
    while low < high:
        middle = (low + high) // 2
        if predicate(middle):
            high = middle
        else:
            low = middle + 1
    return low


def entry_at(mapped: ReadOnlyFile, number: int) -> CqEntry:
    """Entry ``number`` of a consume queue file (counted from the file's start)."""
    return CqEntry._make(ENTRY.unpack_from(mapped.buf, number * CQ_STORE_UNIT_SIZE))


def entry_count(mapped: ReadOnlyFile) -> int:
    """How many entries a consume queue file holds before its first empty one (entries are
    written one after another, so a binary search finds the end the broker's scan finds)."""
    return _first_true(
        0,
        mapped.size // CQ_STORE_UNIT_SIZE,
        lambda number: not is_valid_entry(*entry_at(mapped, number)[:2]),
    )


def first_in_commitlog(mapped: ReadOnlyFile, count: int, commitlog_min: int) -> int:
    """The first of the first ``count`` entries of a consume queue file that is a message at
    or past ``commitlog_min`` (entries point at increasing offsets), ``count`` if none is."""

    def in_commitlog(number: int) -> bool:
        entry = entry_at(mapped, number)
        return entry.size != PRE_BLANK_SIZE and entry.physical_offset >= commitlog_min

    return _first_true(0, count, in_commitlog)


def pre_blank_count(mapped: ReadOnlyFile, count: int) -> int:
    """How many of the first ``count`` entries of a consume queue file are pre-blanks (they
    come first)."""
    return _first_true(0, count, lambda number: entry_at(mapped, number).size != PRE_BLANK_SIZE)


class MappedQueue:
    """One consume queue's files during validation, with its match count."""

    __slots__ = (
        "_current",
        "directory",
        "files",
        "matched",
        "missing",
        "queue_id",
        "starts",
        "topic",
    )

    def __init__(
        self, topic: str, queue_id: int, directory: Path, files: list[ReadOnlyFile]
    ) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.directory = directory
        self.files = files
        self.starts = [f.start for f in files]
        self.matched = 0
        # Records without an entry: [first physical offset, count, first queue offset].
        self.missing: list[int] = []
        self._current: ReadOnlyFile | None = None

    def fields_at(self, queue_offset: int) -> tuple[int, int, int] | None:
        """The raw entry at ``queue_offset`` (None where no file holds it); the file of the
        previous call is tried first, as a walk asks for a queue's offsets in order."""
        position = queue_offset * CQ_STORE_UNIT_SIZE
        mapped = self._current
        if mapped is None or not mapped.start <= position <= mapped.end - CQ_STORE_UNIT_SIZE:
            located = self.locate(queue_offset)
            if located is None:
                return None
            mapped = self._current = located[0]
        fields: tuple[int, int, int] = ENTRY.unpack_from(mapped.buf, position - mapped.start)
        return fields

    def locate(self, queue_offset: int) -> tuple[ReadOnlyFile, int] | None:
        position = queue_offset * CQ_STORE_UNIT_SIZE
        index = bisect.bisect_right(self.starts, position) - 1
        if index < 0:
            return None
        mapped = self.files[index]
        pos = position - mapped.start
        if pos + CQ_STORE_UNIT_SIZE > mapped.size:
            return None
        return mapped, pos

    def close(self) -> None:
        for mapped in self.files:
            mapped.close()


def map_queue(topic: str, queue_id: int, directory: Path, report: Report | None) -> MappedQueue:
    """Map a consume queue's files; an unreadable file is passed to ``report`` and left out,
    or without ``report`` raises :class:`StoreError`."""
    files = []
    try:
        for start, path in list_offset_files(directory):
            try:
                files.append(ReadOnlyFile(path, start))
            except OSError as exc:
                if report is None:
                    raise StoreError(f"cannot read {path}: {exc.strerror}") from None
                report(ProblemKind.UNREADABLE_FILE, path, 0, exc.strerror or str(exc))
    except StoreError:
        for mapped in files:
            mapped.close()
        raise
    return MappedQueue(topic, queue_id, directory, files)


def queue_entries(directory: Path, start: int, end: int | None) -> Iterator[tuple[int, CqEntry]]:
    """``(queue offset, entry)`` of the consume queue in ``directory`` from ``start`` up to
    ``end`` (or its first empty entry), one file mapped at a time."""
    for file_start, path in list_offset_files(directory):
        try:
            mapped = ReadOnlyFile(path, file_start)
        except OSError as exc:
            raise StoreError(f"cannot read {path}: {exc.strerror}") from None
        try:
            first = mapped.start // CQ_STORE_UNIT_SIZE
            count = mapped.size // CQ_STORE_UNIT_SIZE
            if end is not None and first >= end:
                return
            if first + count <= start:
                continue
            skip = max(start - first, 0)
            view = memoryview(mapped.buf)[skip * CQ_STORE_UNIT_SIZE : count * CQ_STORE_UNIT_SIZE]
            try:
                for queue_offset, fields in enumerate(ENTRY.iter_unpack(view), first + skip):
                    if end is not None and queue_offset >= end:
                        return
                    if not is_valid_entry(fields[0], fields[1]):
                        return
                    yield queue_offset, CqEntry(*fields)
            finally:
                view.release()
        finally:
            mapped.close()
