"""BrokerRegistration: REGISTER_BROKER / UNREGISTER_BROKER with a real `rmq namesrv` process.

The request is checked against the spec's layout (header fields, bodyCrc32, the JSON and the
compressed body built here with json / struct / zlib), and its effect through the name
server's own answers: the route of a topic, the cluster info, a slave's master address, the
order-topic table.  Each test uses broker names of its own on the module's name server.
"""

from __future__ import annotations

import asyncio
import json
import logging
import struct
import uuid
import zlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from rmq.common.config import BrokerConfig, MessageStoreConfig, NettyClientConfig
from rmq.remoting.bodies import ClusterInfo, TopicConfig, TopicRouteData
from rmq.remoting.client import RemotingClient
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import create_request
from rmq.remoting.headers import (
    DeleteKVConfigRequestHeader,
    GetRouteInfoRequestHeader,
    PutKVConfigRequestHeader,
)
from rmq.server.broker.out.registration import BrokerRegistration, register_period_seconds
from rmq.server.broker.topic.topicconfig import TopicConfigManager
from tests.procs import RmqProcess, free_port

T = TypeVar("T")

HA_PORT = 20912


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def make_registration(
    tmp_path: Path, namesrv_addr: str, name: str, **config: Any
) -> BrokerRegistration:
    broker_config = BrokerConfig(
        broker_name=name,
        broker_cluster_name=config.pop("broker_cluster_name", "TestCluster"),
        broker_ip1="127.0.0.1",
        broker_ip2="127.0.0.2",
        namesrv_addr=namesrv_addr,
        **config,
    )
    store_config = MessageStoreConfig(ha_listen_port=HA_PORT)
    topics = TopicConfigManager(broker_config, tmp_path / name / "topics.json")
    broker_addr = f"127.0.0.1:{free_port()}"
    return BrokerRegistration(broker_config, store_config, NettyClientConfig(), topics, broker_addr)


def run(work: Callable[[RemotingClient], Awaitable[T]]) -> T:
    """Run `work` with a client for asking the name server, on a fresh event loop."""

    async def main() -> T:
        async with RemotingClient() as client:
            return await work(client)

    return asyncio.run(main())


async def cluster_addrs(client: RemotingClient, namesrv_addr: str) -> dict[str, dict[int, str]]:
    """Broker name -> broker id -> address, as GET_BROKER_CLUSTER_INFO lists them."""
    request = create_request(RequestCode.GET_BROKER_CLUSTER_INFO)
    response = await client.invoke(namesrv_addr, request, 5.0)
    info = ClusterInfo.decode(response.body or b"{}")
    return {name: data.broker_addrs for name, data in info.broker_addr_table.items()}


async def route(client: RemotingClient, namesrv_addr: str, topic: str) -> TopicRouteData | None:
    request = create_request(
        RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic=topic)
    )
    response = await client.invoke(namesrv_addr, request, 5.0)
    if response.code == ResponseCode.TOPIC_NOT_EXIST:
        return None
    return TopicRouteData.decode(response.body or b"{}")


def add_topic(registration: BrokerRegistration, topic: str, queues: int = 4) -> None:
    registration.topic_config_manager.update(
        TopicConfig(topic_name=topic, read_queue_nums=queues, write_queue_nums=queues)
    )


# -- the request -------------------------------------------------------------------------


def test_request_header_and_json_body(tmp_path: Path) -> None:
    registration = make_registration(tmp_path, "127.0.0.1:9876", "broker-json")
    add_topic(registration, "Orders")

    header, body = registration.registration()

    assert header.broker_name == "broker-json"
    assert header.broker_addr == registration.broker_addr
    assert header.cluster_name == "TestCluster"
    assert header.ha_server_addr == f"127.0.0.2:{HA_PORT}"
    assert header.broker_id == 0
    assert header.compressed is False
    assert header.body_crc32 == zlib.crc32(body) & 0x7FFFFFFF
    document = json.loads(body)
    version = registration.topic_config_manager.data_version
    assert document["filterServerList"] == []
    wrapper = document["topicConfigSerializeWrapper"]
    assert wrapper["dataVersion"] == {"counter": version.counter, "timestamp": version.timestamp}
    assert wrapper["topicConfigTable"]["Orders"] == {
        "order": False,
        "perm": 6,
        "readQueueNums": 4,
        "topicFilterType": "SINGLE_TAG",
        "topicName": "Orders",
        "topicSysFlag": 0,
        "writeQueueNums": 4,
    }
    assert set(wrapper["topicConfigTable"]) == set(
        registration.topic_config_manager.topic_config_table
    )


