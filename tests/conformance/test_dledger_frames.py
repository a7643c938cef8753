"""Raw DLedger frames answered alike by an rmq node and Apache's (DLedger 0.3.1.2, driver
``DLedgerPeer``).

Each node is n0 of a three-node group whose other two peers never start, so it stays a
candidate that votes for itself; the test plays n1 and n2.  The same script of frames goes to
each node: METADATA (right, unknown group, unknown member), a vote for a larger term (the node
moves to it), a stale-term vote, an equal-term vote after it voted for itself, heartbeats from
n1 (it follows) and from n2 (another leader), a vote from n2 while it follows n1, pushes from
n1 of each type (APPEND twice, COMMIT, COMPARE matching and not, TRUNCATE) and a push from a
node that is not its leader, a vote with a shorter log, and a heartbeat for a larger term.
Where a frame moves the node to another term, the script waits (by stale heartbeats, which
change nothing) until it is there.  The answers, remoting code and body, must be the same
field by field; only the peers' ports differ by nature.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from rmq.remoting.client import RemotingClient
from rmq.server.broker.dledger.config import DLedgerConfig, parse_peers
from rmq.server.broker.dledger.node import DLedgerNode
from rmq.server.broker.dledger.protocol import (
    DLedgerRequestCode,
    PushType,
    decode_body,
    push_request,
    request_command,
)
from rmq.store.dledger.entry import Entry
from tests.conformance.dledger_nodes import FILE_SIZE, GROUP, start_java
from tests.ports import free_port
from tests.procs import RmqProcesses

SECTION = "DLedger frames (an rmq node and Apache's answer the same script)"

Body = dict[str, Any]
Ask = Callable[[DLedgerRequestCode, Body], Awaitable[tuple[int, Body]]]


def head(sender: str, term: int, *, leader: str | None = None, group: str = GROUP) -> Body:
    return {
        "group": group,
        "remoteId": "n0",
        "localId": sender,
        "leaderId": leader or sender,
        "term": term,
    }


def vote(sender: str, term: int, end_index: int, end_term: int) -> Body:
    return {**head(sender, term), "ledgerEndIndex": end_index, "ledgerEndTerm": end_term}


def entry(index: int, term: int, pos: int) -> Entry:
    return Entry(index, term, pos, b"entry %d" % index)


def push(sender: str, term: int, kind: PushType, commit: int, item: Entry | None) -> Body:
    return push_request(head(sender, term), kind, commit, item)


async def run_script(ask: Ask, store: Path) -> list[tuple[str, int, Body]]:
    """The script's answers: (step, remoting code, body without null fields); `store` is the
    node's DLedger directory, whose ``currterm`` file shows when it voted for itself."""
    answers: list[tuple[str, int, Body]] = []

    async def step(name: str, code: DLedgerRequestCode, body: Body) -> Body:
        remoting, answer = await ask(code, body)
        answers.append((name, remoting, {k: v for k, v in answer.items() if v is not None}))
        return answer

    async def term_now() -> int:
        _, answer = await ask(DLedgerRequestCode.HEART_BEAT, head("n1", -1))
        return int(answer["term"])

    async def settle_at(term: int) -> None:
        """Until the node is at `term` and has voted for itself there (a candidate votes
        300-1000 ms after it moves to a term)."""
        votes = store / "currterm"
        voted = f"voteLeader=n0\ncurrTerm={term}\n"
        deadline = time.monotonic() + 20
        while (now := await term_now()) != term or not (
            votes.exists() and votes.read_text() == voted
        ):
            assert time.monotonic() < deadline, f"the node is at term {now}, not {term}"
            await asyncio.sleep(0.05)

    await step("metadata", DLedgerRequestCode.METADATA, {"group": GROUP, "remoteId": "n0"})
    await step(
        "metadata, unknown group",
        DLedgerRequestCode.METADATA,
        {"group": "NoSuchGroup", "remoteId": "n0"},
    )
    await step(
        "metadata, unknown member", DLedgerRequestCode.METADATA, {"group": GROUP, "remoteId": "n7"}
    )
    start = await term_now()
    answers.append(("term at start", 200, {"term": start}))
    t1 = start + 3
    await step("vote, larger term", DLedgerRequestCode.VOTE, vote("n1", t1, -1, -1))
    await settle_at(t1)
    await step("vote, stale term", DLedgerRequestCode.VOTE, vote("n1", t1 - 1, -1, -1))
    await step(
        "vote, equal term after voting for itself", DLedgerRequestCode.VOTE, vote("n1", t1, -1, -1)
    )
    await step("vote, unknown candidate", DLedgerRequestCode.VOTE, vote("n9", t1, -1, -1))
    await step("heartbeat, stale term", DLedgerRequestCode.HEART_BEAT, head("n1", t1 - 1))
    await step("heartbeat, n1 leads", DLedgerRequestCode.HEART_BEAT, head("n1", t1))
    await step("heartbeat, another leader", DLedgerRequestCode.HEART_BEAT, head("n2", t1))
    await step(
        "vote, equal term with another leader", DLedgerRequestCode.VOTE, vote("n2", t1, -1, -1)
    )
    await step(
        "metadata, following n1", DLedgerRequestCode.METADATA, {"group": GROUP, "remoteId": "n0"}
    )
    first = entry(0, t1, 0)
    second = entry(1, t1, first.size)
    await step("push APPEND 0", DLedgerRequestCode.PUSH, push("n1", t1, PushType.APPEND, -1, first))
    await step("push APPEND 1", DLedgerRequestCode.PUSH, push("n1", t1, PushType.APPEND, 0, second))
    await step("push COMMIT", DLedgerRequestCode.PUSH, push("n1", t1, PushType.COMMIT, 1, None))
    await step(
        "push COMPARE, same entry",
        DLedgerRequestCode.PUSH,
        push("n1", t1, PushType.COMPARE, 1, second),
    )
    await step(
        "push COMPARE, other term",
        DLedgerRequestCode.PUSH,
        push("n1", t1, PushType.COMPARE, 1, entry(1, t1 - 1, first.size)),
    )
    await step(
        "push TRUNCATE", DLedgerRequestCode.PUSH, push("n1", t1, PushType.TRUNCATE, 0, first)
    )
    await step(
        "push APPEND from another leader",
        DLedgerRequestCode.PUSH,
        push("n2", t1, PushType.APPEND, 0, second),
    )
    await step("heartbeat, n1 still leads", DLedgerRequestCode.HEART_BEAT, head("n1", t1))
    await step("vote, shorter log", DLedgerRequestCode.VOTE, vote("n2", t1 + 1, -1, -1))
    await step("vote, same log, larger term", DLedgerRequestCode.VOTE, vote("n2", t1 + 1, 0, t1))
    t2 = t1 + 4
    await step("heartbeat, larger term", DLedgerRequestCode.HEART_BEAT, head("n1", t2))
    await settle_at(t2)
    await step("heartbeat, at the new term", DLedgerRequestCode.HEART_BEAT, head("n1", t2))
    await step(
        "metadata, at the end", DLedgerRequestCode.METADATA, {"group": GROUP, "remoteId": "n0"}
    )
    return answers


