"""Run the Apache C++ client (PyPI wheel `rocketmq==0.4.4`) in subprocesses for interop tests.

The wheel wraps `librocketmq.so` (rocketmq-client-cpp 1.2.x) with ctypes.  A crash or a hang in
native code must fail one test, not the whole run, so every producer or consumer runs in its
own Python subprocess (a driver script in `cpp_drivers/`), with:

* HOME pointed at a temporary directory (the library writes `$HOME/logs/rocketmq-cpp`);
* a unique group and instance name unless the caller chooses them;
* the spec as one JSON object on stdin, so it may be of any size;
* stdout and stderr in files, so any number of drivers can run side by side without a
  thread per pipe: stdout holds the JSON result and nothing else, stderr the library's noise
  and `progress <n>` lines;
* a hard timeout, after which the whole process group is killed.

`run_cpp(driver, spec, timeout)` runs one driver and returns its result.  `start_cpp` starts
one and returns a `CppProcess` to follow (`progress`; `allocation`, the queues the client's
last rebalance gave it, read from the client's own log), stop early (`stop`: SIGTERM, the
driver still reports) and `wait` for; `run_cpp_all` runs several at once.  `send_all` sends
batches of messages with one producer process per batch, all at once (one producer per
process: several threads sharing one C++ producer see spurious "No route info").  Drivers:

`produce` - spec: `namesrv`, `topic`, `messages` (list of `{body, tags, keys, properties,
delay_level, orderly_arg}`, all optional), `mode` (`sync` default, `oneway`, `orderly` with
`orderly_arg`, which a message's own `orderly_arg` overrides: the queue is `arg % queues`;
`orderly_retries`, the client's own retries of an orderly send, default 3), `retry_for`
(seconds to keep re-sending a failed message, default 0) and `retry_interval` (default 0.2),
optional `group`, `instance`, `send_timeout_ms`, and `access_key` / `secret_key` (with
optional `channel`): session credentials, so every request is signed for a plain-ACL broker.
Result: `{"results": [...]}`, one entry per
message, in order: `{"ok": true, "status", "msg_id", "offset", "queue_id" (orderly mode only),
"attempts", "elapsed"}` or `{"ok": false, "error_type", "error", "attempts"}` (with `elapsed`
unless `error_type` is `Stopped`: not sent because of SIGTERM); `elapsed` is in seconds from
the first attempt.  Progress counts acknowledged messages.

`consume` - spec: `namesrv`, `topic`, optional `expression` (default `*`), `count` (stop
after that many messages), `linger` (seconds to keep collecting after `count`, default 0),
`max_wait` (seconds, default 15), `orderly`, `properties` (names to read from each message),
`group`, `instance`.  Result: `{"messages": [{"topic", "tags", "keys", "body", "msg_id",
"queue_id", "queue_offset", "reconsume_times", "properties"}], "elapsed"}`.  Progress counts
messages received.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

DRIVER_DIR = Path(__file__).with_name("cpp_drivers")
PROGRESS_LINE = re.compile(rb"^progress (\d+)$", re.MULTILINE)
REBALANCE_MEMBER = re.compile(r"client id:(\S+) of topic:([^\s\[]+)\[")
REBALANCE_RANGE = "range is:"
REBALANCE_QUEUE = re.compile(r"allocate mq:MessageQueue \[topic=[^,]+, [^\]]*queueId=(\d+)\]")


class CppClientError(AssertionError):
    """The driver crashed, hung past its timeout or printed no JSON result."""


@dataclass(frozen=True)
class CppRun:
    result: dict[str, Any]
    elapsed: float
    stderr: str


@dataclass(frozen=True)
class Allocation:
    """One rebalance of a topic as a consumer logged it: the group's members it saw and the
    queue ids it took."""

    members: frozenset[str]
    queue_ids: frozenset[int]


def unique_name(prefix: str) -> str:
    """A group or instance name no other test (or earlier run) uses."""
    return f"{prefix}_{os.getpid()}_{uuid.uuid4().hex[:10]}"


class CppProcess:
    """One running driver (see `start_cpp`).  Use as a context manager or call `close`."""

    def __init__(
        self, driver: str, spec: Mapping[str, Any], timeout: float, home: Path | None
    ) -> None:
        script = DRIVER_DIR / f"{driver}.py"
        if not script.is_file():
            raise ValueError(f"no C++ client driver named {driver!r} in {DRIVER_DIR}")
        self.driver = driver
        self.spec = {"group": unique_name(f"GID_{driver}"), "instance": unique_name("inst"), **spec}
        self._workdir = Path(tempfile.mkdtemp(prefix=f"rmq-cpp-{driver}-"))
        self._stdout_path = self._workdir / "stdout"
        self._stderr_path = self._workdir / "stderr"
        spec_path = self._workdir / "spec.json"
        spec_path.write_text(json.dumps(self.spec), encoding="utf-8")
        self.home = home if home is not None else self._workdir
        env = {**os.environ, "HOME": str(self.home)}
        self.started = time.monotonic()
        self._deadline = self.started + timeout
        self._timeout = timeout
        with (
            spec_path.open("rb") as stdin,
            self._stdout_path.open("wb") as stdout,
            self._stderr_path.open("wb") as stderr,
        ):
            self.popen = subprocess.Popen(
                [sys.executable, str(script)],
                stdin=stdin,
                stdout=stdout,
                stderr=stderr,
                env=env,
                start_new_session=True,
            )

    def progress(self) -> int:
        """The driver's last reported count (0 before its first report)."""
        counts = PROGRESS_LINE.findall(self._stderr_path.read_bytes())
        return int(counts[-1]) if counts else 0

    def native_log(self) -> str:
        """What the C++ library logged so far (`$HOME/logs/rocketmq-cpp/<pid>_*`)."""
        log_dir = self.home / "logs" / "rocketmq-cpp"
        files = sorted(log_dir.glob(f"{self.popen.pid}_rocketmq-cpp.log*"))
        return "".join(path.read_text(errors="replace") for path in files)

    def allocation(self, topic: str) -> Allocation | None:
        """The consumer's latest logged rebalance of `topic` (None before the first).

        The client logs a rebalance of a topic as one `client id:<id> of topic:<topic>` line
        per member it found, a `range is:` line, then one `allocate mq:` line per queue taken.
        """
        latest: Allocation | None = None
        members: set[str] = set()
        queue_ids: set[int] = set()
        state = "other"
        for line in self.native_log().splitlines():
            if member := REBALANCE_MEMBER.search(line):
                if member.group(2) != topic:
                    state = "other"
                    continue
                if state != "members":
                    members, queue_ids, state = set(), set(), "members"
                members.add(member.group(1))
            elif REBALANCE_RANGE in line and state == "members":
                state = "allocating"
            elif (queue := REBALANCE_QUEUE.search(line)) and state == "allocating":
                queue_ids.add(int(queue.group(1)))
            else:
                continue
            if state == "allocating":
                latest = Allocation(frozenset(members), frozenset(queue_ids))
        return latest

    def stop(self) -> None:
        """Ask the driver to finish now (SIGTERM); `wait` still returns its result."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)

    def wait(self) -> CppRun:
        """Wait for the result; `CppClientError` on a crash, no result or the timeout.  A
        driver that wrote its whole result and then died in the C++ library's shutdown
        (`boost::thread_interrupted`, seen with several producers at once and with a consumer
        on a busy machine) still counts: the drivers write their result before they shut the
        client down, so its sends or receipts were done."""
        try:
            self.popen.wait(max(self._deadline - time.monotonic(), 0))
        except subprocess.TimeoutExpired:
            self._kill()
            raise CppClientError(
                f"C++ {self.driver} driver did not finish within {self._timeout} s\n"
                f"{self._output()}"
            ) from None
        elapsed = time.monotonic() - self.started
        stdout = self._stdout_path.read_text(encoding="utf-8", errors="replace")
        try:
            result = json.loads(stdout)
        except ValueError:
            result = None
        crashed_at_exit = isinstance(
            result, dict
        ) and "thread_interrupted" in self._stderr_path.read_text(errors="replace")
        if (self.popen.returncode != 0 and not crashed_at_exit) or not isinstance(result, dict):
            raise CppClientError(
                f"C++ {self.driver} driver exited with {self.popen.returncode}\n{self._output()}"
            )
        return CppRun(result, elapsed, self._stderr_path.read_text(errors="replace"))

    def close(self) -> None:
        """Kill the driver if it still runs and remove its files."""
        self._kill()
        shutil.rmtree(self._workdir, ignore_errors=True)

    def __enter__(self) -> CppProcess:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _kill(self) -> None:
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, signal.SIGKILL)
        self.popen.wait()

    def _output(self) -> str:
        stdout = self._stdout_path.read_text(encoding="utf-8", errors="replace")
        stderr = self._stderr_path.read_text(encoding="utf-8", errors="replace")
        return f"stdout:\n{stdout}\nstderr:\n{stderr}"


def start_cpp(
    driver: str, spec: Mapping[str, Any], timeout: float, home: Path | None = None
) -> CppProcess:
    """Start `cpp_drivers/<driver>.py` with `spec`; HOME is `home` or a private temp dir."""
    return CppProcess(driver, spec, timeout, home)


def run_cpp(
    driver: str,
    spec: Mapping[str, Any],
    timeout: float,
    home: Path | None = None,
) -> CppRun:
    """Run `cpp_drivers/<driver>.py` with `spec` and return its JSON result."""
    with start_cpp(driver, spec, timeout, home) as process:
        return process.wait()


def run_cpp_all(
    driver: str,
    specs: Sequence[Mapping[str, Any]],
    timeout: float,
) -> list[CppRun]:
    """Run one `driver` process per spec, all at once; their results in `specs` order."""
    processes: list[CppProcess] = []
    try:
        for spec in specs:
            processes.append(start_cpp(driver, spec, timeout))
        return [process.wait() for process in processes]
    finally:
        for process in processes:
            process.close()


def send_all(
    namesrv: str,
    topic: str,
    batches: Sequence[Sequence[Mapping[str, Any]]],
    timeout: float = 120,
    **spec: Any,
) -> list[tuple[Mapping[str, Any], dict[str, Any]]]:
    """Send every batch with a `produce` driver of its own, all at once (`spec` adds to each
    driver's spec); every message with its acknowledgement.  Fails if a send failed."""
    specs = [{"namesrv": namesrv, "topic": topic, "messages": list(b), **spec} for b in batches]
    runs = run_cpp_all("produce", specs, timeout)
    sent = [
        (fields, outcome)
        for batch, run in zip(batches, runs, strict=True)
        for fields, outcome in zip(batch, run.result["results"], strict=True)
    ]
    failed = [outcome for _, outcome in sent if not outcome["ok"]]
    assert not failed, f"{len(failed)} of {len(sent)} sends failed, e.g. {failed[:3]}"
    return sent
