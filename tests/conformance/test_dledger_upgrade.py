"""A classic store switched to DLedger, as RocketMQ 4.9.8 supports it, by rmq and by Apache.

For each kind: a classic broker (no DLedger) takes numbered sends from Apache's Java client
and stops; the same kind of broker starts on the same store with `enableDLegerCommitLog` (a
one-node group, same brokerName) and takes more.  The result must be the same for both: the
old commitlog closed by a BLANK record where its records end, the DLedger log's first data file
at the old log's end (``dividedCommitlogOffset``), the old messages still read at their queue
offsets and msgIds, the new ones at the queue offsets after them, and the DLedger entries
field by field alike (terms, timestamps, hosts and msgIds normalised).  Then each kind's
broker serves the store the other kind upgraded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rmq.common.recordwalk import BLANK_MAGIC
from tests.conformance.dledger_nodes import node_props, start_node, stop_node, wait_for
from tests.conformance.java import run_driver
from tests.conformance.matrix import stress_row
from tests.conformance.store_runs import SMALL_FILES, store_props
from tests.conformance.test_dledger_stores import entries, index_units
from tests.ports import free_port
from tests.procs import RmqProcess, RmqProcesses, registered_brokers, unique

SECTION = "DLedger stores (rmq's and Apache's, the same sends)"
BEFORE = 30
AFTER = 20


def send(namesrv: str, topic: str, home: Path, first: int, count: int) -> list[dict[str, Any]]:
    spec = {"namesrv": namesrv, "topic": topic, "group": unique("upgrade"), "padded": True}
    sent = run_driver(
        "DLedgerTraffic.send",
        {**spec, "create": first == 0, "queues": 1, "from": first, "count": count},
        home=home,
    )
    assert sent["failures"] == 0, sent
    acks: list[dict[str, Any]] = sent["acks"]
    return acks


def read_all(namesrv: str, topic: str, home: Path, acks: list[dict[str, Any]]) -> None:
    read = run_driver(
        "DLedgerTraffic.consume",
        {
            "namesrv": namesrv,
            "topic": topic,
            "group": unique("upgrade-read"),
            "padded": True,
            "expect": [ack["i"] for ack in acks],
        },
        home=home,
    )
    at = {m["queueOffset"]: m for m in read["messages"]}
    assert len(at) == len(read["messages"]) == len(acks)
    for ack in acks:
        assert at[ack["queueOffset"]]["msgId"] == ack["msgId"], ack


def start_dledger(
    processes: RmqProcesses, kind: str, name: str, namesrv: str, store: Path, peers: str
) -> RmqProcess:
    extra = {**SMALL_FILES, "storePathRootDir": store, "storePathCommitLog": store / "commitlog"}
    broker = start_node(
        processes, kind, unique(f"{name}-dl-{kind}"), node_props(name, namesrv, peers, "n0", extra)
    )
    wait_for(f"{kind} the master", lambda: registered_brokers(namesrv) == {0: broker.addr})
    return broker


def upgrade(processes: RmqProcesses, kind: str, topic: str, home: Path) -> dict[str, Any]:
    name = unique(f"upgrade-{kind}")
    namesrv = processes.start_namesrv(f"{name}-ns").addr
    store = processes.root / f"{name}-store"
    props = {**store_props(store), "brokerName": name, "namesrvAddr": namesrv}
    classic = start_node(processes, kind, unique(f"{name}-classic-{kind}"), props)
    wait_for(f"{kind}'s classic broker", lambda: registered_brokers(namesrv) == {0: classic.addr})
    acks = send(namesrv, topic, home, 0, BEFORE)
    stop_node(kind, classic)
    old_files = sorted((store / "commitlog").iterdir())
    peers = f"n0-127.0.0.1:{free_port()}"
    broker = start_dledger(processes, kind, name, namesrv, store, peers)
    acks += send(namesrv, topic, home, BEFORE, AFTER)
    assert [ack["queueOffset"] for ack in acks] == list(range(BEFORE + AFTER))
    read_all(namesrv, topic, home, acks)
    stop_node(kind, broker)
    last = old_files[-1].read_bytes()
    blank_at = next(
        pos
        for pos in range(0, len(last) - 7)
        if int.from_bytes(last[pos + 4 : pos + 8], "big") == BLANK_MAGIC
        and int.from_bytes(last[pos : pos + 4], "big") == len(last) - pos
    )
    return {
        "name": name,
        "namesrv": namesrv,
        "store": store,
        "peers": peers,
        "acks": acks,
        "old files": [path.name for path in old_files],
        "blank at": blank_at,
        "data files": sorted(p.name for p in (store / "dledger-n0" / "data").iterdir()),
    }


# Four brokers, two of them JVMs, for under a minute: under make stress.
@stress_row
@pytest.mark.matrix(
    SECTION, "a classic store switched to DLedger: same division, both read", "result"
)
def test_a_classic_store_switched_to_dledger_alike_by_rmq_and_apache(
    rmq_processes: RmqProcesses,
) -> None:
    home = rmq_processes.root / "java-client"
    home.mkdir()
    topic = unique("Upgrade")
    mine = upgrade(rmq_processes, "rmq", topic, home)
    theirs = upgrade(rmq_processes, "apache", topic, home)
    for key in ("old files", "blank at", "data files"):
        assert mine[key] == theirs[key], key
    divided = int(mine["old files"][-1]) + int(str(SMALL_FILES["mappedFileSizeCommitLog"]))
    assert mine["data files"][0] == f"{divided:020d}"
    assert entries(mine["store"]) == entries(theirs["store"])
    assert index_units(mine["store"]) == index_units(theirs["store"])
    for upgraded, other in ((mine, "apache"), (theirs, "rmq")):
        broker = start_dledger(
            rmq_processes,
            other,
            upgraded["name"],
            upgraded["namesrv"],
            upgraded["store"],
            upgraded["peers"],
        )
        read_all(upgraded["namesrv"], topic, home, upgraded["acks"])
        stop_node(other, broker)
