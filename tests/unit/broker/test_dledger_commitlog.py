"""RocketMQ sends through a three-node DLedger group in one process: SEND results with offsets
at entry position + 48, the same records dispatched on every node once committed, refusals
on followers and without a quorum mapped as Apache's DLedgerCommitLog maps them, and queue
offsets that continue on a new leader."""

from __future__ import annotations

from pathlib import Path

from rmq.common.message import DispatchInfo, decode_record
from rmq.common.msgid import pack_host
from rmq.server.broker.dledger.commitlog import DLedgerCommitLog, put_status
from rmq.server.broker.dledger.node import DLedgerNode
from rmq.server.broker.dledger.protocol import Code
from rmq.store.putmessage import InnerMessage, PutMessageStatus
from tests.unit.broker.helpers import run, until
from tests.unit.broker.test_dledger_group import configs, one_leader, stop_all

STORE_HOST = pack_host("127.0.0.1", 30911)


def message(n: int, queue_id: int = 0) -> InnerMessage:
    return InnerMessage("TopicTest", queue_id, b"body %d" % n, b"KEYS\x01k%d\x02" % n)


async def group(
    root: Path,
) -> tuple[list[DLedgerNode], list[DLedgerCommitLog], list[list[DispatchInfo]]]:
    nodes = [DLedgerNode(c) for c in configs(root)]
    seen: list[list[DispatchInfo]] = [[] for _ in nodes]
    logs = [DLedgerCommitLog(n, STORE_HOST, s.append) for n, s in zip(nodes, seen, strict=True)]
    for node, log in zip(nodes, logs, strict=True):
        await node.start()
        log.attach()
    return nodes, logs, seen


def test_the_status_mapping_is_apaches() -> None:
    assert put_status(Code.SUCCESS) is PutMessageStatus.PUT_OK
    for code in (Code.NOT_LEADER, Code.INCONSISTENT_LEADER, Code.LEADER_NOT_READY, Code.DISK_FULL):
        assert put_status(code) is PutMessageStatus.SERVICE_NOT_AVAILABLE
    for code in (Code.WAIT_QUORUM_ACK_TIMEOUT, Code.LEADER_PENDING_FULL):
        assert put_status(code) is PutMessageStatus.OS_PAGECACHE_BUSY
    for unknown in (Code.TERM_CHANGED, Code.LEADER_TRANSFERRING, 12345):
        assert put_status(unknown) is PutMessageStatus.UNKNOWN_ERROR


def test_sends_commit_and_every_node_dispatches_the_same_records(tmp_path: Path) -> None:
    async def scenario() -> None:
        nodes, logs, seen = await group(tmp_path)
        try:
            leader = await one_leader(nodes)
            log = logs[nodes.index(leader)]
            await until(lambda: log.ready, 5.0)
            results = [await log.put_message(message(n, n % 2)) for n in range(10)]
            assert all(r.status is PutMessageStatus.PUT_OK for r in results)
            assert [r.queue_offset for r in results] == [n // 2 for n in range(10)]
            for n, result in enumerate(results):
                entry = leader.ledger.get(n)
                assert result.physical_offset == entry.pos + 48
                record = decode_record(entry.body)
                assert (record.physical_offset, record.body) == (entry.pos + 48, b"body %d" % n)
            await until(lambda: all(len(s) == 10 for s in seen), 5.0)
            for dispatched in seen:
                assert [d.physical_offset for d in dispatched] == [
                    r.physical_offset for r in results
                ]
                assert [d.keys for d in dispatched] == [f"k{n}" for n in range(10)]
            follower = logs[(nodes.index(leader) + 1) % 3]
            refused = await follower.put_message(message(99))
            assert refused.status is PutMessageStatus.SERVICE_NOT_AVAILABLE
        finally:
            await stop_all(nodes)

    run(scenario(), timeout=60)


def test_a_new_leader_continues_the_queue_offsets(tmp_path: Path) -> None:
    async def scenario() -> None:
        nodes, logs, _ = await group(tmp_path)
        try:
            old = await one_leader(nodes)
            log = logs[nodes.index(old)]
            await until(lambda: log.ready, 5.0)
            for n in range(5):
                assert (await log.put_message(message(n))).ok
            await old.stop()
            rest = [n for n in nodes if n is not old]
            new = await one_leader(rest, timeout=20.0)
            new_log = logs[nodes.index(new)]
            await until(lambda: new_log.ready, 5.0)
            result = await new_log.put_message(message(5))
            assert (result.status, result.queue_offset) == (PutMessageStatus.PUT_OK, 5)
        finally:
            await stop_all(nodes)

    run(scenario(), timeout=90)


def test_without_a_quorum_a_send_is_busy_and_its_queue_offset_is_gone(tmp_path: Path) -> None:
    async def scenario() -> None:
        nodes, logs, seen = await group(tmp_path)
        try:
            leader = await one_leader(nodes)
            log = logs[nodes.index(leader)]
            await until(lambda: log.ready, 5.0)
            for node in nodes:
                if node is not leader:
                    await node.stop()
            result = await log.put_message(message(0))
            assert result.status in (
                PutMessageStatus.OS_PAGECACHE_BUSY,
                PutMessageStatus.UNKNOWN_ERROR,
            )
            assert log.messages.topic_queue_table[("TopicTest", 0)] == 1  # taken, as Apache's
            assert seen[nodes.index(leader)] == []
        finally:
            await stop_all(nodes)

    run(scenario(), timeout=60)
