"""The commitlog: record bytes, end-of-file blanks, queue offsets, batches, limits, delays."""

from __future__ import annotations

import errno
import os
import socket
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest

from rmq.common.message import PreparedBatch, encode_batch
from rmq.store.commitlog import CommitLog
from rmq.store.putmessage import DispatchRequest, InnerMessage, PutMessageStatus

STORE_TIME = 1_700_000_000_123
BORN_TIME = 1_700_000_000_000
STORE_HOST = socket.inet_aton("192.168.1.10") + struct.pack(">i", 10911)
BORN_HOST = socket.inet_aton("10.0.0.5") + struct.pack(">i", 51234)
BLANK_MAGIC = 0xCBD43194
MESSAGE_MAGIC = 0xDAA320A7


class Recorder:
    """Collects what the commitlog dispatches, a batch as one row per record."""

    def __init__(self) -> None:
        self.calls: list[DispatchRequest] = []
        self.batch_calls = 0

    def __call__(self, request: DispatchRequest) -> None:
        self.calls.append(request)

    def batch(
        self,
        topic: str,
        queue_id: int,
        queue_offset: int,
        physical_offset: int,
        batch: PreparedBatch,
        store_timestamp: int,
    ) -> None:
        self.batch_calls += 1
        for size, tags_code, keys, uniq_key in zip(
            batch.sizes, batch.tags_codes, batch.keys, batch.uniq_keys, strict=True
        ):
            self.calls.append(
                DispatchRequest(
                    topic,
                    queue_id,
                    queue_offset,
                    physical_offset,
                    size,
                    tags_code,
                    store_timestamp,
                    0,
                    keys,
                    uniq_key,
                )
            )
            queue_offset += 1
            physical_offset += size

    @property
    def queue_offsets(self) -> list[tuple[str, int, int]]:
        return [(c.topic, c.queue_id, c.queue_offset) for c in self.calls]


def make_commitlog(
    tmp_path: Path, file_size: int = 1 << 20, max_message_size: int = 4 << 20, **kwargs: Any
) -> tuple[CommitLog, Recorder]:
    recorder = Recorder()
    commitlog = CommitLog(
        tmp_path / "commitlog",
        file_size,
        store_host=STORE_HOST,
        max_message_size=max_message_size,
        dispatch=recorder,
        dispatch_batch=recorder.batch,
        clock=lambda: STORE_TIME,
        **kwargs,
    )
    commitlog.queue.load()
    return commitlog, recorder


def spec_record(
    *,
    queue_id: int,
    flag: int,
    queue_offset: int,
    physical_offset: int,
    sys_flag: int,
    born_host: bytes,
    reconsume_times: int,
    prepared_offset: int,
    body: bytes,
    topic: bytes,
    properties: bytes,
) -> bytes:
    """A record built field by field from the spec table (§3.1)."""
    fields = [
        struct.pack(">I", MESSAGE_MAGIC),
        struct.pack(">i", zlib.crc32(body) & 0x7FFFFFFF),
        struct.pack(">i", queue_id),
        struct.pack(">i", flag),
        struct.pack(">q", queue_offset),
        struct.pack(">q", physical_offset),
        struct.pack(">i", sys_flag),
        struct.pack(">q", BORN_TIME),
        born_host,
        struct.pack(">q", STORE_TIME),
        STORE_HOST,
        struct.pack(">i", reconsume_times),
        struct.pack(">q", prepared_offset),
        struct.pack(">i", len(body)) + body,
        struct.pack(">b", len(topic)) + topic,
        struct.pack(">h", len(properties)) + properties,
    ]
    rest = b"".join(fields)
    return struct.pack(">i", 4 + len(rest)) + rest


def message(**overrides: Any) -> InnerMessage:
    fields: dict[str, Any] = {
        "topic": "TopicTest",
        "queue_id": 3,
        "body": b"Hello RocketMQ",
        "properties": b"TAGS\x01TagA\x02KEYS\x01OrderID001",
        "tags_code": 2598919,
        "keys": "OrderID001",
        "uniq_key": None,
        "flag": 7,
        "born_timestamp": BORN_TIME,
        "born_host": BORN_HOST,
        "reconsume_times": 2,
    }
    fields.update(overrides)
    return InnerMessage(**fields)


