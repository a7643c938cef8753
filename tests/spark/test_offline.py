"""The ``rocketmq`` data source on store directories built byte by byte from the spec.

Every exported row is compared with what ``rmq inspect STORE_DIR export`` writes for the
same store: multi-file stores split into several partitions per file, filters and reader
options whose bounds fall exactly on a file boundary, options that cut what is planned
(counted in partitions and planned bytes), one DataFrame queried with different filters,
selective topics read through consume queues, stores whose consume queues are missing or
wrong, damaged records.
"""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from rmq.spark.datasource import OfflineReader
from rmq.spark.offline import CommitlogRange, plan_store, read_range
from rmq.spark.options import ScanBounds
from rmq.store.offline.reader import StoreReader
from tests.spark.records import Record, build_spec_store, exported_records, stored_records
from tests.specstore import CQ_ENTRY

pytestmark = pytest.mark.spark

PARTITION_BYTES = 400


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_spec_store(tmp_path_factory.mktemp("spec") / "store").root


def read(spark: SparkSession, *roots: Path, **options: str) -> DataFrame:
    reader = spark.read.format("rocketmq").option("maxPartitionBytes", str(PARTITION_BYTES))
    return reader.options(**options).load([str(root) for root in roots])


def file_starts(root: Path) -> list[int]:
    with StoreReader(root) as reader:
        return [f.start for f in reader.commitlog_files()]


def first_record_of_file(root: Path, index: int) -> Record:
    start = file_starts(root)[index]
    return next(r for r in stored_records(root) if r["commitLogOffset"] >= start)


def assert_several_per_file(parts: list[CommitlogRange], starts: list[int]) -> None:
    """Every commitlog file but the last (which is not full) is read by two tasks or more."""
    per_file = Counter(part.file_start for part in parts)
    assert all(per_file[start] >= 2 for start in starts[:-1]), per_file


def test_every_record_is_exported_once_from_several_partitions_per_file(
    spark: SparkSession, store: Path
) -> None:
    starts = file_starts(store)
    assert len(starts) >= 6
    parts = plan_store(str(store), ScanBounds(), PARTITION_BYTES)
    assert_several_per_file(parts, starts)
    df = read(spark, store)
    assert df.rdd.getNumPartitions() == len(parts)
    expected = stored_records(store)
    assert exported_records(df) == expected
    bodies = {record.get("bodyEncoding") for record in expected}
    assert bodies == {None, "base64"}, "text and binary bodies are both covered"
    assert any(r["sysFlag"] & 1 and r["body"].startswith("compressed") for r in expected)
    assert any(r["topic"] == "Rare" and r["body"] == "rolled back" for r in expected)


Keep = Callable[[Record, int, int], bool]


@pytest.mark.parametrize(
    ("condition", "keep"),
    [
        ("storeTimestamp >= timestamp_millis({ts})", lambda r, o, t: r["storeTimestamp"] >= t),
        ("storeTimestamp = timestamp_millis({ts})", lambda r, o, t: r["storeTimestamp"] == t),
        (
            "topic IN ('TopicTest', 'Nope') AND commitLogOffset < {offset}",
            lambda r, o, t: r["topic"] == "TopicTest" and r["commitLogOffset"] < o,
        ),
        ("commitLogOffset IN ({offset}, 0)", lambda r, o, t: r["commitLogOffset"] in (o, 0)),
    ],
)
def test_spark_filters_bounded_at_a_file_boundary(
    spark: SparkSession, store: Path, condition: str, keep: Keep
) -> None:
    first = first_record_of_file(store, 3)
    offset, ts = first["commitLogOffset"], first["storeTimestamp"]
    assert offset == file_starts(store)[3]
    df = read(spark, store).where(condition.format(offset=offset, ts=ts))
    expected = stored_records(store, lambda r: keep(r, offset, ts))
    assert expected, "the filter keeps something"
    assert exported_records(df) == expected


