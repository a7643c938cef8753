"""Offline, read-only access to a store directory: ours or one written by Apache RocketMQ.

:class:`StoreReader` opens every file with ``O_RDONLY`` and maps it ``ACCESS_READ``; it never
creates, locks or writes anything, so it is safe on a copy, on a stopped broker's directory,
and (with the usual caveat that the tail may move) next to a running one.  Every size comes
from the files themselves: commitlog and consume queue files are as long as they are, index
geometry is inferred from the file size (:meth:`~rmq.store.indexfile.IndexFile.open_read_only`).
Records are decoded only by the common codec (:mod:`rmq.common.message`).

Reading: the files with their ranges; records in commitlog order with their physical offsets
(a BLANK record sends the walk to the next file; the walk ends at a zero header or an unknown
magic in the last file); a queue's messages through its consume queue; a message by physical
offset or offset message id; messages by key through the index files, plus a scan of the
commitlog tail the index does not cover (or of everything when there is no index); the
checkpoint; the ``config/*.json`` files (falling back to ``.bak`` like the broker).

Validation (:meth:`StoreReader.validate`) checks the whole store in one pass over the
commitlog and reports every problem as a :class:`Problem` (kind, file, byte offset in that
file, message); corrupt input never raises.  The pass is built for speed: records are walked
with ``struct`` reads on the mappings and CRCs computed on slices, and the consume queue and
index checks ride along instead of re-reading records:

* a record that belongs in a consume queue (not a PREPARED or ROLLBACK transaction record)
  must find, at its queue offset in its (topic, queue id) queue, an entry with its physical
  offset and size; every queue then counts its entries pointing into the commitlog, and only
  a queue whose count differs from its matches is re-read entry by entry, each entry decoding
  the record it points at to say exactly what is wrong (not a record, size, topic / queue id,
  queue offset);
* index entries are in commitlog order, so they are merged with the walk: entries at a
  record's offset must carry the hash of one of its ``topic#key`` strings; entries that fall
  between records or past the end are checked one by one.

Problems of one kind in one file are capped (:data:`PROBLEMS_PER_FILE_AND_KIND`), with a
summary of how many more there were.
"""

from __future__ import annotations

import bisect
import contextlib
import enum
import itertools
import mmap
import os
import struct
from collections import Counter
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, NamedTuple, Protocol, TypeVar

from rmq.common.javahash import index_key_hash
from rmq.common.message import (
    BLANK_MAGIC,
    MESSAGE_MAGIC,
    DispatchInfo,
    MessageRecord,
    RecordError,
    decode_record,
    peek_size_magic,
    read_dispatch_info,
)
from rmq.common.msgconst import KEY_SEPARATOR
from rmq.common.msgid import decode_offset_msg_id
from rmq.common.sysflag import (
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    TRANSACTION_TYPE_MASK,
)
from rmq.store.configfile import ConfigFileError, LoadedConfig, load_config
from rmq.store.consumequeue import (
    CQ_STORE_UNIT_SIZE,
    ENTRY,
    PRE_BLANK_SIZE,
    CqEntry,
    is_valid_entry,
)
from rmq.store.errors import StoreError
from rmq.store.indexfile import IndexEntry, IndexFile, index_key, query_index_files
from rmq.store.layout import (
    CONSUMER_FILTER_JSON,
    CONSUMER_OFFSET_JSON,
    DELAY_OFFSET_JSON,
    SUBSCRIPTION_GROUP_JSON,
    TOPICS_JSON,
    StoreLayout,
    list_consume_queues,
    list_index_files,
    list_offset_files,
)

PROBLEMS_PER_FILE_AND_KIND: Final = 20
CHECKPOINT_SIZE: Final = 4096
CONFIG_FILES: Final = (
    TOPICS_JSON,
    CONSUMER_OFFSET_JSON,
    SUBSCRIPTION_GROUP_JSON,
    CONSUMER_FILTER_JSON,
    DELAY_OFFSET_JSON,
)
_CHECKPOINT: Final = struct.Struct(">qqq")
_HEADER_SIZE: Final = 8
_ZERO_CHUNK: Final = bytes(1 << 20)
_NOT_DISPATCHED: Final = (TRANSACTION_PREPARED_TYPE, TRANSACTION_ROLLBACK_TYPE)
_MAX_TIMESTAMP: Final = (1 << 63) - 1