def test_compressed_body_follows_the_spec_layout(tmp_path: Path) -> None:
    registration = make_registration(
        tmp_path, "127.0.0.1:9876", "broker-zip", compressed_register=True
    )
    add_topic(registration, "Zipped", queues=2)

    header, body = registration.registration()

    assert header.compressed is True
    assert header.body_crc32 == zlib.crc32(body) & 0x7FFFFFFF
    content = zlib.decompress(body)
    pos = 0

    def part() -> bytes:
        nonlocal pos
        (length,) = struct.unpack_from(">i", content, pos)
        pos += 4 + length
        return content[pos - length : pos]

    version = json.loads(part())
    assert version["counter"] == registration.topic_config_manager.data_version.counter
    (count,) = struct.unpack_from(">i", content, pos)
    pos += 4
    topics = [part().decode() for _ in range(count)]
    assert "Zipped 2 2 6 SINGLE_TAG" in topics
    assert count == len(registration.topic_config_manager.topic_config_table)
    assert json.loads(part()) == []
    assert pos == len(content)


def test_a_broker_without_read_or_write_perm_lists_every_topic_with_it(tmp_path: Path) -> None:
    registration = make_registration(tmp_path, "127.0.0.1:9876", "broker-ro", broker_permission=4)
    add_topic(registration, "ReadOnly")
    _, body = registration.registration()
    table = json.loads(body)["topicConfigSerializeWrapper"]["topicConfigTable"]
    assert {config["perm"] for config in table.values()} == {4}


def test_register_period_is_clamped() -> None:
    assert register_period_seconds(30_000) == 30.0
    assert register_period_seconds(1_000) == 10.0
    assert register_period_seconds(600_000) == 60.0


# -- against a name server ---------------------------------------------------------------


def test_registration_makes_routes_and_cluster_info(tmp_path: Path, namesrv: RmqProcess) -> None:
    name = unique("broker")
    topic = unique("topic")
    registration = make_registration(tmp_path, namesrv.addr, name)
    add_topic(registration, topic, queues=3)

    async def work(client: RemotingClient) -> None:
        results = await registration.register_all()
        assert len(results) == 1
        assert (results[0].master_addr, results[0].ha_server_addr) == (None, None)
        brokers = await cluster_addrs(client, namesrv.addr)
        assert brokers[name] == {0: registration.broker_addr}
        found = await route(client, namesrv.addr, topic)
        assert found is not None
        assert [(q.broker_name, q.read_queue_nums, q.perm) for q in found.queue_datas] == [
            (name, 3, 6)
        ]
        await registration.unregister()
        assert name not in await cluster_addrs(client, namesrv.addr)
        assert await route(client, namesrv.addr, topic) is None

    run(work)


def test_a_slave_learns_its_master(tmp_path: Path, namesrv: RmqProcess) -> None:
    name = unique("broker")
    master = make_registration(tmp_path / "m", namesrv.addr, name)
    slave = make_registration(tmp_path / "s", namesrv.addr, name, broker_id=1)
    learnt: list[tuple[str | None, str | None]] = []
    slave.on_master = lambda addr, ha_addr: learnt.append((addr, ha_addr))

    async def work(client: RemotingClient) -> None:
        await master.register_all()
        results = await slave.register_all()
        assert learnt == [(master.broker_addr, f"127.0.0.2:{HA_PORT}")]
        assert (results[0].master_addr, results[0].ha_server_addr) == (
            master.broker_addr,
            f"127.0.0.2:{HA_PORT}",
        )
        assert slave.master_addr == master.broker_addr
        assert slave.master_ha_server_addr == f"127.0.0.2:{HA_PORT}"
        assert (await cluster_addrs(client, namesrv.addr))[name] == {
            0: master.broker_addr,
            1: slave.broker_addr,
        }
        await slave.unregister()
        await master.unregister()

    run(work)


