"""What `rmq inspect` asks of a store directory: summaries, listings, statistics, searches,
config views and diffs, computed offline over a :class:`~rmq.store.reader.StoreReader`.

Everything here reads; nothing writes, locks or repairs.  Results are plain dataclasses (or
dicts where the shape is the config file's own), so the command line only picks columns and
renders them, and tests can assert on them directly.

* :func:`overview` answers "what is in this store and in what state": file counts and sizes,
  the commitlog's offset range, topics and queues with message counts (from the consume
  queues' offset ranges, found by binary search, not by reading messages), the time range
  (first and newest record, the newest found by walking only the part of the last file after
  the newest consume queue entry), whether a broker holds the ``lock`` file now, else whether
  the last shutdown was clean (no ``abort`` file), and the checkpoint.
* :func:`queue_stats` and :func:`find_records` scan the commitlog through
  :meth:`StoreReader.scan`: statistics use the scan's frames only (topic, queue id, size,
  store time, tags read from the raw property string, body CRC), and a search decodes only
  the records its :class:`RecordFilter` keeps.  A time window starts the scan at the last
  file whose first record is not newer than the window and stops at the first file that
  begins after it.
* :func:`config_rows` turns ``config/*.json`` into rows: topics, subscription groups,
  consumer offsets with their queue's range and lag, delay offsets with what is still
  pending in ``SCHEDULE_TOPIC_XXXX``, SQL92 filters; :func:`config_diff` compares each file
  with its ``.bak`` or with the same file of another store directory, leaf by leaf.
* :func:`record_dict` is the message record of ``rmq consume`` (``to_record_dict``), with a
  ``bodyError`` instead of a failure when a compressed body cannot be decompressed.
"""

from __future__ import annotations

import bisect
import enum
import itertools
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from rmq.common import fastjson
from rmq.common.compression import CompressionError
from rmq.common.delay import DEFAULT_MESSAGE_DELAY_LEVEL
from rmq.common.jsonrecord import to_record_dict
from rmq.common.message import MessageRecord
from rmq.common.naming import RMQ_SYS_SCHEDULE_TOPIC
from rmq.common.perm import perm_to_string
from rmq.store.checkpoint import RECOVERY_MARGIN_MS
from rmq.store.configfile import ConfigFileError, backup_path
from rmq.store.consumequeue import CQ_STORE_UNIT_SIZE
from rmq.store.errors import StoreError
from rmq.store.layout import (
    CONSUMER_FILTER_JSON,
    CONSUMER_OFFSET_JSON,
    DELAY_OFFSET_JSON,
    SUBSCRIPTION_GROUP_JSON,
    TOPICS_JSON,
    StoreLayout,
    list_offset_files,
)
from rmq.store.reader import (
    CONFIG_FILES,
    Progress,
    QueueRange,
    RecordFrame,
    Report,
    StoreReader,
)

TOPIC_GROUP_SEPARATOR: Final = "@"
DELAY_LABELS: Final = tuple(DEFAULT_MESSAGE_DELAY_LEVEL.split())
"""Labels of the default delay levels; a store does not record the broker's own list."""


class ShutdownState(enum.StrEnum):
    """What the ``lock`` and ``abort`` files say about the broker of a store."""

    RUNNING = "running"
    CLEAN = "clean"
    UNCLEAN = "unclean"


@dataclass(frozen=True, slots=True)
class QueueSummary:
    """A consume queue's offset range and files."""

    topic: str
    queue_id: int
    min_offset: int
    max_offset: int
    messages: int
    files: int
    bytes: int


@dataclass(frozen=True, slots=True)
class TopicSummary:
    topic: str
    queues: int
    messages: int


