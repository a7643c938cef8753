"""The load generators of the side-by-side run (bench/versus_apache.py) and how each of
their figures is read: `rmq bench` through the CLI, Apache's benchmark tools from
rocketmq-example (`java_tool`, the Producer's TPS lines parsed by `java_send_tps`, the
Consumer's rate read off the group's committed offsets by `ConsumedWatch`), the Apache C++
client's sync sends, and a broker's anonymous RSS sampled while a step runs (`peak_rss`).
A generator that fails raises `StepFailed`: its figure stays empty and the run goes on."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.conformance.clusters import Cluster
from tests.conformance.java import java_argv, java_env
from tests.interop.cpp_client import CppClientError, run_cpp_all
from tests.procs import RmqProcess

RMQ = Path(sys.executable).with_name("rmq")
BODY = 1024
TOPIC = "VersusSend"
CONSUME_TOPIC = "VersusConsume"
JAVA_TOOL_HEAP = ("-Xms256m", "-Xmx512m", "-XX:+UseG1GC")
SEND_TPS = re.compile(r"Send TPS: (\d+) Max RT: (\d+) Average RT: +([\d.]+)")


class StepFailed(Exception):
    """A load generator failed: the step's figure is missing, the run goes on."""


def progress(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


# --- load generators --------------------------------------------------------------------------


def rmq_cli(side: Cluster, *args: str, timeout: float = 600) -> str:
    done = subprocess.run(
        [str(RMQ), *args, "-n", side.namesrv_addr],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise StepFailed(f"rmq {' '.join(args)} against {side.kind}: {done.stderr.strip()}")
    return done.stdout


def rmq_bench(side: Cluster, *args: str) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(rmq_cli(side, "bench", *args, "--json"))
    return result


def java_tool(
    side: Cluster,
    main: str,
    args: Sequence[str],
    seconds: float,
    name: str,
    until: Callable[[], bool] = lambda: False,
) -> str:
    """Run an Apache benchmark tool (it never stops by itself) for `seconds` or until `until`
    (called in the meantime, blocking as it likes) returns true; its stdout."""
    home = side.processes.root / f"java-{name}"
    argv = java_argv(
        f"org.apache.rocketmq.example.benchmark.{main}",
        ["-n", side.namesrv_addr, *args],
        home=home,
        heap=JAVA_TOOL_HEAP,
    )
    out = home / "stdout.txt"
    with out.open("wb") as stdout:
        tool = subprocess.Popen(
            argv, stdout=stdout, stderr=subprocess.STDOUT, env=java_env(home), cwd=home
        )
        try:
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline and not until():
                with contextlib.suppress(subprocess.TimeoutExpired):
                    tool.wait(min(0.2, max(0.0, deadline - time.monotonic())))
                    raise StepFailed(
                        f"{main} exited early on {side.kind}: {out.read_text()[-2000:]}"
                    )
        finally:
            tool.terminate()
            tool.wait(30)
    return out.read_text(errors="replace")


def java_send_tps(side: Cluster, threads: int, seconds: float, name: str) -> float | None:
    lines = SEND_TPS.findall(
        java_tool(
            side, "Producer", ["-t", TOPIC, "-w", str(threads), "-s", str(BODY)], seconds, name
        )
    )
    return float(lines[-1][0]) if lines else None


class ConsumedWatch:
    """Polls a group's committed offsets on a topic (GET_CONSUME_STATS, which a push
    consumer's pulls keep current); true once `total` messages are committed.  `rate` is
    messages ÷ seconds from the first poll that saw progress to the one that saw all."""

    def __init__(self, namesrv: str, group: str, topic: str, total: int) -> None:
        self.namesrv, self.group, self.topic, self.total = namesrv, group, topic, total
        self.first: tuple[float, int] | None = None
        self.last: tuple[float, int] | None = None
        self.loop = asyncio.new_event_loop()

    def committed(self) -> int:
        from rmq.client.admin import AdminClient
        from rmq.client.adminops.consumer import consume_stats
        from rmq.client.errors import ClientError
        from rmq.remoting.errors import RemotingError

        async def poll() -> int:
            async with AdminClient(self.namesrv) as admin:
                try:
                    stats = await consume_stats(admin, self.group, self.topic)
                except (ClientError, RemotingError):
                    return 0
            return sum(wrapper.consumer_offset for wrapper in stats.offset_table.values())

        return self.loop.run_until_complete(poll())

    def __call__(self) -> bool:
        done = self.committed()
        now = time.perf_counter()
        if done and self.first is None:
            self.first = (now, done)
        if done:
            self.last = (now, done)
        return done >= self.total

    @property
    def rate(self) -> float | None:
        if self.first is None or self.last is None or self.last[0] <= self.first[0]:
            return None
        return (self.last[1] - self.first[1]) / (self.last[0] - self.first[0])

    def close(self) -> None:
        self.loop.close()


@contextmanager
def peak_rss(process: RmqProcess) -> Iterator[list[int]]:
    """Sample the process's RssAnon every 0.2 s while the block runs; yields [highest]."""
    peak = [process.rss_anon()]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.2):
            try:
                peak[0] = max(peak[0], process.rss_anon())
            except (OSError, AssertionError):
                return

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield peak
    finally:
        done.set()
        sampler.join()


def cpp_send_rate(side: Cluster, count: int, producers: int = 1) -> float:
    """Sync sends of `count` 1 KiB messages by the Apache C++ client, one at a time per
    producer, `producers` producer processes at once (the library misbehaves with one producer
    shared by threads): the sum of each producer's messages ÷ the sum of its send times.  The
    processes start within a second of each other and each sends for several seconds."""
    body = "x" * BODY
    share = count // producers
    spec = {"namesrv": side.namesrv_addr, "topic": TOPIC, "messages": [{"body": body}] * share}
    try:
        runs = run_cpp_all("produce", [spec] * producers, timeout=600)
    except CppClientError as exc:
        raise StepFailed(f"C++ client on {side.kind}: {str(exc).splitlines()[0]}") from None
    rate = 0.0
    for run in runs:
        results = run.result["results"]
        failed = [entry for entry in results if not entry["ok"]]
        if failed:
            raise StepFailed(f"C++ client sends failed on {side.kind}: {failed[:3]}")
        rate += share / float(sum(entry["elapsed"] for entry in results))
    return rate


# --- the run ----------------------------------------------------------------------------------


def tps(report: Mapping[str, Any] | None, key: str = "sendTps") -> float | None:
    return None if report is None else float(report[key])


def send(side: Cluster, *options: str) -> dict[str, Any]:
    """`rmq bench produce` of 1 KiB messages to the send topic."""
    return rmq_bench(side, "produce", "-t", TOPIC, "-s", str(BODY), *options)


def drain(side: Cluster, group: str, backlog: str, *options: str) -> float:
    """`rmq bench consume` of the whole backlog by a new group: its messages/s."""
    report = rmq_bench(
        side,
        "consume",
        *options,
        "-t",
        CONSUME_TOPIC,
        "-g",
        group,
        "--from",
        "first",
        "-c",
        backlog,
        "-d",
        str(max(60, int(backlog) // 4000)),
    )
    return float(report["consumeTps"])
