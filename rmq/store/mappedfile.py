"""Memory-mapped store files and the queues of them (commitlog, consume queues).

A :class:`MappedFile` is one preallocated file mapped read-write into memory.  Its name is
the global byte offset of its first byte, 20 decimal digits (``00000000000001073741824``), and
it is created full size with ``posix_fallocate`` under ``<name>.tmp`` and renamed into
place: the blocks are reserved on creation, so a full disk fails there with a clear
:class:`StoreError` and never later with a SIGBUS in the middle of a write through the
mapping, and a crash never leaves a short file under a store name.  Writers put bytes into
:attr:`MappedFile.buffer` at :attr:`MappedFile.wrote_position` (with ``struct.pack_into`` or
:meth:`MappedFile.append`) and then publish them with :meth:`MappedFile.appended`; readers
get zero-copy ``memoryview`` slices below the wrote position; the flush thread writes the
dirty pages to disk (:func:`sync_mapping`) and records how far the file is durable in
:attr:`MappedFile.flushed_position`.

A :class:`MappedFileQueue` is the ordered list of mapped files of one directory that together
form one contiguous byte stream: the commitlog, or one consume queue.  New files are created
with the configured size when the last one is full; files loaded from disk keep the size they
have (a reader never trusts the configuration for that), but their names must follow on from
each other (``start + size == next start``).

Positions after :meth:`MappedFileQueue.load` follow Apache's convention: every loaded file
is taken as full (wrote = flushed = file size) until recovery finds the real end and calls
:meth:`MappedFileQueue.truncate_dirty_files` with it.  Asserted where positions move: the
wrote position only grows (:meth:`MappedFile.appended`) and, like the flushed position,
stays inside the file; only recovery's :meth:`MappedFile.reset_to` moves both back.

Threads.  One writer thread appends (the broker's event-loop thread, under the owner's
lock).  The flush thread calls :meth:`MappedFileQueue.flush`.  The cleanup timer calls
:meth:`MappedFileQueue.delete_leading_files`.  Readers may run on any thread.  The list of
files is replaced, never mutated in place (copy on write under a lock), so lookups read one
consistent snapshot without locking; positions are plain ints written by one thread only.
A file deleted while a reader still holds a slice of it stays mapped until the slice is
released (the name is unlinked at once); slicing a file after it was closed raises
ValueError, never touches unmapped memory.
"""

from __future__ import annotations

import bisect
import contextlib
import errno
import mmap
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Final, NamedTuple

from rmq.store.errors import DiskFullError, StoreError
from rmq.store.layout import offset_file_name, parse_offset_file_name

OS_PAGE_SIZE: Final = mmap.PAGESIZE
_ZERO_CHUNK: Final = bytes(1 << 20)
_ZERO_VIEW: Final = memoryview(_ZERO_CHUNK)
_NO_SPACE: Final = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
TEMP_SUFFIX: Final = ".tmp"

Allocate = Callable[[int, int, int], None]
"""``posix_fallocate(fd, offset, length)``; replaceable to simulate a full disk."""


def sync_mapping(path: str | os.PathLike[str], mapping: mmap.mmap) -> None:
    """Write the dirty pages of the mapped file ``path`` to disk, as ``msync`` would.

    ``fdatasync`` on a descriptor of the file covers the pages dirtied through a shared
    mapping (Linux marks them dirty in the page cache on the first write after a flush) and,
    unlike CPython's ``mmap.flush``, releases the GIL while the disk works, so the writer
    thread keeps appending meanwhile.  Where ``os.fdatasync`` does not exist the mapping's own
    ``msync`` is used.
    """
    datasync = getattr(os, "fdatasync", None)
    if datasync is None:
        mapping.flush()
        return
    fd = os.open(path, os.O_RDWR)
    try:
        datasync(fd)
    finally:
        os.close(fd)


