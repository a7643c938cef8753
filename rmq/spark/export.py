"""The export job: messages of store directories or of a running cluster written as Parquet,
JSON, CSV or ORC files, then counted per topic.

One job, two entry points: ``rmq spark-export`` builds an :class:`ExportJob` from its options
and calls :func:`run_export`; this module's ``main`` does the same from ``sys.argv`` so the
job also runs as ``spark-submit rmq/spark/export.py ...`` or ``python -m rmq.spark.export``,
printing the :class:`ExportResult` as one JSON object on stdout.

    spark-submit --master 'local[2]' rmq/spark/export.py /data/store --out /tmp/export
    spark-submit --master spark://head:7077 rmq/spark/export.py --namesrv ns:9876 \\
        --topic TopicA --out hdfs:///exports/topic-a --format json

What the job does:

1. reads ``format("rocketmq")`` (:mod:`rmq.spark.datasource`) with the job's options:
   topics, ``--since`` / ``--until`` (store time, start inclusive, end exclusive), and either
   the store directories (offline) or the name server with starting / ending offsets
   (online);
2. adds a ``date`` column (the UTC date of ``storeTimestamp``) when partitioning by date, and
   for CSV turns the columns CSV cannot hold into text: ``body`` as base64 (on one line:
   Spark's ``base64`` breaks lines every 76 characters), ``keys`` and ``properties`` as JSON;
3. writes the files (``partitionBy`` the ``--partition-by`` columns; an existing output
   directory is an error unless ``overwrite``);
4. reads the written files back, only the ``topic`` column, to count rows per topic and list
   the files: the counts are of what was written, at the cost of a light second pass.

A failure is raised as the one line of :mod:`rmq.spark.failures` (what the executors lack
and how to give it, when that is the cause).  A failed write leaves nothing of its own
behind: once the executors run no task, the output directory is removed when the export
created it, and its ``_temporary`` directory when it was there before (``overwrite``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, Final

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from rmq.common.timeutil import parse_time
from rmq.spark.datasource import FORMAT
from rmq.spark.failures import SparkJobError, one_line_errors
from rmq.spark.job import DATE_COLUMN, FORMATS, ExportJob, ExportResult, parse_settings

Progress = Callable[[str], None]

_CSV_OPTIONS: Final = {"header": "true", "escape": '"', "multiLine": "true"}
"""CSV with a header line and RFC 4180 quoting (a quote inside a field is doubled, a field
may hold a line break)."""


def _quiet(text: str) -> None:
    """A :data:`Progress` that says nothing."""


_PARQUET_OPTIONS: Final = {"parquet.enable.dictionary#body": "false"}
"""Parquet without a dictionary for ``body``: bodies rarely repeat, and trying to build one
costs 10-25 % of the export (bench/spark_bench.py)."""


def format_options(job: ExportJob, *, writing: bool) -> dict[str, str]:
    if job.format == "csv":
        return _CSV_OPTIONS
    return _PARQUET_OPTIONS if job.format == "parquet" and writing else {}


def prepare(df: DataFrame, job: ExportJob) -> DataFrame:
    """The rows as written: the ``date`` column added, CSV's columns made text."""
    if DATE_COLUMN in job.partition_by:
        df = df.withColumn(DATE_COLUMN, F.to_date("storeTimestamp"))
    if job.format == "csv":
        df = (
            df.withColumn("body", F.regexp_replace(F.base64("body"), "[\r\n]", ""))
            .withColumn("keys", F.to_json("keys"))
            .withColumn("properties", F.to_json("properties"))
        )
    return df


def run_export(spark: SparkSession, job: ExportJob, progress: Progress = _quiet) -> ExportResult:
    """Run the job on ``spark`` (whose ``rocketmq`` source is registered); a failure is
    raised as a :class:`~rmq.spark.failures.SparkJobError`."""
    with one_line_errors():
        return _export(spark, job, progress)


def _export(spark: SparkSession, job: ExportJob, progress: Progress) -> ExportResult:
    reader = spark.read.format(FORMAT).options(**job.reader_options())
    if job.online:
        progress(f"pulling {', '.join(job.topics)} from {job.namesrv}")
        source = reader.load()
    else:
        progress(f"reading {', '.join(job.store_dirs)}")
        source = reader.load([os.path.abspath(path) for path in job.store_dirs])
    rows = prepare(source, job)
    writer = (
        rows.write.format(job.format)
        .mode("overwrite" if job.overwrite else "errorifexists")
        .options(**format_options(job, writing=True))
    )
    if job.partition_by:
        writer = writer.partitionBy(*job.partition_by)
    progress(f"writing {job.format} to {job.out}")
    output = _Output(spark, job.out)
    existed = output.exists()
    try:
        writer.save(job.out)
    except Exception:
        output.discard_failed_write(created=not existed)
        raise
    progress("counting the rows written")
    written = (
        spark.read.format(job.format)
        .schema(rows.schema)
        .options(**format_options(job, writing=False))
        .load(job.out)
        .select("topic")
    )
    counts = {row["topic"]: row["count"] for row in written.groupBy("topic").count().collect()}
    return ExportResult(
        job.out, job.format, dict(sorted(counts.items())), len(written.inputFiles())
    )