def file_bytes(tmp_path: Path, name: str = "00000000000000000000") -> bytes:
    return (tmp_path / "commitlog" / name).read_bytes()


def test_record_bytes_on_disk_match_the_spec_layout(tmp_path: Path) -> None:
    commitlog, _ = make_commitlog(tmp_path)
    first = commitlog.put_message(message())
    second = commitlog.put_message(message(flag=0, reconsume_times=0))
    assert first.status is PutMessageStatus.PUT_OK
    expected_first = spec_record(
        queue_id=3,
        flag=7,
        queue_offset=0,
        physical_offset=0,
        sys_flag=0,
        born_host=BORN_HOST,
        reconsume_times=2,
        prepared_offset=0,
        body=b"Hello RocketMQ",
        topic=b"TopicTest",
        properties=b"TAGS\x01TagA\x02KEYS\x01OrderID001",
    )
    expected_second = spec_record(
        queue_id=3,
        flag=0,
        queue_offset=1,
        physical_offset=len(expected_first),
        sys_flag=0,
        born_host=BORN_HOST,
        reconsume_times=0,
        prepared_offset=0,
        body=b"Hello RocketMQ",
        topic=b"TopicTest",
        properties=b"TAGS\x01TagA\x02KEYS\x01OrderID001",
    )
    # Fixed part 84 bytes + 4 + 14 body + 1 + 9 topic + 2 + 25 properties.
    assert len(expected_first) == 84 + 4 + 14 + 1 + 9 + 2 + 25
    content = file_bytes(tmp_path)
    assert content[: len(expected_first) * 2] == expected_first + expected_second
    assert content[len(expected_first) * 2 :] == bytes(len(content) - len(expected_first) * 2)
    assert (first.physical_offset, first.wrote_bytes, first.queue_offset) == (
        0,
        len(expected_first),
        0,
    )
    assert first.store_timestamp == STORE_TIME
    assert first.msg_id == "C0A8010A00002A9F0000000000000000"
    assert second.msg_id == f"C0A8010A00002A9F{len(expected_first):016X}"


def test_ipv6_born_host_sets_the_sysflag_bit_and_widens_the_field(tmp_path: Path) -> None:
    commitlog, _ = make_commitlog(tmp_path)
    born_v6 = socket.inet_pton(socket.AF_INET6, "fe80::1") + struct.pack(">i", 4000)
    result = commitlog.put_message(message(born_host=born_v6, sys_flag=0))
    expected = spec_record(
        queue_id=3,
        flag=7,
        queue_offset=0,
        physical_offset=0,
        sys_flag=0x10,
        born_host=born_v6,
        reconsume_times=2,
        prepared_offset=0,
        body=b"Hello RocketMQ",
        topic=b"TopicTest",
        properties=b"TAGS\x01TagA\x02KEYS\x01OrderID001",
    )
    assert result.wrote_bytes == len(expected)
    assert file_bytes(tmp_path)[: len(expected)] == expected


def test_dispatch_gets_the_consume_queue_and_index_fields(tmp_path: Path) -> None:
    commitlog, recorder = make_commitlog(tmp_path)
    result = commitlog.put_message(message(uniq_key="U1"))
    (request,) = recorder.calls
    assert type(request) is DispatchRequest
    assert request == DispatchRequest(
        topic="TopicTest",
        queue_id=3,
        queue_offset=0,
        physical_offset=0,
        size=result.wrote_bytes,
        tags_code=2598919,
        store_timestamp=STORE_TIME,
        sys_flag=0,
        keys="OrderID001",
        uniq_key="U1",
    )


