"""Running the store conformance steps (tests/conformance/test_stores.py): brokers of either
implementation on a given store directory, the Java traffic drivers (conformance/drivers
StoreTraffic / StoreStream), a producer stream with the broker killed by kill -9 in its
middle, and rmq's offline readers (`rmq inspect`, `rmq spark-export`) as the user runs them.
"""

from __future__ import annotations

import json
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.cli_forkserver import run as cli_run
from tests.conformance.clusters import BROKER_PROPS, DELAY_LEVELS
from tests.conformance.java import DriverError, java_argv, java_env, run_driver, start_apache_broker
from tests.procs import RmqProcess, RmqProcesses, rmq_command

TOPIC = "StoreMix"
GROUP = "StoreGroup"
KILL_AFTER = 150
"""Acknowledged sends of a stream before its broker is killed."""

SMALL_FILES: dict[str, object] = {
    "mappedFileSizeCommitLog": 4096,
    "mappedFileSizeConsumeQueue": 8 * 20,
    "maxHashSlotNum": 64,
    "maxIndexNum": 200,
}
"""Store files small enough that the traffic spans several of each kind: commitlog files
closed by BLANK records, consume queue files of 8 entries, index files rolled every ~60
messages (in a geometry that is not Apache's four entries per slot)."""

PENDING_LEVEL = 4
FIRST_BROKER: dict[str, object] = {
    **SMALL_FILES,
    "messageDelayLevel": " ".join(
        "1h" if level == PENDING_LEVEL else delay
        for level, delay in enumerate(DELAY_LEVELS.split(), 1)
    ),
}
"""The broker that takes the traffic: delay level 4 is an hour, so the traffic's "pending"
message is still parked when the store changes hands.  The brokers started on the store
later (`store_props`) have the usual one second there: Apache delivers a parked message whose
stored delivery time lies further ahead than its own delay for the level at once
(ScheduleMessageService.correctDeliverTimestamp), and so must rmq."""


def store_props(store: Path) -> dict[str, object]:
    """The conformance broker config on `store` (root and commitlog), for either broker."""
    return {
        **BROKER_PROPS,
        **SMALL_FILES,
        "storePathRootDir": store,
        "storePathCommitLog": store / "commitlog",
    }


def start_apache_on(
    processes: RmqProcesses, name: str, namesrv_addr: str, store: Path
) -> RmqProcess:
    return start_apache_broker(processes, name, namesrv_addr=namesrv_addr, props=store_props(store))


def start_rmq_on(processes: RmqProcesses, name: str, namesrv_addr: str, store: Path) -> RmqProcess:
    return processes.start_broker(name, namesrv=namesrv_addr, props=store_props(store))


def spec(namesrv_addr: str, **extra: Any) -> dict[str, Any]:
    return {"namesrv": namesrv_addr, "topic": TOPIC, "group": GROUP, **extra}


def traffic(namesrv_addr: str, home: Path, *, read_all: bool) -> dict[str, Any]:
    """StoreTraffic.traffic: both phases sent, phase one consumed by GROUP (and, with
    `read_all`, everything read by GROUP-all)."""
    return run_driver("StoreTraffic.traffic", spec(namesrv_addr, readAll=read_all), home=home)


def resume(
    namesrv_addr: str,
    home: Path,
    *,
    unconsumed: int,
    total: int,
    keys: list[str],
    ids: list[str],
) -> dict[str, Any]:
    """StoreTraffic.resume on the broker now serving the store (`keys` and `ids` are looked
    up through its index files)."""
    return run_driver(
        "StoreTraffic.resume",
        spec(namesrv_addr, unconsumed=unconsumed, total=total, keys=keys, ids=ids),
        home=home,
    )


@dataclass
class StreamRun:
    """What a StoreStream run printed: the acknowledged sends and its RESULT."""

    acked: list[dict[str, Any]] = field(default_factory=list)
    result: dict[str, Any] = field(default_factory=dict)
    killed_after: int | None = None


def stream(
    namesrv_addr: str,
    home: Path,
    *,
    label: str,
    kill: RmqProcess | None,
    verify: list[dict[str, Any]] | None = None,
    fresh: int = 0,
    timeout: float = 120,
) -> StreamRun:
    """StoreStream.run: verify earlier acks, `fresh` new sends, and (when `kill` is a broker)
    a stream of sync sends during which `kill` gets kill -9 after KILL_AFTER acks."""
    request = spec(namesrv_addr, label=label, fresh=fresh, stream=kill is not None)
    if verify is not None:
        request["verify"] = verify
    argv = java_argv("rmq.conformance.Driver", ["StoreStream.run"], home=home, drivers=True)
    driver = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=java_env(home), cwd=home
    )
    watchdog = threading.Timer(timeout, driver.kill)
    watchdog.start()
    run = StreamRun()
    try:
        assert driver.stdin is not None and driver.stdout is not None
        driver.stdin.write(json.dumps(request).encode())
        driver.stdin.close()
        for raw in driver.stdout:
            line = raw.decode(errors="replace")
            if line.startswith("ACK "):
                run.acked.append(json.loads(line[4:]))
                if kill is not None and len(run.acked) == KILL_AFTER:
                    kill.kill()
                    run.killed_after = len(run.acked)
            elif line.startswith("RESULT "):
                run.result = json.loads(line[7:])
        driver.wait()
    finally:
        watchdog.cancel()
        if driver.poll() is None:
            driver.kill()
            driver.wait()
    if "error" in run.result or not run.result:
        raise DriverError(
            f"StoreStream.run ({label}) failed: {run.result.get('error', 'no RESULT')}\n"
            f"{run.result.get('trace', '')}"
        )
    if kill is not None and run.killed_after is None:
        raise AssertionError(f"stream {label}: only {len(run.acked)} sends acknowledged")
    return run


def rmq_cli(args: list[str], *, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`python -m rmq args...`; stdout and stderr as text."""
    return cli_run(rmq_command(args), capture_output=True, text=True, timeout=timeout, check=False)


def inspect_json(store: Path, *args: str) -> Any:
    """`rmq inspect STORE args... -o json`, which must exit 0 and print no warning."""
    done = rmq_cli(["inspect", str(store), *args, "-o", "json"])
    assert done.returncode == 0 and "warning" not in done.stderr, (
        f"rmq inspect {' '.join(args)} exited {done.returncode}\n{done.stderr}\n{done.stdout}"
    )
    return json.loads(done.stdout)


def inspect_export(store: Path, *args: str) -> list[dict[str, Any]]:
    """`rmq inspect STORE export args...` (NDJSON), which must exit 0 and print no warning."""
    done = rmq_cli(["inspect", str(store), "export", *args])
    assert done.returncode == 0 and "warning" not in done.stderr, (
        f"rmq inspect export exited {done.returncode}\n{done.stderr}"
    )
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
