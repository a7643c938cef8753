"""Cold-start time of the `rmq` command line, measured the way a user meets it.

Runs `rmq --help`, `rmq --version`, a subcommand's help and shell completion requests (the
command names after `rmq `, a prefix, a path) as fresh subprocesses, several times each after
one warm-up run (so the OS page cache is warm, as it is for an interactive user), and prints
JSON: per case the wall-clock seconds (min, median, mean, max), the median CPU seconds of the
process (user + system: what the command itself costs, which a loaded machine inflates less
than the wall clock) and whether the median wall time is within the budget from docs/CLI.md
(0.2 s for help and completion, 0.1 s for --version).  Exit status is 0 either way; read
the JSON.

    .venv/bin/python bench/cli_startup_bench.py [--runs N]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

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


def rmq_command() -> list[str]:
    """The installed console script next to this interpreter, else `python -m rmq`."""
    script = Path(sys.executable).with_name("rmq")
    if script.exists():
        return [str(script)]
    found = shutil.which("rmq")
    return [found] if found else [sys.executable, "-m", "rmq"]


def time_once(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall-clock and CPU (user + system) seconds of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    base = rmq_command()
    results = {}
    for name, extra_args, extra_env, budget in CASES:
        env = {**os.environ, **extra_env}
        time_once(base + extra_args, env)
        runs = [time_once(base + extra_args, env) for _ in range(args.runs)]
        samples = [wall for wall, _ in runs]
        median = statistics.median(samples)
        results[name] = {
            "runs": args.runs,
            "min_s": round(min(samples), 4),
            "median_s": round(median, 4),
            "mean_s": round(statistics.fmean(samples), 4),
            "max_s": round(max(samples), 4),
            "median_cpu_s": round(statistics.median(cpu for _, cpu in runs), 4),
            "budget_s": budget,
            "within_budget": median < budget,
        }
    machine = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "command": base,
    }
    print(json.dumps({"machine": machine, "results": results}, indent=2))


if __name__ == "__main__":
    main()
