"""rmq beside Apache RocketMQ 4.9.8 on the same machine, in one run: every figure as rmq ÷ Apache.

Two clusters run side by side, each one name server and one master broker with the same
settings (`broker_props`: ASYNC_MASTER, ASYNC_FLUSH — SYNC_FLUSH for the one case so named —,
Apache's default 1 GiB commitlog files and consume-queue and index sizes): Apache's
NamesrvStartup + BrokerStartup from conformance/apache/lib (the broker's JVM with -Xms1g
-Xmx1g) and `rmq namesrv` + `rmq broker`.  The same load generators drive both, one after the
other, Apache first then rmq for every step:

* Apache's own benchmark tools (rocketmq-example 4.7.0's `benchmark.Producer` and `Consumer`
  on the 4.9.8 client; rocketmq-example has no `BatchProducer` before 4.9.x, and no 4.9.x
  release on Maven Central): sync sends with 1, 16 and 64 threads (one send in flight each)
  and a push consumer; the Producer prints its TPS every 10 s over the last 9 s, and the last
  line printed is the figure; the Consumer's rate is read off the group's committed offsets
  (`ConsumedWatch`), as its own lines cover 9-second windows a backlog may not fill;
* the Apache C++ client (tests/interop/cpp_client.py's `produce` driver): sync sends, one in
  flight, messages ÷ the sum of send times;
* `rmq bench`: sync sends with 1, 16 and 64 in flight, batched sends (32 a batch, 4 in
  flight), push and pull consume of a backlog, and a rate-limited run at 10,000 msg/s whose
  latency percentiles are measured from each send's due time.

Before measuring, each broker gets the same warm-up (both generators for `warmup` seconds).
Then: SYNC_FLUSH with 64 in flight (both clusters restarted with fresh stores); the restart
time of a broker on a store of `--store-gib` GiB (built once with rmq's store, which writes
Apache's format byte for byte; Apache's broker starts on it first, rmq's then on the same
files: process start to the port answering and the name server listing the broker);
anonymous RSS (RssAnon) of each broker process idle after start and the highest seen during
the 64-in-flight sends.

    python bench/versus_apache.py [--quick] [--store-gib N] [--no-write]

`--quick` (short runs, a 1 GiB store) is for checking the harness; the full run takes about
20 minutes.  Progress goes to stderr.  The result is bench/results/versus_apache.json (or
versus_apache-quick.json) and, unless `--no-write`, the generated block of docs/benchmarks.md
(bench/versus_report.py).  Scratch space: $RMQ_BENCH_DIR or the temp dir; the run refuses to
start when the store and the brokers' data would take that disk past 85 % used, where both
brokers start deleting commitlog files.  Needs `make apache` and the test extras.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: the tests package holds the server starters
    sys.path.insert(0, str(ROOT))

import versus_report  # noqa: E402
from spark_bench import build_store  # noqa: E402
from versus_load import (  # noqa: E402
    BODY,
    CONSUME_TOPIC,
    TOPIC,
    ConsumedWatch,
    StepFailed,
    cpp_send_rate,
    drain,
    java_send_tps,
    java_tool,
    peak_rss,
    progress,
    rmq_bench,
    rmq_cli,
    send,
    tps,
)

from tests.conformance.clusters import Cluster, stop  # noqa: E402
from tests.conformance.java import (  # noqa: E402
    SERVER_HEAP,
    ensure_built,
    start_apache_broker,
    start_apache_namesrv,
)
from tests.procs import RmqProcess, RmqProcesses  # noqa: E402

RESULTS = ROOT / "bench" / "results"
GIB = 1 << 30
DISK_LIMIT = 0.85
QUEUES = 8
APACHE_BROKER_HEAP = ("-Xms1g", "-Xmx1g", "-XX:+UseG1GC")
T = TypeVar("T")


@dataclass(frozen=True)
class Plan:
    """How long each step runs."""

    warmup: float
    java_seconds: float
    """A Java tool's run: it prints a TPS line every 10 s, the first at 10 s or, when its two
    timer tasks run in the other order, at 20 s; over 20 s leaves at least one."""
    rmq_seconds: float
    backlog: int
    cpp_messages: int
    store_gib: int
    broker_data_gib: int
    """What the two brokers' stores reach together during the send and consume cases."""


