"""One DLedger node's log on disk: the data and index file streams and their recovery.

Layout under the node's directory (``<storePathRootDir>/dledger-<selfId>``): ``data/`` (or the
configured data directory) and ``index/``, each a stream of mapped files named by their
20-digit start offset; ``checkpoint`` and ``currterm`` beside them (``statefiles``).  The
byte layouts are in ``entry``.

What the node's replication needs, and nothing about roles: :meth:`Ledger.append_as_leader`
gives the next index, the term and the position; :meth:`Ledger.append_as_follower` writes an
entry the leader built and checks it lands at the same position; :meth:`Ledger.truncate`
makes a given entry the last; :meth:`Ledger.get` reads by index; the committed index only
moves forward (:meth:`Ledger.update_committed_index`) and ``committed_pos`` is the end of the
last committed entry, the limit of what may be dispatched.

Writes go header-last: the body and the header beyond the first 8 bytes first, then magic and
size, then the index unit, so that a process killed in the middle leaves an entry that reads
as the end of the log.  Recovery (:meth:`Ledger.recover`) does what DLedger 0.3.1.2's does:
starting from the third-last data file (earlier if that file's first entry does not match
its index unit), it walks entries while magic, size, pos, index (consecutive) and term (not
decreasing) are consistent, follows blanks to the next file, rewrites index units that do not
match, and cuts the data and index streams after the last good entry.  The committed index
comes back from the checkpoint, capped at the end of the log; entries after it stay (the
leader commits or truncates them).

Threads: one writer (the node) under :attr:`Ledger.lock`; :meth:`Ledger.flush` may run on
another thread; readers of committed entries may run on any thread.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from typing import Any, NamedTuple

from rmq.store.dledger import statefiles
from rmq.store.dledger.entry import (
    BLANK_MAGIC,
    CURRENT_MAGIC,
    HEADER_SIZE,
    INDEX_UNIT_SIZE,
    MIN_BLANK_LEN,
    Entry,
    EntryError,
    decode_entry,
    decode_index,
    encode_blank,
    encode_entry,
    encode_index,
    read_header,
    set_pos,
)
from rmq.store.errors import StoreError
from rmq.store.mappedfile import MappedFile, MappedFileQueue, TruncatedRange

log = logging.getLogger(__name__)

DATA_FILE_SIZE = 1 << 30
INDEX_FILE_SIZE = INDEX_UNIT_SIZE * 5 * 1024 * 1024

AppendHook = Callable[[Any, int, int], None]
"""Called with the encoded entry buffer, the body's offset in it (48) and the entry's pos,
before the bytes are written: DLedgerCommitLog's hook puts ``pos + 48`` into the record."""


