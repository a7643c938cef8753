"""Consume queues (``consumequeue/<topic>/<queueId>/``): the per-queue list of messages.

A consume queue is an array of 20-byte entries, one per message of a (topic, queue id), kept
in a :class:`~rmq.store.mappedfile.MappedFileQueue`: entry ``n`` (the message with queue
offset ``n``) sits at byte ``n * 20`` of the queue's byte stream and holds the message's
commitlog offset (int64), its size (int32) and its tags code (int64: the hash of TAGS, or the
delivery time of a delayed message), big-endian.  An entry is valid when the offset is
``>= 0`` and the size ``> 0``; the first all-zero entry ends the queue.  A queue whose first
file is created at a non-zero queue offset (after its older files expired, or when a gap
appears) is padded with "pre-blank" entries ``(0, 0x7FFFFFFF, 0)``, which readers skip.

Invariants the writer keeps: an entry is only ever appended at the queue's end, at the byte
position its queue offset dictates; entries of a queue point at increasing commitlog
offsets.  The second one lets searches over a queue (the first entry at or past the commitlog
minimum, the last entry before a truncation point) be binary searches.  :meth:`ConsumeQueue.put`
asserts both before it writes an entry.

Re-dispatching a message (recovery replays the commitlog tail) is harmless: an entry for a
queue offset that is already written is skipped, except that the queue's last entry is
rewritten when it differs.  A process killed while writing an entry leaves it half written,
and such an entry can look valid (its offset and part of its size written, its tags code
not); the replay of its record puts it right.  Only the last entry can be torn, as entries are
appended one at a time.

:class:`ConsumeQueueStore` holds every consume queue of a store directory: it loads the
existing ones at start, creates queues on first dispatch, and runs recovery, flush and expiry
over all of them.
"""

from __future__ import annotations

import logging
import shutil
import struct
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Final, NamedTuple

from rmq.store.errors import StoreError
from rmq.store.layout import StoreLayout, list_consume_queues
from rmq.store.mappedfile import MappedFile, MappedFileQueue

log = logging.getLogger(__name__)

CQ_STORE_UNIT_SIZE: Final = 20
PRE_BLANK_SIZE: Final = 0x7FFFFFFF
ENTRY: Final = struct.Struct(">qiq")
PRE_BLANK_ENTRY: Final = ENTRY.pack(0, PRE_BLANK_SIZE, 0)
_NO_QUEUES: Final[dict[int, ConsumeQueue]] = {}


class CqEntry(NamedTuple):
    """One consume queue entry."""

    physical_offset: int
    size: int
    tags_code: int


def is_valid_entry(physical_offset: int, size: int) -> bool:
    """Whether an entry holds a message (pre-blank entries count as valid, as in Apache)."""
    return physical_offset >= 0 and size > 0


def iter_entries(view: memoryview) -> Iterator[tuple[int, int, int]]:
    """The (commitlog offset, size, tags code) triples of a slice returned by
    :meth:`ConsumeQueue.get_entries`."""
    return ENTRY.iter_unpack(view)


StoreTimestampAt = Callable[[int, int], int]
"""``(commitlog offset, size) -> store timestamp``, or a negative value if unreadable."""