class ProblemKind(enum.StrEnum):
    """What is wrong; the value is what reports print."""

    UNREADABLE_FILE = "unreadable-file"
    WRONG_FILE_SIZE = "wrong-file-size"
    MISSING_FILE = "missing-file"
    BAD_MAGIC = "bad-magic"
    SIZE_MISMATCH = "size-mismatch"
    CRC_MISMATCH = "crc-mismatch"
    TRUNCATED_RECORD = "truncated-record"
    PHYSICAL_OFFSET_MISMATCH = "physical-offset-mismatch"
    MISSING_BLANK = "missing-blank"
    TORN_TAIL = "torn-tail"
    CQ_HOLE = "cq-hole"
    CQ_ENTRY_NOT_A_RECORD = "cq-entry-not-a-record"
    CQ_SIZE_MISMATCH = "cq-size-mismatch"
    CQ_WRONG_QUEUE = "cq-wrong-queue"
    CQ_QUEUE_OFFSET_MISMATCH = "cq-queue-offset-mismatch"
    CQ_MISSING_ENTRY = "cq-missing-entry"
    INDEX_BAD_HEADER = "index-bad-header"
    INDEX_ENTRY_NOT_A_RECORD = "index-entry-not-a-record"
    INDEX_KEY_MISMATCH = "index-key-mismatch"
    BAD_CONFIG = "bad-config"


@dataclass(frozen=True, slots=True)
class Problem:
    """One problem: which file, where in it (byte offset), and what."""

    kind: ProblemKind
    path: Path
    offset: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}@{self.offset}: {self.kind}: {self.message}"


@dataclass(slots=True)
class ValidationReport:
    """The outcome of :meth:`StoreReader.validate`."""

    root: Path
    problems: list[Problem] = field(default_factory=list)
    commitlog_files: int = 0
    records: int = 0
    bytes_scanned: int = 0
    min_physical_offset: int = 0
    max_physical_offset: int = 0
    consume_queues: int = 0
    consume_queue_entries: int = 0
    index_files: int = 0
    index_entries: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems


class StoreFile(NamedTuple):
    """A mapped file of a queue: its path, global offset of its first byte, and size."""

    path: Path
    start: int
    size: int


class Checkpoint(NamedTuple):
    """The three store timestamps (ms) of the ``checkpoint`` file."""

    physic_msg_timestamp: int
    logics_msg_timestamp: int
    index_msg_timestamp: int


class IndexFileInfo(NamedTuple):
    """An index file's geometry and header."""

    path: Path
    hash_slot_num: int
    index_num: int
    index_count: int
    hash_slot_count: int
    begin_timestamp: int
    end_timestamp: int
    begin_phy_offset: int
    end_phy_offset: int


class QueueMessage(NamedTuple):
    """A consume queue entry and the record it points at (None, with ``error``, if unreadable)."""

    queue_offset: int
    entry: CqEntry
    record: MessageRecord | None
    error: str | None


class _Framed(Protocol):
    @property
    def total_size(self) -> int: ...

    @property
    def physical_offset(self) -> int: ...


F = TypeVar("F", bound=_Framed)
_IndexHit = tuple[IndexFile, int, IndexEntry]
Report = Callable[[ProblemKind, Path, int, str], None]


def _ignore(kind: ProblemKind, path: Path, offset: int, message: str) -> None:
    """A :data:`Report` for reads that only want the good records."""


class _Mapped:
    """A file mapped read-only (an empty file has an empty buffer)."""

    __slots__ = ("buf", "path", "size", "start")

    def __init__(self, path: Path, start: int) -> None:
        self.path = path
        self.start = start
        with open(path, "rb") as file:
            self.size = os.fstat(file.fileno()).st_size
            self.buf: Any = (
                mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) if self.size else b""
            )

    @property
    def end(self) -> int:
        return self.start + self.size

    def close(self) -> None:
        if isinstance(self.buf, mmap.mmap):
            with contextlib.suppress(BufferError):
                self.buf.close()


