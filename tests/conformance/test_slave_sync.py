"""Slave sync across the two implementations: an rmq slave copies an Apache master's metadata,
and an Apache slave copies an rmq master's (GET_ALL_TOPIC_CONFIG over the master's fast port,
GET_ALL_CONSUMER_OFFSET, GET_ALL_DELAY_OFFSET, GET_ALL_SUBSCRIPTIONGROUP_CONFIG, every 10 s).

Each case runs a cluster of its own (name server and master of one kind, the slave of the
other kind registered with that name server as brokerId 1 of the same brokerName), gives the
master a topic, a subscription group and committed offsets through raw frames, and waits
until the slave's topics.json, subscriptionGroup.json and consumerOffset.json hold what the
master's files hold (parsed: the writers' key orders differ), data versions included.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rmq.common import fastjson
from rmq.remoting.bodies import SubscriptionGroupConfig
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.headers import CreateTopicRequestHeader, UpdateConsumerOffsetRequestHeader
from tests.conformance.clusters import BROKER_PROPS, Cluster, start_apache, start_rmq, stop
from tests.conformance.java import start_apache_broker
from tests.procs import RemotingSession, RmqProcess

TOPIC = "SlaveSyncTopic"
GROUP = "SlaveSyncGroup"
SLAVE_PROPS = {**BROKER_PROPS, "brokerRole": "SLAVE", "brokerId": 1, "brokerIP2": "127.0.0.1"}
FILES = ("topics.json", "subscriptionGroup.json", "consumerOffset.json")


def _config_file(broker: RmqProcess, name: str) -> Any:
    path = broker.home / "store" / "config" / name
    return fastjson.loads(path.read_text()) if path.exists() else None


def _start_slave(cluster: Cluster) -> RmqProcess:
    if cluster.kind == "apache":
        return cluster.processes.start_broker(
            "rmq-slave", namesrv=cluster.namesrv, props=SLAVE_PROPS
        )
    return start_apache_broker(
        cluster.processes, "apache-slave", namesrv_addr=cluster.namesrv_addr, props=SLAVE_PROPS
    )


@pytest.fixture(params=["apache", "rmq"], ids=["rmq-slave-of-apache", "apache-slave-of-rmq"])
def pair(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Cluster, RmqProcess]]:
    kind = request.param
    root: Path = tmp_path_factory.mktemp(f"slave-sync-{kind}")
    cluster = (start_apache if kind == "apache" else start_rmq)(root)
    try:
        yield cluster, _start_slave(cluster)
    finally:
        stop(cluster)
        cluster.processes.kill_all()


def test_the_slave_holds_the_masters_metadata(pair: tuple[Cluster, RmqProcess]) -> None:
    cluster, slave = pair
    master = cluster.broker
    with RemotingSession(timeout=10) as session:
        create = CreateTopicRequestHeader(
            topic=TOPIC,
            default_topic="TBW102",
            read_queue_nums=3,
            write_queue_nums=3,
            perm=6,
            topic_filter_type="SINGLE_TAG",
        )
        answer = session.invoke(master.addr, RequestCode.UPDATE_AND_CREATE_TOPIC, create)
        assert answer.code == ResponseCode.SUCCESS, answer.remark
        group = SubscriptionGroupConfig(group_name=GROUP, retry_max_times=5)
        answer = session.invoke(
            master.addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=group.encode()
        )
        assert answer.code == ResponseCode.SUCCESS, answer.remark
        for queue_id, offset in ((0, 0), (2, 7)):
            commit = UpdateConsumerOffsetRequestHeader(
                consumer_group=GROUP, topic=TOPIC, queue_id=queue_id, commit_offset=offset
            )
            answer = session.invoke(master.addr, RequestCode.UPDATE_CONSUMER_OFFSET, commit)
            assert answer.code == ResponseCode.SUCCESS, answer.remark

    deadline = time.monotonic() + 60
    while True:
        masters = {name: _config_file(master, name) for name in FILES}
        slaves = {name: _config_file(slave, name) for name in FILES}
        if masters == slaves and masters["consumerOffset.json"] is not None:
            break
        assert time.monotonic() < deadline, f"master {masters}\nslave {slaves}"
        time.sleep(0.5)
    assert masters["topics.json"]["topicConfigTable"][TOPIC]["readQueueNums"] == 3
    assert masters["subscriptionGroup.json"]["subscriptionGroupTable"][GROUP]["retryMaxTimes"] == 5
    assert masters["consumerOffset.json"]["offsetTable"][f"{TOPIC}@{GROUP}"] == {0: 0, 2: 7}
