"""DLedger nodes for the conformance rows: brokers of either kind in one group (rmq's
`rmq broker`, Apache's BrokerStartup with `enableDLegerCommitLog`), Apache's bare DLedger
library node (driver ``DLedgerPeer``), and what a test asks a node over DLedger's own port.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rmq.remoting.client import RemotingClient
from rmq.server.broker.dledger.config import parse_peers
from rmq.server.broker.dledger.protocol import DLedgerRequestCode, decode_body, request_command
from tests.conformance.clusters import BROKER_PROPS
from tests.conformance.java import (
    CLIENT_HEAP,
    TEST_SERVER_HEAP,
    ensure_built,
    java_argv,
    java_env,
    start_apache_broker,
)
from tests.ports import free_port
from tests.procs import RmqProcess, RmqProcesses, registered_brokers, unique

GROUP = "RaftNode00"
"""The group of the bare library nodes."""
FILE_SIZE = 1 << 16
"""Their data file size."""


def start_java(
    processes: RmqProcesses, root: Path, self_id: str, peers: str, preferred: str
) -> RmqProcess:
    ensure_built()
    home = root / "java-home"
    port = int(parse_peers(peers)[self_id].rsplit(":", 1)[1])
    argv = java_argv(
        "rmq.conformance.DLedgerPeer",
        [GROUP, self_id, peers, str(root), str(FILE_SIZE), preferred],
        home=home,
        heap=CLIENT_HEAP,
        drivers=True,
    )
    # A JVM on a busy machine can take longer to listen than an rmq process (as java.py's).
    return processes.start(
        "dledger-java", [], port=port, command=argv, env=java_env(home), ready_timeout=60
    )


def java_state(java: RmqProcess) -> list[str]:
    """The Java node's last ``STATE`` line: role, term, leader, end index, committed index."""
    lines = java.stdout_path.read_text(errors="replace").splitlines()
    states = [line.split()[1:] for line in lines if line.startswith("STATE ")]
    return states[-1] if states else []


@dataclass
class Node:
    kind: str
    self_id: str
    dledger_addr: str
    process: RmqProcess


def wait_for(what: str, condition: Callable[[], bool], timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {timeout}s"
        time.sleep(0.1)


def node_props(
    name: str, namesrv: str, peers: str, self_id: str, extra: Mapping[str, object] | None = None
) -> dict[str, object]:
    """The conformance broker config as node `self_id` of DLedger group `name` (also the
    brokerName), registering with `namesrv`; `extra` adds or overrides keys."""
    return {
        **BROKER_PROPS,
        "brokerName": name,
        "namesrvAddr": namesrv,
        "enableDLegerCommitLog": "true",
        "dLegerGroup": name,
        "dLegerPeers": peers,
        "dLegerSelfId": self_id,
        **(extra or {}),
    }


def start_node(
    processes: RmqProcesses,
    kind: str,
    name: str,
    props: Mapping[str, object],
    *,
    heap: Sequence[str] = TEST_SERVER_HEAP,
) -> RmqProcess:
    """A broker of `kind` ("rmq" or "apache") with `props`, once it listens (a DLedger
    broker registers when its node knows its role: wait for that separately); `heap` is an
    Apache broker's JVM options."""
    if kind == "apache":
        return start_apache_broker(processes, name, namesrv_addr=None, props=props, heap=heap)
    return processes.start_broker(name, namesrv=None, props=props)


def stop_node(kind: str, process: RmqProcess) -> None:
    """SIGTERM; rmq exits 0, a JVM 143 once its shutdown hooks (the broker's) have run."""
    code = process.stop()
    assert code == (0 if kind == "rmq" else 143), f"{kind}'s broker exited with {code}"


def start_group(
    processes: RmqProcesses,
    namesrv: str,
    kinds: list[str],
    *,
    heap: Sequence[str] = TEST_SERVER_HEAP,
) -> tuple[str, list[Node]]:
    """Nodes n0.. of one DLedger group, `kinds[i]` ("rmq" or "apache") for node i, started
    side by side (`heap`: the Apache brokers' JVM options); returned once the name server
    lists a master and every node."""
    name = unique("dlmix")
    ports = [free_port() for _ in kinds]
    peers = ";".join(f"n{i}-127.0.0.1:{port}" for i, port in enumerate(ports))
    nodes = []
    for i, kind in enumerate(kinds):
        props = node_props(name, namesrv, peers, f"n{i}")
        process = start_node(processes, kind, f"{name}-n{i}-{kind}", props, heap=heap)
        nodes.append(Node(kind, f"n{i}", f"127.0.0.1:{ports[i]}", process))

    def listed() -> bool:
        ids = registered_brokers(namesrv)
        return 0 in ids and len(ids) == len(kinds)

    wait_for("a master and every node registered", listed)
    return name, nodes


def metadata(group: str, nodes: list[Node]) -> dict[str, dict[str, Any]]:
    """Each running node's answer to DLedger's METADATA request, by selfId."""

    async def ask() -> dict[str, dict[str, Any]]:
        answers = {}
        async with RemotingClient() as client:
            for node in nodes:
                if not node.process.running:
                    continue
                request = {"group": group, "remoteId": node.self_id}
                command = request_command(DLedgerRequestCode.METADATA, request)
                response = await client.invoke(node.dledger_addr, command, 5.0)
                answers[node.self_id] = decode_body(response.body)
        return answers

    return asyncio.run(ask())
