"""Three DLedger nodes on loopback in one process, with DLedger 0.3.1.2's timings: one leader
is elected, appends commit on a majority, a stopped leader is replaced, a follower that missed
entries (or holds entries no majority took) is brought level with the leader."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path
from typing import Any

from rmq.remoting.client import RemotingClient
from rmq.server.broker.dledger.config import DLedgerConfig
from rmq.server.broker.dledger.member import Role
from rmq.server.broker.dledger.node import DLedgerNode
from rmq.server.broker.dledger.protocol import (
    Code,
    DLedgerRequestCode,
    PushType,
    base,
    decode_body,
    push_request,
    request_command,
)
from rmq.store.dledger.entry import Entry
from tests.ports import free_port
from tests.unit.broker.helpers import run, until

GROUP = "RaftNode00"


def configs(root: Path, size: int = 3, **extra: object) -> list[DLedgerConfig]:
    peers = {f"n{i}": f"127.0.0.1:{free_port()}" for i in range(size)}
    return [
        DLedgerConfig(
            GROUP,
            peer,
            dict(peers),
            str(root),
            data_file_size=1 << 16,
            index_file_size=32 * 4096,
            **extra,  # type: ignore[arg-type]
        )
        for peer in peers
    ]


def leaders(nodes: list[DLedgerNode]) -> list[DLedgerNode]:
    return [n for n in nodes if n.role is Role.LEADER]


async def one_leader(nodes: list[DLedgerNode], timeout: float = 15.0) -> DLedgerNode:
    """Wait until exactly one node leads and every other follows it."""

    def settled() -> bool:
        lead = leaders(nodes)
        return len(lead) == 1 and all(
            n.role is Role.FOLLOWER and n.leader_id == lead[0].config.self_id
            for n in nodes
            if n is not lead[0]
        )

    await until(settled, timeout)
    return leaders(nodes)[0]


async def started(cfgs: list[DLedgerConfig]) -> list[DLedgerNode]:
    nodes = [DLedgerNode(c) for c in cfgs]
    for node in nodes:
        await node.start()
    return nodes


async def stop_all(nodes: list[DLedgerNode]) -> None:
    for node in nodes:
        if node._server is not None:
            await node.stop()


def files_of(node: DLedgerNode, kind: str) -> dict[str, bytes]:
    node.ledger.flush()
    return {
        m.file_name: bytes(m.view[: m.wrote_position]) for m in getattr(node.ledger, kind).files
    }


def test_a_leader_is_elected_and_appends_commit_on_a_majority(tmp_path: Path) -> None:
    async def scenario() -> None:
        nodes = await started(configs(tmp_path))
        try:
            leader = await one_leader(nodes)
            term = leader.term
            assert all(n.term == term for n in nodes)
            answers = [await leader.append(b"message %d" % i) for i in range(20)]
            assert [a["code"] for a in answers] == [Code.SUCCESS] * 20
            assert [a["index"] for a in answers] == list(range(20))
            await until(lambda: all(n.ledger.committed_index == 19 for n in nodes), 5.0)
            for node in nodes:
                assert node.ledger.get(7).body == b"message 7"
                assert node.ledger.get(7).term == term
            assert (
                files_of(nodes[0], "data")
                == files_of(nodes[1], "data")
                == files_of(nodes[2], "data")
            )
            follower = next(n for n in nodes if n is not leader)
            refused = await follower.append(b"not here")
            assert refused["code"] == Code.NOT_LEADER
        finally:
            await stop_all(nodes)

    run(scenario(), timeout=60)


def test_the_rpc_answers_metadata_get_and_append_with_remoting_code_200(tmp_path: Path) -> None:
    async def scenario() -> None:
        nodes = await started(configs(tmp_path))
        try:
            leader = await one_leader(nodes)
            lid = leader.config.self_id
            async with RemotingClient() as client:

                async def call(code: DLedgerRequestCode, body: dict[str, Any]) -> dict[str, Any]:
                    response = await client.invoke(
                        leader.config.address, request_command(code, body), 3.0
                    )
                    assert response.code == 200
                    return decode_body(response.body)

                head = {"group": GROUP, "remoteId": lid}
                meta = await call(DLedgerRequestCode.METADATA, head)
                assert meta["leaderId"] == lid and meta["peers"] == leader.config.peers
                appended = await call(
                    DLedgerRequestCode.APPEND, {**head, "body": base64.b64encode(b"hi").decode()}
                )
                assert (appended["code"], appended["index"], appended["pos"]) == (200, 0, 0)
                got = await call(DLedgerRequestCode.GET, {**head, "beginIndex": 0})
                entry = got["entries"][0]
                assert base64.b64decode(entry["body"]) == b"hi" and entry["size"] == 50
                wrong = await call(DLedgerRequestCode.METADATA, {"group": "other", "remoteId": lid})
                assert wrong["code"] == Code.UNKNOWN_GROUP
                stranger = await call(
                    DLedgerRequestCode.METADATA, {"group": GROUP, "remoteId": "n9"}
                )
                assert stranger["code"] == Code.UNKNOWN_MEMBER
        finally:
            await stop_all(nodes)

    run(scenario(), timeout=60)


def test_stopping_the_leader_elects_another_which_keeps_every_committed_entry(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        nodes = await started(configs(tmp_path))
        try:
            old = await one_leader(nodes)
            for i in range(5):
                assert (await old.append(b"before %d" % i))["code"] == Code.SUCCESS
            await old.stop()
            rest = [n for n in nodes if n is not old]
            new = await one_leader(rest, timeout=20.0)
            assert new.term > old.term
            answer = await new.append(b"after")
            assert (answer["code"], answer["index"]) == (Code.SUCCESS, 5)
            await until(lambda: all(n.ledger.committed_index == 5 for n in rest), 5.0)
            assert [new.ledger.get(i).body for i in range(5)] == [
                b"before %d" % i for i in range(5)
            ]
        finally:
            await stop_all(nodes)

    run(scenario(), timeout=90)


def test_a_follower_that_was_down_catches_up_and_loses_an_uncommitted_tail(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        cfgs = configs(tmp_path)
        nodes = await started(cfgs)
        try:
            leader = await one_leader(nodes)
            lagging = next(n for n in nodes if n is not leader)
            await lagging.stop()
            for i in range(30):
                assert (await leader.append(b"while down %d" % i))["code"] == Code.SUCCESS
            # the stopped follower's files get two entries no majority ever held
            stale = DLedgerNode(lagging.config)
            stale.ledger.recover()
            assert stale.ledger.end_index == -1
            stale.ledger.append_as_leader(0, b"stale one")
            stale.ledger.append_as_leader(0, b"stale two")
            stale.ledger.close()
            back = DLedgerNode(lagging.config)
            nodes[nodes.index(lagging)] = back
            await back.start()
            await until(lambda: back.ledger.committed_index == 29, 20.0)
            assert back.role is Role.FOLLOWER
            assert [back.ledger.get(i).body for i in (0, 29)] == [b"while down 0", b"while down 29"]
            assert files_of(back, "data") == files_of(leader, "data")
            assert files_of(back, "index") == files_of(leader, "index")
        finally:
            await stop_all(nodes)

    run(scenario(), timeout=90)


def test_with_two_of_three_down_an_append_is_not_acknowledged(tmp_path: Path) -> None:
    async def scenario() -> None:
        nodes = await started(configs(tmp_path))
        try:
            leader = await one_leader(nodes)
            for node in nodes:
                if node is not leader:
                    await node.stop()
            answer = await leader.append(b"alone")
            assert answer["code"] in (Code.WAIT_QUORUM_ACK_TIMEOUT, Code.TERM_CHANGED)
            assert leader.ledger.committed_index == -1
        finally:
            await stop_all(nodes)

    run(scenario(), timeout=60)


def test_the_preferred_leader_takes_over(tmp_path: Path) -> None:
    async def scenario() -> None:
        cfgs = configs(tmp_path, preferred_leader_ids=["n2"])
        nodes = await started(cfgs)
        try:
            await until(lambda: nodes[2].role is Role.LEADER, 30.0)
            leader = await one_leader(nodes)
            assert leader is nodes[2]
            assert (await leader.append(b"x"))["code"] == Code.SUCCESS
        finally:
            await stop_all(nodes)

    run(scenario(), timeout=60)


def test_a_single_node_group_commits_alone(tmp_path: Path) -> None:
    async def scenario() -> None:
        nodes = await started(configs(tmp_path, size=1))
        try:
            await until(lambda: nodes[0].role is Role.LEADER, 5.0)
            answer = await nodes[0].append(b"solo")
            assert answer["code"] == Code.SUCCESS
            await until(lambda: nodes[0].ledger.committed_index == 0, 2.0)
        finally:
            await stop_all(nodes)

    asyncio.run(asyncio.wait_for(scenario(), 30))


def test_a_leader_that_steps_down_answers_its_waiting_appends_term_changed(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        nodes = await started(configs(tmp_path))
        try:
            leader = await one_leader(nodes)
            for node in nodes:
                if node is not leader:
                    await node.stop()
            waiting = leader.append_entry(b"never committed")
            leader.elector.to_candidate(leader.term)
            answer = await asyncio.wait_for(waiting, 1.0)
            assert (answer["code"], answer["index"]) == (Code.TERM_CHANGED, -1)
        finally:
            await stop_all(nodes)

    run(scenario(), timeout=60)


def test_a_follower_answers_held_appends_when_a_compare_arrives_and_pull_is_unsupported(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        cfgs = configs(tmp_path)
        node = DLedgerNode(cfgs[1])
        await node.start()
        try:
            node.member.term = 3
            node.elector.to_follower(3, "n0")
            head = base(GROUP, "n0", "n1", leader_id="n0", term=3)
            ahead = asyncio.ensure_future(
                node.pusher.handle_push(
                    push_request(head, PushType.APPEND, -1, Entry(4, 3, 900, b"x"))
                )
            )
            await asyncio.sleep(0)
            assert not ahead.done()
            repeated = await node.pusher.handle_push(
                push_request(head, PushType.APPEND, -1, Entry(4, 3, 900, b"x"))
            )
            assert repeated["code"] == Code.REPEATED_PUSH
            compare = await node.pusher.handle_push(
                push_request(head, PushType.COMPARE, -1, Entry(0, 3, 0, b"y"))
            )
            assert (compare["code"], compare["beginIndex"], compare["endIndex"]) == (
                Code.INCONSISTENT_STATE,
                -1,
                -1,
            )
            held = await asyncio.wait_for(ahead, 1.0)
            assert (held["code"], held["index"]) == (Code.INCONSISTENT_STATE, 4)
            async with RemotingClient() as client:
                request = request_command(
                    DLedgerRequestCode.PULL, {"group": GROUP, "remoteId": "n1"}
                )
                response = await client.invoke(cfgs[1].address, request, 3.0)
                assert decode_body(response.body)["code"] == Code.UNSUPPORTED
        finally:
            await node.stop()

    run(scenario(), timeout=30)


def test_leadership_transfer_over_the_rpc_moves_the_leader(tmp_path: Path) -> None:
    async def scenario() -> None:
        nodes = await started(configs(tmp_path))
        try:
            leader = await one_leader(nodes)
            assert (await leader.append(b"before"))["code"] == Code.SUCCESS
            target = next(n for n in nodes if n is not leader)
            lid, tid = leader.config.self_id, target.config.self_id
            request = base(GROUP, None, lid, term=leader.term)
            request.update(transferId=lid, transfereeId=tid)
            async with RemotingClient() as client:
                response = await client.invoke(
                    leader.config.address,
                    request_command(DLedgerRequestCode.LEADERSHIP_TRANSFER, request),
                    5.0,
                )
            answer = decode_body(response.body)
            assert answer["code"] == Code.SUCCESS
            assert await one_leader(nodes) is target
            assert target.term == answer["term"] > 0
            assert (await target.append(b"after"))["code"] == Code.SUCCESS
            await until(lambda: all(n.ledger.committed_index == 1 for n in nodes), 5.0)
        finally:
            await stop_all(nodes)

    run(scenario(), timeout=60)


def test_appended_entries_reach_the_disk_without_waiting_for_the_checkpoint(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        nodes = await started(configs(tmp_path, size=1))
        try:
            node = nodes[0]
            await until(lambda: node.role is Role.LEADER, 5.0)
            assert (await node.append(b"durable"))["code"] == Code.SUCCESS
            data, index = node.ledger.data, node.ledger.index
            await until(
                lambda: (
                    data.flushed_where == data.max_offset() == 55
                    and index.flushed_where == index.max_offset() == 32
                ),
                1.0,
            )
        finally:
            await stop_all(nodes)

    run(scenario(), timeout=30)
