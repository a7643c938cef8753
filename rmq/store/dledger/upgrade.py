"""A classic commitlog kept below a DLedger log: a store switched to ``enableDLegerCommitLog``.

RocketMQ 4.9.8's DLedgerCommitLog upgrades a classic store in place.  The first time it starts
on one (commitlog files, no DLedger data files) it recovers the old commitlog as a classic
broker does, closes its last file with a BLANK record at the end of the valid records (unless
one is there already), and creates the DLedger log's first data file at the old log's end,
``dividedCommitlogOffset``.  From then on the data files' names say where the DLedger log
starts; offsets below it are read from the old commitlog, offsets from it on from the DLedger
log, so every message keeps the commitlog offset, msgId and queue offsets it had.

:func:`close_classic_log` does the closing, :func:`start_dledger_log` creates the first data
file, and :class:`JoinedFileQueue` is the read view of both logs the store reads through.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from rmq.common.recordwalk import BLANK_MAGIC, END_FILE_MIN_BLANK_LENGTH, encode_blank_into
from rmq.store.errors import StoreError
from rmq.store.layout import parse_offset_file_name
from rmq.store.mappedfile import MappedFile, MappedFileQueue, TruncatedRange


def first_file_offset(directory: str) -> int | None:
    """The offset of the oldest 20-digit file of `directory` (None when it has none)."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return None
    offsets = [o for o in map(parse_offset_file_name, names) if o is not None]
    return min(offsets) if offsets else None


def close_classic_log(old: MappedFileQueue) -> int:
    """Close the recovered classic log: a BLANK record where its valid records end (unless
    one is there, or fewer than 8 bytes remain), its last file taken as full and flushed.
    Returns ``dividedCommitlogOffset``, the end of its last file."""
    last = old.last_file()
    if last is None:
        raise StoreError(f"{old.store_path} has no commitlog file to close")
    pos = last.wrote_position
    remaining = last.file_size - pos
    if remaining >= END_FILE_MIN_BLANK_LENGTH:
        magic = int.from_bytes(last.view[pos + 4 : pos + 8], "big")
        if magic != BLANK_MAGIC:
            encode_blank_into(last.buffer, pos, remaining)
    last.appended(last.file_size)
    last.flush()
    return last.file_tail_offset


def start_dledger_log(data_dir: str, file_size: int, divided: int) -> None:
    """Create the DLedger log's first data file at `divided` (before the log is loaded)."""
    queue = MappedFileQueue(data_dir, file_size)
    queue.load()
    if not queue.files:
        queue.create_next_file(divided)
    queue.close()


class JoinedFileQueue(MappedFileQueue):
    """The classic files below `divided` and the DLedger data files from it on, read as one
    stream of commitlog offsets.  Read-only: each part is written (and closed) by its owner.
    """

    def __init__(self, old: MappedFileQueue, new: MappedFileQueue, divided: int) -> None:
        super().__init__(new.store_path, new.mapped_file_size)
        self.old = old
        self.new = new
        self.divided = divided

    def load(self) -> None:
        """Nothing: the parts are loaded by their owners."""

    @property
    def files(self) -> Sequence[MappedFile]:
        return (*self.old.files, *self.new.files)

    def last_file(self) -> MappedFile | None:
        return self.new.last_file() or self.old.last_file()

    def min_offset(self) -> int:
        return self.old.min_offset()

    def max_offset(self) -> int:
        return self.new.max_offset() if self.new.files else self.divided

    def find_mapped_file_by_offset(
        self, offset: int, return_first_on_not_found: bool = False
    ) -> MappedFile | None:
        part = self.old if offset < self.divided else self.new
        found = part.find_mapped_file_by_offset(offset)
        if found is None and return_first_on_not_found:
            return self.old.find_mapped_file_by_offset(self.old.min_offset(), True)
        return found

    def flush(self, least_pages: int = 0) -> int:
        return self.new.flush(least_pages)

    def close(self) -> None:
        """Nothing: the parts are closed by their owners."""

    def _read_only(self) -> StoreError:
        return StoreError("the classic commitlog below a DLedger log is read-only")

    def get_last_mapped_file(
        self, start_offset: int = 0, need_create: bool = True
    ) -> MappedFile | None:
        raise self._read_only()

    def create_next_file(self, start_offset: int = 0) -> MappedFile:
        raise self._read_only()

    def truncate_dirty_files(self, offset: int) -> list[TruncatedRange]:
        raise self._read_only()

    def destroy(self) -> None:
        raise self._read_only()
