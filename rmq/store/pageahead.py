"""Page-ahead: brings the commitlog's next pages into the page cache before the writer
reaches them, on a thread of its own.

Appends are writes into a shared mapping.  A write to a page that is not in the page cache
faults, and the kernel fills the page in the faulting thread, reading ahead as it does for
a sequential reader: up to the device's ``read_ahead_kb`` at a time (8 MiB on this
project's virtual disks), zero-filled for the file's preallocated blocks.  On the writer's
thread that is a pause of tens of milliseconds every few MiB, with the GIL held, so every
request on the event loop waits too; it grows as the kernel's read-ahead window grows, which
is why a broker that has written a few GiB showed it and a freshly started one did not.

:class:`PageAhead` keeps up to ``ahead`` bytes past the write position of the last file in
the cache.  It maps the file read-only itself and asks the kernel to populate the window
(``madvise(MADV_POPULATE_READ)``, Linux 5.14, called through ctypes so the GIL is released
while the kernel works): the kernel takes its page-fault path, with the same read-ahead
(and the same large folios) as the writer's own fault would, in this thread.  Where that
call does not exist it falls back to ``posix_fadvise(POSIX_FADV_WILLNEED)``, which also
fills the cache without the GIL but page by page, a cost measured at a fifth of the batched
send rate.  The writer's faults then find their pages cached and cost a few microseconds
each.  It never writes, so a file it reads ahead of is unchanged; when it falls behind (or
the platform has neither call) the writer faults as before, nothing else differs.

The thread wakes rarely and asks in large pieces: every time it takes the GIL back (after a
wait or a system call) the event loop's thread has to give it up, and with the event loop
busy on one core such hand-offs cost more than the work between them.  It looks every
``TICK_S`` and refills only once the writer has used ``refill`` bytes of the window, in one
call.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import logging
import mmap
import os
import threading
from typing import Final

from rmq.store.mappedfile import MappedFile, MappedFileQueue

log = logging.getLogger("rmq.store")

AHEAD_BYTES: Final = 64 * 1024 * 1024
"""How far past the write position the cache is filled."""

REFILL_BYTES: Final = 16 * 1024 * 1024
"""How much of the window the writer uses before it is filled again (in one call)."""

TICK_S: Final = 0.1
"""How often the thread looks at the write position: at the fastest rate measured here
(about 130 MB/s of batched sends) the writer uses 13 MiB between two looks, so the window
never drops below ``AHEAD_BYTES - REFILL_BYTES - 13 MiB``."""


MADV_POPULATE_READ: Final = 22
"""Linux's ``madvise`` advice that faults a range in as reads would (5.14 and later)."""


def supported() -> bool:
    """Whether this platform can read ahead this way (Linux and most Unixes)."""
    return hasattr(os, "posix_fadvise") and hasattr(os, "POSIX_FADV_WILLNEED")


class _Populator:
    """A read-only shared mapping of one file, populated by ``madvise`` through ctypes
    (CPython's ``mmap.madvise`` keeps the GIL while the kernel fills the pages)."""

    def __init__(self, libc: ctypes.CDLL, fd: int, size: int) -> None:
        self._libc = libc
        self.size = size
        address = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if address is None or address == ctypes.c_void_p(-1).value:
            raise OSError(ctypes.get_errno(), "mmap of the page-ahead window failed")
        self.address: int = address

    def populate(self, start: int, end: int) -> None:
        start -= start % mmap.PAGESIZE
        if self._libc.madvise(self.address + start, end - start, MADV_POPULATE_READ) != 0:
            raise OSError(ctypes.get_errno(), "madvise(MADV_POPULATE_READ) failed")

    def close(self) -> None:
        self._libc.munmap(self.address, self.size)


@functools.cache
def _libc() -> ctypes.CDLL | None:
    """The C library (the process's own symbols) with mmap, madvise and munmap typed, or
    None where they are not there."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        for name in ("mmap", "madvise", "munmap"):
            getattr(libc, name)
    except (OSError, AttributeError):
        return None
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = (
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_long,
    )
    libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
    return libc


class PageAhead:
    """The read-ahead thread of one :class:`MappedFileQueue` (the commitlog's)."""

    name = "commitlog-page-ahead"

    def __init__(
        self, queue: MappedFileQueue, *, ahead: int = AHEAD_BYTES, refill: int = REFILL_BYTES
    ) -> None:
        if not 0 < refill <= ahead:
            raise ValueError(
                f"ahead and refill must be positive, refill at most ahead, got {ahead} and {refill}"
            )
        self._queue = queue
        self._ahead = ahead
        self._refill = refill
        self._file: MappedFile | None = None
        self._fd = -1
        self._libc = _libc() if hasattr(mmap, "MAP_SHARED") else None
        self._populator: _Populator | None = None
        self.populating = self._libc is not None
        """Whether the window is filled by ``MADV_POPULATE_READ`` (else ``posix_fadvise``);
        turned off for good the first time the kernel refuses the advice."""
        self.filled_to = 0
        """Position in the current file up to which the cache has been filled."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)

    def start(self) -> None:
        if supported():
            self._thread.start()

    def shutdown(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self._release()

    def _loop(self) -> None:
        while not self._stop.wait(TICK_S):
            try:
                self.run_once()
            except OSError as exc:
                # A file deleted or truncated under us: start again with the next look.
                log.debug("page-ahead of %s: %s", self._file and self._file.path, exc)
                self._release()

    def run_once(self) -> int:
        """Fill the window past the last file's write position; returns the bytes asked for."""
        last = self._queue.last_file()
        if last is None:
            self._release()
            return 0
        if last is not self._file:
            self._release()
            self._fd = os.open(last.path, os.O_RDONLY)
            self._file = last
            self.filled_to = last.wrote_position
            if self.populating and self._libc is not None:
                try:
                    self._populator = _Populator(self._libc, self._fd, last.file_size)
                except OSError as exc:
                    log.debug(
                        "page-ahead: no mapping of %s (%s), using posix_fadvise", last.path, exc
                    )
                    self.populating = False
        wrote = last.wrote_position
        self.filled_to = max(self.filled_to, wrote)
        target = min(wrote + self._ahead, last.file_size)
        asked = target - self.filled_to
        # Wait until the writer has used a refill's worth, except for a file's last bytes.
        if asked <= 0 or (asked < self._refill and target < last.file_size):
            return 0
        self._fill(self.filled_to, target)
        self.filled_to = target
        return asked

    def _fill(self, start: int, end: int) -> None:
        if self._populator is not None:
            try:
                self._populator.populate(start, end)
                return
            except OSError as exc:
                if exc.errno != errno.EINVAL:
                    raise
                # A kernel older than 5.14: the advice is unknown there.
                log.debug("page-ahead: MADV_POPULATE_READ refused, using posix_fadvise")
                self.populating = False
                self._populator.close()
                self._populator = None
        os.posix_fadvise(self._fd, start, end - start, os.POSIX_FADV_WILLNEED)

    def _release(self) -> None:
        if self._populator is not None:
            self._populator.close()
            self._populator = None
        if self._fd >= 0:
            os.close(self._fd)
        self._fd = -1
        self._file = None
        self.filled_to = 0
