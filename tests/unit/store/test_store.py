"""The message store facade: puts with dispatch, pulls, lookups, flushing, lock and abort."""

from __future__ import annotations

import errno
import logging
import os
import struct
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rmq.common.config import BrokerRole, FlushDiskType, MessageStoreConfig
from rmq.common.message import decode_record, encode_batch
from rmq.store.errors import StoreLockedError
from rmq.store.putmessage import InnerMessage, PutMessageResult, PutMessageStatus
from rmq.store.store import GetMessageStatus, MessageStore

TAG_A = 2598919  # "TagA".hashCode(), spec §8.1
BASE_TIME = 1_700_000_000_000


def small_config(root: Path, **overrides: Any) -> MessageStoreConfig:
    """A store config with small files: 64 KiB commitlog files, 50-entry consume queue files."""
    settings: dict[str, Any] = {
        "store_path_root_dir": str(root),
        "mapped_file_size_commit_log": 64 * 1024,
        "mapped_file_size_consume_queue": 50 * 20,
        "max_hash_slot_num": 64,
        "max_index_num": 256,
        "flush_interval_commit_log": 20,
        "flush_interval_consume_queue": 20,
    }
    settings.update(overrides)
    return MessageStoreConfig(**settings)


class Clock:
    """A store clock that moves 1 ms per reading unless set."""

    def __init__(self, now: int = BASE_TIME) -> None:
        self.now = now

    def __call__(self) -> int:
        self.now += 1
        return self.now


def message(
    n: int, topic: str = "TopicTest", queue_id: int = 0, *, body: bytes | None = None, **kw: Any
) -> InnerMessage:
    """Message ``n`` with tag TagA, key ``key<n>`` and unique key ``UNIQ<n>``."""
    props = b"TAGS\x01TagA\x02KEYS\x01key%d\x02UNIQ_KEY\x01UNIQ%d" % (n, n)
    fields: dict[str, Any] = {
        "topic": topic,
        "queue_id": queue_id,
        "body": body if body is not None else b"body-%d" % n,
        "properties": props,
        "tags_code": TAG_A,
        "keys": f"key{n}",
        "uniq_key": f"UNIQ{n}",
        "born_timestamp": BASE_TIME,
    }
    fields.update(kw)
    return InnerMessage(**fields)


def put_ok(store: MessageStore, msg: InnerMessage) -> PutMessageResult:
    result = store.put_message(msg)
    assert result.status is PutMessageStatus.PUT_OK, result
    return result


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MessageStore]:
    running = MessageStore(small_config(tmp_path), clock=Clock())
    running.start()
    yield running
    running.shutdown()


def test_pull_returns_zero_copy_records_in_queue_order(store: MessageStore) -> None:
    results = [put_ok(store, message(n)) for n in range(5)]
    put_ok(store, message(99, queue_id=1))
    got = store.get_messages("TopicTest", 0, 1, 3)
    assert got.status is GetMessageStatus.FOUND
    assert (got.next_begin_offset, got.min_offset, got.max_offset) == (4, 0, 5)
    assert got.physical_offsets == [r.physical_offset for r in results[1:4]]
    assert all(isinstance(view, memoryview) for view in got.messages)
    records = [decode_record(view) for view in got.messages]
    assert [(r.queue_offset, r.body) for r in records] == [
        (1, b"body-1"),
        (2, b"body-2"),
        (3, b"body-3"),
    ]
    assert got.buffer_total_size == sum(len(view) for view in got.messages)


@pytest.mark.parametrize(
    ("offset", "status", "next_offset"),
    [
        (3, GetMessageStatus.OFFSET_OVERFLOW_ONE, 3),
        (10, GetMessageStatus.OFFSET_OVERFLOW_BADLY, 3),
    ],
)
def test_pull_past_the_end(
    store: MessageStore, offset: int, status: GetMessageStatus, next_offset: int
) -> None:
    for n in range(3):
        put_ok(store, message(n))
    got = store.get_messages("TopicTest", 0, offset, 32)
    assert (got.status, got.next_begin_offset, got.min_offset, got.max_offset) == (
        status,
        next_offset,
        0,
        3,
    )
    assert got.messages == []


