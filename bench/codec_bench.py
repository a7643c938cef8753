"""Micro-benchmark of the message record codec: records per second, printed as JSON.

For 128-byte and 1 KiB bodies it measures ``encode_record_into`` (into a preallocated
buffer), ``decode_record`` (full record) and ``read_dispatch_info`` (the store's dispatch
read), each over enough records to take about half a second.

    python bench/codec_bench.py
"""

from __future__ import annotations

import json
import platform
import sys
import time
from collections.abc import Callable

from rmq.common.message import (
    decode_record,
    encode_record_into,
    read_dispatch_info,
    record_size,
)
from rmq.common.msgid import UniqueIdGenerator, pack_host
from rmq.common.properties import encode_properties_bytes

RECORDS = 100_000


def rate(operation: Callable[[int], object], count: int) -> float:
    """Records per second of ``operation(i)`` over ``count`` calls (best of three rounds)."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for i in range(count):
            operation(i)
        best = min(best, time.perf_counter() - start)
    return count / best


def bench(body_size: int) -> dict[str, float | int]:
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

    return {
        "body_bytes": body_size,
        "record_bytes": size,
        "encode_per_s": round(rate(encode, RECORDS)),
        "decode_per_s": round(rate(lambda i: decode_record(buf, i * size), RECORDS)),
        "dispatch_read_per_s": round(rate(lambda i: read_dispatch_info(buf, i * size), RECORDS)),
    }


def main() -> None:
    results = {
        "benchmark": "record_codec",
        "python": platform.python_version(),
        "machine": platform.machine(),
        "results": [bench(128), bench(1024)],
    }
    json.dump(results, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
