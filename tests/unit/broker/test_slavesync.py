"""The slave's copy of its master's metadata (rmq.server.broker.slave.slavesync): a real master
context answers through its admin processor, over a fake wire that records where each request
went."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from rmq.common import fastjson
from rmq.common.config import BrokerRole
from rmq.remoting.bodies import SubscriptionGroupConfig, TopicConfig
from rmq.remoting.codes import RequestCode
from rmq.remoting.command import RemotingCommand
from rmq.remoting.connection import Connection, RemotingEndpoint
from rmq.server.broker.context import BrokerContext
from rmq.server.broker.processor.adminprocessor import AdminProcessor
from rmq.server.broker.slave.slavesync import SlaveSynchronizer, fast_port_addr
from tests.unit.broker.helpers import run, running_broker, until

MASTER_ADDR = "10.0.0.9:10911"


class MasterWire:
    """Answers with the master's admin processor; `refuse` codes raise as a dead link."""

    def __init__(self, master: BrokerContext) -> None:
        self.handlers = AdminProcessor(master).handlers()
        self.asked: list[tuple[str, int]] = []
        self.refuse: set[int] = set()
        self.closed = False

    async def invoke(self, addr: str, request: RemotingCommand, timeout: float) -> RemotingCommand:
        self.asked.append((addr, request.code))
        if request.code in self.refuse:
            raise ConnectionResetError("the master went away")
        connection = Connection(RemotingEndpoint(max_frame_size=1 << 24, idle_timeout=None))
        response = await self.handlers[request.code](connection, request)
        assert response is not None
        return response

    async def close(self) -> None:
        self.closed = True


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[BrokerContext, BrokerContext]]:
    with (
        running_broker(tmp_path / "master") as master,
        running_broker(
            tmp_path / "slave", broker={"broker_id": 1}, store={"broker_role": BrokerRole.SLAVE}
        ) as slave,
    ):
        yield master, slave


def _file(manager_path: Path) -> object:
    return fastjson.loads(manager_path.read_text())


def _prepare_master(master: BrokerContext) -> None:
    master.topic_config_manager.update(
        TopicConfig(topic_name="SyncTopic", read_queue_nums=3, write_queue_nums=3)
    )
    master.subscription_group_manager.update(
        SubscriptionGroupConfig(group_name="SyncGroup", retry_max_times=3)
    )
    master.consumer_offset_manager.commit("c", "SyncGroup", "SyncTopic", 2, 17)


def test_a_round_copies_topics_groups_offsets_and_delay_offsets(
    pair: tuple[BrokerContext, BrokerContext],
) -> None:
    master, slave = pair
    _prepare_master(master)
    slave.consumer_offset_manager.commit("c", "OnlyHere", "SyncTopic", 0, 4)
    slave.topic_config_manager.update(TopicConfig(topic_name="SlaveOnly"))
    slave.master_addr = MASTER_ADDR
    wire = MasterWire(master)
    sync = SlaveSynchronizer(slave, wire)

    run(sync.sync_all())

    assert wire.asked == [
        (fast_port_addr(MASTER_ADDR), RequestCode.GET_ALL_TOPIC_CONFIG),
        (MASTER_ADDR, RequestCode.GET_ALL_CONSUMER_OFFSET),
        (MASTER_ADDR, RequestCode.GET_ALL_DELAY_OFFSET),
        (MASTER_ADDR, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG),
    ]
    assert fast_port_addr(MASTER_ADDR) == "10.0.0.9:10909"
    topics = slave.topic_config_manager
    assert dict(topics.topic_config_table) == dict(master.topic_config_manager.topic_config_table)
    assert "SlaveOnly" not in topics.topic_config_table  # the table is replaced, not merged
    assert topics.data_version == master.topic_config_manager.data_version
    assert _file(topics.path) == _file(master.topic_config_manager.path)
    groups = slave.subscription_group_manager
    assert groups.subscription_group_table["SyncGroup"].retry_max_times == 3
    assert groups.data_version == master.subscription_group_manager.data_version
    assert _file(groups.path) == _file(master.subscription_group_manager.path)
    offsets = slave.consumer_offset_manager
    assert offsets.query("SyncGroup", "SyncTopic", 2) == 17
    assert offsets.query("OnlyHere", "SyncTopic", 0) == 4  # putAll keeps the slave's own keys
    assert _file(offsets.path) == {
        "offsetTable": {"SyncTopic@OnlyHere": {0: 4}, "SyncTopic@SyncGroup": {2: 17}}
    }
    assert slave.schedule_service.path.read_bytes() == master.schedule_service.encode()


