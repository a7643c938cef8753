"""C++ client producer driver: send the messages of a JSON spec, print the results as JSON.

Run by tests/interop/cpp_client.py (see there for the spec and result format).
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from rocketmq.client import Message, Producer
from rocketmq.exceptions import ffi_check
from rocketmq.ffi import dll


def build_message(topic: str, fields: dict[str, Any]) -> Message:
    message = Message(topic)
    if "body" in fields:
        message.set_body(fields["body"])
    if fields.get("tags"):
        message.set_tags(fields["tags"])
    if fields.get("keys"):
        message.set_keys(fields["keys"])
    for name, value in (fields.get("properties") or {}).items():
        message.set_property(name, value)
    if fields.get("delay_level"):
        message.set_delay_time_level(fields["delay_level"])
    return message


def send(producer: Producer, message: Message, spec: dict[str, Any]) -> dict[str, Any]:
    mode = spec.get("mode", "sync")
    if mode == "sync":
        result = producer.send_sync(message)
        return {"status": result.status.name, "msg_id": result.msg_id, "offset": result.offset}
    if mode == "oneway":
        producer.send_oneway(message)
        return {}
    if mode == "orderly":
        result = producer.send_orderly(message, int(spec.get("orderly_arg", 0)))
        return {"status": result.status.name, "msg_id": result.msg_id, "offset": result.offset}
    raise ValueError(f"unknown send mode {mode!r}")


def main() -> None:
    spec = json.loads(sys.argv[1])
    producer = Producer(spec["group"])
    ffi_check(dll.SetProducerInstanceName(producer._handle, spec["instance"].encode()))
    producer.set_namesrv_addr(spec["namesrv"])
    if spec.get("send_timeout_ms"):
        producer.set_timeout(int(spec["send_timeout_ms"]))
    producer.start()
    results = []
    try:
        for fields in spec.get("messages", [{}]):
            started = time.monotonic()
            try:
                outcome = {"ok": True, **send(producer, build_message(spec["topic"], fields), spec)}
            except Exception as exc:
                outcome = {"ok": False, "error_type": type(exc).__name__, "error": str(exc)}
            outcome["elapsed"] = time.monotonic() - started
            results.append(outcome)
    finally:
        producer.shutdown()
    print(json.dumps({"results": results}), flush=True)


if __name__ == "__main__":
    main()
