"""Recovery at start: clean restarts, abnormal restarts (abort file), torn and corrupt tails."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path
from typing import Any

import pytest

from rmq.common.message import decode_record
from rmq.store.putmessage import PutMessageResult
from rmq.store.store import MessageStore
from tests.unit.store.test_store import (
    BASE_TIME,
    TAG_A,
    Clock,
    message,
    put_ok,
    small_config,
)

FILE_SIZE = 4096


def config(root: Path, **overrides: Any) -> Any:
    return small_config(root, mapped_file_size_commit_log=FILE_SIZE, **overrides)


def fill(
    root: Path, count: int, *, clock: Clock | None = None, **overrides: Any
) -> list[PutMessageResult]:
    """Put ``count`` messages over two queues into a fresh store and shut it down cleanly."""
    store = MessageStore(config(root, **overrides), clock=clock or Clock())
    store.start()
    results = [
        put_ok(store, message(n, queue_id=n % 2, body=bytes([n % 256]) * 150)) for n in range(count)
    ]
    store.shutdown()
    return results


def reopen(root: Path, **overrides: Any) -> MessageStore:
    store = MessageStore(config(root, **overrides))
    store.start()
    return store


def commitlog_file(root: Path, offset: int) -> Path:
    start = offset - offset % FILE_SIZE
    return root / "commitlog" / f"{start:020d}"


def patch_file(path: Path, position: int, data: bytes) -> None:
    with open(path, "r+b") as file:
        file.seek(position)
        file.write(data)


def assert_all_readable(store: MessageStore, results: list[PutMessageResult]) -> None:
    for n, result in enumerate(results):
        record = store.look_message_by_offset(result.physical_offset)
        assert record is not None, n
        assert (record.queue_id, record.queue_offset, record.body) == (
            n % 2,
            result.queue_offset,
            bytes([n % 256]) * 150,
        )
    for queue_id in (0, 1):
        expected = [r.physical_offset for n, r in enumerate(results) if n % 2 == queue_id]
        offsets = []
        offset = 0
        while True:
            got = store.get_messages("TopicTest", queue_id, offset, 32)
            if not got.messages:
                break
            offsets += got.physical_offsets
            offset = got.next_begin_offset
        assert offsets == expected


def test_clean_restart_keeps_everything_and_continues_the_offsets(tmp_path: Path) -> None:
    results = fill(tmp_path, 60)
    assert len(list((tmp_path / "commitlog").iterdir())) > 3
    store = reopen(tmp_path)
    try:
        assert not store.recovery.abnormal
        assert store.recovery.truncated == []
        assert store.recovery.end_offset == results[-1].next_offset
        assert_all_readable(store, results)
        following = put_ok(store, message(60, queue_id=0))
        assert following.queue_offset == 30
        assert following.physical_offset >= results[-1].next_offset
    finally:
        store.shutdown()


def test_abort_file_means_abnormal_recovery_that_rebuilds_the_logics(tmp_path: Path) -> None:
    results = fill(tmp_path, 40)
    (tmp_path / "abort").touch()
    shutil.rmtree(tmp_path / "consumequeue")
    shutil.rmtree(tmp_path / "index")
    store = reopen(tmp_path)
    try:
        assert store.recovery.abnormal
        # All records were stored within 3 s of the checkpoint: recovery starts at file 0.
        assert store.recovery.start_offset == 0
        assert store.recovery.dispatched == 40
        assert_all_readable(store, results)
        assert store.query_message("TopicTest", "key17", 32, 0, 2**62).physical_offsets == [
            results[17].physical_offset
        ]
        assert put_ok(store, message(40, queue_id=0)).queue_offset == 20
    finally:
        store.shutdown()
    assert not (tmp_path / "abort").exists()


def test_abnormal_recovery_starts_at_the_file_the_checkpoint_vouches_for(tmp_path: Path) -> None:
    clock = Clock()
    store = MessageStore(config(tmp_path), clock=clock)
    store.start()
    results = []
    for n in range(60):
        clock.now = BASE_TIME + n * 1000 - 1
        results.append(put_ok(store, message(n, queue_id=n % 2, body=bytes([n]) * 150)))
    store.shutdown()
    (tmp_path / "abort").touch()
    # The checkpoint holds the last store time; recovery starts at the newest file whose
    # first record is at least 3 s older than that.
    safe = results[-1].store_timestamp - 3000
    firsts = {r.physical_offset - r.physical_offset % FILE_SIZE: r for r in reversed(results)}
    expected_start = max(start for start, r in firsts.items() if r.store_timestamp <= safe)
    assert expected_start > 0
    reopened = reopen(tmp_path)
    try:
        assert reopened.recovery.abnormal
        assert reopened.recovery.start_offset == expected_start
        assert_all_readable(reopened, results)
    finally:
        reopened.shutdown()


def test_abnormal_recovery_rewrites_a_torn_last_consume_queue_entry(tmp_path: Path) -> None:
    results = fill(tmp_path, 10)
    last = results[-1]  # queue 1, queue offset 4
    queue_file = tmp_path / "consumequeue" / "TopicTest" / "1" / f"{0:020d}"
    # Killed while writing the entry: offset and size written, tags code not.
    patch_file(queue_file, 4 * 20 + 12, bytes(8))
    (tmp_path / "abort").touch()
    store = reopen(tmp_path)
    try:
        queue = store.get_consume_queue("TopicTest", 1)
        assert queue is not None
        assert queue.entry_at(4) == (last.physical_offset, last.wrote_bytes, TAG_A)
        got = store.get_messages("TopicTest", 1, 4, 1, tags_filter=lambda code: code == TAG_A)
        assert got.physical_offsets == [last.physical_offset]
    finally:
        store.shutdown()


def test_abnormal_recovery_indexes_the_keys_a_kill_left_out(tmp_path: Path) -> None:
    results = fill(tmp_path, 10)
    # The index holds the unique key of the last message but not its KEYS token, as a kill
    # between them leaves a file written key by key (or a message whose keys straddle two
    # index files): uncount the newest entry, point its slot back, zero it.
    (index_file,) = (tmp_path / "index").iterdir()
    data = bytearray(index_file.read_bytes())
    slots = 64
    count = struct.unpack_from(">i", data, 36)[0]
    newest = 40 + slots * 4 + (count - 1) * 20
    key_hash, physical_offset, _, prev = struct.unpack_from(">iqii", data, newest)
    assert physical_offset == results[-1].physical_offset
    struct.pack_into(">i", data, 36, count - 1)
    struct.pack_into(">i", data, 40 + key_hash % slots * 4, prev)
    data[newest : newest + 20] = bytes(20)
    index_file.write_bytes(bytes(data))
    (tmp_path / "abort").touch()
    store = reopen(tmp_path)
    try:
        for key in ("key9", "UNIQ9"):
            found = store.query_message("TopicTest", key, 32, 0, 2**62).physical_offsets
            assert found == [results[-1].physical_offset], key
        index = store.index
        assert index is not None
        assert index.files[0].index_count == count
    finally:
        store.shutdown()


@pytest.mark.parametrize("abnormal", [False, True])
def test_torn_last_record_is_cut_and_reported(tmp_path: Path, abnormal: bool) -> None:
    results = fill(tmp_path, 30)
    last = results[-1]
    path = commitlog_file(tmp_path, last.physical_offset)
    position = last.physical_offset % FILE_SIZE
    patch_file(path, position + 60, bytes(last.wrote_bytes - 60))  # second part never written
    if abnormal:
        (tmp_path / "abort").touch()
    store = reopen(tmp_path)
    try:
        assert store.recovery.abnormal is abnormal
        assert store.recovery.end_offset == last.physical_offset
        assert [(Path(c.path), c.position, c.length) for c in store.recovery.truncated] == [
            (path, position, 60)
        ]
        assert_all_readable(store, results[:-1])
        assert store.look_message_by_offset(last.physical_offset) is None
        assert store.get_max_offset_in_queue("TopicTest", 1) == 14
        assert store.query_message("TopicTest", "key29", 32, 0, 2**62).messages == []
        retry = put_ok(store, message(29, queue_id=1, body=bytes([29]) * 150))
        assert (retry.physical_offset, retry.queue_offset) == (last.physical_offset, 14)
    finally:
        store.shutdown()


def test_garbage_after_the_last_record_is_cut_and_reported(tmp_path: Path) -> None:
    results = fill(tmp_path, 10)
    end = results[-1].next_offset
    path = commitlog_file(tmp_path, end)
    patch_file(path, end % FILE_SIZE, b"\xde\xad\xbe\xef" * 25)
    store = reopen(tmp_path)
    try:
        assert store.recovery.end_offset == end
        assert [(Path(c.path), c.position, c.length) for c in store.recovery.truncated] == [
            (path, end % FILE_SIZE, 100)
        ]
        assert path.read_bytes()[end % FILE_SIZE :] == bytes(FILE_SIZE - end % FILE_SIZE)
        assert_all_readable(store, results)
    finally:
        store.shutdown()


@pytest.mark.parametrize(("check_crc", "kept"), [(True, 9), (False, 10)])
def test_body_crc_is_checked_on_recovery_when_configured(
    tmp_path: Path, check_crc: bool, kept: int
) -> None:
    results = fill(tmp_path, 10)
    last = results[-1]
    body_position = last.physical_offset % FILE_SIZE + 84 + 4
    patch_file(commitlog_file(tmp_path, last.physical_offset), body_position, b"\x77")
    store = reopen(tmp_path, check_crc_on_recover=check_crc)
    try:
        assert (
            store.get_max_offset_in_queue("TopicTest", 0)
            + store.get_max_offset_in_queue("TopicTest", 1)
            == kept
        )
        record = store.look_message_by_offset(last.physical_offset)
        assert (record is not None) is (not check_crc)
    finally:
        store.shutdown()


def test_a_store_without_commitlog_files_has_empty_queues(tmp_path: Path) -> None:
    fill(tmp_path, 10)
    for path in (tmp_path / "commitlog").iterdir():
        path.unlink()
    store = reopen(tmp_path)
    try:
        assert store.get_max_offset_in_queue("TopicTest", 0) == 0
        assert store.query_message("TopicTest", "key3", 32, 0, 2**62).messages == []
        first = put_ok(store, message(0))
        assert (first.physical_offset, first.queue_offset) == (0, 0)
        got = store.get_messages("TopicTest", 0, 0, 32)
        assert [decode_record(v).body for v in got.messages] == [b"body-0"]
    finally:
        store.shutdown()
