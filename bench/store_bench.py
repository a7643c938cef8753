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
  show what the index costs;
* breakdown: microseconds per message of the parts of a batched 1 KiB append (best of three,
  each on a fresh store): the commitlog append alone (a ``CommitLog`` whose dispatch does
  nothing), of which ``prepare_batch`` (the walk of the batch body before the lock),
  ``Dispatcher.dispatch_batch`` alone (consume queue entries + two index keys per
  message), and the consume queue put and the index put on their own.

    python bench/store_bench.py
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from rmq.common.config import FlushDiskType, MessageStoreConfig
from rmq.common.message import PreparedBatch, encode_batch, prepare_batch
from rmq.common.msgid import UniqueIdGenerator, pack_host
from rmq.common.timeutil import now_millis
from rmq.store.commitlog import DEFAULT_DELAY_LEVELS, CommitLog
from rmq.store.dispatch import Dispatcher
from rmq.store.putmessage import InnerMessage, PutMessageResult, PutMessageStatus
from rmq.store.store import MessageStore

MESSAGES = 64_000
BATCH = 32
QUEUES = 8
TOPIC = "BenchmarkTest"
RAW_CHUNK = 4 * 1024 * 1024
WINDOW_SINGLE = 64
WINDOW_BATCH = 4
TAGS_CODE = 2598919  # "TagA"
BREAKDOWN_ROUNDS = 3


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


@contextlib.contextmanager
def scratch_directory() -> Iterator[str]:
    """A fresh directory under ``$RMQ_BENCH_DIR`` (default: the system temp dir), removed after."""
    directory = tempfile.mkdtemp(prefix="rmq-store-bench-", dir=os.environ.get("RMQ_BENCH_DIR"))
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def body_of(size: int) -> bytes:
    return bytes(range(256)) * (size // 256) if size >= 256 else bytes(size)


def run_case(
    body_size: int, batched: bool, flush: FlushDiskType, index: bool = True
) -> dict[str, Any]:
    with scratch_directory() as directory:
        config = MessageStoreConfig(
            store_path_root_dir=directory, flush_disk_type=flush, message_index_enable=index
        )
        store = MessageStore(config)
        store.start()
        ids = UniqueIdGenerator(bytes([10, 0, 0, 1]), pid=1, salt=1)
        body = body_of(body_size)
        put: Callable[[InnerMessage], PutMessageResult]
        if batched:
            items, put, window = batches(body, ids), store.put_messages, WINDOW_BATCH
        else:
            items, put, window = singles(body, ids), store.put_message, WINDOW_SINGLE
        append_seconds, wrote = append_all(store, items, put, window)
        read_seconds, read = read_all(store)
        sample = bytes(store.select_one_message_by_offset(0, min(wrote, RAW_CHUNK)) or b"")
        store.shutdown()
        raw_seconds = raw_write(directory, sample, wrote)
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


def append_only_seconds(items: list[InnerMessage]) -> float:
    """Seconds to append ``items`` (batches) to a bare commitlog that dispatches nothing."""
    with scratch_directory() as directory:
        config = MessageStoreConfig()
        commitlog = CommitLog(
            directory,
            config.mapped_file_size_commit_log,
            store_host=pack_host("10.0.0.1", 10911),
            max_message_size=config.max_message_size,
            dispatch=lambda *fields: None,
            dispatch_batch=lambda *fields: None,
        )
        commitlog.queue.load()
        start = time.perf_counter()
        for item in items:
            commitlog.put_messages(item)
        seconds = time.perf_counter() - start
        commitlog.queue.close()
        return seconds


def seconds_of(action: Callable[[], None]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def seconds_on_fresh_store(drive: Callable[[MessageStore], None]) -> float:
    """Seconds ``drive(store)`` takes on a freshly started store with default settings."""
    with scratch_directory() as directory:
        store = MessageStore(MessageStoreConfig(store_path_root_dir=directory))
        store.start()
        start = time.perf_counter()
        drive(store)
        seconds = time.perf_counter() - start
        store.shutdown()
        return seconds


def prepare(item: InnerMessage) -> PreparedBatch:
    """What ``CommitLog.put_messages`` works out before taking its lock (IPv4 hosts)."""
    return prepare_batch(
        item.body, item.properties, item.topic.encode(), born_v6=False, store_v6=False
    )


def breakdown() -> list[dict[str, Any]]:
    """Microseconds per message of the parts of a batched 1 KiB append (best of three).

    The parts see what the append of the same batches hands them: batch ``b`` goes to queue
    ``b % 8`` with consecutive queue offsets, records of 1,205 bytes laid end to end, key
    ``order-<n>`` and a unique key.
    """
    ids = UniqueIdGenerator(bytes([10, 0, 0, 1]), pid=1, salt=1)
    items = batches(body_of(1024), ids)
    prepared = [prepare(item) for item in items]
    stored = now_millis()
    placed = []  # (queue id, first queue offset, first physical offset, batch)
    physical_offset = 0
    for b, batch in enumerate(prepared):
        placed.append((b % QUEUES, b // QUEUES * BATCH, physical_offset, batch))
        physical_offset += batch.total_size

    def prepare_all() -> None:
        for item in items:
            prepare(item)

    def dispatch_batches(store: MessageStore) -> None:
        dispatcher = Dispatcher(store.consume_queues, store.index, DEFAULT_DELAY_LEVELS)
        for queue_id, queue_offset, offset, batch in placed:
            dispatcher.dispatch_batch(TOPIC, queue_id, queue_offset, offset, batch, stored)

    def put_entries(store: MessageStore) -> None:
        for queue_id, queue_offset, offset, batch in placed:
            for size, tags_code in zip(batch.sizes, batch.tags_codes, strict=True):
                store.consume_queues.put(
                    TOPIC, queue_id, queue_offset, offset, size, tags_code, stored
                )
                queue_offset += 1
                offset += size

    def put_keys(store: MessageStore) -> None:
        assert store.index is not None
        for _, _, offset, batch in placed:
            for size, keys, uniq_key in zip(batch.sizes, batch.keys, batch.uniq_keys, strict=True):
                store.index.put_keys(TOPIC, (keys or "",), uniq_key, offset, stored)
                offset += size

    parts: dict[str, Callable[[], float]] = {
        "commitlog_append_without_dispatch": lambda: append_only_seconds(items),
        "of_which_prepare_batch": lambda: seconds_of(prepare_all),
        "dispatch_batch": lambda: seconds_on_fresh_store(dispatch_batches),
        "consume_queue_put": lambda: seconds_on_fresh_store(put_entries),
        "index_put_two_keys": lambda: seconds_on_fresh_store(put_keys),
    }
    return [
        {
            "part": name,
            "us_per_message": min(measure() for _ in range(BREAKDOWN_ROUNDS)) / MESSAGES * 1e6,
        }
        for name, measure in parts.items()
    ]


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
                "breakdown": breakdown(),
            }
        )
    )


if __name__ == "__main__":
    main()