class LedgerError(StoreError):
    """An entry cannot be appended, read or truncated as asked; ``code`` names DLedger's
    response code for it (DISK_ERROR, INDEX_OUT_OF_RANGE, INCONSISTENT_INDEX, ...)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class Recovered(NamedTuple):
    """What :meth:`Ledger.recover` found and cut."""

    begin_index: int
    end_index: int
    end_term: int
    committed_index: int
    cut: list[TruncatedRange]


def node_dir(store_root: str, self_id: str) -> str:
    """``<storePathRootDir>/dledger-<selfId>`` (DLedgerConfig.getDefaultPath)."""
    return os.path.join(store_root, f"dledger-{self_id}")


class Ledger:
    """The data and index streams of one node, with its ledger positions."""

    def __init__(
        self,
        base_dir: str,
        data_dir: str | None = None,
        data_file_size: int = DATA_FILE_SIZE,
        index_file_size: int = INDEX_FILE_SIZE,
    ) -> None:
        if index_file_size % INDEX_UNIT_SIZE:
            raise ValueError(f"index file size {index_file_size} is not a multiple of 32")
        if data_file_size < HEADER_SIZE + MIN_BLANK_LEN + 1:
            raise ValueError(f"data file size {data_file_size} is too small")
        self.base_dir = base_dir
        self.data = MappedFileQueue(data_dir or os.path.join(base_dir, "data"), data_file_size)
        self.index = MappedFileQueue(os.path.join(base_dir, "index"), index_file_size)
        self.lock = threading.RLock()
        self._flush_guard = threading.Lock()
        """Held by :meth:`flush` (which may run on another thread) and around truncation, so
        a flush never records as durable a position a truncation has just moved back."""
        self.begin_index = -1
        self.end_index = -1
        self.end_term = -1
        self.committed_index = -1
        self.committed_pos = -1
        self._first_pos = 0  # where the first data file's first entry starts

    # -- stream helpers ------------------------------------------------------------------

    @staticmethod
    def _pre_append(queue: MappedFileQueue, length: int, use_blank: bool) -> MappedFile:
        mapped = queue.get_last_mapped_file(queue.max_offset())
        assert mapped is not None
        blank = MIN_BLANK_LEN if use_blank else 0
        if length + blank > mapped.remaining():
            if not use_blank:
                raise LedgerError("DISK_ERROR", f"{length} bytes do not fit {mapped.path}")
            following = queue.create_next_file()
            mapped.append(encode_blank(mapped.remaining()))
            mapped = following
        return mapped

    @staticmethod
    def _write(mapped: MappedFile, data: Any) -> int:
        """Write ``data`` at the file's wrote position, its first 8 bytes last; returns the
        global offset it went to."""
        pos = mapped.wrote_position
        end = pos + len(data)
        if end > mapped.file_size:
            raise LedgerError("DISK_ERROR", f"{len(data)} bytes do not fit {mapped.path}")
        view = memoryview(data)
        mapped.buffer[pos + 8 : end] = view[8:]
        mapped.buffer[pos : pos + 8] = view[:8]
        mapped.appended(end)
        return mapped.file_from_offset + pos

    @staticmethod
    def _truncate_stream(queue: MappedFileQueue, offset: int) -> list[TruncatedRange]:
        """Make ``offset`` the end of ``queue``; when its files cannot end there (none, or
        they end before it) they are replaced by one file whose data starts at ``offset``."""
        cut = queue.truncate_dirty_files(offset)
        if queue.files and queue.max_offset() == offset:
            return cut
        if not queue.files and offset == 0:
            return cut
        for mapped in queue.files:
            cut.append(TruncatedRange(mapped.path, 0, mapped.file_size))
        queue.destroy()
        mapped = queue.create_next_file(offset)
        mapped.appended(offset - mapped.file_from_offset)
        mapped.flushed_position = mapped.wrote_position
        queue.flushed_where = offset
        return cut

    @staticmethod
    def _read(queue: MappedFileQueue, offset: int, size: int) -> memoryview | None:
        mapped = queue.find_mapped_file_by_offset(offset)
        if mapped is None:
            return None
        pos = offset - mapped.file_from_offset
        if pos + size > mapped.wrote_position:
            return None
        return mapped.slice(pos, size)

    def _append_index(self, entry: Entry) -> None:
        self._append_unit(entry.pos, entry.size, entry.magic, entry.index, entry.term)

    def _append_unit(self, pos: int, size: int, magic: int, index: int, term: int) -> None:
        mapped = self._pre_append(self.index, INDEX_UNIT_SIZE, False)
        at = self._write(mapped, encode_index(pos, size, magic, index, term))
        if at != index * INDEX_UNIT_SIZE:
            raise LedgerError("DISK_ERROR", f"index unit of {index} went to {at}")

    # -- appending -----------------------------------------------------------------------

    def append_as_leader(self, term: int, body: bytes, hook: AppendHook | None = None) -> Entry:
        """Append ``body`` as the next entry of ``term``; returns the entry as written."""
        with self.lock:
            index = self.end_index + 1
            entry = Entry(index, term, 0, body)
            buf = encode_entry(entry)
            mapped = self._pre_append(self.data, len(buf), True)
            pos = mapped.file_from_offset + mapped.wrote_position
            set_pos(buf, pos)
            if hook is not None:
                hook(buf, HEADER_SIZE, pos)
            entry = entry.with_pos(pos, bytes(buf[HEADER_SIZE:]))
            self._write(mapped, buf)
            self._append_index(entry)
            self._appended(entry)
            return entry

    def append_as_follower(self, entry: Entry) -> Entry:
        """Append an entry the leader built; it must be the next index and land at its pos."""
        with self.lock:
            if entry.index != self.end_index + 1:
                raise LedgerError(
                    "INCONSISTENT_INDEX", f"entry {entry.index} after end {self.end_index}"
                )
            buf = encode_entry(entry)
            mapped = self._pre_append(self.data, len(buf), True)
            at = mapped.file_from_offset + mapped.wrote_position
            if at != entry.pos:
                raise LedgerError(
                    "DISK_ERROR", f"entry {entry.index} at {at}, leader's at {entry.pos}"
                )
            self._write(mapped, buf)
            self._append_index(entry)
            self._appended(entry)
            return entry

    def _appended(self, entry: Entry) -> None:
        self.end_index = entry.index
        self.end_term = entry.term
        if self.begin_index == -1:
            self.begin_index = entry.index
            self._first_pos = entry.pos

    def truncate(self, entry: Entry) -> int:
        """Make ``entry`` the last of the log: everything after it goes; when the log does
        not hold this very entry it is written at its pos.  Returns its index."""
        with self.lock:
            try:
                existed = entry.same_as(self.get(entry.index))
            except LedgerError:
                existed = False
            truncate_pos = entry.pos + entry.size if existed else entry.pos
            if truncate_pos != self.data.max_offset():
                log.info(
                    "truncate: entry %d, data end %d -> %d",
                    entry.index,
                    self.data.max_offset(),
                    truncate_pos,
                )
            with self._flush_guard:
                self._truncate_stream(self.data, truncate_pos)
            files = self.data.files
            if self.begin_index == -1 or (
                files
                and files[0].file_from_offset < truncate_pos
                and files[0].view[0:4] == bytes(4)
            ):
                self._first_pos = entry.pos  # the data now starts with this entry
            if not existed:
                mapped = self._pre_append(self.data, entry.size, True)
                at = self._write(mapped, encode_entry(entry))
                if at != entry.pos:
                    raise LedgerError("DISK_ERROR", f"entry {entry.index} at {at}, not {entry.pos}")
            with self._flush_guard:
                self._truncate_stream(self.index, entry.index * INDEX_UNIT_SIZE)
            self._append_index(entry)
            self.end_index = entry.index
            self.end_term = entry.term
            self._revise_begin()
            if self.committed_index > self.end_index:
                self.committed_index = self.end_index
                self.committed_pos = truncate_pos if existed else entry.pos + entry.size
            return entry.index

    def _revise_begin(self) -> None:
        files = self.data.files
        if not files:
            self.begin_index = -1
            return
        first = files[0]
        start = (
            self._first_pos - first.file_from_offset
            if first.file_from_offset <= self._first_pos < first.file_tail_offset
            else 0
        )
        head = read_header(first.view, start)
        if head.magic != CURRENT_MAGIC:
            self.begin_index = -1
            return
        self.begin_index = head.index
        self._first_pos = first.file_from_offset + start

    # -- reading -------------------------------------------------------------------------

    def _check_index(self, index: int) -> None:
        if index < 0 or index > self.end_index:
            raise LedgerError(
                "INDEX_OUT_OF_RANGE", f"{index} not in {self.begin_index}-{self.end_index}"
            )
        if index < self.begin_index:
            raise LedgerError("INDEX_LESS_THAN_LOCAL_BEGIN", f"{index} < {self.begin_index}")

    def pos_and_size(self, index: int) -> tuple[int, int]:
        self._check_index(index)
        raw = self._read(self.index, index * INDEX_UNIT_SIZE, INDEX_UNIT_SIZE)
        if raw is None:
            raise LedgerError("DISK_ERROR", f"no index unit for {index}")
        unit = decode_index(raw)
        return unit.pos, unit.size

    def get(self, index: int) -> Entry:
        """The entry at ``index`` (LedgerError INDEX_OUT_OF_RANGE outside the log)."""
        pos, size = self.pos_and_size(index)
        raw = self._read(self.data, pos, size)
        if raw is None:
            raise LedgerError("DISK_ERROR", f"no data for entry {index} at {pos}")
        try:
            entry = decode_entry(raw)
        except EntryError as exc:
            raise LedgerError("DISK_ERROR", str(exc)) from exc
        if entry.pos != pos or entry.index != index:
            raise LedgerError(
                "DISK_ERROR", f"entry {index}: index unit says {pos}, entry {entry.pos}"
            )
        return entry

    def read_at(self, pos: int) -> tuple[int, memoryview | None]:
        """The data stream at ``pos``: ``(next pos, entry bytes)``; a blank gives the next
        file's start and None; past the written end ``(pos, None)``."""
        mapped = self.data.find_mapped_file_by_offset(pos)
        if mapped is None:
            return pos, None
        local = pos - mapped.file_from_offset
        if local + MIN_BLANK_LEN > mapped.wrote_position:
            return pos, None
        head = (
            read_header(mapped.view, local)
            if local + HEADER_SIZE <= mapped.wrote_position
            else None
        )
        if head is None or head.magic == BLANK_MAGIC:
            if (
                head is None
                and int.from_bytes(mapped.view[local : local + 4], "big", signed=True)
                != BLANK_MAGIC
            ):
                return pos, None
            return mapped.file_tail_offset, None
        if local + head.size > mapped.wrote_position:
            return pos, None
        return pos + head.size, mapped.slice(local, head.size)

    # -- committing ----------------------------------------------------------------------

    def update_committed_index(self, index: int) -> None:
        """Move the committed index forward to ``index`` (capped at the end of the log);
        never back, never below the begin index (DLedger's rules; the caller checks the
        term)."""
        with self.lock:
            if index == -1 or self.end_index == -1 or index == self.committed_index:
                return
            if index < self.committed_index or index < self.begin_index:
                return
            index = min(index, self.end_index)
            pos, size = self.pos_and_size(index)
            self.committed_index = index
            self.committed_pos = pos + size

    def persist_checkpoint(self) -> None:
        statefiles.write_checkpoint(self.base_dir, self.end_index, self.committed_index)

    # -- recovery ------------------------------------------------------------------------

    def _index_matches(self, pos: int, magic: int, size: int, index: int, term: int) -> bool:
        raw = self._read(self.index, index * INDEX_UNIT_SIZE, INDEX_UNIT_SIZE)
        if raw is None:
            return False
        unit = decode_index(raw)
        return (unit.magic, unit.pos, unit.size, unit.index, unit.term) == (
            magic,
            pos,
            size,
            index,
            term,
        )

    def _first_entry_ok(self, mapped: MappedFile) -> bool:
        try:
            head = read_header(mapped.view, 0)
        except EntryError:
            return False
        return (
            head.magic == CURRENT_MAGIC
            and head.size > HEADER_SIZE - 4
            and head.pos == mapped.file_from_offset
            and head.size == head.body_size + HEADER_SIZE
            and self._index_matches(head.pos, head.magic, head.size, head.index, head.term)
        )

    def recover(self) -> Recovered:
        """Load the files and find the end of the log (see the module docstring)."""
        with self.lock:
            self.data.load()
            self.index.load()
            cut: list[TruncatedRange] = []
            files = list(self.data.files)
            if not files:
                cut += self._truncate_stream(self.index, 0)
                return self._recovered(cut)
            start = max(len(files) - 3, 0)
            while start > 0 and not self._first_entry_ok(files[start]):
                start -= 1
            number = start
            mapped = files[number]
            local = 0
            last_index = last_term = -1
            write_index = False
            while True:
                process = mapped.file_from_offset + local
                if (
                    local + 4 <= mapped.file_size
                    and int.from_bytes(mapped.view[local : local + 4], "big", signed=True)
                    == BLANK_MAGIC
                ):
                    number += 1
                    if number >= len(files):
                        process = mapped.file_tail_offset
                        break
                    mapped, local = files[number], 0
                    continue
                try:
                    head = read_header(mapped.view, local)
                except EntryError:
                    break
                if head.size == 0:
                    break
                if (
                    head.pos != process
                    or head.size != head.body_size + HEADER_SIZE
                    or head.magic != CURRENT_MAGIC
                    or (last_index != -1 and head.index != last_index + 1)
                    or head.term < last_term
                    or head.size <= HEADER_SIZE - 4
                    or local + head.size > mapped.file_size
                ):
                    break
                if not write_index and not self._index_matches(
                    process, head.magic, head.size, head.index, head.term
                ):
                    cut += self._truncate_stream(self.index, head.index * INDEX_UNIT_SIZE)
                    write_index = True
                if write_index:
                    self._append_unit(process, head.size, head.magic, head.index, head.term)
                last_index, last_term = head.index, head.term
                local += head.size
            end = process
            last = files[-1]
            if last.file_from_offset - end > last.file_size:
                raise StoreError(
                    f"{self.data.store_path}: the log's valid end {end} is more than a file "
                    f"before its last file {last.path}; check the files by hand"
                )
            cut += self._truncate_stream(self.data, end)
            cut += self._truncate_stream(self.index, (last_index + 1) * INDEX_UNIT_SIZE)
            self.end_index, self.end_term = last_index, last_term
            if last_index != -1:
                self._first_pos = files[0].file_from_offset
                self._revise_begin()
                self.get(last_index)
            committed = statefiles.read_committed_index(self.base_dir)
            if committed is not None:
                self.update_committed_index(committed)
            return self._recovered(cut)

    def _recovered(self, cut: list[TruncatedRange]) -> Recovered:
        return Recovered(self.begin_index, self.end_index, self.end_term, self.committed_index, cut)

    # -- flushing and closing ------------------------------------------------------------

    def flush(self) -> None:
        """Write both streams' new bytes to disk (safe on any thread)."""
        with self._flush_guard:
            self.data.flush()
            self.index.flush()

    def close(self) -> None:
        """Flush both streams, write the checkpoint and unmap."""
        with self.lock:
            self.flush()
            self.persist_checkpoint()
            self.data.close()
            self.index.close()
