"""The ``rocketmq`` streaming source: ``spark.readStream.format("rocketmq")`` on a running
cluster, as micro-batches of queue ranges.

    df = (spark.readStream.format("rocketmq").option("namesrv", "ns:9876")
          .option("topic", "Orders").option("maxOffsetsPerTrigger", "10000").load())

Rows are those of the batch online read (:mod:`rmq.spark.schema`).  Options:

* ``namesrv``, ``topic`` / ``topics`` (required), ``failOnDataLoss`` (true),
  ``pullBatchSize`` (32): as the batch read;
* ``startingOffsets``: ``latest`` (the default of a stream), ``earliest`` or the per-queue
  JSON; or ``startingTimestamp`` (epoch ms or ISO 8601): each queue from its first message
  stored at or after it.  Either applies only to a new query: a query restarted from its
  checkpoint continues where the checkpoint says;
* ``maxOffsetsPerTrigger``: at most this many messages per micro-batch, shared over the
  queues in proportion to what each has waiting (Spark's admission control: the default
  read limit is ``ReadMaxRows``; a ``Trigger.AvailableNow`` reads everything);
* ``minPartitions``: cut the queue ranges of a batch into at least this many partitions;
* ``group``: also commit each finished batch's offsets as this consumer group's offsets,
  so ``rmq group describe GROUP`` shows the stream's lag (the checkpoint stays the truth);
* ACL keys and TLS: :mod:`rmq.spark.access`.

The offsets in the checkpoint are :mod:`rmq.spark.streamoffsets`' JSON.  On the driver,
``latestOffset`` asks the name server for the topics' queues (new queues and brokers join
at their min offset) and each broker for its queues' min and max offsets
(:func:`rmq.spark.online.stream_spans`); a micro-batch's partitions are the queue ranges
between its start and end, read on the executors as batch partitions are
(:func:`rmq.spark.datasource.queue_batches`).  A batch is given by its two offsets alone,
so a replayed batch reads the same messages.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any, Final

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
)

from rmq.common.timeutil import parse_time
from rmq.spark.access import ClientAccess
from rmq.spark.online import (
    DEFAULT_PULL_BATCH_SIZE,
    DataLossError,
    QueueRange,
    commit_group_offsets,
    stream_spans,
    stream_start,
)
from rmq.spark.options import LATEST, ScanBounds, parse_bool, parse_int, parse_offsets, topic_list
from rmq.spark.streamoffsets import (
    Positions,
    advance,
    from_json,
    lost_queues,
    ranges,
    split,
    to_json,
    waiting_rows,
)

log = logging.getLogger("rmq.spark")

BATCH_ONLY_OPTIONS: Final = ("endingOffsets", "startTimestamp", "endTimestamp")


def positive_int(options: Any, name: str) -> int | None:
    """Option ``name`` as an integer of 1 or more (None when not given)."""
    text = options.get(name)
    if text is None:
        return None
    value = parse_int(text, name)
    if value < 1:
        raise ValueError(f"option {name} must be 1 or more, not {value}")
    return value


class StreamReader(DataSourceStreamReader):
    """Micro-batches of a running cluster's queues (see the module docstring)."""

    def __init__(self, options: Any) -> None:
        for name in BATCH_ONLY_OPTIONS:
            if options.get(name) is not None:
                raise ValueError(
                    f"option {name} is for batch reads; a stream takes startingOffsets or "
                    "startingTimestamp"
                )
        self.namesrv: str | None = options.get("namesrv")
        if not self.namesrv:
            raise ValueError("a stream reads a running cluster: give the option namesrv")
        self.topics = sorted(
            set(topic_list(options.get("topics")) + topic_list(options.get("topic")))
        )
        if not self.topics:
            raise ValueError("a stream needs the option topic")
        since = options.get("startingTimestamp")
        if since is not None and options.get("startingOffsets") is not None:
            raise ValueError("give startingOffsets or startingTimestamp, not both")
        self.since = None if since is None else parse_time(since)
        self.starting = parse_offsets(options.get("startingOffsets"), "startingOffsets", LATEST)
        self.max_rows = positive_int(options, "maxOffsetsPerTrigger")
        self.min_partitions = positive_int(options, "minPartitions")
        self.batch_size = positive_int(options, "pullBatchSize") or DEFAULT_PULL_BATCH_SIZE
        self.fail_on_data_loss = parse_bool(
            options.get("failOnDataLoss"), "failOnDataLoss", default=True
        )
        self.group: str | None = options.get("group") or None
        self.bounds = ScanBounds(topics=frozenset(self.topics))
        self.access = ClientAccess.of(options)
        self._committed: Positions | None = None

    # --- the driver ---------------------------------------------------------------------

    def initialOffset(self) -> dict[str, Any]:
        assert self.namesrv is not None
        self.access.apply()
        return to_json(
            stream_start(
                self.namesrv,
                self.topics,
                self.starting,
                self.since,
                fail_on_data_loss=self.fail_on_data_loss,
            )
        )

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadAllAvailable() if self.max_rows is None else ReadMaxRows(self.max_rows)

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        assert self.namesrv is not None
        begin = from_json(start)
        self.access.apply()
        self._commit_group(begin)  # every batch up to ``start`` is written
        spans = stream_spans(self.namesrv, self.topics)
        for topic, broker_name, queue_id in lost_queues(begin, spans):
            message = (
                f"queue {queue_id} of {topic} on {broker_name}: offsets "
                f"{begin[topic, broker_name, queue_id]}.."
                f"{spans[topic, broker_name, queue_id][0] - 1} are no longer stored"
            )
            if self.fail_on_data_loss:
                raise DataLossError(f"{message}; set failOnDataLoss=false to skip them")
            log.warning("%s; reading from the oldest stored", message)
        if isinstance(limit, ReadMinRows) and waiting_rows(begin, spans) < limit.min_rows:
            return start
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        return to_json(advance(begin, spans, max_rows))

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        assert self.namesrv is not None
        parts = split(ranges(from_json(start), from_json(end)), self.min_partitions)
        return [
            InputPartition(QueueRange(self.namesrv, topic, broker_name, queue_id, low, high))
            for (topic, broker_name, queue_id), low, high in parts
        ]

    def commit(self, end: dict[str, Any]) -> None:
        self.access.apply()
        self._commit_group(from_json(end))

    def _commit_group(self, positions: Positions) -> None:
        """Commit ``positions`` as the ``group``'s offsets, unless they were the last
        committed.  :meth:`latestOffset` commits its start too (every batch before it is
        written), so the group is current whenever Spark calls :meth:`commit`."""
        if self.group is None or self.namesrv is None or positions == self._committed:
            return
        try:
            commit_group_offsets(self.namesrv, self.group, positions)
            self._committed = positions
        except Exception as exc:  # the checkpoint holds the offsets; the group only shows them
            log.warning("cannot commit the offsets of group %s: %s", self.group, exc)

    # --- the executors ------------------------------------------------------------------

    def read(self, partition: InputPartition) -> Iterator[Any]:
        from rmq.spark.datasource import queue_batches

        self.access.apply()
        return queue_batches(
            partition.value,
            self.bounds,
            batch_size=self.batch_size,
            fail_on_data_loss=self.fail_on_data_loss,
        )
