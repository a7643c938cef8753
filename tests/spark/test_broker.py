"""The ``rocketmq`` data source and ``rmq spark-export`` against a real ``rmq broker``.

Messages are sent with rmq's producer (text, binary and compressed bodies, keys, tags, user
properties) to two topics on a broker with 32 KiB commitlog files, so its store has several
files.  The online mode must export exactly what the broker's store holds for those topics
(compared with the offline store reader: every field, plus the MIN_OFFSET / MAX_OFFSET
properties a pull adds), one partition per queue, within the offsets and times asked for;
the offline mode must read the same rows from the broker's store directory; one online
DataFrame queried with different filters and joined with itself gives each query its rows.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from rmq.client.message import Message
from rmq.client.producer import Producer
from tests.procs import RmqProcess, RmqProcesses
from tests.spark.records import Record, exported_records, stored_records

pytestmark = pytest.mark.spark

BROKER = "spark-broker"
ORDERS = "SparkOrders"
EVENTS = "SparkEvents"
PULL_PROPERTIES = ("MIN_OFFSET", "MAX_OFFSET")


@pytest.fixture(scope="module")
def broker(module_processes: RmqProcesses, namesrv: RmqProcess) -> Iterator[RmqProcess]:
    process = module_processes.start_broker(
        BROKER, namesrv=namesrv, props={"mappedFileSizeCommitLog": 32 * 1024}
    )
    asyncio.run(asyncio.wait_for(produce(namesrv.addr), 60))
    yield process
    process.stop_cleanly()


async def produce(namesrv_addr: str) -> None:
    async with Producer("spark-test-producer", namesrv_addr) as producer:
        for n in range(160):
            if n % 10 == 3:
                body = ("compressed ü " * 400).encode()  # over 4 KiB: sent compressed
            elif n % 4 == 1:
                body = bytes(range(256)) * 2
            else:
                body = f"message {n}".encode() * 20
            await producer.send(
                Message(
                    ORDERS if n % 3 else EVENTS,
                    body,
                    tags=f"Tag{n % 2}",
                    keys=[f"order-{n}", "shared"],
                    properties={"city": "Zürich", "n": str(n)},
                )
            )


def store_root(broker: RmqProcess) -> Path:
    return broker.home / "store"


def expected(broker: RmqProcess, *topics: str) -> list[Record]:
    return stored_records(store_root(broker), lambda r: r["topic"] in topics, broker_name=BROKER)


def online(spark: SparkSession, namesrv: RmqProcess, topics: str, **options: str) -> DataFrame:
    reader = spark.read.format("rocketmq").option("namesrv", namesrv.addr).option("topic", topics)
    return reader.options(**options).load()


def without_pull_properties(records: list[Record]) -> list[Record]:
    for record in records:
        assert all(name in record["properties"] for name in PULL_PROPERTIES)
        for name in PULL_PROPERTIES:
            del record["properties"][name]
    return records


def test_the_online_mode_exports_what_the_broker_holds(
    spark: SparkSession, broker: RmqProcess, namesrv: RmqProcess
) -> None:
    df = online(spark, namesrv, f"{ORDERS},{EVENTS}")
    assert df.rdd.getNumPartitions() == 8  # 4 queues per topic, one partition each
    records = expected(broker, ORDERS, EVENTS)
    assert len(records) == 160
    assert any(r["sysFlag"] & 1 for r in records), "compressed bodies are covered"
    assert any(r.get("bodyEncoding") == "base64" for r in records), "binary bodies too"
    assert without_pull_properties(exported_records(df)) == records
    with_store_files = {f.name for f in (store_root(broker) / "commitlog").iterdir()}
    assert len(with_store_files) >= 3


def test_online_offsets_and_times_narrow_each_queue(
    spark: SparkSession, broker: RmqProcess, namesrv: RmqProcess
) -> None:
    records = expected(broker, ORDERS)
    starting = json.dumps({ORDERS: {BROKER: {"0": 2, "1": -1}}})
    ending = json.dumps({ORDERS: {BROKER: {"0": 5, "2": 3}}})
    df = online(spark, namesrv, ORDERS, startingOffsets=starting, endingOffsets=ending)

    def wanted(record: Record) -> bool:
        queue_id: int = record["queueId"]
        offset: int = record["queueOffset"]
        return {0: 2 <= offset < 5, 1: False, 2: offset < 3}.get(queue_id, True)

    assert without_pull_properties(exported_records(df)) == [r for r in records if wanted(r)]

    middle = records[len(records) // 2]["storeTimestamp"]
    since = online(spark, namesrv, ORDERS).where(f"storeTimestamp >= timestamp_millis({middle})")
    later = [r for r in records if r["storeTimestamp"] >= middle]
    assert without_pull_properties(exported_records(since)) == later


def test_the_offline_mode_reads_the_broker_store(spark: SparkSession, broker: RmqProcess) -> None:
    df = spark.read.format("rocketmq").option("brokerName", BROKER).load(str(store_root(broker)))
    assert exported_records(df.where(f"topic IN ('{ORDERS}', '{EVENTS}')")) == expected(
        broker, ORDERS, EVENTS
    )


# test_offline.py's self-join on one DataFrame stays in make test; this online one runs
# under make stress.
@pytest.mark.stress
def test_one_online_dataframe_queried_with_different_filters_and_a_self_join(
    spark: SparkSession, broker: RmqProcess, namesrv: RmqProcess
) -> None:
    """Spark plans one read per loaded DataFrame and runs every scan of it with the read it
    planned last: a filter the source took into its scan (here: fewer queues pulled) used
    to narrow the queries after it, and the other side of a join, as well."""
    df = online(spark, namesrv, f"{ORDERS},{EVENTS}")
    records = expected(broker, ORDERS, EVENTS)
    per_topic = Counter(record["topic"] for record in records)
    assert df.where(f"topic = '{ORDERS}'").count() == per_topic[ORDERS] > 0
    assert df.count() == len(records)
    assert df.where(f"topic = '{EVENTS}'").count() == per_topic[EVENTS] > 0
    middle = records[len(records) // 2]["storeTimestamp"]
    since = df.where(f"storeTimestamp >= timestamp_millis({middle})")
    assert since.count() == sum(1 for r in records if r["storeTimestamp"] >= middle)
    assert df.count() == len(records)

    orders = df.where(f"topic = '{ORDERS}'").groupBy("queueId").agg(F.count("*").alias("orders"))
    events = df.where(f"topic = '{EVENTS}'").groupBy("queueId").agg(F.count("*").alias("events"))
    joined = {
        row.queueId: (row.orders, row.events) for row in orders.join(events, "queueId").collect()
    }
    per_queue = Counter((r["topic"], r["queueId"]) for r in records)
    assert joined == {
        queue_id: (per_queue[ORDERS, queue_id], per_queue[EVENTS, queue_id])
        for queue_id in range(4)
    }
