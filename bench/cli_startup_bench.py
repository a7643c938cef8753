"""Cold-start time of the `rmq` command line, measured the way a user meets it.

Runs `rmq --help`, `rmq --version`, a subcommand's help and shell completion requests (the
command names after `rmq `, a prefix, a path) as fresh subprocesses, several times each after
one warm-up run (so the OS page cache is warm, as it is for an interactive user), and prints
JSON: per case the wall-clock seconds (min, median, mean, max), the median CPU seconds of the
process (user + system: what the command itself costs, which a loaded machine inflates less
than the wall clock) and whether the median wall time is within the budget from docs/CLI.md
(0.2 s for help and completion, 0.1 s for --version).  Exit status is 0 either way; read
the JSON.

With `--cluster` it also times commands that talk to a cluster (a topic's creation, the
topic and group lists, an mqadmin command, one message produced), against an `rmq
standalone` it starts on free loopback ports in a temporary directory and stops at the end.

    .venv/bin/python bench/cli_startup_bench.py [--runs N] [--cluster]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: the tests package holds the server starters
    sys.path.insert(0, str(ROOT))

from tests.procs import RmqProcesses  # noqa: E402

CASES: tuple[tuple[str, list[str], dict[str, str], float], ...] = (
    ("rmq --help", ["--help"], {}, 0.2),
    ("rmq --version", ["--version"], {}, 0.1),
    ("rmq profile --help", ["profile", "--help"], {}, 0.2),
    (
        "completion of 'rmq <TAB>' (every command name)",
        [],
        {"_RMQ_COMPLETE": "bash_complete", "COMP_WORDS": "rmq ", "COMP_CWORD": "1"},
        0.2,
    ),
    (
        "completion of 'rmq pro<TAB>'",
        [],
        {"_RMQ_COMPLETE": "bash_complete", "COMP_WORDS": "rmq pro", "COMP_CWORD": "1"},
        0.2,
    ),
    (
        "completion of 'rmq inspect ./st<TAB>' (a path)",
        [],
        {"_RMQ_COMPLETE": "bash_complete", "COMP_WORDS": "rmq inspect ./st", "COMP_CWORD": "2"},
        0.2,
    ),
)


CLUSTER_CASES: tuple[tuple[str, list[str], str | None], ...] = (
    ("rmq topic update BenchTopic", ["topic", "update", "BenchTopic"], None),
    ("rmq topic list", ["topic", "list"], None),
    ("rmq group list", ["group", "list"], None),
    ("rmq mqadmin topicList", ["mqadmin", "topicList", "-n", "{namesrv}"], None),
    ("rmq produce BenchTopic (one message)", ["produce", "BenchTopic"], '{"body": "x"}\n'),
)
"""Name, arguments (`{namesrv}` replaced) and stdin of each command timed with --cluster."""


@contextlib.contextmanager
def standalone() -> Iterator[str]:
    """`rmq standalone` (tests/procs.py: free loopback ports, a temporary store), its broker
    registered; yields the name server's address."""
    with tempfile.TemporaryDirectory(prefix="rmq-cli-bench-") as root:
        processes = RmqProcesses(Path(root))
        try:
            yield processes.start_standalone(ready_timeout=60).namesrv_addr
        finally:
            processes.kill_all()


def rmq_command() -> list[str]:
    """The installed console script next to this interpreter, else `python -m rmq`."""
    script = Path(sys.executable).with_name("rmq")
    if script.exists():
        return [str(script)]
    found = shutil.which("rmq")
    return [found] if found else [sys.executable, "-m", "rmq"]


def time_once(
    argv: list[str], env: dict[str, str], stdin: str | None = None
) -> tuple[float, float]:
    """Wall-clock and CPU (user + system) seconds of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        argv,
        env=env,
        input=stdin.encode() if stdin is not None else None,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall, cpu


def summary(runs: list[tuple[float, float]], budget: float | None) -> dict[str, object]:
    samples = [wall for wall, _ in runs]
    median = statistics.median(samples)
    return {
        "runs": len(runs),
        "min_s": round(min(samples), 4),
        "median_s": round(median, 4),
        "mean_s": round(statistics.fmean(samples), 4),
        "max_s": round(max(samples), 4),
        "median_cpu_s": round(statistics.median(cpu for _, cpu in runs), 4),
        "budget_s": budget,
        "within_budget": median < budget if budget is not None else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--cluster", action="store_true", help="also time cluster commands")
    args = parser.parse_args()
    base = rmq_command()
    results = {}
    for name, extra_args, extra_env, budget in CASES:
        env = {**os.environ, **extra_env}
        time_once(base + extra_args, env)
        runs = [time_once(base + extra_args, env) for _ in range(args.runs)]
        results[name] = summary(runs, budget)
    if args.cluster:
        with standalone() as namesrv:
            env = {**os.environ, "RMQ_NAMESRV": namesrv}
            for name, extra_args, stdin in CLUSTER_CASES:
                argv = base + [arg.replace("{namesrv}", namesrv) for arg in extra_args]
                time_once(argv, env, stdin)
                runs = [time_once(argv, env, stdin) for _ in range(args.runs)]
                results[name] = summary(runs, None)
    machine = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "command": base,
    }
    print(json.dumps({"machine": machine, "results": results}, indent=2))


if __name__ == "__main__":
    main()
