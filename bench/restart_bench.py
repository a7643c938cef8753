"""Store restart benchmark: how long :meth:`MessageStore.start` takes on a store with many
queues, printed as JSON.

Builds one store with ``TOPICS`` topics of ``QUEUES`` queues each (2,000 consume queues),
``PER_QUEUE`` 200-byte messages per queue with a key and a unique key, written in batches,
with 16 MiB commitlog files and 50-entry consume queue files (so every queue has several
files, as a busy broker's queues do, without taking gigabytes), then opens it ``ROUNDS`` times:

* normal: after a clean shutdown (recovery walks the last three commitlog files);
* abnormal: with the ``abort`` file left in place (recovery re-dispatches from the
  checkpoint).

Each round times ``MessageStore.start()`` alone (mapping every file, the consume queue
checks, recovery) and shuts the store down again; the figures are the median, the minimum and
the maximum over the rounds.  The machine these run on is shared, so medians of several
rounds are what to compare.

    python bench/restart_bench.py [--rounds N] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from rmq.common.config import MessageStoreConfig
from rmq.common.message import encode_batch
from rmq.common.msgid import UniqueIdGenerator
from rmq.store.layout import ABORT_FILE
from rmq.store.putmessage import InnerMessage, PutMessageStatus
from rmq.store.store import MessageStore

TOPICS = 250
QUEUES = 8
PER_QUEUE = 120
BATCH = 40
BODY = b"b" * 200
ROUNDS = 7


def config(root: Path) -> MessageStoreConfig:
    return MessageStoreConfig(
        store_path_root_dir=str(root),
        mapped_file_size_commit_log=16 * 1024 * 1024,
        mapped_file_size_consume_queue=50 * 20,
        max_hash_slot_num=50_000,
        max_index_num=200_000,
    )


def build(root: Path) -> int:
    """Write the store; returns the number of messages."""
    store = MessageStore(config(root))
    store.start()
    ids = UniqueIdGenerator(bytes([10, 0, 0, 1]), pid=1, salt=1)
    count = 0
    try:
        for _ in range(PER_QUEUE // BATCH):
            for topic in range(TOPICS):
                for queue_id in range(QUEUES):
                    inner = (
                        (
                            0,
                            BODY,
                            f"KEYS\x01k{count + i}\x02UNIQ_KEY\x01{ids.next_id()}".encode(),
                        )
                        for i in range(BATCH)
                    )
                    result = store.put_messages(
                        InnerMessage(f"RestartTopic{topic}", queue_id, encode_batch(inner))
                    )
                    if result.status is not PutMessageStatus.PUT_OK:
                        raise SystemExit(f"put failed: {result}")
                    count += BATCH
    finally:
        store.shutdown()
    return count


def time_starts(root: Path, rounds: int, abnormal: bool) -> list[float]:
    seconds = []
    for _ in range(rounds):
        if abnormal:
            (root / ABORT_FILE).touch()
        store = MessageStore(config(root))
        start = time.perf_counter()
        store.start()
        seconds.append(time.perf_counter() - start)
        store.shutdown()
    return seconds


def summary(seconds: list[float]) -> dict[str, Any]:
    return {
        "median_s": round(statistics.median(seconds), 3),
        "min_s": round(min(seconds), 3),
        "max_s": round(max(seconds), 3),
        "rounds": len(seconds),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--keep", type=Path, help="build the store here and keep it")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="rmq-restart-bench-"))
    try:
        built = (root / "commitlog").is_dir()
        messages = TOPICS * QUEUES * PER_QUEUE if built else build(root)
        result = {
            "consume_queues": TOPICS * QUEUES,
            "messages": messages,
            "normal": summary(time_starts(root, args.rounds, abnormal=False)),
            "abnormal": summary(time_starts(root, args.rounds, abnormal=True)),
        }
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