def test_a_slave_store_refuses_puts_and_takes_its_masters_bytes(tmp_path: Path) -> None:
    """Role SLAVE: every put is SERVICE_NOT_AVAILABLE and nothing is written (Apache's
    checkStoreStatus); replicated bytes still append and dispatch."""
    master = MessageStore(small_config(tmp_path / "master"), clock=Clock())
    master.start()
    slave = MessageStore(small_config(tmp_path / "slave", broker_role=BrokerRole.SLAVE))
    slave.start()
    try:
        assert slave.writable is False
        assert slave.put_message(message(0)).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
        batch = message(1, body=encode_batch([(0, b"a", b""), (0, b"b", b"")]))
        assert slave.put_messages(batch).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
        assert slave.commitlog.max_offset() == 0
        put_ok(master, message(7))
        data = master.get_commitlog_data(0)
        assert data is not None
        assert slave.append_to_commitlog(0, bytes(data)) is True
        got = slave.get_messages("TopicTest", 0, 0, 32)
        assert got.status is GetMessageStatus.FOUND
        assert decode_record(got.messages[0]).body == b"body-7"
    finally:
        slave.shutdown()
        master.shutdown()


def test_pull_of_unknown_and_empty_queues(store: MessageStore) -> None:
    """A queue never written is created empty by the pull, as Apache's findConsumeQueue
    does: NO_MESSAGE_IN_QUEUE, not NO_MATCHED_LOGIC_QUEUE."""
    assert store.get_consume_queue("Nope", 0) is None
    unknown = store.get_messages("Nope", 0, 5, 32)
    assert (unknown.status, unknown.next_begin_offset, unknown.max_offset) == (
        GetMessageStatus.NO_MESSAGE_IN_QUEUE,
        0,
        0,
    )
    assert store.get_consume_queue("Nope", 0) is not None
    store.find_consume_queue("Empty", 0)
    empty = store.get_messages("Empty", 0, 5, 32)
    assert (empty.status, empty.next_begin_offset, empty.max_offset) == (
        GetMessageStatus.NO_MESSAGE_IN_QUEUE,
        0,
        0,
    )


def test_pull_of_an_offset_whose_queue_file_is_gone_moves_to_the_next_file(
    store: MessageStore,
) -> None:
    for n in range(60):
        put_ok(store, message(n))
    queue = store.get_consume_queue("TopicTest", 0)
    assert queue is not None
    # The consume queue file holding offset 7 vanished (e.g. expired while this pull ran).
    queue.get_entries = lambda queue_offset, max_entries: None  # type: ignore[method-assign]
    got = store.get_messages("TopicTest", 0, 7, 32)
    assert (got.status, got.next_begin_offset) == (GetMessageStatus.OFFSET_FOUND_NULL, 50)


def test_tags_filter_skips_entries_and_counts_them_as_scanned(store: MessageStore) -> None:
    put_ok(store, message(0, tags_code=1))
    put_ok(store, message(1, tags_code=2))
    put_ok(store, message(2, tags_code=1))
    none = store.get_messages("TopicTest", 0, 0, 32, tags_filter=lambda code: code == 7)
    assert (none.status, none.next_begin_offset) == (GetMessageStatus.NO_MATCHED_MESSAGE, 3)
    some = store.get_messages("TopicTest", 0, 0, 32, tags_filter=lambda code: code == 2)
    assert (some.status, some.next_begin_offset) == (GetMessageStatus.FOUND, 3)
    assert [decode_record(v).body for v in some.messages] == [b"body-1"]


def test_record_filter_sees_the_stored_record(store: MessageStore) -> None:
    for n in range(4):
        put_ok(store, message(n))
    got = store.get_messages(
        "TopicTest", 0, 0, 32, record_filter=lambda view: decode_record(view).body == b"body-2"
    )
    assert [decode_record(v).queue_offset for v in got.messages] == [2]


def test_pull_stops_at_max_msg_nums_and_the_in_memory_count_limit(store: MessageStore) -> None:
    for n in range(45):
        put_ok(store, message(n))
    five = store.get_messages("TopicTest", 0, 0, 5)
    assert (five.message_count, five.next_begin_offset) == (5, 5)
    # A consume queue file here holds 50 entries; the in-memory limit is 32 messages.
    many = store.get_messages("TopicTest", 0, 0, 64)
    assert (many.message_count, many.next_begin_offset) == (32, 32)


