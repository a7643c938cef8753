"""Every command of Apache's mqadmin (tools 4.9.8) against Apache's cluster and against rmq's,
one matrix row each (section "mqadmin commands", column "rmq vs Apache").

A case (tests/conformance/mqadmin_cases.py) runs the same arguments against both clusters at
once (one thread each), after the shared set-up `SETUP` (module fixture `targets`).  Apache's
output must show the command's result (`Case.expect`, no exception printed, or for a case
whose command fails on Apache, `Case.fails`, the failure it names): otherwise the comparison
would prove nothing and the test fails whatever rmq did.  Then both outputs, and
the files the command wrote, are normalised (tests/conformance/mqadmin_normalise.py) and must
be identical.  When they are not, the cell says `failing` (rmq printed an exception where
Apache did not) or `different`.  A case whose command needs a request code rmq's servers do
not serve yet is a strict expected failure raised by `RmqDiffers` only, so an Apache run that
shows nothing still fails the test.

`test_rmq_mqadmin` is the column "rmq mqadmin" of the same rows: against Apache's cluster only,
Apache's mqadmin and then `rmq mqadmin` run the case (hooks around each run), and the two
normalised outputs must be identical, except in a row where rmq deliberately differs
(`Case.deliberate`, docs/spec-notes.md): there they must differ and rmq's must show what the
case says.  A row whose command `rmq mqadmin` does not register
(rmq/cli/mqadmin) is a strict expected failure.  `test_rmq_mqadmin_texts` byte-compares the
dispatcher's own texts (command list lines, `help <cmd>`, an unknown command, a parse error).

`test_command_list` checks that the cases cover exactly the commands the jar registers.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import shutil
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from tests.conformance.clusters import Cluster
from tests.conformance.mqadmin_acl import (
    start_apache_acl_broker,
    start_rmq_acl_broker,
    tools_home,
)
from tests.conformance.mqadmin_cases import CASES, SETUP, Case
from tests.conformance.mqadmin_normalise import normalise
from tests.conformance.mqadmin_run import (
    Clients,
    mqadmin,
    mqadmin_monitor,
    mqadmin_texts,
    mqadmin_until,
    rmq_mqadmin,
    rmq_mqadmin_until,
)
from tests.conformance.mqadmin_state import Target, foreign_names
from tests.procs import RmqProcesses

SECTION = "mqadmin commands"
COLUMN = "rmq vs Apache"
RMQ_MQADMIN_COLUMN = "rmq mqadmin"
KINDS = ("apache", "rmq")


class Tool(NamedTuple):
    """How one mqadmin program runs a command: to its end, until a report, startMonitoring."""

    run: Callable[..., str]
    until: Callable[..., str]
    monitor: Callable[..., str]


def _rmq_monitor(args: Sequence[str], *, home: Path) -> str:
    return rmq_mqadmin_until(args, lambda text: "endRound" in text, home=home, timeout=90)


APACHE = Tool(mqadmin, mqadmin_until, mqadmin_monitor)
RMQ_MQADMIN = Tool(rmq_mqadmin, rmq_mqadmin_until, _rmq_monitor)


class RmqDiffers(AssertionError):
    """rmq's normalised output is not Apache's."""


def _both(run: Callable[[str], Any]) -> dict[str, Any]:
    with ThreadPoolExecutor(len(KINDS)) as pool:
        futures = {kind: pool.submit(run, kind) for kind in KINDS}
        return {kind: future.result() for kind, future in futures.items()}


def _target(kind: str, cluster: Cluster, root: Path, ready: dict[str, Any]) -> Target:
    return Target(
        kind=kind,
        namesrv_addr=cluster.namesrv_addr,
        broker_addr=cluster.broker_addr,
        home=root / kind / "mqadmin-home",
        out=root / kind / "out",
        paths={
            **_conf_files(cluster),
            str(cluster.store_dir): "<store>",
            str(cluster.broker.home): "<broker-home>",
            str(cluster.namesrv.home): "<namesrv-home>",
            str(cluster.root): "<root>",
        },
        ready=ready,
    )


def _conf_files(cluster: Cluster) -> dict[str, str]:
    """The -c files the harness wrote for the servers (tests/conformance/java.py names Apache's
    name server's `<name>.properties`, tests/procs.py rmq's `<name>.conf`)."""
    files = {}
    for process, placeholder in (
        (cluster.namesrv, "<namesrv-conf>"),
        (cluster.broker, "<broker-conf>"),
    ):
        for suffix in (".properties", ".conf"):
            files[str(cluster.root / f"{process.name}{suffix}")] = placeholder
    return files


@pytest.fixture(scope="module")
def targets(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Target]]:
    """Both clusters set up alike (`SETUP`), their clients kept running for the module."""
    root = tmp_path_factory.mktemp("mqadmin")
    clusters: dict[str, Cluster] = {kind: request.getfixturevalue(kind) for kind in KINDS}
    clients: dict[str, Clients] = {}

    def set_up(kind: str) -> Clients:
        spec = {**SETUP, "namesrv": clusters[kind].namesrv_addr}
        return Clients(spec, home=root / kind / "clients")

    with ThreadPoolExecutor(len(KINDS)) as pool:
        futures = {kind: pool.submit(set_up, kind) for kind in KINDS}
    clients.update({kind: f.result() for kind, f in futures.items() if f.exception() is None})
    try:
        for future in futures.values():
            future.result()
        yield {kind: _target(kind, clusters[kind], root, clients[kind].ready) for kind in KINDS}
    finally:
        for running in clients.values():
            running.close()


@pytest.fixture(scope="module")
def acl_targets(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Target]]:
    """The ACL-enabled brokers (tests/conformance/mqadmin_acl.py), one of each kind."""
    root = tmp_path_factory.mktemp("mqadmin-acl")
    processes = RmqProcesses(root)
    starters = {"apache": start_apache_acl_broker, "rmq": start_rmq_acl_broker}
    try:
        started = _both(lambda kind: starters[kind](processes))
        tools = tools_home(root)
        yield {
            kind: Target(
                kind=kind,
                namesrv_addr=None,
                broker_addr=broker.addr,
                home=root / kind / "mqadmin-home",
                out=root / kind / "out",
                paths={str(home): "<rocketmq-home>", str(root): "<root>"},
                tools_home=tools,
            )
            for kind, (broker, home) in started.items()
        }
    finally:
        for process in processes.started:
            if process.running:
                try:
                    process.stop(timeout=30)
                except AssertionError:
                    process.kill()
        processes.kill_all()


def _argv(run: Sequence[str], target: Target) -> list[str]:
    namesrv = ["-n", target.namesrv_addr] if target.namesrv_addr else []
    return [run[0], *namesrv, *(target.fill(arg) for arg in run[1:])]


def _run(case: Case, target: Target, tool: Tool = APACHE) -> tuple[list[str], list[str], Target]:
    """Run the case's commands with `tool` against one target: outputs, written files, the
    target with the foreign names found on its cluster afterwards."""
    out = target.out / case.slug
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    target = dataclasses.replace(target, out=out)
    outputs = []
    prefix = case.until or ""

    def reported(text: str) -> bool:
        return any(line.startswith(prefix) for line in text.splitlines())

    if case.before is not None:
        case.before(target)
    try:
        for run in case.runs:
            argv = _argv(run, target)
            if case.until == "monitor":
                outputs.append(tool.monitor(argv, home=out / "monitor-home"))
            elif case.until is not None:
                outputs.append(tool.until(argv, reported, home=target.home))
            else:
                text = tool.run(argv, home=target.home, rocketmq_home=target.tools_home)
                if not case.fails and _starved(text):
                    text = tool.run(argv, home=target.home, rocketmq_home=target.tools_home)
                outputs.append(text)
        files = [
            (out / name).read_text(encoding="utf-8") if (out / name).exists() else "<no file>"
            for name in case.files
        ]
        found, topics, groups, broker_topics = foreign_names(target)
    finally:
        if case.after is not None:
            case.after(target)
    return (
        outputs,
        files,
        dataclasses.replace(
            target,
            foreign=found,
            foreign_topics=topics,
            foreign_groups=groups,
            foreign_broker_topics=broker_topics,
        ),
    )


def _starved(text: str) -> bool:
    """Whether Java's client gave up waiting for an answer: a cold mqadmin JVM on a machine the
    other tests keep busy can spend its 3 s send or lookup timeout before the request leaves.
    Such a run is made once more (the case's other runs and its checks stay as they are)."""
    return "STDERR" in text and "RemotingTimeoutException: wait response" in text


def _render(case: Case, outputs: list[str], files: list[str], target: Target) -> str:
    where = target.where()
    parts = []
    for run, output in zip(case.runs, outputs, strict=True):
        parts.append(f"$ mqadmin {' '.join(run)}\n{normalise(output, where, case.rules)}")
    for name, text in zip(case.files, files, strict=True):
        rules = case.file_rules if text != "<no file>" else ()
        parts.append(f"# {name}\n{normalise(text, where, rules)}")
    return "\n".join(parts) + "\n"


def _check_apache(case: Case, outputs: list[str], files: list[str], target: Target) -> None:
    text = "\n".join(outputs)
    if case.fails:
        assert "STDERR" in text, f"Apache's run did not fail:\n{text}"
    else:
        assert "STDERR" not in text and "Exception" not in text, f"Apache's run failed:\n{text}"
    for expected in case.expect:
        wanted = target.fill(expected)
        assert wanted in text, f"Apache's output lacks {wanted!r}:\n{text}"
    for name, content in zip(case.files, files, strict=True):
        assert content != "<no file>", f"Apache's run wrote no {name}"


def _cases() -> list[Any]:
    params = []
    for case in CASES:
        marks = [pytest.mark.matrix(SECTION, case.row, COLUMN, passed="identical")]
        if case.missing:
            marks.append(pytest.mark.xfail(strict=True, raises=RmqDiffers, reason=case.missing))
        params.append(pytest.param(case, marks=marks, id=case.slug))
    return params


@pytest.mark.parametrize("case", _cases())
def test_mqadmin(
    case: Case, request: pytest.FixtureRequest, record_property: Callable[[str, object], None]
) -> None:
    sides: dict[str, Target] = request.getfixturevalue("acl_targets" if case.acl else "targets")
    if case.settle is not None:
        case.settle(sides)
    results = _both(lambda kind: _run(case, sides[kind]))
    _check_apache(case, *results["apache"])
    apache = _render(case, *results["apache"])
    rmq = _render(case, *results["rmq"])
    _compare(case, apache, rmq, results["rmq"][0], "rmq", record_property)


def _compare(
    case: Case,
    apache: str,
    mine: str,
    raw: list[str],
    name: str,
    record_property: Callable[[str, object], None],
) -> None:
    """Raise RmqDiffers (after recording the matrix word) when the rendered runs differ."""
    if apache == mine:
        return
    text = "\n".join(raw)
    word = "failing" if "STDERR" in text or "Exception" in text else "different"
    record_property("matrix_outcome", word)
    diff = difflib.unified_diff(apache.splitlines(), mine.splitlines(), "Apache", name, lineterm="")
    raise RmqDiffers(f"{case.row}: {name} {word}\n" + "\n".join(diff))


def _registered() -> set[str]:
    from rmq.cli.mqadmin.dispatch import load

    return {command.name for command in load()}


def _rmq_mqadmin_cases() -> list[Any]:
    registered = _registered()
    params = []
    for case in CASES:
        passed = "different (deliberate)" if case.deliberate else "identical"
        marks = [pytest.mark.matrix(SECTION, case.row, RMQ_MQADMIN_COLUMN, passed=passed)]
        if case.command not in registered:
            reason = f"rmq mqadmin lacks {case.command}"
            marks.append(pytest.mark.xfail(strict=True, raises=RmqDiffers, reason=reason))
        params.append(pytest.param(case, marks=marks, id=case.slug))
    return params


@pytest.mark.parametrize("case", _rmq_mqadmin_cases())
def test_rmq_mqadmin(
    case: Case, request: pytest.FixtureRequest, record_property: Callable[[str, object], None]
) -> None:
    if case.command not in _registered():
        raise RmqDiffers(f"rmq mqadmin lacks {case.command}")
    sides: dict[str, Target] = request.getfixturevalue("acl_targets" if case.acl else "targets")
    if case.settle is not None:
        case.settle(sides)
    apache_side = sides["apache"]
    results = _run(case, apache_side)
    _check_apache(case, *results)
    apache = _render(case, *results)
    mine = dataclasses.replace(
        apache_side,
        home=apache_side.home.parent / "rmq-mqadmin-home",
        out=apache_side.out.parent / "rmq-mqadmin-out",
    )
    outputs, files, ran = _run(case, mine, RMQ_MQADMIN)
    rmq = _render(case, outputs, files, ran)
    if case.deliberate:
        _deliberate(case, apache, rmq, outputs)
        return
    _compare(case, apache, rmq, outputs, "rmq mqadmin", record_property)


def _deliberate(case: Case, apache: str, mine: str, raw: list[str]) -> None:
    """A deliberate difference: rmq mqadmin shows what `Case.deliberate` says, where
    Apache's mqadmin shows something else."""
    text = "\n".join(raw)
    assert apache != mine, f"{case.row}: rmq mqadmin now prints what Apache's does:\n{mine}"
    assert "STDERR" not in text, f"{case.row}: rmq mqadmin failed:\n{text}"
    for expected in case.deliberate:
        assert expected in text, f"{case.row}: rmq mqadmin's output lacks {expected!r}:\n{text}"


def test_rmq_mqadmin_texts(tmp_path: Path) -> None:
    """The dispatcher's own texts, byte for byte: each line of the command list is mqadmin's
    line for that command, `help <cmd>` of every registered command, an unknown command, a
    parse error and `<cmd> -h` of one command."""
    from rmq.cli.mqadmin.dispatch import load

    names = [command.name for command in load()]
    home = tmp_path / "home"
    theirs = mqadmin([], home=home).splitlines()
    mine = rmq_mqadmin([], home=home).splitlines()
    assert mine[0] == theirs[0] and mine[-2:] == theirs[-2:]
    lines = {line.split()[0]: line for line in theirs[1:-2] if line.strip()}
    assert mine[1:-2] == [lines[name] for name in names]
    texts = [["help", name] for name in names] + [["noSuchCommand"], ["help", "noSuchCommand"]]
    for args, theirs_text in zip(texts, mqadmin_texts(texts, home=home), strict=True):
        assert rmq_mqadmin(args, home=home) == theirs_text, args
    # These end mqadmin's JVM (System.exit): one run each.
    exits = [[names[0], "-h"], [names[0], "--noSuchOption"], [names[0].upper(), "-h"]]
    for args in exits if names else []:
        assert rmq_mqadmin(args, home=home) == mqadmin(args, home=home), args


def test_command_list(tmp_path: Path) -> None:
    """The cases cover exactly the sub-commands MQAdminStartup registers (its help lists them)."""
    listing = mqadmin([], home=tmp_path)
    registered = re.findall(r"(?m)^   (\S+) ", listing)
    assert len(registered) == len(set(registered)) > 0, listing
    covered = {case.command for case in CASES}
    assert set(registered) == covered, (
        f"not covered: {sorted(set(registered) - covered)}, "
        f"not registered: {sorted(covered - set(registered))}"
    )
