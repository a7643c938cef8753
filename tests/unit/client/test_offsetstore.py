"""Offset stores: the in-memory table both share, the broadcasting store's local file (in the
format the Java client writes), and how the clustering store reports a broker it cannot
reach.  The clustering store's round trip through a real broker is in
tests/integration/test_client_consumer.py."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from rmq.client.consumer.offsetstore import (
    LocalFileOffsetStore,
    ReadOffsetType,
    RemoteBrokerOffsetStore,
)
from rmq.client.errors import ClientErrorCode, MQClientError
from rmq.common import fastjson
from rmq.remoting.bodies import MessageQueue
from rmq.remoting.client import RemotingClient

Q0 = MessageQueue("T", "broker-a", 0)
Q1 = MessageQueue("T", "broker-a", 1)
OTHER = MessageQueue("U", "broker-b", 0)
CLIENT_ID = "10.0.0.1@DEFAULT"


def read(
    store: LocalFileOffsetStore | RemoteBrokerOffsetStore, mq: MessageQueue, kind: ReadOffsetType
) -> int:
    return asyncio.run(store.read_offset(mq, kind))


def test_increase_only_updates_never_move_an_offset_back(tmp_path: Path) -> None:
    store = LocalFileOffsetStore(CLIENT_ID, "G", tmp_path)
    store.update_offset(Q0, 10, increase_only=True)
    store.update_offset(Q0, 7, increase_only=True)
    assert read(store, Q0, ReadOffsetType.READ_FROM_MEMORY) == 10
    store.update_offset(Q0, 7, increase_only=False)
    assert read(store, Q0, ReadOffsetType.READ_FROM_MEMORY) == 7


def test_memory_reads_of_unknown_queues_say_not_found_and_clones_filter_by_topic(
    tmp_path: Path,
) -> None:
    store = LocalFileOffsetStore(CLIENT_ID, "G", tmp_path)
    assert read(store, Q0, ReadOffsetType.READ_FROM_MEMORY) == -1
    store.update_offset(Q0, 3, increase_only=False)
    store.update_offset(OTHER, 4, increase_only=False)
    assert store.clone_offset_table("T") == {Q0: 3}
    assert store.clone_offset_table() == {Q0: 3, OTHER: 4}
    store.remove_offset(Q0)
    assert store.clone_offset_table() == {OTHER: 4}


def test_the_local_file_survives_a_restart_and_keeps_queues_persisted_earlier(
    tmp_path: Path,
) -> None:
    first = LocalFileOffsetStore(CLIENT_ID, "G", tmp_path)
    first.update_offset(Q0, 12, increase_only=False)
    first.update_offset(OTHER, 5, increase_only=False)
    asyncio.run(first.persist_all([Q0, OTHER]))
    second = LocalFileOffsetStore(CLIENT_ID, "G", tmp_path)
    second.update_offset(Q1, 30, increase_only=False)
    asyncio.run(second.persist(Q1))

    third = LocalFileOffsetStore(CLIENT_ID, "G", tmp_path)
    third.load()
    assert third.clone_offset_table() == {Q0: 12, Q1: 30, OTHER: 5}
    assert third.path == tmp_path / CLIENT_ID / "G" / "offsets.json"


def test_the_local_file_is_what_the_java_client_writes(tmp_path: Path) -> None:
    store = LocalFileOffsetStore(CLIENT_ID, "G", tmp_path)
    store.update_offset(Q1, 8, increase_only=False)
    asyncio.run(store.persist(Q1))
    parsed = fastjson.loads(store.path.read_bytes())
    ((key, offset),) = parsed["offsetTable"].items()
    assert key == fastjson.JsonObjectKey({"brokerName": "broker-a", "queueId": 1, "topic": "T"})
    assert offset == 8

    java_written = (
        '{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:41,'
        '{"brokerName":"broker-b","queueId":0,"topic":"U"}:2}}'
    )
    store.path.write_text(java_written, encoding="utf-8")
    assert read(store, Q0, ReadOffsetType.READ_FROM_STORE) == 41
    assert read(store, OTHER, ReadOffsetType.MEMORY_FIRST_THEN_STORE) == 2
    assert read(store, Q0, ReadOffsetType.READ_FROM_MEMORY) == 41  # the store read cached it


def test_an_unreadable_file_falls_back_to_the_previous_version(tmp_path: Path) -> None:
    store = LocalFileOffsetStore(CLIENT_ID, "G", tmp_path)
    store.update_offset(Q0, 1, increase_only=False)
    asyncio.run(store.persist(Q0))
    store.update_offset(Q0, 2, increase_only=False)
    asyncio.run(store.persist(Q0))
    backup = store.path.with_name("offsets.json.bak")
    assert backup.exists() and not store.path.with_name("offsets.json.tmp").exists()
    store.path.write_bytes(b"{not json")
    assert read(store, Q0, ReadOffsetType.READ_FROM_STORE) == 1
    backup.unlink()
    assert read(store, Q1, ReadOffsetType.READ_FROM_STORE) == -1


def test_a_broker_that_cannot_be_found_reads_as_failed_and_commits_do_not_raise() -> None:
    async def scenario() -> None:
        async def no_broker(mq: MessageQueue) -> str:
            raise MQClientError(ClientErrorCode.BROKER_NOT_EXIST_EXCEPTION, "no broker")

        async with RemotingClient() as remoting:
            store = RemoteBrokerOffsetStore(remoting, "G", no_broker)
            assert await store.read_offset(Q0, ReadOffsetType.READ_FROM_STORE) == -2
            store.update_offset(Q0, 9, increase_only=False)
            assert await store.read_offset(Q0, ReadOffsetType.MEMORY_FIRST_THEN_STORE) == 9
            await store.persist(Q0, oneway=False)
            await store.persist_all([Q0])

    asyncio.run(scenario())


def test_the_remote_store_forgets_queues_it_no_longer_persists() -> None:
    async def scenario() -> None:
        async def unreachable(mq: MessageQueue) -> str:
            return "127.0.0.1:1"

        async with RemotingClient(connect_timeout=0.5) as remoting:
            store = RemoteBrokerOffsetStore(remoting, "G", unreachable)
            store.update_offset(Q0, 1, increase_only=False)
            store.update_offset(Q1, 2, increase_only=False)
            await store.persist_all([Q1])
            assert store.clone_offset_table() == {Q1: 2}
            assert await store.read_offset(Q0, ReadOffsetType.READ_FROM_STORE) == -2

    asyncio.run(scenario())


@pytest.mark.parametrize("oneway", [True, False])
def test_nothing_to_persist_sends_nothing(oneway: bool, tmp_path: Path) -> None:
    store = LocalFileOffsetStore(CLIENT_ID, "G", tmp_path)
    asyncio.run(store.persist(Q0, oneway=oneway))
    asyncio.run(store.persist_all([], oneway=oneway))
    assert not store.path.exists()
