"""The two clusters every conformance test runs against: Apache RocketMQ's (NamesrvStartup +
BrokerStartup from conformance/apache/lib) and rmq's (`rmq namesrv` + `rmq broker`), each one
name server and one master broker named `broker-a` in `DefaultCluster`, configured alike
(`BROKER_PROPS`): small store files, SQL92 filtering on, short delay levels and transaction
check intervals so that scenarios finish in seconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tests.conformance.java import start_apache_broker, start_apache_namesrv
from tests.procs import RmqProcess, RmqProcesses

CLUSTER = "DefaultCluster"
BROKER_NAME = "broker-a"

DELAY_LEVELS = "1s 2s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s"
"""18 levels like Apache's default, all short: level 2 (2 s) is the one delay scenarios use;
retries (level 3 + reconsume times) come back after a second."""

BROKER_PROPS: Mapping[str, object] = {
    "brokerClusterName": CLUSTER,
    "brokerName": BROKER_NAME,
    "brokerId": 0,
    "mappedFileSizeCommitLog": 16 * 1024 * 1024,
    "mappedFileSizeConsumeQueue": 30_000 * 20,
    "maxHashSlotNum": 50_000,
    "maxIndexNum": 200_000,
    "autoCreateTopicEnable": True,
    "autoCreateSubscriptionGroup": True,
    "enablePropertyFilter": True,
    "messageDelayLevel": DELAY_LEVELS,
    "transactionCheckInterval": 1000,
    "transactionTimeOut": 1000,
    "traceTopicEnable": True,
    "flushDiskType": "ASYNC_FLUSH",
    # Apache answers a send that waited in its queue longer than this SYSTEM_BUSY
    # ([TIMEOUT_CLEAN_QUEUE]); its 200 ms default is too short for a machine running the
    # suite on every core.  rmq has no such queue and accepts the key without effect.
    "waitTimeMillsInSendQueue": 5000,
}


@dataclass
class Cluster:
    """One running cluster: `kind` is "apache" or "rmq"."""

    kind: str
    processes: RmqProcesses
    namesrv: RmqProcess
    broker: RmqProcess

    @property
    def namesrv_addr(self) -> str:
        return self.namesrv.addr

    @property
    def broker_addr(self) -> str:
        return self.broker.addr

    @property
    def store_dir(self) -> Path:
        return self.broker.home / "store"

    @property
    def root(self) -> Path:
        return self.processes.root


def start_apache(root: Path, props: Mapping[str, object] | None = None) -> Cluster:
    root.mkdir(parents=True, exist_ok=True)
    processes = RmqProcesses(root)
    namesrv = start_apache_namesrv(processes)
    broker = start_apache_broker(
        processes,
        "apache-broker",
        namesrv_addr=namesrv.addr,
        props={**BROKER_PROPS, **(props or {})},
    )
    return Cluster("apache", processes, namesrv, broker)


def start_rmq(root: Path, props: Mapping[str, object] | None = None) -> Cluster:
    root.mkdir(parents=True, exist_ok=True)
    processes = RmqProcesses(root)
    namesrv = processes.start_namesrv("rmq-namesrv")
    broker = processes.start_broker(
        "rmq-broker",
        namesrv=namesrv,
        props={
            **BROKER_PROPS,
            "storePathRootDir": root / "rmq-broker-home" / "store",
            **(props or {}),
        },
    )
    return Cluster("rmq", processes, namesrv, broker)


def stop(cluster: Cluster) -> None:
    """SIGTERM the broker, then the name server; kill -9 whatever does not stop."""
    for process in (cluster.broker, cluster.namesrv):
        if process.running:
            try:
                process.stop(timeout=30)
            except AssertionError:
                process.kill()
