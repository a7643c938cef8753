"""What every C++ client driver shares: its input, its output and how it is told to stop.

* The spec is one JSON object on stdin (a command-line argument is capped at 128 KiB).
* stdout carries the result and nothing else: `start_driver` keeps a private copy of the
  stdout descriptor for the result and points descriptor 1 at stderr, so whatever the native
  library or Python prints lands in the log stream instead.  `write_result` writes the one
  JSON object, on one line.
* Progress goes to stderr as `progress <n>` lines, written by a background thread whenever
  the count changed in the last `PROGRESS_INTERVAL` seconds, so a test can follow a running
  driver.
* SIGTERM means "finish now": it sets `stop_requested`; a driver that watches the event ends
  its work early and still writes its result.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from typing import Any, TextIO

PROGRESS_INTERVAL = 0.05

stop_requested = threading.Event()


def start_driver() -> tuple[dict[str, Any], TextIO]:
    """Read the spec from stdin, take stdout for the result, make SIGTERM set
    `stop_requested`.  Returns the spec and the result stream."""
    spec = json.load(sys.stdin)
    if not isinstance(spec, dict):
        raise ValueError("the driver spec must be a JSON object")
    sys.stdout.flush()
    result_stream = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    signal.signal(signal.SIGTERM, lambda signum, frame: stop_requested.set())
    return spec, result_stream


def write_result(stream: TextIO, result: dict[str, Any]) -> None:
    stream.write(json.dumps(result) + "\n")
    stream.flush()


class Progress:
    """A count that a daemon thread reports on stderr as it grows."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0
        threading.Thread(target=self._report, name="progress", daemon=True).start()

    def add(self, amount: int = 1) -> None:
        with self._lock:
            self._count += amount

    def _report(self) -> None:
        reported = 0
        while True:
            time.sleep(PROGRESS_INTERVAL)
            count = self._count
            if count != reported:
                sys.stderr.write(f"progress {count}\n")
                sys.stderr.flush()
                reported = count