@pytest.fixture
def prepared(pair: tuple[BrokerContext, BrokerContext]) -> tuple[BrokerContext, BrokerContext]:
    """The pair with the master's topic, group and offset made and the slave's master set."""
    master, slave = pair
    _prepare_master(master)
    slave.master_addr = MASTER_ADDR
    return master, slave


def test_an_unchanged_version_is_not_copied_again(
    prepared: tuple[BrokerContext, BrokerContext],
) -> None:
    master, slave = prepared
    sync = SlaveSynchronizer(slave, MasterWire(master))
    run(sync.sync_all())
    topics_file = slave.topic_config_manager.path
    topics_file.unlink()

    run(sync.sync_all())
    assert not topics_file.exists()  # same DataVersion: nothing replaced or written

    master.topic_config_manager.update(TopicConfig(topic_name="Later"))
    run(sync.sync_all())
    assert "Later" in slave.topic_config_manager.topic_config_table
    assert topics_file.exists()


def test_a_failing_step_does_not_stop_the_others(
    prepared: tuple[BrokerContext, BrokerContext],
) -> None:
    master, slave = prepared
    wire = MasterWire(master)
    wire.refuse = {RequestCode.GET_ALL_TOPIC_CONFIG, RequestCode.GET_ALL_DELAY_OFFSET}
    run(SlaveSynchronizer(slave, wire).sync_all())
    assert "SyncTopic" not in slave.topic_config_manager.topic_config_table
    assert slave.consumer_offset_manager.query("SyncGroup", "SyncTopic", 2) == 17
    assert "SyncGroup" in slave.subscription_group_manager.subscription_group_table


@pytest.mark.parametrize("master_addr", [None, "own"])
def test_no_master_or_itself_is_not_asked(
    pair: tuple[BrokerContext, BrokerContext], master_addr: str | None
) -> None:
    master, slave = pair
    slave.master_addr = slave.broker_addr if master_addr == "own" else None
    wire = MasterWire(master)
    sync = SlaveSynchronizer(slave, wire)

    async def scenario() -> None:
        sync.master_changed()
        await sync.sync_all()
        await sync.close()

    run(scenario())
    assert wire.asked == []
    assert wire.closed


def test_a_new_master_starts_a_round_at_once(pair: tuple[BrokerContext, BrokerContext]) -> None:
    master, slave = pair
    _prepare_master(master)
    wire = MasterWire(master)
    sync = SlaveSynchronizer(slave, wire)
    slave.master_listeners.append(sync.master_changed)

    async def scenario() -> None:
        slave.set_master(MASTER_ADDR, "10.0.0.9:10912")
        await until(lambda: len(wire.asked) == 4, 5)
        await sync.close()

    run(scenario())
    assert "SyncTopic" in slave.topic_config_manager.topic_config_table


def test_offsets_committed_between_rounds_reach_the_slave_at_the_next_round_only(
    pair: tuple[BrokerContext, BrokerContext], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The window docs/cluster.md states: rounds 3 s after the start, then every 10 s, and a
    commit to the master is on the slave only after the next round, so a master that dies
    takes up to 10 s of offset commits with it."""
    master, slave = pair
    _prepare_master(master)
    slave.master_addr = MASTER_ADDR
    sync = SlaveSynchronizer(slave, MasterWire(master))
    waits: list[float] = []
    commits = iter([18, 19])
    real_sleep = asyncio.sleep

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == 4:
            raise asyncio.CancelledError
        if len(waits) > 1:  # between two rounds: a commit the slave does not have yet
            offset = next(commits)
            master.consumer_offset_manager.commit("c", "SyncGroup", "SyncTopic", 2, offset)
            seen.append(slave.consumer_offset_manager.query("SyncGroup", "SyncTopic", 2))
        await real_sleep(0)

    seen: list[int] = []
    monkeypatch.setattr("rmq.server.broker.slave.slavesync.asyncio.sleep", sleep)

    async def scenario() -> None:
        with contextlib.suppress(asyncio.CancelledError):
            await sync.run_periodically()
        await sync.close()

    run(scenario())
    assert waits == [3.0, 10.0, 10.0, 10.0]
    # after round 1 the slave has 17; 18 is committed, still 17; round 2 brings 18, and so on
    assert seen == [17, 18]
    assert slave.consumer_offset_manager.query("SyncGroup", "SyncTopic", 2) == 19
