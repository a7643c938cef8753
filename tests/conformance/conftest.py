"""Fixtures and hooks of the conformance suite (make conformance; never collected by make test).

* `apache` / `rmq`: one cluster of each kind for the whole session (tests/conformance/clusters.py);
  `cluster` is whichever the test's `target` parameter names.
* `differential`: runs a scenario against Apache first (it must pass there, which proves the
  scenario), caches that result, and gives it to the rmq run to compare with.
* The matrix hooks turn outcomes into docs/conformance.md (tests/conformance/matrix.py).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conformance import matrix
from tests.conformance.clusters import Cluster, start_apache, start_rmq, stop
from tests.conformance.java import ensure_built, make_client_archive
from tests.conformance.matrix import STRESS_REASON

TARGETS = ("apache", "rmq")

_MATRIX = matrix.Matrix()
_RECORDED: dict[tuple[str, str, str], str] = {}
"""Cells as the tests' reports arrive; applied to the matrix once every cell is declared (under
pytest-xdist the controller learns the declarations only when the workers finish)."""


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "matrix(section, row, column, passed='pass'): matrix cell")
    config.addinivalue_line("markers", "conformance: runs Apache RocketMQ beside rmq")
    if not hasattr(config, "workerinput") and _built():  # once, before any worker starts
        with tempfile.TemporaryDirectory(prefix="rmq-cds-") as home:
            make_client_archive(Path(home))


def _built() -> bool:
    try:
        ensure_built()
    except AssertionError:
        return False  # the tests' fixtures say what is missing
    return True


_ROW_BY_ROW = ("test_mqadmin.py::test_mqadmin[", "test_mqadmin.py::test_rmq_mqadmin[")


def _mqadmin_row_by_row(items: list[pytest.Item]) -> None:
    """Both mqadmin columns of a row run one after the other, row by row: the rows change the
    Apache cluster both columns use (cloneGroupOffset leaves a group that every later
    queryMsgById lists), so the second column of a row must meet the state the first met, not
    the state every later row left."""
    slots = [
        i for i, item in enumerate(items) if item.nodeid.split("/")[-1].startswith(_ROW_BY_ROW)
    ]
    firsts = [items[i] for i in slots if _ROW_BY_ROW[0] in items[i].nodeid]
    seconds = {
        items[i].nodeid.split("[", 1)[1]: items[i]
        for i in slots
        if _ROW_BY_ROW[1] in items[i].nodeid
    }
    ordered: list[pytest.Item] = []
    for item in firsts:
        ordered.append(item)
        second = seconds.pop(item.nodeid.split("[", 1)[1], None)
        if second is not None:
            ordered.append(second)
    ordered += seconds.values()
    for slot, item in zip(slots, ordered, strict=True):
        items[slot] = item


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _mqadmin_row_by_row(items)
    declared: list[tuple[str, str, str]] = []
    for item in items:
        item.add_marker(pytest.mark.conformance)
        mark = item.get_closest_marker("matrix")
        if mark is None:
            continue
        section, row, column = mark.args
        declared.append((section, row, column))
        item.user_properties.append(("matrix", (section, row, column, mark.kwargs)))
    for cell in declared:
        _MATRIX.declare(*cell)
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None:  # a pytest-xdist worker: the controller collects nothing
        workeroutput["matrix_declared"] = declared


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """pytest-xdist's controller: a worker's collection (every worker collects the whole run in
    one order) declares the cells, as collection does in a run without workers."""
    if _MATRIX.sections:
        return
    for section, row, column in getattr(node, "workeroutput", {}).get("matrix_declared", []):
        _MATRIX.declare(section, row, column)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    props = dict(report.user_properties)
    if "matrix" not in props:
        return
    matrix = props["matrix"]
    assert isinstance(matrix, tuple | list), matrix
    section, row, column, options = matrix
    if report.when == "call" or (report.when == "setup" and not report.passed):
        if report.passed:
            cell = str(options.get("passed", "pass"))
        elif report.skipped and hasattr(report, "wasxfail"):
            cell = f"expected fail: {report.wasxfail}"
        elif report.skipped:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else ""
            cell = STRESS_REASON if str(reason).endswith(STRESS_REASON) else "skipped"
        elif "XPASS" in str(report.longrepr):
            cell = "XPASS: remove the expected-fail mark"
        else:
            cell = str(props.get("matrix_outcome", "FAIL"))
        _RECORDED[(section, row, column)] = cell


def _whole_suite(config: pytest.Config) -> bool:
    """Whether the run collected all of tests/conformance (a run of one file declares only that
    file's rows, a complete matrix of its own, which must not replace the page)."""
    here = Path(__file__).resolve().parent
    named = {Path(arg.split("::", 1)[0]).resolve() for arg in config.args}
    return named == {here} and not config.option.keyword and not config.option.markexpr


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    mode = os.environ.get("RMQ_CONFORMANCE_MATRIX", "")
    if not mode or hasattr(session.config, "workerinput"):
        return  # a pytest-xdist worker: the controller renders the matrix
    for (section, row, column), cell in _RECORDED.items():
        _MATRIX.record(section, row, column, cell)
    if not _MATRIX.sections:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    block = _MATRIX.render()
    (matrix.ROOT / "conformance" / "last-run.md").write_text(block, encoding="utf-8")
    if not _MATRIX.complete():
        if reporter is not None:
            reporter.write_line("conformance matrix incomplete (a partial run): not compared")
        if mode == "check":
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        return
    if mode == "write":
        if not _whole_suite(session.config):
            if reporter is not None:
                reporter.write_line("a run of part of tests/conformance: the matrix is not written")
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
            return
        matrix.write(block)
        if reporter is not None:
            reporter.write_line(f"conformance matrix written to {matrix.DOC}")
        return
    diff = matrix.compare(block)
    if diff:
        if reporter is not None:
            reporter.write_line("conformance matrix differs from docs/conformance.md:", red=True)
            for line in diff:
                reporter.write_line(line)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _session_cluster(
    tmp_path_factory: pytest.TempPathFactory, kind: str, start: Callable[[Path], Cluster]
) -> Iterator[Cluster]:
    """The body of the `apache` / `rmq` fixtures: one cluster of `kind` for the session."""
    ensure_built()
    cluster = start(tmp_path_factory.mktemp(kind))
    yield cluster
    stop(cluster)
    cluster.processes.kill_all()


@pytest.fixture(scope="session")
def apache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    yield from _session_cluster(tmp_path_factory, "apache", start_apache)


@pytest.fixture(scope="session")
def rmq(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    yield from _session_cluster(tmp_path_factory, "rmq", start_rmq)


@pytest.fixture(params=TARGETS)
def target(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def cluster(request: pytest.FixtureRequest, target: str) -> Cluster:
    return request.getfixturevalue(target)  # type: ignore[no-any-return]


class Differential:
    """Results of scenarios against Apache, computed once and shared with the rmq runs."""

    def __init__(self, request: pytest.FixtureRequest) -> None:
        self._request = request
        self._apache: dict[str, Any] = {}

    def apache_result(self, key: str, run: Callable[[Cluster], Any]) -> Any:
        if key not in self._apache:
            cluster: Cluster = self._request.getfixturevalue("apache")
            try:
                self._apache[key] = ("ok", run(cluster))
            except Exception as exc:  # kept: the rmq run reports it as "unproven"
                self._apache[key] = ("error", exc)
        state, value = self._apache[key]
        if state == "error":
            raise AssertionError(
                f"scenario {key} fails against Apache, so it proves nothing"
            ) from value
        return value


@pytest.fixture(scope="session")
def differential(request: pytest.FixtureRequest) -> Differential:
    return Differential(request)


@pytest.fixture(scope="session")
def java_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """user.home of the Java drivers and mqadmin (logs, ~/.rocketmq_offsets)."""
    return tmp_path_factory.mktemp("java-home")
