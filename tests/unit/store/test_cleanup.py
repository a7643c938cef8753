"""Expiry: commitlog files by age at deleteWhen or under disk pressure, then queues and index."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rmq.store.cleanup import NO_GROUP, disk_used_ratio, used_percent
from rmq.store.putmessage import PutMessageResult, PutMessageStatus
from rmq.store.store import GetMessageStatus, MessageStore
from tests.unit.store.test_store import message, put_ok, small_config

NOW = time.time()
HOUR = time.localtime(NOW).tm_hour
FILE_SIZE = 4096


class Disk:
    """A settable used-space ratio for the store's file systems."""

    def __init__(self) -> None:
        self.used = 0.5

    def __call__(self, path: str) -> float:
        return self.used


@pytest.fixture
def disk() -> Disk:
    return Disk()


def make_store(root: Path, disk: Disk, delete_hour: int = HOUR) -> MessageStore:
    config = small_config(
        root,
        mapped_file_size_commit_log=FILE_SIZE,
        max_index_num=64,
        delete_when=f"{(delete_hour + 23) % 24:02d};{delete_hour:02d}",
        file_reserved_time=72,
    )
    store = MessageStore(config, disk_usage=disk)
    store.start()
    return store


def fill(store: MessageStore, count: int = 100) -> list[PutMessageResult]:
    return [put_ok(store, message(n, body=bytes(200))) for n in range(count)]


def commitlog_names(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "commitlog").iterdir())


def age_files(root: Path, names: list[str], hours: float) -> None:
    for name in names:
        when = NOW - hours * 3600
        os.utime(root / "commitlog" / name, (when, when))


@pytest.fixture
def store(tmp_path: Path, disk: Disk) -> Iterator[MessageStore]:
    running = make_store(tmp_path, disk)
    yield running
    running.shutdown()


def test_expired_files_go_at_delete_time_and_take_queues_and_index_along(
    store: MessageStore, tmp_path: Path
) -> None:
    results = fill(store)
    names = commitlog_names(tmp_path)
    assert len(names) >= 8
    age_files(tmp_path, names[:5], hours=73)
    index_before = len(list((tmp_path / "index").iterdir()))
    cq_dir = tmp_path / "consumequeue" / "TopicTest" / "0"
    assert len(list(cq_dir.iterdir())) >= 2

    result = store.run_cleanup(NOW)

    assert result.time_up and not result.space_full and not result.forced
    assert [Path(p).name for p in result.commitlog_files] == names[:5]
    assert commitlog_names(tmp_path) == names[5:]
    new_min = int(names[5])
    assert store.min_physical_offset() == new_min
    first_kept = next(n for n, r in enumerate(results) if r.physical_offset >= new_min)
    assert result.consume_queue_files == 1  # entries 0..49 all point below the new minimum
    assert result.index_files >= 1
    assert len(list((tmp_path / "index").iterdir())) == index_before - result.index_files
    assert store.get_min_offset_in_queue("TopicTest", 0) == first_kept
    got = store.get_messages("TopicTest", 0, 0, 32)
    assert (got.status, got.next_begin_offset) == (GetMessageStatus.OFFSET_TOO_SMALL, first_kept)
    assert store.query_message("TopicTest", "key0", 32, 0, 2**62).messages == []
    later = store.query_message("TopicTest", "key99", 32, 0, 2**62)
    assert later.physical_offsets == [results[99].physical_offset]


def test_nothing_goes_outside_delete_time_while_the_disk_has_room(
    tmp_path: Path, disk: Disk
) -> None:
    store = make_store(tmp_path, disk, delete_hour=(HOUR + 12) % 24)
    try:
        fill(store)
        names = commitlog_names(tmp_path)
        age_files(tmp_path, names, hours=100)
        result = store.run_cleanup(NOW)
        assert not (result.time_up or result.space_full or result.manual)
        assert result.commitlog_files == []
        assert commitlog_names(tmp_path) == names
    finally:
        store.shutdown()


def test_a_filling_disk_deletes_expired_files_at_any_hour(tmp_path: Path, disk: Disk) -> None:
    store = make_store(tmp_path, disk, delete_hour=(HOUR + 12) % 24)
    try:
        fill(store)
        names = commitlog_names(tmp_path)
        age_files(tmp_path, names[:3], hours=100)
        disk.used = 0.80
        result = store.run_cleanup(NOW)
        assert result.space_full and not result.forced
        assert [Path(p).name for p in result.commitlog_files] == names[:3]
    finally:
        store.shutdown()


