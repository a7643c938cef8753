"""Offline, read-only access to a store directory: ours or one written by Apache RocketMQ.

:class:`StoreReader` opens every file with ``O_RDONLY`` and maps it ``ACCESS_READ``; it never
creates, locks or writes anything, so it is safe on a copy, on a stopped broker's directory,
and (with the usual caveat that the tail may move) next to a running one.  Every size comes
from the files themselves: commitlog and consume queue files are as long as they are, index
geometry is inferred from the file size (:meth:`~rmq.store.indexfile.IndexFile.open_read_only`).
Whole records are decoded only by the common codec (:mod:`rmq.common.message`).

Reading: the files with their ranges; records in commitlog order with their physical offsets
(a BLANK record sends the walk to the next file; the walk ends at a zero header or an unknown
magic in the last file); a queue's messages through its consume queue, and its offset range
(binary searches, as a broker computes it); a message by physical offset or offset message
id; messages by key through the index files, plus a scan of the commitlog tail the index does
not cover (or of everything when there is no index); the checkpoint; the ``config/*.json``
files (falling back to ``.bak`` like the broker); whether a process holds the store's
``lock`` now (asked with ``F_GETLK`` on a read-only descriptor, which never takes the lock).

Scanning: every walk over the commitlog goes through one loop that frames each record with
the common walker (:func:`rmq.common.recordwalk.iter_frames`), checks optionally its body CRC
(``zlib.crc32`` on a memoryview slice), and yields a
:class:`RecordFrame`: header fields, topic and the raw property string, without decoding hosts,
body or properties.  A record the loop cannot frame is handed to the common decoder, whose
error message is what gets reported.  Scans that want whole records decode only the frames
they keep; :func:`property_value` reads one property from the raw string without building the
map.  Long scans report their progress through a callback.

Validation (:meth:`StoreReader.validate`) checks the whole store in one pass over the
commitlog and reports every problem as a :class:`Problem` (kind, file, byte offset in that
file, message); corrupt input never raises.  The consume queue and index checks ride along
with the scan instead of re-reading records:

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
import fcntl
import itertools
import mmap
import os
import struct
import zlib
from collections import Counter
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, NamedTuple

from rmq.common.javahash import index_key_hash
from rmq.common.message import DispatchInfo, MessageRecord, decode_record, read_dispatch_info
from rmq.common.msgconst import (
    KEY_SEPARATOR,
    PROPERTY_KEYS,
    PROPERTY_TAGS,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
)
from rmq.common.msgid import decode_offset_msg_id
from rmq.common.properties import decode_properties_bytes
from rmq.common.recordwalk import (
    BLANK_MAGIC,
    CRC_MASK,
    MESSAGE_MAGIC,
    RecordError,
    iter_frames,
    peek_size_magic,
)
from rmq.common.sysflag import (
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    TRANSACTION_TYPE_MASK,
)
from rmq.store.checkpoint import CHECKPOINT_FILE_SIZE, checkpoint_timestamps
from rmq.store.configfile import ConfigFileError, LoadedConfig, load_config
from rmq.store.consumequeue import (
    CQ_STORE_UNIT_SIZE,
    ENTRY,
    PRE_BLANK_SIZE,
    CqEntry,
    is_valid_entry,
)
from rmq.store.errors import StoreError
from rmq.store.indexfile import ENTRY as ENTRY_INDEX
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
CONFIG_FILES: Final = (
    TOPICS_JSON,
    CONSUMER_OFFSET_JSON,
    SUBSCRIPTION_GROUP_JSON,
    CONSUMER_FILTER_JSON,
    DELAY_OFFSET_JSON,
)
PROGRESS_STEP: Final = 8 << 20
"""Scans report progress at least every this many bytes (and at every file boundary)."""
_HEADER_SIZE: Final = 8
_ZERO_CHUNK: Final = bytes(1 << 20)
_NOT_DISPATCHED: Final = (TRANSACTION_PREPARED_TYPE, TRANSACTION_ROLLBACK_TYPE)
_MAX_TIMESTAMP: Final = (1 << 63) - 1
_BEYOND_ANY_OFFSET: Final = (1 << 63) - 1
_LONG: Final = struct.Struct(">q")
# struct flock on Linux: l_type, l_whence, l_start, l_len, l_pid (+ padding).
_FLOCK: Final = struct.Struct("hhqqi4x")


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


class LockStatus(NamedTuple):
    """Whether a process holds the store's ``lock`` file now, and its pid when known."""

    locked: bool
    pid: int | None


