"""A followed export (``rmq spark-export -n NS -t T --follow --checkpoint DIR --out DIR``): a
Structured Streaming query from the ``rocketmq`` source (:mod:`rmq.spark.stream`) into files,
run until it fails or is interrupted.

The rows are those of the batch export (:func:`rmq.spark.export.prepare`: the ``date``
column, CSV's text columns) and the files go to ``--out`` through Spark's file sink, which
with the checkpoint writes each micro-batch exactly once: a restart with the same
``--checkpoint`` continues after the last batch written (its ``_spark_metadata`` log lists
the files of finished batches; Spark's readers of the directory read only those).

:func:`run_follow` starts the query with a processing-time trigger of the job's
``trigger`` seconds (none with 0: a batch starts as soon as the last ended) and reports
every micro-batch that read something, as ``batch N: R rows, offsets {...}`` (the offsets
the batch reached, the checkpoint's JSON).  Ctrl-C (SIGINT) stops the query
once the running micro-batch is done (a second Ctrl-C at once): PySpark's own SIGINT handler,
which cancels every running Spark job, is replaced while the query runs, so the batch is not
cut short; the checkpoint then names what was written and a restart continues from there.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, Final

from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from rmq.spark.datasource import FORMAT
from rmq.spark.export import format_options, prepare
from rmq.spark.failures import one_line_errors
from rmq.spark.job import ExportJob

POLL_SECONDS: Final = 0.2
STOP_WAIT_SECONDS: Final = 300.0
"""How long an interrupted query may take to finish its running micro-batch."""


@dataclass
class FollowResult:
    """What a followed export did before it stopped."""

    batches: int = 0
    rows: int = 0
    offsets: dict[str, Any] = field(default_factory=dict)
    interrupted: bool = False


def start_query(spark: SparkSession, job: ExportJob) -> StreamingQuery:
    """The streaming query of ``job`` (a ``follow`` job), started."""
    source = spark.readStream.format(FORMAT).options(**job.reader_options()).load()
    writer = (
        prepare(source, job)
        .writeStream.format(job.format)
        .options(**format_options(job, writing=True))
        .option("path", job.out)
        .option("checkpointLocation", job.checkpoint)
        .queryName("rmq-spark-export")
    )
    if job.trigger > 0:
        writer = writer.trigger(processingTime=f"{round(job.trigger * 1000)} milliseconds")
    if job.partition_by:
        writer = writer.partitionBy(*job.partition_by)
    return writer.start()


def run_follow(spark: SparkSession, job: ExportJob, report: Callable[[str], None]) -> FollowResult:
    """Run ``job`` until it fails (raised as a :class:`~rmq.spark.failures.SparkJobError`)
    or Ctrl-C stops it (``interrupted`` in the result)."""
    result = FollowResult()
    with one_line_errors(), _interrupts() as interrupted:
        query = start_query(spark, job)
        reported: set[int] = set()
        try:
            while query.isActive:
                _report_batches(query, reported, result, report)
                if interrupted.is_set():
                    report("stopping after the running micro-batch")
                    _stop_after_batch(query)
                    result.interrupted = True
                    break
                time.sleep(POLL_SECONDS)
        finally:
            if query.isActive:
                query.stop()
        _report_batches(query, reported, result, report)
        failure = query.exception()
        if failure is not None and not result.interrupted:
            raise failure
    return result


def _report_batches(
    query: StreamingQuery,
    reported: set[int],
    result: FollowResult,
    report: Callable[[str], None],
) -> None:
    for progress in query.recentProgress:
        if progress.batchId in reported or progress.numInputRows == 0:
            continue
        reported.add(progress.batchId)
        offsets = json.loads(progress.sources[0].endOffset) if progress.sources else {}
        result.batches += 1
        result.rows += progress.numInputRows
        result.offsets = offsets
        report(
            f"batch {progress.batchId}: {progress.numInputRows} rows, offsets "
            f"{json.dumps(offsets, separators=(',', ':'))}"
        )


def _stop_after_batch(query: StreamingQuery) -> None:
    deadline = time.monotonic() + STOP_WAIT_SECONDS
    while query.isActive and query.status["isTriggerActive"] and time.monotonic() < deadline:
        time.sleep(POLL_SECONDS / 4)
    query.stop()


@contextmanager
def _interrupts() -> Iterator[threading.Event]:
    """While the block runs, the first SIGINT only sets the event it yields; the second
    raises KeyboardInterrupt.  (Only in the main thread, where Python runs handlers.)"""
    interrupted = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield interrupted
        return

    def on_interrupt(signum: int, frame: FrameType | None) -> None:
        if interrupted.is_set():
            raise KeyboardInterrupt
        interrupted.set()

    previous = signal.signal(signal.SIGINT, on_interrupt)
    try:
        yield interrupted
    finally:
        signal.signal(signal.SIGINT, previous)
