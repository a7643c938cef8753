"""An index file of ``index/``: find commitlog offsets by ``topic#key`` and time.

One index file is a hash table with chaining, laid out in place (Apache 4.9, byte for byte):

* a 40-byte header: beginTimestamp, endTimestamp, beginPhyOffset, endPhyOffset (int64 each),
  hashSlotCount, indexCount (int32 each), all big-endian;
* ``hashSlotNum`` 4-byte slots: slot ``i`` holds the number of the newest entry whose key
  hashes to ``i`` (0 = empty);
* ``indexNum`` 20-byte entries: key hash (int32), commitlog offset (int64), store time minus
  the header's beginTimestamp in seconds (int32), number of the previous entry of the same
  slot (int32, 0 = end of chain).

Entries are numbered from 1 (``indexCount`` is the next number; a file that never held a key
has 0 or 1 there).  A lookup reads the slot and walks the chain from newest to oldest, keeping
entries whose stored hash and time match; the hash is ``abs(String.hashCode("topic#key"))``,
so callers re-check a message's keys.  Two quirks are part of the format and kept: the first
entry's time difference is taken against the header's beginTimestamp *before* that field is
set to the entry's own store time (0 in the first file, relative to the previous file's end
in a rolled file), and a slot or chain pointer past the counted entries counts as empty
(Apache tests ``> indexCount``; we also treat ``== indexCount``, a pointer at the entry not
counted yet, which only a crash leaves, as empty).

Writing is crash-safe against the process being killed at any instant (the page cache keeps
every byte already stored in the mapping).  For each key of a message the entry is written
past ``indexCount``, pointing at its slot's current head, then the slot is pointed at it; the
header comes last, once per message, ``indexCount`` after the other fields.  That is Apache's
order (entry, slot, header); slots and ``indexCount`` are written with one 4-byte copy each,
as ``struct.pack_into`` writes byte by byte and a kill in between could leave a number that
is neither the old nor the new one.  Until the header is written the message's entries do not
count, so a kill before leaves entries past ``indexCount``, some slots pointing at them.
:meth:`IndexFile.repair`, run when a store opens its index files, removes them newest first,
pointing a slot that names one back at the entry's predecessor, and takes the header's begin
and end offsets from the entries if they disagree.  Without the repair the next put would take
the uncounted entry's number again and, its slot naming that number already, chain the entry
to itself, cutting every older key of that slot off (the writer also never chains an entry to
a number at or past its own).  Recovery truncation removes entries newest first, uncounting
each (header) before unlinking and zeroing it, so its crash states are the same.

A file does not record its slot and entry counts.  The writer creates files with the
configured ones (``maxHashSlotNum``, ``maxIndexNum``); opening a file infers them from its
size, ``40 + 4*slots + 20*entries``, trying the configured values first, then Apache's
defaults and their four-entries-per-slot ratio, then what the position of the newest entry
allows (``indexgeometry.py``), and keeping the first geometry under which the header's begin
and end commitlog offsets are those of the first and newest entries.

This module is one file; :class:`rmq.store.indexservice.IndexService` keeps the ``index/``
directory of a running store, its files as one index.
"""

from __future__ import annotations

import contextlib
import logging
import mmap
import os
import struct
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Final, NamedTuple

from rmq.common.javahash import index_key_hash
from rmq.store.errors import StoreError
from rmq.store.indexgeometry import (
    HASH_SLOT_SIZE,
    INDEX_ENTRY_SIZE,
    INDEX_HEADER_SIZE,
    entry_geometries,
    index_file_size,
    index_geometries,
)
from rmq.store.mappedfile import MappedFile, sync_mapping

log = logging.getLogger(__name__)

INT32_MAX: Final = 0x7FFFFFFF

HEADER: Final = struct.Struct(">qqqqii")
HEADER_BEFORE_COUNT: Final = struct.Struct(">qqqqi")
INDEX_COUNT_POSITION: Final = 36
SLOT: Final = struct.Struct(">i")
ENTRY: Final = struct.Struct(">iqii")
EMPTY_ENTRY: Final = bytes(INDEX_ENTRY_SIZE)


