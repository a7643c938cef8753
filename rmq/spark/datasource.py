"""The ``rocketmq`` Spark data source (Spark 4 Python Data Source API).

    from rmq.spark.datasource import register
    register(spark)
    df = spark.read.format("rocketmq").load("/data/broker-a/store")          # offline
    df = (spark.read.format("rocketmq").option("namesrv", "ns:9876")         # online
          .option("topic", "TopicA").load())

Rows follow :mod:`rmq.spark.schema` (the message record of docs/cli.md).  Which mode a read
uses depends on its options:

* offline (a store directory as ``path``, or several with ``load([dir, dir])``): commitlog
  byte ranges planned and read by :mod:`rmq.spark.offline`; options ``topics``,
  ``startTimestamp`` / ``endTimestamp`` (epoch ms or ISO 8601), ``startOffset`` /
  ``endOffset`` (commitlog offsets), ``maxPartitionBytes`` (default 128 MiB) and
  ``brokerName`` (the value of that column, null by default: a store does not know its
  broker's name);
* online (``namesrv``): one partition per queue, pulled by :mod:`rmq.spark.online`; options
  ``topic`` (required; several comma-separated), ``startingOffsets`` (default ``earliest``),
  ``endingOffsets`` (default ``latest``), ``startTimestamp`` / ``endTimestamp``,
  ``failOnDataLoss`` (true), ``pullBatchSize`` (32), and ACL keys and TLS
  (:mod:`rmq.spark.access`).

Filters (``where``) are not pushed into the scan; Spark evaluates them on the rows read.
Spark (4.0 to 4.3 at least) keeps one planned read, the reader with its partitions, per
loaded DataFrame rather than per query, and runs every scan of that DataFrame with the read
planned last: a filter pushed into one query would narrow the next query on the same
DataFrame too, and both sides of a self-join would read what one side asked for.  The
options are fixed per DataFrame, so they are what narrows the scan (docs/spark.md, "What the
options save").

Streams (``spark.readStream``) are :mod:`rmq.spark.stream`'s; writes (``df.write`` and
``df.writeStream``: rows sent to topics through rmq's producer) are :mod:`rmq.spark.sink`'s.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator
from typing import Any, Final

from pyspark.sql import SparkSession
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
)
from pyspark.sql.types import StructType

from rmq.spark.access import ClientAccess
from rmq.spark.offline import (
    DEFAULT_MAX_PARTITION_BYTES,
    CommitlogRange,
    plan_store,
    read_range,
)
from rmq.spark.online import DEFAULT_PULL_BATCH_SIZE, QueueRange, plan_queues, read_queue
from rmq.spark.options import (
    EARLIEST,
    ScanBounds,
    parse_bool,
    parse_ending_offsets,
    parse_int,
    parse_offsets,
    store_paths,
)
from rmq.spark.schema import SCHEMA, body_of, record_batches

FORMAT: Final = "rocketmq"


def register(spark: SparkSession) -> None:
    """Make ``format("rocketmq")`` available in ``spark``."""
    spark.dataSource.register(RocketMQDataSource)


class RocketMQDataSource(DataSource):
    """Messages of RocketMQ store directories or of a running cluster."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> StructType:
        return SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        _check_schema(schema)
        if self.options.get("namesrv"):
            return OnlineReader(self.options)
        return OfflineReader(self.options)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        from rmq.spark.stream import StreamReader

        _check_schema(schema)
        return StreamReader(self.options)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from rmq.spark.sink import BatchWriter

        return BatchWriter(self.options, schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from rmq.spark.sink import StreamWriter

        return StreamWriter(self.options, schema)


def _check_schema(schema: StructType) -> None:
    if schema != SCHEMA:
        raise ValueError("the rocketmq source has a fixed schema; do not set one")


def queue_batches(
    part: QueueRange, bounds: ScanBounds, *, batch_size: int, fail_on_data_loss: bool
) -> Iterator[Any]:
    """Arrow batches of the messages of one queue range (batch and stream reads)."""
    messages = read_queue(part, bounds, batch_size=batch_size, fail_on_data_loss=fail_on_data_loss)
    return record_batches((msg.record, msg.broker_name, msg.body) for msg in messages)


class _BoundedReader(DataSourceReader):
    """What both modes share: the bounds from the options."""

    def __init__(self, options: Any) -> None:
        self.bounds = ScanBounds.from_options(options)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if partition.value is None:  # Spark's stand-in when partitions() planned none
            return iter(())
        return self._read(partition.value)

    @abstractmethod
    def _read(self, part: Any) -> Iterator[Any]:
        """Arrow batches of one planned partition."""


class OfflineReader(_BoundedReader):
    """Reads store directories (see :mod:`rmq.spark.offline`)."""

    def __init__(self, options: Any) -> None:
        super().__init__(options)
        self.paths = store_paths(options)
        if not self.paths:
            raise ValueError("give a store directory (load(path)) or a name server (namesrv)")
        self.max_partition_bytes = parse_int(
            options.get("maxPartitionBytes", str(DEFAULT_MAX_PARTITION_BYTES)),
            "maxPartitionBytes",
        )
        self.broker_name: str | None = options.get("brokerName")

    def partitions(self) -> list[InputPartition]:
        return [
            InputPartition(part)
            for path in self.paths
            for part in plan_store(path, self.bounds, self.max_partition_bytes)
        ]

    def _read(self, part: CommitlogRange) -> Iterator[Any]:
        broker_name = self.broker_name
        return record_batches(
            (record, broker_name, body_of(record)) for record in read_range(part, self.bounds)
        )


class OnlineReader(_BoundedReader):
    """Pulls from the brokers of a cluster (see :mod:`rmq.spark.online`)."""

    def __init__(self, options: Any) -> None:
        super().__init__(options)
        if self.bounds.topics is None:
            raise ValueError("an online read needs the option topic")
        self.namesrv: str = options["namesrv"]
        self.starting = parse_offsets(options.get("startingOffsets"), "startingOffsets", EARLIEST)
        self.ending = parse_ending_offsets(options.get("endingOffsets"))
        self.batch_size = parse_int(
            options.get("pullBatchSize", str(DEFAULT_PULL_BATCH_SIZE)), "pullBatchSize"
        )
        self.fail_on_data_loss = parse_bool(
            options.get("failOnDataLoss"), "failOnDataLoss", default=True
        )
        self.access = ClientAccess.of(options)

    def partitions(self) -> list[InputPartition]:
        if self.bounds.empty:
            return []
        assert self.bounds.topics is not None
        self.access.apply()
        ranges = plan_queues(
            self.namesrv,
            sorted(self.bounds.topics),
            self.starting,
            self.ending,
            self.bounds,
            fail_on_data_loss=self.fail_on_data_loss,
        )
        return [InputPartition(part) for part in ranges]

    def _read(self, part: QueueRange) -> Iterator[Any]:
        self.access.apply()
        return queue_batches(
            part,
            self.bounds,
            batch_size=self.batch_size,
            fail_on_data_loss=self.fail_on_data_loss,
        )