@dataclass(slots=True)
class Overview:
    """The answer of :func:`overview`; timestamps in ms, None when unknown."""

    root: str
    commitlog_dir: str
    commitlog_files: int
    commitlog_bytes: int
    min_physical_offset: int
    max_physical_offset: int
    first_store_timestamp: int | None
    last_store_timestamp: int | None
    topics: int
    queues: int
    messages: int
    consume_queue_files: int
    consume_queue_bytes: int
    index_files: int
    index_bytes: int
    index_entries: int
    lock_held: bool
    lock_holder_pid: int | None
    abort_file: bool
    shutdown: ShutdownState
    physic_msg_timestamp: int | None
    logics_msg_timestamp: int | None
    index_msg_timestamp: int | None
    topic_summaries: list[TopicSummary] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class CheckpointInfo:
    """The checkpoint file and where abnormal recovery would start looking."""

    path: str
    physic_msg_timestamp: int
    logics_msg_timestamp: int
    index_msg_timestamp: int
    recovery_timestamp: int
    recovery_with_index_timestamp: int


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


@dataclass(frozen=True, slots=True)
class ConfigChange:
    """One leaf of a config file that differs from the baseline (``path`` joins the keys
    with ``/``); ``old`` is None for an added leaf, ``new`` for a removed one."""

    file: str
    path: str
    change: str
    old: Any
    new: Any


@dataclass(frozen=True, slots=True)
class ConfigDiff:
    """A config file against its baseline; ``baseline`` is None when there is none."""

    file: Path
    baseline: Path | None
    changes: list[ConfigChange]


# -- overview ------------------------------------------------------------------------------


def queue_summaries(reader: StoreReader) -> list[QueueSummary]:
    """Every consume queue with its offset range and files, sorted by topic and queue id."""
    summaries = []
    for topic, queue_id in reader.consume_queues():
        summaries.append(
            _queue_summary(reader, topic, queue_id, reader.queue_range(topic, queue_id))
        )
    return summaries


def _queue_summary(
    reader: StoreReader, topic: str, queue_id: int, queue_range: QueueRange
) -> QueueSummary:
    files = reader.consume_queue_files(topic, queue_id)
    return QueueSummary(
        topic,
        queue_id,
        queue_range.min_offset,
        queue_range.max_offset,
        queue_range.max_offset - queue_range.min_offset,
        len(files),
        sum(f.size for f in files),
    )


def overview(reader: StoreReader) -> Overview:
    """See the module docstring."""
    layout = reader.layout
    commitlog = reader.commitlog_files()
    newest_entry: int | None = None
    summaries = []
    for topic, queue_id in reader.consume_queues():
        queue_range = reader.queue_range(topic, queue_id)
        last = queue_range.last_entry
        if last is not None and queue_range.max_offset > queue_range.min_offset:
            newest_entry = max(newest_entry or 0, last.physical_offset)
        summaries.append(_queue_summary(reader, topic, queue_id, queue_range))
    first = next(reader.scan(), None)
    newest, end = reader.data_end(newest_entry)
    index_files = reader.index_files()
    lock = reader.lock_status()
    abort = reader.abort_file_present()
    checkpoint = reader.checkpoint()
    by_topic: dict[str, list[QueueSummary]] = {}
    for summary in summaries:
        by_topic.setdefault(summary.topic, []).append(summary)
    return Overview(
        root=str(layout.root),
        commitlog_dir=str(layout.commitlog),
        commitlog_files=len(commitlog),
        commitlog_bytes=sum(f.size for f in commitlog),
        min_physical_offset=reader.min_physical_offset,
        max_physical_offset=end,
        first_store_timestamp=None if first is None else first.store_timestamp,
        last_store_timestamp=None if newest is None else newest.store_timestamp,
        topics=len(by_topic),
        queues=len(summaries),
        messages=sum(s.messages for s in summaries),
        consume_queue_files=sum(s.files for s in summaries),
        consume_queue_bytes=sum(s.bytes for s in summaries),
        index_files=len(index_files),
        index_bytes=sum(_size(info.path) for info in index_files),
        index_entries=sum(max(info.index_count - 1, 0) for info in index_files),
        lock_held=lock is not None and lock.locked,
        lock_holder_pid=None if lock is None else lock.pid,
        abort_file=abort,
        shutdown=_shutdown_state(lock is not None and lock.locked, abort),
        physic_msg_timestamp=None if checkpoint is None else checkpoint.physic_msg_timestamp,
        logics_msg_timestamp=None if checkpoint is None else checkpoint.logics_msg_timestamp,
        index_msg_timestamp=None if checkpoint is None else checkpoint.index_msg_timestamp,
        topic_summaries=[
            TopicSummary(topic, len(queues), sum(q.messages for q in queues))
            for topic, queues in sorted(by_topic.items())
        ],
    )


