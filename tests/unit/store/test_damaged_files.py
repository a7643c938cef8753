"""Damaged files at start and index files that cannot be created, on a MessageStore.

The consume queue start check (rmq.store.queuecheck), files set aside (rmq.store.setaside)
and the index catching up after it fell behind (rmq.store.indexlag); the same with real
broker processes is tests/integration/test_damaged_store_files.py and test_full_disk.py.
"""

from __future__ import annotations

import json
import logging
import os
import random
import time
from pathlib import Path

import pytest

from rmq.store.consumequeue import ENTRY
from rmq.store.errors import DiskFullError
from rmq.store.mappedfile import Allocate, MappedFile
from rmq.store.store import MessageStore
from tests.unit.store.test_store import message, put_ok, small_config


class IndexDisk:
    """Makes index files impossible to create while ``full`` is set."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.full = False
        real = MappedFile.create.__func__  # type: ignore[attr-defined]

        def create(cls: type[MappedFile], path: str, file_size: int, *args: Allocate) -> MappedFile:
            if self.full and f"{os.sep}index{os.sep}" in path:
                raise DiskFullError(f"disk full: cannot create {path} ({file_size} bytes)")
            created: MappedFile = real(cls, path, file_size, *args)
            return created

        monkeypatch.setattr(MappedFile, "create", classmethod(create))


def keys_found(store: MessageStore, numbers: range) -> list[int]:
    return [
        n
        for n in numbers
        if store.query_message("TopicTest", f"key{n}", 4, 0, 2**62).physical_offsets
    ]


def log_lines(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == level]


def test_puts_go_on_without_an_index_file_and_the_keys_are_indexed_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    disk = IndexDisk(monkeypatch)
    store = MessageStore(small_config(tmp_path))
    store.start()
    assert store.index_lag is not None
    store.index_lag.interval_ms = 0
    marker = tmp_path / "recovery" / "index-behind"
    try:
        with caplog.at_level(logging.INFO, logger="rmq.store"):
            disk.full = True
            acked = [put_ok(store, message(n, queue_id=n % 2)) for n in range(300)]
            assert keys_found(store, range(300)) == []
            assert int(marker.read_text()) == acked[0].physical_offset
            assert [store.get_max_offset_in_queue("TopicTest", q) for q in (0, 1)] == [150, 150]
            disk.full = False
            deadline = time.monotonic() + 10
            while store.index_lag.behind and time.monotonic() < deadline:
                time.sleep(0.02)  # the logics flush thread catches up
            assert keys_found(store, range(300)) == list(range(300))
            put_ok(store, message(300))
            assert keys_found(store, range(300, 301)) == [300]
        errors = log_lines(caplog, logging.ERROR)
        assert len(errors) == 1, errors
        [error] = errors
        assert "cannot write index entries from commitlog offset 0 on" in error
        assert any("index caught up" in line for line in log_lines(caplog, logging.INFO))
        assert not marker.exists()
    finally:
        store.shutdown()


def test_an_index_left_behind_at_shutdown_is_caught_up_at_the_next_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    disk = IndexDisk(monkeypatch)
    config = small_config(tmp_path)
    store = MessageStore(config)
    store.start()
    assert store.index_lag is not None
    put_ok(store, message(0))  # creates the first index file
    disk.full = True
    offsets = [put_ok(store, message(n)).physical_offset for n in range(1, 200)]
    assert store.index_lag.behind  # 255 entries a file, two keys a message
    behind = store.index_lag.behind_from
    assert behind in offsets[100:]
    store.shutdown()
    assert int((tmp_path / "recovery" / "index-behind").read_text()) == behind
    disk.full = False
    store = MessageStore(config)
    result = store.start()
    try:
        assert result.reindexed_from == behind
        assert keys_found(store, range(200)) == list(range(200))
        assert result.report is not None
        assert json.loads(result.report.read_text())["reindexedFrom"] == behind
        assert not (tmp_path / "recovery" / "index-behind").exists()
    finally:
        store.shutdown()


def fill(tmp_path: Path, count: int = 240) -> MessageStore:
    """A store with ``count`` messages over two queues (50-entry consume queue files)."""
    store = MessageStore(small_config(tmp_path))
    store.start()
    for n in range(count):
        put_ok(store, message(n, queue_id=n % 2))
    store.shutdown()
    return store


def queue_file(tmp_path: Path, number: int, queue_id: int = 0) -> Path:
    return sorted((tmp_path / "consumequeue" / "TopicTest" / str(queue_id)).iterdir())[number]


def assert_queue_points_at_its_records(store: MessageStore, count: int) -> None:
    queue = store.get_consume_queue("TopicTest", 0)
    assert queue is not None
    for queue_offset in range(count):
        entry = queue.entry_at(queue_offset)
        assert entry is not None
        record = store.look_message_by_offset(entry.physical_offset)
        assert record is not None
        assert (record.topic, record.queue_id, record.queue_offset) == (
            "TopicTest",
            0,
            queue_offset,
        )


@pytest.mark.parametrize("number", [0, 1, 2])
def test_a_consume_queue_file_of_random_bytes_is_set_aside_and_the_queue_rebuilt(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, number: int
) -> None:
    fill(tmp_path)
    damaged = queue_file(tmp_path, number)
    damaged.write_bytes(random.Random(number).randbytes(damaged.stat().st_size))
    store = MessageStore(small_config(tmp_path))
    with caplog.at_level(logging.INFO, logger="rmq.store"):
        result = store.start()
    try:
        assert store.get_max_offset_in_queue("TopicTest", 0) == 120
        assert_queue_points_at_its_records(store, 120)
        warnings = [line for line in log_lines(caplog, logging.WARNING) if str(damaged) in line]
        assert len(warnings) == 1
        assert [moved.file for moved in result.set_aside] == [
            f"consumequeue/TopicTest/0/{damaged.name}"
        ]
        assert result.rebuilt_queues == {"TopicTest/0": 120}
        put_ok(store, message(999, queue_id=0))
        assert store.get_max_offset_in_queue("TopicTest", 0) == 121
    finally:
        store.shutdown()


def test_an_entry_abnormal_recovery_finds_different_rebuilds_the_queue(tmp_path: Path) -> None:
    fill(tmp_path)
    damaged = queue_file(tmp_path, 0)
    data = bytearray(damaged.read_bytes())
    # swap entries 10 and 11: both still point at records of the queue, at the wrong offsets
    data[200:220], data[220:240] = data[220:240], data[200:220]
    damaged.write_bytes(bytes(data))
    (tmp_path / "abort").touch()
    store = MessageStore(small_config(tmp_path))
    result = store.start()
    try:
        assert result.abnormal
        assert_queue_points_at_its_records(store, 120)
        assert result.rebuilt_queues == {"TopicTest/0": 120}
        assert "holds another record's entry" in result.set_aside[0].reason
    finally:
        store.shutdown()


def test_a_healthy_store_sets_nothing_aside(tmp_path: Path) -> None:
    fill(tmp_path)
    for abnormal in (False, True):
        if abnormal:
            (tmp_path / "abort").touch()
        store = MessageStore(small_config(tmp_path))
        result = store.start()
        store.shutdown()
        assert (result.set_aside, result.rebuilt_queues, result.reindexed_from) == ([], {}, -1)


def test_a_torn_last_entry_past_the_commitlog_is_cut_not_rebuilt(tmp_path: Path) -> None:
    fill(tmp_path)
    last = queue_file(tmp_path, -1)
    data = bytearray(last.read_bytes())
    end = next(pos for pos in range(0, len(data), 20) if data[pos : pos + 20] == bytes(20))
    ENTRY.pack_into(data, end, 10**9, 120, 0)  # an entry whose record never made it to disk
    last.write_bytes(bytes(data))
    store = MessageStore(small_config(tmp_path))
    result = store.start()
    try:
        assert result.set_aside == []
        assert result.consume_queue_removed == {"TopicTest/0": 1}
        assert store.get_max_offset_in_queue("TopicTest", 0) == 120
    finally:
        store.shutdown()
