"""The ``rocketmq`` Structured Streaming source (rmq.spark.stream) against Apache's cluster and
against rmq's, the same scenario on both: a topic of 4 queues, messages with keys sent through
rmq's producer, a stream capped by ``maxOffsetsPerTrigger`` into Parquet with a checkpoint
(several micro-batches), more messages, the stream started again from its checkpoint.  The
files then hold every message sent exactly once, at the (brokerName, queueId, queueOffset)
its send result gave, with its body and keys.

One local[1] SparkSession for the module; each cluster streams for a few seconds.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="the Spark row needs pyspark: pip install -e '.[spark]'")
pytest.importorskip("pyarrow", reason="the Spark row needs pyarrow: pip install -e '.[spark]'")

from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from rmq.client.api import SendResult
from tests.conformance.clusters import Cluster
from tests.conformance.test_rmq_tools import rmq_cli
from tests.spark.streams import send, wait_for

pytestmark = pytest.mark.timeout(300)

SECTION = "Spark streaming source against both clusters"
CASE = (
    "readStream from a 4-queue topic, capped micro-batches, restart from the checkpoint: "
    "every message once with its position, body and keys"
)
TOPIC = "ConfSparkStream"
CAP = 16
"""maxOffsetsPerTrigger: 40 messages take 3 micro-batches, the restart's 20 take 2."""

Row = tuple[str, int, int, bytes, tuple[str, ...]]
"""(brokerName, queueId, queueOffset, body, keys)."""


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    from rmq.spark.session import build_session

    session = build_session(
        "local[1]", shuffle_partitions=1, conf={"spark.ui.showConsoleProgress": "false"}
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def _expected(results: list[SendResult], numbers: range) -> list[Row]:
    return [
        (
            r.message_queue.broker_name,
            r.message_queue.queue_id,
            r.queue_offset,
            f"message {n}".encode(),
            (f"k{n}",),
        )
        for r, n in zip(results, numbers, strict=True)
    ]


def _run(
    spark: SparkSession, cluster: Cluster, out: Path, checkpoint: Path, total: int
) -> dict[int, int]:
    """Streams until this run has read ``total`` rows; returns its rows per micro-batch."""
    df = (
        spark.readStream.format("rocketmq")
        .option("namesrv", cluster.namesrv_addr)
        .option("topic", TOPIC)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(CAP))
        .load()
    )
    query: StreamingQuery = (
        df.select("brokerName", "queueId", "queueOffset", "body", "keys")
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime="100 milliseconds")
        .start()
    )
    try:
        wait_for(
            f"{total} rows from {cluster.kind}",
            lambda: (
                sum(p.numInputRows for p in query.recentProgress) >= total
                or query.exception() is not None
            ),
        )
        assert query.exception() is None, query.exception()
    finally:
        query.stop()
    return {p.batchId: p.numInputRows for p in query.recentProgress if p.numInputRows}


def _scenario(spark: SparkSession, cluster: Cluster, root: Path) -> tuple[list[Row], list[Row]]:
    rmq_cli(cluster, "topic", "create", TOPIC, "-r", "4", "-w", "4")
    out, checkpoint = root / "out", root / "checkpoint"
    first = _expected(send(cluster.namesrv_addr, TOPIC, range(40)), range(40))
    assert len({(q, b) for b, q, *_ in first}) == 4, "the sends did not reach all 4 queues"
    batches = _run(spark, cluster, out, checkpoint, 40)
    assert len(batches) >= 2 and max(batches.values()) <= CAP, batches
    more = _expected(send(cluster.namesrv_addr, TOPIC, range(40, 60)), range(40, 60))
    again = _run(spark, cluster, out, checkpoint, 20)
    assert len(again) >= 2 and max(again.values()) <= CAP and sum(again.values()) == 20, again
    rows = spark.read.parquet(str(out)).collect()
    read = [
        (r.brokerName, r.queueId, r.queueOffset, bytes(r.body), tuple(r.keys or ())) for r in rows
    ]
    return sorted(first + more), sorted(read)


@pytest.mark.parametrize(
    "kind",
    [
        pytest.param(kind, marks=pytest.mark.matrix(SECTION, CASE, label), id=f"stream-{kind}")
        for kind, label in (("apache", "Apache"), ("rmq", "rmq"))
    ],
)
def test_spark_stream_reads_each_message_once(
    kind: str, request: pytest.FixtureRequest, spark: SparkSession, tmp_path: Path
) -> None:
    cluster: Cluster = request.getfixturevalue(kind)
    sent, read = _scenario(spark, cluster, tmp_path)
    duplicates = [row for row, n in Counter(read).items() if n > 1]
    assert not duplicates, duplicates[:5]
    assert read == sent, (len(read), len(sent), sorted(set(sent) ^ set(read))[:5])
