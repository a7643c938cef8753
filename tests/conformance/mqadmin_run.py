"""Running Apache's mqadmin and the Java clients the mqadmin tests need.

* `mqadmin` runs one command through `rmq.conformance.MqAdmin` (conformance/drivers), which is
  MQAdminStartup.main followed by System.exit: the same program and output as `run_mqadmin`,
  without the ~3 s mqadmin spends after the command waiting for Netty's event loops to wind
  down.  `mqadmin_texts` runs several commands that only print text (help) in one JVM
  (`rmq.conformance.MqAdminTexts`).  `mqadmin_until` runs a command that never ends
  (clusterRT) with MQAdminStartup itself and kills it once its output holds what the caller
  waits for; `mqadmin_monitor` does the same for startMonitoring, whose reports
  go to the client log.
* `rmq_mqadmin` / `rmq_mqadmin_until` run `rmq mqadmin` the same ways, for the column that
  compares rmq's mqadmin with Apache's against the same cluster.
* `Clients` is one `rmq.conformance.MqAdminClients` process: it sets up a cluster (topics,
  groups, messages, a traced message, a push consumer that has consumed everything) and keeps
  its producer and consumer connected until `close`.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from tests.cli_forkserver import run as cli_run
from tests.conformance.java import java_argv, java_env, run_driver, run_java
from tests.procs import rmq_command

MQADMIN_MAIN = "org.apache.rocketmq.tools.command.MQAdminStartup"


def mqadmin(
    args: Sequence[str], *, home: Path, timeout: float = 60, rocketmq_home: Path | None = None
) -> str:
    """stdout of `mqadmin args...` (mqadmin exits 0 whatever happened; stderr holds traces);
    `rocketmq_home` replaces the distribution's home (its `conf/tools.yml` signs requests)."""
    props = {"rocketmq.home.dir": str(rocketmq_home)} if rocketmq_home is not None else None
    done = run_java(
        "rmq.conformance.MqAdmin", args, home=home, timeout=timeout, drivers=True, props=props
    )
    return done.stdout + _stderr_block(done.stderr)


def mqadmin_texts(runs: Sequence[Sequence[str]], *, home: Path, timeout: float = 120) -> list[str]:
    """What `mqadmin` would give for each of `runs`, all run in one JVM; only for commands
    that print and return (not `-h` or a parse error: those end the JVM)."""
    result = run_driver("MqAdminTexts.runs", {"runs": runs}, home=home, timeout=timeout)
    return [out["stdout"] + _stderr_block(out["stderr"]) for out in result["outputs"]]


def _stderr_block(stderr: str) -> str:
    """Exceptions mqadmin prints go to stderr; they are part of what the command showed."""
    lines = [line for line in stderr.splitlines() if not line.startswith("WARNING:")]
    return "".join(f"STDERR {line}\n" for line in lines)


def rmq_mqadmin(
    args: Sequence[str], *, home: Path, timeout: float = 60, rocketmq_home: Path | None = None
) -> str:
    """stdout of `rmq mqadmin args...` and its stderr as `mqadmin` shows Apache's;
    `rocketmq_home` is its ROCKETMQ_HOME (whose `conf/tools.yml` signs requests)."""
    env = _rmq_env(home)
    if rocketmq_home is not None:
        env["ROCKETMQ_HOME"] = str(rocketmq_home)
    done = cli_run(
        rmq_command(["mqadmin", *args]),
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=home,
        check=False,
    )
    return done.stdout + _stderr_block(done.stderr)


def _rmq_env(home: Path) -> dict[str, str]:
    home.mkdir(parents=True, exist_ok=True)
    env = {key: value for key, value in os.environ.items() if key != "NAMESRV_ADDR"}
    return {**env, "HOME": str(home)}


def rmq_mqadmin_until(
    args: Sequence[str], done: Callable[[str], bool], *, home: Path, timeout: float = 60
) -> str:
    """Run `rmq mqadmin args...` until `done(stdout so far)` holds, then kill it."""
    return _read_until(rmq_command(["mqadmin", *args]), _rmq_env(home), home, done, timeout)


