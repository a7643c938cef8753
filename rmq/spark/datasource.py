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
  ``failOnDataLoss`` (true), ``pullBatchSize`` (32).

Filter pushdown: comparisons of ``topic`` (=, IN), ``storeTimestamp`` and ``commitLogOffset``
(=, <, <=, >, >=) are turned into :class:`~rmq.spark.options.ScanBounds`, which the planners
use to cut what is read and the tasks apply exactly, so Spark need not evaluate them again;
IN lists of timestamps or offsets only narrow the scan and stay with Spark.  Pushdown needs
``spark.sql.python.filterPushdown.enabled``, which :func:`register` switches on (Spark
refuses a reader with pushdown while it is off).
"""

from __future__ import annotations

import datetime
from abc import abstractmethod
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Final

from pyspark.sql import SparkSession
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    LessThan,
    LessThanOrEqual,
)
from pyspark.sql.types import StructType

from rmq.spark.offline import (
    DEFAULT_MAX_PARTITION_BYTES,
    CommitlogRange,
    plan_store,
    read_range,
)
from rmq.spark.online import DEFAULT_PULL_BATCH_SIZE, QueueRange, plan_queues, read_queue
from rmq.spark.options import (
    EARLIEST,
    Interval,
    ScanBounds,
    integer_interval,
    parse_bool,
    parse_ending_offsets,
    parse_int,
    parse_offsets,
    store_paths,
    timestamp_interval,
)
from rmq.spark.schema import SCHEMA, body_of, record_batches

FORMAT: Final = "rocketmq"
PUSHDOWN_CONF: Final = "spark.sql.python.filterPushdown.enabled"

_EPOCH: Final = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_COMPARISONS: Final[dict[type[Filter], str]] = {
    EqualTo: "=",
    GreaterThan: ">",
    GreaterThanOrEqual: ">=",
    LessThan: "<",
    LessThanOrEqual: "<=",
}


def register(spark: SparkSession) -> None:
    """Make ``format("rocketmq")`` available in ``spark`` (and turn filter pushdown on)."""
    spark.conf.set(PUSHDOWN_CONF, "true")
    spark.dataSource.register(RocketMQDataSource)


class RocketMQDataSource(DataSource):
    """Messages of RocketMQ store directories or of a running cluster."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> StructType:
        return SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        if schema != SCHEMA:
            raise ValueError("the rocketmq source has a fixed schema; do not set one")
        if self.options.get("namesrv"):
            return OnlineReader(self.options)
        return OfflineReader(self.options)


def _micros(value: datetime.datetime) -> int:
    """Microseconds since the epoch of a pushed timestamp literal (UTC when naive)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.UTC)
    return (value - _EPOCH) // datetime.timedelta(microseconds=1)


_Narrow = Callable[[ScanBounds, tuple[int, int]], ScanBounds]
_INTERVALS: Final[dict[tuple[str, ...], tuple[type, Callable[[Any], int], Interval, _Narrow]]] = {
    ("storeTimestamp",): (
        datetime.datetime,
        _micros,
        timestamp_interval,
        lambda bounds, interval: bounds.narrow(timestamps=interval),
    ),
    ("commitLogOffset",): (
        int,
        int,
        integer_interval,
        lambda bounds, interval: bounds.narrow(offsets=interval),
    ),
}
"""Column -> (literal type, literal to int, interval of a comparison, bounds narrowed)."""


class _BoundedReader(DataSourceReader):
    """What both modes share: the bounds from the options and the pushed filters."""

    def __init__(self, options: Any) -> None:
        self.bounds = ScanBounds.from_options(options)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if partition.value is None:  # Spark's stand-in when partitions() planned none
            return iter(())
        return self._read(partition.value)

    @abstractmethod
    def _read(self, part: Any) -> Iterator[Any]:
        """Arrow batches of one planned partition."""

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        for pushed in filters:
            if not self._push(pushed):
                yield pushed

    def _push(self, pushed: Filter) -> bool:
        """Narrow the bounds by one filter; True when the bounds now apply it exactly."""
        attribute = getattr(pushed, "attribute", None)
        value = getattr(pushed, "value", None)
        if attribute == ("topic",):
            if isinstance(pushed, EqualTo):
                topics: tuple[Any, ...] = (pushed.value,)
            elif isinstance(pushed, In):
                topics = tuple(pushed.value)
            else:
                return False
            if not all(isinstance(topic, str) for topic in topics):
                return False
            self.bounds = self.bounds.narrow(topics=frozenset(topics))
            return True
        if attribute not in _INTERVALS:
            return False
        kind, convert, interval, narrow = _INTERVALS[attribute]
        if isinstance(pushed, In):
            if not value or not all(isinstance(v, kind) for v in value):
                return False
            points = [convert(v) for v in value]
            covering = (interval(">=", min(points))[0], interval("<=", max(points))[1])
            self.bounds = narrow(self.bounds, covering)
            return False
        op = _COMPARISONS.get(type(pushed))
        if op is None or not isinstance(value, kind) or isinstance(value, bool):
            return False
        self.bounds = narrow(self.bounds, interval(op, convert(value)))
        return True


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

    def partitions(self) -> list[InputPartition]:
        if self.bounds.empty:
            return []
        assert self.bounds.topics is not None
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
        messages = read_queue(
            part,
            self.bounds,
            batch_size=self.batch_size,
            fail_on_data_loss=self.fail_on_data_loss,
        )
        return record_batches((msg.record, msg.broker_name, msg.body) for msg in messages)
