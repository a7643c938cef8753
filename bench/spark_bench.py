"""Spark export benchmark: a 1 GiB store exported to Parquet, messages/s and MB/s, as JSON.

The store is built with :class:`rmq.store.store.MessageStore` directly (batches of 32
messages of 1 KiB, four topics of eight queues, keys, tags and unique keys, dispatch on;
bodies are text cut from 2 MiB of random words, all different)
until its first 1 GiB commitlog file is full (the last batch opens the second file).  Then
the export job (:func:`rmq.spark.export.run_export`, what ``rmq spark-export`` runs) writes
it to Parquet,
once with ``local[1]`` and once with ``local[2]``, each in a fresh process so both start
from a new JVM and cold Python workers.  Figures per run:

* seconds: the job (plan, read, decode, write Parquet, count the written rows per topic),
  without the Spark start, which is reported apart (``spark_start_s``);
* messages/s and MB/s: messages exported and commitlog bytes read per second of the job;
* cpu_busy: the share of the machine's CPU time that was busy during the job (every
  process: the JVM, the Python workers and anything else running);
* speedup: local[2] over local[1];
* python_scan_messages_per_s: the Python side alone (plan, walk, decode, Arrow batches) in
  one process without Spark, the most one task's Python worker can produce.

    python bench/spark_bench.py [--gib 1]

The scratch directory is ``$RMQ_BENCH_DIR`` (default: the system temp dir); it needs about
three times the store size free.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import string
import subprocess
import sys
import tempfile
import time
from typing import Any

from rmq.common.config import MessageStoreConfig
from rmq.common.message import encode_batch
from rmq.common.msgid import UniqueIdGenerator
from rmq.store.putmessage import InnerMessage, PutMessageStatus
from rmq.store.store import MessageStore

BODY_SIZE = 1024
BATCH = 32
TOPICS = ("BenchOrders", "BenchEvents", "BenchClicks", "BenchLogs")
QUEUES = 8
MASTERS = ("local[1]", "local[2]")


def body_text() -> bytes:
    """2 MiB of words from a 2,000-word vocabulary: bodies cut from it compress like text
    but are all different (Parquet cannot keep one copy of a repeated body)."""
    rng = random.Random(7)
    vocabulary = [
        "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(2, 9)))
        for _ in range(2000)
    ]
    words = []
    size = 0
    while size < 2 << 20:
        word = rng.choice(vocabulary)
        words.append(word)
        size += len(word) + 1
    return " ".join(words).encode()


def body_of(text: bytes, n: int) -> bytes:
    start = n * 7919 % (len(text) - BODY_SIZE)
    return text[start : start + BODY_SIZE]


def properties(n: int, uniq_key: str) -> bytes:
    return f"KEYS\x01order-{n}\x02UNIQ_KEY\x01{uniq_key}\x02TAGS\x01TagA".encode()


def build_store(
    directory: str, commitlog_bytes: int, fill_bytes: int | None = None
) -> dict[str, Any]:
    """Fill the first commitlog file of a new store (or with `fill_bytes`, that many bytes
    of commitlog files of `commitlog_bytes` each); its message and byte counts."""
    config = MessageStoreConfig(
        store_path_root_dir=directory, mapped_file_size_commit_log=commitlog_bytes
    )
    store = MessageStore(config, store_host="127.0.0.1:10911")
    store.start()
    ids = UniqueIdGenerator(bytes([127, 0, 0, 1]), pid=1, salt=1)
    text = body_text()
    messages = wrote = batches = 0
    start = time.perf_counter()
    while True:
        inner = (
            (0, body_of(text, messages + i), properties(messages + i, ids.next_id()))
            for i in range(BATCH)
        )
        batch = InnerMessage(
            TOPICS[batches % len(TOPICS)],
            batches % QUEUES,
            encode_batch(inner),
            b"WAIT\x01true",
        )
        result = store.put_messages(batch)
        if result.status is not PutMessageStatus.PUT_OK:
            raise SystemExit(f"put failed: {result}")
        messages += BATCH
        wrote += result.wrote_bytes
        batches += 1
        if result.physical_offset >= (fill_bytes or commitlog_bytes):  # the first file is full
            break
    seconds = time.perf_counter() - start
    store.shutdown()
    return {"messages": messages, "record_bytes": wrote, "build_s": seconds}


def cpu_ticks() -> tuple[int, int]:
    """(busy, total) CPU ticks of the whole machine so far, from /proc/stat."""
    with open("/proc/stat") as stat:
        fields = [int(field) for field in stat.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


def decode_rate(store: str) -> float:
    """Messages/s of the Python side of the scan alone in this process (plan, walk, decode,
    Arrow batches), without Spark: what one task's Python worker can produce."""
    from rmq.spark.offline import plan_store, read_range
    from rmq.spark.options import ScanBounds
    from rmq.spark.schema import body_of, record_batches

    start = time.perf_counter()
    rows: int = sum(
        batch.num_rows
        for part in plan_store(store, ScanBounds())
        for batch in record_batches(
            (record, None, body_of(record)) for record in read_range(part, ScanBounds())
        )
    )
    return rows / (time.perf_counter() - start)