class RecordFrame(NamedTuple):
    """A record as a scan sees it (see :meth:`StoreReader.scan`): header fields, topic and
    the raw UTF-8 property string, without hosts, body or decoded properties.

    ``physical_offset`` is where the record sits (a record whose PHYSICALOFFSET field says
    otherwise is reported by the scan); ``body_crc_ok`` is True when the CRC was not checked.
    """

    physical_offset: int
    total_size: int
    queue_id: int
    queue_offset: int
    sys_flag: int
    store_timestamp: int
    topic: str
    raw_properties: bytes
    body_crc_ok: bool

    @property
    def tags(self) -> str | None:
        return property_value(self.raw_properties, PROPERTY_TAGS)

    @property
    def keys(self) -> list[str]:
        """KEYS split on spaces, empty tokens dropped (as :attr:`MessageRecord.keys`)."""
        keys = property_value(self.raw_properties, PROPERTY_KEYS)
        return [key for key in keys.split(KEY_SEPARATOR) if key] if keys else []

    @property
    def uniq_key(self) -> str | None:
        return property_value(self.raw_properties, PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)


Progress = Callable[[int, int], None]
"""``progress(bytes done, bytes in total)`` of a scan."""
_IndexHit = tuple[IndexFile, int, tuple[int, int, int, int]]
"""An index entry during validation: its file, number and raw fields (as :class:`IndexEntry`)."""
Report = Callable[[ProblemKind, Path, int, str], None]
_new_frame: Final = tuple.__new__


def _ignore(kind: ProblemKind, path: Path, offset: int, message: str) -> None:
    """A :data:`Report` for reads that only want the good records."""


def property_value(raw: bytes, name: str) -> str | None:
    """The value of property ``name`` in a raw property string, by Java's rules (the last
    segment ``name 0x01 value`` with a non-empty value wins), without decoding the others.

    The last segment of that name is found with one ``rfind``; only when its value is empty
    (an earlier one may then count) is the whole string decoded.
    """
    needles = _NEEDLES.get(name)
    if needles is None:
        head = name.encode() + b"\x01"
        needles = _NEEDLES[name] = (b"\x02" + head, head)
    needle, head = needles
    found = raw.rfind(needle)
    if found >= 0:
        start = found + len(needle)
    elif raw.startswith(head):
        start = len(head)
    else:
        return None
    end = raw.find(b"\x02", start)
    if end < 0:
        end = len(raw)
    if end > start:
        return raw[start:end].decode("utf-8", "replace")
    return decode_properties_bytes(raw).get(name)


_NEEDLES: dict[str, tuple[bytes, bytes]] = {}


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


def _key_hashes(topic: str, keys: str | None, uniq_key: str | None) -> list[int]:
    """Index hashes of every ``topic#key`` a record is indexed under: its UNIQ_KEY and its
    KEYS tokens, in the order the writer indexes them."""
    prefix = index_key(topic, "")
    hashes = [index_key_hash(prefix + uniq_key)] if uniq_key else []
    if keys:
        if KEY_SEPARATOR in keys:
            hashes += [index_key_hash(prefix + key) for key in keys.split(KEY_SEPARATOR) if key]
        else:
            hashes.append(index_key_hash(prefix + keys))
    return hashes


def _frame_key_hashes(frame: RecordFrame) -> list[int]:
    raw = frame.raw_properties
    return _key_hashes(
        frame.topic,
        property_value(raw, PROPERTY_KEYS),
        property_value(raw, PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX),
    )


def _valid_entries(mapped: _Mapped) -> Iterator[tuple[int, int, int]]:
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


def _entry(mapped: _Mapped, number: int) -> CqEntry:
    """Entry ``number`` of a consume queue file (counted from the file's start)."""
    return CqEntry._make(ENTRY.unpack_from(mapped.buf, number * CQ_STORE_UNIT_SIZE))


