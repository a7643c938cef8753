"""One DLedger group of Apache's DLedger 0.3.1.2 node (the library RocketMQ 4.9.8's DLedger
commitlog runs; driver ``DLedgerPeer``) and two rmq nodes on loopback.

With an rmq node as the preferred leader, the Java node follows it; with the Java node as the
preferred leader, the rmq leader hands the leadership over by LEADERSHIP_TRANSFER and the rmq
nodes follow.  Either way entries appended on the leader (in process on rmq, by the APPEND
RPC on Java) commit on all three nodes, and the data and index files, ``currterm`` and
``checkpoint`` are byte for byte the same on every node.
"""

from __future__ import annotations

import asyncio
import base64
import time
from pathlib import Path

from rmq.remoting.client import RemotingClient
from rmq.server.broker.dledger.config import DLedgerConfig, parse_peers
from rmq.server.broker.dledger.member import Role
from rmq.server.broker.dledger.node import DLedgerNode
from rmq.server.broker.dledger.protocol import (
    Code,
    DLedgerRequestCode,
    decode_body,
    request_command,
)
from tests.conformance.dledger_nodes import FILE_SIZE, GROUP, java_state, start_java
from tests.procs import RmqProcesses, free_port

ENTRIES = 30


async def until(condition: object, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)


def same_files(root: Path, ids: list[str], sub: str, end: int) -> None:
    name = f"{0:020d}"
    contents = {i: (root / f"dledger-{i}" / sub / name).read_bytes() for i in ids}
    first = contents[ids[0]]
    assert first[end : end + 256] == bytes(256)
    for other in ids[1:]:
        assert contents[other][:end] == first[:end], f"{sub} of {other} differs from {ids[0]}'s"
        assert contents[other][end : end + 256] == bytes(256)


def same_state_files(root: Path, ids: list[str], name: str) -> str:
    texts = {i: (root / f"dledger-{i}" / name).read_text() for i in ids}
    assert len(set(texts.values())) == 1, texts
    return texts[ids[0]]


def run_group(processes: RmqProcesses, root: Path, java_id: str, preferred: str) -> None:
    ports = [free_port() for _ in range(3)]
    peers_text = ";".join(f"n{i}-127.0.0.1:{port}" for i, port in enumerate(ports))
    peers = parse_peers(peers_text)
    java = start_java(processes, root, java_id, peers_text, preferred)
    ids = list(peers)

    async def scenario() -> None:
        nodes = [
            DLedgerNode(
                DLedgerConfig(
                    GROUP,
                    peer,
                    dict(peers),
                    str(root),
                    preferred_leader_ids=[preferred],
                    data_file_size=FILE_SIZE,
                    index_file_size=32 * 4096,
                )
            )
            for peer in peers
            if peer != java_id
        ]
        for node in nodes:
            await node.start()
        try:

            def settled() -> bool:
                state = java_state(java)
                leader_ok = all(
                    n.leader_id == preferred
                    and n.role is (Role.LEADER if n.config.self_id == preferred else Role.FOLLOWER)
                    for n in nodes
                )
                java_role = "LEADER" if java_id == preferred else "FOLLOWER"
                return leader_ok and state[:1] == [java_role] and state[2] == preferred

            await until(settled, 60)
            if java_id == preferred:
                address = peers[java_id]
                async with RemotingClient() as client:
                    for i in range(ENTRIES):
                        body = base64.b64encode(b"entry %d " % i * (1 + i % 5)).decode()
                        request = {"group": GROUP, "remoteId": java_id, "body": body}
                        response = await client.invoke(
                            address, request_command(DLedgerRequestCode.APPEND, request), 5.0
                        )
                        assert decode_body(response.body)["code"] == Code.SUCCESS
            else:
                leader = next(n for n in nodes if n.config.self_id == preferred)
                for i in range(ENTRIES):
                    answer = await leader.append(b"entry %d " % i * (1 + i % 5))
                    assert answer["code"] == Code.SUCCESS
            last = ENTRIES - 1
            await until(
                lambda: (
                    all(n.ledger.committed_index == last for n in nodes)
                    and java_state(java)[3:] == [str(last), str(last)]
                ),
                20,
            )
            end = nodes[0].ledger.data.max_offset()
            assert nodes[0].ledger.get(last).body == b"entry %d " % last * (1 + last % 5)
            for node in nodes:
                node.ledger.flush()
                node.ledger.persist_checkpoint()
            same_files(root, ids, "data", end)
            same_files(root, ids, "index", ENTRIES * 32)
            expected = f"committedIndex={last}\nendIndex={last}\n"
            await until(
                lambda: (
                    (root / f"dledger-{java_id}" / "checkpoint").exists()
                    and (root / f"dledger-{java_id}" / "checkpoint").read_text() == expected
                ),
                10,
            )
            assert same_state_files(root, ids, "checkpoint") == expected
            term = java_state(java)[1]
            votes = {i: (root / f"dledger-{i}" / "currterm").read_text() for i in ids}
            # Every node, Apache's as rmq's, writes the term it is in and the vote it cast
            # there; a node that stood as a candidate in the leader's term keeps its vote
            # for itself (a vote is not changed within a term), and one that moved to the
            # term at once (a vote or heartbeat of a larger term) and heard the leader before
            # its own vote was due cast none there: only a majority's file names the leader.
            allowed = {f"voteLeader={i}\ncurrTerm={term}\n" for i in [*ids, ""]}
            assert set(votes.values()) <= allowed, votes
            expected_vote = f"voteLeader={preferred}\ncurrTerm={term}\n"
            assert sum(text == expected_vote for text in votes.values()) * 2 > len(ids), votes
        finally:
            for node in nodes:
                await node.stop()

    asyncio.run(scenario())


def test_apaches_node_follows_an_rmq_leader(rmq_processes: RmqProcesses, tmp_path: Path) -> None:
    run_group(rmq_processes, tmp_path, java_id="n0", preferred="n1")


def test_rmq_nodes_hand_over_to_and_follow_apaches_leader(
    rmq_processes: RmqProcesses, tmp_path: Path
) -> None:
    run_group(rmq_processes, tmp_path, java_id="n1", preferred="n1")