def test_queue_offsets_are_dense_per_queue(tmp_path: Path) -> None:
    commitlog, recorder = make_commitlog(tmp_path)
    plan = [("A", 0), ("A", 1), ("A", 0), ("B", 0), ("A", 0), ("A", 1)]
    results = [commitlog.put_message(message(topic=t, queue_id=q)) for t, q in plan]
    assert [r.queue_offset for r in results] == [0, 0, 1, 0, 2, 1]
    assert commitlog.topic_queue_table == {("A", 0): 3, ("A", 1): 2, ("B", 0): 1}
    expected = [(t, q, r.queue_offset) for (t, q), r in zip(plan, results, strict=True)]
    assert recorder.queue_offsets == expected


def test_prepared_and_rollback_records_take_queue_offset_zero(tmp_path: Path) -> None:
    commitlog, _ = make_commitlog(tmp_path)
    commitlog.put_message(message())
    prepared = commitlog.put_message(message(sys_flag=0x4))
    rollback = commitlog.put_message(message(sys_flag=0xC))
    commit = commitlog.put_message(message(sys_flag=0x8))
    assert (prepared.queue_offset, rollback.queue_offset, commit.queue_offset) == (0, 0, 1)
    content = file_bytes(tmp_path)
    assert struct.unpack_from(">q", content, prepared.physical_offset + 20)[0] == 0


def test_a_record_that_does_not_fit_closes_the_file_with_a_blank(tmp_path: Path) -> None:
    commitlog, recorder = make_commitlog(tmp_path, file_size=400)
    first = commitlog.put_message(message())  # 139 bytes
    second = commitlog.put_message(message())
    third = commitlog.put_message(message())  # 278 + 139 + 8 > 400
    assert (first.physical_offset, second.physical_offset) == (0, 139)
    assert third.physical_offset == 400
    content = file_bytes(tmp_path)
    assert content[278:286] == struct.pack(">iI", 400 - 278, BLANK_MAGIC)
    assert content[286:] == bytes(400 - 286)
    assert file_bytes(tmp_path, "00000000000000000400")[:4] == struct.pack(">i", 139)
    assert [c.physical_offset for c in recorder.calls] == [0, 139, 400]
    assert [c.queue_offset for c in recorder.calls] == [0, 1, 2]


def test_exactly_eight_spare_bytes_still_fit_a_record(tmp_path: Path) -> None:
    commitlog, _ = make_commitlog(tmp_path, file_size=139 * 2 + 8)
    commitlog.put_message(message())
    second = commitlog.put_message(message())
    assert second.physical_offset == 139
    third = commitlog.put_message(message())
    assert third.physical_offset == 139 * 2 + 8


def batch_of(count: int, size: int = 100) -> bytes:
    return encode_batch(
        (i, bytes([i]) * size, b"KEYS\x01key%d\x02UNIQ_KEY\x01UNIQ%d" % (i, i))
        for i in range(count)
    )


def test_batch_records_get_consecutive_offsets_and_merged_properties(tmp_path: Path) -> None:
    commitlog, recorder = make_commitlog(tmp_path)
    commitlog.put_message(message(queue_id=1))
    header = message(queue_id=1, body=batch_of(3), properties=b"WAIT\x01true")
    result = commitlog.put_messages(header)
    assert result.status is PutMessageStatus.PUT_OK
    assert (result.queue_offset, result.msg_num) == (1, 3)
    assert recorder.batch_calls == 1
    assert [c.queue_offset for c in recorder.calls[1:]] == [1, 2, 3]
    assert [c.keys for c in recorder.calls[1:]] == ["key0", "key1", "key2"]
    assert [c.uniq_key for c in recorder.calls[1:]] == ["UNIQ0", "UNIQ1", "UNIQ2"]
    offsets = [c.physical_offset for c in recorder.calls[1:]]
    assert offsets[0] == result.physical_offset
    assert result.msg_id == ",".join(f"C0A8010A00002A9F{o:016X}" for o in offsets)
    content = file_bytes(tmp_path)
    props = b"KEYS\x01key1\x02UNIQ_KEY\x01UNIQ1\x02WAIT\x01true"
    expected_second = spec_record(
        queue_id=1,
        flag=1,
        queue_offset=2,
        physical_offset=offsets[1],
        sys_flag=0,
        born_host=BORN_HOST,
        reconsume_times=2,
        prepared_offset=0,
        body=b"\x01" * 100,
        topic=b"TopicTest",
        properties=props,
    )
    assert content[offsets[1] : offsets[1] + len(expected_second)] == expected_second
    assert result.wrote_bytes == sum(c.size for c in recorder.calls[1:])


