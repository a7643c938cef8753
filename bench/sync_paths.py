"""The sync send rows of the side-by-side run, for comparing broker designs quickly.

Starts Apache's name server and broker and one rmq name server and broker per variant (a
variant is a name and environment settings for `rmq broker`, e.g. the remoting engine's
switch), with the same settings as `versus_apache.py`, and measures `rmq bench produce`
with 1 / 16 / 64 sends in flight (1 KiB) and, unless `--no-java`, Apache's Producer with 16
and 64 threads, against each side in turn (Apache first).  `--flush SYNC_FLUSH` measures the
durable path.  Prints one JSON object: per row, each side's figure and its ratio to Apache's.

    .venv/bin/python bench/sync_paths.py --variant plain= \
        --variant compiled=PYTHONPATH=/path/to/another/tree

Each rmq bench row also gives each side's broker CPU per message (utime + stime of the broker
process and every process under it, in µs: `<side> cpu us/msg`) and the anonymous memory of
that process tree after the row (`<side> RssAnon MiB`).

Only the sides under measurement do work; the others are idle.  The figures are for picking a
design; `versus_apache.py` makes the table of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from versus_apache import broker_props  # noqa: E402
from versus_load import TOPIC, java_send_tps, progress, rmq_cli, send, tps  # noqa: E402

from tests.conformance.clusters import Cluster, stop  # noqa: E402
from tests.conformance.java import (  # noqa: E402
    SERVER_HEAP,
    ensure_built,
    start_apache_broker,
    start_apache_namesrv,
)
from tests.procs import RmqProcesses  # noqa: E402

QUEUES = 8
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def process_tree(pid: int) -> list[int]:
    """``pid`` and every process under it."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
    tree, todo = [], [pid]
    while todo:
        current = todo.pop()
        tree.append(current)
        todo.extend(children.get(current, ()))
    return tree


def tree_cpu_seconds(pid: int) -> float:
    total = 0
    for member in process_tree(pid):
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{member}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total / CLOCK_TICKS


def tree_rss_anon_mib(pid: int) -> float:
    total = 0
    for member in process_tree(pid):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{member}/status").read_text().splitlines():
                if line.startswith("RssAnon:"):
                    total += int(line.split()[1])
    return round(total / 1024, 1)


def start(kind: str, root: Path, flush: str, env: Mapping[str, str]) -> Cluster:
    root.mkdir(parents=True, exist_ok=True)
    processes = RmqProcesses(root)
    store = root / "store"
    props = {
        **broker_props(flush),
        "storePathRootDir": store,
        "storePathCommitLog": store / "commitlog",
    }
    if kind == "apache":
        namesrv = start_apache_namesrv(processes, heap=SERVER_HEAP)
        broker = start_apache_broker(
            processes,
            "apache-broker",
            namesrv_addr=namesrv.addr,
            props=props,
            heap=("-Xms1g", "-Xmx1g", "-XX:+UseG1GC"),
        )
    else:
        namesrv = processes.start_namesrv("rmq-namesrv")
        broker = processes.start_broker("rmq-broker", namesrv=namesrv, props=props, env=env)
    side = Cluster(kind, processes, namesrv, broker)
    rmq_cli(side, "topic", "create", TOPIC, "-r", str(QUEUES), "-w", str(QUEUES))
    return side


def parse_variant(text: str) -> tuple[str, dict[str, str]]:
    name, _, settings = text.partition("=")
    env = dict(item.split("=", 1) for item in settings.split(",") if item)
    return name, env


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variant", action="append", default=[], help="NAME=KEY=VALUE[,KEY=VALUE]")
    parser.add_argument("--flush", default="ASYNC_FLUSH", choices=("ASYNC_FLUSH", "SYNC_FLUSH"))
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--in-flight", default="1,16,64")
    parser.add_argument("--no-java", action="store_true")
    parser.add_argument("--no-apache", action="store_true")
    args = parser.parse_args(argv)
    variants = [parse_variant(text) for text in args.variant] or [("rmq", {})]
    if not args.no_apache:
        ensure_built()
    scratch = Path(tempfile.mkdtemp(prefix="rmq-sync-paths-"))
    sides: list[tuple[str, Cluster]] = []
    rows: dict[str, dict[str, Any]] = {}
    try:
        if not args.no_apache:
            sides.append(("apache", start("apache", scratch / "apache", args.flush, {})))
        for name, env in variants:
            sides.append((name, start("rmq", scratch / name, args.flush, env)))
        secs = str(args.seconds)
        progress("warm-up")
        for _, side in sides:
            send(side, "--in-flight", "16", "-d", "5")
        for flight in args.in_flight.split(","):
            row = rows.setdefault(f"rmq bench --in-flight {flight}", {})
            for name, side in sides:
                pid = side.broker.popen.pid
                cpu = tree_cpu_seconds(pid)
                report = send(side, "--in-flight", flight, "-d", secs)
                cpu = tree_cpu_seconds(pid) - cpu
                row[name] = tps(report)
                row[f"{name} cpu us/msg"] = round(cpu / max(report["sendTotal"], 1) * 1e6, 1)
                row[f"{name} RssAnon MiB"] = tree_rss_anon_mib(pid)
                progress(f"  in flight {flight}: {name} {row[name]:.0f}")
        if not args.no_java:
            for threads in (16, 64):
                row = rows.setdefault(f"Apache Producer -w {threads}", {})
                for name, side in sides:
                    row[name] = java_send_tps(side, threads, 21.5, f"producer-{threads}-{name}")
                    progress(f"  Producer -w {threads}: {name} {row[name]}")
    finally:
        for _, side in sides:
            stop(side)
        shutil.rmtree(scratch, ignore_errors=True)
    for row in rows.values():
        apache = row.get("apache")
        if apache:
            for name, _ in variants:
                if row.get(name):
                    row[f"{name}/apache"] = round(row[name] / apache, 3)
    print(json.dumps({"flush": args.flush, "seconds": args.seconds, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