def _entry_count(mapped: _Mapped) -> int:
    """How many entries a consume queue file holds before its first empty one (entries are
    written one after another, so a binary search finds the end the broker's scan finds)."""
    return _first_true(
        0,
        mapped.size // CQ_STORE_UNIT_SIZE,
        lambda number: not is_valid_entry(*_entry(mapped, number)[:2]),
    )


def _first_in_commitlog(mapped: _Mapped, count: int, commitlog_min: int) -> int:
    """The first of the first ``count`` entries of a consume queue file that is a message at
    or past ``commitlog_min`` (entries point at increasing offsets), ``count`` if none is."""

    def in_commitlog(number: int) -> bool:
        entry = _entry(mapped, number)
        return entry.size != PRE_BLANK_SIZE and entry.physical_offset >= commitlog_min

    return _first_true(0, count, in_commitlog)


def _pre_blank_count(mapped: _Mapped, count: int) -> int:
    """How many of the first ``count`` entries of a consume queue file are pre-blanks (they
    come first)."""
    return _first_true(0, count, lambda number: _entry(mapped, number).size != PRE_BLANK_SIZE)


def _record_error(buf: Any, pos: int) -> str:
    """Why the record at ``pos`` is not valid, in the common decoder's words."""
    try:
        read_dispatch_info(buf, pos, check_crc=True)
    except RecordError as exc:
        return str(exc)
    return f"record at offset {pos} is malformed"