class _Problems:
    """Collects problems, at most :data:`PROBLEMS_PER_FILE_AND_KIND` per (file, kind)."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []
        self._counts: Counter[tuple[Path, ProblemKind]] = Counter()
        self._first_dropped: dict[tuple[Path, ProblemKind], int] = {}

    def __call__(self, kind: ProblemKind, path: Path, offset: int, message: str) -> None:
        key = (path, kind)
        self._counts[key] += 1
        if self._counts[key] <= PROBLEMS_PER_FILE_AND_KIND:
            self.problems.append(Problem(kind, path, offset, message))
        else:
            self._first_dropped.setdefault(key, offset)

    def finish(self) -> list[Problem]:
        for (path, kind), offset in self._first_dropped.items():
            more = self._counts[path, kind] - PROBLEMS_PER_FILE_AND_KIND
            self.problems.append(
                Problem(kind, path, offset, f"{more} more problems of this kind from here on")
            )
        return self.problems


def _first_nonzero(buf: Any, start: int, end: int) -> int | None:
    """Position of the first non-zero byte of ``buf[start:end]``, None if all zero."""
    pos = start
    while pos < end:
        stop = min(pos + len(_ZERO_CHUNK), end)
        chunk = buf[pos:stop]
        if chunk != _ZERO_CHUNK[: stop - pos]:
            return stop - len(chunk.lstrip(b"\x00"))
        pos = stop
    return None


def _check_data_end(
    mapped: _Mapped,
    end: int,
    last: bool,
    early_end: ProblemKind,
    early_end_message: str,
    report: Report,
    unit: int = 1,
) -> None:
    """The data of a queue file ends at ``end``.  Everything after must be zero: otherwise
    the last file of the queue has a torn tail (reported at the ``unit`` holding the first
    non-zero byte), and any other file ``early_end``, as only the last file may end early."""
    garbage = _first_nonzero(mapped.buf, end, mapped.size)
    if not last:
        if garbage is not None:
            early_end_message += f"; non-zero bytes follow from offset {garbage}"
        report(early_end, mapped.path, end, early_end_message)
    elif garbage is not None:
        report(
            ProblemKind.TORN_TAIL,
            mapped.path,
            garbage - garbage % unit,
            f"non-zero bytes after the end of the data at offset {end}: a torn or partial "
            f"write ({mapped.size - garbage} bytes up to the end of the file)",
        )


def _resume_position(mapped: _Mapped, pos: int, size: int) -> int | None:
    """Where the walk can go on after a damaged record at ``pos``: its TOTALSIZE, if that
    leads to the header of another record or a BLANK, else None."""
    resume = pos + size
    if size <= _HEADER_SIZE or resume + _HEADER_SIZE > mapped.size:
        return None
    _, magic = peek_size_magic(mapped.buf, resume)
    return resume if magic in (MESSAGE_MAGIC, BLANK_MAGIC) else None


def _common_size(files: list[_Mapped]) -> int:
    """The size most files of a queue have (the larger one on a tie)."""
    sizes = Counter(f.size for f in files)
    return max(sizes, key=lambda size: (sizes[size], size))


def _check_queue_files(files: list[_Mapped], what: str, unit: int, report: Report) -> None:
    """Report files of the wrong size and gaps between consecutive files of one queue."""
    if not files:
        return
    expected = _common_size(files)
    for mapped in files:
        if mapped.size != expected or mapped.size % unit:
            report(
                ProblemKind.WRONG_FILE_SIZE,
                mapped.path,
                0,
                f"{what} file is {mapped.size} bytes, the others are {expected}",
            )
    for prev, mapped in itertools.pairwise(files):
        if prev.end < mapped.start:
            report(
                ProblemKind.MISSING_FILE,
                mapped.path,
                0,
                f"{what} bytes {prev.end}..{mapped.start} are missing: no file between "
                f"{prev.path.name} and {mapped.path.name}",
            )


def _record_key_hashes(info: DispatchInfo) -> set[int]:
    """Index hashes of every ``topic#key`` a record is indexed under."""
    keys = info.keys.split(KEY_SEPARATOR) if info.keys else []
    if info.uniq_key:
        keys.append(info.uniq_key)
    return {index_key_hash(index_key(info.topic, key)) for key in keys if key}


def _valid_entries(mapped: _Mapped) -> Iterator[tuple[int, int, int]]:
    """(position, commitlog offset, size) of a consume queue file's entries up to the first
    invalid one."""
    usable = mapped.size - mapped.size % CQ_STORE_UNIT_SIZE
    with memoryview(mapped.buf) as view:
        for index, (phy, size, _) in enumerate(ENTRY.iter_unpack(view[:usable])):
            if not is_valid_entry(phy, size):
                return
            yield index * CQ_STORE_UNIT_SIZE, phy, size


def _dispatch_info(buf: Any, pos: int) -> DispatchInfo:
    return read_dispatch_info(buf, pos, check_crc=True)


def _dispatch_info_unchecked(buf: Any, pos: int) -> DispatchInfo:
    return read_dispatch_info(buf, pos)


def _record(buf: Any, pos: int) -> MessageRecord:
    return decode_record(buf, pos)


class _Queue:
    """One consume queue's files during validation, with its match count."""

    __slots__ = ("directory", "files", "matched", "missing", "queue_id", "starts", "topic")

    def __init__(self, topic: str, queue_id: int, directory: Path, files: list[_Mapped]) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.directory = directory
        self.files = files
        self.starts = [f.start for f in files]
        self.matched = 0
        # Records without an entry: [first physical offset, count, first queue offset].
        self.missing: list[int] = []

    def locate(self, queue_offset: int) -> tuple[_Mapped, int] | None:
        position = queue_offset * CQ_STORE_UNIT_SIZE
        index = bisect.bisect_right(self.starts, position) - 1
        if index < 0:
            return None
        mapped = self.files[index]
        pos = position - mapped.start
        if pos + CQ_STORE_UNIT_SIZE > mapped.size:
            return None
        return mapped, pos


