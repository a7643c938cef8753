"""The ACL commands' own brokers: one Apache broker and one rmq broker with `aclEnable=true`.

The shared clusters run without ACL, and Apache's broker then cannot answer the ACL requests at
all (no access validator: the request times out), so the four ACL commands (updateAclConfig,
deleteAclConfig, clusterAclConfigVersion, updateGlobalWhiteAddr) run against a broker of each
kind started for them alone: no name server (it must not join the shared `DefaultCluster`), a
ROCKETMQ_HOME of its own whose `conf/plain_acl.yml` (`PLAIN_ACL`) lets loopback clients do
anything (mqadmin signs nothing: the tools' ROCKETMQ_HOME has no `conf/tools.yml`), so that the
commands rewrite a file of the test's, never one of the repository.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path

from tests.conformance.clusters import BROKER_PROPS
from tests.conformance.java import ROCKETMQ_HOME, start_apache_broker
from tests.procs import RmqProcess, RmqProcesses

ACL_CLUSTER = "MqaAclCluster"

PLAIN_ACL = """\
globalWhiteRemoteAddresses:
  - 127.0.0.1
accounts:
  - accessKey: MqaAdminKey
    secretKey: MqaAdminSecret
    admin: true
"""

ACL_PROPS: Mapping[str, object] = {
    **BROKER_PROPS,
    "brokerClusterName": ACL_CLUSTER,
    "aclEnable": True,
}


def acl_home(root: Path) -> Path:
    """A ROCKETMQ_HOME with the broker's logback file and `PLAIN_ACL`."""
    home = root / "rocketmq-home"
    (home / "conf").mkdir(parents=True, exist_ok=True)
    shutil.copy(ROCKETMQ_HOME / "conf" / "logback_broker.xml", home / "conf")
    (home / "conf" / "plain_acl.yml").write_text(PLAIN_ACL, encoding="utf-8")
    return home


def start_apache_acl_broker(processes: RmqProcesses) -> tuple[RmqProcess, Path]:
    """Apache's BrokerStartup with ACL on and no name server; returns it and its ROCKETMQ_HOME."""
    rocketmq_home = acl_home(processes.root / "apache-acl")
    process = start_apache_broker(
        processes,
        "apache-acl-broker",
        namesrv_addr=None,
        props=ACL_PROPS,
        rocketmq_home=rocketmq_home,
    )
    return process, rocketmq_home


def start_rmq_acl_broker(processes: RmqProcesses) -> tuple[RmqProcess, Path]:
    """`rmq broker` configured alike, ROCKETMQ_HOME in its environment."""
    rocketmq_home = acl_home(processes.root / "rmq-acl")
    process = processes.start_broker(
        "rmq-acl-broker",
        namesrv=None,
        props=ACL_PROPS,
        env={"ROCKETMQ_HOME": str(rocketmq_home)},
    )
    return process, rocketmq_home
