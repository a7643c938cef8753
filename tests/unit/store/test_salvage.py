"""Recovery keeps every intact record: damaged records and framing are skipped and reported,
a short last file is grown back, and what recovery removed is counted in the report file."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path
from typing import Any

import pytest

from rmq.store.consumequeue import PRE_BLANK_SIZE
from rmq.store.putmessage import PutMessageResult
from rmq.store.store import MessageStore
from tests.unit.store.test_recovery import (
    FILE_SIZE,
    assert_all_readable,
    commitlog_file,
    fill,
    patch_file,
    reopen,
)
from tests.unit.store.test_store import BASE_TIME, message, put_ok

BODY_AT = 84 + 4  # IPv4 layout: the body starts after the fixed part and its length
STORE_TIMESTAMP_POS = 56  # IPv4 layout


def queue_offsets(store: MessageStore, queue_id: int) -> list[int]:
    """Physical offsets a consumer pulling the queue from 0 gets."""
    offsets: list[int] = []
    offset = 0
    while True:
        got = store.get_messages("TopicTest", queue_id, offset, 32)
        if got.next_begin_offset == offset:
            return offsets
        offsets += got.physical_offsets
        offset = got.next_begin_offset


def the_report(store: MessageStore) -> dict[str, Any]:
    assert store.recovery.report is not None
    loaded: dict[str, Any] = json.loads(store.recovery.report.read_text())
    return loaded


def assert_kept_all_but(store: MessageStore, results: list[PutMessageResult], lost: int) -> None:
    for queue_id in (0, 1):
        expected = [
            r.physical_offset for n, r in enumerate(results) if n % 2 == queue_id and n != lost
        ]
        assert queue_offsets(store, queue_id) == expected


@pytest.mark.parametrize("abnormal", [False, True])
def test_a_flipped_body_bit_skips_that_record_alone(tmp_path: Path, abnormal: bool) -> None:
    results = fill(tmp_path, 50)
    damaged = results[20]
    path = commitlog_file(tmp_path, damaged.physical_offset)
    position = damaged.physical_offset % FILE_SIZE
    patch_file(path, position + BODY_AT + 3, b"\x55")
    if abnormal:
        (tmp_path / "abort").touch()
    store = reopen(tmp_path)
    try:
        assert store.recovery.end_offset == results[-1].next_offset
        assert store.recovery.truncated == []
        assert_kept_all_but(store, results, 20)
        entry = store.consume_queues.find("TopicTest", 0)
        assert entry is not None
        blank = entry.entry_at(damaged.queue_offset)
        assert blank is not None and blank.size == PRE_BLANK_SIZE
        report = the_report(store)
        assert report["mode"] == ("abnormal" if abnormal else "normal")
        assert report["skipped"] == [
            {
                "file": path.name,
                "position": position,
                "offset": damaged.physical_offset,
                "length": damaged.wrote_bytes,
                "reason": "body-crc",
                "topic": "TopicTest",
                "queueId": 0,
                "queueOffset": damaged.queue_offset,
            }
        ]
        assert report["consumeQueueEntriesBlanked"] == {"TopicTest/0": 1}
        assert store.query_message("TopicTest", "key20", 32, 0, 2**62).messages == []
        assert len(store.query_message("TopicTest", "key22", 32, 0, 2**62).messages) == 1
        after = put_ok(store, message(50, queue_id=0, body=bytes([50]) * 150))
        assert after.queue_offset == results[-2].queue_offset + 1
    finally:
        store.shutdown()


@pytest.mark.parametrize("abnormal", [False, True])
def test_damaged_framing_is_searched_past_to_the_next_record_that_checks_out(
    tmp_path: Path, abnormal: bool
) -> None:
    results = fill(tmp_path, 50)
    first, after = results[21], results[24]
    assert commitlog_file(tmp_path, first.physical_offset) == commitlog_file(
        tmp_path, after.physical_offset
    )
    path = commitlog_file(tmp_path, first.physical_offset)
    start = first.physical_offset % FILE_SIZE + 2  # from inside TOTALSIZE
    patch_file(path, start, os.urandom(after.physical_offset - first.physical_offset - 2))
    if abnormal:
        (tmp_path / "abort").touch()
    store = reopen(tmp_path)
    try:
        assert store.recovery.end_offset == results[-1].next_offset
        spans = the_report(store)["skipped"]
        assert spans == [
            {
                "file": path.name,
                "position": first.physical_offset % FILE_SIZE,
                "offset": first.physical_offset,
                "length": after.physical_offset - first.physical_offset,
                "reason": "framing",
                "detail": spans[0]["detail"],
            }
        ]
        assert spans[0]["detail"].startswith(("bad magic", "truncated record", "record at"))
        kept = [r for n, r in enumerate(results) if n not in (21, 22, 23)]
        for queue_id in (0, 1):
            expected = [
                r.physical_offset
                for n, r in enumerate(results)
                if n % 2 == queue_id and n not in (21, 22, 23)
            ]
            assert queue_offsets(store, queue_id) == expected
        assert len(kept) == 47
    finally:
        store.shutdown()


def test_a_zeroed_file_tail_before_later_files_is_skipped_not_cut(tmp_path: Path) -> None:
    results = fill(tmp_path, 50)
    zeroed = results[30]  # in the second of the three files normal recovery walks
    path = commitlog_file(tmp_path, zeroed.physical_offset)
    position = zeroed.physical_offset % FILE_SIZE
    patch_file(path, position, bytes(FILE_SIZE - position))
    lost = {n for n, r in enumerate(results) if commitlog_file(tmp_path, r.physical_offset) == path}
    lost = {n for n in lost if results[n].physical_offset >= zeroed.physical_offset}
    store = reopen(tmp_path)
    try:
        assert store.recovery.end_offset == results[-1].next_offset
        assert [s.reason for s in store.recovery.skipped] == ["framing"]
        assert store.recovery.skipped[0].length == FILE_SIZE - position
        for queue_id in (0, 1):
            expected = [
                r.physical_offset
                for n, r in enumerate(results)
                if n % 2 == queue_id and n not in lost
            ]
            assert queue_offsets(store, queue_id) == expected
    finally:
        store.shutdown()


def test_zeros_in_the_last_file_end_the_log_and_the_cut_is_counted(tmp_path: Path) -> None:
    results = fill(tmp_path, 10)
    damaged = results[7]
    path = commitlog_file(tmp_path, damaged.physical_offset)
    patch_file(path, damaged.physical_offset % FILE_SIZE, bytes(8))  # a torn write
    store = reopen(tmp_path)
    try:
        assert store.recovery.end_offset == damaged.physical_offset
        assert store.recovery.skipped == []
        assert store.recovery.dropped_records == 2  # the two intact records after it go too
        report = the_report(store)
        assert report["consumeQueueEntriesRemoved"] == {"TopicTest/0": 1, "TopicTest/1": 2}
        assert report["indexEntriesRemoved"] == 6  # key and unique key of each of three
        assert report["droppedRecords"] == 2
        assert_all_readable(store, results[:7])
    finally:
        store.shutdown()


def test_a_batch_cut_short_in_the_last_file_ends_the_log(tmp_path: Path) -> None:
    """A batch's first TOTALSIZE is written last: a crash mid-batch leaves 0 there (its magic
    and the later records complete).  Nobody was answered for them: the log ends there, the
    later records are not searched for as data past damage."""
    results = fill(tmp_path, 10)
    torn = results[7]
    path = commitlog_file(tmp_path, torn.physical_offset)
    patch_file(path, torn.physical_offset % FILE_SIZE, bytes(4))  # TOTALSIZE only
    store = reopen(tmp_path)
    try:
        assert store.recovery.end_offset == torn.physical_offset
        assert store.recovery.skipped == []
        assert store.recovery.dropped_records == 2
        assert_all_readable(store, results[:7])
        assert queue_offsets(store, 0) == [r.physical_offset for r in results[:7:2]]
    finally:
        store.shutdown()


def test_a_clean_restart_writes_no_report(tmp_path: Path) -> None:
    fill(tmp_path, 10)
    store = reopen(tmp_path)
    try:
        assert store.recovery.report is None
        assert not (tmp_path / "recovery").exists()
    finally:
        store.shutdown()


def test_a_last_file_cut_short_is_grown_back_and_the_next_name_stays_aligned(
    tmp_path: Path,
) -> None:
    results = fill(tmp_path, 20)
    end = results[-1].next_offset
    path = commitlog_file(tmp_path, end)
    os.truncate(path, end % FILE_SIZE)
    store = reopen(tmp_path)
    try:
        assert path.stat().st_size == FILE_SIZE
        assert store.recovery.end_offset == end
        assert the_report(store)["restoredFiles"] == [{"file": path.name, "size": end % FILE_SIZE}]
        more = [
            put_ok(store, message(n, queue_id=n % 2, body=bytes([n % 256]) * 150))
            for n in range(20, 40)
        ]
        assert_all_readable(store, results + more)
        names = sorted(p.name for p in (tmp_path / "commitlog").iterdir())
        assert all(int(name) % FILE_SIZE == 0 for name in names)
        assert len(names) > 2
    finally:
        store.shutdown()


@pytest.mark.parametrize(("older", "end_at"), [(True, 17), (False, 20)])
def test_in_the_last_file_only_records_newer_than_the_damage_are_kept(
    tmp_path: Path, older: bool, end_at: int
) -> None:
    """Past the live end of the last file Apache leaves the records its recovery cut, older
    than the records written over them: they check out but must not come back."""
    results = fill(tmp_path, 20)
    path = commitlog_file(tmp_path, results[17].physical_offset)
    assert path == commitlog_file(tmp_path, results[19].physical_offset)
    patch_file(path, results[17].physical_offset % FILE_SIZE + 4, b"\x01\x02\x03\x04")
    if older:
        for stale in results[18:]:
            store_time_at = stale.physical_offset % FILE_SIZE + STORE_TIMESTAMP_POS
            patch_file(path, store_time_at, struct.pack(">q", BASE_TIME - 60_000))
    store = reopen(tmp_path)
    try:
        end = results[end_at].physical_offset if end_at < 20 else results[-1].next_offset
        assert store.recovery.end_offset == end
        assert len(store.recovery.skipped) == (0 if older else 1)
    finally:
        store.shutdown()
