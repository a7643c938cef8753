"""C++ client producer driver: send the messages of a JSON spec, report every outcome as JSON.

Run by tests/interop/cpp_client.py (see there for the spec and result format).  A failed send
does not end the run: the outcome is recorded and the next message goes.  With `retry_for`
a failed message is sent again (the same `Message`, so the same message id) every
`retry_interval` seconds until it is acknowledged or `retry_for` seconds have passed since
its first attempt.  SIGTERM ends the run early: the messages not sent are reported as
`Stopped`.  Progress (on stderr) counts acknowledged messages.
"""

from __future__ import annotations

import time
from typing import Any

# run as a script: driverio.py sits beside it on sys.path, not in a package mypy can resolve
from driverio import (  # type: ignore[import-not-found]
    Progress,
    start_driver,
    stop_requested,
    write_result,
)
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


def send(
    producer: Producer, message: Message, spec: dict[str, Any], orderly_arg: int
) -> dict[str, Any]:
    """Send once; the acknowledgement's fields (`queue_id` only where the driver chose it)."""
    mode = spec.get("mode", "sync")
    if mode == "sync":
        result = producer.send_sync(message)
        return {"status": result.status.name, "msg_id": result.msg_id, "offset": result.offset}
    if mode == "oneway":
        producer.send_oneway(message)
        return {}
    if mode == "orderly":
        chosen: list[int] = []

        def select_queue(queue_count: int, selected: Any, user_arg: Any) -> int:
            chosen.append(orderly_arg % queue_count)
            return chosen[-1]

        result = producer.send_orderly(
            message,
            orderly_arg,
            retry_times=int(spec.get("orderly_retries", 3)),
            queue_selector=select_queue,
        )
        return {
            "status": result.status.name,
            "msg_id": result.msg_id,
            "offset": result.offset,
            "queue_id": chosen[-1],
        }
    raise ValueError(f"unknown send mode {mode!r}")


def send_with_retries(
    producer: Producer, spec: dict[str, Any], fields: dict[str, Any]
) -> dict[str, Any]:
    """Send one message, again and again while it fails and `retry_for` allows."""
    orderly_arg = int(fields.get("orderly_arg", spec.get("orderly_arg", 0)))
    retry_for = float(spec.get("retry_for", 0))
    retry_interval = float(spec.get("retry_interval", 0.2))
    started = time.monotonic()
    message: Message | None = None
    attempts = 0
    while True:
        attempts += 1
        try:
            if message is None:
                message = build_message(spec["topic"], fields)
            outcome = {"ok": True, **send(producer, message, spec, orderly_arg)}
        except Exception as exc:
            outcome = {"ok": False, "error_type": type(exc).__name__, "error": str(exc)}
        elapsed = time.monotonic() - started
        if outcome["ok"] or stop_requested.is_set() or elapsed + retry_interval > retry_for:
            return {**outcome, "attempts": attempts, "elapsed": elapsed}
        time.sleep(retry_interval)


def main() -> None:
    spec, result_stream = start_driver()
    producer = Producer(spec["group"])
    ffi_check(dll.SetProducerInstanceName(producer._handle, spec["instance"].encode()))
    producer.set_namesrv_addr(spec["namesrv"])
    if spec.get("access_key") is not None:
        producer.set_session_credentials(
            spec["access_key"], spec["secret_key"], spec.get("channel", "")
        )
    if spec.get("send_timeout_ms"):
        producer.set_timeout(int(spec["send_timeout_ms"]))
    producer.start()
    progress = Progress()
    results = []
    try:
        for fields in spec.get("messages", [{}]):
            if stop_requested.is_set():
                results.append(
                    {"ok": False, "error_type": "Stopped", "error": "not sent", "attempts": 0}
                )
                continue
            outcome = send_with_retries(producer, spec, fields)
            results.append(outcome)
            if outcome["ok"]:
                progress.add()
        # The result goes out before the library's shutdown, which can abort the process.
        write_result(result_stream, {"results": results})
    finally:
        producer.shutdown()


if __name__ == "__main__":
    main()
