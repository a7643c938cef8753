"""VersionedConfigManager's group commit and its assembled texts (topics and groups).

The file and the GET_ALL_* body are assembled from cached per-entry texts: they must be
exactly what encoding the whole snapshot gives.  Changes made together are written together:
N concurrent changes cost far fewer than N writes, and each change's waiter returns only once
a write covering it is done.
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

from rmq.common import fastjson
from rmq.common.config import BrokerConfig
from rmq.remoting.bodies import SubscriptionGroupConfig, TopicConfig
from rmq.server.broker.configmanager import commit_before_answer
from rmq.server.broker.subscription.subscriptiongroup import SubscriptionGroupManager
from rmq.server.broker.topic.topicconfig import TopicConfigManager


def topics(tmp_path: Path) -> TopicConfigManager:
    return TopicConfigManager(BrokerConfig(broker_name="broker-a"), tmp_path / "topics.json")


def groups(tmp_path: Path) -> SubscriptionGroupManager:
    return SubscriptionGroupManager(BrokerConfig(), tmp_path / "subscriptionGroup.json")


def whole_file(manager: TopicConfigManager | SubscriptionGroupManager) -> str:
    return fastjson.dumps(manager._snapshot().to_json(), pretty=True)


def test_assembled_texts_equal_the_whole_encoding(tmp_path: Path) -> None:
    manager = topics(tmp_path)
    manager.update(TopicConfig(topic_name="first", perm=2, order=True))
    manager.update(TopicConfig(topic_name="second", read_queue_nums=3))
    assert manager.render_file() == whole_file(manager)
    assert manager.encoded_body() == manager.topic_config_wrapper().encode()
    # A change of one entry, a deletion and a re-creation (which moves the entry last).
    manager.update(TopicConfig(topic_name="second", read_queue_nums=5))
    manager.delete("first")
    manager.update(TopicConfig(topic_name="first"))
    assert manager.render_file() == whole_file(manager)
    assert manager.encoded_body() == manager.topic_config_wrapper().encode()
    assert (tmp_path / "topics.json").read_text() == whole_file(manager)

    group_manager = groups(tmp_path)
    group_manager.update(SubscriptionGroupConfig(group_name="g1", retry_max_times=3))
    group_manager.update(SubscriptionGroupConfig(group_name='odd "name"\t\u00e9\n'))
    assert group_manager.render_file() == whole_file(group_manager)
    assert group_manager.encoded_body() == group_manager.subscription_group_wrapper().encode()
    group_manager.take_over(dataclasses.replace(group_manager.subscription_group_wrapper()))
    empty = groups(tmp_path / "empty")
    empty._clear()
    assert empty.render_file() == whole_file(empty)
    assert empty.encoded_body() == empty.subscription_group_wrapper().encode()


def test_the_cached_body_is_kept_until_the_next_change(tmp_path: Path) -> None:
    manager = groups(tmp_path)
    first = manager.encoded_body()
    assert manager.encoded_body() is first
    manager.update(SubscriptionGroupConfig(group_name="g2"))
    second = manager.encoded_body()
    assert second != first
    assert b'"g2"' in second


def test_concurrent_changes_share_writes(tmp_path: Path) -> None:
    """1,000 creates issued together, each waiting for its write: one or two writes, every
    waiter released only when the file holds its topic."""
    manager = topics(tmp_path)
    count = 1000

    async def create(index: int) -> None:
        name = f"topic-{index}"
        manager.update(TopicConfig(topic_name=name))
        await manager.wait_written(manager.changes)
        assert f'"{name}":' in (tmp_path / "topics.json").read_text()

    async def main() -> None:
        await asyncio.gather(*(create(index) for index in range(count)))
        await manager.flush()

    asyncio.run(main())
    assert manager.changes == count
    assert 1 <= manager.writes <= 2
    stored = fastjson.loads((tmp_path / "topics.json").read_text())
    assert {f"topic-{index}" for index in range(count)} <= set(stored["topicConfigTable"])
    assert stored["dataVersion"]["counter"] == manager.data_version.counter


def test_changes_during_a_write_wait_for_the_next_one(tmp_path: Path) -> None:
    """A change made while a write runs is not released by that write."""
    manager = groups(tmp_path)

    async def main() -> None:
        manager.update(SubscriptionGroupConfig(group_name="first"))
        first = manager.changes
        await asyncio.sleep(0)  # the write of "first" starts (its text is taken)
        manager.update(SubscriptionGroupConfig(group_name="second"))
        second = manager.changes
        await manager.wait_written(first)
        # Released by the first write; the next write (which may already be replacing the
        # file on its thread, so the file is not looked at here) is not yet counted.
        assert manager.writes == 1
        await manager.wait_written(second)
        assert manager.writes == 2
        assert "second" in (tmp_path / "subscriptionGroup.json").read_text()

    asyncio.run(main())


def test_an_answer_waits_for_the_write_of_its_change(tmp_path: Path) -> None:
    manager = topics(tmp_path)
    other = groups(tmp_path)

    async def handler(name: str, request: object) -> str:
        manager.update(TopicConfig(topic_name=name))
        return name

    async def reader(name: str, request: object) -> str:
        return name

    async def main() -> None:
        wrapped = commit_before_answer(handler, (manager, other))
        assert await wrapped("made-here", None) == "made-here"
        assert "made-here" in (tmp_path / "topics.json").read_text()
        assert manager.writes == 1
        # A request that changes nothing does not wait, even with a write pending.
        manager.update(TopicConfig(topic_name="pending"))
        read = commit_before_answer(reader, (manager, other))
        assert await read("r", None) == "r"
        assert manager.writes == 1
        await manager.flush()
        assert manager.writes == 2

    asyncio.run(main())