def mqadmin_until(
    args: Sequence[str], done: Callable[[str], bool], *, home: Path, timeout: float = 60
) -> str:
    """Run MQAdminStartup `args` until `done(stdout so far)` holds, then kill it."""
    argv = java_argv(MQADMIN_MAIN, args, home=home)
    return _read_until(argv, java_env(home), home, done, timeout)


def _read_until(
    argv: Sequence[str],
    env: Mapping[str, str],
    home: Path,
    done: Callable[[str], bool],
    timeout: float,
) -> str:
    """Run `argv` in `home` until `done(stdout so far)` holds, then kill it."""
    process = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, cwd=home
    )
    assert process.stdout is not None
    lines = _reader(process.stdout)
    output = ""
    deadline = time.monotonic() + timeout
    try:
        while not done(output):
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{' '.join(argv)}: no complete report in {timeout}s")
            try:
                line = lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                break
            output += line
        return output
    finally:
        process.kill()
        process.wait(timeout=30)


def mqadmin_monitor(args: Sequence[str], *, home: Path, timeout: float = 90) -> str:
    """startMonitoring: MQAdminStartup with the client log at INFO, where MonitorService writes
    its reports (the first one 20 s after the start); returns the first report (beginRound to
    endRound) without the log's timestamp / level / thread prefix, then kills the process."""
    log = home / "logs" / "rocketmq_client.log"
    argv = java_argv(MQADMIN_MAIN, args, home=home, props={"rocketmq.client.logLevel": "INFO"})
    process = subprocess.Popen(
        argv,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=java_env(home),
        cwd=home,
    )
    deadline = time.monotonic() + timeout
    try:
        while True:
            text = log.read_text(errors="replace") if log.exists() else ""
            report = _first_report(text)
            if report is not None:
                return report
            if process.poll() is not None:
                raise AssertionError(f"startMonitoring exited ({process.returncode}):\n{text}")
            if time.monotonic() > deadline:
                raise AssertionError(f"startMonitoring: no complete report in {timeout}s")
            time.sleep(0.2)
    finally:
        process.kill()
        process.wait(timeout=30)


def _first_report(log: str) -> str | None:
    lines = [line.split(" - ", 1)[-1] for line in log.splitlines() if "[MONITOR]" in line]
    begin = next((i for i, line in enumerate(lines) if "beginRound" in line), None)
    if begin is None:
        return None
    for end in range(begin, len(lines)):
        if "endRound" in lines[end]:
            return "".join(line + "\n" for line in lines[begin : end + 1])
    return None


def _reader(stream: IO[str]) -> queue.Queue[str | None]:
    """Lines of `stream` as a thread reads them; None at the end."""
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        for line in stream:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return lines


class Clients:
    """A running MqAdminClients process and what it reported when it was ready."""

    def __init__(self, spec: Mapping[str, Any], *, home: Path, timeout: float = 120) -> None:
        argv = java_argv("rmq.conformance.MqAdminClients", [], home=home, drivers=True)
        self.log = home / "clients.out"
        home.mkdir(parents=True, exist_ok=True)
        self._out = self.log.open("w")
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._out,
            text=True,
            env=java_env(home),
            cwd=home,
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(spec) + "\n")
        self.process.stdin.flush()
        self.ready = self._await_ready(_reader(self.process.stdout), timeout)

    def _await_ready(self, lines: queue.Queue[str | None], timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        seen: list[str] = []
        while True:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                line = None
            if line is None:
                self.close()
                raise AssertionError(
                    f"MqAdminClients ({self.log}) did not get ready: {''.join(seen)}\n"
                    f"{self.log.read_text(errors='replace')[-4000:]}"
                )
            if line.startswith("READY "):
                ready: dict[str, Any] = json.loads(line[6:])
                return ready
            seen.append(line)

    def close(self) -> None:
        """Close stdin (the clients shut down), or kill them when they do not."""
        if self.process.poll() is None:
            try:
                assert self.process.stdin is not None
                self.process.stdin.close()
                self.process.wait(timeout=30)
            except (subprocess.TimeoutExpired, BrokenPipeError):
                self.process.kill()
                self.process.wait(timeout=30)
        self._out.close()