class ConsumeQueue:
    """The consume queue of one (topic, queue id).

    One dispatcher thread writes (:meth:`put`, :meth:`truncate_dirty`); readers call the get
    and search methods from any thread; the flush thread calls :meth:`flush`; the cleanup
    timer calls :meth:`delete_expired`.

    ``max_physical_offset`` is the commitlog offset just past the newest dispatched message
    (-1 when none): the store resumes dispatching from the largest one over all queues.
    """

    def __init__(self, topic: str, queue_id: int, directory: Path, mapped_file_size: int):
        if mapped_file_size <= 0 or mapped_file_size % CQ_STORE_UNIT_SIZE:
            raise ValueError(
                f"consume queue file size must be a positive multiple of 20, got {mapped_file_size}"
            )
        self.topic = topic
        self.queue_id = queue_id
        self.directory = directory
        self.max_physical_offset = -1
        self.conflict: tuple[str, int] | None = None
        """The file and queue offset of the first entry a re-dispatched record found
        holding another entry (recovery rebuilds such a queue)."""
        self._files = MappedFileQueue(directory, mapped_file_size)
        self._min_logic_offset = 0

    # -- loading and recovery ------------------------------------------------------------

    def load(self) -> None:
        """Map the queue's files; each must hold a whole number of entries, and the last
        one must not be smaller than a new file would be (a file cut short); raises
        :class:`StoreError` naming the file."""
        self._files.load()
        files = self._files.files
        for mapped in files:
            if mapped.file_size % CQ_STORE_UNIT_SIZE:
                raise StoreError(
                    f"{mapped.path}: {mapped.file_size} bytes is not a whole number of "
                    f"20-byte consume queue entries"
                )
        if files and files[-1].file_size < self._files.mapped_file_size:
            raise StoreError(
                f"{files[-1].path}: {files[-1].file_size} bytes, less than a consume queue "
                f"file's {self._files.mapped_file_size} (cut short)"
            )

    @property
    def mapped_file_size(self) -> int:
        """The size of a new file of this queue."""
        return self._files.mapped_file_size

    @property
    def files(self) -> Sequence[MappedFile]:
        """The queue's mapped files, oldest first (a snapshot)."""
        return self._files.files

    def recover(self) -> None:
        """Find the end of the queue after :meth:`load` and cut everything after it."""
        self.cut_at(self.find_end())

    def cut_at(self, end: int) -> None:
        """Make byte ``end`` of the queue its end (recovery, after :meth:`find_end`)."""
        if self._files.files:
            self._files.truncate_dirty_files(end)

    def find_end(self) -> int:
        """The byte where the queue's entries end after :meth:`load` (nothing is cut yet);
        sets :attr:`max_physical_offset`.

        Scans entries from the third-last file on (older files are taken as whole) up to
        the first invalid entry, as Apache does.
        """
        files = self._files.files
        if not files:
            return 0
        end = files[-1].file_tail_offset
        last_entry: tuple[int, int] | None = None
        for mapped in files[max(len(files) - 3, 0) :]:
            valid = 0
            for physical_offset, size, _ in ENTRY.iter_unpack(mapped.view):
                if not is_valid_entry(physical_offset, size):
                    break
                valid += 1
                if size != PRE_BLANK_SIZE:
                    last_entry = (physical_offset, size)
            if valid * CQ_STORE_UNIT_SIZE < mapped.file_size:
                end = mapped.file_from_offset + valid * CQ_STORE_UNIT_SIZE
                break
        if last_entry is not None:
            self.max_physical_offset = last_entry[0] + last_entry[1]
        return end

    def truncate_dirty(self, max_physical_offset: int) -> None:
        """Remove the entries that point at or past ``max_physical_offset`` (the valid end
        of the commitlog found by recovery)."""
        files = self._files.files
        if not files:
            return
        first_cut = self._first_entry_where(lambda phy, size: phy >= max_physical_offset)
        self._files.truncate_dirty_files(first_cut * CQ_STORE_UNIT_SIZE)
        last = self._last_message_entry()
        self.max_physical_offset = -1 if last is None else last.physical_offset + last.size

    def blank_entries_in(self, spans: Sequence[tuple[int, int]]) -> int:
        """Recovery: overwrite with pre-blank entries those pointing into the commitlog byte
        ranges ``spans`` (``(start, end)``: damaged records recovery skipped), so that pulls
        pass over them and later queue offsets stay; returns how many."""
        blanked = 0
        for mapped in self._files.files:
            changed = False
            entries = ENTRY.iter_unpack(mapped.view[: mapped.wrote_position])
            for number, (physical_offset, size, _) in enumerate(entries):
                if size != PRE_BLANK_SIZE and any(a <= physical_offset < b for a, b in spans):
                    pos = number * CQ_STORE_UNIT_SIZE
                    mapped.buffer[pos : pos + CQ_STORE_UNIT_SIZE] = PRE_BLANK_ENTRY
                    blanked += 1
                    changed = True
            if changed:
                mapped.buffer.flush()
        return blanked

    def correct_min_offset(self, min_commitlog_offset: int) -> None:
        """Make :attr:`min_offset` the first message still in the commitlog."""
        self._min_logic_offset = CQ_STORE_UNIT_SIZE * self.first_offset_from(min_commitlog_offset)

    def first_offset_from(self, min_commitlog_offset: int) -> int:
        """The first queue offset whose message is stored at or after ``min_commitlog_offset``
        (the queue's end when none is)."""
        return self._first_entry_where(
            lambda phy, size: phy >= min_commitlog_offset and size != PRE_BLANK_SIZE
        )

    # -- writing -------------------------------------------------------------------------

    def put(
        self,
        queue_offset: int,
        physical_offset: int,
        size: int,
        tags_code: int,
        store_timestamp: int = 0,
    ) -> bool:
        """Write the entry for ``queue_offset``; False when it was already there.

        A queue created at a non-zero offset, or one with a gap before ``queue_offset``, is
        padded with pre-blank entries.  An entry already there is left alone, except the
        queue's last one when it differs: that is an entry a crash left half written, and it
        is rewritten.  Raises :class:`StoreError` when a file cannot be created (disk full).
        """
        expected = queue_offset * CQ_STORE_UNIT_SIZE
        mapped = self._files.last_file()
        if (
            mapped is None
            or mapped.wrote_position >= mapped.file_size
            or mapped.file_from_offset + mapped.wrote_position != expected
        ):
            if mapped is None:
                first = self._files.get_last_mapped_file(expected)
                assert first is not None
                self._min_logic_offset = expected
                end = first.file_from_offset
            else:
                end = self._files.max_offset()
            if expected < end:
                self._put_repeated(queue_offset, physical_offset, size, tags_code, end)
                return False
            if expected > end:
                if end > self._min_logic_offset:
                    log.warning(
                        "consume queue %s-%d: gap before queue offset %d (queue ends at %d), "
                        "filled with blank entries",
                        self.topic,
                        self.queue_id,
                        queue_offset,
                        end // CQ_STORE_UNIT_SIZE,
                    )
                self._fill_pre_blank(end, expected)
            mapped = self._writable_file(expected)
        pos = mapped.wrote_position
        assert mapped.file_from_offset + pos == expected, (
            f"consume queue {self.topic}-{self.queue_id}: entry for queue offset {queue_offset} "
            f"would be written at byte {mapped.file_from_offset + pos}, not {expected}"
        )
        assert physical_offset >= self.max_physical_offset, (
            f"consume queue {self.topic}-{self.queue_id}: queue offset {queue_offset} points at "
            f"commitlog offset {physical_offset}, before the previous entry's end "
            f"{self.max_physical_offset}"
        )
        ENTRY.pack_into(mapped.buffer, pos, physical_offset, size, tags_code)
        mapped.appended(pos + CQ_STORE_UNIT_SIZE, store_timestamp)
        self.max_physical_offset = physical_offset + size
        return True

    def _writable_file(self, position: int) -> MappedFile:
        mapped = self._files.get_last_mapped_file(position)
        assert mapped is not None
        return mapped

    def _fill_pre_blank(self, start: int, stop: int) -> None:
        position = start
        while position < stop:
            mapped = self._writable_file(position)
            pos = mapped.wrote_position
            count = min(stop - position, mapped.file_size - pos) // CQ_STORE_UNIT_SIZE
            mapped.buffer[pos : pos + count * CQ_STORE_UNIT_SIZE] = PRE_BLANK_ENTRY * count
            mapped.appended(pos + count * CQ_STORE_UNIT_SIZE)
            position += count * CQ_STORE_UNIT_SIZE

    def _put_repeated(
        self, queue_offset: int, physical_offset: int, size: int, tags: int, end: int
    ) -> None:
        """A re-dispatched entry: rewrite the queue's last entry if it differs (a kill in the
        middle of writing it leaves it torn, possibly still looking valid), else only log
        a difference."""
        position = queue_offset * CQ_STORE_UNIT_SIZE
        mapped = self._files.find_mapped_file_by_offset(position)
        if mapped is None:  # below the queue's first file
            return
        pos = position - mapped.file_from_offset
        existing = CqEntry(*ENTRY.unpack_from(mapped.buffer, pos))
        if existing == (physical_offset, size, tags):
            return
        if position + CQ_STORE_UNIT_SIZE == end:
            log.warning(
                "consume queue %s-%d: rewrote the torn last entry at queue offset %d (was %s)",
                self.topic,
                self.queue_id,
                queue_offset,
                tuple(existing),
            )
            ENTRY.pack_into(mapped.buffer, pos, physical_offset, size, tags)
            self.max_physical_offset = physical_offset + size
            return
        if self.conflict is None:
            self.conflict = (mapped.path, queue_offset)
        log.warning(
            "consume queue %s-%d: queue offset %d already holds %s, ignoring %s",
            self.topic,
            self.queue_id,
            queue_offset,
            tuple(existing),
            (physical_offset, size, tags),
        )

    # -- reading -------------------------------------------------------------------------

    @property
    def min_offset(self) -> int:
        """The first queue offset still readable."""
        return self._min_logic_offset // CQ_STORE_UNIT_SIZE

    @property
    def max_offset(self) -> int:
        """The next queue offset to be written (the number of entries ever written)."""
        return self._files.max_offset() // CQ_STORE_UNIT_SIZE

    def get_entries(self, queue_offset: int, max_entries: int) -> memoryview | None:
        """A zero-copy view of up to ``max_entries`` entries from ``queue_offset`` on.

        The view never crosses a file boundary (ask again from the next offset); None when
        ``queue_offset`` is below :attr:`min_offset` or not written.  Decode it with
        :func:`iter_entries`.
        """
        if queue_offset < self.min_offset:
            return None
        position = queue_offset * CQ_STORE_UNIT_SIZE
        mapped = self._files.find_mapped_file_by_offset(position)
        if mapped is None:
            return None
        start = position - mapped.file_from_offset
        stop = min(mapped.wrote_position, start + max_entries * CQ_STORE_UNIT_SIZE)
        if stop <= start:
            return None
        return mapped.slice(start, stop - start)

    def entry_at(self, queue_offset: int) -> CqEntry | None:
        """The entry at ``queue_offset``, or None when it is not stored."""
        position = queue_offset * CQ_STORE_UNIT_SIZE
        mapped = self._files.find_mapped_file_by_offset(position)
        if mapped is None or position - mapped.file_from_offset >= mapped.wrote_position:
            return None
        return CqEntry(*ENTRY.unpack_from(mapped.buffer, position - mapped.file_from_offset))

    def search_offset_by_time(
        self, timestamp: int, store_timestamp_at: StoreTimestampAt, min_commitlog_offset: int
    ) -> int:
        """The queue offset of the message stored closest to ``timestamp`` (ms).

        As Apache: take the first file modified at or after ``timestamp`` (else the last
        file), binary-search its entries by the store time ``store_timestamp_at`` reads from
        the commitlog; an exact match wins, else the nearer of the two neighbours (the
        earlier one on a tie).  Entries below ``min_commitlog_offset`` count as older than
        any time (if the whole file is, the answer is the offset after it).  Returns 0 when
        the queue is empty or a record cannot be read.
        """
        files = self._files.files
        if not files:
            return 0
        mapped = next((f for f in files if f.mtime() * 1000 >= timestamp), files[-1])
        base = mapped.file_from_offset // CQ_STORE_UNIT_SIZE
        low = max(self.min_offset - base, 0)
        high = mapped.wrote_position // CQ_STORE_UNIT_SIZE - 1
        buf = mapped.buffer
        left: tuple[int, int] | None = None
        right: tuple[int, int] | None = None
        while low <= high:
            mid = (low + high) // 2
            physical_offset, size, _ = ENTRY.unpack_from(buf, mid * CQ_STORE_UNIT_SIZE)
            if physical_offset < min_commitlog_offset or size == PRE_BLANK_SIZE:
                low = mid + 1
                continue
            stored = store_timestamp_at(physical_offset, size)
            if stored < 0:
                return 0
            if stored == timestamp:
                return base + mid
            if stored > timestamp:
                right = (mid, stored)
                high = mid - 1
            else:
                left = (mid, stored)
                low = mid + 1
        if left is None and right is None:
            return base + low
        if left is None or (right is not None and right[1] - timestamp < timestamp - left[1]):
            assert right is not None
            return base + right[0]
        return base + left[0]

    def _first_entry_where(self, predicate: Callable[[int, int], bool]) -> int:
        """The first queue offset whose entry satisfies ``predicate(phy, size)`` (the
        queue's end when none does); ``predicate`` must be monotone along the queue."""
        low = self._files.min_offset() // CQ_STORE_UNIT_SIZE
        high = self.max_offset
        if low >= high:
            return low
        # the usual answers at start, the first entry (minimum) or none (nothing to cut),
        # without a search
        first = self.entry_at(low)
        if first is None or predicate(first.physical_offset, first.size):
            return low
        last = self.entry_at(high - 1)
        if last is not None and not predicate(last.physical_offset, last.size):
            return high
        while low < high:
            mid = (low + high) // 2
            entry = self.entry_at(mid)
            if entry is None or predicate(entry.physical_offset, entry.size):
                high = mid
            else:
                low = mid + 1
        return low

    def _last_message_entry(self) -> CqEntry | None:
        entry = self.entry_at(self.max_offset - 1)
        if entry is None or entry.size == PRE_BLANK_SIZE or not is_valid_entry(*entry[:2]):
            return None
        return entry

    def last_physical_end(self) -> int:
        """Where the newest entry's message ends in the commitlog (offset + size), read from
        the last file alone as Apache's ``getLastOffset``; -1 when that file holds no entry."""
        mapped = self._files.last_file()
        if mapped is None:
            return -1
        position = max(mapped.wrote_position - CQ_STORE_UNIT_SIZE, 0)
        if position + CQ_STORE_UNIT_SIZE > mapped.file_size:
            return -1
        physical_offset, size, _ = ENTRY.unpack_from(mapped.buffer, position)
        return physical_offset + size if physical_offset >= 0 and size > 0 else -1

    # -- flushing and expiry -------------------------------------------------------------

    def flush(self, least_pages: int = 0) -> int:
        """``msync`` written entries; returns the store time of the newest entry on disk."""
        self._files.flush(least_pages)
        return self._files.store_timestamp

    def delete_expired(self, min_commitlog_offset: int) -> int:
        """Delete leading files whose last entry points below ``min_commitlog_offset`` (never
        the last file), then move :attr:`min_offset`; returns how many were deleted."""

        def expired(mapped: MappedFile) -> bool:
            last = mapped.file_size - CQ_STORE_UNIT_SIZE
            physical_offset, _, _ = ENTRY.unpack_from(mapped.buffer, last)
            return bool(physical_offset < min_commitlog_offset)

        deleted = self._files.delete_leading_files(expired)
        self.correct_min_offset(min_commitlog_offset)
        return len(deleted)

    def close(self) -> None:
        self._files.close()

    def destroy(self) -> None:
        """Delete every file and the queue's directory."""
        self._files.destroy()
        self.max_physical_offset = -1
        self._min_logic_offset = 0
        shutil.rmtree(self.directory, ignore_errors=True)


