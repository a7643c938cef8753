"""The configurations `rmq cluster up` writes: Apache's distribution layouts on one machine.

Apache 4.9's `distribution/conf` has three directories of broker files, and the seed's
tutorial builds its 2m-2s-sync cluster from the same four names:

    2m-2s-sync    broker-a, broker-a-s, broker-b, broker-b-s   masters SYNC_MASTER
    2m-2s-async   broker-a, broker-a-s, broker-b, broker-b-s   masters ASYNC_MASTER
    2m-noslave    broker-a, broker-b                           masters ASYNC_MASTER

Apache's files hold only brokerClusterName, brokerName, brokerId, deleteWhen,
fileReservedTime, brokerRole and flushDiskType, because each broker runs on its own host.
On one machine the files here add what keeps the brokers apart: `listenPort` (each broker
also uses listenPort - 2, the fast port, and listenPort + 1, the HA port), its own
`storePathRootDir`/`storePathCommitLog`, and loopback addresses (`brokerIP1`, `brokerIP2`
(the HA address a master registers, which its slave connects to), `bindAddress`,
`namesrvAddr`).  Ports follow the seed: the masters on the base port
(10911) and base + 10, their slaves 100 above (11011, 11021).  The name server gets a file
too (`namesrv.properties`: listenPort, kvConfigPath).

`dledger` is rmq's own layout of one DLedger group (`enableDLegerCommitLog=true`, see
docs/dledger.md): broker-a-n0, broker-a-n1 and broker-a-n2, all `brokerName=broker-a`, on
the base port and 100 and 200 above, each with its DLedger port at listenPort + 2 (in
`dLegerPeers`); the files carry no brokerId or brokerRole, since the group's election decides
them.

`plan_cluster` is pure: it returns the files' text and the processes to start, for the
command to write, print (`--dry-run`) or run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

CLUSTER_NAME = "DefaultCluster"
LOOPBACK = "127.0.0.1"
SLAVE_PORT_STEP = 100
"""A slave listens this far above its master (the seed: master 10911, slave 11011)."""
GROUP_PORT_STEP = 10
"""broker-b's master listens this far above broker-a's."""
DLEDGER_PORT_OFFSET = 2
"""A DLedger node's port: this far above its broker's listenPort (free: the fast port is
listenPort - 2 and the HA port, unused in DLedger mode, listenPort + 1)."""
DLEDGER_NODES = 3


@dataclass(frozen=True, slots=True)
class BrokerSpec:
    """One broker of a layout: its file name, identity, role and port offset."""

    name: str
    broker_name: str
    broker_id: int
    role: str
    port_offset: int
    dledger_id: str | None = None
    """The node's dLegerSelfId in the dledger layout (its brokerId then follows the
    election: 0 for the leader, selfId + 1 for a follower)."""

    @property
    def is_master(self) -> bool:
        return self.broker_id == 0 and self.dledger_id is None


def _layout(master_role: str, *, slaves: bool) -> tuple[BrokerSpec, ...]:
    specs = []
    for index, group in enumerate(("broker-a", "broker-b")):
        offset = index * GROUP_PORT_STEP
        specs.append(BrokerSpec(group, group, 0, master_role, offset))
        if slaves:
            specs.append(BrokerSpec(f"{group}-s", group, 1, "SLAVE", offset + SLAVE_PORT_STEP))
    return tuple(specs)


def _dledger_layout() -> tuple[BrokerSpec, ...]:
    return tuple(
        BrokerSpec(f"broker-a-n{i}", "broker-a", i + 1, "DLEDGER", i * SLAVE_PORT_STEP, f"n{i}")
        for i in range(DLEDGER_NODES)
    )


LAYOUTS: Mapping[str, tuple[BrokerSpec, ...]] = {
    "2m-2s-sync": _layout("SYNC_MASTER", slaves=True),
    "2m-2s-async": _layout("ASYNC_MASTER", slaves=True),
    "2m-noslave": _layout("ASYNC_MASTER", slaves=False),
    "dledger": _dledger_layout(),
}


@dataclass(frozen=True, slots=True)
class PlannedServer:
    """A server process `rmq cluster up` starts: `rmq <command> -c <config>`."""

    name: str
    command: str
    config: Path
    text: str
    port: int
    ports: tuple[tuple[int, str], ...]
    """Every port it binds, with what the port is (for the "port taken" error)."""
    spec: BrokerSpec | None = None
    """The broker's identity; None for the name server."""

    @property
    def addr(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    @property
    def log(self) -> Path:
        return self.config.parent / "logs" / f"{self.name}.log"


@dataclass(frozen=True, slots=True)
class ClusterPlan:
    """The files and processes of one layout in one directory."""

    layout: str
    directory: Path
    namesrv: PlannedServer
    brokers: tuple[PlannedServer, ...]

    @property
    def servers(self) -> tuple[PlannedServer, ...]:
        return (self.namesrv, *self.brokers)


def plan_cluster(
    layout: str,
    directory: Path,
    *,
    namesrv_port: int,
    base_port: int,
    properties: Sequence[tuple[str, str]] = (),
) -> ClusterPlan:
    """The plan for `layout` in `directory` (absolute paths in the files); `properties`
    (key, value) are added to every broker's file, after the layout's keys."""
    directory = directory.absolute()
    namesrv_conf = directory / "namesrv.properties"
    namesrv = PlannedServer(
        name="namesrv",
        command="namesrv",
        config=namesrv_conf,
        text=_namesrv_text(directory, namesrv_port),
        port=namesrv_port,
        ports=((namesrv_port, "the name server's port (--namesrv-port)"),),
    )
    brokers = []
    specs = LAYOUTS[layout]
    peers = ";".join(
        f"{spec.dledger_id}-{LOOPBACK}:{base_port + spec.port_offset + DLEDGER_PORT_OFFSET}"
        for spec in specs
        if spec.dledger_id is not None
    )
    for spec in specs:
        port = base_port + spec.port_offset
        what = f"{spec.name}'s"
        last = (
            (port + DLEDGER_PORT_OFFSET, f"{what} DLedger port (listenPort + 2)")
            if spec.dledger_id is not None
            else (port + 1, f"{what} HA port (listenPort + 1)")
        )
        text = _broker_text(layout, spec, directory, port, namesrv.addr, properties, peers)
        brokers.append(
            PlannedServer(
                name=spec.name,
                command="broker",
                config=directory / f"{spec.name}.properties",
                text=text,
                port=port,
                ports=(
                    (port, f"{what} listenPort"),
                    (port - 2, f"{what} fast port (listenPort - 2)"),
                    last,
                ),
                spec=spec,
            )
        )
    return ClusterPlan(layout, directory, namesrv, tuple(brokers))


def _namesrv_text(directory: Path, port: int) -> str:
    return (
        "# The name server of a local cluster written by 'rmq cluster up';\n"
        "# run it alone with: rmq namesrv -c namesrv.properties\n"
        f"listenPort={port}\n"
        f"bindAddress={LOOPBACK}\n"
        f"kvConfigPath={directory / 'namesrv' / 'kvConfig.json'}\n"
    )


def _broker_text(
    layout: str,
    spec: BrokerSpec,
    directory: Path,
    port: int,
    namesrv_addr: str,
    properties: Sequence[tuple[str, str]],
    peers: str = "",
) -> str:
    store = directory / "store" / spec.name
    if spec.dledger_id is not None:
        lines = [
            f"# {spec.name}: node {spec.dledger_id} of the DLedger group {spec.broker_name},",
            "# on one machine (written by 'rmq cluster up dledger');",
            f"# run it alone with: rmq broker -c {spec.name}.properties",
            "# The cluster every broker registers under.",
            f"brokerClusterName={CLUSTER_NAME}",
            "# The group's nodes share brokerName; the elected leader registers as brokerId 0",
            "# (master), the others as their selfId + 1 (slaves).",
            f"brokerName={spec.broker_name}",
            "# Delete expired commitlog files at 4 am, keeping 48 hours.",
            "deleteWhen=04",
            "fileReservedTime=48",
            "# The commitlog is a DLedger log: a send is kept once a majority of the group has it.",
            "enableDLegerCommitLog=true",
            f"dLegerGroup={spec.broker_name}",
            "# Every node's id and DLedger address (listenPort + 2); no authentication: loopback.",
            f"dLegerPeers={peers}",
            f"dLegerSelfId={spec.dledger_id}",
        ]
    else:
        what = "master" if spec.is_master else "slave"
        lines = [
            f"# {spec.name}: the {what} of {spec.broker_name} in Apache's {layout} layout,",
            "# on one machine (written by 'rmq cluster up');",
            f"# run it alone with: rmq broker -c {spec.name}.properties",
            "# The cluster every broker registers under.",
            f"brokerClusterName={CLUSTER_NAME}",
            "# A master and its slaves share brokerName; brokerId 0 is the master, >0 a slave.",
            f"brokerName={spec.broker_name}",
            f"brokerId={spec.broker_id}",
            "# Delete expired commitlog files at 4 am, keeping 48 hours.",
            "deleteWhen=04",
            "fileReservedTime=48",
            "# ASYNC_MASTER, SYNC_MASTER (a send waits until a slave holds it) or SLAVE.",
            f"brokerRole={spec.role}",
        ]
    lines += [
        "# ASYNC_FLUSH: a send does not wait for the disk (SYNC_FLUSH would).",
        "flushDiskType=ASYNC_FLUSH",
        "# Apart on one machine: the name server, the port (and listenPort - 2, "
        + ("+ 2" if spec.dledger_id is not None else "+ 1")
        + "), the store.",
        f"namesrvAddr={namesrv_addr}",
        f"brokerIP1={LOOPBACK}",
        f"brokerIP2={LOOPBACK}",
        f"bindAddress={LOOPBACK}",
        f"listenPort={port}",
        f"storePathRootDir={store}",
        f"storePathCommitLog={store / 'commitlog'}",
    ]
    if properties:
        lines.append("# Added with 'rmq cluster up -p'.")
        lines.extend(f"{key}={value}" for key, value in properties)
    return "\n".join(lines) + "\n"


def parse_property(text: str) -> tuple[str, str]:
    """`KEY=VALUE` as (key, value); ValueError when it is not one."""
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key or any(c.isspace() for c in key):
        raise ValueError(f"expected KEY=VALUE, got {text!r}")
    return key, value.strip()
