"""The rows of `rmq inspect STORE files`: one per commitlog, consume queue, index or config
file, with its offset range, what it holds, its size and modification time.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rmq.store.configfile import backup_path
from rmq.store.consumequeue import CQ_STORE_UNIT_SIZE
from rmq.store.offline.files import CONFIG_FILES, file_size
from rmq.store.offline.reader import StoreReader


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
            file_size(info.path),
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
                file_size(path) if path.exists() else None,
                _modified(path),
                file_size(backup) if backup.exists() else None,
                _modified(backup),
            )
        )
    return rows