def test_pull_stops_at_the_transfer_byte_limit_but_always_takes_one(tmp_path: Path) -> None:
    config = small_config(tmp_path, mapped_file_size_commit_log=1 << 20)
    store = MessageStore(config)
    store.start()
    try:
        put_ok(store, message(0, body=bytes(300 * 1024)))
        for n in range(1, 20):
            put_ok(store, message(n, body=bytes(20 * 1024)))
        first = store.get_messages("TopicTest", 0, 0, 32)
        assert (first.message_count, first.next_begin_offset) == (1, 1)
        rest = store.get_messages("TopicTest", 0, 1, 32)
        # 256 KiB allows twelve 20 KiB records (each a little over 20 KiB).
        assert (rest.message_count, rest.next_begin_offset) == (12, 13)
    finally:
        store.shutdown()


def test_one_pull_never_reads_past_the_consume_queue_file_of_its_offset(
    store: MessageStore,
) -> None:
    for n in range(60):
        put_ok(store, message(n))
    got = store.get_messages("TopicTest", 0, 40, 32)
    assert (got.message_count, got.next_begin_offset) == (10, 50)
    following = store.get_messages("TopicTest", 0, 50, 32)
    assert (following.message_count, following.next_begin_offset) == (10, 60)


def test_pull_of_removed_commitlog_data_says_so(tmp_path: Path) -> None:
    store = MessageStore(small_config(tmp_path, mapped_file_size_commit_log=4096))
    store.start()
    try:
        for n in range(100):
            put_ok(store, message(n, body=bytes(200)))
        # About twelve records per commitlog file: five files hold the first 50+ messages,
        # i.e. every entry of the first consume queue file.
        deleted = store.commitlog.delete_expired_files(0, clean_immediately=True, max_files=5)
        assert len(deleted) == 5
        gone = store.get_messages("TopicTest", 0, 0, 32)
        assert (gone.status, gone.next_begin_offset, gone.messages) == (
            GetMessageStatus.MESSAGE_WAS_REMOVING,
            50,
            [],
        )
        partly = store.get_messages("TopicTest", 0, 50, 32)
        assert partly.status is GetMessageStatus.FOUND
        assert decode_record(partly.messages[0]).physical_offset >= 5 * 4096
    finally:
        store.shutdown()


def test_offset_by_timestamp_is_a_binary_search_on_store_times(tmp_path: Path) -> None:
    clock = Clock()
    store = MessageStore(small_config(tmp_path), clock=clock)
    store.start()
    try:
        times = []
        for n in range(20):
            clock.now = BASE_TIME + n * 1000 - 1
            times.append(put_ok(store, message(n)).store_timestamp)
        assert times[5] == BASE_TIME + 5000
        assert store.get_offset_in_queue_by_time("TopicTest", 0, BASE_TIME + 5000) == 5
        assert store.get_offset_in_queue_by_time("TopicTest", 0, BASE_TIME + 5300) == 5
        assert store.get_offset_in_queue_by_time("TopicTest", 0, BASE_TIME + 5700) == 6
        assert store.get_message_store_timestamp("TopicTest", 0, 7) == BASE_TIME + 7000
        assert store.get_earliest_message_time("TopicTest", 0) == BASE_TIME
        assert store.get_offset_in_queue_by_time("Nope", 0, BASE_TIME) == 0
    finally:
        store.shutdown()


def test_query_by_key_and_unique_key_within_a_time_range(store: MessageStore) -> None:
    results = [put_ok(store, message(n)) for n in range(10)]
    by_key = store.query_message("TopicTest", "key4", 32, 0, 2**62)
    assert by_key.physical_offsets == [results[4].physical_offset]
    assert decode_record(by_key.messages[0]).keys == ["key4"]
    by_uniq = store.query_message("TopicTest", "UNIQ7", 32, 0, 2**62)
    assert by_uniq.physical_offsets == [results[7].physical_offset]
    assert store.query_message("OtherTopic", "key4", 32, 0, 2**62).messages == []
    too_early = store.query_message("TopicTest", "key4", 32, 0, BASE_TIME - 10_000)
    assert too_early.messages == []
    assert by_key.index_last_update_phy_offset == results[-1].physical_offset


