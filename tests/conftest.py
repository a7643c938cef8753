"""Fixtures shared by every test package: real rmq server processes (see tests/procs.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.procs import RmqProcess, RmqProcesses


@pytest.fixture
def rmq_processes(tmp_path: Path) -> Iterator[RmqProcesses]:
    """Start rmq servers for one test; whatever still runs at the end is killed."""
    processes = RmqProcesses(tmp_path)
    yield processes
    processes.kill_all()


@pytest.fixture(scope="module")
def module_processes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RmqProcesses]:
    """Like `rmq_processes`, shared by the tests of one module."""
    processes = RmqProcesses(tmp_path_factory.mktemp("rmq"))
    yield processes
    processes.kill_all()


@pytest.fixture(scope="module")
def namesrv(module_processes: RmqProcesses) -> Iterator[RmqProcess]:
    """One `rmq namesrv` for a test module, stopped with SIGTERM (exit 0 asserted) at the end."""
    process = module_processes.start_namesrv("shared-namesrv")
    yield process
    process.stop_cleanly()
