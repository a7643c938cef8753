"""Message store benchmark: appends and reads per second, printed as JSON.

For 128-byte and 1 KiB bodies, single puts and batches of 32, ASYNC_FLUSH and SYNC_FLUSH,
it measures through :class:`rmq.store.store.MessageStore` with Apache's default file sizes
and dispatch always on (consume queue entry + index entries for one key and the unique key):

* appends/s: messages put per second, including the wait for durability the flush mode asks
  for.  The driver keeps a window of puts in flight, as a broker's event loop does with many
  producers: 64 single puts or 4 batches, each registering a flush waiter, then waits for all
  of them (ASYNC answers at once; SYNC answers after the group commit covering them);
* reads/s: messages returned per second by pulls of 32 from every queue (zero-copy views);
* raw writes/s: the same number of bytes written to a plain file in the same directory with
  buffered 4 MiB writes and no fsync (best of three), measured in the same run right after
  the store case, expressed in records per second; ``ratio`` = appends/s / raw writes/s;
* without_index: the batched 1 KiB ASYNC case again with ``messageIndexEnable=false``, to
  show what the index costs.

    python bench/store_bench.py
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

from rmq.common.config import FlushDiskType, MessageStoreConfig
from rmq.common.message import encode_batch
from rmq.common.msgid import UniqueIdGenerator
from rmq.store.commitlog import InnerMessage, PutMessageResult, PutMessageStatus
from rmq.store.store import MessageStore

MESSAGES = 64_000
BATCH = 32
QUEUES = 8
TOPIC = "BenchmarkTest"
RAW_CHUNK = 4 * 1024 * 1024
WINDOW_SINGLE = 64
WINDOW_BATCH = 4


def properties(key: str, uniq: str) -> bytes:
    return f"KEYS\x01{key}\x02UNIQ_KEY\x01{uniq}\x02TAGS\x01TagA".encode()


def singles(body: bytes, ids: UniqueIdGenerator) -> list[InnerMessage]:
    messages = []
    for n in range(MESSAGES):
        uniq = ids.next_id()
        messages.append(
            InnerMessage(
                TOPIC,
                n % QUEUES,
                body,
                properties(f"order-{n}", uniq),
                tags_code=2598919,
                keys=f"order-{n}",
                uniq_key=uniq,
            )
        )
    return messages


def batches(body: bytes, ids: UniqueIdGenerator) -> list[InnerMessage]:
    result = []
    for b in range(MESSAGES // BATCH):
        inner = (
            (0, body, properties(f"order-{b * BATCH + i}", ids.next_id())) for i in range(BATCH)
        )
        result.append(InnerMessage(TOPIC, b % QUEUES, encode_batch(inner), b"WAIT\x01true"))
    return result


class Window:
    """Counts flush confirmations of a window of puts."""

    def __init__(self) -> None:
        self._done = threading.Condition()
        self._count = 0

    def confirm(self, status: PutMessageStatus) -> None:
        if status is not PutMessageStatus.PUT_OK:
            raise SystemExit(f"flush failed: {status}")
        with self._done:
            self._count += 1
            self._done.notify()

    def wait(self, count: int) -> None:
        with self._done:
            self._done.wait_for(lambda: self._count >= count, timeout=60)
            if self._count < count:
                raise SystemExit("flush confirmations timed out")
            self._count = 0


def append_all(
    store: MessageStore,
    items: list[InnerMessage],
    put: Callable[[InnerMessage], PutMessageResult],
    window: int,
) -> tuple[float, int]:
    """Seconds to put and confirm every item; total bytes written."""
    pending = Window()
    wrote = 0
    start = time.perf_counter()
    for first in range(0, len(items), window):
        group = items[first : first + window]
        for item in group:
            result = put(item)
            if result.status is not PutMessageStatus.PUT_OK:
                raise SystemExit(f"put failed: {result}")
            wrote += result.wrote_bytes
            store.request_flush(result, pending.confirm)
        pending.wait(len(group))
    return time.perf_counter() - start, wrote


def read_all(store: MessageStore) -> tuple[float, int]:
    """Seconds to pull every message of every queue, 32 at a time; messages read."""
    count = 0
    start = time.perf_counter()
    for queue_id in range(QUEUES):
        offset = 0
        while True:
            got = store.get_messages(TOPIC, queue_id, offset, 32)
            if not got.messages:
                break
            count += len(got.messages)
            offset = got.next_begin_offset
    return time.perf_counter() - start, count


def raw_write(directory: str, sample: bytes, total: int) -> float:
    """Seconds to write ``total`` bytes sequentially in 4 MiB buffered writes, no fsync
    (best of three, as page-cache writeback makes single runs noisy)."""
    chunk = (sample * (RAW_CHUNK // max(len(sample), 1) + 1))[:RAW_CHUNK]
    path = os.path.join(directory, "raw")
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        with open(path, "wb") as file:
            left = total
            while left > 0:
                file.write(chunk if left >= RAW_CHUNK else chunk[:left])
                left -= RAW_CHUNK
        best = min(best, time.perf_counter() - start)
        os.unlink(path)
    return best


def run_case(
    body_size: int, batched: bool, flush: FlushDiskType, index: bool = True
) -> dict[str, Any]:
    directory = tempfile.mkdtemp(prefix="rmq-store-bench-", dir=os.environ.get("RMQ_BENCH_DIR"))
    try:
        config = MessageStoreConfig(
            store_path_root_dir=directory, flush_disk_type=flush, message_index_enable=index
        )
        store = MessageStore(config)
        store.start()
        ids = UniqueIdGenerator(bytes([10, 0, 0, 1]), pid=1, salt=1)
        body = bytes(range(256)) * (body_size // 256) if body_size >= 256 else bytes(body_size)
        if batched:
            items, put, window = batches(body, ids), store.put_messages, WINDOW_BATCH
        else:
            items, put, window = singles(body, ids), store.put_message, WINDOW_SINGLE
        append_seconds, wrote = append_all(store, items, put, window)
        read_seconds, read = read_all(store)
        sample = bytes(store.commitlog.get_message(0, min(wrote, RAW_CHUNK)) or b"")
        store.shutdown()
        raw_seconds = raw_write(directory, sample, wrote)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    if read != MESSAGES:
        raise SystemExit(f"read {read} of {MESSAGES} messages")
    appends = MESSAGES / append_seconds
    raw = MESSAGES / raw_seconds
    return {
        "body": body_size,
        "put": f"batch of {BATCH}" if batched else "single",
        "flush": flush.value,
        "dispatch": "consume queue + index" if index else "consume queue only",
        "record_bytes": wrote // MESSAGES,
        "appends_per_s": appends,
        "raw_writes_per_s": raw,
        "ratio": appends / raw,
        "append_mb_per_s": wrote / append_seconds / 1e6,
        "raw_mb_per_s": wrote / raw_seconds / 1e6,
        "reads_per_s": read / read_seconds,
    }


def main() -> None:
    cases = [
        run_case(body_size, batched, flush)
        for flush in (FlushDiskType.ASYNC_FLUSH, FlushDiskType.SYNC_FLUSH)
        for body_size in (128, 1024)
        for batched in (False, True)
    ]
    print(
        json.dumps(
            {
                "messages_per_case": MESSAGES,
                "index_keys": "one key + the unique key per message",
                "cases": cases,
                "without_index": [run_case(1024, True, FlushDiskType.ASYNC_FLUSH, index=False)],
            }
        )
    )


if __name__ == "__main__":
    main()
