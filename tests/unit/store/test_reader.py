"""StoreReader on stores built byte by byte from the spec layouts (§3.1, §4.3-§4.7).

Nothing here is written with rmq's own writers: records, BLANKs, consume queue entries, the
index file and the checkpoint are packed with ``struct`` straight from the spec tables, so
the reader is checked against the format, not against our encoder.
"""

from __future__ import annotations

import random
import socket
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from rmq.store.errors import StoreError
from rmq.store.reader import ProblemKind, StoreReader, ValidationReport

MESSAGE_MAGIC = 0xDAA320A7
BLANK_MAGIC = 0xCBD43194
# §3.1 fixed part, IPv4 hosts: TOTALSIZE, MAGICCODE, BODYCRC, QUEUEID, FLAG, QUEUEOFFSET,
# PHYSICALOFFSET, SYSFLAG, BORNTIMESTAMP, BORNHOST, STORETIMESTAMP, STOREHOSTADDRESS,
# RECONSUMETIMES, PREPARED TRANSACTION OFFSET.
RECORD_HEAD = struct.Struct(">iIiiiqqiq8sq8siq")
CQ_ENTRY = struct.Struct(">qiq")
INDEX_HEADER = struct.Struct(">qqqqii")
INDEX_ENTRY = struct.Struct(">iqii")
BORN_HOST = socket.inet_aton("10.0.0.5") + struct.pack(">i", 50000)
STORE_HOST = socket.inet_aton("192.168.1.10") + struct.pack(">i", 10911)
T0 = 1_700_000_000_000
ROLLBACK = 0xC


def java_hash(text: str) -> int:
    h = 0
    for unit in struct.unpack(f"<{len(text.encode('utf-16-le')) // 2}H", text.encode("utf-16-le")):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def index_hash(key: str) -> int:
    h = java_hash(key)
    return 0 if h == -(1 << 31) else abs(h)


def spec_record(
    *,
    topic: str,
    queue_id: int,
    queue_offset: int,
    physical_offset: int,
    body: bytes,
    properties: dict[str, str],
    store_timestamp: int,
    sys_flag: int = 0,
) -> bytes:
    props = "\x02".join(f"{k}\x01{v}" for k, v in properties.items()).encode()
    topic_bytes = topic.encode()
    total = 84 + 4 + len(body) + 1 + len(topic_bytes) + 2 + len(props)
    head = RECORD_HEAD.pack(
        total,
        MESSAGE_MAGIC,
        zlib.crc32(body) & 0x7FFFFFFF,
        queue_id,
        0,
        queue_offset,
        physical_offset,
        sys_flag,
        store_timestamp - 5,
        BORN_HOST,
        store_timestamp,
        STORE_HOST,
        0,
        0,
    )
    return (
        head
        + struct.pack(">i", len(body))
        + body
        + struct.pack(">b", len(topic_bytes))
        + topic_bytes
        + struct.pack(">h", len(props))
        + props
    )


@dataclass
class Stored:
    topic: str
    queue_id: int
    queue_offset: int
    physical_offset: int
    size: int
    body: bytes


