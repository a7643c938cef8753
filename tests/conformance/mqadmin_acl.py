"""The ACL commands' own brokers: one Apache broker and one rmq broker with `aclEnable=true`.

The shared clusters run without ACL, and Apache's broker then cannot answer the ACL requests at
all (no access validator: the request times out), so the four ACL commands (updateAclConfig,
deleteAclConfig, clusterAclConfigVersion, updateGlobalWhiteAddr) run against a broker of each
kind started for them alone: no name server (it must not join the shared `DefaultCluster`), a
ROCKETMQ_HOME of its own whose `conf/plain_acl.yml` (`PLAIN_ACL`) makes loopback a global white
address and has one admin account (`ADMIN_CREDENTIALS`), so that the commands rewrite a file of
the test's, never one of the repository.  The commands that change the ACL are signed by that
account (`tools_home`: a ROCKETMQ_HOME for mqadmin whose `conf/tools.yml` holds its keys): rmq's
broker answers them only to an admin account's signature, from any address.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

from rmq.remoting.codes import RequestCode
from rmq.remoting.command import create_request
from tests.conformance.clusters import BROKER_PROPS
from tests.conformance.java import ROCKETMQ_HOME, start_apache_broker
from tests.conformance.mqadmin_state import Target
from tests.procs import RemotingSession, RmqProcess, RmqProcesses

ACL_CLUSTER = "MqaAclCluster"

T = TypeVar("T")

PLAIN_ACL = """\
globalWhiteRemoteAddresses:
  - 127.0.0.1
accounts:
  - accessKey: MqaAdminKey
    secretKey: MqaAdminSecret
    admin: true
"""

ADMIN_CREDENTIALS = ("MqaAdminKey", "MqaAdminSecret")
"""The admin account of `PLAIN_ACL`."""

ACL_PROPS: Mapping[str, object] = {
    **BROKER_PROPS,
    "brokerClusterName": ACL_CLUSTER,
    "aclEnable": True,
}


def acl_home(root: Path, files: Mapping[str, str] | None = None) -> Path:
    """A ROCKETMQ_HOME with the broker's logback file and, under `conf/`, `files` (path ->
    text; default: `plain_acl.yml` holding `PLAIN_ACL`)."""
    home = root / "rocketmq-home"
    (home / "conf").mkdir(parents=True, exist_ok=True)
    shutil.copy(ROCKETMQ_HOME / "conf" / "logback_broker.xml", home / "conf")
    for name, text in (files if files is not None else {"plain_acl.yml": PLAIN_ACL}).items():
        path = home / "conf" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return home


def tools_home(root: Path) -> Path:
    """A ROCKETMQ_HOME for mqadmin (Apache's and rmq's) that signs with `ADMIN_CREDENTIALS`:
    the tools' logback file and a `conf/tools.yml` with the account's keys."""
    home = root / "tools-home"
    (home / "conf").mkdir(parents=True, exist_ok=True)
    shutil.copy(ROCKETMQ_HOME / "conf" / "logback_tools.xml", home / "conf")
    access_key, secret_key = ADMIN_CREDENTIALS
    text = f"accessKey: {access_key}\nsecretKey: {secret_key}\n"
    (home / "conf" / "tools.yml").write_text(text, encoding="utf-8")
    return home


def start_acl_broker(
    kind: str,
    processes: RmqProcesses,
    rocketmq_home: Path,
    *,
    name: str,
    namesrv_addr: str | None = None,
    props: Mapping[str, object] = ACL_PROPS,
) -> RmqProcess:
    """An Apache (`kind` "apache") or rmq broker with `props` and `rocketmq_home`."""
    if kind == "apache":
        return start_apache_broker(
            processes, name, namesrv_addr=namesrv_addr, props=props, rocketmq_home=rocketmq_home
        )
    return processes.start_broker(
        name, namesrv=namesrv_addr, props=props, env={"ROCKETMQ_HOME": str(rocketmq_home)}
    )


def each_kind(root: Path, run: Callable[[str, RmqProcesses], T]) -> dict[str, T]:
    """`run(kind, processes)` for "apache", then "rmq", each with processes of its own under
    `root/<kind>` that are killed when it returns."""
    results = {}
    for kind in ("apache", "rmq"):
        (root / kind).mkdir(parents=True, exist_ok=True)
        processes = RmqProcesses(root / kind)
        try:
            results[kind] = run(kind, processes)
        finally:
            processes.kill_all()
    return results


def start_apache_acl_broker(processes: RmqProcesses) -> tuple[RmqProcess, Path]:
    """Apache's BrokerStartup with ACL on and no name server; returns it and its ROCKETMQ_HOME."""
    rocketmq_home = acl_home(processes.root / "apache-acl")
    return start_acl_broker("apache", processes, rocketmq_home, name="apache-acl-broker"), (
        rocketmq_home
    )


def start_rmq_acl_broker(processes: RmqProcesses) -> tuple[RmqProcess, Path]:
    """`rmq broker` configured alike, ROCKETMQ_HOME in its environment."""
    rocketmq_home = acl_home(processes.root / "rmq-acl")
    return start_acl_broker("rmq", processes, rocketmq_home, name="rmq-acl-broker"), (rocketmq_home)


SETTLED_COUNTER = 1000
"""The data version counter `same_acl_version` gives both brokers' default files."""


def same_acl_version(targets: Mapping[str, Target]) -> None:
    """Give both ACL brokers the same default-file data version before clusterAclConfigVersion.

    The counter a broker reports is the number of times its file was rewritten, and the rmq
    mqadmin runs (test_rmq_mqadmin) rewrite the Apache broker's file only: write `PLAIN_ACL`
    with counter `SETTLED_COUNTER` into both files and wait until both brokers' watchers have
    loaded it (Apache's looks every 5 s, rmq's too)."""
    now = int(time.time() * 1000)
    text = f"{PLAIN_ACL}dataVersion:\n- counter: {SETTLED_COUNTER}\n  timestamp: {now}\n"
    for target in targets.values():
        home = next(path for path, name in target.paths.items() if name == "<rocketmq-home>")
        (Path(home) / "conf" / "plain_acl.yml").write_text(text, encoding="utf-8")
    deadline = time.monotonic() + 60
    with RemotingSession(timeout=10) as session:
        for target in targets.values():
            while True:
                request = create_request(RequestCode.GET_BROKER_CLUSTER_ACL_INFO)
                response = session.send(target.broker_addr, request)
                versions = json.loads((response.ext_fields or {}).get("allAclFileVersion", "{}"))
                if [v.get("counter") for v in versions.values()] == [SETTLED_COUNTER]:
                    break
                assert time.monotonic() < deadline, f"{target.kind}: ACL file not reloaded"
                time.sleep(0.2)
