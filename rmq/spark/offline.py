"""Offline scans: store directories split into commitlog byte ranges that tasks read in parallel.

Commitlog records carry no sync marker, so a task cannot start reading at an arbitrary byte:
every input partition (:class:`CommitlogRange`) starts at a record.  The driver finds record
starts in two ways:

* from the consume queues: every entry names the commitlog offset of a record, so the first
  record at or after a byte position is the smallest entry at or after it over all queues
  (a binary search per queue); the candidate is checked (a record must decode there and say
  it is at that offset);
* by walking record sizes from a known start: 8 bytes read per record (TOTALSIZE and the
  magic), a BLANK ending the file.  This is the fallback when the consume queues are
  missing, stale or wrong.

Each commitlog file is cut at the first record at or after every multiple of ``PRUNE_STEP``
bytes (16 MiB; ``maxPartitionBytes`` when that is smaller) from its start, the pieces the
bounds exclude are dropped, and the rest are joined again, within one file, into partitions
of ``maxPartitionBytes`` (128 MiB by default: eight per 1 GiB file, so local[2] runs two at
once).  A partition never spans two
files; records never do either.

What the bounds (:class:`~rmq.spark.options.ScanBounds`) cut before anything is read:

* commitlog offsets: only files and pieces overlapping ``[min_offset, max_offset)``, the
  first piece starting at the first record at or after ``min_offset``;
* store timestamps: the store time of each piece's first record is read (8 bytes); a piece
  is dropped when its first record is stored at or after the end time, or when the next
  piece's first record is stored before the start time.  This relies on store times never
  decreasing along the commitlog (the broker stamps records under its append lock), as
  RocketMQ's own lookups by time do;
* topics, through the consume queues when they cover a piece completely: the entries of all
  queues in the piece are summed, and if they tile it exactly (no record the queues do not
  list, which also rules out stale queues) the piece is dropped when none of its records
  belongs to a wanted topic, and read through the wanted topics' queues (only their records
  are touched) when they hold at most half of its bytes.  A piece the queues do not tile is
  walked.

Tasks (:func:`read_range`) walk their range with the same 8-byte peeks, skip records outside
the time bounds without decoding them, and decode the others with the one record codec
(``decode_record``), checking every bound exactly, so pruning can only save work, never
change the rows.  A record that does not decode hands the rest of the range to
:meth:`rmq.store.offline.reader.StoreReader.iter_records`, which skips damaged regions as
``rmq inspect`` does; its problems are logged as warnings.  A store file a task cannot open
(the executor does not see the store the driver planned from) fails the task with
:class:`~rmq.spark.failures.StoreUnreadable`, which names the host and the file.
"""

from __future__ import annotations

import bisect
import contextlib
import errno
import heapq
import logging
import mmap
import os
import socket
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from rmq.common.message import MessageRecord, decode_record
from rmq.common.recordwalk import (
    BLANK_MAGIC,
    MESSAGE_MAGIC,
    RecordError,
    peek_size_magic,
    store_timestamp_at,
)
from rmq.spark.failures import StoreUnreadable
from rmq.spark.options import NO_LIMIT, ScanBounds
from rmq.store.consumequeue import CQ_STORE_UNIT_SIZE, ENTRY, PRE_BLANK_SIZE
from rmq.store.layout import (
    StoreLayout,
    list_consume_queues,
    list_offset_files,
    offset_file_name,
)
from rmq.store.offline.problems import Problem
from rmq.store.offline.reader import StoreReader

log = logging.getLogger("rmq.spark")

DEFAULT_MAX_PARTITION_BYTES: Final = 128 * 1024 * 1024
PRUNE_STEP: Final = 16 * 1024 * 1024
SELECTIVE_SHARE: Final = 0.5
"""A piece is read through consume queues when the wanted topics hold at most this share."""

_HEADER: Final = 8


@dataclass(frozen=True, slots=True)
class CommitlogRange:
    """One input partition: the records that start in ``[start, end)`` (global commitlog
    offsets) of the commitlog file starting at ``file_start`` of the store at ``root``.
    With ``queues`` the records are those these consume queues list in the range."""

    root: str
    file_start: int
    start: int
    end: int
    queues: tuple[tuple[str, int], ...] = ()

    @property
    def size(self) -> int:
        return self.end - self.start


