"""Micro-benchmark of the message record codec, pure Python against the compiled hot paths.

For 128-byte and 1 KiB bodies it measures, in operations per second (best of three rounds):
``encode_record_into`` (into a preallocated buffer), ``decode_record`` (full record),
``read_dispatch_info`` (the store's dispatch read), ``iter_frames`` alone and with
``dispatch_info`` (recovery and dispatch walks), a batch of 32 stored with ``prepare_batch`` +
``encode_batch_into`` (per record), ``zlib.crc32`` of the body alone (what BODYCRC costs),
``index_key_hash`` of unique index keys and ``java_hash`` of 40-character strings.  Each
figure is taken twice in child processes, once with ``RMQ_PURE_PYTHON=1`` and once without
(rmq.common.compiled), and ``speedup`` is compiled over pure.  Prints one JSON object.

    python bench/codec_bench.py
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
import zlib
from collections.abc import Callable

from rmq.common.javahash import index_key_hash, java_hash
from rmq.common.message import (
    decode_record,
    dispatch_info,
    encode_batch,
    encode_batch_into,
    encode_record_into,
    prepare_batch,
    read_dispatch_info,
    record_size,
)
from rmq.common.msgid import UniqueIdGenerator, pack_host
from rmq.common.properties import encode_properties_bytes
from rmq.common.recordwalk import iter_frames

RECORDS = 50_000
BATCH = 32


def rate(operation: Callable[[int], object], count: int) -> float:
    """Operations per second of ``operation(i)`` over ``count`` calls (best of three rounds)."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for i in range(count):
            operation(i)
        best = min(best, time.perf_counter() - start)
    return count / best


def walk_rate(buf: bytearray, with_dispatch: bool) -> float:
    """Records per second framed by one ``iter_frames`` walk of ``buf`` (best of three)."""
    best = float("inf")
    count = 0
    view = memoryview(buf)
    for _ in range(3):
        start = time.perf_counter()
        count = 0
        for frame in iter_frames(view, 0, len(buf)):
            if with_dispatch:
                dispatch_info(view, frame)
            count += 1
        best = min(best, time.perf_counter() - start)
    view.release()
    return count / best


def bench(body_size: int) -> dict[str, float]:
    ids = UniqueIdGenerator(bytes([10, 0, 0, 1]), pid=1, salt=1)
    properties = encode_properties_bytes(
        {"UNIQ_KEY": ids.next_id(), "TAGS": "TagA", "KEYS": "order-1", "CLUSTER": "DefaultCluster"}
    )
    born_host = pack_host("10.0.0.1", 54321)
    store_host = pack_host("10.0.0.2", 10911)
    body = bytes(body_size)
    topic = b"BenchmarkTest"
    size = record_size(len(body), len(topic), len(properties), False, False)
    buf = bytearray(RECORDS * size)

    def encode(i: int) -> None:
        pos = i * size
        encode_record_into(
            buf,
            pos,
            queue_id=i & 7,
            flag=0,
            queue_offset=i,
            physical_offset=pos,
            sys_flag=0,
            born_timestamp=1_700_000_000_000,
            born_host=born_host,
            store_timestamp=1_700_000_000_001,
            store_host=store_host,
            reconsume_times=0,
            prepared_transaction_offset=0,
            body=body,
            topic_bytes=topic,
            properties_bytes=properties,
        )

    batch_body = encode_batch(
        [(0, body, encode_properties_bytes({"UNIQ_KEY": ids.next_id()}))] * BATCH
    )
    batch_buf = bytearray(prepare_batch(batch_body, b"", topic, born_v6=False, store_v6=False)[1])

    def store_batch(_: int) -> None:
        batch = prepare_batch(batch_body, b"", topic, born_v6=False, store_v6=False)
        batch_buf[:4] = bytes(4)
        encode_batch_into(
            batch_buf,
            0,
            batch,
            queue_id=0,
            queue_offset=0,
            physical_offset=0,
            sys_flag=0,
            born_timestamp=1_700_000_000_000,
            born_host=born_host,
            store_timestamp=1_700_000_000_001,
            store_host=store_host,
            reconsume_times=0,
        )

    keys = [f"BenchmarkTest#{ids.next_id()}" for _ in range(RECORDS)]
    texts = [f"{i:08d}-a-forty-character-string-to-hash" for i in range(RECORDS)]
    results = {
        "encode_per_s": rate(encode, RECORDS),
        "decode_per_s": rate(lambda i: decode_record(buf, i * size), RECORDS),
        "dispatch_read_per_s": rate(lambda i: read_dispatch_info(buf, i * size), RECORDS),
        "walk_per_s": walk_rate(buf, False),
        "walk_dispatch_per_s": walk_rate(buf, True),
        "batch_store_per_s": rate(store_batch, RECORDS // BATCH) * BATCH,
        "body_crc_per_s": rate(lambda _: zlib.crc32(body), RECORDS),
        "index_key_hash_per_s": rate(lambda i: index_key_hash(keys[i]), RECORDS),
        "java_hash_per_s": rate(lambda i: java_hash(texts[i]), RECORDS),
    }
    return results


def child(pure: bool) -> dict[str, dict[str, float]]:
    """The figures of a child process run with or without ``RMQ_PURE_PYTHON=1``."""
    env = {**os.environ, "RMQ_PURE_PYTHON": "1" if pure else "0"}
    output = subprocess.run(
        [sys.executable, __file__, "--one"], env=env, capture_output=True, text=True, check=True
    ).stdout
    figures: dict[str, dict[str, float]] = json.loads(output)
    return figures


def main() -> None:
    if sys.argv[1:] == ["--one"]:
        json.dump({str(size): bench(size) for size in (128, 1024)}, sys.stdout)
        return
    runs = [child(pure) for pure in (True, False, False, True)]  # alternated: a busy machine
    rows = []
    for size in ("128", "1024"):
        for metric in runs[0][size]:
            pure = max(runs[0][size][metric], runs[3][size][metric])
            fast = max(runs[1][size][metric], runs[2][size][metric])
            rows.append(
                {
                    "body_bytes": int(size),
                    "operation": metric.removesuffix("_per_s"),
                    "pure_per_s": round(pure),
                    "compiled_per_s": round(fast),
                    "speedup": round(fast / pure, 2),
                }
            )
    results = {
        "benchmark": "record_codec",
        "python": platform.python_version(),
        "machine": platform.machine(),
        "results": rows,
    }
    json.dump(results, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