class _Output:
    """The output directory, through the Hadoop file system Spark writes it with (a local
    path, ``hdfs://``, ``s3a://``...)."""

    QUIET_SECONDS: Final = 30.0
    """How long a failed write may take to stop its last tasks before its files go."""

    def __init__(self, spark: SparkSession, out: str) -> None:
        context = spark.sparkContext
        jvm: Any = context._jvm
        self._spark = spark
        self._path = jvm.org.apache.hadoop.fs.Path(out)
        self._temporary = jvm.org.apache.hadoop.fs.Path(self._path, "_temporary")
        self._fs = self._path.getFileSystem(context._jsc.hadoopConfiguration())

    def exists(self) -> bool:
        return bool(self._fs.exists(self._path))

    def discard_failed_write(self, *, created: bool) -> None:
        """Remove what a failed write left: the directory when the write created it, else
        its ``_temporary``; first wait (a while at most) until the executors run no task, so
        none of the write's is left to put files back."""
        deadline = time.monotonic() + self.QUIET_SECONDS
        while self._running_tasks() and time.monotonic() < deadline:
            time.sleep(0.1)
        self._fs.delete(self._path if created else self._temporary, True)

    def _running_tasks(self) -> int:
        """Tasks the executors run now (a failed job's tasks are killed, not waited for)."""
        context: Any = self._spark.sparkContext
        executors = context._jsc.sc().statusTracker().getExecutorInfos()
        return sum(int(executor.numRunningTasks()) for executor in executors)


def parse_args(argv: Sequence[str] | None = None) -> tuple[ExportJob, str | None, dict[str, str]]:
    """The job, the master (None: $RMQ_SPARK_MASTER, else spark-submit's) and the Spark
    settings of ``--conf`` from a spark-submit command line."""
    parser = argparse.ArgumentParser(
        prog="export.py",
        description="Export RocketMQ messages (store directories or a running cluster) with "
        "Spark.  The same job as 'rmq spark-export'; see docs/spark.md.",
    )
    parser.add_argument("store_dirs", nargs="*", metavar="STORE_DIR")
    parser.add_argument("--out", required=True)
    parser.add_argument("--format", default="parquet", choices=FORMATS)
    parser.add_argument("--topic", action="append", default=[])
    parser.add_argument("--since", type=parse_time, help="epoch ms or ISO 8601")
    parser.add_argument("--until", type=parse_time, help="epoch ms or ISO 8601")
    parser.add_argument("--partition-by", default="", help="e.g. topic,date")
    parser.add_argument(
        "--master", help="default: $RMQ_SPARK_MASTER, else spark-submit's, else local[*]"
    )
    parser.add_argument(
        "--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting"
    )
    parser.add_argument("--namesrv")
    parser.add_argument("--starting-offsets")
    parser.add_argument("--ending-offsets")
    parser.add_argument("--overwrite", action="store_true")
    parser.add_argument("--max-partition-bytes", type=int)
    parser.add_argument("--broker-name")
    args = parser.parse_args(argv)
    try:
        job = ExportJob(
            out=args.out,
            format=args.format,
            store_dirs=tuple(args.store_dirs),
            namesrv=args.namesrv,
            topics=tuple(t for text in args.topic for t in text.split(",") if t),
            since=args.since,
            until=args.until,
            starting_offsets=args.starting_offsets,
            ending_offsets=args.ending_offsets,
            partition_by=tuple(c for c in args.partition_by.split(",") if c),
            overwrite=args.overwrite,
            max_partition_bytes=args.max_partition_bytes,
            broker_name=args.broker_name,
        )
        settings = parse_settings(args.conf)
    except ValueError as exc:
        parser.error(str(exc))
    return job, args.master, settings


def main(argv: Sequence[str] | None = None) -> int:
    """spark-submit entry: run the job, print the result as JSON, progress on stderr; a
    failure is one ``rmq: error:`` line on stderr and exit status 1."""
    from rmq.spark.session import build_session, resolve_master

    job, master, settings = parse_args(argv)

    def progress(text: str) -> None:
        print(f"rmq: {text}", file=sys.stderr, flush=True)

    try:
        with one_line_errors():
            master = resolve_master(master, settings)
            progress(f"starting Spark ({master})")
            spark = build_session(master, conf=settings)
        try:
            result = run_export(spark, job, progress)
        finally:
            spark.stop()
    except SparkJobError as exc:
        print(f"rmq: error: {exc}", file=sys.stderr, flush=True)
        return 1
    print(json.dumps(result.to_dict()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