def _map(path: Path) -> Any:
    """The file mapped read-only (an empty file is empty bytes)."""
    with open(path, "rb") as file:
        if os.fstat(file.fileno()).st_size == 0:
            return b""
        return mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)


def _close(buf: Any) -> None:
    if isinstance(buf, mmap.mmap):
        with contextlib.suppress(BufferError):
            buf.close()


class _ConsumeQueue:
    """One consume queue's valid entries as a sequence of commitlog offsets (pre-blank
    entries read as -1), so ``bisect`` finds entries by commitlog offset."""

    __slots__ = ("_buffers", "_counts", "queue_id", "topic")

    def __init__(self, topic: str, queue_id: int, directory: Path) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self._buffers: list[Any] = []
        self._counts = [0]
        for _, path in list_offset_files(directory):
            buf = _map(path)
            count = _valid_entries(buf)
            if count:
                self._buffers.append(buf)
                self._counts.append(self._counts[-1] + count)
            else:
                _close(buf)

    def close(self) -> None:
        for buf in self._buffers:
            _close(buf)

    def __len__(self) -> int:
        return self._counts[-1]

    def __getitem__(self, index: int) -> int:
        return self.entry(index)[0]

    def entry(self, index: int) -> tuple[int, int]:
        """(commitlog offset, size) of entry ``index`` (offset -1 for a pre-blank entry)."""
        file_index = bisect.bisect_right(self._counts, index) - 1
        physical_offset, size, _ = ENTRY.unpack_from(
            self._buffers[file_index], (index - self._counts[file_index]) * CQ_STORE_UNIT_SIZE
        )
        return (-1 if size == PRE_BLANK_SIZE else physical_offset), size

    def first_at_or_after(self, physical_offset: int) -> int | None:
        """The smallest commitlog offset the queue lists at or after ``physical_offset``."""
        index = bisect.bisect_left(self, physical_offset)
        return self[index] if index < len(self) else None

    def entries(self, start: int, end: int) -> Iterator[tuple[int, int]]:
        """(commitlog offset, size) of the entries pointing into ``[start, end)``, in order."""
        index = bisect.bisect_left(self, start)
        stop = bisect.bisect_left(self, end)
        while index < stop:
            file_index = bisect.bisect_right(self._counts, index) - 1
            first = index - self._counts[file_index]
            last = min(stop, self._counts[file_index + 1]) - self._counts[file_index]
            with (
                memoryview(self._buffers[file_index]) as view,
                view[first * CQ_STORE_UNIT_SIZE : last * CQ_STORE_UNIT_SIZE] as chunk,
            ):
                for physical_offset, size, _ in ENTRY.iter_unpack(chunk):
                    yield physical_offset, size
            index += last - first


def _valid_entries(buf: Any) -> int:
    """How many entries lead the file before the first empty one (binary search: a queue
    file is written front to back and is zero after its last entry)."""
    low, high = 0, len(buf) // CQ_STORE_UNIT_SIZE
    while low < high:
        mid = (low + high) // 2
        physical_offset, size, _ = ENTRY.unpack_from(buf, mid * CQ_STORE_UNIT_SIZE)
        if physical_offset >= 0 and size > 0:
            low = mid + 1
        else:
            high = mid
    return low


@dataclass(slots=True)
class _Piece:
    """A run of records of one commitlog file and what the scan does with it.

    ``cells`` counts the ``step``-sized cells of the file's grid the piece covers (its start
    is the first record at or after one grid point, its end the first record at or after a
    later one); ``cost`` is what a task reads: the piece's bytes, or only the wanted
    topics' bytes when it is read through consume queues."""

    file_start: int
    start: int
    end: int
    first_timestamp: int
    cells: int
    cost: int
    queues: tuple[tuple[str, int], ...] = ()