QUICK = Plan(
    warmup=4,
    java_seconds=21.5,
    rmq_seconds=4,
    backlog=150_000,
    cpp_messages=2_000,
    store_gib=1,
    broker_data_gib=3,
)
FULL = Plan(
    warmup=15,
    java_seconds=21.5,
    rmq_seconds=15,
    backlog=600_000,
    cpp_messages=10_000,
    store_gib=10,
    broker_data_gib=9,
)


CPP_EIGHT = "Apache C++ client 1.2, 8 producers"


def cpp_eight(side: Cluster, plan: Plan) -> float:
    """Eight C++ producers at once, one send in flight each (the sum of their rates)."""
    return cpp_send_rate(side, plan.cpp_messages * 4, producers=8)


def broker_props(flush: str) -> dict[str, object]:
    """The settings both brokers run with (Apache's defaults for every file size)."""
    return {
        "brokerClusterName": "DefaultCluster",
        "brokerName": "broker-a",
        "brokerId": 0,
        "brokerRole": "ASYNC_MASTER",
        "flushDiskType": flush,
        "mappedFileSizeCommitLog": GIB,
        "mappedFileSizeConsumeQueue": 300_000 * 20,
        "maxHashSlotNum": 5_000_000,
        "maxIndexNum": 20_000_000,
        "autoCreateTopicEnable": True,
        "autoCreateSubscriptionGroup": True,
        # clean by disk use only from 85 % (both brokers' forcible ratio), not from 75 %
        "diskMaxUsedSpaceRatio": 95,
    }


# --- the two clusters -------------------------------------------------------------------------


def start_broker(
    kind: str, processes: RmqProcesses, namesrv: RmqProcess, props: Mapping[str, object]
) -> RmqProcess:
    if kind == "apache":
        return start_apache_broker(
            processes,
            "apache-broker",
            namesrv_addr=namesrv.addr,
            props=props,
            heap=APACHE_BROKER_HEAP,
            ready_timeout=900,
        )
    return processes.start_broker("rmq-broker", namesrv=namesrv, props=props, ready_timeout=900)


def start_side(kind: str, root: Path, flush: str) -> Cluster:
    root.mkdir(parents=True, exist_ok=True)
    processes = RmqProcesses(root)
    if kind == "apache":
        namesrv = start_apache_namesrv(processes, heap=SERVER_HEAP)
        store = root / "apache-broker-home" / "store"
    else:
        namesrv = processes.start_namesrv("rmq-namesrv")
        store = root / "rmq-broker-home" / "store"
    props = {
        **broker_props(flush),
        "storePathRootDir": store,
        "storePathCommitLog": store / "commitlog",
    }
    broker = start_broker(kind, processes, namesrv, props)
    side = Cluster(kind, processes, namesrv, broker)
    for topic in (TOPIC, CONSUME_TOPIC):
        rmq_cli(side, "topic", "create", topic, "-r", str(QUEUES), "-w", str(QUEUES))
    return side