def _shutdown_state(locked: bool, abort: bool) -> ShutdownState:
    if locked:
        return ShutdownState.RUNNING
    return ShutdownState.UNCLEAN if abort else ShutdownState.CLEAN


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def checkpoint_info(reader: StoreReader) -> CheckpointInfo | None:
    """The decoded checkpoint; None when the file is missing or too short."""
    checkpoint = reader.checkpoint()
    if checkpoint is None:
        return None
    physic, logics, index = checkpoint
    recovery = max(min(physic, logics) - RECOVERY_MARGIN_MS, 0)
    return CheckpointInfo(
        str(reader.layout.checkpoint),
        physic,
        logics,
        index,
        recovery,
        min(recovery, index),
    )


# -- queues and records --------------------------------------------------------------------


def queue_entry_location(
    reader: StoreReader, topic: str, queue_id: int, queue_offset: int
) -> tuple[Path, int] | None:
    """The consume queue file holding ``queue_offset`` and the entry's byte offset in it."""
    position = queue_offset * CQ_STORE_UNIT_SIZE
    for store_file in reader.consume_queue_files(topic, queue_id):
        if store_file.start <= position < store_file.start + store_file.size:
            return store_file.path, position - store_file.start
    return None


@dataclass(frozen=True, slots=True)
class QueueGap:
    """Queue offsets ``[first, end)`` that no consume queue file holds (a file is missing)."""

    first: int
    end: int
    next_file: Path


