"""The store ``checkpoint`` file: how far each kind of store file is known to be on disk.

The file is one 4096-byte page, mapped, with three big-endian int64 store timestamps at
offsets 0, 8 and 16 and zeros after them:

* ``physic_msg_timestamp``: store time of the last commitlog record flushed;
* ``logics_msg_timestamp``: store time of the last consume-queue entry flushed;
* ``index_msg_timestamp``: store time of the last message in a flushed index file.

The flush thread sets the fields after each successful flush and calls :meth:`flush`, which
writes them into the page and ``msync``s it.  Abnormal recovery reads them back to decide
from which commitlog file to re-dispatch: :meth:`min_timestamp` (physic and logics, minus a
3-second margin) and :meth:`min_timestamp_index` (the index time as well).
"""

from __future__ import annotations

import mmap
import os
import struct
from typing import Final

from rmq.store.errors import StoreError
from rmq.store.mappedfile import sync_mapping

CHECKPOINT_FILE_SIZE: Final = 4096
RECOVERY_MARGIN_MS: Final = 3000
_TIMESTAMPS: Final = struct.Struct(">qqq")


def checkpoint_timestamps(data: bytes) -> tuple[int, int, int] | None:
    """The three timestamps (physic, logics, index) of a checkpoint file's bytes, or None
    when it is too short to hold them (the offline reader's view of the file)."""
    if len(data) < _TIMESTAMPS.size:
        return None
    physic, logics, index = _TIMESTAMPS.unpack_from(data)
    return physic, logics, index


class StoreCheckpoint:
    """The mapped checkpoint file; created zero-filled when missing.

    Setters are plain attribute writes (from the flush thread); :meth:`flush` persists them.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StoreError(f"cannot open checkpoint {self.path}: {exc.strerror}") from exc
        try:
            if os.fstat(fd).st_size < CHECKPOINT_FILE_SIZE:
                os.ftruncate(fd, CHECKPOINT_FILE_SIZE)
            self._page = mmap.mmap(fd, CHECKPOINT_FILE_SIZE)
        except OSError as exc:
            raise StoreError(f"cannot map checkpoint {self.path}: {exc.strerror}") from exc
        finally:
            os.close(fd)
        physic, logics, index = _TIMESTAMPS.unpack_from(self._page, 0)
        self.physic_msg_timestamp: int = physic
        self.logics_msg_timestamp: int = logics
        self.index_msg_timestamp: int = index

    def min_timestamp(self) -> int:
        """``min(physic, logics) - 3000`` ms, not below 0: where recovery starts looking."""
        return max(
            min(self.physic_msg_timestamp, self.logics_msg_timestamp) - RECOVERY_MARGIN_MS, 0
        )

    def min_timestamp_index(self) -> int:
        """:meth:`min_timestamp`, also bounded by the index timestamp."""
        return min(self.min_timestamp(), self.index_msg_timestamp)

    def flush(self) -> None:
        """Write the three timestamps into the page and make it durable (:func:`sync_mapping`,
        which unlike ``mmap.flush`` lets other threads run while the disk works)."""
        _TIMESTAMPS.pack_into(
            self._page,
            0,
            self.physic_msg_timestamp,
            self.logics_msg_timestamp,
            self.index_msg_timestamp,
        )
        sync_mapping(self.path, self._page)

    def close(self) -> None:
        """Flush and unmap."""
        self.flush()
        self._page.close()
