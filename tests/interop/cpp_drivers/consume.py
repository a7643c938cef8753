"""C++ client push consumer driver: collect messages of one topic, print them as JSON.

Run by tests/interop/cpp_client.py (see there for the spec and result format).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any

from rocketmq.client import PushConsumer


def text(value: bytes | str | None) -> str | None:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def main() -> None:
    spec = json.loads(sys.argv[1])
    wanted = int(spec.get("count", 1))
    property_names = spec.get("properties", [])
    received: list[dict[str, Any]] = []
    enough = threading.Event()
    lock = threading.Lock()

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

    consumer = PushConsumer(spec["group"], orderly=bool(spec.get("orderly", False)))
    consumer.set_instance_name(spec["instance"])
    consumer.set_namesrv_addr(spec["namesrv"])
    consumer.subscribe(spec["topic"], on_message, spec.get("expression", "*"))
    consumer.start()
    started = time.monotonic()
    enough.wait(float(spec.get("max_wait", 15)))
    consumer.shutdown()
    with lock:
        messages = list(received)
    print(
        json.dumps({"messages": messages, "elapsed": time.monotonic() - started}),
        flush=True,
    )


if __name__ == "__main__":
    main()