def export_once(master: str, store: str, out: str) -> dict[str, Any]:
    """One export in this process (a fresh JVM): the job's seconds and the Spark start."""
    from rmq.spark.export import run_export
    from rmq.spark.job import ExportJob
    from rmq.spark.session import build_session

    start = time.perf_counter()
    spark = build_session(master)
    spark.sparkContext.setLogLevel("ERROR")
    started = time.perf_counter()
    busy_before = cpu_ticks()
    result = run_export(spark, ExportJob(out=out, store_dirs=(store,)))
    seconds = time.perf_counter() - started
    busy, total = (after - before for after, before in zip(cpu_ticks(), busy_before, strict=True))
    partitions = spark.read.format("rocketmq").load(store).rdd.getNumPartitions()
    spark.stop()
    return {
        "spark_start_s": started - start,
        "seconds": seconds,
        "cpu_busy": busy / total,
        "rows": result.rows,
        "files": result.files,
        "partitions": partitions,
        "parquet_bytes": sum(
            entry.stat().st_size for entry in os.scandir(out) if entry.name.endswith(".parquet")
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=1.0, help="commitlog size in GiB")
    parser.add_argument("--export", nargs=3, metavar=("MASTER", "STORE", "OUT"), help="internal")
    args = parser.parse_args()
    if args.export:
        print(json.dumps(export_once(*args.export)))
        return
    directory = tempfile.mkdtemp(prefix="rmq-spark-bench-", dir=os.environ.get("RMQ_BENCH_DIR"))
    try:
        store = os.path.join(directory, "store")
        built = build_store(store, int(args.gib * (1 << 30)))
        python_rate = decode_rate(store)
        runs: list[dict[str, Any]] = []
        for master in MASTERS:
            out = os.path.join(directory, f"out-{len(runs)}")
            child = subprocess.run(
                [sys.executable, __file__, "--export", master, store, out],
                capture_output=True,
                text=True,
                check=True,
            )
            run = json.loads(child.stdout.splitlines()[-1])
            if run["rows"] != built["messages"]:
                raise SystemExit(f"{master} exported {run['rows']} of {built['messages']} rows")
            runs.append(
                {
                    "master": master,
                    **run,
                    "messages_per_s": run["rows"] / run["seconds"],
                    "mb_per_s": built["record_bytes"] / run["seconds"] / 1e6,
                }
            )
            shutil.rmtree(out)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    print(
        json.dumps(
            {
                "store": {
                    "commitlog_bytes": built["record_bytes"],
                    "messages": built["messages"],
                    "body_bytes": BODY_SIZE,
                    "topics": len(TOPICS),
                    "queues_per_topic": QUEUES,
                    "build_s": built["build_s"],
                },
                "python_scan_messages_per_s": python_rate,
                "runs": runs,
                "speedup_local2_over_local1": runs[0]["seconds"] / runs[1]["seconds"],
            }
        )
    )


if __name__ == "__main__":
    main()
