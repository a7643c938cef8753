"""CPU time per test module, for finding where a suite's time goes (RMQ_CPU_REPORT=<file>).

Each test's CPU time is the growth of the worker's own and its waited-for children's user and
system time from the end of one test to the end of the next, so a module's processes (started
by its fixtures, reaped at their teardown) and its CLI runs forked by tests/cli_forkserver.py
count for the module.  Every worker appends one line
per module to the file: `<seconds> <wall seconds> <module>`.
"""

from __future__ import annotations

import os
import resource
import time
from pathlib import Path

from tests.cli_forkserver import SERVER

_REPORT = os.environ.get("RMQ_CPU_REPORT")


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    forked = SERVER.cpu  # the CLI runs forked for this worker are not its children
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime + forked


class CpuReport:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.enabled = True
        self.module = ""
        self.cpu = _cpu()
        self.wall = time.monotonic()
        self.module_cpu = 0.0
        self.module_wall = 0.0

    def test_finished(self, nodeid: str) -> None:
        module = nodeid.split("::", 1)[0]
        if module != self.module:
            self.flush()
            self.module = module
        cpu, wall = _cpu(), time.monotonic()
        self.module_cpu += cpu - self.cpu
        self.module_wall += wall - self.wall
        self.cpu, self.wall = cpu, wall

    def flush(self) -> None:
        if self.module:
            with self.path.open("a") as out:
                out.write(f"{self.module_cpu:.1f} {self.module_wall:.1f} {self.module}\n")
        self.module_cpu = self.module_wall = 0.0


REPORT = CpuReport(Path(_REPORT)) if _REPORT else None