def test_a_batch_with_too_long_properties_is_refused_whole(tmp_path: Path) -> None:
    commitlog, recorder = make_commitlog(tmp_path)
    body = encode_batch([(0, b"fits", b""), (0, b"too long", b"KEYS\x01" + b"k" * 32760)])
    result = commitlog.put_messages(message(body=body, properties=b"WAIT\x01true"))
    assert result.status is PutMessageStatus.PROPERTIES_SIZE_EXCEEDED
    assert (recorder.calls, commitlog.max_offset()) == ([], 0)


def test_a_batch_never_straddles_two_files(tmp_path: Path) -> None:
    commitlog, recorder = make_commitlog(tmp_path, file_size=1000)
    commitlog.put_message(message())  # 139 bytes
    result = commitlog.put_messages(message(body=batch_of(4), properties=b""))
    # Four records of 224 bytes: 139 + 896 + 8 > 1000, so the whole batch moves on.
    assert result.physical_offset == 1000
    assert [c.physical_offset for c in recorder.calls[1:]] == [1000, 1224, 1448, 1672]
    assert file_bytes(tmp_path)[139:147] == struct.pack(">iI", 1000 - 139, BLANK_MAGIC)


def test_batches_with_a_transaction_or_delay_are_refused(tmp_path: Path) -> None:
    commitlog, recorder = make_commitlog(tmp_path)
    assert commitlog.put_messages(message(body=batch_of(2), sys_flag=0x4)).status is (
        PutMessageStatus.MESSAGE_ILLEGAL
    )
    assert commitlog.put_messages(message(body=batch_of(2), delay_level=3)).status is (
        PutMessageStatus.MESSAGE_ILLEGAL
    )
    assert commitlog.put_messages(message(body=b"\x00\x00\x00")).status is (
        PutMessageStatus.MESSAGE_ILLEGAL
    )
    assert recorder.calls == []
    assert commitlog.max_offset() == 0


def test_size_limits_are_enforced_before_anything_is_written(tmp_path: Path) -> None:
    commitlog, recorder = make_commitlog(tmp_path, file_size=4096, max_message_size=1000)
    assert commitlog.put_message(message(body=bytes(1001))).status is (
        PutMessageStatus.MESSAGE_ILLEGAL
    )
    assert commitlog.put_message(message(properties=b"x" * 32768)).status is (
        PutMessageStatus.PROPERTIES_SIZE_EXCEEDED
    )
    assert commitlog.put_message(message(topic="t" * 128)).status is (
        PutMessageStatus.MESSAGE_ILLEGAL
    )
    assert commitlog.put_messages(message(body=batch_of(20, 60))).status is (
        PutMessageStatus.MESSAGE_ILLEGAL
    )
    assert commitlog.put_message(message(body=bytes(1000))).status is PutMessageStatus.PUT_OK
    assert len(recorder.calls) == 1


def test_a_record_larger_than_a_file_is_refused(tmp_path: Path) -> None:
    commitlog, _ = make_commitlog(tmp_path, file_size=500)
    assert commitlog.put_message(message(body=bytes(400))).status is (
        PutMessageStatus.MESSAGE_ILLEGAL
    )
    assert commitlog.put_message(message()).status is PutMessageStatus.PUT_OK


def test_delayed_message_is_parked_in_the_schedule_topic(tmp_path: Path) -> None:
    commitlog, recorder = make_commitlog(tmp_path)
    result = commitlog.put_message(message(delay_level=3, queue_id=5))
    request = recorder.calls[0]
    assert (request.topic, request.queue_id, request.queue_offset) == ("SCHEDULE_TOPIC_XXXX", 2, 0)
    assert request.tags_code == STORE_TIME + 10_000  # level 3 = 10s
    record = file_bytes(tmp_path)[: result.wrote_bytes]
    topic_pos = 84 + 4 + len(b"Hello RocketMQ")
    assert record[topic_pos : topic_pos + 20] == b"\x13SCHEDULE_TOPIC_XXXX"
    props = record[topic_pos + 22 :].decode()
    pairs = dict(p.split("\x01") for p in props.split("\x02"))
    assert pairs == {
        "TAGS": "TagA",
        "KEYS": "OrderID001",
        "DELAY": "3",
        "REAL_TOPIC": "TopicTest",
        "REAL_QID": "5",
    }


