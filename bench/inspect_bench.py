"""`rmq inspect` scan benchmark: verify and stats throughput in MB/s, printed as JSON.

Builds a store of 1 KiB messages with :class:`rmq.store.store.MessageStore` the way a broker
fills it (batches of 32 to 8 queues of one topic, a TAGS value, one KEYS token and the unique
key per message, so each record has a consume queue entry and two index entries), then
measures on it, best of three rounds each:

* verify: ``StoreReader.validate()``, what ``rmq inspect STORE verify`` runs: every record
  framed and its body CRC computed, matched with its consume queue entry, its index entries
  checked against the hashes of its keys;
* stats: ``rmq.store.offline.search.queue_stats``, what ``rmq inspect STORE stats`` runs: every
  record framed with its body CRC, tags read from its properties, counted per queue;
* scan: the framing loop alone (no CRC), the floor of both.

MB/s is commitlog data (bytes of records, 10^6 per MB) divided by wall time; ``cpu_mb_s``
divides by the process's CPU time instead, which other work on the machine disturbs less.
The store lives in a temporary directory (``RMQ_BENCH_DIR`` to choose where) and is warm in
the page cache, as after a first pass.

    python bench/inspect_bench.py [--messages N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from rmq.common.config import MessageStoreConfig
from rmq.common.message import encode_batch
from rmq.common.msgid import UniqueIdGenerator
from rmq.store.offline.reader import StoreReader
from rmq.store.offline.search import queue_stats
from rmq.store.putmessage import InnerMessage
from rmq.store.store import MessageStore

BODY_SIZE = 1024
BATCH = 32
QUEUES = 8
TOPIC = "InspectBench"
ROUNDS = 3


def properties(n: int, uniq: str) -> bytes:
    return f"TAGS\x01Tag{n % 4}\x02KEYS\x01order-{n}\x02UNIQ_KEY\x01{uniq}".encode()


def build(root: str, messages: int) -> None:
    config = MessageStoreConfig(
        store_path_root_dir=root, mapped_file_size_commit_log=64 * 1024 * 1024
    )
    store = MessageStore(config, store_host="127.0.0.1:10911")
    store.start()
    ids = UniqueIdGenerator()
    body = bytes(range(256)) * (BODY_SIZE // 256)
    try:
        for batch in range(messages // BATCH):
            inner = [
                (0, body, properties(n, ids.next_id()))
                for n in range(batch * BATCH, (batch + 1) * BATCH)
            ]
            store.put_messages(InnerMessage(TOPIC, batch % QUEUES, encode_batch(inner)))
    finally:
        store.shutdown()


def measure(operation: Callable[[], Any], data_bytes: int) -> dict[str, float]:
    wall = cpu = float("inf")
    for _ in range(ROUNDS):
        started, started_cpu = time.perf_counter(), time.process_time()
        operation()
        wall = min(wall, time.perf_counter() - started)
        cpu = min(cpu, time.process_time() - started_cpu)
    return {
        "seconds": round(wall, 3),
        "mb_s": round(data_bytes / wall / 1e6, 1),
        "cpu_mb_s": round(data_bytes / cpu / 1e6, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=128_000)
    args = parser.parse_args()
    root = tempfile.mkdtemp(prefix="rmq-inspect-bench-", dir=os.environ.get("RMQ_BENCH_DIR"))
    try:
        build(root, args.messages)
        with StoreReader(root) as reader:
            report = reader.validate()
            if not report.ok:
                raise SystemExit(f"the benchmark store does not verify: {report.problems[:3]}")
            data_bytes = report.max_physical_offset - report.min_physical_offset
            cases = {
                "verify": measure(reader.validate, data_bytes),
                "stats": measure(lambda: queue_stats(reader), data_bytes),
                "scan": measure(lambda: sum(1 for _ in reader.scan()), data_bytes),
            }
        result = {
            "messages": report.records,
            "body_bytes": BODY_SIZE,
            "record_bytes": data_bytes // report.records,
            "commitlog_mb": round(data_bytes / 1e6, 1),
            "index_entries": report.index_entries,
            "cases": cases,
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)
    json.dump(result, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