@pytest.mark.parametrize(
    ("options", "keep"),
    [
        ({"startOffset": "{offset}"}, lambda r, o, t: r["commitLogOffset"] >= o),
        ({"endOffset": "{offset}"}, lambda r, o, t: r["commitLogOffset"] < o),
        (
            {"startOffset": "{offset}", "endOffset": "{next_offset}"},
            lambda r, o, t: r["commitLogOffset"] == o,
        ),
        ({"startTimestamp": "{ts}"}, lambda r, o, t: r["storeTimestamp"] >= t),
        ({"endTimestamp": "{ts}"}, lambda r, o, t: r["storeTimestamp"] < t),
        (
            {"startTimestamp": "{ts}", "endTimestamp": "{next_ts}"},
            lambda r, o, t: r["storeTimestamp"] == t,
        ),
        (
            {"topics": "Rare", "startTimestamp": "{ts}"},
            lambda r, o, t: r["topic"] == "Rare" and r["storeTimestamp"] >= t,
        ),
    ],
)
def test_reader_options_bounded_at_a_file_boundary(
    store: Path, options: dict[str, str], keep: Keep
) -> None:
    first = first_record_of_file(store, 3)
    offset, ts = first["commitLogOffset"], first["storeTimestamp"]
    values = {"offset": offset, "next_offset": offset + 1, "ts": ts, "next_ts": ts + 1}
    reader = OfflineReader(
        {
            "path": str(store),
            "maxPartitionBytes": str(PARTITION_BYTES),
            **{name: value.format(**values) for name, value in options.items()},
        }
    )
    got = [
        physical_offset
        for part in reader.partitions()
        for batch in reader.read(part)
        for physical_offset in batch.column("commitLogOffset").to_pylist()
    ]
    expected = stored_records(store, lambda r: keep(r, offset, ts))
    assert expected, "the bounds keep something"
    assert got == [r["commitLogOffset"] for r in expected]


def test_one_dataframe_queried_with_different_filters_and_a_self_join(
    spark: SparkSession, store: Path
) -> None:
    """Spark plans one read per loaded DataFrame and runs every scan of it with the read it
    planned last: a filter the source took into its scan used to narrow the queries after
    it (and the other side of a join) as well."""
    df = read(spark, store)
    records = stored_records(store)
    first = first_record_of_file(store, 3)

    def count(keep: Callable[[Record], bool]) -> int:
        return sum(1 for record in records if keep(record))

    assert df.where("topic = 'Rare'").count() == count(lambda r: r["topic"] == "Rare") > 0
    assert df.count() == len(records)
    assert df.where("topic = 'TopicTest'").count() == count(lambda r: r["topic"] == "TopicTest")
    offset = first["commitLogOffset"]
    assert df.where(f"commitLogOffset < {offset}").count() == count(
        lambda r: r["commitLogOffset"] < offset
    )
    assert df.count() == len(records)

    rare = df.where("topic = 'Rare'").groupBy("queueId").agg(F.count("*").alias("rare"))
    common = df.where("topic = 'TopicTest'").groupBy("queueId").agg(F.count("*").alias("common"))
    joined = {row.queueId: (row.rare, row.common) for row in rare.join(common, "queueId").collect()}
    per_queue = Counter((r["topic"], r["queueId"]) for r in records)
    assert joined == {
        queue_id: (per_queue["Rare", queue_id], per_queue["TopicTest", queue_id])
        for queue_id in {r["queueId"] for r in records}
        if per_queue["Rare", queue_id] and per_queue["TopicTest", queue_id]
    }
    assert len(joined) >= 2


def test_filters_that_keep_nothing_read_next_to_nothing(spark: SparkSession, store: Path) -> None:
    [rollback] = stored_records(store, lambda r: r["body"] == "rolled back")
    # Only the range holding the ROLLBACK record (which no consume queue lists) must be walked.
    [walked] = plan_store(str(store), ScanBounds(topics=frozenset({"Nope"})), PARTITION_BYTES)
    assert walked.start <= rollback["commitLogOffset"] < walked.end and not walked.queues
    assert plan_store(str(store), ScanBounds(min_offset=1 << 40), PARTITION_BYTES) == []
    assert read(spark, store).where("commitLogOffset >= 1099511627776").count() == 0
    assert read(spark, store).where("topic = 'Nope'").count() == 0


def test_time_and_offset_options_bound_at_a_file_boundary(spark: SparkSession, store: Path) -> None:
    start = first_record_of_file(store, 2)
    end = first_record_of_file(store, 4)
    expected = stored_records(
        store, lambda r: start["commitLogOffset"] <= r["commitLogOffset"] < end["commitLogOffset"]
    )
    by_time = read(
        spark,
        store,
        startTimestamp=str(start["storeTimestamp"]),
        endTimestamp=str(end["storeTimestamp"]),
    )
    assert exported_records(by_time) == expected
    by_offset = ScanBounds.from_options(
        {"startOffset": str(start["commitLogOffset"]), "endOffset": str(end["commitLogOffset"])}
    )
    parts = plan_store(str(store), by_offset, PARTITION_BYTES)
    assert [_dict(r) for part in parts for r in read_range(part, by_offset)] == expected


def test_options_cut_the_partitions_and_the_bytes_planned(spark: SparkSession, store: Path) -> None:
    middle = first_record_of_file(store, 3)
    start, end = middle["storeTimestamp"] + 500, middle["storeTimestamp"] + 2500
    full = plan_store(str(store), ScanBounds(), PARTITION_BYTES)
    total = sum(part.size for part in full)

    in_window = plan_store(
        str(store), ScanBounds(min_timestamp=start, max_timestamp=end), PARTITION_BYTES
    )
    window = read(spark, store, startTimestamp=str(start), endTimestamp=str(end))
    assert window.rdd.getNumPartitions() == len(in_window) <= 2
    assert sum(part.size for part in in_window) < total // 5

    offset = middle["commitLogOffset"]
    later = [part for part in full if part.start >= offset]
    assert (
        read(spark, store, startOffset=str(offset)).rdd.getNumPartitions() == len(later) < len(full)
    )