def test_lookups_by_physical_offset_and_offset_message_id(store: MessageStore) -> None:
    put_ok(store, message(0))
    result = put_ok(store, message(1))
    view = store.select_one_message_by_offset(result.physical_offset)
    assert view is not None and len(view) == result.wrote_bytes
    record = store.look_message_by_msg_id(result.msg_id)
    assert record is not None
    assert (record.body, record.offset_msg_id, record.uniq_key) == (
        b"body-1",
        result.msg_id,
        "UNIQ1",
    )
    assert store.look_message_by_offset(result.physical_offset + 1) is None
    assert store.get_commitlog_offset_in_queue("TopicTest", 0, 1) == result.physical_offset


def test_dispatch_writes_spec_consume_queue_entries(store: MessageStore, tmp_path: Path) -> None:
    first = put_ok(store, message(0))
    delayed = put_ok(store, message(1, delay_level=2))
    cq_file = tmp_path / "consumequeue" / "TopicTest" / "0" / "00000000000000000000"
    assert cq_file.read_bytes()[:20] == struct.pack(
        ">qiq", first.physical_offset, first.wrote_bytes, TAG_A
    )
    # Level 2 = 5 s: the tags slot of a parked message holds its delivery time.
    schedule = tmp_path / "consumequeue" / "SCHEDULE_TOPIC_XXXX" / "1" / "00000000000000000000"
    assert schedule.read_bytes()[:20] == struct.pack(
        ">qiq", delayed.physical_offset, delayed.wrote_bytes, delayed.store_timestamp + 5000
    )


def test_transactional_half_and_rollback_records_are_not_consumable(store: MessageStore) -> None:
    half = put_ok(store, message(0, sys_flag=0x4))
    rollback = put_ok(store, message(1, sys_flag=0xC))
    assert store.get_max_offset_in_queue("TopicTest", 0) == 0
    assert store.query_message("TopicTest", "key0", 32, 0, 2**62).physical_offsets == [
        half.physical_offset
    ]
    assert store.query_message("TopicTest", "key1", 32, 0, 2**62).messages == []
    assert store.look_message_by_offset(rollback.physical_offset) is not None


def test_batch_is_dispatched_message_by_message(store: MessageStore) -> None:
    body = encode_batch((0, b"batch-%d" % i, b"TAGS\x01TagA\x02KEYS\x01bk%d" % i) for i in range(4))
    result = store.put_messages(InnerMessage("TopicTest", 2, body, b"WAIT\x01true"))
    assert (result.status, result.msg_num, result.queue_offset) == (PutMessageStatus.PUT_OK, 4, 0)
    got = store.get_messages("TopicTest", 2, 0, 32, tags_filter=lambda code: code == TAG_A)
    assert [decode_record(v).body for v in got.messages] == [b"batch-%d" % i for i in range(4)]
    assert store.query_message("TopicTest", "bk2", 32, 0, 2**62).physical_offsets == [
        got.physical_offsets[2]
    ]


def test_batch_consume_queue_entries_follow_the_spec(store: MessageStore, tmp_path: Path) -> None:
    put_ok(store, message(0, queue_id=2))
    body = encode_batch((0, b"batch-%d" % i, b"TAGS\x01TagB") for i in range(3))
    result = store.put_messages(InnerMessage("TopicTest", 2, body, b""))
    offsets = list(result.physical_offsets)
    sizes = [b - a for a, b in zip(offsets, [*offsets[1:], result.next_offset], strict=True)]
    entries = (tmp_path / "consumequeue" / "TopicTest" / "2" / "00000000000000000000").read_bytes()
    tag_b = 2598920  # "TagB".hashCode()
    assert entries[20:80] == b"".join(
        struct.pack(">qiq", offset, size, tag_b)
        for offset, size in zip(offsets, sizes, strict=True)
    )
    assert entries[80:100] == bytes(20)