@dataclass
class SpecStore:
    """Builds a store directory from the spec layouts."""

    root: Path
    commitlog_file_size: int = 1024
    cq_file_size: int = 100
    hash_slots: int = 16
    index_entries: int = 64
    log: bytearray = field(default_factory=bytearray)
    records: list[Stored] = field(default_factory=list)
    queues: dict[tuple[str, int], list[tuple[int, int, int]]] = field(default_factory=dict)
    index: list[tuple[int, int, int]] = field(default_factory=list)

    def append(
        self,
        topic: str,
        queue_id: int,
        body: bytes,
        *,
        keys: str | None = None,
        uniq: str | None = None,
        tags: str | None = None,
        sys_flag: int = 0,
    ) -> Stored:
        properties = {}
        if keys is not None:
            properties["KEYS"] = keys
        if tags is not None:
            properties["TAGS"] = tags
        if uniq is not None:
            properties["UNIQ_KEY"] = uniq
        dispatched = sys_flag != ROLLBACK
        queue = self.queues.setdefault((topic, queue_id), [])
        queue_offset = len(queue) if dispatched else 0
        store_timestamp = T0 + 1000 * len(self.records)
        probe = spec_record(
            topic=topic,
            queue_id=queue_id,
            queue_offset=0,
            physical_offset=0,
            body=body,
            properties=properties,
            store_timestamp=0,
        )
        remaining = self.commitlog_file_size - len(self.log) % self.commitlog_file_size
        if len(probe) + 8 > remaining:  # §4.3 end-of-file rule
            self.log += struct.pack(">iI", remaining, BLANK_MAGIC) + bytes(remaining - 8)
        physical_offset = len(self.log)
        self.log += spec_record(
            topic=topic,
            queue_id=queue_id,
            queue_offset=queue_offset,
            physical_offset=physical_offset,
            body=body,
            properties=properties,
            store_timestamp=store_timestamp,
            sys_flag=sys_flag,
        )
        if dispatched:
            queue.append((physical_offset, len(probe), java_hash(tags) if tags else 0))
        if sys_flag != ROLLBACK:
            for key in ([uniq] if uniq else []) + (keys.split(" ") if keys else []):
                if key:
                    self.index.append(
                        (index_hash(f"{topic}#{key}"), physical_offset, store_timestamp)
                    )
        stored = Stored(topic, queue_id, queue_offset, physical_offset, len(probe), body)
        self.records.append(stored)
        return stored

    def commitlog_path(self, physical_offset: int) -> tuple[Path, int]:
        start = physical_offset - physical_offset % self.commitlog_file_size
        return self.root / "commitlog" / f"{start:020d}", physical_offset - start

    def write(self, *, with_index: bool = True) -> SpecStore:
        size = self.commitlog_file_size
        (self.root / "commitlog").mkdir(parents=True)
        for start in range(0, max(len(self.log), 1), size):
            chunk = bytes(self.log[start : start + size])
            (self.root / "commitlog" / f"{start:020d}").write_bytes(
                chunk + bytes(size - len(chunk))
            )
        for (topic, queue_id), entries in self.queues.items():
            directory = self.root / "consumequeue" / topic / str(queue_id)
            directory.mkdir(parents=True)
            data = b"".join(CQ_ENTRY.pack(*entry) for entry in entries)
            for start in range(0, max(len(data), 1), self.cq_file_size):
                chunk = data[start : start + self.cq_file_size]
                (directory / f"{start:020d}").write_bytes(
                    chunk + bytes(self.cq_file_size - len(chunk))
                )
        if with_index:
            self.write_index()
        (self.root / "checkpoint").write_bytes(
            struct.pack(">qqq", T0 + 3000, T0 + 2000, T0 + 1000) + bytes(4096 - 24)
        )
        (self.root / "config").mkdir()
        (self.root / "config" / "topics.json").write_text(
            '{\n\t"dataVersion":{\n\t\t"counter":1,\n\t\t"timestamp":1\n\t}\n}'
        )
        return self

    def write_index(self) -> None:
        (self.root / "index").mkdir(exist_ok=True)
        slots, entries = self.hash_slots, self.index_entries
        data = bytearray(40 + slots * 4 + entries * 20)
        heads: dict[int, int] = {}
        begin = 0
        for number, (key_hash, physical_offset, stored) in enumerate(self.index, start=1):
            slot = key_hash % slots
            diff = 0 if begin <= 0 else (stored - begin) // 1000
            INDEX_ENTRY.pack_into(
                data,
                40 + slots * 4 + number * 20,
                key_hash,
                physical_offset,
                diff,
                heads.get(slot, 0),
            )
            heads[slot] = number
            if number == 1:
                begin = stored
        for slot, number in heads.items():
            struct.pack_into(">i", data, 40 + slot * 4, number)
        last = self.index[-1] if self.index else (0, 0, 0)
        first = self.index[0] if self.index else (0, 0, 0)
        INDEX_HEADER.pack_into(
            data, 0, first[2], last[2], first[1], last[1], len(heads), len(self.index) + 1
        )
        self.index_path.write_bytes(bytes(data))

    @property
    def index_path(self) -> Path:
        return self.root / "index" / "20240222172627123"

    def cq_path(self, topic: str, queue_id: int, queue_offset: int) -> tuple[Path, int]:
        position = queue_offset * 20
        start = position - position % self.cq_file_size
        return (
            self.root / "consumequeue" / topic / str(queue_id) / f"{start:020d}",
            position - start,
        )

    def index_entry_position(self, number: int) -> int:
        return 40 + self.hash_slots * 4 + number * 20


def build(tmp_path: Path, *, with_index: bool = True) -> SpecStore:
    store = SpecStore(tmp_path / "store")
    for n in range(12):
        store.append(
            "TopicTest" if n % 3 else "Orders",
            n % 2,
            f"body-{n}".encode() * (3 + n % 4),
            keys=f"key{n} shared" if n % 4 else None,
            uniq=f"UNIQ{n:04d}",
            tags="TagA" if n % 2 else "TagB",
        )
    store.append("TopicTest", 0, b"rolled back", keys="key-rb", sys_flag=ROLLBACK)
    return store.write(with_index=with_index)


