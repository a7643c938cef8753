"""Structured Streaming with the ``rocketmq`` format against a real ``rmq broker``:

* the source, under a running producer, into a Parquet sink with a checkpoint: every message
  exactly once by (brokerName, queueId, queueOffset) over several micro-batches capped by
  ``maxOffsetsPerTrigger``, also across a stop and a restart from the checkpoint; the
  ``group`` option commits the offsets reached as the group's consumer offsets; queues
  added to the topic while the stream runs are read from their first message;
* the sink, batch and stream: the rows come back from the broker with their columns and a
  ``SPARK_ROW_KEY`` made of the write's id (the stream's query id and micro-batch), the
  partition and the row;
* ``rmq spark-export --follow`` into Parquet under a running producer, its driver killed with
  SIGKILL mid-stream and started again from its checkpoint (once here, four times under
  ``make stress``): a line per micro-batch, exit 130 on SIGINT after the running batch, every
  acknowledged message in the files exactly once, the checkpoint ending with a committed
  batch at the offsets last reported (:func:`tests.spark.streams.follow_through_kills`; the
  same on a standalone cluster is test_cluster.py's).
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from rmq.client.admin import AdminClient
from rmq.client.api import SendResult
from rmq.client.consumer import MessageQueue, PullConsumer, PullStatus
from rmq.remoting.bodies import TopicConfig
from rmq.spark.sink import ROW_KEY_PROPERTY
from tests.procs import RmqProcess, RmqProcesses
from tests.spark.streams import (
    Sender,
    follow_through_kills,
    positions,
    read_positions,
    send,
    wait_for,
)

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]

BROKER = "stream-broker"
GROUP = "spark-stream-group"


@pytest.fixture(scope="module")
def broker(module_processes: RmqProcesses, namesrv: RmqProcess) -> Iterator[RmqProcess]:
    process = module_processes.start_broker(BROKER, namesrv=namesrv)
    yield process
    process.stop_cleanly()


def rows_per_batch(query: StreamingQuery) -> dict[int, int]:
    return {p.batchId: p.numInputRows for p in query.recentProgress if p.numInputRows}


def batches_at_least(query: StreamingQuery, count: int) -> Callable[[], bool]:
    """A condition for `wait_for`: ``count`` batches done (a query that failed raises)."""

    def done() -> bool:
        if query.exception() is not None:
            raise AssertionError(f"the query failed: {query.exception()}")
        return len(rows_per_batch(query)) >= count

    return done


def pull_all(namesrv: str, topic: str) -> list[Any]:
    """Every message of ``topic``, pulled queue by queue."""

    async def run() -> list[Any]:
        messages = []
        async with PullConsumer("spark-stream-check", namesrv) as consumer:
            for mq in await consumer.fetch_subscribe_message_queues(topic):
                offset = 0
                while True:
                    result = await consumer.pull(mq, offset, 32)
                    if result.status is not PullStatus.FOUND:
                        break
                    messages += result.messages
                    offset = result.next_begin_offset
        return messages

    return asyncio.run(asyncio.wait_for(run(), 60))


def group_offsets(namesrv: str, topic: str) -> dict[MessageQueue, tuple[int, int]]:
    """(committed offset of GROUP, max offset) per queue of ``topic``."""

    async def run() -> dict[MessageQueue, tuple[int, int]]:
        async with PullConsumer(GROUP, namesrv) as consumer:
            return {
                mq: (await consumer.fetch_consume_offset(mq), await consumer.max_offset(mq))
                for mq in await consumer.fetch_subscribe_message_queues(topic)
            }

    return asyncio.run(asyncio.wait_for(run(), 30))


def test_a_stream_reads_every_message_once_in_capped_batches_and_after_a_restart(
    spark: SparkSession, broker: RmqProcess, namesrv: RmqProcess, tmp_path: Path
) -> None:
    topic = "StreamOrders"
    before = send(namesrv.addr, topic, range(50))
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"

    def start(**options: str) -> StreamingQuery:
        df = (
            spark.readStream.format("rocketmq")
            .option("namesrv", namesrv.addr)
            .option("topic", topic)
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", "25")
            .options(**options)
            .load()
        )
        return (
            df.select("brokerName", "queueId", "queueOffset", "body")
            .writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(checkpoint))
            .trigger(processingTime="200 milliseconds")
            .start()
        )

    sender = Sender(namesrv.addr, topic, range(50, 100), pause=0.02)
    query = start()
    sender.start()
    try:
        # Each batch writes a Parquet file: seconds apiece on a loaded machine.
        wait_for("three micro-batches", batches_at_least(query, 3), timeout=240)
    finally:
        query.stop()
    first = rows_per_batch(query)  # a batch the stop cut short is not among them
    assert all(rows <= 25 for rows in first.values()), first
    read_first = read_positions(spark, out)
    assert len(read_first) == len(set(read_first)) > 0

    sent = before + sender.finish()
    restarted = start(group=GROUP)
    try:
        restarted.processAllAvailable()
        second = rows_per_batch(restarted)
    finally:
        restarted.stop()
    assert min(second) > max(first), "the restart continues with the next batch"
    assert all(rows <= 25 for rows in second.values()), second
    assert sum(first.values()) + sum(second.values()) == 100
    read_all = read_positions(spark, out)
    duplicates = [p for p, n in Counter(read_all).items() if n > 1]
    assert duplicates == []
    assert set(read_all) == positions(sent)
    bodies = {bytes(row.body) for row in spark.read.parquet(str(out)).select("body").collect()}
    assert bodies == {f"message {n}".encode() for n in range(100)}
    committed = group_offsets(namesrv.addr, topic)
    assert committed and all(mine == high for mine, high in committed.values()), committed


def set_queues(namesrv: str, broker: RmqProcess, topic: str, queues: int) -> None:
    async def run() -> None:
        async with AdminClient(namesrv) as admin:
            config = TopicConfig(topic_name=topic, read_queue_nums=queues, write_queue_nums=queues)
            await admin.create_or_update_topic(config, broker_addr=broker.addr)

    asyncio.run(asyncio.wait_for(run(), 30))


def test_queues_added_to_a_topic_join_the_stream(
    spark: SparkSession, broker: RmqProcess, namesrv: RmqProcess, tmp_path: Path
) -> None:
    topic = "StreamGrowing"
    set_queues(namesrv.addr, broker, topic, 2)
    sent = send(namesrv.addr, topic, range(20))
    query = (
        spark.readStream.format("rocketmq")
        .option("namesrv", namesrv.addr)
        .option("topic", topic)
        .option("startingOffsets", "earliest")
        .load()
        .select("brokerName", "queueId", "queueOffset")
        .writeStream.format("memory")
        .queryName("stream_growing")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .start()
    )
    try:
        query.processAllAvailable()
        set_queues(namesrv.addr, broker, topic, 4)
        more: list[SendResult] = []

        def sent_to_new_queues() -> bool:
            more.extend(send(namesrv.addr, topic, range(4)))
            return {r.message_queue.queue_id for r in more} >= {2, 3}

        wait_for("sends to the new queues", sent_to_new_queues)
        query.processAllAvailable()
        rows = spark.table("stream_growing").collect()
    finally:
        query.stop()
    read = [(row.brokerName, row.queueId, row.queueOffset) for row in rows]
    assert len(read) == len(set(read))
    assert set(read) == positions(sent) | positions(more)
    assert {queue_id for _broker, queue_id, _offset in read} == {0, 1, 2, 3}


def test_the_sink_sends_rows_with_a_key_per_row(
    spark: SparkSession, broker: RmqProcess, namesrv: RmqProcess
) -> None:
    topic = "StreamSink"
    rows = [
        (f"body {n}".encode(), [f"key-{n}", "all"], f"Tag{n % 2}", {"n": str(n), "UNIQ_KEY": "x"})
        for n in range(40)
    ]
    df = spark.createDataFrame(
        rows, "body binary, keys array<string>, tags string, properties map<string,string>"
    ).repartition(3)
    writer = df.write.format("rocketmq").mode("append")
    writer.option("namesrv", namesrv.addr).option("topic", topic).save()
    messages = pull_all(namesrv.addr, topic)
    assert len(messages) == 40
    by_n = {int(m.properties["n"]): m for m in messages}
    assert sorted(by_n) == list(range(40))
    for n, message in by_n.items():
        assert message.body == f"body {n}".encode()
        assert message.keys == [f"key-{n}", "all"]
        assert message.tags == f"Tag{n % 2}"
        assert message.properties["UNIQ_KEY"] != "x"  # the producer's own
    keys = [m.properties[ROW_KEY_PROPERTY].split(":") for m in messages]
    assert len({tuple(k) for k in keys}) == 40
    assert len({k[0] for k in keys}) == 1, "one write id"
    assert {k[1] for k in keys} == {"0", "1", "2"}
    per_partition = Counter(k[1] for k in keys)
    for partition, count in per_partition.items():
        assert sorted(int(k[2]) for k in keys if k[1] == partition) == list(range(count))


def test_a_stream_into_the_sink_keys_rows_by_query_and_batch(
    spark: SparkSession, broker: RmqProcess, namesrv: RmqProcess, tmp_path: Path
) -> None:
    source, mirror = "StreamSource", "StreamMirror"
    send(namesrv.addr, source, range(30))
    df: DataFrame = (
        spark.readStream.format("rocketmq")
        .option("namesrv", namesrv.addr)
        .option("topic", source)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "20")
        .load()
        .drop("topic")
    )
    query = (
        df.writeStream.format("rocketmq")
        .option("namesrv", namesrv.addr)
        .option("topic", mirror)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .start()
    )
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    messages = pull_all(namesrv.addr, mirror)
    assert sorted(m.body for m in messages) == sorted(f"message {n}".encode() for n in range(30))
    assert sorted(m.keys for m in messages) == sorted([f"k{n}"] for n in range(30))
    keys = [m.properties[ROW_KEY_PROPERTY].split(":") for m in messages]
    assert {k[0] for k in keys} == {query.id}
    assert {k[1] for k in keys} == {"0", "1"}  # 20 + 10 rows
    assert len({tuple(k) for k in keys}) == 30


STRESS = pytest.mark.skipif(
    os.environ.get("RMQ_STRESS") != "1", reason="set RMQ_STRESS=1 (make stress)"
)


# Two Spark driver JVMs, one killed: a minute and a half of a quiet machine's two cores, so
# under make stress; make test's sample of a restarted stream is the capped-batches test.
@pytest.mark.stress
@STRESS
@pytest.mark.timeout(600)
def test_a_followed_export_killed_mid_stream_writes_every_message_once(
    spark: SparkSession, broker: RmqProcess, namesrv: RmqProcess, tmp_path: Path
) -> None:
    follow_through_kills(
        spark, namesrv.addr, "StreamFollow", tmp_path, kills=1, extra=("--master", "local[1]")
    )


@pytest.mark.stress
@STRESS
@pytest.mark.timeout(1200)
def test_a_followed_export_killed_again_and_again_writes_every_message_once(
    spark: SparkSession, broker: RmqProcess, namesrv: RmqProcess, tmp_path: Path
) -> None:
    """Four kills, each up to two seconds after the second batch of its run."""
    follow_through_kills(
        spark,
        namesrv.addr,
        "StreamFollowStress",
        tmp_path,
        kills=4,
        extra=("--master", "local[2]"),
        jitter=2.0,
    )


@pytest.mark.stress
@pytest.mark.skipif(os.environ.get("RMQ_STRESS") != "1", reason="set RMQ_STRESS=1 (make stress)")
def test_a_long_stream_under_load_loses_and_repeats_nothing(
    spark: SparkSession, broker: RmqProcess, namesrv: RmqProcess, tmp_path: Path
) -> None:
    """Several stops and restarts while 3000 messages arrive."""
    topic = "StreamLong"
    sent = send(namesrv.addr, topic, range(10))
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    sender = Sender(namesrv.addr, topic, range(10, 3000), pause=0.005)
    sender.start()
    for round_ in range(6):
        query = (
            spark.readStream.format("rocketmq")
            .option("namesrv", namesrv.addr)
            .option("topic", topic)
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", "150")
            .option("minPartitions", "3")
            .load()
            .select("brokerName", "queueId", "queueOffset")
            .writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(checkpoint))
            .trigger(processingTime="100 milliseconds")
            .start()
        )
        try:
            if round_ == 5:
                sent += sender.finish()
                query.processAllAvailable()
            else:
                wait_for("two batches", batches_at_least(query, 2), timeout=240)
        finally:
            query.stop()
    everything = read_positions(spark, out)
    assert len(everything) == len(set(everything))
    assert set(everything) == positions(sent)