def test_delay_levels_above_the_highest_are_clamped(tmp_path: Path) -> None:
    commitlog, recorder = make_commitlog(tmp_path, delay_levels=(1000, 2000))
    commitlog.put_message(message(delay_level=9))
    assert recorder.calls[0].queue_id == 1
    assert recorder.calls[0].tags_code == STORE_TIME + 2000


def test_prepared_transaction_with_a_delay_level_is_not_parked(tmp_path: Path) -> None:
    commitlog, recorder = make_commitlog(tmp_path)
    commitlog.put_message(message(delay_level=2, sys_flag=0x4))
    assert (recorder.calls[0].topic, recorder.calls[0].queue_id) == ("TopicTest", 3)


def test_full_disk_at_roll_over_fails_cleanly_and_keeps_the_current_file(
    tmp_path: Path,
) -> None:
    disk_full = False

    def allocate(fd: int, offset: int, length: int) -> None:
        if disk_full:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        os.posix_fallocate(fd, offset, length)

    commitlog, recorder = make_commitlog(tmp_path, file_size=400, allocate=allocate)
    commitlog.put_message(message())
    commitlog.put_message(message())
    before = file_bytes(tmp_path)
    disk_full = True
    result = commitlog.put_message(message())
    assert result.status is PutMessageStatus.SERVICE_NOT_AVAILABLE  # for space: code 14
    assert file_bytes(tmp_path) == before  # no blank, nothing half-written
    assert not (tmp_path / "commitlog" / "00000000000000000400").exists()
    assert commitlog.topic_queue_table == {("TopicTest", 3): 2}
    disk_full = False
    retried = commitlog.put_message(message())
    assert (retried.status, retried.physical_offset, retried.queue_offset) == (
        PutMessageStatus.PUT_OK,
        400,
        2,
    )
    assert len(recorder.calls) == 3


def test_scan_walks_records_across_blanks_and_stops_at_a_torn_record(tmp_path: Path) -> None:
    commitlog, _ = make_commitlog(tmp_path, file_size=400)
    results = [commitlog.put_message(message()) for _ in range(4)]
    assert [r.physical_offset for r in results] == [0, 139, 400, 539]
    seen: list[int] = []
    end = commitlog.scan(
        0, check_crc=True, on_record=lambda info: seen.append(info.physical_offset)
    )
    assert (end, seen) == (678, [0, 139, 400, 539])
    last = commitlog.queue.files[-1]
    last.buffer[139 + 100] ^= 0xFF  # a body byte of the record at 539
    assert commitlog.scan(0, check_crc=True) == 539
    assert commitlog.scan(0, check_crc=False) == 678


def test_reads_of_a_file_deleted_under_the_reader_find_nothing(tmp_path: Path) -> None:
    commitlog, _ = make_commitlog(tmp_path)
    result = commitlog.put_message(message())
    # Expiry unmapped the file after this reader looked it up.
    commitlog.queue.files[0].close()
    assert commitlog.get_message(result.physical_offset, result.wrote_bytes) is None
    assert commitlog.record_at(result.physical_offset) is None


def test_a_record_whose_totalsize_differs_from_the_appended_size_stops_the_append(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import rmq.store.commitlog as commitlog_module
    from rmq.common.message import record_size as real_size

    monkeypatch.setattr(commitlog_module, "record_size", lambda *a: real_size(*a) + 8)
    commitlog, recorder = make_commitlog(tmp_path)
    with pytest.raises(AssertionError, match="TOTALSIZE"):
        commitlog.put_message(message())
    assert recorder.calls == []
    assert commitlog.queue.max_offset() == 0