def test_arrival_listener_hears_of_every_message_that_reaches_a_consume_queue(
    store: MessageStore,
) -> None:
    heard: list[tuple[str, int, int, int]] = []
    store.arrival_listener = lambda *arrival: heard.append(arrival)
    put_ok(store, message(0, queue_id=1))
    put_ok(store, message(1, queue_id=1, sys_flag=0x4))  # PREPARED: no consume queue entry
    put_ok(store, message(2, queue_id=1, sys_flag=0xC))  # ROLLBACK: none either
    put_ok(store, message(3, queue_id=1, sys_flag=0x8))  # COMMIT
    assert heard == [("TopicTest", 1, 1, TAG_A), ("TopicTest", 1, 2, TAG_A)]
    heard.clear()
    tags = [b"TagA", b"TagB", b"TagA"]
    body = encode_batch((0, b"b", b"TAGS\x01" + tag) for tag in tags)
    result = store.put_messages(InnerMessage("TopicTest", 1, body, b""))
    assert result.queue_offset == 2
    # Once per batch and tags code, with the queue offset after the batch.
    assert heard == [("TopicTest", 1, 5, TAG_A), ("TopicTest", 1, 5, 2598920)]


def test_sync_flush_waiters_complete_from_the_flush_thread(tmp_path: Path) -> None:
    store = MessageStore(small_config(tmp_path, flush_disk_type=FlushDiskType.SYNC_FLUSH))
    store.start()
    try:
        result = put_ok(store, message(0))
        done = threading.Event()
        seen: list[tuple[PutMessageStatus, str]] = []

        def on_flushed(status: PutMessageStatus) -> None:
            seen.append((status, threading.current_thread().name))
            done.set()

        store.request_flush(result, on_flushed)
        assert done.wait(10)
        assert seen == [(PutMessageStatus.PUT_OK, "commitlog-flush")]
        assert store.get_flushed_where() >= result.next_offset
    finally:
        store.shutdown()


def test_sync_flush_that_takes_too_long_answers_flush_disk_timeout(tmp_path: Path) -> None:
    config = small_config(tmp_path, flush_disk_type=FlushDiskType.SYNC_FLUSH, sync_flush_timeout=50)
    store = MessageStore(config)
    store.start()
    queue = store.commitlog.queue
    disk_stuck = threading.Event()
    real_flush = queue.flush

    def slow_flush(least_pages: int = 0) -> int:
        if disk_stuck.is_set():
            disk_stuck.wait(0.3)
            return queue.flushed_where
        return real_flush(least_pages)

    try:
        disk_stuck.set()
        queue.flush = slow_flush  # type: ignore[method-assign]
        result = put_ok(store, message(0))
        done = threading.Event()
        seen: list[PutMessageStatus] = []

        def heard(status: PutMessageStatus) -> None:
            seen.append(status)
            done.set()

        store.request_flush(result, heard)
        assert done.wait(10)
        assert seen == [PutMessageStatus.FLUSH_DISK_TIMEOUT]
    finally:
        disk_stuck.clear()
        queue.flush = real_flush  # type: ignore[method-assign]
        store.shutdown()


def test_async_flush_answers_at_once(store: MessageStore) -> None:
    result = put_ok(store, message(0))
    seen: list[PutMessageStatus] = []
    store.request_flush(result, seen.append)
    assert seen == [PutMessageStatus.PUT_OK]


def test_async_flush_thread_flushes_and_updates_the_checkpoint(tmp_path: Path) -> None:
    config = small_config(tmp_path, flush_commit_log_thorough_interval=50)
    store = MessageStore(config, clock=Clock())
    store.start()
    try:
        result = put_ok(store, message(0))
        checkpoint = tmp_path / "checkpoint"
        for _ in range(500):
            flushed = store.get_flushed_where() >= result.next_offset
            if flushed and checkpoint.read_bytes()[:8] == struct.pack(">q", result.store_timestamp):
                break
            threading.Event().wait(0.01)
        assert store.get_flushed_where() >= result.next_offset
        assert checkpoint.read_bytes()[:8] == struct.pack(">q", result.store_timestamp)
    finally:
        store.shutdown()


