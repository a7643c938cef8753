"""C++ client push consumer driver: collect messages of one topic, print them as JSON.

Run by tests/interop/cpp_client.py (see there for the spec and result format).  Collection
ends `linger` seconds after `count` messages arrived (so late duplicates are seen too), after
`max_wait` seconds, or on SIGTERM, whichever comes first.  Progress (on stderr) counts the
messages received.
"""

from __future__ import annotations

import threading
import time
from typing import Any

# run as a script: driverio.py sits beside it on sys.path, not in a package mypy can resolve
from driverio import (  # type: ignore[import-not-found]
    Progress,
    start_driver,
    stop_requested,
    write_result,
)
from rocketmq.client import PushConsumer

STOP_CHECK_INTERVAL = 0.05


def text(value: bytes | str | None) -> str | None:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def main() -> None:
    spec, result_stream = start_driver()
    wanted = int(spec.get("count", 1))
    property_names = spec.get("properties", [])
    received: list[dict[str, Any]] = []
    enough = threading.Event()
    lock = threading.Lock()
    progress = Progress()

    def on_message(message: Any) -> None:
        record = {
            "topic": message.topic,
            "tags": text(message.tags),
            "keys": text(message.keys),
            "body": text(message.body),
            "msg_id": message.id,
            "queue_id": message.queue_id,
            "queue_offset": message.queue_offset,
            "reconsume_times": message.reconsume_times,
            "properties": {name: text(message.get_property(name)) for name in property_names},
        }
        with lock:
            received.append(record)
            if len(received) >= wanted:
                enough.set()
        progress.add()

    consumer = PushConsumer(spec["group"], orderly=bool(spec.get("orderly", False)))
    consumer.set_instance_name(spec["instance"])
    consumer.set_namesrv_addr(spec["namesrv"])
    consumer.subscribe(spec["topic"], on_message, spec.get("expression", "*"))
    consumer.start()
    started = time.monotonic()
    deadline = started + float(spec.get("max_wait", 15))
    while not stop_requested.is_set() and not enough.is_set() and time.monotonic() < deadline:
        enough.wait(STOP_CHECK_INTERVAL)
    if enough.is_set():
        stop_requested.wait(min(float(spec.get("linger", 0)), max(deadline - time.monotonic(), 0)))
    with lock:
        messages = list(received)
    # The result goes out before the library's shutdown, which can abort the process.
    write_result(result_stream, {"messages": messages, "elapsed": time.monotonic() - started})
    consumer.shutdown()


if __name__ == "__main__":
    main()