async def frames_to(address: str, store: Path) -> list[tuple[str, int, Body]]:
    async with RemotingClient() as client:

        async def ask(code: DLedgerRequestCode, body: Body) -> tuple[int, Body]:
            response = await client.invoke(address, request_command(code, body), 5.0)
            return response.code, decode_body(response.body)

        return await run_script(ask, store)


def group_peers() -> str:
    return ";".join(f"n{i}-127.0.0.1:{free_port()}" for i in range(3))


def normalise(answers: list[tuple[str, int, Body]], peers: str) -> list[str]:
    """One line per step; the peers' addresses named by id."""
    lines = []
    for name, code, body in answers:
        text = json.dumps(body, sort_keys=True)
        for peer, address in parse_peers(peers).items():
            text = text.replace(address, f"<{peer}>")
        lines.append(f"{name}: {code} {text}")
    return lines


@pytest.mark.matrix(SECTION, "votes, heartbeats, pushes of each type, metadata", "result")
def test_an_rmq_node_answers_dledger_frames_as_apaches(
    rmq_processes: RmqProcesses, tmp_path: Path
) -> None:
    java_peers = group_peers()
    (tmp_path / "java").mkdir()
    start_java(rmq_processes, tmp_path / "java", "n0", java_peers, "")
    java_answers = frames_to(parse_peers(java_peers)["n0"], tmp_path / "java" / "dledger-n0")
    java = normalise(asyncio.run(java_answers), java_peers)

    rmq_peers = group_peers()

    async def against_rmq() -> list[tuple[str, int, Body]]:
        peers = parse_peers(rmq_peers)
        config = DLedgerConfig(
            GROUP,
            "n0",
            dict(peers),
            str(tmp_path / "rmq"),
            data_file_size=FILE_SIZE,
            index_file_size=32 * 4096,
        )
        node = DLedgerNode(config)
        await node.start()
        try:
            return await frames_to(peers["n0"], tmp_path / "rmq" / "dledger-n0")
        finally:
            await node.stop()

    rmq = normalise(asyncio.run(against_rmq()), rmq_peers)
    assert rmq == java