def test_order_topics_from_the_name_server(tmp_path: Path, namesrv: RmqProcess) -> None:
    ordered, plain = unique("ordered"), unique("plain")
    registration = make_registration(tmp_path, namesrv.addr, unique("broker"))
    add_topic(registration, ordered)
    add_topic(registration, plain)

    async def work(client: RemotingClient) -> None:
        put = PutKVConfigRequestHeader(namespace="ORDER_TOPIC_CONFIG", key=ordered, value="b:4")
        request = create_request(RequestCode.PUT_KV_CONFIG, put)
        assert (await client.invoke(namesrv.addr, request, 5.0)).code == ResponseCode.SUCCESS
        try:
            await registration.register_all()
        finally:
            delete = DeleteKVConfigRequestHeader(namespace="ORDER_TOPIC_CONFIG", key=ordered)
            await client.invoke(
                namesrv.addr, create_request(RequestCode.DELETE_KV_CONFIG, delete), 5.0
            )
            await registration.unregister()

    run(work)
    manager = registration.topic_config_manager
    assert manager.is_order_topic(ordered)
    assert not manager.is_order_topic(plain)


def test_without_force_only_a_changed_data_version_registers(
    tmp_path: Path, namesrv: RmqProcess
) -> None:
    registration = make_registration(tmp_path, namesrv.addr, unique("broker"))

    async def work(client: RemotingClient) -> list[int]:
        rounds = [len(await registration.register_all(force=False))]
        rounds.append(len(await registration.register_all(force=False)))
        add_topic(registration, unique("topic"))
        rounds.append(len(await registration.register_all(force=False)))
        rounds.append(len(await registration.register_all(force=True)))
        await registration.unregister()
        return rounds

    assert run(work) == [1, 0, 1, 1]


def test_requests_made_during_a_round_share_one_more_round(
    tmp_path: Path, namesrv: RmqProcess
) -> None:
    registration = make_registration(tmp_path, namesrv.addr, unique("broker"))
    real_register_all = registration.register_all
    forced: list[bool] = []

    async def counting_register_all(
        *, force: bool = True, topics: list[TopicConfig] | None = None
    ) -> Any:
        forced.append(force)
        return await real_register_all(force=force, topics=topics)

    registration.register_all = counting_register_all  # type: ignore[method-assign]

    async def work(client: RemotingClient) -> None:
        registration.request(force=False)
        await asyncio.sleep(0)
        for _ in range(20):
            registration.request(force=False)
        registration.request(force=True)
        await registration.wait_idle()
        await registration.unregister()

    run(work)
    assert forced == [False, True]


def test_an_unreachable_name_server_is_logged_not_fatal(
    tmp_path: Path, namesrv: RmqProcess, caplog: pytest.LogCaptureFixture
) -> None:
    dead = f"127.0.0.1:{free_port()}"
    name = unique("broker")
    registration = make_registration(tmp_path, f"{dead};{namesrv.addr}", name)

    async def work(client: RemotingClient) -> None:
        with caplog.at_level(logging.WARNING, logger="rmq.broker"):
            results = await registration.register_all()
        assert len(results) == 1
        assert name in await cluster_addrs(client, namesrv.addr)
        await registration.unregister()

    run(work)
    assert f"register broker to name server {dead} failed" in caplog.text


def test_an_increment_registers_the_changed_topic_alone(
    tmp_path: Path, namesrv: RmqProcess
) -> None:
    """UPDATE_AND_CREATE_TOPIC's registration (registerIncrementBrokerData): one topic and
    the table's data version; the name server keeps the topics registered before."""
    name = unique("broker")
    old, new = unique("old"), unique("new")
    registration = make_registration(tmp_path, namesrv.addr, name)
    manager = registration.topic_config_manager
    add_topic(registration, old)
    sent: list[list[str] | None] = []
    real_register_all = registration.register_all

    async def recording_register_all(
        *, force: bool = True, topics: list[TopicConfig] | None = None
    ) -> Any:
        sent.append(None if topics is None else [topic.topic_name for topic in topics])
        return await real_register_all(force=force, topics=topics)

    registration.register_all = recording_register_all  # type: ignore[method-assign]

    async def work(client: RemotingClient) -> None:
        await registration.register_all()
        manager.on_increment = registration.request_increment
        add_topic(registration, new, queues=2)
        await registration.wait_idle()
        _header, body = registration.registration([manager.topic_config_table[new]])
        wrapper = json.loads(body)["topicConfigSerializeWrapper"]
        assert list(wrapper["topicConfigTable"]) == [new]
        assert wrapper["dataVersion"]["counter"] == manager.data_version.counter
        for topic, queues in ((old, 4), (new, 2)):
            found = await route(client, namesrv.addr, topic)
            assert found is not None
            assert [(q.broker_name, q.read_queue_nums) for q in found.queue_datas] == [
                (name, queues)
            ]
        # The name server holds the new version: a periodic round has nothing to send.
        assert await registration.register_all(force=False) == []
        await registration.unregister()

    run(work)
    assert sent == [None, [new], None]