class _CommitlogFile:
    """One commitlog file mapped for planning: record starts and first store times."""

    __slots__ = ("buf", "end", "start")

    def __init__(self, start: int, path: Path) -> None:
        self.start = start
        self.buf = _map(path)
        self.end = start + len(self.buf)

    def is_record(self, physical_offset: int) -> bool:
        pos = physical_offset - self.start
        if pos + _HEADER > len(self.buf):
            return False
        return peek_size_magic(self.buf, pos)[1] == MESSAGE_MAGIC

    def holds_record_at(self, physical_offset: int) -> bool:
        """Whether a record that says it is at ``physical_offset`` decodes there."""
        try:
            record = decode_record(self.buf, physical_offset - self.start, with_body=False)
        except RecordError:
            return False
        return record.physical_offset == physical_offset

    def walk_to(self, start: int, target: int) -> int | None:
        """Walking record sizes from the record at ``start``: the first record at or after
        ``target`` (None when the file's records end before it)."""
        pos = start - self.start
        goal = target - self.start
        limit = len(self.buf)
        while pos < goal:
            if pos + _HEADER > limit:
                return None
            size, magic = peek_size_magic(self.buf, pos)
            if magic != MESSAGE_MAGIC or size <= _HEADER:
                return None
            pos += size
        return self.start + pos if self.is_record(self.start + pos) else None

    def timestamp(self, physical_offset: int) -> int:
        return store_timestamp_at(self.buf, physical_offset - self.start)


