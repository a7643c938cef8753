"""Scans that filter records and count them, offline over a
:class:`~rmq.store.offline.reader.StoreReader`.

:func:`queue_stats` and :func:`find_records` scan the commitlog through
:meth:`StoreReader.scan`: statistics use the scan's frames only (topic, queue id, size,
store time, tags read from the raw property string, body CRC), and a search decodes only
the records its :class:`RecordFilter` keeps.  A time window starts the scan at the last
file whose first record is not newer than the window and stops at the first file that
begins after it.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Final

from rmq.common.message import MessageRecord
from rmq.store.errors import StoreError
from rmq.store.offline.problems import Report
from rmq.store.offline.reader import StoreReader
from rmq.store.offline.scan import Progress, RecordFrame

_MAX: Final = (1 << 63) - 1


@dataclass(slots=True)
class QueueStats:
    """What the commitlog holds for one (topic, queue id): records, bytes, offsets, times,
    records whose body CRC is wrong, and a histogram of TAGS (untagged records not counted)."""

    topic: str
    queue_id: int
    messages: int = 0
    bytes: int = 0
    min_queue_offset: int | None = None
    max_queue_offset: int | None = None
    first_store_timestamp: int | None = None
    last_store_timestamp: int | None = None
    crc_errors: int = 0
    tags: Counter[str] = field(default_factory=Counter)


@dataclass(frozen=True, slots=True)
class RecordFilter:
    """Which records a search keeps; None / empty means "any".  Times are store times in
    ms, both ends included; ``tags`` matches a record whose TAGS is one of them; ``key``
    matches a KEYS token or the UNIQ_KEY."""

    topic: str | None = None
    queue_id: int | None = None
    begin: int | None = None
    end: int | None = None
    tags: frozenset[str] = frozenset()
    key: str | None = None

    def matches(self, frame: RecordFrame) -> bool:
        if self.topic is not None and frame.topic != self.topic:
            return False
        if self.queue_id is not None and frame.queue_id != self.queue_id:
            return False
        if self.begin is not None and frame.store_timestamp < self.begin:
            return False
        if self.end is not None and frame.store_timestamp > self.end:
            return False
        if self.tags and frame.tags not in self.tags:
            return False
        return self.key is None or self.key == frame.uniq_key or self.key in frame.keys


def find_records(
    reader: StoreReader,
    record_filter: RecordFilter,
    *,
    limit: int | None = None,
    report: Report | None = None,
    progress: Progress | None = None,
) -> Iterator[MessageRecord]:
    """The records ``record_filter`` keeps, in commitlog order, at most ``limit``."""
    if limit is not None and limit <= 0:
        return
    starts = [f.start for f in reader.commitlog_files()]
    start = reader.min_physical_offset
    if record_filter.begin is not None:
        start = _first_file_for(reader, starts, record_filter.begin)
    file_starts = set(starts)
    found = 0
    for frame in reader.scan(start, report=report, progress=progress):
        if (
            record_filter.end is not None
            and frame.store_timestamp > record_filter.end
            and frame.physical_offset in file_starts
        ):
            return
        if record_filter.matches(frame):
            try:
                yield reader.message_at(frame.physical_offset)
            except StoreError:
                continue
            found += 1
            if limit is not None and found >= limit:
                return


def _first_file_for(reader: StoreReader, starts: Sequence[int], timestamp: int) -> int:
    """The start of the last commitlog file whose first record is not newer than
    ``timestamp`` (the first file when there is none)."""
    first_times = []
    for start in starts:
        frame = next(reader.scan(start), None)
        first_times.append(_MAX if frame is None else frame.store_timestamp)
    index = bisect.bisect_right(first_times, timestamp) - 1
    return starts[max(index, 0)] if starts else 0


def queue_stats(
    reader: StoreReader,
    *,
    topic: str | None = None,
    progress: Progress | None = None,
) -> list[QueueStats]:
    """Per (topic, queue id) statistics of every record in the commitlog (see
    :class:`QueueStats`), sorted; ``topic`` limits them to one topic."""
    stats: dict[tuple[str, int], QueueStats] = {}
    for frame in reader.scan(check_crc=True, progress=progress):
        if topic is not None and frame.topic != topic:
            continue
        key = (frame.topic, frame.queue_id)
        entry = stats.get(key)
        if entry is None:
            entry = stats[key] = QueueStats(frame.topic, frame.queue_id)
        entry.messages += 1
        entry.bytes += frame.total_size
        if entry.min_queue_offset is None or frame.queue_offset < entry.min_queue_offset:
            entry.min_queue_offset = frame.queue_offset
        if entry.max_queue_offset is None or frame.queue_offset > entry.max_queue_offset:
            entry.max_queue_offset = frame.queue_offset
        if entry.first_store_timestamp is None:
            entry.first_store_timestamp = frame.store_timestamp
        entry.last_store_timestamp = frame.store_timestamp
        if not frame.body_crc_ok:
            entry.crc_errors += 1
        tags = frame.tags
        if tags is not None:
            entry.tags[tags] += 1
    return [stats[key] for key in sorted(stats)]


def topic_stats(stats: Sequence[QueueStats]) -> list[QueueStats]:
    """:func:`queue_stats` rows added up per topic (queue id -1, offsets left out)."""
    totals: dict[str, QueueStats] = {}
    for row in stats:
        total = totals.get(row.topic)
        if total is None:
            total = totals[row.topic] = QueueStats(row.topic, -1)
        total.messages += row.messages
        total.bytes += row.bytes
        total.crc_errors += row.crc_errors
        total.tags.update(row.tags)
        for timestamp in (row.first_store_timestamp, row.last_store_timestamp):
            if timestamp is None:
                continue
            if total.first_store_timestamp is None or timestamp < total.first_store_timestamp:
                total.first_store_timestamp = timestamp
            if total.last_store_timestamp is None or timestamp > total.last_store_timestamp:
                total.last_store_timestamp = timestamp
    return [totals[topic] for topic in sorted(totals)]