class Figures:
    """The figures measured so far, in table order."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.failures: list[str] = []

    def attempt(self, step: Callable[..., T], *args: Any, **kwargs: Any) -> T | None:
        """`step(*args, **kwargs)`, or None (and the failure noted) when a load generator
        failed."""
        try:
            return step(*args, **kwargs)
        except StepFailed as exc:
            progress(f"  FAILED: {exc}")
            self.failures.append(str(exc))
            return None

    def add(
        self,
        figure: str,
        tool: str,
        unit: str,
        values: Mapping[str, float | None],
        better: str = "higher",
        note: str = "",
    ) -> None:
        row: dict[str, Any] = {
            "figure": figure,
            "tool": tool,
            "unit": unit,
            "better": better,
            "apache": values.get("apache"),
            "rmq": values.get("rmq"),
        }
        if note:
            row["note"] = note
        self.rows.append(row)
        apache, rmq = row["apache"], row["rmq"]
        shown = f"{rmq / apache:.2f}" if apache and rmq is not None else "–"
        progress(f"  {figure} / {tool}: apache {apache} rmq {rmq} (rmq ÷ Apache {shown})")


def each(
    figures: Figures, sides: Sequence[Cluster], measure: Callable[[Cluster], float | None]
) -> dict[str, float | None]:
    return {side.kind: figures.attempt(measure, side) for side in sides}


def async_flush_cases(sides: Sequence[Cluster], plan: Plan, figures: Figures) -> None:
    secs = str(plan.rmq_seconds)
    size = str(BODY)
    idle = {side.kind: side.broker.rss_anon() / (1 << 20) for side in sides}
    progress("warm-up")
    for side in sides:
        figures.attempt(send, side, "--in-flight", "16", "-d", str(plan.warmup))
        figures.attempt(
            java_tool,
            side,
            "Producer",
            ["-t", TOPIC, "-w", "16", "-s", size],
            max(plan.warmup, 2),
            "warmup",
        )

    progress("sync sends (Apache's Producer, rmq bench, the C++ client)")
    peaks: dict[str, float | None] = {}
    for threads in (1, 16, 64):
        java: dict[str, float | None] = {}
        for side in sides:
            with peak_rss(side.broker) as peak:
                java[side.kind] = figures.attempt(
                    java_send_tps, side, threads, plan.java_seconds, f"producer-{threads}"
                )
            if threads == 64:
                peaks[side.kind] = peak[0] / (1 << 20)
        figures.add(
            f"sync send, {threads} in flight", f"Apache Producer -w {threads}", "msgs/s", java
        )
        values: dict[str, float | None] = {}
        for side in sides:
            with peak_rss(side.broker) as peak:
                values[side.kind] = tps(
                    figures.attempt(send, side, "--in-flight", str(threads), "-d", secs)
                )
            if threads == 64:
                peaks[side.kind] = max(peaks[side.kind] or 0.0, peak[0] / (1 << 20))
        figures.add(
            f"sync send, {threads} in flight", f"rmq bench --in-flight {threads}", "msgs/s", values
        )
        if threads == 1:
            cpp = each(figures, sides, lambda side: cpp_send_rate(side, plan.cpp_messages))
            figures.add("sync send, 1 in flight", "Apache C++ client 1.2", "msgs/s", cpp)
        if threads == 16:
            cpp = each(figures, sides, lambda side: cpp_eight(side, plan))
            figures.add("sync send, 8 in flight", CPP_EIGHT, "msgs/s", cpp)

    progress("batched sends")
    batched = each(
        figures,
        sides,
        lambda side: tps(send(side, "-b", "32", "--in-flight", "4", "-d", secs)),
    )
    figures.add(
        "batched send (32 a batch, 4 in flight)",
        "rmq bench -b 32",
        "msgs/s",
        batched,
        note="Apache's BatchProducer is not in rocketmq-example 4.7.0, the newest on Maven Central",
    )

    progress(f"latency at 10,000 msg/s for {secs} s")
    rated = {
        side.kind: figures.attempt(send, side, "--rate", "10000", "--in-flight", "64", "-d", secs)
        for side in sides
    }
    achieved = {kind: tps(report) for kind, report in rated.items()}
    figures.add("rate achieved at 10,000 msg/s", "rmq bench --rate 10000", "msgs/s", achieved)
    for name, key in (("p50", "p50RtMs"), ("p99", "p99RtMs"), ("p99.9", "p999RtMs")):
        figures.add(
            f"{name} latency at 10,000 msg/s",
            "rmq bench --rate 10000",
            "ms",
            {kind: tps(report, key) for kind, report in rated.items()},
            better="lower",
        )

    progress(f"consume: a backlog of {plan.backlog:,} messages per consumer")
    push: dict[str, float | None] = {}
    pull: dict[str, float | None] = {}
    java = {}
    for side in sides:
        backlog = str(plan.backlog)
        produced = figures.attempt(
            rmq_bench,
            side,
            "produce",
            "-t",
            CONSUME_TOPIC,
            "-s",
            size,
            "-b",
            "32",
            "--in-flight",
            "4",
            "-c",
            backlog,
        )
        if produced is None:
            continue
        push[side.kind] = figures.attempt(drain, side, "versus_push", backlog)
        pull[side.kind] = figures.attempt(drain, side, "versus_pull", backlog, "--pull")
        watch = ConsumedWatch(side.namesrv_addr, "versus_java", CONSUME_TOPIC, plan.backlog)
        try:
            figures.attempt(
                java_tool,
                side,
                "Consumer",
                ["-t", CONSUME_TOPIC, "-g", "versus_java", "-p", "false"],
                600,
                "consumer",
                until=watch,
            )
            java[side.kind] = watch.rate
        finally:
            watch.close()
    figures.add("push consume", "rmq bench consume", "msgs/s", push)
    figures.add(
        "push consume",
        "Apache Consumer",
        "msgs/s",
        java,
        note="the group's committed offsets polled (GET_CONSUME_STATS) from the first progress "
        "seen to the whole backlog",
    )
    figures.add("pull consume (32 a pull)", "rmq bench consume --pull", "msgs/s", pull)

    figures.add("broker RssAnon, idle", "after start", "MiB", idle, better="lower")
    figures.add(
        "broker RssAnon, under load", "peak during 64 in flight", "MiB", peaks, better="lower"
    )


def sync_flush_cases(root: Path, plan: Plan, figures: Figures) -> None:
    progress("SYNC_FLUSH: fresh clusters")
    sides = [start_side(kind, root / f"sync-{kind}", "SYNC_FLUSH") for kind in ("apache", "rmq")]
    try:
        for side in sides:
            figures.attempt(send, side, "--in-flight", "16", "-d", str(plan.warmup))
        values = each(
            figures,
            sides,
            lambda side: tps(send(side, "--in-flight", "64", "-d", str(plan.rmq_seconds))),
        )
        figures.add("SYNC_FLUSH send, 64 in flight", "rmq bench --in-flight 64", "msgs/s", values)
        values = each(
            figures,
            sides,
            lambda side: tps(send(side, "--in-flight", "16", "-d", str(plan.rmq_seconds))),
        )
        figures.add("SYNC_FLUSH send, 16 in flight", "rmq bench --in-flight 16", "msgs/s", values)
        cpp = each(figures, sides, lambda side: cpp_eight(side, plan))
        figures.add("SYNC_FLUSH send, 8 in flight", CPP_EIGHT, "msgs/s", cpp)
        java = each(
            figures,
            sides,
            lambda side: java_send_tps(side, 64, plan.java_seconds, "sync-producer-64"),
        )
        figures.add("SYNC_FLUSH send, 64 in flight", "Apache Producer -w 64", "msgs/s", java)
    finally:
        for side in sides:
            stop(side)
            shutil.rmtree(side.processes.root, ignore_errors=True)


def restart_cases(root: Path, plan: Plan, figures: Figures) -> None:
    """One store, built once, restarted on by each broker in turn: Apache's first, then
    rmq's on the same files as Apache's clean shutdown left them (one copy of the store on
    disk, not two)."""
    store = root / "restart-store"
    progress(f"building a {plan.store_gib} GiB store with rmq's store")
    built = build_store(str(store), GIB, plan.store_gib * GIB)
    progress(f"  {built['messages']:,} messages in {built['build_s']:.0f} s")
    props = {
        **broker_props("ASYNC_FLUSH"),
        "storePathRootDir": store,
        "storePathCommitLog": store / "commitlog",
    }
    seconds: dict[str, float | None] = {}
    for kind in ("apache", "rmq"):
        processes = RmqProcesses(root / f"restart-{kind}")
        processes.root.mkdir(parents=True, exist_ok=True)
        try:
            namesrv = (
                start_apache_namesrv(processes, heap=SERVER_HEAP)
                if kind == "apache"
                else processes.start_namesrv("rmq-namesrv")
            )
            subprocess.run(["sync"], check=False)
            progress(f"restarting {kind}'s broker on the store")
            started = time.perf_counter()
            broker = start_broker(kind, processes, namesrv, props)
            seconds[kind] = time.perf_counter() - started
            for process in (broker, namesrv):
                process.stop(timeout=120)
        except AssertionError as exc:
            figures.failures.append(f"restart of {kind}: {exc}")
            progress(f"  FAILED: restart of {kind}: {exc}")
        finally:
            processes.kill_all()
    shutil.rmtree(store, ignore_errors=True)
    figures.add(
        f"restart, {plan.store_gib} GiB store", "start to registered", "s", seconds, better="lower"
    )


def check_disk(scratch: Path, plan: Plan) -> None:
    """Refuse to start when the run would take the disk past 85 % used: both brokers then
    delete commitlog files forcibly (Apache's `diskSpaceCleanForciblyRatio`, rmq's the same),
    which would eat the backlogs and the restart store.  Used share as Apache measures it:
    used ÷ (used + usable)."""
    usage = shutil.disk_usage(scratch)
    needed = (plan.store_gib + plan.broker_data_gib) * GIB
    after = (usage.used + needed) / (usage.used + usage.free)
    if after >= DISK_LIMIT:
        raise SystemExit(
            f"{scratch}: the run writes about {needed // GIB} GiB, which would take the disk to "
            f"{after:.0%} used (brokers delete files forcibly above {DISK_LIMIT:.0%}); free "
            "space, point RMQ_BENCH_DIR elsewhere or lower --store-gib"
        )


def machine() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    memory = int(Path("/proc/meminfo").read_text().split()[1]) / (1 << 20)
    version = subprocess.run(
        ["java", "-version"], capture_output=True, text=True, check=False
    ).stderr.splitlines()
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": round(memory),
        "python": platform.python_version(),
        "java": version[0].strip() if version else "java ?",
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short runs and a 1 GiB store")
    parser.add_argument(
        "--store-gib", type=int, help="store size of the restart case (default: 10, 1 with --quick)"
    )
    parser.add_argument("--no-write", action="store_true", help="leave docs/benchmarks.md alone")
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else FULL
    if args.store_gib is not None:
        plan = Plan(**{**plan.__dict__, "store_gib": args.store_gib})
    ensure_built()
    scratch = Path(os.environ.get("RMQ_BENCH_DIR") or tempfile.gettempdir())
    check_disk(scratch, plan)
    root = Path(tempfile.mkdtemp(prefix="rmq-versus-", dir=scratch))
    figures = Figures()
    began = time.perf_counter()
    try:
        progress(f"starting both clusters under {root}")
        sides = [start_side(kind, root / kind, "ASYNC_FLUSH") for kind in ("apache", "rmq")]
        try:
            async_flush_cases(sides, plan, figures)
        finally:
            for side in sides:
                stop(side)
                shutil.rmtree(side.processes.root, ignore_errors=True)
        sync_flush_cases(root, plan, figures)
        restart_cases(root, plan, figures)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    result = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "mode": "quick" if args.quick else "full",
        "seconds": round(time.perf_counter() - began),
        "machine": machine(),
        "settings": {
            "flushDiskType": "ASYNC_FLUSH (SYNC_FLUSH where named)",
            "brokerRole": "ASYNC_MASTER",
            "commitlog files": "1 GiB",
            "Apache broker JVM": " ".join(APACHE_BROKER_HEAP),
            "body": f"{BODY} B",
            "queues": QUEUES,
        },
        "figures": figures.rows,
        "failures": figures.failures,
    }
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / ("versus_apache-quick.json" if args.quick else "versus_apache.json")
    out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    progress(f"wrote {out} ({result['seconds']} s)")
    if not args.no_write:
        versus_report.write_doc(result)
        progress(f"updated {versus_report.DOC}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