class _Planner:
    """Plans the scan of one store (see the module docstring)."""

    def __init__(self, root: str, bounds: ScanBounds, max_partition_bytes: int) -> None:
        self.root = root
        self.bounds = bounds
        self.max_partition_bytes = max_partition_bytes
        self.step = min(max_partition_bytes, PRUNE_STEP)
        layout = StoreLayout.of(root)
        if not layout.root.is_dir():
            raise ValueError(f"store directory {root} does not exist")
        self.layout = layout
        self.queues = [
            _ConsumeQueue(topic, queue_id, directory)
            for topic, queue_id, directory in list_consume_queues(layout.consume_queue_root)
        ]

    def close(self) -> None:
        for queue in self.queues:
            queue.close()

    def plan(self) -> list[CommitlogRange]:
        listed = list_offset_files(self.layout.commitlog)
        ends = [start for start, _ in listed[1:]] + [NO_LIMIT]
        files = [
            _CommitlogFile(start, path)
            for (start, path), end in zip(listed, ends, strict=True)
            if end > self.bounds.min_offset and start < self.bounds.max_offset
        ]
        try:
            pieces = [piece for commitlog_file in files for piece in self._pieces(commitlog_file)]
            if self.bounds.limits_time:
                pieces = self._by_time(pieces)
            if self.bounds.topics is not None:
                by_start = {commitlog_file.start: commitlog_file for commitlog_file in files}
                pieces = [
                    selected
                    for piece in pieces
                    if (selected := self._select_topics(by_start[piece.file_start], piece))
                    is not None
                ]
            return self._partitions(pieces)
        finally:
            for commitlog_file in files:
                _close(commitlog_file.buf)

    def _record_at_or_after(
        self, commitlog_file: _CommitlogFile, target: int, known: int
    ) -> int | None:
        """A record start at or after ``target`` in the file: the first one the consume
        queues list, when it checks out, else the first one walking from ``known``."""
        candidates = (queue.first_at_or_after(target) for queue in self.queues)
        listed = min((c for c in candidates if c is not None), default=None)
        if (
            listed is not None
            and listed < commitlog_file.end
            and commitlog_file.holds_record_at(listed)
        ):
            return listed
        return commitlog_file.walk_to(known, target)

    def _pieces(self, commitlog_file: _CommitlogFile) -> list[_Piece]:
        """The file's records within the offset bounds, cut at the first record at or after
        each multiple of ``step`` bytes from the file's start."""
        stop = min(commitlog_file.end, self.bounds.max_offset)
        first: int | None = commitlog_file.start
        if self.bounds.min_offset > commitlog_file.start:
            first = self._record_at_or_after(
                commitlog_file, self.bounds.min_offset, commitlog_file.start
            )
        if first is None or first >= stop or not commitlog_file.is_record(first):
            return []
        starts = [first]
        while True:
            target = commitlog_file.start + (self._cell(commitlog_file, starts[-1]) + 1) * self.step
            found = None
            if target < stop:
                found = self._record_at_or_after(commitlog_file, target, starts[-1])
            if found is None or found >= stop:
                break
            starts.append(found)
        ends = [*starts[1:], stop]
        return [
            _Piece(
                commitlog_file.start,
                start,
                end,
                commitlog_file.timestamp(start),
                cells=self._cell(commitlog_file, end) - self._cell(commitlog_file, start),
                cost=end - start,
            )
            for start, end in zip(starts, ends, strict=True)
        ]

    def _cell(self, commitlog_file: _CommitlogFile, physical_offset: int) -> int:
        """The last grid point at or before ``physical_offset``, counted from the file's
        start (a piece starts within a record's length after its grid point)."""
        return (physical_offset - commitlog_file.start) // self.step

    def _by_time(self, pieces: list[_Piece]) -> list[_Piece]:
        """Drop pieces outside the time bounds (store times never decrease)."""
        bounds = self.bounds
        kept = []
        for index, piece in enumerate(pieces):
            following = pieces[index + 1] if index + 1 < len(pieces) else None
            if piece.first_timestamp >= bounds.max_timestamp:
                continue
            if following is not None and following.first_timestamp < bounds.min_timestamp:
                continue
            kept.append(piece)
        return kept

    def _select_topics(self, commitlog_file: _CommitlogFile, piece: _Piece) -> _Piece | None:
        wanted = self.bounds.topics
        assert wanted is not None
        total = 0
        first = piece.end
        last_end = piece.start
        wanted_bytes = 0
        wanted_queues = []
        for queue in self.queues:
            queue_bytes = 0
            for physical_offset, size in queue.entries(piece.start, piece.end):
                queue_bytes += size
                first = min(first, physical_offset)
                last_end = max(last_end, physical_offset + size)
            total += queue_bytes
            if queue_bytes and queue.topic in wanted:
                wanted_bytes += queue_bytes
                wanted_queues.append((queue.topic, queue.queue_id))
        tiled = (
            first == piece.start
            and total == last_end - piece.start
            and (last_end >= piece.end or not commitlog_file.is_record(last_end))
        )
        if not tiled:
            return piece
        if not wanted_bytes:
            return None
        if wanted_bytes <= SELECTIVE_SHARE * total:
            piece.queues = tuple(wanted_queues)
            piece.cost = wanted_bytes
        return piece

    def _partitions(self, pieces: Sequence[_Piece]) -> list[CommitlogRange]:
        """Join neighbouring pieces of a file read the same way: walked pieces up to
        ``maxPartitionBytes`` of the file's grid, pieces read through consume queues up to
        ``maxPartitionBytes`` of records of the wanted topics."""
        cells_per_partition = max(self.max_partition_bytes // self.step, 1)
        joined: list[_Piece] = []
        for piece in pieces:
            last = joined[-1] if joined else None
            if (
                last is not None
                and last.file_start == piece.file_start
                and last.end == piece.start
                and bool(last.queues) == bool(piece.queues)
                and (
                    last.cost + piece.cost <= self.max_partition_bytes
                    if piece.queues
                    else last.cells + piece.cells <= cells_per_partition
                )
            ):
                last.end = piece.end
                last.cells += piece.cells
                last.cost += piece.cost
                last.queues = tuple(dict.fromkeys(last.queues + piece.queues))
            else:
                joined.append(piece)
        return [
            CommitlogRange(self.root, piece.file_start, piece.start, piece.end, piece.queues)
            for piece in joined
        ]


def plan_store(
    root: str, bounds: ScanBounds, max_partition_bytes: int = DEFAULT_MAX_PARTITION_BYTES
) -> list[CommitlogRange]:
    """The input partitions of the records of the store at ``root`` within ``bounds``."""
    if max_partition_bytes <= 0:
        raise ValueError(f"maxPartitionBytes must be positive, not {max_partition_bytes}")
    if bounds.empty:
        return []
    planner = _Planner(os.path.abspath(root), bounds, max_partition_bytes)
    try:
        return planner.plan()
    finally:
        planner.close()


def read_range(part: CommitlogRange, bounds: ScanBounds) -> Iterator[MessageRecord]:
    """The records of one partition within ``bounds``, in commitlog order.  A store file
    this process cannot open (an executor that does not see the driver's store) raises
    :class:`~rmq.spark.failures.StoreUnreadable` naming this host and the file."""
    try:
        yield from _read_range(part, bounds)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise StoreUnreadable(socket.gethostname(), exc.filename or part.root, reason) from exc


def _read_range(part: CommitlogRange, bounds: ScanBounds) -> Iterator[MessageRecord]:
    layout = StoreLayout.of(part.root)
    buf = _map(layout.commitlog / offset_file_name(part.file_start))
    try:
        if part.queues:
            yield from _read_listed(part, layout, buf, bounds)
        else:
            yield from _walk(part, buf, bounds)
    finally:
        _close(buf)


def _walk(part: CommitlogRange, buf: Any, bounds: ScanBounds) -> Iterator[MessageRecord]:
    """The records of a range, walked with 8-byte peeks from its first record."""
    pos = part.start - part.file_start
    limit = min(part.end - part.file_start, len(buf))
    check_time = bounds.limits_time
    while pos < limit and pos + _HEADER <= len(buf):
        size, magic = peek_size_magic(buf, pos)
        if magic == BLANK_MAGIC or (size == 0 and magic == 0):
            return
        if magic != MESSAGE_MAGIC or size <= _HEADER or pos + size > len(buf):
            yield from _walk_damaged(part, part.file_start + pos, bounds)
            return
        if check_time and not (
            bounds.min_timestamp <= store_timestamp_at(buf, pos) < bounds.max_timestamp
        ):
            pos += size
            continue
        try:
            record = decode_record(buf, pos)
        except RecordError:
            yield from _walk_damaged(part, part.file_start + pos, bounds)
            return
        if bounds.admits(record.topic, record.store_timestamp, record.physical_offset):
            yield record
        pos += size


def _walk_damaged(part: CommitlogRange, start: int, bounds: ScanBounds) -> Iterator[MessageRecord]:
    """The rest of a range from a record that does not decode, through the store reader."""
    log.warning(
        "%s: commitlog offset %d does not hold a valid record; reading on past damage",
        part.root,
        start,
    )

    def report(kind: Any, path: Path, offset: int, message: str) -> None:
        log.warning("%s", Problem(kind, path, offset, message))

    with StoreReader(part.root) as reader:
        for physical_offset, record in reader.iter_records(start, report=report):
            if physical_offset >= part.end:
                return
            if bounds.admits(record.topic, record.store_timestamp, physical_offset):
                yield record


def _read_listed(
    part: CommitlogRange, layout: StoreLayout, buf: Any, bounds: ScanBounds
) -> Iterator[MessageRecord]:
    """The records the partition's consume queues list in its range, in commitlog order."""
    queues = [
        _ConsumeQueue(topic, queue_id, layout.consume_queue_dir(topic, queue_id))
        for topic, queue_id in part.queues
    ]
    try:
        for queue in queues:
            if not len(queue):  # planned because it lists records here
                directory = layout.consume_queue_dir(queue.topic, queue.queue_id)
                raise FileNotFoundError(errno.ENOENT, "no consume queue files", str(directory))
        listed = heapq.merge(*(queue.entries(part.start, part.end) for queue in queues))
        for physical_offset, _ in listed:
            try:
                record = decode_record(buf, physical_offset - part.file_start)
            except RecordError as exc:
                log.warning("%s: a consume queue entry points at no record: %s", part.root, exc)
                continue
            if record.physical_offset != physical_offset:
                log.warning(
                    "%s: a consume queue entry points at commitlog offset %d, where a record "
                    "of offset %d is stored",
                    part.root,
                    physical_offset,
                    record.physical_offset,
                )
                continue
            if bounds.admits(record.topic, record.store_timestamp, physical_offset):
                yield record
    finally:
        for queue in queues:
            queue.close()
