"""The store's ``lock`` and ``abort`` files: one writer per store, and crash detection.

``lock``: a running store holds an exclusive POSIX record lock (``fcntl`` ``F_SETLK``) on
byte 0 of ``<root>/lock`` and writes the 4 bytes ``lock`` into it, exactly as Apache's
broker does with ``FileChannel.tryLock(0, 1, false)``, so an rmq store and a Java broker also
exclude each other.  The lock dies with the process, so a killed broker never leaves a stale
lock behind.  POSIX locks do not conflict inside one process, so a process-wide set of held
directories makes a second open in the same process fail as well; and closing *any*
descriptor of the lock file drops the process's lock, so nothing else in a running broker may
open it.  When the lock is taken,
the holder's pid is asked from the kernel (``F_GETLK``) for the error message; nothing but
``lock`` is written to the file.

``abort``: an empty file created when the store starts and deleted on a clean shutdown.
Finding it at start means the previous run did not shut down cleanly, and the store runs
abnormal recovery.
"""

from __future__ import annotations

import errno
import fcntl
import os
import struct
import threading
from typing import Final

from rmq.store.errors import StoreError, StoreLockedError

LOCK_CONTENT: Final = b"lock"
# struct flock on Linux: l_type, l_whence, l_start, l_len, l_pid (+ padding).
_FLOCK: Final = struct.Struct("hhqqi4x")

_held_lock = threading.Lock()
_held_dirs: set[str] = set()


class StoreLock:
    """The exclusive lock on ``<root>/lock``; :meth:`acquire` once, :meth:`release` at exit."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = os.path.realpath(os.fspath(root))
        self.path = os.path.join(self.root, "lock")
        self._fd = -1

    def acquire(self) -> None:
        """Take the lock; raises :class:`StoreLockedError` when another holder has it."""
        with _held_lock:
            if self.root in _held_dirs:
                raise StoreLockedError(
                    f"store {self.root} is already open in this process (pid {os.getpid()})"
                )
            try:
                os.makedirs(self.root, exist_ok=True)
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:
                raise StoreError(f"cannot open {self.path}: {exc.strerror}") from exc
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)
            except OSError as exc:
                holder = _lock_holder(fd)
                os.close(fd)
                if exc.errno in (errno.EACCES, errno.EAGAIN):
                    raise StoreLockedError(
                        f"store {self.root} is locked by another process (pid {holder})"
                    ) from exc
                raise StoreError(f"cannot lock {self.path}: {exc.strerror}") from exc
            os.pwrite(fd, LOCK_CONTENT, 0)
            os.fsync(fd)
            self._fd = fd
            _held_dirs.add(self.root)

    def release(self) -> None:
        """Drop the lock (closing the file releases it)."""
        with _held_lock:
            if self._fd < 0:
                return
            os.close(self._fd)
            self._fd = -1
            _held_dirs.discard(self.root)


def _lock_holder(fd: int) -> str:
    query = _FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, 0, 1, 0)
    try:
        lock_type, _, _, _, pid = _FLOCK.unpack(fcntl.fcntl(fd, fcntl.F_GETLK, query))
    except OSError:
        return "unknown"
    return str(pid) if lock_type != fcntl.F_UNLCK and pid > 0 else "unknown"


def abort_file_exists(path: str | os.PathLike[str]) -> bool:
    """True when the previous run left its ``abort`` file behind (it did not shut down)."""
    return os.path.exists(path)


def create_abort_file(path: str | os.PathLike[str]) -> None:
    """Create the empty ``abort`` file that marks a running store."""
    try:
        with open(path, "wb") as marker:
            os.fsync(marker.fileno())
    except OSError as exc:
        raise StoreError(f"cannot create {os.fspath(path)}: {exc.strerror}") from exc


def delete_abort_file(path: str | os.PathLike[str]) -> None:
    """Remove the ``abort`` file on a clean shutdown."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise StoreError(f"cannot delete {os.fspath(path)}: {exc.strerror}") from exc