def _sync_directory(directory: str) -> None:
    fd = os.open(directory or ".", os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def remove_stale_temp_files(directory: str | os.PathLike[str]) -> list[str]:
    """Delete ``*.tmp`` files a crash left behind in the middle of a file creation."""
    removed = []
    with contextlib.suppress(FileNotFoundError):
        for entry in os.scandir(directory):
            if entry.name.endswith(TEMP_SUFFIX) and entry.is_file():
                os.unlink(entry.path)
                removed.append(entry.path)
    return removed


class TruncatedRange(NamedTuple):
    """Bytes cut off by recovery: ``length`` bytes of ``path`` from file ``position``."""

    path: str
    position: int
    length: int


class MappedFile:
    """One preallocated, memory-mapped store file.

    Attributes (read freely; only the owner's writer thread changes the positions):

    * ``path``, ``file_name``, ``file_from_offset`` (global offset of byte 0, from the name)
    * ``file_size`` (from the file itself)
    * ``buffer``: the writable ``mmap``; ``view``: a ``memoryview`` over it
    * ``wrote_position``: bytes written and published to readers
    * ``flushed_position``: bytes known to be on disk
    * ``store_timestamp``: store time of the last record published (for the checkpoint)
    """

    __slots__ = (
        "_flush_lock",
        "buffer",
        "file_from_offset",
        "file_name",
        "file_size",
        "flushed_position",
        "path",
        "store_timestamp",
        "view",
        "wrote_position",
        "zeros_from",
    )

    def __init__(self, path: str, fd: int, file_size: int) -> None:
        self.path = path
        self.file_name = os.path.basename(path)
        self.file_from_offset = int(self.file_name)
        self.file_size = file_size
        self.buffer = mmap.mmap(fd, file_size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        self.view = memoryview(self.buffer)
        self.wrote_position = 0
        self.flushed_position = 0
        self.store_timestamp = 0
        self.zeros_from = file_size
        """Bytes from here on are known to be zeros, apart from what was appended since
        (below ``wrote_position``): set by :meth:`reset_to`."""
        self._flush_lock = threading.Lock()

    @classmethod
    def create(
        cls, path: str, file_size: int, allocate: Allocate = os.posix_fallocate
    ) -> MappedFile:
        """Create ``path`` with ``file_size`` reserved bytes (all zero) and map it.

        The file is allocated under ``<path>.tmp`` and renamed into place, so a crash never
        leaves a short file under a store name.  Raises :class:`StoreError` ("disk full:
        cannot create <path> (<size> bytes)" when the disk is full); a file that could not be
        allocated is removed again.
        """
        if os.path.exists(path):
            raise StoreError(f"cannot create {path}: the file already exists")
        temporary = path + TEMP_SUFFIX
        try:
            fd = os.open(temporary, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        except OSError as exc:
            if exc.errno in _NO_SPACE:
                raise DiskFullError(f"disk full: cannot create {path}") from exc
            raise StoreError(f"cannot create {path}: {exc.strerror}") from exc
        try:
            allocate(fd, 0, file_size)
            os.rename(temporary, path)
            _sync_directory(os.path.dirname(path))
            return cls(path, fd, file_size)
        except OSError as exc:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
            if exc.errno in _NO_SPACE:
                raise DiskFullError(f"disk full: cannot create {path} ({file_size} bytes)") from exc
            raise StoreError(f"cannot create {path} ({file_size} bytes): {exc.strerror}") from exc
        finally:
            os.close(fd)

    @classmethod
    def open(cls, path: str) -> MappedFile:
        """Map an existing file; its size is taken from the file."""
        try:
            fd = os.open(path, os.O_RDWR)
        except OSError as exc:
            raise StoreError(f"cannot open {path}: {exc.strerror}") from exc
        try:
            size = os.fstat(fd).st_size
            if size == 0:
                raise StoreError(f"cannot map {path}: the file is empty")
            mapped = cls(path, fd, size)
        finally:
            os.close(fd)
        mapped.wrote_position = mapped.flushed_position = size
        return mapped

    @property
    def file_tail_offset(self) -> int:
        """Global offset just past the last byte of this file."""
        return self.file_from_offset + self.file_size

    def remaining(self) -> int:
        """Free bytes after the wrote position."""
        return self.file_size - self.wrote_position

    def is_full(self) -> bool:
        return self.wrote_position >= self.file_size

    def append(self, data: bytes | memoryview, store_timestamp: int = 0) -> bool:
        """Copy ``data`` at the wrote position and publish it; False if it does not fit."""
        pos = self.wrote_position
        end = pos + len(data)
        if end > self.file_size:
            return False
        self.buffer[pos:end] = data
        self.appended(end, store_timestamp)
        return True

    def appended(self, wrote_position: int, store_timestamp: int = 0) -> None:
        """Publish bytes written in place up to ``wrote_position``.

        The position is set before the timestamp: the flush thread reads the timestamp first,
        so a timestamp it sees always belongs to bytes it will flush.
        """
        assert self.wrote_position <= wrote_position <= self.file_size, (
            f"{self.path}: wrote position would move from {self.wrote_position} to "
            f"{wrote_position} (file size {self.file_size})"
        )
        self.wrote_position = wrote_position
        if store_timestamp:
            self.store_timestamp = store_timestamp

    def slice(self, pos: int, size: int) -> memoryview:
        """A zero-copy view of ``size`` bytes at file position ``pos``."""
        return self.view[pos : pos + size]

    def flush(self, least_pages: int = 0) -> int:
        """Write the bytes written since the last flush to disk; returns the flushed position.

        With ``least_pages > 0`` nothing happens unless at least that many whole pages are
        dirty (a full file is always flushed).  Safe against a concurrent :meth:`destroy`.
        """
        with self._flush_lock:
            wrote = self.wrote_position
            flushed = self.flushed_position
            if wrote <= flushed or self.buffer.closed:
                return flushed
            if (
                least_pages > 0
                and wrote < self.file_size
                and wrote // OS_PAGE_SIZE - flushed // OS_PAGE_SIZE < least_pages
            ):
                return flushed
            assert wrote <= self.file_size, (
                f"{self.path}: flushed position would move from {flushed} to {wrote}, past "
                f"the file (size {self.file_size})"
            )
            sync_mapping(self.path, self.buffer)
            self.flushed_position = wrote
            return wrote

    def reset_to(self, position: int) -> int:
        """Make ``position`` the end of data: positions move there and later bytes are zeroed.

        Used by recovery to cut a torn or dirty tail, so that bytes of a cut record can never
        be read as valid again after later appends.  Only non-zero chunks are written (a
        preallocated file reads as zeros without touching the disk).  Returns how many bytes
        after ``position`` held data (up to the last non-zero byte).
        """
        assert 0 <= position <= self.file_size, (
            f"{self.path}: reset to {position} outside the file (size {self.file_size})"
        )
        data_end = position
        if position < max(self.zeros_from, self.wrote_position):  # else zero already
            for start, stop in self.data_regions(position, self.file_size):
                for pos, end in self._nonzero_chunks(start, stop):
                    data_end = end
                    self.buffer[pos:end] = _ZERO_CHUNK[: end - pos]
        self.zeros_from = position
        self.wrote_position = position
        self.flushed_position = position
        if data_end > position:
            self.buffer.flush()
        return data_end - position

    def _nonzero_chunks(self, start: int, stop: int) -> Iterator[tuple[int, int]]:
        """``(start, end)`` of each chunk of bytes ``[start, stop)`` that is not all zeros,
        ``end`` just past its last non-zero byte.  Read with ``preadv`` rather than through
        the mapping: a fresh process's first touch of each mapped page is a page fault, which
        made this scan (every start-up, over the rest of every queue's last file) run at a
        twentieth of the speed."""
        scratch = bytearray(len(_ZERO_CHUNK))
        view = memoryview(scratch)
        fd = os.open(self.path, os.O_RDONLY)
        try:
            pos = start
            while pos < stop:
                got = os.preadv(fd, [view[: min(len(scratch), stop - pos)]], pos)
                if got <= 0:
                    return
                if got < len(scratch):  # the file's last piece: compare whole buffers
                    view[got:] = _ZERO_VIEW[got:]
                if scratch != _ZERO_CHUNK:
                    yield pos, pos + len(scratch[:got].rstrip(b"\x00"))
                pos += got
        finally:
            view.release()
            os.close(fd)

    def find(self, pattern: bytes, start: int, stop: int) -> int:
        """The first position of ``pattern`` (which holds no zero byte) lying wholly in file
        bytes ``[start, stop)``, or -1.  Searches only the file's data regions, reading with
        ``preadv`` (see :meth:`_nonzero_chunks`); a pattern without zeros cannot straddle a
        region's edge."""
        assert pattern and 0 not in pattern
        overlap = len(pattern) - 1
        scratch = bytearray(len(_ZERO_CHUNK) + overlap)
        view = memoryview(scratch)
        fd = os.open(self.path, os.O_RDONLY)
        try:
            for region_start, region_stop in self.data_regions(start, stop):
                pos = region_start
                while pos + len(pattern) <= region_stop:
                    want = min(len(scratch), region_stop - pos)
                    got = os.preadv(fd, [view[:want]], pos)
                    if got < len(pattern):
                        break
                    found = scratch.find(pattern, 0, got)
                    if found >= 0:
                        return pos + found
                    pos += got - overlap
        finally:
            view.release()
            os.close(fd)
        return -1

    def data_regions(self, start: int, end: int) -> list[tuple[int, int]]:
        """The parts of file bytes ``[start, end)`` that can hold anything but zeros.

        The file system knows which blocks were never written (preallocated or sparse) and
        have no page in the cache: those read as zeros, and ``SEEK_DATA``/``SEEK_HOLE`` skip
        them, so a scan for data (recovery's, at every start, over the unused rest of the
        last files) touches only what was written.  Where the file system cannot tell, the
        whole range is one region.
        """
        whole = [(start, end)] if start < end else []
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:
            return whole
        regions: list[tuple[int, int]] = []
        try:
            pos = start
            while pos < end:
                try:
                    data = os.lseek(fd, pos, os.SEEK_DATA)
                except OSError as exc:
                    if exc.errno == errno.ENXIO:  # no data from pos to the end of the file
                        break
                    return whole
                if data >= end:
                    break
                hole = min(os.lseek(fd, data, os.SEEK_HOLE), end)
                regions.append((data, hole))
                pos = hole
        finally:
            os.close(fd)
        return regions

    def mtime(self) -> float:
        """Last modification time of the file (seconds since the epoch)."""
        return os.stat(self.path).st_mtime

    def close(self) -> None:
        """Unmap the file (kept mapped while readers still hold slices)."""
        self.view.release()
        with contextlib.suppress(BufferError):
            self.buffer.close()

    def destroy(self) -> None:
        """Unmap and delete the file."""
        with self._flush_lock:
            self.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)

    def __repr__(self) -> str:
        return (
            f"MappedFile({self.path!r}, size={self.file_size}, wrote={self.wrote_position}, "
            f"flushed={self.flushed_position})"
        )


class MappedFileQueue:
    """The files of one directory forming one contiguous byte stream.

    ``store_path`` is the directory (created if missing); ``mapped_file_size`` the size of new
    files.  ``allocate`` reserves a new file's blocks (``os.posix_fallocate``; tests pass a
    failing one to simulate a full disk).

    Queue-wide state: ``flushed_where`` (global offset known durable) and
    ``store_timestamp`` (store time of the last record known durable).
    """

    def __init__(
        self,
        store_path: str | os.PathLike[str],
        mapped_file_size: int,
        allocate: Allocate = os.posix_fallocate,
    ) -> None:
        if mapped_file_size <= 0:
            raise ValueError(f"mapped file size must be positive, got {mapped_file_size}")
        self.store_path = os.fspath(store_path)
        self.mapped_file_size = mapped_file_size
        self.flushed_where = 0
        self.store_timestamp = 0
        self._allocate = allocate
        self._files: tuple[MappedFile, ...] = ()
        self._index: tuple[tuple[MappedFile, ...], tuple[int, ...]] = ((), ())
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()

    # -- loading and listing -------------------------------------------------------------

    def load(self) -> None:
        """Map every 20-digit file of the directory (creating the directory if missing).

        Temporary files of an interrupted creation are deleted first.  Raises
        :class:`StoreError` when a file is empty or the files do not follow on from each
        other.  Loaded files are taken as full until recovery truncates them.
        """
        try:
            os.makedirs(self.store_path, exist_ok=True)
            remove_stale_temp_files(self.store_path)
            names = sorted(
                n for n in os.listdir(self.store_path) if parse_offset_file_name(n) is not None
            )
        except OSError as exc:
            raise StoreError(f"cannot list {self.store_path}: {exc.strerror}") from exc
        files: list[MappedFile] = []
        try:
            for name in names:
                mapped = MappedFile.open(os.path.join(self.store_path, name))
                if files and files[-1].file_tail_offset != mapped.file_from_offset:
                    prev = files[-1]
                    mapped.close()
                    raise StoreError(
                        f"{prev.path} ({prev.file_size} bytes) is not followed by "
                        f"{offset_file_name(prev.file_tail_offset)} but by {name}"
                    )
                files.append(mapped)
        except StoreError:
            for mapped in files:
                mapped.close()
            raise
        self._publish(files)
        if files:
            self.flushed_where = files[-1].file_tail_offset

    @property
    def files(self) -> Sequence[MappedFile]:
        """A snapshot of the mapped files, oldest first."""
        return self._files

    def last_file(self) -> MappedFile | None:
        files = self._files
        return files[-1] if files else None

    def min_offset(self) -> int:
        """Global offset of the first byte still stored (-1 when there are no files)."""
        files = self._files
        return files[0].file_from_offset if files else -1

    def max_offset(self) -> int:
        """Global offset just past the last written byte (0 when there are no files)."""
        files = self._files
        if not files:
            return 0
        last = files[-1]
        return last.file_from_offset + last.wrote_position

    def find_mapped_file_by_offset(
        self, offset: int, return_first_on_not_found: bool = False
    ) -> MappedFile | None:
        """The file holding global ``offset`` (None, or the first file, when none does)."""
        files, starts = self._index
        if not files:
            return None
        index = bisect.bisect_right(starts, offset) - 1
        if index >= 0 and offset < files[index].file_tail_offset:
            return files[index]
        return files[0] if return_first_on_not_found else None

    # -- growing -------------------------------------------------------------------------

    def get_last_mapped_file(
        self, start_offset: int = 0, need_create: bool = True
    ) -> MappedFile | None:
        """The file to append to: the last one, or a new one when it is full or none exists.

        With no files yet the new file starts at ``start_offset`` rounded down to the file
        size.  Raises :class:`StoreError` when a needed file cannot be created.
        """
        files = self._files
        if files and not files[-1].is_full():
            return files[-1]
        if not need_create:
            return files[-1] if files else None
        return self.create_next_file(start_offset)

    def create_next_file(self, start_offset: int = 0) -> MappedFile:
        """Create the file following the last one (full or not) and make it the last.

        The writer calls this before closing the current file with a BLANK, so that a failed
        creation leaves the current file untouched.  With no files the new one starts at
        ``start_offset`` rounded down to the file size.  Raises :class:`StoreError`.
        """
        with self._lock:
            files = self._files
            if files:
                start = files[-1].file_tail_offset
            else:
                start = start_offset - start_offset % self.mapped_file_size
            os.makedirs(self.store_path, exist_ok=True)
            path = os.path.join(self.store_path, offset_file_name(start))
            mapped = MappedFile.create(path, self.mapped_file_size, self._allocate)
            self._publish([*files, mapped])
            if not files:
                self.flushed_where = start
            return mapped

    # -- flushing ------------------------------------------------------------------------

    def flush(self, least_pages: int = 0) -> int:
        """``msync`` everything written since the last flush; returns ``flushed_where``.

        Walks from the file holding ``flushed_where`` to the last file.  ``least_pages`` as in
        :meth:`MappedFile.flush` (applies to the file being written).  Concurrent callers
        take turns.
        """
        with self._flush_lock:
            where = self.flushed_where
            mapped = self.find_mapped_file_by_offset(where, where == 0)
            while mapped is not None:
                store_timestamp = mapped.store_timestamp
                position = mapped.flush(least_pages)
                self.flushed_where = mapped.file_from_offset + position
                if store_timestamp:
                    self.store_timestamp = store_timestamp
                if position < mapped.file_size:
                    break
                mapped = self.find_mapped_file_by_offset(mapped.file_tail_offset)
            return self.flushed_where

    # -- truncation and deletion ---------------------------------------------------------

    def truncate_dirty_files(self, offset: int) -> list[TruncatedRange]:
        """Make global ``offset`` the end of the stream; returns what was cut.

        Files starting after ``offset`` are deleted (reported whole); the file holding it is
        cut there and later bytes are zeroed (reported when any held data);
        ``flushed_where`` moves back to ``offset`` if it was beyond.
        """
        cut: list[TruncatedRange] = []
        with self._lock:
            keep: list[MappedFile] = []
            for mapped in self._files:
                if mapped.file_from_offset > offset:
                    cut.append(TruncatedRange(mapped.path, 0, mapped.file_size))
                    mapped.destroy()
                    continue
                if mapped.file_tail_offset > offset:
                    position = offset - mapped.file_from_offset
                    dirty = mapped.reset_to(position)
                    if dirty:
                        cut.append(TruncatedRange(mapped.path, position, dirty))
                keep.append(mapped)
            self._publish(keep)
        self.flushed_where = min(self.flushed_where, offset) if keep else offset
        return cut

    def restore_last_file_size(self) -> tuple[str, int] | None:
        """Recovery: grow a last file cut short on disk back to the configured size (the new
        bytes read as zeros), as Apache maps every file at its configured size, so the file
        after it keeps an aligned name; returns (path, size it had) or None.  Its data, and
        so its wrote position, end where the file did."""
        with self._lock:
            files = self._files
            if not files or files[-1].file_size >= self.mapped_file_size:
                return None
            short = files[-1]
            try:
                fd = os.open(short.path, os.O_RDWR)
            except OSError as exc:
                raise StoreError(f"cannot open {short.path}: {exc.strerror}") from exc
            try:
                self._allocate(fd, 0, self.mapped_file_size)
                grown = MappedFile(short.path, fd, self.mapped_file_size)
            except OSError as exc:
                raise StoreError(
                    f"cannot grow {short.path} to {self.mapped_file_size} bytes: {exc.strerror}"
                ) from exc
            finally:
                os.close(fd)
            grown.wrote_position = grown.flushed_position = short.file_size
            short.close()
            self._publish([*files[:-1], grown])
            return short.path, short.file_size

    def delete_leading_files(
        self, should_delete: Callable[[MappedFile], bool], keep_last: bool = True
    ) -> list[MappedFile]:
        """Delete files from the front while ``should_delete(file)`` is true.

        Stops at the first file to keep; never deletes the last file when ``keep_last``.
        Returns the deleted files (already unmapped and unlinked).
        """
        deleted: list[MappedFile] = []
        with self._lock:
            files = list(self._files)
            limit = len(files) - 1 if keep_last else len(files)
            while len(deleted) < limit and should_delete(files[len(deleted)]):
                deleted.append(files[len(deleted)])
            if not deleted:
                return deleted
            self._publish(files[len(deleted) :])
        for mapped in deleted:
            mapped.destroy()
        return deleted

    def destroy(self) -> None:
        """Delete every file of the queue (the directory itself stays)."""
        with self._lock:
            files = self._files
            self._publish([])
        for mapped in files:
            mapped.destroy()
        self.flushed_where = 0

    def close(self) -> None:
        """Unmap every file (no flush; call :meth:`flush` first for a clean shutdown)."""
        for mapped in self._files:
            mapped.close()

    def _publish(self, files: list[MappedFile]) -> None:
        snapshot = tuple(files)
        self._index = (snapshot, tuple(mapped.file_from_offset for mapped in snapshot))
        self._files = snapshot
