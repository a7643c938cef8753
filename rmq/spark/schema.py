"""The rows of the ``rocketmq`` data source: the message record of docs/cli.md as Spark columns.

Columns, in the order of ``rmq.common.jsonrecord.to_record_dict`` (the one message record of
``rmq consume``, ``rmq inspect`` exports and these rows)::

    topic string, brokerName string, queueId int, queueOffset bigint, commitLogOffset bigint,
    msgId string, offsetMsgId string, tags string, keys array<string>,
    properties map<string,string>, body binary, bodyCrc int, flag int, sysFlag int,
    bornTimestamp timestamp, storeTimestamp timestamp, bornHost string, storeHost string,
    reconsumeTimes int, preparedTransactionOffset bigint

``body`` is the decompressed body as bytes (JSON's ``bodyEncoding`` is not needed: a binary
column holds any body), the timestamps are Spark timestamps (UTC instants) of the stored
milliseconds.  The column names of the rocketmq-spark connector (``topic``, ``flag``,
``body``, ``properties``, ``brokerName``, ``queueId``, ``queueOffset``, ``bornTimestamp``,
``storeTimestamp``) mean the same here, so its jobs read these rows unchanged except that
``properties`` is a map instead of a string.

:class:`RecordColumns` turns decoded records into Arrow record batches of exactly
:data:`ARROW_SCHEMA`, which is what Spark's Python data source worker accepts without
converting row by row: one Python list per column, one ``pyarrow.array`` per column per batch.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from typing import Any, Final

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from rmq.common.compression import CompressionError
from rmq.common.message import MessageRecord

log = logging.getLogger("rmq.spark")

BATCH_ROWS: Final = 4096

_COLUMNS: Final[tuple[tuple[str, DataType], ...]] = (
    ("topic", StringType()),
    ("brokerName", StringType()),
    ("queueId", IntegerType()),
    ("queueOffset", LongType()),
    ("commitLogOffset", LongType()),
    ("msgId", StringType()),
    ("offsetMsgId", StringType()),
    ("tags", StringType()),
    ("keys", ArrayType(StringType())),
    ("properties", MapType(StringType(), StringType())),
    ("body", BinaryType()),
    ("bodyCrc", IntegerType()),
    ("flag", IntegerType()),
    ("sysFlag", IntegerType()),
    ("bornTimestamp", TimestampType()),
    ("storeTimestamp", TimestampType()),
    ("bornHost", StringType()),
    ("storeHost", StringType()),
    ("reconsumeTimes", IntegerType()),
    ("preparedTransactionOffset", LongType()),
)

SCHEMA: Final = StructType([StructField(name, data_type) for name, data_type in _COLUMNS])
COLUMN_NAMES: Final = tuple(SCHEMA.fieldNames())
ARROW_SCHEMA: Final = to_arrow_schema(SCHEMA, timezone="UTC")

_MICROS_PER_MILLI: Final = 1000


def body_of(record: MessageRecord) -> bytes | None:
    """The decompressed body; None (with a warning) when its codec cannot be read."""
    try:
        return record.decompressed_body()
    except CompressionError as exc:
        log.warning(
            "commitlog offset %d: the body cannot be decompressed (%s); exported as null",
            record.physical_offset,
            exc,
        )
        return None


class RecordColumns:
    """Collects rows column by column and hands them out as Arrow record batches."""

    __slots__ = ("_columns",)

    def __init__(self) -> None:
        self._columns: list[list[Any]] = [[] for _ in COLUMN_NAMES]

    def __len__(self) -> int:
        return len(self._columns[0])

    def add(self, record: MessageRecord, broker_name: str | None, body: bytes | None) -> None:
        """Append one row: ``record`` as the codec decoded it, its decompressed ``body``."""
        (
            topic,
            broker,
            queue_id,
            queue_offset,
            commit_log_offset,
            msg_id,
            offset_msg_id,
            tags,
            keys,
            properties,
            bodies,
            body_crc,
            flag,
            sys_flag,
            born_timestamp,
            store_timestamp,
            born_host,
            store_host,
            reconsume_times,
            prepared_transaction_offset,
        ) = self._columns
        topic.append(record.topic)
        broker.append(broker_name)
        queue_id.append(record.queue_id)
        queue_offset.append(record.queue_offset)
        commit_log_offset.append(record.physical_offset)
        msg_id.append(record.msg_id)
        offset_msg_id.append(record.offset_msg_id)
        tags.append(record.tags)
        keys.append(record.keys)
        properties.append(list(record.properties.items()))
        bodies.append(body)
        body_crc.append(record.body_crc)
        flag.append(record.flag)
        sys_flag.append(record.sys_flag)
        born_timestamp.append(record.born_timestamp * _MICROS_PER_MILLI)
        store_timestamp.append(record.store_timestamp * _MICROS_PER_MILLI)
        born_host.append(record.born_host)
        store_host.append(record.store_host)
        reconsume_times.append(record.reconsume_times)
        prepared_transaction_offset.append(record.prepared_transaction_offset)

    def take_batch(self) -> pa.RecordBatch:
        """The rows collected so far as one batch; the collector starts empty again."""
        arrays = [
            pa.array(values, type=field.type)
            for values, field in zip(self._columns, ARROW_SCHEMA, strict=True)
        ]
        self._columns = [[] for _ in COLUMN_NAMES]
        return pa.RecordBatch.from_arrays(arrays, schema=ARROW_SCHEMA)


def record_batches(
    rows: Iterable[tuple[MessageRecord, str | None, bytes | None]],
    batch_rows: int = BATCH_ROWS,
) -> Iterator[pa.RecordBatch]:
    """Arrow batches of up to ``batch_rows`` rows from (record, broker name, body) triples."""
    columns = RecordColumns()
    for record, broker_name, body in rows:
        columns.add(record, broker_name, body)
        if len(columns) >= batch_rows:
            yield columns.take_batch()
    if len(columns):
        yield columns.take_batch()
