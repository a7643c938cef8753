"""A slave of real `rmq broker` processes as consumers use it: it copies its master's topics,
groups and offsets (slave sync), and when the master is killed (SIGKILL) consumers read from
it: rmq's push consumer continues where the group was, committing its offsets to the slave,
`rmq consume` reads the topic from it, and the offsets committed meanwhile reach the master
when it returns.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from rmq.client.consumer import ConsumeFromWhere, ConsumeStatus, MessageExt, PushConsumer
from rmq.common import fastjson
from rmq.remoting.bodies import SubscriptionGroupConfig, TopicRouteData
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.headers import (
    CreateTopicRequestHeader,
    GetRouteInfoRequestHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    UpdateConsumerOffsetRequestHeader,
)
from tests.cli_forkserver import run as cli_run
from tests.integration.test_replication import (
    HA_PROPS,
    runtime_info,
    send,
    start_pair,
    start_slave,
    wait_replicated,
)
from tests.procs import RemotingSession, RmqProcess, RmqProcesses, rmq_command

TOPIC = "ReplicatedTopic"  # the topic test_replication.send writes to
GROUP = "SlaveReadsGroup"
QUEUES = 4


def wait_for(what: str, condition: Callable[[], bool], timeout: float = 40.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def body_of(session: RemotingSession, broker: RmqProcess, code: int) -> Any:
    response = session.invoke(broker.addr, code)
    assert response.code == ResponseCode.SUCCESS, response.remark
    return fastjson.loads(bytes(response.body or b""))


def group_offset(session: RemotingSession, broker: RmqProcess, queue_id: int) -> int:
    header = QueryConsumerOffsetRequestHeader(consumer_group=GROUP, topic=TOPIC, queue_id=queue_id)
    response = session.invoke(broker.addr, RequestCode.QUERY_CONSUMER_OFFSET, header)
    if response.code != ResponseCode.SUCCESS:
        return -1
    return response.read_header(QueryConsumerOffsetResponseHeader).offset


def offsets_sum(session: RemotingSession, broker: RmqProcess) -> int:
    return sum(max(group_offset(session, broker, q), 0) for q in range(QUEUES))


@pytest.fixture
def session() -> Iterator[RemotingSession]:
    with RemotingSession(timeout=10) as remoting:
        yield remoting


@pytest.fixture
def cluster(rmq_processes: RmqProcesses) -> tuple[RmqProcess, RmqProcess, RmqProcess]:
    namesrv = rmq_processes.start_namesrv("slave-reads-namesrv")
    master, slave = start_pair(rmq_processes, namesrv, "ASYNC_MASTER", "slave-reads")
    return namesrv, master, slave


def test_the_slave_copies_its_masters_topics_groups_and_offsets(
    cluster: tuple[RmqProcess, RmqProcess, RmqProcess], session: RemotingSession
) -> None:
    _, master, slave = cluster
    create = CreateTopicRequestHeader(
        topic="SyncedTopic",
        default_topic="TBW102",
        read_queue_nums=3,
        write_queue_nums=3,
        perm=6,
        topic_filter_type="SINGLE_TAG",
    )
    assert session.invoke(master.addr, RequestCode.UPDATE_AND_CREATE_TOPIC, create).code == 0
    group = SubscriptionGroupConfig(group_name=GROUP, retry_max_times=5)
    answer = session.invoke(
        master.addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=group.encode()
    )
    assert answer.code == ResponseCode.SUCCESS
    commit = UpdateConsumerOffsetRequestHeader(
        consumer_group=GROUP, topic=TOPIC, queue_id=2, commit_offset=3
    )
    assert session.invoke(master.addr, RequestCode.UPDATE_CONSUMER_OFFSET, commit).code == 0

    def same(code: int) -> bool:
        return bool(body_of(session, slave, code) == body_of(session, master, code))

    wait_for("the slave's topics", lambda: same(RequestCode.GET_ALL_TOPIC_CONFIG))
    wait_for("the slave's groups", lambda: same(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG))
    wait_for("the slave's offsets", lambda: group_offset(session, slave, 2) == 3)
    config = slave.home / "store" / "config"
    topics = fastjson.loads((config / "topics.json").read_text())
    assert topics == body_of(session, master, RequestCode.GET_ALL_TOPIC_CONFIG)
    assert topics["topicConfigTable"]["SyncedTopic"]["readQueueNums"] == 3
    groups = fastjson.loads((config / "subscriptionGroup.json").read_text())
    assert groups["subscriptionGroupTable"][GROUP]["retryMaxTimes"] == 5
    offsets = fastjson.loads((config / "consumerOffset.json").read_text())
    assert offsets["offsetTable"][f"{TOPIC}@{GROUP}"] == {2: 3}


class Consumer:
    """rmq's push consumer of GROUP on an event loop of its own thread, keeping the bodies
    its listener got; the route is polled every second."""

    def __init__(self, namesrv_addr: str, pull_batch_size: int = 32) -> None:
        self.bodies: list[bytes] = []
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.push = PushConsumer(
            GROUP,
            namesrv_addr,
            instance_name="SlaveReads",
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            persist_consumer_offset_interval=0.5,
            rebalance_interval=2.0,
            pull_batch_size=pull_batch_size,
        )
        self.push.instance.poll_name_server_interval = 1.0
        self.push.subscribe(TOPIC)
        self.push.register_listener(self._listener)
        self._call(self.push.start())

    async def _listener(self, messages: list[MessageExt]) -> ConsumeStatus:
        self.bodies += [message.body for message in messages]
        return ConsumeStatus.CONSUME_SUCCESS

    def _call(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(60)

    def close(self) -> None:
        self._call(self.push.shutdown())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


def route_ids(session: RemotingSession, namesrv: RmqProcess) -> set[int]:
    header = GetRouteInfoRequestHeader(topic=TOPIC)
    response = session.invoke(namesrv.addr, RequestCode.GET_ROUTEINFO_BY_TOPIC, header)
    assert response.code == ResponseCode.SUCCESS, response.remark
    route = TopicRouteData.decode(bytes(response.body or b""))
    return {broker_id for data in route.broker_datas for broker_id in data.broker_addrs}


def test_consumers_read_from_the_slave_while_the_master_is_dead(
    cluster: tuple[RmqProcess, RmqProcess, RmqProcess],
    session: RemotingSession,
    rmq_processes: RmqProcesses,
) -> None:
    namesrv, master, slave = cluster
    before = [f"before {i}".encode() for i in range(8)]
    for body in before:
        assert send(session, master, body).code == ResponseCode.SUCCESS
    consumer = Consumer(namesrv.addr)
    try:
        wait_for("the first messages", lambda: sorted(consumer.bodies) == sorted(before))
        wait_for("offsets on the master", lambda: offsets_sum(session, master) == len(before))
    finally:
        consumer.close()
    after = [f"after {i}".encode() for i in range(8)]
    for body in after:
        assert send(session, master, body).code == ResponseCode.SUCCESS
    wait_for("the slave's offsets", lambda: offsets_sum(session, slave) == len(before))
    wait_for(
        "the slave's topic",
        lambda: TOPIC in str(body_of(session, slave, RequestCode.GET_ALL_TOPIC_CONFIG)),
    )

    master.kill()
    wait_for("the master gone from the route", lambda: route_ids(session, namesrv) == {1})
    read = cli_run(
        rmq_command(["consume", TOPIC, "-n", namesrv.addr, "-e", "-f", "%v\\n"]),
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert read.returncode == 0, read.stderr.decode()
    assert sorted(read.stdout.splitlines()) == sorted(before + after)

    consumer = Consumer(namesrv.addr)
    try:
        wait_for("the messages from the slave", lambda: len(consumer.bodies) >= len(after))
        assert sorted(consumer.bodies) == sorted(after)  # from the group's offsets: no repeat
        total = len(before) + len(after)
        wait_for("offsets committed to the slave", lambda: offsets_sum(session, slave) == total)

        master = rmq_processes.restart_broker(master, namesrv)
        wait_for("offsets kept on the master", lambda: offsets_sum(session, master) == total)
        assert send(session, master, b"back").code == ResponseCode.SUCCESS
        wait_for("the message after the return", lambda: b"back" in consumer.bodies)
        assert sorted(consumer.bodies) == sorted([*after, b"back"])
    finally:
        consumer.close()


def test_a_lagging_consumer_is_sent_to_the_slave_by_its_master(
    rmq_processes: RmqProcesses, session: RemotingSession
) -> None:
    """slaveReadEnable with accessMessageInMemoryMaxRatio=0: every consumer behind the
    commitlog's end is lagging, so the master suggests the slave (brokerId 1) and the push
    consumer's next pull of the queue goes there; the slave (slaveReadEnable off) points it
    back.  Both brokers hand out messages, the slave's count shows it."""
    namesrv = rmq_processes.start_namesrv("lagging-namesrv")
    name = "lagging"
    master = rmq_processes.start_broker(
        f"{name}-m",
        namesrv=namesrv,
        props={
            **HA_PROPS,
            "brokerName": name,
            "slaveReadEnable": True,
            "accessMessageInMemoryMaxRatio": 0,
        },
    )
    slave = start_slave(rmq_processes, namesrv, name)
    bodies = [f"lagging {i}".encode() for i in range(40)]
    for body in bodies:
        assert send(session, master, body).code == ResponseCode.SUCCESS
    wait_for(
        "the slave's topic",
        lambda: TOPIC in str(body_of(session, slave, RequestCode.GET_ALL_TOPIC_CONFIG)),
    )
    wait_replicated(session, master, slave)
    consumer = Consumer(namesrv.addr, pull_batch_size=1)
    try:
        wait_for("every message", lambda: len(set(consumer.bodies)) == len(bodies))
        assert set(consumer.bodies) == set(bodies)
    finally:
        consumer.close()
    from_slave = int(runtime_info(session, slave)["msgGetTotalTodayNow"])
    from_master = int(runtime_info(session, master)["msgGetTotalTodayNow"])
    assert from_slave > 0
    assert from_master > 0
    assert from_slave + from_master >= len(bodies)
