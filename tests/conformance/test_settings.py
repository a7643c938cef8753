"""Settings Apache's servers take and rmq's refuse, and what mqadmin prints for a refusal
(matrix section "Settings"; docs/spec-notes.md, "Settings").

One Apache name server and broker, one rmq name server and broker, each broker registered
with its own name server.  Apache's broker starts with a value rmq's refuses at start
(`fileReservedTime=-1`).  Over raw frames, both get the same UPDATE_BROKER_CONFIG /
UPDATE_NAMESRV_CONFIG: Apache's answers success for an unknown key or a nonsense value and no
remark for a restart-only key; rmq's refuses the first two naming the key and says the third
takes effect after a restart (deliberate differences).  Then Apache's mqadmin and `rmq
mqadmin` run the same `updateBrokerConfig` that rmq's broker refuses (by broker address and by
cluster), and print the same lines once Java's stack frames are left out.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from rmq.common import javaprops
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand
from tests.cli_forkserver import run as cli_run
from tests.conformance.java import ensure_built, start_apache_broker, start_apache_namesrv
from tests.conformance.mqadmin_run import mqadmin, rmq_mqadmin
from tests.procs import (
    LOOPBACK,
    RemotingSession,
    RmqProcess,
    RmqProcesses,
    free_broker_port,
    rmq_command,
    write_properties,
)

SECTION = "Settings"
DELIBERATE = "different (deliberate)"


def row(name: str, passed: str = "pass") -> pytest.MarkDecorator:
    return pytest.mark.matrix(SECTION, name, "result", passed=passed)


@dataclass
class Servers:
    namesrv: RmqProcess
    broker: RmqProcess


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Servers]]:
    ensure_built()
    processes = RmqProcesses(tmp_path_factory.mktemp("settings"))
    try:
        apache_ns = start_apache_namesrv(processes, "apache-settings-ns")
        apache = start_apache_broker(
            processes,
            "apache-settings",
            namesrv_addr=apache_ns.addr,
            props={"fileReservedTime": -1},
        )
        rmq_ns = processes.start_namesrv("rmq-settings-ns")
        rmq = processes.start_broker("rmq-settings", namesrv=rmq_ns)
        yield {"apache": Servers(apache_ns, apache), "rmq": Servers(rmq_ns, rmq)}
    finally:
        processes.kill_all()


def update(addr: str, code: RequestCode, body: str) -> RemotingCommand:
    with RemotingSession() as session:
        return session.invoke(addr, code, body=body.encode())


def settings_of(addr: str, code: RequestCode) -> dict[str, str]:
    with RemotingSession() as session:
        response = session.invoke(addr, code)
    assert response.code == ResponseCode.SUCCESS, response.remark
    return javaprops.loads(bytes(response.body or b"").decode())


@row(
    "a broker.conf value its key does not allow (fileReservedTime=-1): Apache's broker starts"
    " with it, rmq's stops with one line naming the key (exit 2)",
    DELIBERATE,
)
def test_a_bad_value_at_start(servers: dict[str, Servers], tmp_path: Path) -> None:
    apache = settings_of(servers["apache"].broker.addr, RequestCode.GET_BROKER_CONFIG)
    assert apache["fileReservedTime"] == "-1"
    conf = write_properties(
        tmp_path / "broker.conf",
        {"brokerIP1": LOOPBACK, "listenPort": free_broker_port(), "fileReservedTime": -1},
    )
    result = cli_run(
        rmq_command(["broker", "-c", str(conf)]),
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "HOME": str(tmp_path)},
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"rmq: error: {conf}: fileReservedTime='-1': expected a whole number 1..2147483647"
        " (hours); fix the config file or the option"
    ]


@row(
    "UPDATE_BROKER_CONFIG of an unknown key: Apache's broker answers success and ignores it,"
    " rmq's refuses it naming the key (code 1)",
    DELIBERATE,
)
def test_an_unknown_broker_key(servers: dict[str, Servers]) -> None:
    code = RequestCode.UPDATE_BROKER_CONFIG
    apache = update(servers["apache"].broker.addr, code, "noSuchKey=1\n")
    rmq = update(servers["rmq"].broker.addr, code, "noSuchKey=1\n")
    assert (apache.code, apache.remark) == (ResponseCode.SUCCESS, None)
    shown = settings_of(servers["apache"].broker.addr, RequestCode.GET_BROKER_CONFIG)
    assert "noSuchKey" not in shown
    assert (rmq.code, rmq.remark) == (
        ResponseCode.SYSTEM_ERROR,
        "unknown key noSuchKey: not a setting of rmq's broker (nothing was changed)",
    )


@row(
    "UPDATE_BROKER_CONFIG of a value its key does not allow (maxMessageSize=0): Apache's"
    " broker takes it, rmq's refuses it naming the key (code 1)",
    DELIBERATE,
)
def test_a_bad_broker_value(servers: dict[str, Servers]) -> None:
    code = RequestCode.UPDATE_BROKER_CONFIG
    apache = update(servers["apache"].broker.addr, code, "maxMessageSize=0\n")
    rmq = update(servers["rmq"].broker.addr, code, "maxMessageSize=0\n")
    assert (apache.code, apache.remark) == (ResponseCode.SUCCESS, None)
    shown = settings_of(servers["apache"].broker.addr, RequestCode.GET_BROKER_CONFIG)
    assert shown["maxMessageSize"] == "0"
    assert (rmq.code, rmq.remark) == (
        ResponseCode.SYSTEM_ERROR,
        "maxMessageSize='0': expected a whole number 1..2147483647 (bytes)",
    )
    restored = update(servers["apache"].broker.addr, code, "maxMessageSize=4194304\n")
    assert restored.code == ResponseCode.SUCCESS


@row(
    "UPDATE_BROKER_CONFIG of a restart-only key (flushIntervalCommitLog=400): both answer"
    " success; rmq's remark says it takes effect after a restart, Apache's has none",
    DELIBERATE,
)
def test_a_restart_only_broker_key(servers: dict[str, Servers]) -> None:
    code = RequestCode.UPDATE_BROKER_CONFIG
    apache = update(servers["apache"].broker.addr, code, "flushIntervalCommitLog=400\n")
    rmq = update(servers["rmq"].broker.addr, code, "flushIntervalCommitLog=400\n")
    assert (apache.code, apache.remark) == (ResponseCode.SUCCESS, None)
    assert (rmq.code, rmq.remark) == (
        ResponseCode.SUCCESS,
        "flushIntervalCommitLog takes effect after a restart",
    )
    for kind in ("apache", "rmq"):
        shown = settings_of(servers[kind].broker.addr, RequestCode.GET_BROKER_CONFIG)
        assert shown["flushIntervalCommitLog"] == "400", kind


@row(
    "UPDATE_NAMESRV_CONFIG of an unknown key: Apache's name server answers success and"
    " ignores it, rmq's refuses it naming the key (code 1)",
    DELIBERATE,
)
def test_an_unknown_namesrv_key(servers: dict[str, Servers]) -> None:
    code = RequestCode.UPDATE_NAMESRV_CONFIG
    apache = update(servers["apache"].namesrv.addr, code, "noSuchKey=1\n")
    rmq = update(servers["rmq"].namesrv.addr, code, "noSuchKey=1\n")
    assert (apache.code, apache.remark) == (ResponseCode.SUCCESS, None)
    shown = settings_of(servers["apache"].namesrv.addr, RequestCode.GET_NAMESRV_CONFIG)
    assert "noSuchKey" not in shown
    assert (rmq.code, rmq.remark) == (
        ResponseCode.SYSTEM_ERROR,
        "unknown key noSuchKey: not a setting of rmq's name server (nothing was changed)",
    )


def _without_frames(text: str) -> list[str]:
    """What mqadmin printed, less the stack frames of its traces (`rmq mqadmin` prints none)."""
    return [
        line for line in text.splitlines() if not line.startswith(("STDERR \tat ", "STDERR \t... "))
    ]


@row(
    "mqadmin updateBrokerConfig refused by the broker (by address and by cluster): rmq mqadmin"
    " prints what Apache's mqadmin prints",
    "identical",
)
def test_mqadmin_prints_the_refusal(servers: dict[str, Servers], tmp_path: Path) -> None:
    # rmq's broker refuses the unknown key; the harness's Apache broker (4.9.7) refuses no key
    rmq = servers["rmq"]
    setting = ["-k", "noSuchKey", "-v", "1"]
    for args in (
        ["updateBrokerConfig", "-b", rmq.broker.addr, *setting],
        ["updateBrokerConfig", "-n", rmq.namesrv.addr, "-c", "DefaultCluster", *setting],
    ):
        theirs = mqadmin(args, home=tmp_path / "apache-mqadmin")
        mine = rmq_mqadmin(args, home=tmp_path / "rmq-mqadmin")
        assert "MQBrokerException: CODE: 1  DESC: unknown key noSuchKey" in theirs, theirs
        assert _without_frames(mine) == _without_frames(theirs), (args, theirs, mine)
