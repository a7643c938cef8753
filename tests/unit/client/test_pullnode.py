"""Reads from slaves in rmq's client (rmq.client.consumer.pullnode): the broker a pull goes
to follows the last answer's suggestWhichBrokerId and falls back to a slave when the master
is gone from the route; offsets go to the master, else to the slave.  The pull consumer is
driven against a scripted name server and a scripted master and slave (real sockets)."""

from __future__ import annotations

import pytest

from rmq.client.consumer import PullConsumer
from rmq.client.consumer.pullnode import FoundBroker, PullNodes, find_in_subscribe
from rmq.client.errors import MQClientError
from rmq.remoting.bodies import BrokerData, MessageQueue, QueueData, TopicRouteData
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, create_response
from rmq.remoting.connection import Connection
from rmq.remoting.headers import (
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    UpdateConsumerOffsetRequestHeader,
)
from tests.unit.client.fakes import FakeNamesrv, FakeServer, run

TOPIC = "SlaveReadTopic"
NAME = "broker-a"


@pytest.mark.parametrize(
    ("addrs", "broker_id", "only_this", "found"),
    [
        ({0: "m", 1: "s"}, 0, True, FoundBroker("m", False)),
        ({0: "m", 1: "s"}, 1, False, FoundBroker("s", True)),
        ({0: "m", 2: "s2"}, 1, True, FoundBroker("s2", True)),  # a missing slave id: id + 1
        ({0: "m", 1: "s"}, 3, True, None),
        ({0: "m", 1: "s"}, 3, False, FoundBroker("m", False)),  # any: the first, lowest id
        ({2: "s2", 1: "s"}, 0, True, None),  # no master, the master only
        ({2: "s2", 1: "s"}, 0, False, FoundBroker("s", True)),
        ({}, 0, False, None),
    ],
)
def test_find_in_subscribe(
    addrs: dict[int, str], broker_id: int, only_this: bool, found: FoundBroker | None
) -> None:
    assert find_in_subscribe(addrs, broker_id, only_this) == found


def test_the_suggestion_is_per_queue_and_master_before_one() -> None:
    nodes = PullNodes()
    first, second = MessageQueue(TOPIC, NAME, 0), MessageQueue(TOPIC, NAME, 1)
    assert nodes.broker_id(first) == 0
    nodes.suggest(first, 1)
    assert (nodes.broker_id(first), nodes.broker_id(second)) == (1, 0)


class ScriptedBroker(FakeServer):
    """Answers PULL_MESSAGE with PULL_NOT_FOUND and the scripted suggestion; keeps the pulls
    and offset commits it got."""

    def __init__(self, suggest: int) -> None:
        super().__init__()
        self.suggest = suggest
        self.pulls: list[PullMessageRequestHeader] = []
        self.commits: list[UpdateConsumerOffsetRequestHeader] = []
        self.server.register(RequestCode.PULL_MESSAGE, self._pull)
        self.server.register(RequestCode.UPDATE_CONSUMER_OFFSET, self._commit)
        self.server.register(RequestCode.HEART_BEAT, self._ok)
        self.server.register(RequestCode.UNREGISTER_CLIENT, self._ok)

    async def _pull(self, _: Connection, request: RemotingCommand) -> RemotingCommand:
        self.pulls.append(request.read_header(PullMessageRequestHeader))
        header = PullMessageResponseHeader(
            suggest_which_broker_id=self.suggest, next_begin_offset=0, min_offset=0, max_offset=0
        )
        return create_response(ResponseCode.PULL_NOT_FOUND, "NO_MESSAGE_IN_QUEUE", header)

    async def _commit(self, _: Connection, request: RemotingCommand) -> RemotingCommand:
        self.commits.append(request.read_header(UpdateConsumerOffsetRequestHeader))
        return create_response(ResponseCode.SUCCESS)

    async def _ok(self, _: Connection, request: RemotingCommand) -> RemotingCommand:
        return create_response(ResponseCode.SUCCESS)


def _route(addrs: dict[int, str]) -> TopicRouteData:
    return TopicRouteData(
        queue_datas=[QueueData(broker_name=NAME, read_queue_nums=2, write_queue_nums=2, perm=6)],
        broker_datas=[BrokerData(cluster="DefaultCluster", broker_name=NAME, broker_addrs=addrs)],
    )


def test_pulls_follow_the_suggestion_and_the_slave_serves_without_a_master() -> None:
    async def scenario() -> None:
        namesrv, master, slave = FakeNamesrv(), ScriptedBroker(suggest=1), ScriptedBroker(0)
        for server in (namesrv, master, slave):
            await server.start()
        namesrv.routes[TOPIC] = _route({0: master.addr, 1: slave.addr})
        consumer = PullConsumer("SlaveReadGroup", namesrv.addr, instance_name="pullnode")
        await consumer.start()
        try:
            mq = (await consumer.fetch_subscribe_message_queues(TOPIC))[0]
            other = MessageQueue(TOPIC, NAME, 1)
            await consumer.pull(mq, 0)  # the master suggests its slave (id 1)
            assert (len(master.pulls), len(slave.pulls)) == (1, 0)
            await consumer.pull(mq, 0)  # to the slave, which suggests the master again
            assert (len(master.pulls), len(slave.pulls)) == (1, 1)
            await consumer.pull(other, 0)  # another queue has no suggestion yet
            await consumer.pull(mq, 0)
            assert (len(master.pulls), len(slave.pulls)) == (3, 1)
            await consumer.update_consume_offset(mq, 5)
            assert ([c.commit_offset for c in master.commits], slave.commits) == ([5], [])

            namesrv.routes[TOPIC] = _route({1: slave.addr})  # the master died
            await consumer.instance.refresh_routes()
            await consumer.pull(mq, 0)
            await consumer.update_consume_offset(mq, 6)
            assert (len(master.pulls), len(slave.pulls)) == (3, 2)
            assert [c.commit_offset for c in slave.commits] == [6]

            namesrv.routes[TOPIC] = _route({0: master.addr, 1: slave.addr})  # it is back
            await consumer.instance.refresh_routes()
            await consumer.update_consume_offset(mq, 7)
            assert [c.commit_offset for c in master.commits] == [5, 7]

            namesrv.routes[TOPIC] = _route({})
            await consumer.instance.refresh_routes()
            with pytest.raises(MQClientError, match=r"The broker\[broker-a\] not exist"):
                await consumer.pull(mq, 0)
        finally:
            await consumer.shutdown()
            for server in (namesrv, master, slave):
                await server.close()

    run(scenario(), timeout=30)