class ConsumeQueueStore:
    """Every consume queue of a store (``consumequeue/``), by topic and queue id."""

    def __init__(self, layout: StoreLayout, mapped_file_size: int):
        self.layout = layout
        self.mapped_file_size = mapped_file_size
        self._queues: dict[str, dict[int, ConsumeQueue]] = {}
        self._lock = threading.Lock()
        self._last_dispatched_timestamp = 0

    def load(self, on_damage: Callable[[ConsumeQueue, StoreError], None] | None = None) -> None:
        """Map every existing ``consumequeue/<topic>/<queueId>/`` (run :meth:`recover` next).

        A queue that cannot be loaded raises :class:`StoreError`, unless ``on_damage(queue,
        error)`` is given: it is then called (to set the damage aside and leave the queue
        empty, loaded again) and loading goes on."""
        for topic, queue_id, directory in list_consume_queues(self.layout.consume_queue_root):
            queue = ConsumeQueue(topic, queue_id, directory, self.mapped_file_size)
            try:
                queue.load()
            except StoreError as exc:
                if on_damage is None:
                    raise
                queue.close()
                on_damage(queue, exc)
            self._queues.setdefault(topic, {})[queue_id] = queue

    def recover(self) -> int:
        """Recover every queue; returns the largest ``max_physical_offset`` (-1 if none)."""
        for queue in self:
            queue.recover()
        return max((queue.max_physical_offset for queue in self), default=-1)

    def find(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        return self._queues.get(topic, _NO_QUEUES).get(queue_id)

    def find_or_create(self, topic: str, queue_id: int) -> ConsumeQueue:
        """The queue of (topic, queue id), created (without files yet) when missing."""
        queue = self.find(topic, queue_id)
        if queue is not None:
            return queue
        with self._lock:
            queues = dict(self._queues.get(topic, {}))
            queue = queues.get(queue_id)
            if queue is None:
                queue = ConsumeQueue(
                    topic,
                    queue_id,
                    self.layout.consume_queue_dir(topic, queue_id),
                    self.mapped_file_size,
                )
                queues[queue_id] = queue
                self._queues = {**self._queues, topic: queues}
            return queue

    def put(
        self,
        topic: str,
        queue_id: int,
        queue_offset: int,
        physical_offset: int,
        size: int,
        tags_code: int,
        store_timestamp: int,
    ) -> bool:
        """Dispatch one message's entry (see :meth:`ConsumeQueue.put`)."""
        queue = self._queues.get(topic, _NO_QUEUES).get(queue_id)  # self.find, inlined
        if queue is None:
            queue = self.find_or_create(topic, queue_id)
        written = queue.put(queue_offset, physical_offset, size, tags_code, store_timestamp)
        self._last_dispatched_timestamp = store_timestamp
        return written

    def topics(self) -> list[str]:
        return sorted(self._queues)

    def queues_of(self, topic: str) -> dict[int, ConsumeQueue]:
        """The queues of ``topic`` by queue id (a snapshot)."""
        return dict(self._queues.get(topic, {}))

    def __iter__(self) -> Iterator[ConsumeQueue]:
        for queues in list(self._queues.values()):
            yield from list(queues.values())

    def delete_topic(self, topic: str) -> None:
        """Delete every queue of ``topic`` with its files and directory."""
        with self._lock:
            queues = self._queues.get(topic, {})
            self._queues = {name: qs for name, qs in self._queues.items() if name != topic}
        for queue in queues.values():
            queue.destroy()
        shutil.rmtree(self.layout.consume_queue_root / topic, ignore_errors=True)

    def delete_queue(self, topic: str, queue_id: int) -> None:
        """Delete one queue with its files and directory; the topic goes with its last queue."""
        with self._lock:
            queues = dict(self._queues.get(topic, {}))
            queue = queues.pop(queue_id, None)
            self._queues = {name: qs for name, qs in self._queues.items() if name != topic}
            if queues:
                self._queues[topic] = queues
        if queue is not None:
            queue.destroy()

    def truncate_dirty(self, max_physical_offset: int) -> None:
        for queue in self:
            queue.truncate_dirty(max_physical_offset)

    def correct_min_offsets(self, min_commitlog_offset: int) -> None:
        for queue in self:
            queue.correct_min_offset(min_commitlog_offset)

    def flush(self, least_pages: int = 0) -> int:
        """Flush every queue.

        With ``least_pages == 0`` (a thorough flush) returns the store time of the newest
        message dispatched before the flush began, now on disk in every queue: the
        checkpoint's ``logicsMsgTimestamp``.  Otherwise returns 0, as a partial flush may
        leave entries unwritten.
        """
        timestamp = self._last_dispatched_timestamp
        for queue in self:
            queue.flush(least_pages)
        return timestamp if least_pages == 0 else 0

    def delete_expired(self, min_commitlog_offset: int) -> int:
        """Expire files of every queue (see :meth:`ConsumeQueue.delete_expired`)."""
        return sum(queue.delete_expired(min_commitlog_offset) for queue in self)

    def close(self) -> None:
        for queue in self:
            queue.close()

    def __len__(self) -> int:
        return sum(len(queues) for queues in self._queues.values())
