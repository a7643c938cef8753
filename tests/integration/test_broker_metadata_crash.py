"""Topics and groups acknowledged by a broker survive kill -9 of that broker.

Sixteen clients send UPDATE_AND_CREATE_TOPIC and UPDATE_AND_CREATE_SUBSCRIPTIONGROUP
requests over the raw protocol, each sending its next request as soon as the previous one is
answered (600 topics and 400 groups in all).  The broker writes its metadata by group commit
(many changes, few writes), and each answer waits for the write covering its change: so once
500 answers are in, the broker is killed with SIGKILL at once, from the callback that counted
the 500th, with requests still in flight.  After a
restart on the same store, every acknowledged topic and group is there with its settings.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from rmq.remoting.bodies import (
    SubscriptionGroupConfig,
    SubscriptionGroupWrapper,
    TopicConfigSerializeWrapper,
)
from rmq.remoting.client import RemotingClient
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, create_request
from rmq.remoting.headers import CreateTopicRequestHeader
from tests.procs import RemotingSession, RmqProcess, RmqProcesses

TOPICS = 600
GROUPS = 400
KILL_AFTER = 500
CLIENTS = 16


def topic_request(index: int) -> RemotingCommand:
    header = CreateTopicRequestHeader(
        topic=f"crash-topic-{index}",
        default_topic="TBW102",
        read_queue_nums=1 + index % 7,
        write_queue_nums=1 + index % 7,
        perm=6,
        topic_filter_type="SINGLE_TAG",
    )
    return create_request(RequestCode.UPDATE_AND_CREATE_TOPIC, header)


def group_request(index: int) -> RemotingCommand:
    config = SubscriptionGroupConfig(group_name=f"crash-group-{index}", retry_max_times=index % 9)
    return create_request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=config.encode())


async def create_until_killed(broker: RmqProcess) -> tuple[set[int], set[int]]:
    """Send every create at once; SIGKILL the broker as the KILL_AFTER-th answer arrives.
    Returns the indexes of the acknowledged topics and groups."""
    topics: set[int] = set()
    groups: set[int] = set()
    acknowledged = 0

    work = [(topic_request(index), topics, index) for index in range(TOPICS)]
    work += [(group_request(index), groups, index) for index in range(GROUPS)]
    work.reverse()

    async def client_loop() -> None:
        nonlocal acknowledged
        async with RemotingClient() as client:
            while work:
                request, acked, index = work.pop()
                try:
                    response = await client.invoke(broker.addr, request, 30.0)
                except Exception:
                    return  # the broker died first
                assert response.code == ResponseCode.SUCCESS, response
                acked.add(index)
                acknowledged += 1
                if acknowledged == KILL_AFTER:
                    broker.popen.kill()

    await asyncio.gather(*(client_loop() for _ in range(CLIENTS)))
    return topics, groups


def test_acknowledged_topics_and_groups_survive_kill_9(
    rmq_processes: RmqProcesses, tmp_path: Path
) -> None:
    broker = rmq_processes.start_broker("crash-meta", namesrv=None)
    topics, groups = asyncio.run(create_until_killed(broker))
    broker.popen.wait()
    assert len(topics) + len(groups) >= KILL_AFTER
    assert len(topics) + len(groups) < TOPICS + GROUPS, "the kill came after every answer"

    restarted = rmq_processes.restart(broker)
    with RemotingSession(timeout=30.0) as session:
        response = session.invoke(restarted.addr, RequestCode.GET_ALL_TOPIC_CONFIG)
        stored_topics = TopicConfigSerializeWrapper.decode(response.body or b"").topic_config_table
        response = session.invoke(restarted.addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        stored_groups = SubscriptionGroupWrapper.decode(
            response.body or b""
        ).subscription_group_table
    for index in topics:
        config = stored_topics.get(f"crash-topic-{index}")
        assert config is not None, f"acknowledged topic crash-topic-{index} lost"
        assert config.write_queue_nums == 1 + index % 7
    for index in groups:
        group = stored_groups.get(f"crash-group-{index}")
        assert group is not None, f"acknowledged group crash-group-{index} lost"
        assert group.retry_max_times == index % 9
    restarted.stop_cleanly()