def index_key(topic: str, key: str) -> str:
    """The string that is hashed and indexed for a message key: ``topic#key``."""
    return f"{topic}#{key}"


class IndexEntry(NamedTuple):
    """One decoded index entry (for inspection and validation, not the lookup path)."""

    key_hash: int
    physical_offset: int
    time_diff: int
    prev_number: int


class IndexFile:
    """One index file over a mapping: read-write (a store's) or read-only (offline).

    Header fields are kept as attributes and written through to the mapping on every change,
    as the format's readers expect the header to be current.  One writer at a time (the
    service lock); :meth:`sync` may run concurrently with it and with :meth:`destroy`.
    """

    __slots__ = (
        "_buf",
        "_dirty",
        "_entries_base",
        "_mapped",
        "_sync_lock",
        "begin_phy_offset",
        "begin_timestamp",
        "end_phy_offset",
        "end_timestamp",
        "hash_slot_count",
        "hash_slot_num",
        "index_count",
        "index_num",
        "path",
    )

    def __init__(
        self,
        path: Path,
        buf: mmap.mmap,
        hash_slot_num: int,
        index_num: int,
        mapped: MappedFile | None = None,
    ) -> None:
        self.path = path
        self._buf = buf
        self._mapped = mapped
        self.hash_slot_num = hash_slot_num
        self.index_num = index_num
        self._entries_base = INDEX_HEADER_SIZE + hash_slot_num * HASH_SLOT_SIZE
        header: tuple[int, int, int, int, int, int] = HEADER.unpack_from(buf, 0)
        self.begin_timestamp = header[0]
        self.end_timestamp = header[1]
        self.begin_phy_offset = header[2]
        self.end_phy_offset = header[3]
        self.hash_slot_count = header[4]
        self.index_count = max(header[5], 1)
        self._dirty = False
        self._sync_lock = threading.Lock()

    @classmethod
    def create(
        cls,
        path: Path,
        hash_slot_num: int,
        index_num: int,
        end_phy_offset: int = 0,
        end_timestamp: int = 0,
    ) -> IndexFile:
        """Create a zero-filled, preallocated file, its header seeded from the previous file.

        Raises :class:`StoreError` when the file cannot be created (e.g. disk full).
        """
        mapped = MappedFile.create(str(path), index_file_size(hash_slot_num, index_num))
        index_file = cls(path, mapped.buffer, hash_slot_num, index_num, mapped)
        if end_phy_offset > 0:
            index_file.begin_phy_offset = index_file.end_phy_offset = end_phy_offset
        if end_timestamp > 0:
            index_file.begin_timestamp = index_file.end_timestamp = end_timestamp
        HEADER.pack_into(
            mapped.buffer,
            0,
            index_file.begin_timestamp,
            index_file.end_timestamp,
            index_file.begin_phy_offset,
            index_file.end_phy_offset,
            0,
            0,
        )
        index_file._dirty = True
        return index_file

    @classmethod
    def open(cls, path: Path, hash_slot_num: int, index_num: int) -> IndexFile:
        """Map an existing file read-write (geometry as in :meth:`open_read_only`).

        Raises :class:`StoreError` when no geometry fits, or when the header counts more
        entries than the file has room for (a file cut short: writing to it would fail)."""
        mapped = MappedFile.open(str(path))
        try:
            index_file = cls._with_geometry(path, mapped.buffer, hash_slot_num, index_num, mapped)
            if index_file.index_count > index_file.index_num:
                raise StoreError(
                    f"{path}: the header counts {index_file.index_count - 1} entries, more "
                    f"than its {mapped.file_size} bytes hold (cut short)"
                )
            return index_file
        except StoreError:
            mapped.close()
            raise

    @classmethod
    def open_read_only(cls, path: Path, hash_slot_num: int = 0, index_num: int = 0) -> IndexFile:
        """Map an existing file read-only (never writes, takes no lock).

        The geometry is the first of :func:`index_geometries` under which the header agrees
        with the entries (entry 1 and the newest entry hold the header's begin and end
        commitlog offsets), else the first that fits the size.  StoreError if none fits.
        """
        try:
            with open(path, "rb") as file:
                size = os.fstat(file.fileno()).st_size
                if size <= INDEX_HEADER_SIZE:
                    raise StoreError(f"{path}: {size} bytes is too short for an index file")
                buf = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
        except OSError as exc:
            raise StoreError(f"cannot open index file {path}: {exc.strerror}") from exc
        try:
            return cls._with_geometry(path, buf, hash_slot_num, index_num, None)
        except StoreError:
            buf.close()
            raise

    @classmethod
    def _with_geometry(
        cls,
        path: Path,
        buf: mmap.mmap,
        hash_slot_num: int,
        index_num: int,
        mapped: MappedFile | None,
    ) -> IndexFile:
        candidates = index_geometries(len(buf), hash_slot_num, index_num)
        for slots, entries in candidates:
            index_file = cls(path, buf, slots, entries, mapped)
            if index_file.header_problem() is None:
                return index_file
        count = max(HEADER.unpack_from(buf, 0)[5], 1)
        for slots, entries in entry_geometries(buf, count):
            index_file = cls(path, buf, slots, entries, mapped)
            if index_file.header_problem() is None:
                return index_file
        if not candidates:
            raise StoreError(
                f"{path}: {len(buf)} bytes is not the size of an index file "
                f"(40 + 4*slots + 20*entries)"
            )
        return cls(path, buf, candidates[0][0], candidates[0][1], mapped)

    # -- writing -------------------------------------------------------------------------

    def is_full(self) -> bool:
        return self.index_count >= self.index_num

    def put_key(self, key: str, physical_offset: int, store_timestamp: int) -> bool:
        """Index ``key`` (``topic#key``) for the record at ``physical_offset``; False if full."""
        return self.put_hashes((index_key_hash(key),), physical_offset, store_timestamp) == 1

    def put_hashes(
        self, key_hashes: Sequence[int], physical_offset: int, store_timestamp: int
    ) -> int:
        """Add one entry per key hash for the record at ``physical_offset``; returns how many
        fit (the others belong in the next file).

        Each entry is written, then its slot; the header, which makes them count, comes last
        (see the module docstring).
        """
        count = self.index_count
        room = self.index_num - count
        if room <= 0:
            return 0
        if len(key_hashes) > room:
            key_hashes = key_hashes[:room]
        buf = self._buf
        slot_num = self.hash_slot_num
        begin = self.begin_timestamp
        if begin <= 0:
            time_diff = 0
        else:
            # Floor division differs from Java's truncation only below zero, clamped to 0.
            time_diff = (store_timestamp - begin) // 1000
            if time_diff < 0:
                time_diff = 0
            elif time_diff > INT32_MAX:
                time_diff = INT32_MAX
        number = count
        position = self._entries_base + count * INDEX_ENTRY_SIZE
        for key_hash in key_hashes:
            slot_pos = INDEX_HEADER_SIZE + key_hash % slot_num * HASH_SLOT_SIZE
            (head,) = SLOT.unpack_from(buf, slot_pos)
            if head <= 0 or head >= number:
                head = 0
                self.hash_slot_count += 1
            ENTRY.pack_into(buf, position, key_hash, physical_offset, time_diff, head)
            buf[slot_pos : slot_pos + 4] = SLOT.pack(number)  # one store, never half written
            if number <= 1:
                # The file's first entry sets beginTimestamp: later ones are 0 s after it.
                time_diff = 0
            number += 1
            position += INDEX_ENTRY_SIZE
        if count <= 1:
            self.begin_phy_offset = physical_offset
            self.begin_timestamp = store_timestamp
        self.index_count = number
        self.end_phy_offset = physical_offset
        self.end_timestamp = store_timestamp
        self._write_header()
        return number - count

    def truncate(self, max_physical_offset: int) -> int:
        """Remove the newest entries pointing at or past ``max_physical_offset``; returns how many.

        Each removed entry is uncounted first (header), then its slot is pointed back at the
        entry's predecessor (it was the newest of its chain) and its bytes are zeroed, so a
        crash in between leaves what :meth:`repair` undoes.  The header's end values move to
        the newest remaining entry (its time to the second, as entries store it).
        """
        removed = 0
        while self.index_count > 1:
            number = self.index_count - 1
            _, physical_offset, _, prev = self.entry(number)
            if physical_offset < max_physical_offset:
                break
            self.index_count = number
            if not 0 < prev < number:
                self.hash_slot_count = max(self.hash_slot_count - 1, 0)
            self._write_header()
            self._remove_entry(number)
            removed += 1
        if removed:
            self._end_from_newest_entry()
            self._write_header()
        return removed

    def repair(self) -> int:
        """Undo what a kill in the middle of a put or a truncation left; returns how many
        entries and headers it changed (0 for an intact file).

        Entries past ``indexCount`` are removed, newest first (a slot pointing at one goes
        back to the entry's predecessor); a header whose begin or end offsets disagree with
        the entries takes them from the entries.
        """
        if self._mapped is None or self.index_count > self.index_num:
            return 0
        count = self.index_count
        uncounted = count
        while (
            uncounted < self.index_num
            and self._buf[self.entry_position(uncounted) : self.entry_position(uncounted + 1)]
            != EMPTY_ENTRY
        ):
            uncounted += 1
        for number in range(uncounted - 1, count - 1, -1):
            self._remove_entry(number)
        fixed = uncounted - count
        if self.header_problem() is not None:
            self.begin_phy_offset = self.entry(1).physical_offset
            self._end_from_newest_entry()
            fixed += 1
        if fixed:
            self._write_header()
        return fixed

    def _remove_entry(self, number: int) -> None:
        """Zero entry ``number`` (no longer counted); a slot still pointing at it goes back to
        the entry's predecessor."""
        position = self.entry_position(number)
        key_hash, _, _, prev = ENTRY.unpack_from(self._buf, position)
        slot_pos = self._slot_position(key_hash)
        if SLOT.unpack_from(self._buf, slot_pos)[0] == number:
            self._buf[slot_pos : slot_pos + 4] = SLOT.pack(prev if 0 < prev < number else 0)
        self._buf[position : position + INDEX_ENTRY_SIZE] = EMPTY_ENTRY

    def _end_from_newest_entry(self) -> None:
        if self.index_count > 1:
            _, physical_offset, time_diff, _ = self.entry(self.index_count - 1)
            self.end_phy_offset = physical_offset
            self.end_timestamp = max(self.begin_timestamp + time_diff * 1000, 0)
        else:
            self.end_phy_offset = self.begin_phy_offset
            self.end_timestamp = self.begin_timestamp

    def _slot_position(self, key_hash: int) -> int:
        return INDEX_HEADER_SIZE + key_hash % self.hash_slot_num * HASH_SLOT_SIZE

    def _write_header(self) -> None:
        """Write the header, ``indexCount`` last and in one 4-byte store."""
        self._dirty = True
        HEADER_BEFORE_COUNT.pack_into(
            self._buf,
            0,
            self.begin_timestamp,
            self.end_timestamp,
            self.begin_phy_offset,
            self.end_phy_offset,
            self.hash_slot_count,
        )
        # One 4-byte store: pack_into writes byte by byte, and a kill in between could leave
        # a count that is neither the old nor the new one.
        self._buf[INDEX_COUNT_POSITION : INDEX_COUNT_POSITION + 4] = SLOT.pack(self.index_count)

    # -- flushing ------------------------------------------------------------------------

    def begin_flush(self) -> bool:
        """Whether the file changed since the last flush; if so, write the header (a file
        never written holds indexCount 0 until then) and clear the mark.  Call it with
        writes excluded, then :meth:`sync`."""
        if self._mapped is None or not self._dirty:
            return False
        self._write_header()
        self._dirty = False
        return True

    def sync(self) -> None:
        """Write the file's dirty pages to disk (:func:`sync_mapping`); safe while the writer
        continues or the file is destroyed."""
        with self._sync_lock:
            if self._buf.closed:
                return
            try:
                sync_mapping(self.path, self._buf)
            except OSError:
                self._dirty = True
                raise

    def flush(self) -> None:
        """Write the header and ``msync`` the file if it changed since the last flush."""
        if self.begin_flush():
            self.sync()

    # -- reading -------------------------------------------------------------------------

    def is_time_matched(self, begin: int, end: int) -> bool:
        """Whether ``[begin, end]`` overlaps the file's [beginTimestamp, endTimestamp]."""
        return begin <= self.end_timestamp and end >= self.begin_timestamp

    def select_phy_offsets(
        self, key: str, max_num: int, begin: int, end: int, found: list[int]
    ) -> None:
        """Append to ``found`` (up to ``max_num`` in total) the offsets indexed under ``key``
        with a store time in ``[begin, end]``, newest first."""
        count = self.index_count
        if count <= 1:
            return
        buf = self._buf
        key_hash = index_key_hash(key)
        (number,) = SLOT.unpack_from(
            buf, INDEX_HEADER_SIZE + (key_hash % self.hash_slot_num) * HASH_SLOT_SIZE
        )
        if number <= 0 or number >= count:
            return
        base = self._entries_base
        file_begin = self.begin_timestamp
        while len(found) < max_num:
            hash_read, physical_offset, time_diff, prev = ENTRY.unpack_from(
                buf, base + number * INDEX_ENTRY_SIZE
            )
            if time_diff < 0:
                break
            entry_time = file_begin + time_diff * 1000
            if hash_read == key_hash and begin <= entry_time <= end:
                found.append(physical_offset)
            if prev <= 0 or prev >= count or prev == number or entry_time < begin:
                break
            number = prev

    def header_problem(self) -> str | None:
        """Why the header disagrees with the entries, or None when it agrees."""
        count = self.index_count
        if count > self.index_num:
            return f"indexCount {count} exceeds the file's {self.index_num} entries"
        if count <= 1:
            return None
        base = self._entries_base
        _, first, _, _ = ENTRY.unpack_from(self._buf, base + INDEX_ENTRY_SIZE)
        _, last, _, _ = ENTRY.unpack_from(self._buf, base + (count - 1) * INDEX_ENTRY_SIZE)
        if (first, last) != (self.begin_phy_offset, self.end_phy_offset):
            return (
                f"entries 1 and {count - 1} point at commitlog offsets {first} and {last}, "
                f"the header says {self.begin_phy_offset} and {self.end_phy_offset}"
            )
        return None

    def entries(self) -> Iterator[tuple[int, IndexEntry]]:
        """``(number, entry)`` for entries 1 .. indexCount-1, in the order they were written."""
        base = self._entries_base
        stop = min(self.index_count, self.index_num)
        with memoryview(self._buf) as view:
            region = view[base + INDEX_ENTRY_SIZE : base + stop * INDEX_ENTRY_SIZE]
            try:
                yield from enumerate(map(IndexEntry._make, ENTRY.iter_unpack(region)), 1)
            finally:
                region.release()

    def entry(self, number: int) -> IndexEntry:
        """Entry ``number`` as stored."""
        return IndexEntry._make(ENTRY.unpack_from(self._buf, self.entry_position(number)))

    def entry_position(self, number: int) -> int:
        """Byte offset in the file of entry ``number``."""
        return self._entries_base + number * INDEX_ENTRY_SIZE

    def close(self) -> None:
        """Unmap the file (it stays mapped while a slice of it is still referenced)."""
        with self._sync_lock:
            if self._mapped is not None:
                self._mapped.close()
            else:
                with contextlib.suppress(BufferError):
                    self._buf.close()

    def destroy(self) -> None:
        """Unmap and delete the file (read-write files only)."""
        if self._mapped is None:
            raise StoreError(f"{self.path} is open read-only")
        with self._sync_lock:
            self._mapped.destroy()


def query_index_files(
    files: Sequence[IndexFile], key: str, max_num: int, begin: int, end: int
) -> list[int]:
    """Commitlog offsets indexed under ``key`` (``topic#key``) stored within ``[begin, end]``.

    Files are searched newest first, skipping those whose time range misses the window and
    stopping at the first one that begins before ``begin``; within a file entries come newest
    first.  At most ``max_num`` offsets are returned.
    """
    found: list[int] = []
    for index_file in reversed(files):
        if index_file.is_time_matched(begin, end):
            index_file.select_phy_offsets(key, max_num, begin, end, found)
        if index_file.begin_timestamp < begin or len(found) >= max_num:
            break
    return found
