"""Run the Apache C++ client (PyPI wheel `rocketmq==0.4.4`) in subprocesses for interop tests.

The wheel wraps `librocketmq.so` (rocketmq-client-cpp 1.2.x) with ctypes.  A crash or a hang in
native code must fail one test, not the whole run, so every producer or consumer runs in its
own Python subprocess (a driver script in `cpp_drivers/`), with:

* HOME pointed at a temporary directory (the library writes `$HOME/logs/rocketmq-cpp`);
* a unique group and instance name unless the caller chooses them;
* a hard timeout, after which the whole process group is killed;
* its result as one JSON object on the last line of stdout.

`run_cpp(driver, spec, timeout)` passes `spec` (a JSON object) to the driver and returns what
it printed.  Drivers:

`produce` - spec: `namesrv`, `topic`, `messages` (list of `{body, tags, keys, properties,
delay_level}`, all optional), `mode` (`sync` default, `oneway`, `orderly` with `orderly_arg`),
optional `group`, `instance`, `send_timeout_ms`.  Result: `{"results": [...]}`, one entry per
message: `{"ok": true, "status", "msg_id", "offset", "elapsed"}` or
`{"ok": false, "error_type", "error", "elapsed"}` (elapsed in seconds).

`consume` - spec: `namesrv`, `topic`, optional `expression` (default `*`), `count` (stop after
that many messages), `max_wait` (seconds, default 15), `orderly`, `properties` (names to read
from each message), `group`, `instance`.  Result: `{"messages": [{"topic", "tags", "keys",
"body", "msg_id", "queue_id", "queue_offset", "reconsume_times", "properties"}]}`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DRIVER_DIR = Path(__file__).with_name("cpp_drivers")


class CppClientError(AssertionError):
    """The driver crashed, hung past its timeout or printed no JSON result."""


@dataclass(frozen=True)
class CppRun:
    result: dict[str, Any]
    elapsed: float
    stderr: str


def unique_name(prefix: str) -> str:
    """A group or instance name no other test (or earlier run) uses."""
    return f"{prefix}_{os.getpid()}_{uuid.uuid4().hex[:10]}"


def run_cpp(
    driver: str,
    spec: Mapping[str, Any],
    timeout: float,
    home: Path | None = None,
) -> CppRun:
    """Run `cpp_drivers/<driver>.py` with `spec` and return its JSON result."""
    script = DRIVER_DIR / f"{driver}.py"
    if not script.is_file():
        raise ValueError(f"no C++ client driver named {driver!r} in {DRIVER_DIR}")
    full_spec = {"group": unique_name(f"GID_{driver}"), "instance": unique_name("inst"), **spec}
    with tempfile.TemporaryDirectory(prefix="rmq-cpp-home-") as temp_home:
        env = {**os.environ, "HOME": str(home if home is not None else temp_home)}
        started = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, str(script), json.dumps(full_spec)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            start_new_session=True,
        )
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            stdout, stderr = proc.communicate()
            raise CppClientError(
                f"C++ {driver} driver did not finish within {timeout} s\n"
                f"stdout:\n{stdout}\nstderr:\n{stderr}"
            ) from None
        elapsed = time.monotonic() - started
    result = _last_json_line(stdout)
    if proc.returncode != 0 or result is None:
        raise CppClientError(
            f"C++ {driver} driver exited with {proc.returncode}\n"
            f"stdout:\n{stdout}\nstderr:\n{stderr}"
        )
    return CppRun(result, elapsed, stderr)


def _last_json_line(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except ValueError:
                return None
            return value if isinstance(value, dict) else None
    return None
