"""End effect of the compiled hot paths: ``rmq bench`` with and without ``RMQ_PURE_PYTHON=1``.

    .venv/bin/python bench/compiled_compare.py [--rounds 5] [--seconds 10]

Each round starts a throwaway ``rmq standalone`` (free loopback ports, a temporary store) once
with the compiled modules and once with ``RMQ_PURE_PYTHON=1`` (the order alternating from
round to round), and in each runs, with the same setting for the servers and the load
generator: ``rmq bench produce`` of 1 KiB messages in batches of 32 with 4 sends in flight,
then ``rmq bench consume --from first`` (a push consumer) over what was stored, then ``rmq
bench consume --pull``.  Besides each rate it records the CPU time per message of the server
process and of the load generator (user + system, from /proc and ``getrusage``), which a busy
machine disturbs much less than the rates.  Prints one JSON object with every run and the
medians per mode; the machine is shared, so compare medians of several rounds, never one run.
Not run by ``make bench`` (it takes minutes); its figures are in docs/benchmarks.md,
"Compiled hot paths".
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: the tests package holds the server starters
    sys.path.insert(0, str(ROOT))

from rmq.common.compiled import PURE_PYTHON_ENV  # noqa: E402
from tests.procs import RmqProcesses  # noqa: E402

RMQ = [sys.executable, "-m", "rmq"]
MODES = {"compiled": "0", "pure": "1"}
APACHE_FILE_SIZES = {
    "mappedFileSizeCommitLog": 1 << 30,
    "mappedFileSizeConsumeQueue": 300_000 * 20,
    "maxHashSlotNum": 5_000_000,
    "maxIndexNum": 20_000_000,
}


@contextmanager
def standalone(mode: str) -> Iterator[tuple[str, int]]:
    """``rmq standalone`` (tests/procs.py: free loopback ports, a temporary store with Apache's
    file sizes) in this mode; yields the name server and the process id."""
    os.environ[PURE_PYTHON_ENV] = MODES[mode]
    with tempfile.TemporaryDirectory(prefix="rmq-compiled-") as tmp:
        processes = RmqProcesses(Path(tmp))
        try:
            server = processes.start_standalone(props=APACHE_FILE_SIZES, ready_timeout=60)
            yield server.namesrv_addr, server.popen.pid
        finally:
            processes.kill_all()


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of a running process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def bench(server: tuple[str, int], *args: str) -> dict[str, Any]:
    """One ``rmq bench`` run, its JSON figures plus ``server_cpu`` and ``client_cpu`` seconds."""
    namesrv, pid = server
    server_before, client_before = process_cpu(pid), children_cpu()
    result = subprocess.run(
        [*RMQ, "bench", *args, "-n", namesrv, "--json", "-i", "100"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    figures: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    figures["server_cpu"] = process_cpu(pid) - server_before
    figures["client_cpu"] = children_cpu() - client_before
    return figures


def per_message(figures: dict[str, Any], count: int) -> dict[str, float]:
    """Microseconds of server and client CPU per message."""
    return {
        "server_us": round(figures["server_cpu"] / count * 1e6, 2),
        "client_us": round(figures["client_cpu"] / count * 1e6, 2),
    }


def one_round(mode: str, seconds: float) -> dict[str, float]:
    with standalone(mode) as server:
        produced = bench(
            server, "produce", "-s", "1024", "-b", "32", "--in-flight", "4",
            "-d", str(seconds),
        )  # fmt: skip
        total = produced["sendTotal"]
        count = str(total)
        push = bench(server, "consume", "--from", "first", "-c", count, "-d", "120")
        pull = bench(
            server, "consume", "--pull", "--from", "first", "-g", "pull", "-c", count,
            "-d", "120",
        )  # fmt: skip
    figures = {
        "batched_send_tps": produced["sendTps"],
        "push_consume_tps": push["consumeTps"],
        "pull_consume_tps": pull["consumeTps"],
    }
    for name, run in (("send", produced), ("push", push), ("pull", pull)):
        for key, value in per_message(run, total).items():
            figures[f"{name}_{key}"] = value
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    runs: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
    for index in range(args.rounds):
        order = list(MODES) if index % 2 == 0 else list(reversed(MODES))
        for mode in order:
            runs[mode].append(one_round(mode, args.seconds))
            sys.stderr.write(f"round {index + 1} {mode}: {runs[mode][-1]}\n")
    medians = {
        mode: {key: statistics.median(run[key] for run in results) for key in results[0]}
        for mode, results in runs.items()
    }
    json.dump({"benchmark": "compiled_compare", "runs": runs, "medians": medians}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