def test_a_selective_topic_is_read_through_its_consume_queues(
    spark: SparkSession, store: Path
) -> None:
    bounds = ScanBounds(topics=frozenset({"Rare"}))
    parts = plan_store(str(store), bounds, PARTITION_BYTES)
    listed = [part for part in parts if part.queues]
    assert listed, "some ranges are read through the Rare queues"
    assert all(topic == "Rare" for part in listed for topic, _ in part.queues)
    walked = [part for part in parts if not part.queues]
    assert walked, "the range with the ROLLBACK record (in no consume queue) is walked"
    expected = stored_records(store, lambda r: r["topic"] == "Rare")
    assert any(r["body"] == "rolled back" for r in expected)
    got = [r["commitLogOffset"] for part in parts for r in map(_dict, read_range(part, bounds))]
    assert got == [r["commitLogOffset"] for r in expected]
    assert exported_records(read(spark, store).where("topic = 'Rare'")) == expected


def _dict(record: object) -> Record:
    from rmq.common.jsonrecord import to_record_dict
    from rmq.common.message import MessageRecord

    assert isinstance(record, MessageRecord)
    return to_record_dict(record)


@pytest.mark.parametrize("topics", [None, frozenset({"Rare"})])
def test_without_consume_queues_record_starts_are_found_by_walking(
    store: Path, tmp_path: Path, topics: frozenset[str] | None
) -> None:
    copy = tmp_path / "store"
    shutil.copytree(store, copy)
    shutil.rmtree(copy / "consumequeue")
    bounds = ScanBounds(topics=topics)
    parts = plan_store(str(copy), bounds, PARTITION_BYTES)
    assert_several_per_file(parts, file_starts(copy))
    assert not any(part.queues for part in parts)
    got = [_dict(r) for part in parts for r in read_range(part, bounds)]
    assert got == stored_records(copy, lambda r: topics is None or r["topic"] in topics)


@pytest.mark.parametrize("topics", [None, frozenset({"Rare"})])
def test_consume_queue_entries_that_point_between_records_are_not_trusted(
    store: Path, tmp_path: Path, topics: frozenset[str] | None
) -> None:
    copy = tmp_path / "store"
    shutil.copytree(store, copy)
    for queue_file in (copy / "consumequeue").glob("*/*/*"):
        data = bytearray(queue_file.read_bytes())
        for pos in range(0, len(data), CQ_ENTRY.size):
            physical_offset, size, tags_code = CQ_ENTRY.unpack_from(data, pos)
            if size:
                CQ_ENTRY.pack_into(data, pos, physical_offset + 4, size, tags_code)
        queue_file.write_bytes(bytes(data))
    bounds = ScanBounds(topics=topics)
    parts = plan_store(str(copy), bounds, PARTITION_BYTES)
    assert_several_per_file(parts, file_starts(copy))
    assert not any(part.queues for part in parts)
    got = [_dict(r) for part in parts for r in read_range(part, bounds)]
    assert got == stored_records(copy, lambda r: topics is None or r["topic"] in topics)


def test_a_damaged_record_is_skipped_as_the_store_reader_skips_it(
    store: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "store"
    shutil.copytree(store, copy)
    damaged = first_record_of_file(copy, 2)
    second = next(
        r for r in stored_records(copy) if r["commitLogOffset"] > damaged["commitLogOffset"]
    )
    path = copy / "commitlog" / f"{file_starts(copy)[2]:020d}"
    data = bytearray(path.read_bytes())
    position = second["commitLogOffset"] - file_starts(copy)[2]
    data[position + 4 : position + 8] = b"\x00\x00\x00\x01"  # the magic code
    path.write_bytes(bytes(data))
    parts = plan_store(str(copy), ScanBounds(), PARTITION_BYTES)
    got = [_dict(r) for part in parts for r in read_range(part, ScanBounds())]
    expected = stored_records(copy, damaged=True)
    assert second["commitLogOffset"] not in [r["commitLogOffset"] for r in expected]
    assert got == expected and len(got) == len(stored_records(store)) - 1


def test_several_store_directories_with_a_broker_name(
    spark: SparkSession, store: Path, tmp_path: Path
) -> None:
    other = build_spec_store(tmp_path / "other", count=10).root
    df = read(spark, store, other, brokerName="broker-a")
    rows = df.groupBy("brokerName").count().collect()
    assert [(row["brokerName"], row["count"]) for row in rows] == [
        ("broker-a", len(stored_records(store)) + len(stored_records(other)))
    ]
