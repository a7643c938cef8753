"""Crash-test driver: appends to a store as fast as it can until it is killed.

Run as ``python -m tests.integration.store_crash_child ROOT FLUSH_DISK_TYPE FIRST SEED``.
It opens the store at ROOT (recovering it as a broker would), prints ``ready``, then puts
messages numbered FIRST, FIRST+1, ... : mostly single messages, sometimes batches, spread
over :data:`QUEUES` queues of topic :data:`TOPIC`.  Message ``n`` carries key ``k<n>``,
unique key ``U<n>`` and the body :func:`body_for` ``(n)``.

Once a put has returned PUT_OK (and, under SYNC_FLUSH, its flush has been confirmed) the
driver writes one acknowledgement line per message straight to the stdout pipe (unbuffered
``os.write``): ``n queue_id queue_offset physical_offset``.  Everything acknowledged must
survive the SIGKILL the test sends at a random moment.
"""

from __future__ import annotations

import hashlib
import os
import random
import sys
import threading
from pathlib import Path

from rmq.common.config import FlushDiskType, MessageStoreConfig
from rmq.common.message import encode_batch
from rmq.store.putmessage import InnerMessage, PutMessageResult, PutMessageStatus
from rmq.store.store import MessageStore

TOPIC = "CrashTest"
QUEUES = 4


def crash_config(root: str | Path, flush_disk_type: FlushDiskType) -> MessageStoreConfig:
    """Small files so that commitlog, consume queue and index files roll over often."""
    return MessageStoreConfig(
        store_path_root_dir=str(root),
        mapped_file_size_commit_log=256 * 1024,
        mapped_file_size_consume_queue=200 * 20,
        max_hash_slot_num=256,
        max_index_num=1024,
        flush_disk_type=flush_disk_type,
        flush_interval_commit_log=20,
        flush_interval_consume_queue=50,
        flush_consume_queue_thorough_interval=200,
    )


def body_for(n: int) -> bytes:
    """The body of message ``n``: its number, then pseudo-random bytes, 20..939 bytes long."""
    length = 20 + (n * 7919) % 920
    seed = hashlib.sha256(str(n).encode()).digest()
    return (f"{n}:".encode() + seed * (length // 32 + 1))[:length]


def properties_for(n: int) -> bytes:
    return b"KEYS\x01k%d\x02UNIQ_KEY\x01U%d" % (n, n)


class Acknowledger:
    """Writes acknowledgement lines once a put is durable as the flush mode requires."""

    def __init__(self, store: MessageStore) -> None:
        self._store = store
        self._flushed = threading.Event()
        self._status = PutMessageStatus.PUT_OK

    def _on_flushed(self, status: PutMessageStatus) -> None:
        self._status = status
        self._flushed.set()

    def __call__(self, result: PutMessageResult, numbers: list[int], queue_id: int) -> None:
        if result.status is not PutMessageStatus.PUT_OK:
            raise SystemExit(f"put failed: {result}")
        self._flushed.clear()
        self._store.request_flush(result, self._on_flushed)
        if not self._flushed.wait(30) or self._status is not PutMessageStatus.PUT_OK:
            raise SystemExit(f"flush failed: {self._status}")
        offsets = result.physical_offsets or (result.physical_offset,)
        lines = "".join(
            f"{n} {queue_id} {result.queue_offset + i} {offset}\n"
            for i, (n, offset) in enumerate(zip(numbers, offsets, strict=True))
        )
        os.write(1, lines.encode())


def run(root: str, flush_disk_type: str, first: int, seed: int) -> None:
    store = MessageStore(crash_config(root, FlushDiskType(flush_disk_type)))
    store.start()
    os.write(1, b"ready\n")
    acknowledge = Acknowledger(store)
    rng = random.Random(seed)
    n = first
    while True:
        queue_id = rng.randrange(QUEUES)
        if rng.random() < 0.25:
            numbers = list(range(n, n + rng.randint(2, 8)))
            body = encode_batch((0, body_for(m), properties_for(m)) for m in numbers)
            result = store.put_messages(InnerMessage(TOPIC, queue_id, body, b"WAIT\x01true"))
        else:
            numbers = [n]
            msg = InnerMessage(
                TOPIC, queue_id, body_for(n), properties_for(n), keys=f"k{n}", uniq_key=f"U{n}"
            )
            result = store.put_message(msg)
        acknowledge(result, numbers, queue_id)
        n = numbers[-1] + 1


if __name__ == "__main__":
    run(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