class _Queue:
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

    def __init__(self, topic: str, queue_id: int, directory: Path, files: list[_Mapped]) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.directory = directory
        self.files = files
        self.starts = [f.start for f in files]
        self.matched = 0
        # Records without an entry: [first physical offset, count, first queue offset].
        self.missing: list[int] = []
        self._current: _Mapped | None = None

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

    def close(self) -> None:
        for mapped in self.files:
            mapped.close()


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
        self._topic_names: dict[bytes, str] = {}

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

    def consume_queue_file_info(self, topic: str, queue_id: int) -> list[QueueFileInfo]:
        """The files of a consume queue with what they hold (binary searches, not scans)."""
        queue = self._load_queue(topic, queue_id)
        try:
            infos = []
            for mapped in queue.files:
                count = _entry_count(mapped)
                blanks = _pre_blank_count(mapped, count)
                infos.append(
                    QueueFileInfo(
                        mapped.path,
                        mapped.start,
                        mapped.size,
                        count,
                        blanks,
                        _entry(mapped, blanks).physical_offset if blanks < count else None,
                        _entry(mapped, count - 1).physical_offset if blanks < count else None,
                    )
                )
            return infos
        finally:
            queue.close()

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
        return self.data_end(self.newest_dispatched_offset())[1]

    def data_end(self, start_hint: int | None = None) -> tuple[RecordFrame | None, int]:
        """The newest record (None when there is none) and the end of valid data, just past
        the last good record of the last file (its start when it holds no record).

        ``start_hint`` is the offset of a record known to be stored (the newest consume
        queue entry, :meth:`newest_dispatched_offset`): the walk starts there instead of at
        the beginning of its file.  A hint that is not a record is ignored.
        """
        if not self._commitlog:
            return None, 0
        if start_hint is not None:
            try:
                self._dispatch_info_at(start_hint)
            except StoreError:
                start_hint = None
        newest = None
        end = self._commitlog[-1].start
        for index in range(len(self._commitlog) - 1, -1, -1):
            mapped = self._commitlog[index]
            last = index == len(self._commitlog) - 1
            pos = 0
            if start_hint is not None and mapped.start <= start_hint < mapped.end:
                pos = start_hint - mapped.start
            for newest in self._walk_file(mapped, pos, last, _ignore, False, None):
                if last:
                    end = newest.physical_offset + newest.total_size
            if newest is not None:
                break
        return newest, end

    def newest_dispatched_offset(self) -> int | None:
        """The commitlog offset of the newest consume queue entry of any queue, if any."""
        newest = None
        for topic, queue_id in self.consume_queues():
            last = self.queue_range(topic, queue_id).last_entry
            if last is not None and last.size != PRE_BLANK_SIZE:
                newest = max(newest or 0, last.physical_offset)
        return newest

    def lock_status(self) -> LockStatus | None:
        """Whether a process holds the store's ``lock`` file (a running broker); None when
        there is no lock file.

        The file is opened read-only and asked with ``F_GETLK`` which lock a writer would
        conflict with: nothing is written and no lock is taken.  The answer is about other
        processes (POSIX locks never conflict with the caller's own), and closing the
        descriptor drops any lock the calling process holds on the file, so a process that
        runs the store itself must not ask.
        """
        path = self.layout.lock
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StoreError(f"cannot open {path}: {exc.strerror}") from None
        try:
            query = _FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, 0, 1, 0)
            answer = fcntl.fcntl(fd, fcntl.F_GETLK, query)
        except OSError as exc:
            raise StoreError(f"cannot test the lock of {path}: {exc.strerror}") from None
        finally:
            os.close(fd)
        lock_type, _, _, _, pid = _FLOCK.unpack(answer)
        if lock_type == fcntl.F_UNLCK:
            return LockStatus(False, None)
        return LockStatus(True, pid if pid > 0 else None)

    # -- records -------------------------------------------------------------------------

    def scan(
        self,
        start: int | None = None,
        *,
        check_crc: bool = False,
        report: Report | None = None,
        progress: Progress | None = None,
    ) -> Iterator[RecordFrame]:
        """A :class:`RecordFrame` for every record from ``start`` (the first record by
        default) in commitlog order; damaged regions are skipped and passed to ``report``
        (with ``check_crc``, records whose body CRC is wrong too, and still yielded)."""
        first = self.min_physical_offset if start is None else start
        return self._walk(first, report or _ignore, check_crc, progress)

    def iter_records(
        self, start: int | None = None, *, report: Report | None = None
    ) -> Iterator[tuple[int, MessageRecord]]:
        """``(physical offset, record)`` for every record from ``start`` (the first record
        by default) in commitlog order; damaged regions are skipped and passed to
        ``report``."""
        for frame in self.scan(start, report=report):
            yield frame.physical_offset, self.message_at(frame.physical_offset)

    def message_at(self, physical_offset: int) -> MessageRecord:
        """The record at ``physical_offset``; :class:`StoreError` if there is none."""
        mapped, pos = self._locate(physical_offset)
        try:
            return decode_record(mapped.buf, pos)
        except RecordError as exc:
            raise StoreError(
                f"no message at commitlog offset {physical_offset} ({mapped.path}@{pos}): {exc}"
            ) from None

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
        queue_range = self.queue_range(topic, queue_id)
        return queue_range.min_offset, queue_range.max_offset

    def queue_range(self, topic: str, queue_id: int) -> QueueRange:
        """A queue's min and max offsets (see :meth:`queue_offsets`) and its newest entry,
        found by binary searches as the broker does: the max from the entries of the last
        file, the min as the first message entry pointing at or past the commitlog min."""
        queue = self._load_queue(topic, queue_id)
        try:
            if not queue.files:
                return QueueRange(0, 0, None)
            last = queue.files[-1]
            max_offset = last.start // CQ_STORE_UNIT_SIZE + _entry_count(last)
            newest = None
            for mapped in reversed(queue.files):
                count = _entry_count(mapped)
                if count:
                    newest = _entry(mapped, count - 1)
                    break
            return QueueRange(self._min_queue_offset(queue, max_offset), max_offset, newest)
        finally:
            queue.close()

    def _min_queue_offset(self, queue: _Queue, max_offset: int) -> int:
        """The first message entry pointing at or past the commitlog min, searched file by
        file (a missing file in between must not mislead the binary search); ``max_offset``
        when there is none."""
        for mapped in queue.files:
            count = _entry_count(mapped)
            first = _first_in_commitlog(mapped, count, self.min_physical_offset)
            if first < count:
                return mapped.start // CQ_STORE_UNIT_SIZE + first
        return max_offset

    def query_by_key(
        self,
        topic: str,
        key: str,
        max_num: int = 64,
        begin: int = 0,
        end: int = _MAX_TIMESTAMP,
        *,
        use_index: bool = True,
        progress: Progress | None = None,
    ) -> list[MessageRecord]:
        """Messages of ``topic`` with ``key`` (a KEYS token or the UNIQ_KEY) stored within
        ``[begin, end]``: the newest ``max_num``, in commitlog order.

        Looks the key up in the index files, re-checking each hit's topic and keys, and scans
        the commitlog past the newest indexed message (all of it without an index, or when
        ``use_index`` is False).
        """
        found: dict[int, MessageRecord] = {}

        def take(record: MessageRecord) -> None:
            if (
                record.topic == topic
                and begin <= record.store_timestamp <= end
                and (key == record.uniq_key or key in record.keys)
            ):
                found[record.physical_offset] = record

        indexed_up_to = -1
        index_files = self._open_index_files() if use_index else []
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
        start = max(indexed_up_to, self.min_physical_offset)
        for frame in self.scan(start, progress=progress):
            if (
                frame.physical_offset > indexed_up_to
                and frame.topic == topic
                and begin <= frame.store_timestamp <= end
                and (key == frame.uniq_key or key in frame.keys)
            ):
                take(self.message_at(frame.physical_offset))
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
        timestamps = checkpoint_timestamps(data)
        if timestamps is None:
            return None
        return Checkpoint(*timestamps)

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
        self, start: int, report: Report, check_crc: bool, progress: Progress | None
    ) -> Iterator[RecordFrame]:
        """Frames of the records from ``start`` on, file after file (see :meth:`scan`)."""
        files = self._commitlog
        if not files:
            return
        first = max(bisect.bisect_right(self._starts, start) - 1, 0)
        origin = max(start, files[first].start)
        total = files[-1].end - origin
        tick = None
        if progress is not None:
            reporter = progress

            def tick(physical_offset: int) -> None:
                reporter(physical_offset - origin, total)

        for index in range(first, len(files)):
            mapped = files[index]
            pos = max(start - mapped.start, 0)
            if tick is not None:
                tick(mapped.start + pos)
            last = index == len(files) - 1
            yield from self._walk_file(mapped, pos, last, report, check_crc, tick)
        if progress is not None:
            progress(total, total)

    def _walk_file(
        self,
        mapped: _Mapped,
        pos: int,
        last: bool,
        report: Report,
        check_crc: bool,
        tick: Callable[[int], None] | None,
    ) -> Iterator[RecordFrame]:
        """The records of one file from ``pos``: the hot loop of every scan.

        Records are framed by :func:`rmq.common.recordwalk.iter_frames`; where it stops, the
        header there says what follows (a damaged record, whose error message the common
        decoder gives, a BLANK, zeros or an unknown magic).
        """
        buf = mapped.buf
        limit = mapped.size
        base = mapped.start
        path = mapped.path
        topics = self._topic_names
        view = memoryview(buf) if check_crc else None
        unpack_long = _LONG.unpack_from
        next_tick = pos + PROGRESS_STEP
        try:
            while pos + _HEADER_SIZE <= limit:
                for at, end, prefix, layout, body_pos, body_end, topic_end in iter_frames(
                    buf, pos, limit
                ):
                    if at >= next_tick and tick is not None:
                        tick(base + at)
                        next_tick = at + PROGRESS_STEP
                    crc_ok = True
                    if (
                        view is not None
                        and zlib.crc32(view[body_pos:body_end]) & CRC_MASK != prefix[2]
                    ):
                        crc_ok = False
                        report(ProblemKind.CRC_MISMATCH, path, at, _record_error(buf, at))
                    if prefix[6] != base + at:
                        report(
                            ProblemKind.PHYSICAL_OFFSET_MISMATCH,
                            path,
                            at,
                            f"record stored at commitlog offset {base + at} says it is at "
                            f"{prefix[6]}",
                        )
                    topic_bytes = buf[body_end + 1 : topic_end]
                    topic = topics.get(topic_bytes)
                    if topic is None:
                        topic = topics[topic_bytes] = str(topic_bytes, "utf-8", "replace")
                    yield _new_frame(
                        RecordFrame,
                        (
                            base + at,
                            end - at,
                            prefix[3],
                            prefix[5],
                            prefix[7],
                            unpack_long(buf, at + layout.store_timestamp_pos)[0],
                            topic,
                            buf[topic_end + 2 : end],
                            crc_ok,
                        ),
                    )
                    pos = end
                if pos + _HEADER_SIZE > limit:
                    break
                size, magic = peek_size_magic(buf, pos)
                if magic == MESSAGE_MAGIC:
                    resume = self._bad_record(mapped, pos, size, report)
                    if resume is None:
                        return
                    pos = resume
                elif magic == BLANK_MAGIC:
                    if size != limit - pos:
                        report(
                            ProblemKind.SIZE_MISMATCH,
                            path,
                            pos,
                            f"BLANK record claims {size} bytes but {limit - pos} remain in "
                            "the file",
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
        finally:
            if view is not None:
                view.release()

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

    @staticmethod
    def _bad_record(mapped: _Mapped, pos: int, size: int, report: Report) -> int | None:
        """After a record failed its checks: the position to resume at (its TOTALSIZE leads
        to another record), or None (the rest of the file cannot be walked)."""
        if size <= _HEADER_SIZE or pos + size > mapped.size:
            report(
                ProblemKind.TRUNCATED_RECORD,
                mapped.path,
                pos,
                f"record claims {size} bytes, {mapped.size - pos} remain in the file; the "
                "rest of the file is not checked",
            )
            return None
        report(ProblemKind.SIZE_MISMATCH, mapped.path, pos, _record_error(mapped.buf, pos))
        return _resume_position(mapped, pos, size)

    # -- consume queues ------------------------------------------------------------------

    def _queue_dirs(self) -> list[tuple[str, int, Path]]:
        return list_consume_queues(self.layout.consume_queue_root)

    def _map_queue(
        self, topic: str, queue_id: int, directory: Path, report: Report | None
    ) -> _Queue:
        """Map a consume queue's files; an unreadable file is passed to ``report`` and left
        out, or without ``report`` raises :class:`StoreError`."""
        files = []
        try:
            for start, path in list_offset_files(directory):
                try:
                    files.append(_Mapped(path, start))
                except OSError as exc:
                    if report is None:
                        raise StoreError(f"cannot read {path}: {exc.strerror}") from None
                    report(ProblemKind.UNREADABLE_FILE, path, 0, exc.strerror or str(exc))
        except StoreError:
            for mapped in files:
                mapped.close()
            raise
        return _Queue(topic, queue_id, directory, files)

    def _load_queue(self, topic: str, queue_id: int) -> _Queue:
        directory = self.layout.consume_queue_dir(topic, queue_id)
        return self._map_queue(topic, queue_id, directory, None)

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

    def validate(self, progress: Progress | None = None) -> ValidationReport:
        """Check the whole store; see the module docstring.  Never raises on bad data.

        ``progress`` follows the commitlog scan, which is nearly all of the work.
        """
        report = ValidationReport(self.layout.root)
        problems = _Problems()
        for path, reason in self._commitlog_errors:
            problems(ProblemKind.UNREADABLE_FILE, path, 0, reason)
        _check_queue_files(self._commitlog, "commitlog", 1, problems)
        queues = self._open_queues(problems)
        index_files = self._open_index_files(problems)
        try:
            self._validate_commitlog(report, queues, index_files, problems, progress)
            for queue in queues.values():
                self._validate_queue(queue, report, problems)
            report.consume_queues = len(queues)
        finally:
            for queue in queues.values():
                queue.close()
            for index_file in index_files:
                index_file.close()
        self._validate_checkpoint(problems)
        self._validate_config(problems)
        report.problems = problems.finish()
        return report

    def _open_queues(self, report: Report) -> dict[tuple[str, int], _Queue]:
        queues = {}
        for topic, queue_id, directory in self._queue_dirs():
            queue = self._map_queue(topic, queue_id, directory, report)
            _check_queue_files(queue.files, "consume queue", CQ_STORE_UNIT_SIZE, report)
            queues[topic, queue_id] = queue
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
        progress: Progress | None,
    ) -> None:
        report.commitlog_files = len(self._commitlog)
        report.min_physical_offset = self.min_physical_offset
        with contextlib.closing(self._index_entries(index_files)) as index_entries:
            self._walk_and_match(report, queues, index_entries, problems, progress)
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
        progress: Progress | None,
    ) -> None:
        """Walk the commitlog, matching each record with its consume queue entry and merging
        the index entries in (see the module docstring)."""
        pending = next(index_entries, None)
        pending_offset = _BEYOND_ANY_OFFSET if pending is None else pending[2][1]
        records = 0
        index_entries_seen = 0
        end = self.min_physical_offset
        for frame in self._walk(self.min_physical_offset, problems, True, progress):
            physical_offset, total_size, queue_id, queue_offset, sys_flag, _, topic, _, _ = frame
            records += 1
            end = physical_offset + total_size
            if sys_flag & TRANSACTION_TYPE_MASK not in _NOT_DISPATCHED:
                queue = queues.get((topic, queue_id))
                fields = None if queue is None else queue.fields_at(queue_offset)
                if fields is not None and fields[0] == physical_offset and fields[1] == total_size:
                    queue.matched += 1  # type: ignore[union-attr]
                elif fields is None or not is_valid_entry(fields[0], fields[1]):
                    self._note_missing_entry(queues, frame)
            if pending_offset > physical_offset:
                continue
            while pending is not None and pending_offset < physical_offset:
                self._check_index_entry(pending, problems)
                index_entries_seen += 1
                pending = next(index_entries, None)
                pending_offset = _BEYOND_ANY_OFFSET if pending is None else pending[2][1]
            if pending_offset == physical_offset:
                hashes = _frame_key_hashes(frame)
                while pending is not None and pending_offset == physical_offset:
                    if pending[2][0] not in hashes:
                        self._report_index_key_mismatch(pending, topic, problems)
                    index_entries_seen += 1
                    pending = next(index_entries, None)
                    pending_offset = _BEYOND_ANY_OFFSET if pending is None else pending[2][1]
        while pending is not None:
            self._check_index_entry(pending, problems)
            index_entries_seen += 1
            pending = next(index_entries, None)
        report.records = records
        report.index_entries = index_entries_seen
        report.max_physical_offset = end

    def _note_missing_entry(
        self, queues: dict[tuple[str, int], _Queue], frame: RecordFrame
    ) -> None:
        key = (frame.topic, frame.queue_id)
        queue = queues.get(key)
        if queue is None:
            directory = self.layout.consume_queue_dir(frame.topic, frame.queue_id)
            queue = queues[key] = _Queue(frame.topic, frame.queue_id, directory, [])
        if queue.missing:
            queue.missing[1] += 1
        else:
            queue.missing = [frame.physical_offset, 1, frame.queue_offset]

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
        """Every entry of the index files in the order written, read straight from a mapping
        of each file (the validation walk takes one or two per record)."""
        for index_file in index_files:
            first = index_file.entry_position(1)
            stop = index_file.entry_position(min(index_file.index_count, index_file.index_num))
            if stop <= first:
                continue
            try:
                mapped = _Mapped(index_file.path, 0)
            except OSError:
                continue
            try:
                with memoryview(mapped.buf) as view, view[first:stop] as region:
                    yield from zip(
                        itertools.repeat(index_file),
                        itertools.count(1),
                        ENTRY_INDEX.iter_unpack(region),
                    )
            finally:
                mapped.close()

    def _check_index_entry(self, hit: _IndexHit, problems: Report) -> None:
        """An index entry not at the start of a walked record: check it directly."""
        index_file, number, fields = hit
        entry = IndexEntry._make(fields)
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
        if entry.key_hash not in _key_hashes(info.topic, info.keys, info.uniq_key):
            self._report_index_key_mismatch(hit, info.topic, problems)

    @staticmethod
    def _report_index_key_mismatch(hit: _IndexHit, topic: str, problems: Report) -> None:
        index_file, number, fields = hit
        entry = IndexEntry._make(fields)
        problems(
            ProblemKind.INDEX_KEY_MISMATCH,
            index_file.path,
            index_file.entry_position(number),
            f"entry {number} (hash {entry.key_hash}) points at commitlog offset "
            f"{entry.physical_offset}, a record of {topic} without such a key",
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
        if size != CHECKPOINT_FILE_SIZE:
            problems(
                ProblemKind.WRONG_FILE_SIZE,
                path,
                0,
                f"checkpoint is {size} bytes, not {CHECKPOINT_FILE_SIZE}",
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
