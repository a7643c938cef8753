"""Mixed DLedger broker groups: rmq's `rmq broker` and Apache's BrokerStartup (4.9.7's broker
jar with DLedger 0.3.1.2) as nodes of one group (`enableDLegerCommitLog=true`, one
`dLegerPeers` list), registered with one name server.

Whichever node wins the election, Apache's Java client creates a topic on the master and
sends through it (driver ``DLedgerTraffic.send``); the master is killed with SIGKILL; the
client sends on, each message again until the group acknowledges it; a new master is
registered.  Elections are not deterministic, so the rows assert outcomes, not winners:
every live node names the same leader in the same term, that leader is the one broker
registered as brokerId 0 and every other node as its ``selfId + 1``, and every message the
group acknowledged is read back by Apache's client (``DLedgerTraffic.consume``) at the queue
and offset its send was given, with its msgId, and no queue offset holds two messages.

One rmq node with two Apache nodes runs in `make conformance`; two rmq nodes with one Apache
node runs under `make stress` (each group is three JVMs' or brokers' worth of CPU for a
minute).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conformance.dledger_nodes import Node, metadata, start_group, wait_for
from tests.conformance.java import run_driver
from tests.conformance.matrix import stress_row
from tests.procs import RmqProcesses, registered_brokers, unique

SECTION = "DLedger broker groups (rmq and Apache nodes in one group)"
BEFORE = 30
"""Messages sent before the master is killed."""
AFTER = 30
"""Messages sent after it, while the group elects a new leader."""


def settled(namesrv: str, group: str, nodes: list[Node]) -> str | None:
    """The leader's selfId once every running node names it and the registrations agree:
    the leader's broker as id 0, every other running node as selfId + 1; else None."""
    answers = metadata(group, nodes)
    leaders = {answer.get("leaderId") for answer in answers.values()}
    if len(leaders) != 1:
        return None
    leader = leaders.pop()
    running = [node for node in nodes if node.process.running]
    expected = {
        (0 if node.self_id == leader else int(node.self_id[1:]) + 1): node.process.addr
        for node in running
    }
    return leader if registered_brokers(namesrv) == expected else None


def run_mixed(processes: RmqProcesses, kinds: list[str]) -> None:
    namesrv = processes.start_namesrv().addr
    group, nodes = start_group(processes, namesrv, kinds)
    state: dict[str, str | None] = {}

    def agreed() -> bool:
        state["leader"] = settled(namesrv, group, nodes)
        return state["leader"] is not None

    wait_for("the nodes agreeing on one leader", agreed)
    first_leader = state["leader"]
    topic = unique("DLedgerMixed")
    home = processes.root / "java-client"
    home.mkdir(exist_ok=True)
    spec: dict[str, Any] = {"namesrv": namesrv, "topic": topic, "group": unique("dlmix-g")}
    before = run_driver(
        "DLedgerTraffic.send", {**spec, "create": True, "queues": 4, "count": BEFORE}, home=home
    )
    assert before["failures"] == 0, before
    master = next(node for node in nodes if node.self_id == first_leader)
    master.process.kill()
    after = run_driver(
        "DLedgerTraffic.send",
        {**spec, "from": BEFORE, "count": AFTER, "deadline": 90},
        home=home,
        timeout=180,
    )
    wait_for("a new leader that every live node names", agreed)
    assert state["leader"] != first_leader
    acks = before["acks"] + after["acks"]
    assert sorted(ack["i"] for ack in acks) == list(range(BEFORE + AFTER))
    read = run_driver(
        "DLedgerTraffic.consume", {**spec, "expect": [ack["i"] for ack in acks]}, home=home
    )
    at = {(m["queueId"], m["queueOffset"]): m for m in read["messages"]}
    assert len(at) == len(read["messages"]), "a queue offset holds two messages"
    for ack in acks:
        message = at.get((ack["queueId"], ack["queueOffset"]))
        assert message is not None, f"acknowledged {ack} not read back"
        assert (message["body"], message["msgId"]) == (f"dledger-{ack['i']}", ack["msgId"])
    terms = {answer.get("term") for answer in metadata(group, nodes).values()}
    assert len(terms) == 1, f"the live nodes are in different terms: {terms}"


@pytest.mark.matrix(
    SECTION, "one rmq node, two Apache nodes: elect, replicate, fail over", "result"
)
def test_one_rmq_node_with_two_apache_nodes(rmq_processes: RmqProcesses) -> None:
    run_mixed(rmq_processes, ["rmq", "apache", "apache"])


@stress_row
@pytest.mark.matrix(
    SECTION, "two rmq nodes, one Apache node: elect, replicate, fail over", "result"
)
def test_two_rmq_nodes_with_one_apache_node(rmq_processes: RmqProcesses) -> None:
    run_mixed(rmq_processes, ["rmq", "apache", "rmq"])
