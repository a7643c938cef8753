"""The files of a store as the offline reader sees them: mapped read-only, listed with their
ranges, and checked as files (size, gaps between consecutive files, what follows the data).

:class:`ReadOnlyFile` opens a file with ``O_RDONLY`` and maps it ``ACCESS_READ`` (an empty
file has an empty buffer); nothing here creates, locks or writes anything.  Every size comes
from the file itself.  :func:`lock_status` asks, without taking it, whether a process holds
the store's ``lock`` file.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import mmap
import os
import struct
from collections import Counter
from pathlib import Path
from typing import Any, Final, NamedTuple

from rmq.store.errors import StoreError
from rmq.store.layout import (
    CONSUMER_FILTER_JSON,
    CONSUMER_OFFSET_JSON,
    DELAY_OFFSET_JSON,
    SUBSCRIPTION_GROUP_JSON,
    TOPICS_JSON,
)
from rmq.store.offline.problems import ProblemKind, Report

CONFIG_FILES: Final = (
    TOPICS_JSON,
    CONSUMER_OFFSET_JSON,
    SUBSCRIPTION_GROUP_JSON,
    CONSUMER_FILTER_JSON,
    DELAY_OFFSET_JSON,
)
_ZERO_CHUNK: Final = bytes(1 << 20)
# struct flock on Linux: l_type, l_whence, l_start, l_len, l_pid (+ padding).
_FLOCK: Final = struct.Struct("hhqqi4x")


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


class LockStatus(NamedTuple):
    """Whether a process holds the store's ``lock`` file now, and its pid when known."""

    locked: bool
    pid: int | None


class ReadOnlyFile:
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


def first_nonzero(buf: Any, start: int, end: int) -> int | None:
    """Position of the first non-zero byte of ``buf[start:end]``, None if all zero."""
    pos = start
    while pos < end:
        stop = min(pos + len(_ZERO_CHUNK), end)
        chunk = buf[pos:stop]
        if chunk != _ZERO_CHUNK[: stop - pos]:
            return stop - len(chunk.lstrip(b"\x00"))
        pos = stop
    return None


def check_data_end(
    mapped: ReadOnlyFile,
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
    garbage = first_nonzero(mapped.buf, end, mapped.size)
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


def _common_size(files: list[ReadOnlyFile]) -> int:
    """The size most files of a queue have (the larger one on a tie)."""
    sizes = Counter(f.size for f in files)
    return max(sizes, key=lambda size: (sizes[size], size))


def check_queue_files(files: list[ReadOnlyFile], what: str, unit: int, report: Report) -> None:
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


def file_size(path: Path) -> int:
    """The size of ``path``, 0 when it cannot be read."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def lock_status(path: Path) -> LockStatus | None:
    """Whether a process holds the ``lock`` file at ``path`` (a running broker); None when
    there is no lock file.

    The file is opened read-only and asked with ``F_GETLK`` which lock a writer would
    conflict with: nothing is written and no lock is taken.  The answer is about other
    processes (POSIX locks never conflict with the caller's own), and closing the
    descriptor drops any lock the calling process holds on the file, so a process that
    runs the store itself must not ask.
    """
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
