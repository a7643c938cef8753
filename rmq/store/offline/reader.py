"""Offline, read-only access to a store directory: ours or one written by Apache RocketMQ.

:class:`StoreReader` opens every file with ``O_RDONLY`` and maps it ``ACCESS_READ``; it never
creates, locks or writes anything, so it is safe on a copy, on a stopped broker's directory,
and (with the usual caveat that the tail may move) next to a running one.  Every size comes
from the files themselves: commitlog and consume queue files are as long as they are, index
geometry is inferred from the file size (:meth:`~rmq.store.indexfile.IndexFile.open_read_only`).
Whole records are decoded only by the common codec (:mod:`rmq.common.message`).

It answers: the files with their ranges; records in commitlog order with their physical
offsets (the walk of :mod:`rmq.store.offline.scan`); a queue's messages through its consume
queue, and its offset range (binary searches, as a broker computes it,
:mod:`rmq.store.offline.queues`); a message by physical offset or offset message id;
messages by key through the index files, plus a scan of the commitlog tail the index does
not cover (or of everything when there is no index); the checkpoint; the ``config/*.json``
files (falling back to ``.bak`` like the broker); whether a process holds the store's
``lock`` now.  :meth:`StoreReader.validate` checks it all (:mod:`rmq.store.offline.validate`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any, Final

from rmq.common.message import MessageRecord, decode_record
from rmq.common.msgid import decode_offset_msg_id
from rmq.common.recordwalk import RecordError
from rmq.store.checkpoint import checkpoint_timestamps
from rmq.store.configfile import LoadedConfig, load_config
from rmq.store.consumequeue import CQ_STORE_UNIT_SIZE, PRE_BLANK_SIZE
from rmq.store.errors import StoreError
from rmq.store.indexfile import IndexFile, index_key, query_index_files
from rmq.store.layout import StoreLayout, list_consume_queues, list_index_files, list_offset_files
from rmq.store.offline import files as store_files
from rmq.store.offline.files import Checkpoint, IndexFileInfo, LockStatus, StoreFile
from rmq.store.offline.problems import ProblemKind, Report, ignore_problem
from rmq.store.offline.queues import (
    MappedQueue,
    QueueFileInfo,
    QueueMessage,
    QueueRange,
    entry_at,
    entry_count,
    first_in_commitlog,
    map_queue,
    pre_blank_count,
    queue_entries,
)
from rmq.store.offline.scan import MappedCommitlog, Progress, RecordFrame, report_wrong_offset
from rmq.store.offline.validate import ValidationReport, validate_store

_MAX_TIMESTAMP: Final = (1 << 63) - 1


class StoreReader:
    """Read-only view of a store directory; see the module docstring.

    ``commitlog_dir`` overrides ``<root>/commitlog``; ``hash_slot_num`` / ``index_num`` are
    hints for index files whose size does not reveal their geometry.  Use as a context
    manager or call :meth:`close`.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        commitlog_dir: str | os.PathLike[str] = "",
        hash_slot_num: int = 0,
        index_num: int = 0,
    ) -> None:
        self.layout = StoreLayout.of(root, commitlog_dir)
        refusal = self.layout.not_a_store()
        if refusal is not None:
            raise StoreError(refusal)
        self._hash_slot_num = hash_slot_num
        self._index_num = index_num
        self.commitlog = MappedCommitlog(self.layout.commitlog)

    def close(self) -> None:
        self.commitlog.close()

    def __enter__(self) -> StoreReader:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- listing -------------------------------------------------------------------------

    def commitlog_files(self) -> list[StoreFile]:
        return [StoreFile(f.path, f.start, f.size) for f in self.commitlog.files]

    def consume_queues(self) -> list[tuple[str, int]]:
        """Every (topic, queue id) with a consume queue directory."""
        return [
            (topic, queue_id)
            for topic, queue_id, _ in list_consume_queues(self.layout.consume_queue_root)
        ]

    def consume_queue_files(self, topic: str, queue_id: int) -> list[StoreFile]:
        """The files of a consume queue; ``start // 20`` is the first queue offset in each."""
        directory = self.layout.consume_queue_dir(topic, queue_id)
        return [
            StoreFile(path, start, path.stat().st_size)
            for start, path in list_offset_files(directory)
        ]

    def consume_queue_file_info(self, topic: str, queue_id: int) -> list[QueueFileInfo]:
        """The files of a consume queue with what they hold (binary searches, not scans)."""
        queue = self.load_queue(topic, queue_id)
        try:
            infos = []
            for mapped in queue.files:
                count = entry_count(mapped)
                blanks = pre_blank_count(mapped, count)
                infos.append(
                    QueueFileInfo(
                        mapped.path,
                        mapped.start,
                        mapped.size,
                        count,
                        blanks,
                        entry_at(mapped, blanks).physical_offset if blanks < count else None,
                        entry_at(mapped, count - 1).physical_offset if blanks < count else None,
                    )
                )
            return infos
        finally:
            queue.close()

    def index_files(self) -> list[IndexFileInfo]:
        """The headers and geometry of the usable index files, oldest first."""
        infos = []
        for index_file in self.open_index_files():
            infos.append(
                IndexFileInfo(
                    index_file.path,
                    index_file.hash_slot_num,
                    index_file.index_num,
                    index_file.index_count,
                    index_file.hash_slot_count,
                    index_file.begin_timestamp,
                    index_file.end_timestamp,
                    index_file.begin_phy_offset,
                    index_file.end_phy_offset,
                )
            )
            index_file.close()
        return infos

    @property
    def min_physical_offset(self) -> int:
        """First commitlog offset still stored (0 for an empty store)."""
        return self.commitlog.min_offset

    def max_physical_offset(self) -> int:
        """The end of valid data: just past the last good record of the last file."""
        return self.data_end(self.newest_dispatched_offset())[1]

    def data_end(self, start_hint: int | None = None) -> tuple[RecordFrame | None, int]:
        """The newest record (None when there is none) and the end of valid data, just past
        the last good record of the last file (its start when it holds no record).

        ``start_hint`` is the offset of a record known to be stored (the newest consume
        queue entry, :meth:`newest_dispatched_offset`): the walk starts there instead of at
        the beginning of its file.  A hint that is not a record is ignored.
        """
        if not self.commitlog.files:
            return None, 0
        if start_hint is not None:
            try:
                self.commitlog.dispatch_info_at(start_hint)
            except StoreError:
                start_hint = None
        newest = None
        end = self.commitlog.files[-1].start
        for index in range(len(self.commitlog.files) - 1, -1, -1):
            mapped = self.commitlog.files[index]
            last = index == len(self.commitlog.files) - 1
            pos = 0
            if start_hint is not None and mapped.start <= start_hint < mapped.end:
                pos = start_hint - mapped.start
            for newest in self.commitlog.walk_file(mapped, pos, last, ignore_problem, False, None):
                if last:
                    end = newest.physical_offset + newest.total_size
            if newest is not None:
                break
        return newest, end

    def newest_dispatched_offset(self) -> int | None:
        """The commitlog offset of the newest consume queue entry of any queue, if any."""
        newest = None
        for topic, queue_id in self.consume_queues():
            last = self.queue_range(topic, queue_id).last_entry
            if last is not None and last.size != PRE_BLANK_SIZE:
                newest = max(newest or 0, last.physical_offset)
        return newest

    def lock_status(self) -> LockStatus | None:
        """Whether a process holds the store's ``lock`` file (a running broker); None when
        there is no lock file (see :func:`rmq.store.offline.files.lock_status`: a process
        that runs the store itself must not ask)."""
        return store_files.lock_status(self.layout.lock)

    # -- records -------------------------------------------------------------------------

    def scan(
        self,
        start: int | None = None,
        *,
        check_crc: bool = False,
        report: Report | None = None,
        progress: Progress | None = None,
    ) -> Iterator[RecordFrame]:
        """A :class:`RecordFrame` for every record from ``start`` (the first record by
        default) in commitlog order; damaged regions are skipped and passed to ``report``
        (with ``check_crc``, records whose body CRC is wrong too, and still yielded)."""
        first = self.min_physical_offset if start is None else start
        return self.commitlog.walk(first, report or ignore_problem, check_crc, progress)

    def iter_records(
        self, start: int | None = None, *, stop: int | None = None, report: Report | None = None
    ) -> Iterator[tuple[int, MessageRecord]]:
        """``(physical offset, record)`` for every record from ``start`` (the first record
        by default) in commitlog order, up to the file that starts at or after ``stop``;
        each record is decoded once; damaged regions are skipped and passed to
        ``report``."""
        first = self.min_physical_offset if start is None else start
        return self.commitlog.records(first, report or ignore_problem, stop)

    def records_from(
        self, physical_offset: int, *, report: Report | None = None
    ) -> Iterator[tuple[int, MessageRecord]]:
        """The record at ``physical_offset`` (:class:`StoreError` at the first step when
        there is none) and the records after it, as :meth:`iter_records`: each decoded once."""
        first = self.message_at(physical_offset)
        report = report or ignore_problem
        if first.physical_offset != physical_offset:
            mapped, pos = self.commitlog.locate(physical_offset)
            report_wrong_offset(report, mapped.path, physical_offset, first.physical_offset, pos)
        yield physical_offset, first
        yield from self.commitlog.records(physical_offset + first.total_size, report)

    def message_at(self, physical_offset: int) -> MessageRecord:
        """The record at ``physical_offset``; :class:`StoreError` if there is none."""
        mapped, pos = self.commitlog.locate(physical_offset)
        try:
            return decode_record(mapped.buf, pos)
        except RecordError as exc:
            raise StoreError(
                f"no message at commitlog offset {physical_offset} ({mapped.path}@{pos}): {exc}"
            ) from None

    def message_by_offset_id(self, msg_id: str) -> MessageRecord:
        """The record an offset message id (store host + physical offset) names."""
        try:
            physical_offset = decode_offset_msg_id(msg_id).physical_offset
        except ValueError as exc:
            raise StoreError(str(exc)) from None
        return self.message_at(physical_offset)

    def read_queue(
        self, topic: str, queue_id: int, start: int = 0, end: int | None = None
    ) -> Iterator[QueueMessage]:
        """The messages of a queue with queue offsets in ``[start, end)``, in order.

        Pre-blank entries are skipped; the walk ends at the queue's first empty entry.
        """
        for queue_offset, entry in queue_entries(
            self.layout.consume_queue_dir(topic, queue_id), start, end
        ):
            if entry.size == PRE_BLANK_SIZE:
                continue
            try:
                mapped, pos = self.commitlog.locate(entry.physical_offset)
                yield QueueMessage(queue_offset, entry, decode_record(mapped.buf, pos), None)
            except (StoreError, RecordError) as exc:
                yield QueueMessage(queue_offset, entry, None, str(exc))

    def queue_offsets(self, topic: str, queue_id: int) -> tuple[int, int]:
        """(min, max) queue offsets of a queue, as a broker on this store would report them:
        the first entry still in the commitlog, and one past the last entry."""
        queue_range = self.queue_range(topic, queue_id)
        return queue_range.min_offset, queue_range.max_offset

    def queue_range(self, topic: str, queue_id: int) -> QueueRange:
        """A queue's min and max offsets (see :meth:`queue_offsets`) and its newest entry,
        found by binary searches as the broker does: the max from the entries of the last
        file, the min as the first message entry pointing at or past the commitlog min."""
        queue = self.load_queue(topic, queue_id)
        try:
            if not queue.files:
                return QueueRange(0, 0, None)
            last = queue.files[-1]
            max_offset = last.start // CQ_STORE_UNIT_SIZE + entry_count(last)
            newest = None
            for mapped in reversed(queue.files):
                count = entry_count(mapped)
                if count:
                    newest = entry_at(mapped, count - 1)
                    break
            return QueueRange(self._min_queue_offset(queue, max_offset), max_offset, newest)
        finally:
            queue.close()

    def _min_queue_offset(self, queue: MappedQueue, max_offset: int) -> int:
        """The first message entry pointing at or past the commitlog min, searched file by
        file (a missing file in between must not mislead the binary search); ``max_offset``
        when there is none."""
        for mapped in queue.files:
            count = entry_count(mapped)
            first = first_in_commitlog(mapped, count, self.min_physical_offset)
            if first < count:
                return mapped.start // CQ_STORE_UNIT_SIZE + first
        return max_offset

    def query_by_key(
        self,
        topic: str,
        key: str,
        max_num: int = 64,
        begin: int = 0,
        end: int = _MAX_TIMESTAMP,
        *,
        use_index: bool = True,
        progress: Progress | None = None,
    ) -> list[MessageRecord]:
        """Messages of ``topic`` with ``key`` (a KEYS token or the UNIQ_KEY) stored within
        ``[begin, end]``: the newest ``max_num``, in commitlog order.

        Looks the key up in the index files, re-checking each hit's topic and keys, and scans
        the commitlog past the newest indexed message (all of it without an index, or when
        ``use_index`` is False).
        """
        found: dict[int, MessageRecord] = {}

        def take(record: MessageRecord) -> None:
            if (
                record.topic == topic
                and begin <= record.store_timestamp <= end
                and (key == record.uniq_key or key in record.keys)
            ):
                found[record.physical_offset] = record

        indexed_up_to = -1
        index_files = self.open_index_files() if use_index else []
        try:
            indexed_up_to = max(
                (f.end_phy_offset for f in index_files if f.index_count > 1), default=-1
            )
            for physical_offset in query_index_files(
                index_files, index_key(topic, key), max_num, begin, end
            ):
                try:
                    take(self.message_at(physical_offset))
                except StoreError:
                    continue
        finally:
            for index_file in index_files:
                index_file.close()
        start = max(indexed_up_to, self.min_physical_offset)
        for frame in self.scan(start, progress=progress):
            if (
                frame.physical_offset > indexed_up_to
                and frame.topic == topic
                and begin <= frame.store_timestamp <= end
                and (key == frame.uniq_key or key in frame.keys)
            ):
                take(self.message_at(frame.physical_offset))
        return [found[offset] for offset in sorted(found)[-max_num:]]

    # -- checkpoint and config -----------------------------------------------------------

    def checkpoint(self) -> Checkpoint | None:
        """The checkpoint's timestamps; None when the file is missing or too short."""
        try:
            data = self.layout.checkpoint.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StoreError(f"cannot read {self.layout.checkpoint}: {exc.strerror}") from None
        timestamps = checkpoint_timestamps(data)
        if timestamps is None:
            return None
        return Checkpoint(*timestamps)

    def load_config(self, name: str) -> LoadedConfig[Any] | None:
        """``config/<name>`` decoded (falling back to ``.bak``); None when absent."""
        return load_config(self.layout.config_file(name))

    def abort_file_present(self) -> bool:
        """True when the broker did not shut down cleanly (the tail may be torn)."""
        return self.layout.abort.exists()

    # -- consume queues and index files ----------------------------------------------------

    def load_queue(self, topic: str, queue_id: int) -> MappedQueue:
        """A consume queue's files mapped; :class:`StoreError` when one cannot be read."""
        directory = self.layout.consume_queue_dir(topic, queue_id)
        return map_queue(topic, queue_id, directory, None)

    def open_index_files(self, report: Report = ignore_problem) -> list[IndexFile]:
        """The index files, oldest first; one whose size reveals no geometry is passed to
        ``report`` and left out, one with a bad header reported and kept."""
        files = []
        for path in list_index_files(self.layout.index):
            try:
                index_file = IndexFile.open_read_only(path, self._hash_slot_num, self._index_num)
            except StoreError as exc:
                report(ProblemKind.WRONG_FILE_SIZE, path, 0, str(exc))
                continue
            problem = index_file.header_problem()
            if problem is not None:
                report(ProblemKind.INDEX_BAD_HEADER, path, 0, problem)
            files.append(index_file)
        return files

    def validate(self, progress: Progress | None = None) -> ValidationReport:
        """Check the whole store (:func:`rmq.store.offline.validate.validate_store`); never
        raises on bad data.  ``progress`` follows the commitlog scan, nearly all of the
        work."""
        return validate_store(self, progress)