def test_a_second_process_cannot_open_a_running_store(tmp_path: Path) -> None:
    store = MessageStore(small_config(tmp_path))
    store.start()
    try:
        script = (
            "import sys\n"
            "from rmq.common.config import MessageStoreConfig\n"
            "from rmq.store.errors import StoreLockedError\n"
            "from rmq.store.store import MessageStore\n"
            "try:\n"
            "    MessageStore(MessageStoreConfig(store_path_root_dir=sys.argv[1])).start()\n"
            "except StoreLockedError as exc:\n"
            "    print(exc)\n"
            "    sys.exit(3)\n"
        )
        child = subprocess.run(
            [sys.executable, "-c", script, str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert child.returncode == 3, child.stderr
        real = os.path.realpath(tmp_path)
        assert child.stdout.strip() == (
            f"store {real} is locked by another process (pid {os.getpid()})"
        )
        with pytest.raises(StoreLockedError, match="already open in this process"):
            MessageStore(small_config(tmp_path)).start()
    finally:
        store.shutdown()
    # Reading the file would drop this process's POSIX lock, so only look once it is released.
    assert (tmp_path / "lock").read_bytes() == b"lock"
    reopened = MessageStore(small_config(tmp_path))
    reopened.start()
    reopened.shutdown()


def test_abort_file_exists_exactly_while_the_store_runs(tmp_path: Path) -> None:
    store = MessageStore(small_config(tmp_path))
    store.start()
    assert (tmp_path / "abort").read_bytes() == b""
    store.shutdown()
    assert not (tmp_path / "abort").exists()


def test_full_disk_refuses_the_message_clearly_and_keeps_the_others(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    disk_full = threading.Event()

    def allocate(fd: int, offset: int, length: int) -> None:
        if disk_full.is_set():
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        os.posix_fallocate(fd, offset, length)

    store = MessageStore(
        small_config(tmp_path, mapped_file_size_commit_log=4096), allocate=allocate
    )
    store.start()
    store.put_gate.interval_ms = 0  # every refused put may try again
    try:
        results = [put_ok(store, message(0, body=bytes(300)))]
        while results[-1].next_offset + results[-1].wrote_bytes + 8 <= 4096:
            results.append(put_ok(store, message(len(results), body=bytes(300))))
        disk_full.set()
        with caplog.at_level(logging.ERROR, logger="rmq.store"):
            failed = store.put_message(message(99, body=bytes(300)))
        assert failed.status is PutMessageStatus.SERVICE_NOT_AVAILABLE
        assert "disk full: cannot create" in caplog.text
        assert "00000000000000004096 (4096 bytes)" in caplog.text
        got = store.get_messages("TopicTest", 0, 0, 32)
        assert got.physical_offsets == [r.physical_offset for r in results]
        disk_full.clear()
        assert put_ok(store, message(99, body=bytes(300))).physical_offset == 4096
        assert store.get_max_offset_in_queue("TopicTest", 0) == len(results) + 1
    finally:
        store.shutdown()


def test_a_stopped_store_refuses_puts(tmp_path: Path) -> None:
    store = MessageStore(small_config(tmp_path))
    assert store.put_message(message(0)).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    store.start()
    store.shutdown()
    assert store.put_message(message(0)).status is PutMessageStatus.SERVICE_NOT_AVAILABLE


def test_a_slave_dispatches_replicated_bytes_even_when_records_straddle_transfers(
    tmp_path: Path,
) -> None:
    master = MessageStore(small_config(tmp_path / "master", mapped_file_size_commit_log=4096))
    slave = MessageStore(small_config(tmp_path / "slave", mapped_file_size_commit_log=4096))
    master.start()
    slave.start()
    try:
        results = [put_ok(master, message(n, body=bytes(100 + n))) for n in range(40)]
        offset = 0
        while offset < master.max_physical_offset():
            data = master.get_commitlog_data(offset)
            assert data is not None
            chunk = data[:700]  # transfers cut records in two
            assert slave.append_to_commitlog(offset, chunk)
            offset += len(chunk)
        assert not slave.append_to_commitlog(offset + 1, b"gap")
        got = slave.get_messages("TopicTest", 0, 0, 64)
        assert got.physical_offsets == [r.physical_offset for r in results[:32]]
        assert slave.get_max_offset_in_queue("TopicTest", 0) == 40
        assert slave.query_message("TopicTest", "key39", 32, 0, 2**62).physical_offsets == [
            results[39].physical_offset
        ]
    finally:
        master.shutdown()
        slave.shutdown()