def test_a_nearly_full_disk_deletes_files_whatever_their_age_but_never_the_current_one(
    tmp_path: Path, disk: Disk
) -> None:
    store = make_store(tmp_path, disk, delete_hour=(HOUR + 12) % 24)
    try:
        fill(store, 40)
        names = commitlog_names(tmp_path)
        assert 2 <= len(names) <= 10
        disk.used = 0.87
        result = store.run_cleanup(NOW)
        assert result.forced
        assert commitlog_names(tmp_path) == names[-1:]
        assert put_ok(store, message(1000)).queue_offset == 40
    finally:
        store.shutdown()


def test_at_most_ten_files_go_per_run(tmp_path: Path, disk: Disk) -> None:
    store = make_store(tmp_path, disk)
    try:
        fill(store, 200)
        names = commitlog_names(tmp_path)
        assert len(names) > 12
        age_files(tmp_path, names, hours=100)
        assert len(store.run_cleanup(NOW).commitlog_files) == 10
        assert len(store.run_cleanup(NOW).commitlog_files) == len(names) - 11
        assert commitlog_names(tmp_path) == names[-1:]
    finally:
        store.shutdown()


def test_above_ninety_percent_new_messages_are_refused_until_space_is_back(
    store: MessageStore, disk: Disk
) -> None:
    disk.used = 0.95
    store.run_cleanup(NOW)
    assert store.put_message(message(0)).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    disk.used = 0.5
    store.run_cleanup(NOW)
    assert store.put_message(message(0)).status is PutMessageStatus.PUT_OK


def test_manual_deletion_ignores_the_hour(tmp_path: Path, disk: Disk) -> None:
    store = make_store(tmp_path, disk, delete_hour=(HOUR + 12) % 24)
    try:
        fill(store)
        names = commitlog_names(tmp_path)
        age_files(tmp_path, names[:2], hours=100)
        store.execute_delete_files_manually()
        result = store.run_cleanup(NOW)
        assert result.manual
        assert [Path(p).name for p in result.commitlog_files] == names[:2]
    finally:
        store.shutdown()


def test_disk_used_ratio_is_apaches_rounded_percent_of_the_usable_space(tmp_path: Path) -> None:
    # Apache's UtilAll.getDiskPartitionSpaceUsedPercent: used / (used + usable), rounded up to
    # a whole percent; blocks reserved for root are neither (13 GB used, 78 usable -> 0.15).
    assert used_percent(13, 78) == 15
    assert used_percent(50, 50) == 50
    assert used_percent(1, 199) == 1
    assert used_percent(0, 10) == 0
    ratio = disk_used_ratio(str(tmp_path))
    assert 0.0 <= ratio <= 1.0
    assert ratio == round(ratio * 100) / 100
    assert disk_used_ratio(str(tmp_path / "missing")) == -1.0


def test_a_cleanup_for_space_reports_the_unconsumed_messages_it_deleted(
    tmp_path: Path, disk: Disk, caplog: pytest.LogCaptureFixture
) -> None:
    store = make_store(tmp_path, disk, delete_hour=(HOUR + 12) % 24)
    try:
        for n in range(40):
            put_ok(store, message(n, body=bytes(200)))
            put_ok(store, message(n, topic="TopicNobody", queue_id=1, body=bytes(200)))
        store.group_offsets = lambda: {
            "TopicTest": {"GroupAhead": {0: 38}, "GroupBehind": {0: 10}, "GroupElsewhere": {}},
        }
        disk.used = 0.87
        with caplog.at_level(logging.WARNING, logger="rmq.store"):
            result = store.run_cleanup(NOW)
        assert result.forced and len(result.commitlog_files) >= 2
        kept = store.get_min_offset_in_queue("TopicTest", 0)
        kept_nobody = store.get_min_offset_in_queue("TopicNobody", 1)
        assert 10 < kept < 38 and kept_nobody > 0
        assert result.unconsumed == {
            "TopicTest": {"GroupBehind": kept - 10, "GroupElsewhere": kept},
            "TopicNobody": {NO_GROUP: kept_nobody},
        }
        warnings = [r.getMessage() for r in caplog.records if "not consumed yet" in r.getMessage()]
        assert warnings == [
            f"cleanup for disk space deleted messages of topic TopicNobody not consumed yet: "
            f"{kept_nobody} by no group",
            f"cleanup for disk space deleted messages of topic TopicTest not consumed yet: "
            f"0 by no group; not consumed by group: GroupBehind {kept - 10}, "
            f"GroupElsewhere {kept}",
        ]
    finally:
        store.shutdown()


def test_a_cleanup_by_age_reports_nothing(store: MessageStore, tmp_path: Path) -> None:
    fill(store)
    age_files(tmp_path, commitlog_names(tmp_path)[:3], hours=73)
    result = store.run_cleanup(NOW)
    assert len(result.commitlog_files) == 3 and result.unconsumed == {}
