"""The ``rocketmq`` sink: ``df.write.format("rocketmq")`` and ``df.writeStream.format("rocketmq")``
send each row as a message through rmq's producer (:class:`rmq.client.producer.Producer`).

    (df.selectExpr("'Orders' AS topic", "CAST(value AS BINARY) AS body", "id AS keys")
       .write.format("rocketmq").mode("append").option("namesrv", "ns:9876").save())

Columns (others are ignored, so the source's rows can be written back as they are):

* ``body`` (binary or string, UTF-8): required;
* ``topic`` (string): the row's topic; the option ``topic`` is the default for rows without
  one, and one of the two is required;
* ``keys`` (string, keys separated by spaces, or array of strings), ``tags`` (string),
  ``properties`` (map of strings): optional.  Properties RocketMQ reserves for the system
  (``UNIQ_KEY``, ``KEYS``, ``MIN_OFFSET``...: what the source's rows carry) are dropped; the
  producer sets its own.

Options: ``namesrv`` (required), ``topic``, ``producerGroup`` (default ``rmq-spark``), ACL
keys and TLS (:mod:`rmq.spark.access`).

Each task sends its rows with one producer, up to :data:`IN_FLIGHT` sends at a time, and
fails when a send fails (after the producer's own retries), which fails the write or the
micro-batch.  Rows go to the topic's queues round-robin, in no particular order.

RocketMQ 4.x has no idempotent producer, so the sink is **at-least-once**: a task that is run
again (a retried task, a micro-batch replayed after a failure or a restart) sends its rows
again.  Each row therefore carries a key that is the same every time it is sent, in the user
property :data:`ROW_KEY_PROPERTY` (``SPARK_ROW_KEY``), so consumers can drop what they have
seen.  It is ``<query id>:<batch id>:<partition>:<row>`` in a stream (Spark's query id, kept
in the checkpoint, the micro-batch, the task's partition and the row's index in it) and
``<write id>:<partition>:<row>`` in a batch write (a fresh id per write).  A replay gives a
row the same key when the query sends the same rows in the same order in each partition,
which a query reading the ``rocketmq`` source without shuffles does.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter, WriterCommitMessage
from pyspark.sql.types import ArrayType, BinaryType, DataType, MapType, StringType, StructType

from rmq.client.message import Message
from rmq.client.producer import Producer
from rmq.common.msgconst import SYSTEM_PROPERTY_NAMES
from rmq.spark.access import ClientAccess

ROW_KEY_PROPERTY: Final = "SPARK_ROW_KEY"
DEFAULT_PRODUCER_GROUP: Final = "rmq-spark"
IN_FLIGHT: Final = 64
"""Sends a task keeps in flight at once."""

BATCH_ID: Final = "streaming.sql.batchId"
QUERY_ID: Final = "sql.streaming.queryId"
"""The local properties Spark gives the tasks of a micro-batch."""

_STRING = StringType()
_COLUMN_TYPES: Final[Mapping[str, tuple[DataType, ...]]] = {
    "topic": (_STRING,),
    "body": (BinaryType(), _STRING),
    "keys": (_STRING, ArrayType(_STRING), ArrayType(_STRING, containsNull=False)),
    "tags": (_STRING,),
    "properties": (MapType(_STRING, _STRING), MapType(_STRING, _STRING, valueContainsNull=False)),
}


@dataclass(frozen=True)
class SinkOptions:
    """A write's options, checked against the rows' schema on the driver."""

    namesrv: str
    topic: str | None
    group: str
    columns: tuple[str, ...]
    access: ClientAccess

    @classmethod
    def of(cls, options: Any, schema: StructType) -> SinkOptions:
        namesrv = options.get("namesrv")
        if not namesrv:
            raise ValueError("writing to RocketMQ needs the option namesrv")
        fields = {field.name: field.dataType for field in schema.fields}
        if "body" not in fields:
            raise ValueError("the rows to send need a body column (binary or string)")
        topic = options.get("topic") or None
        if topic is None and "topic" not in fields:
            raise ValueError("give the rows a topic column or the option topic")
        for name, allowed in _COLUMN_TYPES.items():
            if name in fields and fields[name] not in allowed:
                kinds = " or ".join(sorted({t.simpleString() for t in allowed}))
                raise ValueError(
                    f"column {name} is {fields[name].simpleString()}; it must be {kinds}"
                )
        columns = tuple(name for name in _COLUMN_TYPES if name in fields)
        group = options.get("producerGroup") or DEFAULT_PRODUCER_GROUP
        return cls(namesrv, topic, group, columns, ClientAccess.of(options))


@dataclass(frozen=True)
class SentRows(WriterCommitMessage):
    """What one task sent."""

    partition: int
    rows: int


def message_of(values: Mapping[str, Any], default_topic: str | None, row_key: str) -> Message:
    """The message of one row (its columns by name), keyed ``row_key``."""
    topic = values.get("topic") or default_topic
    if not topic:
        raise ValueError(f"row {row_key} has no topic and the write no topic option")
    body = values["body"]
    if body is None:
        raise ValueError(f"row {row_key} has a null body")
    properties = {
        name: value
        for name, value in (values.get("properties") or {}).items()
        if value is not None and name not in SYSTEM_PROPERTY_NAMES
    }
    properties[ROW_KEY_PROPERTY] = row_key
    keys = values.get("keys")
    if isinstance(keys, list):
        keys = [key for key in keys if key]
    return Message(
        topic,
        body.encode() if isinstance(body, str) else bytes(body),
        tags=values.get("tags") or None,
        keys=keys or None,
        properties=properties,
    )


def send_rows(options: SinkOptions, rows: Iterable[Any], key_prefix: str) -> int:
    """Send ``rows`` (pyspark Rows) with a producer of its own; the number sent.  Raises
    when a send fails."""
    options.access.apply()
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(_send_rows(options, rows, key_prefix))
    finally:
        loop.close()


async def _send_rows(options: SinkOptions, rows: Iterable[Any], key_prefix: str) -> int:
    sent = 0
    pending: set[asyncio.Task[Any]] = set()
    async with Producer(options.group, options.namesrv) as producer:
        try:
            for index, row in enumerate(rows):
                values = {name: row[name] for name in options.columns}
                message = message_of(values, options.topic, f"{key_prefix}:{index}")
                pending.add(asyncio.ensure_future(_send(producer, message, index)))
                if len(pending) >= IN_FLIGHT:
                    done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                    sent += _count(done)
            if pending:
                done, pending = await asyncio.wait(pending)
                sent += _count(done)
        finally:
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
    return sent


async def _send(producer: Producer, message: Message, index: int) -> None:
    try:
        await producer.send(message)
    except Exception as exc:
        raise RuntimeError(f"sending row {index} to topic {message.topic} failed: {exc}") from exc


def _count(done: set[asyncio.Task[Any]]) -> int:
    for task in done:
        task.result()  # the first failure fails the task
    return len(done)


def _partition() -> int:
    context = TaskContext.get()
    return 0 if context is None else context.partitionId()


class BatchWriter(DataSourceWriter):
    """``df.write``: keys ``<write id>:<partition>:<row>``."""

    def __init__(self, options: Any, schema: StructType) -> None:
        self.sink = SinkOptions.of(options, schema)
        self.write_id = uuid.uuid4().hex

    def write(self, iterator: Iterator[Any]) -> SentRows:
        partition = _partition()
        return SentRows(partition, send_rows(self.sink, iterator, f"{self.write_id}:{partition}"))


class StreamWriter(DataSourceStreamWriter):
    """``df.writeStream``: keys ``<query id>:<batch id>:<partition>:<row>``."""

    def __init__(self, options: Any, schema: StructType) -> None:
        self.sink = SinkOptions.of(options, schema)
        self.fallback_id = uuid.uuid4().hex

    def write(self, iterator: Iterator[Any]) -> SentRows:
        context = TaskContext.get()
        partition = 0 if context is None else context.partitionId()
        query = batch = None
        if context is not None:
            query, batch = context.getLocalProperty(QUERY_ID), context.getLocalProperty(BATCH_ID)
        prefix = f"{query or self.fallback_id}:{batch if batch is not None else '-'}:{partition}"
        return SentRows(partition, send_rows(self.sink, iterator, prefix))
