"""Validation of a whole store in one pass over the commitlog (:func:`validate_store`).

Every problem is reported as a :class:`~rmq.store.offline.problems.Problem` (kind, file,
byte offset in that file, message); corrupt input never raises.  The consume queue and index
checks ride along with the scan instead of re-reading records:

* a record that belongs in a consume queue (not a PREPARED or ROLLBACK transaction record)
  must find, at its queue offset in its (topic, queue id) queue, an entry with its physical
  offset and size; every queue then counts its entries pointing into the commitlog, and only
  a queue whose count differs from its matches is re-read entry by entry, each entry decoding
  the record it points at to say exactly what is wrong (not a record, size, topic / queue id,
  queue offset);
* index entries are in commitlog order, so they are merged with the walk: entries at a
  record's offset must carry the hash of one of its ``topic#key`` strings; entries that fall
  between records or past the end are checked one by one; after the newest indexed record
  (or from where ``recovery/index-behind`` says a broker's index fell behind), every record
  with keys (but a ROLLBACK) must have an entry for each of them: an index that stopped.
  Records before it are not checked for missing entries: after a crash Apache deletes the
  index files newer than its checkpoint and re-indexes only what it dispatches again, which
  can leave records in the middle unindexed, and that is how its stores are.

Problems of one kind in one file are capped
(:data:`~rmq.store.offline.problems.PROBLEMS_PER_FILE_AND_KIND`), with a summary of how many
more there were.  Files are checked as files too: sizes, gaps between consecutive files, the
checkpoint's size and the ``config/*.json`` files.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from rmq.common.javahash import index_key_hash
from rmq.common.msgconst import KEY_SEPARATOR, PROPERTY_KEYS, PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX
from rmq.common.sysflag import (
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    TRANSACTION_TYPE_MASK,
)
from rmq.store.checkpoint import CHECKPOINT_FILE_SIZE
from rmq.store.configfile import ConfigFileError
from rmq.store.consumequeue import CQ_STORE_UNIT_SIZE, PRE_BLANK_SIZE, is_valid_entry
from rmq.store.errors import StoreError
from rmq.store.indexfile import ENTRY as ENTRY_INDEX
from rmq.store.indexfile import IndexEntry, IndexFile, index_key
from rmq.store.indexlag import MARKER_FILE
from rmq.store.layout import list_consume_queues
from rmq.store.offline.files import CONFIG_FILES, ReadOnlyFile, check_data_end, check_queue_files
from rmq.store.offline.problems import Problem, ProblemKind, ProblemLog, Report
from rmq.store.offline.queues import MappedQueue, map_queue, valid_entries
from rmq.store.offline.scan import Progress, RecordFrame, property_value
from rmq.store.recoveryreport import REPORT_DIR

if TYPE_CHECKING:
    from rmq.store.offline.reader import StoreReader

_NOT_DISPATCHED: Final = (TRANSACTION_PREPARED_TYPE, TRANSACTION_ROLLBACK_TYPE)
_BEYOND_ANY_OFFSET: Final = (1 << 63) - 1
_IndexHit = tuple[IndexFile, int, tuple[int, int, int, int]]
"""An index entry during validation: its file, number and raw fields (as :class:`IndexEntry`)."""


@dataclass(slots=True)
class ValidationReport:
    """The outcome of :func:`validate_store`."""

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


def validate_store(reader: StoreReader, progress: Progress | None = None) -> ValidationReport:
    """Check the whole store behind ``reader``; see the module docstring.

    ``progress`` follows the commitlog scan, which is nearly all of the work.
    """
    return _Validation(reader).run(progress)


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


class _Validation:
    """One validation run: the reader, the problems found and the report being filled."""

    def __init__(self, reader: StoreReader) -> None:
        self.reader = reader
        self.commitlog = reader.commitlog
        self.report = ValidationReport(reader.layout.root)
        self.problems = ProblemLog()
        self.index_from = _BEYOND_ANY_OFFSET
        """Records from this commitlog offset on must have their keys indexed."""
        self.unindexed: list[Any] = []
        """[first commitlog offset, count, first topic] of records lacking index entries."""

    def run(self, progress: Progress | None) -> ValidationReport:
        report = self.report
        problems = self.problems
        for path, reason in self.commitlog.errors:
            problems(ProblemKind.UNREADABLE_FILE, path, 0, reason)
        check_queue_files(self.commitlog.files, "commitlog", 1, problems)
        queues = self._open_queues()
        index_files = self.reader.open_index_files(problems)
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

    def _open_queues(self) -> dict[tuple[str, int], MappedQueue]:
        queues = {}
        for topic, queue_id, directory in list_consume_queues(
            self.reader.layout.consume_queue_root
        ):
            queue = map_queue(topic, queue_id, directory, self.problems)
            check_queue_files(queue.files, "consume queue", CQ_STORE_UNIT_SIZE, self.problems)
            queues[topic, queue_id] = queue
        return queues

    def _validate_commitlog(
        self,
        report: ValidationReport,
        queues: dict[tuple[str, int], MappedQueue],
        index_files: list[IndexFile],
        problems: Report,
        progress: Progress | None,
    ) -> None:
        report.commitlog_files = len(self.commitlog.files)
        report.min_physical_offset = self.commitlog.min_offset
        self.index_from = min(self._index_end(index_files) + 1, self._index_behind_from())
        with contextlib.closing(self._index_entries(index_files)) as index_entries:
            self._walk_and_match(report, queues, index_entries, problems, progress)
        report.bytes_scanned = sum(f.size for f in self.commitlog.files)
        report.index_files = len(index_files)
        if self.unindexed:
            first_physical, count, topic = self.unindexed
            problems(
                ProblemKind.INDEX_MISSING_ENTRY,
                self.reader.layout.index,
                0,
                f"{count} records with keys have no index entry for some or all of them "
                f"(first: commitlog offset {first_physical}, topic {topic})",
            )
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
        queues: dict[tuple[str, int], MappedQueue],
        index_entries: Iterator[_IndexHit],
        problems: Report,
        progress: Progress | None,
    ) -> None:
        """Walk the commitlog, matching each record with its consume queue entry and merging
        the index entries in (see the module docstring)."""
        pending = next(index_entries, None)
        pending_offset = _BEYOND_ANY_OFFSET if pending is None else pending[2][1]
        index_from = self.index_from
        records = 0
        index_entries_seen = 0
        end = self.commitlog.min_offset
        for frame in self.commitlog.walk(self.commitlog.min_offset, problems, True, progress):
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
            while pending is not None and pending_offset < physical_offset:
                self._check_index_entry(pending, problems)
                index_entries_seen += 1
                pending = next(index_entries, None)
                pending_offset = _BEYOND_ANY_OFFSET if pending is None else pending[2][1]
            if pending_offset > physical_offset:
                if physical_offset >= index_from and (
                    sys_flag & TRANSACTION_TYPE_MASK != TRANSACTION_ROLLBACK_TYPE
                    and _frame_key_hashes(frame)
                ):
                    self._note_unindexed(frame)
                continue
            hashes = _frame_key_hashes(frame)
            seen = set()
            while pending is not None and pending_offset == physical_offset:
                if pending[2][0] not in hashes:
                    self._report_index_key_mismatch(pending, topic, problems)
                    seen.update(hashes)  # reported as the mismatch
                seen.add(pending[2][0])
                index_entries_seen += 1
                pending = next(index_entries, None)
                pending_offset = _BEYOND_ANY_OFFSET if pending is None else pending[2][1]
            if physical_offset >= index_from and not seen.issuperset(hashes):
                self._note_unindexed(frame)
        while pending is not None:
            self._check_index_entry(pending, problems)
            index_entries_seen += 1
            pending = next(index_entries, None)
        report.records = records
        report.index_entries = index_entries_seen
        report.max_physical_offset = end

    @staticmethod
    def _index_end(index_files: list[IndexFile]) -> int:
        """Commitlog offset of the newest indexed record (beyond any offset when nothing is
        indexed: a store without an index)."""
        ends = [f.end_phy_offset for f in index_files if f.index_count > 1]
        return max(ends) if ends else _BEYOND_ANY_OFFSET - 1

    def _index_behind_from(self) -> int:
        """Where a broker noted its index fell behind (``recovery/index-behind``: the keys
        from there on were not indexed when it stopped), else beyond any offset."""
        try:
            text = (self.reader.layout.root / REPORT_DIR / MARKER_FILE).read_text().strip()
        except OSError:
            return _BEYOND_ANY_OFFSET
        return int(text) if text.isdigit() else _BEYOND_ANY_OFFSET

    def _note_unindexed(self, frame: RecordFrame) -> None:
        """A record (from the first indexed one on) lacking index entries for its keys."""
        if self.unindexed:
            self.unindexed[1] += 1
        else:
            self.unindexed = [frame.physical_offset, 1, frame.topic]

    def _note_missing_entry(
        self, queues: dict[tuple[str, int], MappedQueue], frame: RecordFrame
    ) -> None:
        key = (frame.topic, frame.queue_id)
        queue = queues.get(key)
        if queue is None:
            directory = self.reader.layout.consume_queue_dir(frame.topic, frame.queue_id)
            queue = queues[key] = MappedQueue(frame.topic, frame.queue_id, directory, [])
        if queue.missing:
            queue.missing[1] += 1
        else:
            queue.missing = [frame.physical_offset, 1, frame.queue_offset]

    def _validate_queue(
        self, queue: MappedQueue, report: ValidationReport, problems: Report
    ) -> None:
        """Count the queue's entries pointing into the commitlog; if not all were matched by
        a record during the walk, check each one against the record it points at."""
        commitlog_min = self.commitlog.min_offset
        expected = 0
        for index, mapped in enumerate(queue.files):
            end = 0
            for pos, phy, size in valid_entries(mapped):
                end = pos + CQ_STORE_UNIT_SIZE
                if size != PRE_BLANK_SIZE and phy >= commitlog_min:
                    expected += 1
            report.consume_queue_entries += end // CQ_STORE_UNIT_SIZE
            if end + CQ_STORE_UNIT_SIZE > mapped.size:
                continue
            check_data_end(
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
            for pos, phy, size in valid_entries(mapped):
                if size != PRE_BLANK_SIZE and phy >= commitlog_min:
                    queue_offset = (mapped.start + pos) // CQ_STORE_UNIT_SIZE
                    self._check_queue_entry(queue, mapped, pos, phy, size, queue_offset, problems)

    def _check_queue_entry(
        self,
        queue: MappedQueue,
        mapped: ReadOnlyFile,
        pos: int,
        phy: int,
        size: int,
        queue_offset: int,
        problems: Report,
    ) -> None:
        where = f"queue offset {queue_offset} points at commitlog offset {phy}"
        try:
            info = self.commitlog.dispatch_info_at(phy)
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
                mapped = ReadOnlyFile(index_file.path, 0)
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
        if entry.physical_offset < self.commitlog.min_offset:
            return
        try:
            info = self.commitlog.dispatch_info_at(entry.physical_offset)
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
        path = self.reader.layout.checkpoint
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
            path = self.reader.layout.config_file(name)
            try:
                loaded = self.reader.load_config(name)
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