def problems(report: ValidationReport) -> set[tuple[ProblemKind, Path, int]]:
    return {(p.kind, p.path, p.offset) for p in report.problems}


def flip(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x40
    path.write_bytes(bytes(data))


def test_a_clean_store_validates_and_reads(tmp_path: Path) -> None:
    store = build(tmp_path)
    with StoreReader(store.root) as reader:
        report = reader.validate()
        assert report.problems == []
        assert report.records == 13
        assert report.commitlog_files == len(reader.commitlog_files()) > 2
        assert report.max_physical_offset == len(store.log) == reader.max_physical_offset()
        assert report.index_entries == len(store.index)

        walked = [(phy, record.body) for phy, record in reader.iter_records()]
        assert walked == [(r.physical_offset, r.body) for r in store.records]

        messages = list(reader.read_queue("TopicTest", 1))
        expected = [r for r in store.records if (r.topic, r.queue_id) == ("TopicTest", 1)]
        assert [m.queue_offset for m in messages] == [r.queue_offset for r in expected]
        assert [m.record.body for m in messages if m.record] == [r.body for r in expected]
        assert reader.queue_offsets("TopicTest", 1) == (0, len(expected))
        assert sorted(reader.consume_queues()) == [
            ("Orders", 0),
            ("Orders", 1),
            ("TopicTest", 0),
            ("TopicTest", 1),
        ]

        fifth = store.records[5]
        assert reader.message_at(fifth.physical_offset).body == fifth.body
        offset_id = (STORE_HOST + struct.pack(">q", fifth.physical_offset)).hex().upper()
        assert reader.message_by_offset_id(offset_id).body == fifth.body
        with pytest.raises(StoreError):
            reader.message_at(fifth.physical_offset + 1)

        (index_info,) = reader.index_files()
        assert (index_info.path, index_info.hash_slot_num, index_info.index_num) == (
            store.index_path,
            16,
            64,
        )
        assert index_info.index_count == len(store.index) + 1
        assert (index_info.begin_phy_offset, index_info.end_phy_offset) == (
            store.index[0][1],
            store.index[-1][1],
        )

        checkpoint = reader.checkpoint()
        assert checkpoint == (T0 + 3000, T0 + 2000, T0 + 1000)
        loaded = reader.load_config("topics.json")
        assert loaded is not None
        assert loaded.value == {"dataVersion": {"counter": 1, "timestamp": 1}}
        assert not reader.abort_file_present()


def test_reading_never_writes(tmp_path: Path) -> None:
    store = build(tmp_path)
    before = {
        p: (p.read_bytes(), p.stat().st_mtime_ns) for p in store.root.rglob("*") if p.is_file()
    }
    with StoreReader(store.root) as reader:
        reader.validate()
        reader.query_by_key("TopicTest", "shared")
        list(reader.read_queue("Orders", 0))
    after = {
        p: (p.read_bytes(), p.stat().st_mtime_ns) for p in store.root.rglob("*") if p.is_file()
    }
    assert after == before
    assert not (store.root / "lock").exists()


@pytest.mark.parametrize("with_index", [True, False])
def test_query_by_key_uses_the_index_or_a_scan(tmp_path: Path, with_index: bool) -> None:
    store = build(tmp_path, with_index=with_index)
    with StoreReader(store.root) as reader:
        shared = reader.query_by_key("TopicTest", "shared")
        assert [r.physical_offset for r in shared] == [
            r.physical_offset
            for n, r in enumerate(store.records[:12])
            if r.topic == "TopicTest" and n % 4
        ]
        assert [r.body for r in reader.query_by_key("TopicTest", "UNIQ0007")] == [
            store.records[7].body
        ]
        assert reader.query_by_key("Orders", "key1") == []
        window = reader.query_by_key("TopicTest", "shared", begin=T0 + 4_000, end=T0 + 8_000)
        assert [r.store_timestamp for r in window] == [T0 + 5_000, T0 + 7_000]
        assert len(reader.query_by_key("TopicTest", "shared", max_num=2)) == 2


def test_query_by_key_scans_past_the_newest_indexed_message(tmp_path: Path) -> None:
    store = SpecStore(tmp_path / "store")
    store.append("T", 0, b"indexed", keys="k")
    indexed = list(store.index)
    store.append("T", 0, b"not yet indexed", keys="k")
    store.index = indexed
    store.write()
    with StoreReader(store.root) as reader:
        assert [r.body for r in reader.query_by_key("T", "k")] == [b"indexed", b"not yet indexed"]


def test_flipped_body_byte_is_a_crc_problem_at_that_record(tmp_path: Path) -> None:
    store = build(tmp_path)
    target = store.records[4]
    path, pos = store.commitlog_path(target.physical_offset)
    flip(path, pos + 84 + 4 + 2)
    with StoreReader(store.root) as reader:
        report = reader.validate()
    assert problems(report) == {(ProblemKind.CRC_MISMATCH, path, pos)}
    assert report.records == 13


def test_truncated_commitlog_file_reports_size_and_record(tmp_path: Path) -> None:
    store = build(tmp_path)
    target = store.records[-2]
    path, pos = store.commitlog_path(target.physical_offset)
    path.write_bytes(path.read_bytes()[: pos + 40])
    with StoreReader(store.root) as reader:
        report = reader.validate()
    found = problems(report)
    assert (ProblemKind.WRONG_FILE_SIZE, path, 0) in found
    assert (ProblemKind.TRUNCATED_RECORD, path, pos) in found


def test_missing_consume_queue_file_in_the_middle(tmp_path: Path) -> None:
    store = SpecStore(tmp_path / "store", commitlog_file_size=4096)
    for n in range(12):
        store.append("T", 0, b"m%d" % n)
    store.write()
    middle, _ = store.cq_path("T", 0, 5)
    middle.unlink()
    after, _ = store.cq_path("T", 0, 10)
    with StoreReader(store.root) as reader:
        report = reader.validate()
        messages = list(reader.read_queue("T", 0))
    found = problems(report)
    assert (ProblemKind.MISSING_FILE, after, 0) in found
    assert (ProblemKind.CQ_MISSING_ENTRY, store.root / "consumequeue" / "T" / "0", 0) in found
    assert [m.queue_offset for m in messages] == [0, 1, 2, 3, 4, 10, 11]


def test_index_entry_past_the_end_of_the_commitlog(tmp_path: Path) -> None:
    store = build(tmp_path)
    store.index.append((index_hash("TopicTest#ghost"), len(store.log) + 4096, T0 + 99_000))
    store.write_index()
    with StoreReader(store.root) as reader:
        report = reader.validate()
    assert problems(report) == {
        (
            ProblemKind.INDEX_ENTRY_NOT_A_RECORD,
            store.index_path,
            store.index_entry_position(len(store.index)),
        )
    }


def test_index_entry_for_a_key_the_record_does_not_have(tmp_path: Path) -> None:
    store = build(tmp_path)
    _, physical_offset, stored = store.index[3]
    store.index[3] = (index_hash("TopicTest#other"), physical_offset, stored)
    store.write_index()
    with StoreReader(store.root) as reader:
        report = reader.validate()
    assert problems(report) == {
        (ProblemKind.INDEX_KEY_MISMATCH, store.index_path, store.index_entry_position(4))
    }


@pytest.mark.parametrize(
    ("kind", "entry"),
    [
        (ProblemKind.CQ_SIZE_MISMATCH, lambda r, other: (r.physical_offset, r.size + 1, 0)),
        (ProblemKind.CQ_ENTRY_NOT_A_RECORD, lambda r, other: (r.physical_offset + 8, r.size, 0)),
        (ProblemKind.CQ_WRONG_QUEUE, lambda r, other: (other.physical_offset, other.size, 0)),
    ],
)
def test_consume_queue_entry_that_does_not_fit_its_record(
    tmp_path: Path, kind: ProblemKind, entry: object
) -> None:
    store = build(tmp_path)
    target = next(r for r in store.records if (r.topic, r.queue_id) == ("TopicTest", 1))
    other = next(r for r in store.records if r.topic == "Orders")
    path, pos = store.cq_path("TopicTest", 1, target.queue_offset)
    data = bytearray(path.read_bytes())
    CQ_ENTRY.pack_into(data, pos, *entry(target, other))  # type: ignore[operator]
    path.write_bytes(bytes(data))
    with StoreReader(store.root) as reader:
        report = reader.validate()
    assert (kind, path, pos) in problems(report)


def test_swapped_consume_queue_entries_are_queue_offset_mismatches(tmp_path: Path) -> None:
    store = build(tmp_path)
    path, _ = store.cq_path("TopicTest", 1, 0)
    data = bytearray(path.read_bytes())
    data[0:20], data[20:40] = data[20:40], data[0:20]
    path.write_bytes(bytes(data))
    with StoreReader(store.root) as reader:
        report = reader.validate()
    assert problems(report) == {
        (ProblemKind.CQ_QUEUE_OFFSET_MISMATCH, path, 0),
        (ProblemKind.CQ_QUEUE_OFFSET_MISMATCH, path, 20),
    }


def test_garbage_after_the_last_record_is_a_torn_tail(tmp_path: Path) -> None:
    store = build(tmp_path)
    path, pos = store.commitlog_path(len(store.log))
    data = bytearray(path.read_bytes())
    data[pos + 30] = 7
    path.write_bytes(bytes(data))
    with StoreReader(store.root) as reader:
        report = reader.validate()
        assert reader.max_physical_offset() == len(store.log)
    assert problems(report) == {(ProblemKind.TORN_TAIL, path, pos + 30)}


def test_bad_magic_in_an_old_file_does_not_stop_the_scan(tmp_path: Path) -> None:
    store = build(tmp_path)
    target = store.records[1]
    path, pos = store.commitlog_path(target.physical_offset)
    flip(path, pos + 5)
    with StoreReader(store.root) as reader:
        report = reader.validate()
        later = [phy for phy, _ in reader.iter_records()]
    assert (ProblemKind.BAD_MAGIC, path, pos) in problems(report)
    assert later[-1] == store.records[-1].physical_offset


def test_physical_offset_field_must_match_the_position(tmp_path: Path) -> None:
    store = build(tmp_path)
    target = store.records[2]
    path, pos = store.commitlog_path(target.physical_offset)
    data = bytearray(path.read_bytes())
    struct.pack_into(">q", data, pos + 28, target.physical_offset + 1)
    path.write_bytes(bytes(data))
    with StoreReader(store.root) as reader:
        report = reader.validate()
    assert problems(report) == {(ProblemKind.PHYSICAL_OFFSET_MISMATCH, path, pos)}


def test_corrupt_config_and_short_checkpoint(tmp_path: Path) -> None:
    store = build(tmp_path)
    (store.root / "config" / "topics.json").write_text("{broken")
    (store.root / "checkpoint").write_bytes(bytes(24))
    with StoreReader(store.root) as reader:
        report = reader.validate()
    assert problems(report) == {
        (ProblemKind.BAD_CONFIG, store.root / "config" / "topics.json", 0),
        (ProblemKind.WRONG_FILE_SIZE, store.root / "checkpoint", 0),
    }


def test_random_damage_is_always_reported_never_raised(tmp_path: Path) -> None:
    rng = random.Random(20240222)
    pristine = build(tmp_path / "pristine")
    files = [p for p in pristine.root.rglob("*") if p.is_file()]
    for attempt in range(40):
        root = tmp_path / f"damaged{attempt}"
        for path in files:
            target = root / path.relative_to(pristine.root)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
        victim = root / rng.choice(files).relative_to(pristine.root)
        data = bytearray(victim.read_bytes())
        if data and rng.random() < 0.8:
            for _ in range(rng.randint(1, 4)):
                data[rng.randrange(len(data))] = rng.randrange(256)
        else:
            del data[rng.randrange(len(data) + 1) :]
        victim.write_bytes(bytes(data))
        with StoreReader(root) as reader:
            reader.validate()
            list(reader.iter_records())
            reader.query_by_key("TopicTest", "shared")


def test_missing_directory_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="not a directory"):
        StoreReader(tmp_path / "nope")


def test_consume_queue_hole_and_garbage_after_its_end(tmp_path: Path) -> None:
    store = SpecStore(tmp_path / "store", commitlog_file_size=4096)
    for n in range(12):
        store.append("T", 0, b"m%d" % n)
    store.write()
    first, hole = store.cq_path("T", 0, 2)
    data = bytearray(first.read_bytes())
    data[hole : hole + 20] = bytes(20)
    first.write_bytes(bytes(data))
    last, end = store.cq_path("T", 0, 12)
    data = bytearray(last.read_bytes())
    data[end + 25] = 1
    last.write_bytes(bytes(data))
    with StoreReader(store.root) as reader:
        report = reader.validate()
    assert problems(report) == {
        (ProblemKind.CQ_HOLE, first, hole),
        (ProblemKind.CQ_MISSING_ENTRY, store.root / "consumequeue" / "T" / "0", 0),
        (ProblemKind.TORN_TAIL, last, end + 20),
    }
