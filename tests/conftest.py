"""Fixtures shared by every test package: real rmq server processes (see tests/procs.py)."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cpu_report import REPORT
from tests.procs import RmqProcess, RmqProcesses
from tests.spark_home import linked_spark_home

# Every Spark driver a test starts (its session, `rmq spark-export` runs, the standalone
# cluster's daemons) is a JVM of a few seconds' work: without the optimising compiler and with
# the serial collector one costs half the CPU time (a session's start and a small job: 15 CPU
# seconds instead of 25-35), on a machine the suites keep busy.
os.environ.setdefault("SPARK_SUBMIT_OPTS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
os.environ.setdefault("SPARK_DAEMON_JAVA_OPTS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
# Their Python workers import the installed pyspark, not the package's zip (tests/spark_home.py).
if "SPARK_HOME" not in os.environ and (_spark_home := linked_spark_home()) is not None:
    os.environ["SPARK_HOME"] = str(_spark_home)

# A suite started in the background of a non-interactive shell inherits SIGINT ignored, and
# every process it started would too (exec keeps an ignored signal ignored): the tests that
# press Ctrl-C on an rmq command need it delivered, as it is from a terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# The modules that take longest (40 s or more of a quiet machine), longest first: the
# parallel runs (pytest-xdist, --dist loadfile) hand modules out in collection order, so these
# start first instead of being the last ones running while the other workers are idle.
LONGEST_MODULES = (
    "conformance/test_mqadmin.py",
    "conformance/test_java_client.py",
    "conformance/test_acl_admin_only.py",
    "conformance/test_stores.py",
    # Spark's modules each start a JVM of their own: one beside an rmq-only module at a time.
    "spark/test_stream.py",
    "integration/test_ha_cluster.py",
    "spark/test_cli.py",
    "integration/test_mqadmin_topic.py",
    "spark/test_broker.py",
    "integration/test_friendly_group.py",
    "spark/test_cluster.py",
    "integration/test_admin_cli.py",
    "spark/test_offline.py",
    "browser/test_console_actions.py",
    "browser/test_console_pages.py",
    "browser/test_console_roles.py",
    "integration/test_console_memory.py",
    "integration/test_produce_consume.py",
    "spark/test_session.py",
)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest modules first (stable: each module's own order is kept)."""

    def rank(item: pytest.Item) -> int:
        path = item.nodeid.split("::", 1)[0]
        for index, module in enumerate(LONGEST_MODULES):
            if path.endswith(module):
                return index
        return len(LONGEST_MODULES)

    items.sort(key=rank)


def pytest_configure(config: pytest.Config) -> None:
    # Under pytest-xdist the controller sees every worker's tests but runs none of them.
    if REPORT is not None and getattr(config.option, "numprocesses", None):
        REPORT.enabled = hasattr(config, "workerinput")


def pytest_runtest_logfinish(nodeid: str) -> None:
    if REPORT is not None and REPORT.enabled:
        REPORT.test_finished(nodeid)


def pytest_sessionfinish() -> None:
    if REPORT is not None and REPORT.enabled:
        REPORT.flush()


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