def queue_gaps(reader: StoreReader, topic: str, queue_id: int) -> list[QueueGap]:
    """The holes between consecutive files of a consume queue."""
    files = reader.consume_queue_files(topic, queue_id)
    gaps = []
    for before, after in itertools.pairwise(files):
        end = before.start + before.size
        if end < after.start:
            gaps.append(
                QueueGap(end // CQ_STORE_UNIT_SIZE, after.start // CQ_STORE_UNIT_SIZE, after.path)
            )
    return gaps


def record_dict(record: MessageRecord, broker_name: str | None = None) -> dict[str, Any]:
    """The message record of ``rmq consume``; a body that cannot be decompressed is null,
    with ``bodyError`` saying why."""
    try:
        return to_record_dict(record, broker_name)
    except CompressionError as exc:
        data = to_record_dict(record._replace(body=None), broker_name)
        data["bodyError"] = str(exc)
        return data


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


_MAX: Final = (1 << 63) - 1


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


# -- files ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CommitlogFileRow:
    name: str
    path: str
    start: int
    end: int
    size: int
    modified_timestamp: int | None


@dataclass(frozen=True, slots=True)
class ConsumeQueueFileRow:
    """A consume queue file; ``entries`` counts up to the first empty one, pre-blanks
    included; the commitlog offsets are those of its first and last message entries."""

    topic: str
    queue_id: int
    name: str
    path: str
    first_queue_offset: int
    entries: int
    pre_blank_entries: int
    capacity: int
    min_commitlog_offset: int | None
    max_commitlog_offset: int | None
    size: int
    modified_timestamp: int | None


@dataclass(frozen=True, slots=True)
class IndexFileRow:
    name: str
    path: str
    hash_slots: int
    capacity: int
    entries: int
    used_slots: int
    begin_timestamp: int
    end_timestamp: int
    begin_commitlog_offset: int
    end_commitlog_offset: int
    size: int
    modified_timestamp: int | None


@dataclass(frozen=True, slots=True)
class ConfigFileRow:
    name: str
    path: str
    size: int | None
    modified_timestamp: int | None
    backup_size: int | None
    backup_modified_timestamp: int | None


def _modified(path: Path) -> int | None:
    try:
        return path.stat().st_mtime_ns // 1_000_000
    except OSError:
        return None


def commitlog_file_rows(reader: StoreReader) -> list[CommitlogFileRow]:
    return [
        CommitlogFileRow(
            f.path.name, str(f.path), f.start, f.start + f.size, f.size, _modified(f.path)
        )
        for f in reader.commitlog_files()
    ]


def consume_queue_file_rows(
    reader: StoreReader, topic: str | None = None, queue_id: int | None = None
) -> list[ConsumeQueueFileRow]:
    """The files of every consume queue, or of one topic, or of one queue."""
    rows = []
    for queue_topic, queue in reader.consume_queues():
        if (topic is not None and queue_topic != topic) or (
            queue_id is not None and queue != queue_id
        ):
            continue
        for info in reader.consume_queue_file_info(queue_topic, queue):
            rows.append(
                ConsumeQueueFileRow(
                    queue_topic,
                    queue,
                    info.path.name,
                    str(info.path),
                    info.start // CQ_STORE_UNIT_SIZE,
                    info.entries,
                    info.pre_blank_entries,
                    info.size // CQ_STORE_UNIT_SIZE,
                    info.min_physical_offset,
                    info.max_physical_offset,
                    info.size,
                    _modified(info.path),
                )
            )
    return rows


def index_file_rows(reader: StoreReader) -> list[IndexFileRow]:
    return [
        IndexFileRow(
            info.path.name,
            str(info.path),
            info.hash_slot_num,
            info.index_num,
            max(info.index_count - 1, 0),
            info.hash_slot_count,
            info.begin_timestamp,
            info.end_timestamp,
            info.begin_phy_offset,
            info.end_phy_offset,
            _size(info.path),
            _modified(info.path),
        )
        for info in reader.index_files()
    ]


def config_file_rows(reader: StoreReader) -> list[ConfigFileRow]:
    rows = []
    for name in CONFIG_FILES:
        path = reader.layout.config_file(name)
        backup = backup_path(path)
        rows.append(
            ConfigFileRow(
                name,
                str(path),
                _size(path) if path.exists() else None,
                _modified(path),
                _size(backup) if backup.exists() else None,
                _modified(backup),
            )
        )
    return rows


# -- config --------------------------------------------------------------------------------


class ConfigView(enum.StrEnum):
    """The views of ``config/*.json``; :data:`CONFIG_VIEW_FILES` names their files."""

    TOPICS = "topics"
    GROUPS = "groups"
    OFFSETS = "offsets"
    DELAY = "delay"
    FILTERS = "filters"


CONFIG_VIEW_FILES: Final = {
    ConfigView.TOPICS: TOPICS_JSON,
    ConfigView.GROUPS: SUBSCRIPTION_GROUP_JSON,
    ConfigView.OFFSETS: CONSUMER_OFFSET_JSON,
    ConfigView.DELAY: DELAY_OFFSET_JSON,
    ConfigView.FILTERS: CONSUMER_FILTER_JSON,
}


def config_rows(reader: StoreReader, view: ConfigView) -> tuple[Path | None, list[dict[str, Any]]]:
    """The rows of one view and the file they came from (the ``.bak`` when the broker would
    load that one; None when neither exists).  Raises :class:`ConfigFileError` when the file
    exists but cannot be decoded."""
    loaded = reader.load_config(CONFIG_VIEW_FILES[view])
    if loaded is None:
        return None, _delay_rows(reader, {}) if view is ConfigView.DELAY else []
    value = _mapping(loaded.value)
    if view is ConfigView.TOPICS:
        rows = _topic_rows(reader, value)
    elif view is ConfigView.GROUPS:
        rows = [
            _first(_mapping(group), "groupName", name)
            for name, group in sorted(
                _mapping(value.get("subscriptionGroupTable")).items(), key=_by_key
            )
        ]
    elif view is ConfigView.OFFSETS:
        rows = _offset_rows(reader, value)
    elif view is ConfigView.DELAY:
        rows = _delay_rows(reader, value)
    else:
        rows = _filter_rows(value)
    return loaded.path, rows


def _mapping(value: Any) -> Mapping[Any, Any]:
    """``value`` if it is a JSON object, else an empty one (damaged files never raise)."""
    return value if isinstance(value, Mapping) else {}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _by_key(item: tuple[Any, Any]) -> str:
    return str(item[0])


def _first(fields: Mapping[Any, Any], name: str, default: Any) -> dict[str, Any]:
    """``fields`` with ``name`` first (``default`` when missing), keys as strings."""
    row = {name: fields.get(name, default)}
    row.update((str(key), value) for key, value in fields.items() if key != name)
    return row


def _topic_rows(reader: StoreReader, value: Mapping[Any, Any]) -> list[dict[str, Any]]:
    stored: dict[str, list[QueueSummary]] = {}
    for summary in queue_summaries(reader):
        stored.setdefault(summary.topic, []).append(summary)
    rows = []
    for name, config in sorted(_mapping(value.get("topicConfigTable")).items(), key=_by_key):
        row = _first(_mapping(config), "topicName", name)
        perm = _int(row.get("perm"))
        row["permString"] = None if perm is None else perm_to_string(perm)
        queues = stored.get(str(name), [])
        row["storedQueues"] = len(queues)
        row["messages"] = sum(q.messages for q in queues)
        rows.append(row)
    return rows


def _queue_range(reader: StoreReader, topic: str, queue_id: int) -> QueueRange | None:
    if not list_offset_files(reader.layout.consume_queue_dir(topic, queue_id)):
        return None
    return reader.queue_range(topic, queue_id)


def _offset_rows(reader: StoreReader, value: Mapping[Any, Any]) -> list[dict[str, Any]]:
    rows = []
    for key, table in _mapping(value.get("offsetTable")).items():
        topic, _, group = str(key).partition(TOPIC_GROUP_SEPARATOR)
        for queue_id, offset in _mapping(table).items():
            queue = _int(queue_id)
            committed = _int(offset)
            queue_range = None if queue is None else _queue_range(reader, topic, queue)
            rows.append(
                {
                    "group": group,
                    "topic": topic,
                    "queueId": queue if queue is not None else queue_id,
                    "offset": offset,
                    "minOffset": None if queue_range is None else queue_range.min_offset,
                    "maxOffset": None if queue_range is None else queue_range.max_offset,
                    "lag": (
                        None
                        if queue_range is None or committed is None
                        else max(queue_range.max_offset - committed, 0)
                    ),
                }
            )
    rows.sort(key=lambda row: (row["group"], row["topic"], str(row["queueId"]).zfill(12)))
    return rows


def _delay_rows(reader: StoreReader, value: Mapping[Any, Any]) -> list[dict[str, Any]]:
    """One row per level in the offset table, and one per schedule queue whose level the
    table lacks (a broker has not persisted an offset for it yet, and starts it at the
    queue's minimum offset): offset null, everything stored there pending."""
    rows = []
    for level_key, offset in sorted(_mapping(value.get("offsetTable")).items(), key=_by_key):
        level = _int(level_key)
        committed = _int(offset)
        queue_range = (
            None if level is None else _queue_range(reader, RMQ_SYS_SCHEDULE_TOPIC, level - 1)
        )
        pending = (
            None
            if queue_range is None or committed is None
            else max(queue_range.max_offset - committed, 0)
        )
        rows.append(
            _delay_row(level if level is not None else level_key, offset, queue_range, pending)
        )
    listed = {row["level"] for row in rows}
    for topic, queue_id in reader.consume_queues():
        if topic == RMQ_SYS_SCHEDULE_TOPIC and queue_id + 1 not in listed:
            queue_range = _queue_range(reader, topic, queue_id)
            pending = (
                None if queue_range is None else queue_range.max_offset - queue_range.min_offset
            )
            rows.append(_delay_row(queue_id + 1, None, queue_range, pending))
    rows.sort(key=lambda row: str(row["level"]).zfill(12))
    return rows


def _delay_row(
    level: Any, offset: Any, queue_range: QueueRange | None, pending: int | None
) -> dict[str, Any]:
    number = _int(level)
    return {
        "level": level,
        "delay": DELAY_LABELS[number - 1] if number and number <= len(DELAY_LABELS) else None,
        "queueId": None if number is None else number - 1,
        "offset": offset,
        "maxOffset": None if queue_range is None else queue_range.max_offset,
        "pending": pending,
    }


def _filter_rows(value: Mapping[Any, Any]) -> list[dict[str, Any]]:
    rows = []
    for topic, data in sorted(_mapping(value.get("filterDataByTopic")).items(), key=_by_key):
        for group, fields in sorted(
            _mapping(_mapping(data).get("groupFilterData")).items(), key=_by_key
        ):
            row: dict[str, Any] = {"topic": str(topic), "group": str(group)}
            row.update(
                (str(key), item)
                for key, item in _mapping(fields).items()
                if key not in ("topic", "consumerGroup")
            )
            rows.append(row)
    return rows


def config_diff(
    reader: StoreReader, names: Sequence[str] = CONFIG_FILES, against: StoreLayout | None = None
) -> list[ConfigDiff]:
    """Each config file ``names`` against its ``.bak`` or, with ``against``, the same file
    of another store (a file missing there counts as empty).  A file without a ``.bak`` has
    no baseline (None, no changes); files missing on both sides are left out."""
    diffs = []
    for name in names:
        path = reader.layout.config_file(name)
        baseline = against.config_file(name) if against is not None else backup_path(path)
        current = _read_config(path)
        base = _read_config(baseline)
        if base is None and (against is None or current is None):
            if current is not None:
                diffs.append(ConfigDiff(path, None, []))
            continue
        changes = []
        old = _flatten(base)
        new = _flatten(current)
        for leaf in sorted(old.keys() | new.keys()):
            if leaf not in old:
                changes.append(ConfigChange(name, leaf, "added", None, new[leaf]))
            elif leaf not in new:
                changes.append(ConfigChange(name, leaf, "removed", old[leaf], None))
            elif old[leaf] != new[leaf]:
                changes.append(ConfigChange(name, leaf, "changed", old[leaf], new[leaf]))
        diffs.append(ConfigDiff(path, baseline, changes))
    return diffs


def _read_config(path: Path) -> Any:
    """A config file decoded, None when it does not exist or is empty."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigFileError(f"cannot read {path}: {exc}") from None
    if not text:
        return None
    try:
        return fastjson.loads(text)
    except Exception as exc:
        raise ConfigFileError(f"cannot decode {path}: {exc}") from None


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Leaves of a decoded JSON value by path (``offsetTable/Topic@group/0``)."""
    if isinstance(value, Mapping):
        leaves: dict[str, Any] = {}
        for key, item in value.items():
            leaves.update(_flatten(item, f"{prefix}/{key}" if prefix else str(key)))
        return leaves
    if isinstance(value, list | tuple):
        leaves = {}
        for index, item in enumerate(value):
            leaves.update(_flatten(item, f"{prefix}/{index}" if prefix else str(index)))
        return leaves
    return {} if value is None and not prefix else {prefix: value}
