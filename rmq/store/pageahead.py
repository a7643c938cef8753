"""Page-ahead: brings the commitlog's next pages into the page cache before the writer
reaches them, on a thread of its own.

Appends are writes into a shared mapping.  A write to a page that is not in the page cache
faults, and the kernel fills the page in the faulting thread, reading ahead as it does for
a sequential reader: up to the device's ``read_ahead_kb`` at a time (8 MiB on this
project's virtual disks), zero-filled for the file's preallocated blocks.  On the writer's
thread that is a pause of tens of milliseconds every few MiB, with the GIL held, so every
request on the event loop waits too; it grows as the kernel's read-ahead window grows, which
is why a broker that has written a few GiB showed it and a freshly started one did not.

:class:`PageAhead` keeps a window of ``ahead`` bytes past the write position of the last
file in the cache by calling ``posix_fadvise(POSIX_FADV_WILLNEED)`` on it in ``chunk``
pieces (the call releases the GIL; the kernel does the filling in this thread).  The
writer's faults then find their pages cached and cost a few microseconds each.  It never
writes, so a file it reads ahead of is unchanged; when it falls behind (or the platform has
no ``posix_fadvise``) the writer faults as before, nothing else differs.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Final

from rmq.store.mappedfile import MappedFile, MappedFileQueue

log = logging.getLogger("rmq.store")

AHEAD_BYTES: Final = 32 * 1024 * 1024
"""How far past the write position the cache is kept filled."""

CHUNK_BYTES: Final = 4 * 1024 * 1024
"""Bytes asked for in one ``posix_fadvise`` call."""

TICK_S: Final = 0.02
"""How often the thread looks at the write position (more often than a 32 MiB window
fills at any rate this broker reaches)."""


def supported() -> bool:
    """Whether this platform can read ahead this way (Linux and most Unixes)."""
    return hasattr(os, "posix_fadvise") and hasattr(os, "POSIX_FADV_WILLNEED")


class PageAhead:
    """The read-ahead thread of one :class:`MappedFileQueue` (the commitlog's)."""

    name = "commitlog-page-ahead"

    def __init__(
        self, queue: MappedFileQueue, *, ahead: int = AHEAD_BYTES, chunk: int = CHUNK_BYTES
    ) -> None:
        if ahead <= 0 or chunk <= 0:
            raise ValueError(f"ahead and chunk must be positive, got {ahead} and {chunk}")
        self._queue = queue
        self._ahead = ahead
        self._chunk = chunk
        self._file: MappedFile | None = None
        self._fd = -1
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
        wrote = last.wrote_position
        self.filled_to = max(self.filled_to, wrote)
        target = min(wrote + self._ahead, last.file_size)
        asked = 0
        while self.filled_to < target and not self._stop.is_set():
            length = min(self._chunk, target - self.filled_to)
            os.posix_fadvise(self._fd, self.filled_to, length, os.POSIX_FADV_WILLNEED)
            self.filled_to += length
            asked += length
        return asked

    def _release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
        self._fd = -1
        self._file = None
        self.filled_to = 0