class StoreReader:
    """Read-only view of a store directory; see the module docstring.

    ``commitlog_dir`` overrides ``<root>/commitlog``; ``hash_slot_num`` / ``index_num`` are
    hints for index files whose size does not reveal their geometry.  Use as a context
    manager or call :meth:`close`.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        commitlog_dir: str | os.PathLike[str] = "",
        hash_slot_num: int = 0,
        index_num: int = 0,
    ) -> None:
        self.layout = StoreLayout.of(root, commitlog_dir)
        if not self.layout.root.is_dir():
            raise StoreError(f"{self.layout.root} is not a directory")
        self._hash_slot_num = hash_slot_num
        self._index_num = index_num
        self._commitlog: list[_Mapped] = []
        self._commitlog_errors: list[tuple[Path, str]] = []
        for start, path in list_offset_files(self.layout.commitlog):
            try:
                self._commitlog.append(_Mapped(path, start))
            except OSError as exc:
                self._commitlog_errors.append((path, exc.strerror or str(exc)))
        self._starts = [f.start for f in self._commitlog]

    def close(self) -> None:
        for mapped in self._commitlog:
            mapped.close()
        self._commitlog = []
        self._starts = []

    def __enter__(self) -> StoreReader:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- listing -------------------------------------------------------------------------

    def commitlog_files(self) -> list[StoreFile]:
        return [StoreFile(f.path, f.start, f.size) for f in self._commitlog]

    def consume_queues(self) -> list[tuple[str, int]]:
        """Every (topic, queue id) with a consume queue directory."""
        return [(topic, queue_id) for topic, queue_id, _ in self._queue_dirs()]

    def consume_queue_files(self, topic: str, queue_id: int) -> list[StoreFile]:
        """The files of a consume queue; ``start // 20`` is the first queue offset in each."""
        directory = self.layout.consume_queue_dir(topic, queue_id)
        return [
            StoreFile(path, start, path.stat().st_size)
            for start, path in list_offset_files(directory)
        ]

    def index_files(self) -> list[IndexFileInfo]:
        """The headers and geometry of the usable index files, oldest first."""
        infos = []
        for index_file in self._open_index_files():
            infos.append(
                IndexFileInfo(
                    index_file.path,
                    index_file.hash_slot_num,
                    index_file.index_num,
                    index_file.index_count,
                    index_file.hash_slot_count,
                    index_file.begin_timestamp,
                    index_file.end_timestamp,
                    index_file.begin_phy_offset,
                    index_file.end_phy_offset,
                )
            )
            index_file.close()
        return infos

    @property
    def min_physical_offset(self) -> int:
        """First commitlog offset still stored (0 for an empty store)."""
        return self._commitlog[0].start if self._commitlog else 0

    def max_physical_offset(self) -> int:
        """The end of valid data: just past the last good record of the last file."""
        if not self._commitlog:
            return 0
        last = self._commitlog[-1]
        end = last.start
        for position, record in self._walk(last.start, _dispatch_info_unchecked, _ignore):
            end = position + record.total_size
        return end

    # -- records -------------------------------------------------------------------------

    def iter_records(
        self, start: int | None = None, *, report: Report = _ignore
    ) -> Iterator[tuple[int, MessageRecord]]:
        """``(physical offset, record)`` for every record from ``start`` (the first record
        by default) in commitlog order; damaged regions are skipped and passed to
        ``report``."""
        yield from self._walk(self.min_physical_offset if start is None else start, _record, report)

    def message_at(self, physical_offset: int) -> MessageRecord:
        """The record at ``physical_offset``; :class:`StoreError` if there is none."""
        mapped, pos = self._locate(physical_offset)
        try:
            return decode_record(mapped.buf, pos)
        except RecordError as exc:
            raise StoreError(f"no message at commitlog offset {physical_offset}: {exc}") from None

    def message_by_offset_id(self, msg_id: str) -> MessageRecord:
        """The record an offset message id (store host + physical offset) names."""
        try:
            physical_offset = decode_offset_msg_id(msg_id).physical_offset
        except ValueError as exc:
            raise StoreError(str(exc)) from None
        return self.message_at(physical_offset)

    def read_queue(
        self, topic: str, queue_id: int, start: int = 0, end: int | None = None
    ) -> Iterator[QueueMessage]:
        """The messages of a queue with queue offsets in ``[start, end)``, in order.

        Pre-blank entries are skipped; the walk ends at the queue's first empty entry.
        """
        for queue_offset, entry in self._queue_entries(topic, queue_id, start, end):
            if entry.size == PRE_BLANK_SIZE:
                continue
            try:
                mapped, pos = self._locate(entry.physical_offset)
                yield QueueMessage(queue_offset, entry, decode_record(mapped.buf, pos), None)
            except (StoreError, RecordError) as exc:
                yield QueueMessage(queue_offset, entry, None, str(exc))

    def queue_offsets(self, topic: str, queue_id: int) -> tuple[int, int]:
        """(min, max) queue offsets of a queue, as a broker on this store would report them:
        the first entry still in the commitlog, and one past the last entry."""
        minimum = None
        maximum = 0
        commitlog_min = self.min_physical_offset
        for queue_offset, entry in self._queue_entries(topic, queue_id, 0, None):
            maximum = queue_offset + 1
            if (
                minimum is None
                and entry.size != PRE_BLANK_SIZE
                and entry.physical_offset >= commitlog_min
            ):
                minimum = queue_offset
        return (maximum if minimum is None else minimum), maximum

    def query_by_key(
        self,
        topic: str,
        key: str,
        max_num: int = 64,
        begin: int = 0,
        end: int = _MAX_TIMESTAMP,
    ) -> list[MessageRecord]:
        """Messages of ``topic`` with ``key`` (a KEYS token or the UNIQ_KEY) stored within
        ``[begin, end]``: the newest ``max_num``, in commitlog order.

        Looks the key up in the index files, re-checking each hit's topic and keys, and scans
        the commitlog past the newest indexed message (all of it without an index).
        """
        found: dict[int, MessageRecord] = {}

        def take(record: MessageRecord) -> None:
            if (
                record.topic == topic
                and begin <= record.store_timestamp <= end
                and (key == record.uniq_key or key in record.keys)
            ):
                found[record.physical_offset] = record

        index_files = self._open_index_files()
        try:
            indexed_up_to = max(
                (f.end_phy_offset for f in index_files if f.index_count > 1), default=-1
            )
            for physical_offset in query_index_files(
                index_files, index_key(topic, key), max_num, begin, end
            ):
                try:
                    take(self.message_at(physical_offset))
                except StoreError:
                    continue
        finally:
            for index_file in index_files:
                index_file.close()
        for physical_offset, record in self.iter_records(
            max(indexed_up_to, self.min_physical_offset)
        ):
            if physical_offset > indexed_up_to:
                take(record)
        return [found[offset] for offset in sorted(found)[-max_num:]]

    # -- checkpoint and config -----------------------------------------------------------

    def checkpoint(self) -> Checkpoint | None:
        """The checkpoint's timestamps; None when the file is missing or too short."""
        try:
            data = self.layout.checkpoint.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StoreError(f"cannot read {self.layout.checkpoint}: {exc.strerror}") from None
        if len(data) < _CHECKPOINT.size:
            return None
        return Checkpoint(*_CHECKPOINT.unpack_from(data))

    def load_config(self, name: str) -> LoadedConfig[Any] | None:
        """``config/<name>`` decoded (falling back to ``.bak``); None when absent."""
        return load_config(self.layout.config_file(name))

    def abort_file_present(self) -> bool:
        """True when the broker did not shut down cleanly (the tail may be torn)."""
        return self.layout.abort.exists()

    # -- walking the commitlog -----------------------------------------------------------

    def _locate(self, physical_offset: int) -> tuple[_Mapped, int]:
        index = bisect.bisect_right(self._starts, physical_offset) - 1
        if index < 0 or physical_offset >= self._commitlog[index].end:
            raise StoreError(
                f"commitlog offset {physical_offset} is outside the stored range "
                f"{self.min_physical_offset}..{self._commitlog[-1].end if self._commitlog else 0}"
            )
        mapped = self._commitlog[index]
        return mapped, physical_offset - mapped.start

    def _dispatch_info_at(self, physical_offset: int) -> DispatchInfo:
        """The dispatch fields of the record starting at ``physical_offset`` (validation's
        direct check of a consume queue or index entry); StoreError saying why not."""
        mapped, pos = self._locate(physical_offset)
        try:
            info = read_dispatch_info(mapped.buf, pos)
        except RecordError as exc:
            raise StoreError(f"{mapped.path.name}: {exc}") from None
        if info.physical_offset != physical_offset:
            raise StoreError(
                f"the record at {mapped.path.name} offset {pos} says it is at "
                f"{info.physical_offset}"
            )
        return info

    def _walk(
        self,
        start: int,
        decode: Callable[[Any, int], F],
        report: Report,
        unchecked: Callable[[Any, int], F] | None = None,
    ) -> Iterator[tuple[int, F]]:
        """``(physical offset, decoded)`` for records from ``start`` on, file after file.

        ``decode`` raises RecordError on a bad record; when ``unchecked`` decodes it
        anyway, the failure was the body CRC, reported and the record still yielded.
        """
        files = self._commitlog
        first = max(bisect.bisect_right(self._starts, start) - 1, 0)
        for index in range(first, len(files)):
            mapped = files[index]
            pos = max(start - mapped.start, 0)
            last = index == len(files) - 1
            yield from self._walk_file(mapped, pos, last, decode, unchecked, report)

    def _walk_file(
        self,
        mapped: _Mapped,
        pos: int,
        last: bool,
        decode: Callable[[Any, int], F],
        unchecked: Callable[[Any, int], F] | None,
        report: Report,
    ) -> Iterator[tuple[int, F]]:
        buf = mapped.buf
        limit = mapped.size
        path = mapped.path
        base = mapped.start
        while pos + _HEADER_SIZE <= limit:
            size, magic = peek_size_magic(buf, pos)
            if magic == MESSAGE_MAGIC:
                try:
                    record = decode(buf, pos)
                except RecordError as exc:
                    recovered = self._recover_record(mapped, pos, size, exc, unchecked, report)
                    if recovered is None:
                        return
                    if isinstance(recovered, int):
                        pos = recovered
                        continue
                    record = recovered
                if record.physical_offset != base + pos:
                    report(
                        ProblemKind.PHYSICAL_OFFSET_MISMATCH,
                        path,
                        pos,
                        f"record stored at commitlog offset {base + pos} says it is at "
                        f"{record.physical_offset}",
                    )
                yield base + pos, record
                pos += record.total_size
            elif magic == BLANK_MAGIC:
                if size != limit - pos:
                    report(
                        ProblemKind.SIZE_MISMATCH,
                        path,
                        pos,
                        f"BLANK record claims {size} bytes but {limit - pos} remain in the file",
                    )
                return
            elif size == 0 and magic == 0:
                self._check_tail(mapped, pos, last, report)
                return
            else:
                resume = _resume_position(mapped, pos, size)
                if resume is None and last:
                    self._check_tail(mapped, pos, last, report)
                    return
                report(
                    ProblemKind.BAD_MAGIC,
                    path,
                    pos,
                    f"unknown magic 0x{magic:08X}"
                    + (
                        ""
                        if resume
                        else f"; the rest of the file ({limit - pos} bytes) is not checked"
                    ),
                )
                if resume is None:
                    return
                pos = resume
        if pos < limit:
            self._check_tail(mapped, pos, last, report)
        elif not last:
            report(ProblemKind.MISSING_BLANK, path, pos, "file ends without a BLANK record")

    @staticmethod
    def _check_tail(mapped: _Mapped, pos: int, last: bool, report: Report) -> None:
        """The records of ``mapped`` end at ``pos``: only the last file may end without a
        BLANK record, and everything after must be zero."""
        _check_data_end(
            mapped,
            pos,
            last,
            ProblemKind.MISSING_BLANK,
            f"data ends {mapped.size - pos} bytes before the end of the file without a "
            "BLANK record",
            report,
        )

    def _recover_record(
        self,
        mapped: _Mapped,
        pos: int,
        size: int,
        error: RecordError,
        unchecked: Callable[[Any, int], F] | None,
        report: Report,
    ) -> F | int | None:
        """After a record failed to decode: the record (only its CRC was wrong), the
        position to resume at (framing broken but TOTALSIZE leads to another record), or
        None (the rest of the file cannot be walked)."""
        if unchecked is not None:
            try:
                record = unchecked(mapped.buf, pos)
            except RecordError:
                pass
            else:
                report(ProblemKind.CRC_MISMATCH, mapped.path, pos, str(error))
                return record
        if size <= _HEADER_SIZE or pos + size > mapped.size:
            report(
                ProblemKind.TRUNCATED_RECORD,
                mapped.path,
                pos,
                f"record claims {size} bytes, {mapped.size - pos} remain in the file; the "
                "rest of the file is not checked",
            )
            return None
        report(ProblemKind.SIZE_MISMATCH, mapped.path, pos, str(error))
        return _resume_position(mapped, pos, size)

    # -- consume queues ------------------------------------------------------------------

    def _queue_dirs(self) -> list[tuple[str, int, Path]]:
        return list_consume_queues(self.layout.consume_queue_root)

    def _queue_entries(
        self, topic: str, queue_id: int, start: int, end: int | None
    ) -> Iterator[tuple[int, CqEntry]]:
        for file_start, path in list_offset_files(self.layout.consume_queue_dir(topic, queue_id)):
            try:
                mapped = _Mapped(path, file_start)
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
                view = memoryview(mapped.buf)[
                    skip * CQ_STORE_UNIT_SIZE : count * CQ_STORE_UNIT_SIZE
                ]
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

    # -- validation ----------------------------------------------------------------------

    def validate(self) -> ValidationReport:
        """Check the whole store; see the module docstring.  Never raises on bad data."""
        report = ValidationReport(self.layout.root)
        problems = _Problems()
        for path, reason in self._commitlog_errors:
            problems(ProblemKind.UNREADABLE_FILE, path, 0, reason)
        _check_queue_files(self._commitlog, "commitlog", 1, problems)
        queues = self._open_queues(problems)
        index_files = self._open_index_files(problems)
        try:
            self._validate_commitlog(report, queues, index_files, problems)
            for queue in queues.values():
                self._validate_queue(queue, report, problems)
            report.consume_queues = len(queues)
        finally:
            for queue in queues.values():
                for mapped in queue.files:
                    mapped.close()
            for index_file in index_files:
                index_file.close()
        self._validate_checkpoint(problems)
        self._validate_config(problems)
        report.problems = problems.finish()
        return report

    def _open_queues(self, report: Report) -> dict[tuple[str, int], _Queue]:
        queues = {}
        for topic, queue_id, directory in self._queue_dirs():
            files = []
            for start, path in list_offset_files(directory):
                try:
                    files.append(_Mapped(path, start))
                except OSError as exc:
                    report(ProblemKind.UNREADABLE_FILE, path, 0, exc.strerror or str(exc))
            _check_queue_files(files, "consume queue", CQ_STORE_UNIT_SIZE, report)
            queues[topic, queue_id] = _Queue(topic, queue_id, directory, files)
        return queues

    def _open_index_files(self, report: Report = _ignore) -> list[IndexFile]:
        files = []
        for path in list_index_files(self.layout.index):
            try:
                index_file = IndexFile.open_read_only(path, self._hash_slot_num, self._index_num)
            except StoreError as exc:
                report(ProblemKind.WRONG_FILE_SIZE, path, 0, str(exc))
                continue
            problem = index_file.header_problem()
            if problem is not None:
                report(ProblemKind.INDEX_BAD_HEADER, path, 0, problem)
            files.append(index_file)
        return files

    def _validate_commitlog(
        self,
        report: ValidationReport,
        queues: dict[tuple[str, int], _Queue],
        index_files: list[IndexFile],
        problems: Report,
    ) -> None:
        report.commitlog_files = len(self._commitlog)
        report.min_physical_offset = self.min_physical_offset
        with contextlib.closing(self._index_entries(index_files)) as index_entries:
            self._walk_and_match(report, queues, index_entries, problems)
        report.bytes_scanned = sum(f.size for f in self._commitlog)
        report.index_files = len(index_files)
        for queue in queues.values():
            if queue.missing:
                first_physical, count, first_queue_offset = queue.missing
                problems(
                    ProblemKind.CQ_MISSING_ENTRY,
                    queue.directory,
                    0,
                    f"{count} records of {queue.topic} queue {queue.queue_id} have no consume "
                    f"queue entry (first: queue offset {first_queue_offset} at commitlog "
                    f"offset {first_physical})",
                )

    def _walk_and_match(
        self,
        report: ValidationReport,
        queues: dict[tuple[str, int], _Queue],
        index_entries: Iterator[_IndexHit],
        problems: Report,
    ) -> None:
        """Walk the commitlog, matching each record with its consume queue entry and merging
        the index entries in (see the module docstring)."""
        pending = next(index_entries, None)
        records = 0
        end = self.min_physical_offset
        for physical_offset, info in self._walk(
            self.min_physical_offset, _dispatch_info, problems, _dispatch_info_unchecked
        ):
            records += 1
            end = physical_offset + info.total_size
            if info.sys_flag & TRANSACTION_TYPE_MASK not in _NOT_DISPATCHED:
                queue = queues.get((info.topic, info.queue_id))
                located = None if queue is None else queue.locate(info.queue_offset)
                if located is None:
                    self._note_missing_entry(queues, info, physical_offset)
                else:
                    mapped, pos = located
                    phy, size, _ = ENTRY.unpack_from(mapped.buf, pos)
                    if phy == physical_offset and size == info.total_size:
                        queue.matched += 1  # type: ignore[union-attr]
                    elif not is_valid_entry(phy, size):
                        self._note_missing_entry(queues, info, physical_offset)
            while pending is not None and pending[2].physical_offset < physical_offset:
                self._check_index_entry(pending, problems)
                report.index_entries += 1
                pending = next(index_entries, None)
            if pending is not None and pending[2].physical_offset == physical_offset:
                hashes = _record_key_hashes(info)
                while pending is not None and pending[2].physical_offset == physical_offset:
                    if pending[2].key_hash not in hashes:
                        self._report_index_key_mismatch(pending, info, problems)
                    report.index_entries += 1
                    pending = next(index_entries, None)
        while pending is not None:
            self._check_index_entry(pending, problems)
            report.index_entries += 1
            pending = next(index_entries, None)
        report.records = records
        report.max_physical_offset = end

    def _note_missing_entry(
        self, queues: dict[tuple[str, int], _Queue], info: DispatchInfo, physical_offset: int
    ) -> None:
        key = (info.topic, info.queue_id)
        queue = queues.get(key)
        if queue is None:
            directory = self.layout.consume_queue_dir(info.topic, info.queue_id)
            queue = queues[key] = _Queue(info.topic, info.queue_id, directory, [])
        if queue.missing:
            queue.missing[1] += 1
        else:
            queue.missing = [physical_offset, 1, info.queue_offset]

    def _validate_queue(self, queue: _Queue, report: ValidationReport, problems: Report) -> None:
        """Count the queue's entries pointing into the commitlog; if not all were matched by
        a record during the walk, check each one against the record it points at."""
        commitlog_min = self.min_physical_offset
        expected = 0
        for index, mapped in enumerate(queue.files):
            end = 0
            for pos, phy, size in _valid_entries(mapped):
                end = pos + CQ_STORE_UNIT_SIZE
                if size != PRE_BLANK_SIZE and phy >= commitlog_min:
                    expected += 1
            report.consume_queue_entries += end // CQ_STORE_UNIT_SIZE
            if end + CQ_STORE_UNIT_SIZE > mapped.size:
                continue
            _check_data_end(
                mapped,
                end,
                index == len(queue.files) - 1,
                ProblemKind.CQ_HOLE,
                "empty entry before the end of a consume queue file that is not the last",
                problems,
                CQ_STORE_UNIT_SIZE,
            )
        if expected == queue.matched:
            return
        for mapped in queue.files:
            for pos, phy, size in _valid_entries(mapped):
                if size != PRE_BLANK_SIZE and phy >= commitlog_min:
                    queue_offset = (mapped.start + pos) // CQ_STORE_UNIT_SIZE
                    self._check_queue_entry(queue, mapped, pos, phy, size, queue_offset, problems)

    def _check_queue_entry(
        self,
        queue: _Queue,
        mapped: _Mapped,
        pos: int,
        phy: int,
        size: int,
        queue_offset: int,
        problems: Report,
    ) -> None:
        where = f"queue offset {queue_offset} points at commitlog offset {phy}"
        try:
            info = self._dispatch_info_at(phy)
        except StoreError as exc:
            problems(ProblemKind.CQ_ENTRY_NOT_A_RECORD, mapped.path, pos, f"{where}: {exc}")
            return
        if info.total_size != size:
            problems(
                ProblemKind.CQ_SIZE_MISMATCH,
                mapped.path,
                pos,
                f"{where} with size {size}, but that record is {info.total_size} bytes",
            )
        elif (info.topic, info.queue_id) != (queue.topic, queue.queue_id):
            problems(
                ProblemKind.CQ_WRONG_QUEUE,
                mapped.path,
                pos,
                f"{where}, a record of {info.topic} queue {info.queue_id}, "
                f"not {queue.topic} queue {queue.queue_id}",
            )
        elif info.queue_offset != queue_offset:
            problems(
                ProblemKind.CQ_QUEUE_OFFSET_MISMATCH,
                mapped.path,
                pos,
                f"{where}, whose queue offset is {info.queue_offset}",
            )

    # -- index ---------------------------------------------------------------------------

    @staticmethod
    def _index_entries(index_files: list[IndexFile]) -> Generator[_IndexHit, None, None]:
        for index_file in index_files:
            for number, entry in index_file.entries():
                yield index_file, number, entry

    def _check_index_entry(self, hit: _IndexHit, problems: Report) -> None:
        """An index entry not at the start of a walked record: check it directly."""
        index_file, number, entry = hit
        if entry.physical_offset < self.min_physical_offset:
            return
        try:
            info = self._dispatch_info_at(entry.physical_offset)
        except StoreError as exc:
            problems(
                ProblemKind.INDEX_ENTRY_NOT_A_RECORD,
                index_file.path,
                index_file.entry_position(number),
                f"entry {number} points at commitlog offset {entry.physical_offset}: {exc}",
            )
            return
        if entry.key_hash not in _record_key_hashes(info):
            self._report_index_key_mismatch(hit, info, problems)

    @staticmethod
    def _report_index_key_mismatch(hit: _IndexHit, info: DispatchInfo, problems: Report) -> None:
        index_file, number, entry = hit
        problems(
            ProblemKind.INDEX_KEY_MISMATCH,
            index_file.path,
            index_file.entry_position(number),
            f"entry {number} (hash {entry.key_hash}) points at commitlog offset "
            f"{entry.physical_offset}, a record of {info.topic} without such a key",
        )

    # -- checkpoint and config -----------------------------------------------------------

    def _validate_checkpoint(self, problems: Report) -> None:
        path = self.layout.checkpoint
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            return
        except OSError as exc:
            problems(ProblemKind.UNREADABLE_FILE, path, 0, exc.strerror or str(exc))
            return
        if size != CHECKPOINT_SIZE:
            problems(
                ProblemKind.WRONG_FILE_SIZE,
                path,
                0,
                f"checkpoint is {size} bytes, not {CHECKPOINT_SIZE}",
            )

    def _validate_config(self, problems: Report) -> None:
        for name in CONFIG_FILES:
            path = self.layout.config_file(name)
            try:
                loaded = self.load_config(name)
            except ConfigFileError as exc:
                problems(ProblemKind.BAD_CONFIG, path, 0, str(exc))
                continue
            if loaded is not None and loaded.from_backup:
                problems(
                    ProblemKind.BAD_CONFIG,
                    path,
                    0,
                    f"missing, empty or unreadable; the broker would load {loaded.path.name}",
                )
