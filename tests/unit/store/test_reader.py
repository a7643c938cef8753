"""StoreReader on stores built byte by byte from the spec layouts (§3.1, §4.3-§4.7).

Nothing here is written with rmq's own writers: the stores come from ``tests.specstore``,
which packs records, BLANKs, consume queue entries, the index file and the checkpoint with
``struct`` straight from the spec tables, so the reader is checked against the format, not
against our encoder.
"""

from __future__ import annotations

import random
import struct
from pathlib import Path

import pytest

from rmq.store.errors import StoreError
from rmq.store.offline.problems import ProblemKind, ProblemLog
from rmq.store.offline.reader import StoreReader
from rmq.store.offline.validate import ValidationReport
from tests.specstore import CQ_ENTRY, STORE_HOST, T0, SpecStore, build, flip, index_hash


def problems(report: ValidationReport) -> set[tuple[ProblemKind, Path, int]]:
    return {(p.kind, p.path, p.offset) for p in report.problems}


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


def test_records_whose_keys_were_never_indexed_are_reported(tmp_path: Path) -> None:
    store = build(tmp_path)
    last_offset = store.index[-1][1]
    store.index = [entry for entry in store.index if entry[1] != last_offset]
    store.write_index()
    with StoreReader(store.root) as reader:
        report = reader.validate()
    assert problems(report) == {
        (ProblemKind.INDEX_MISSING_ENTRY, store.root / "index", 0),
    }
    message = report.problems[0].message
    assert message.startswith("1 records with keys have no index entry")
    assert f"(first: commitlog offset {last_offset}, topic TopicTest)" in message


def test_records_after_where_a_broker_noted_its_index_fell_behind_are_reported(
    tmp_path: Path,
) -> None:
    store = build(tmp_path)
    store.index = []
    store.write_index()
    with StoreReader(store.root) as reader:
        assert reader.validate().problems == []  # no index at all: nothing was ever indexed
    (store.root / "recovery").mkdir()
    (store.root / "recovery" / "index-behind").write_text("0\n")
    with StoreReader(store.root) as reader:
        report = reader.validate()
    assert problems(report) == {(ProblemKind.INDEX_MISSING_ENTRY, store.root / "index", 0)}


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
    bodies = {r.physical_offset: r.body for r in pristine.records}
    with StoreReader(pristine.root) as reader:
        shared = reader.query_by_key("TopicTest", "shared")
    assert shared
    truncated = 0
    reported = 0
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
        resized = len(data) != victim.stat().st_size
        victim.write_bytes(bytes(data))
        walk_problems = ProblemLog()
        with StoreReader(root) as reader:
            report = reader.validate()
            walked = list(reader.iter_records(report=walk_problems))
            found = reader.query_by_key("TopicTest", "shared")
        reported += bool(report.problems)
        if resized:
            truncated += 1
            assert any(p.path == victim for p in report.problems), (victim, report.problems)
        # What a walk meets, validation reports; a record whose body changed fails its CRC.
        assert not walk_problems.problems or report.problems, (victim, walk_problems.problems)
        crc_errors = {
            int(p.path.name) + p.offset
            for p in report.problems
            if p.kind is ProblemKind.CRC_MISMATCH
        }
        for phy, record in walked:
            assert record.body == bodies[phy] or phy in crc_errors, (victim, phy)
        assert report.records == len(walked)
        assert {phy for phy, _ in walked} <= bodies.keys()
        assert all(m.topic == "TopicTest" and "shared" in m.keys for m in found)
        assert len(found) <= len(shared)
    assert truncated > 0 and reported > truncated


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
