"""REGISTER_BROKER through the name server's handler: what an unchanged DataVersion skips,
how a large topic table is read in slices, and what a registration still refreshes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from rmq.common.config import NamesrvConfig, NamesrvConfigs, NettyServerConfig
from rmq.remoting.bodies import (
    DataVersion,
    OpenedRegisterBody,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigSerializeWrapper,
)
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, create_request
from rmq.remoting.headers import RegisterBrokerRequestHeader
from rmq.server.namesrv import processor as processor_module
from rmq.server.namesrv.kvconfig import KVConfigManager
from rmq.server.namesrv.processor import TOPIC_SLICE, NamesrvProcessor
from rmq.server.namesrv.routeinfo import RouteInfoManager

ADDR = "10.0.0.1:10911"


class FakeConnection:
    """A broker's connection as the handler sees it: compared by identity."""

    def __init__(self) -> None:
        self.closed = False
        self.remote_addr = "10.0.0.1:50000"


class Clock:
    def __init__(self) -> None:
        self.now = 1_000

    def __call__(self) -> int:
        return self.now


def topic_json(name: str, perm: int = 6) -> dict[str, Any]:
    return {"perm": perm, "readQueueNums": 4, "topicName": name, "writeQueueNums": 4}


def json_body(
    topics: dict[str, dict[str, Any]],
    counter: int,
    filter_servers: list[str] | None = None,
    layout: str = "fastjson",
) -> bytes:
    """A register body: JSON as fastjson writes it (compact, keys in order), as standard
    JSON with spaces, or the compressed form."""
    if layout == "compressed":
        table = {name: TopicConfig.from_json(config) for name, config in topics.items()}
        wrapper = TopicConfigSerializeWrapper(
            topic_config_table=table,
            data_version=DataVersion(timestamp=1_700_000_000_000, counter=counter),
        )
        body = RegisterBrokerBody(
            topic_config_serialize_wrapper=wrapper, filter_server_list=filter_servers or []
        )
        return body.encode(compressed=True)
    document = {
        "filterServerList": filter_servers or [],
        "topicConfigSerializeWrapper": {
            "dataVersion": {"counter": counter, "timestamp": 1_700_000_000_000},
            "topicConfigTable": topics,
        },
    }
    separators = (",", ":") if layout == "fastjson" else (", ", ": ")
    return json.dumps(document, separators=separators).encode()


def many_topics(count: int, perm: int = 6) -> dict[str, dict[str, Any]]:
    return {f"T{i}": topic_json(f"T{i}", perm) for i in range(count)}


def register_request(body: bytes, broker_id: int = 0) -> RemotingCommand:
    compressed = not body.startswith(b"{")
    header = RegisterBrokerRequestHeader(
        broker_name="broker-a",
        broker_addr=ADDR if broker_id == 0 else "10.0.0.2:10911",
        cluster_name="DefaultCluster",
        ha_server_addr="10.0.0.1:10912",
        broker_id=broker_id,
        compressed=compressed,
        body_crc32=0,
    )
    return create_request(RequestCode.REGISTER_BROKER, header, body=body)


class Namesrv:
    def __init__(self) -> None:
        self.clock = Clock()
        self.routes = RouteInfoManager(self.clock)
        configs = NamesrvConfigs(NamesrvConfig(), NettyServerConfig())
        self.processor = NamesrvProcessor(self.routes, KVConfigManager("/nonexistent"), configs)
        self.connection = FakeConnection()

    def register(self, body: bytes, broker_id: int = 0) -> RemotingCommand | None:
        handler = self.processor.register_broker(
            self.connection,  # type: ignore[arg-type]
            register_request(body, broker_id),
        )
        return asyncio.run(handler)

    def perm(self, topic: str) -> int:
        route = self.routes.pickup_topic_route_data(topic)
        assert route is not None
        return route.queue_datas[0].perm


@pytest.fixture
def namesrv() -> Namesrv:
    return Namesrv()


@pytest.fixture
def slices_read(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Counts the topic entries decoded from register bodies."""
    counted: list[int] = []
    original = OpenedRegisterBody.topic_slices

    def spy(self: OpenedRegisterBody, size: int) -> Iterator[Any]:
        for entries in original(self, size):
            counted.append(len(entries))
            yield entries

    monkeypatch.setattr(OpenedRegisterBody, "topic_slices", spy)
    yield counted


@pytest.mark.parametrize("layout", ["fastjson", "spaced", "compressed"])
def test_unchanged_data_version_decodes_and_applies_no_topic(
    namesrv: Namesrv, slices_read: list[int], monkeypatch: pytest.MonkeyPatch, layout: str
) -> None:
    opened: list[bool] = []
    original_open = RegisterBrokerBody.open_request

    def open_spy(body: Any, *, compressed: bool, version: int) -> OpenedRegisterBody:
        opened.append(True)
        return original_open(body, compressed=compressed, version=version)

    monkeypatch.setattr(RegisterBrokerBody, "open_request", open_spy)
    body = json_body(many_topics(1200), counter=1, layout=layout)
    assert (response := namesrv.register(body)) is not None
    assert response.code == ResponseCode.SUCCESS
    assert sum(slices_read) == 1200
    applied: list[str] = []
    original = RouteInfoManager._create_or_update_queue_data

    def spy(self: RouteInfoManager, broker_name: str, topic: Any) -> str:
        applied.append(topic.topic_name)
        return original(self, broker_name, topic)

    monkeypatch.setattr(RouteInfoManager, "_create_or_update_queue_data", spy)
    slices_read.clear()
    opened.clear()
    # Same version, different perms: the body is not read past its DataVersion, and one in
    # fastjson's layout is not even parsed.
    response = namesrv.register(json_body(many_topics(1200, perm=4), counter=1, layout=layout))
    assert response is not None and response.code == ResponseCode.SUCCESS
    assert slices_read == [] and applied == []
    assert opened == ([] if layout == "fastjson" else [True])
    assert namesrv.perm("T7") == 6

    response = namesrv.register(json_body(many_topics(1200, perm=4), counter=2, layout=layout))
    assert response is not None and response.code == ResponseCode.SUCCESS
    assert sum(slices_read) == 1200 and len(applied) == 1200
    assert namesrv.perm("T7") == 4


def test_slave_registration_never_reads_topics(namesrv: Namesrv, slices_read: list[int]) -> None:
    namesrv.register(json_body(many_topics(3), counter=1))
    slices_read.clear()
    response = namesrv.register(json_body(many_topics(50), counter=9), broker_id=1)
    assert response is not None and response.code == ResponseCode.SUCCESS
    assert slices_read == []
    assert sorted(namesrv.routes.topic_queue_table) == ["T0", "T1", "T2"]


def test_unchanged_registration_still_refreshes_heartbeat_and_filter_servers(
    namesrv: Namesrv,
) -> None:
    namesrv.register(json_body(many_topics(2), counter=1))
    namesrv.clock.now = 5_000
    namesrv.register(json_body(many_topics(2), counter=1, filter_servers=["10.0.0.9:1"]))
    assert namesrv.routes.broker_live_table[ADDR].last_update_timestamp == 5_000
    assert namesrv.routes.filter_server_table[ADDR] == ["10.0.0.9:1"]


@pytest.mark.parametrize("layout", ["fastjson", "spaced"])
def test_bad_topic_entry_is_refused_when_read_and_ignored_when_unchanged(
    namesrv: Namesrv, layout: str
) -> None:
    topics = many_topics(3)
    del topics["T1"]["topicName"]
    refused = namesrv.register(json_body(topics, counter=1, layout=layout))
    assert refused is not None and refused.code == ResponseCode.SYSTEM_ERROR
    assert "TopicConfig: <topicName> is missing" in (refused.remark or "")
    assert namesrv.routes.topic_queue_table == {}

    namesrv.register(json_body(many_topics(3), counter=1, layout=layout))
    accepted = namesrv.register(json_body(topics, counter=1, layout=layout))
    assert accepted is not None and accepted.code == ResponseCode.SUCCESS
    # JSON broken in its head, before the DataVersion, is refused whatever the version.
    broken = namesrv.register(json_body(many_topics(3), counter=1, layout=layout)[1:])
    assert broken is not None and broken.code == ResponseCode.SYSTEM_ERROR
    # Broken after it: refused when not in fastjson's layout (the whole JSON is parsed), and
    # in that layout only when its end is broken too (only the head and the end are read).
    cut = json_body(many_topics(3), counter=1, layout=layout)[:-1]
    broken = namesrv.register(cut)
    assert broken is not None and broken.code == ResponseCode.SYSTEM_ERROR
    inner = json_body(many_topics(3), counter=1, layout=layout).replace(b'"perm"', b'"perm', 1)
    response = namesrv.register(inner)
    expected = ResponseCode.SUCCESS if layout == "fastjson" else ResponseCode.SYSTEM_ERROR
    assert response is not None and response.code == expected


def test_large_table_is_read_in_slices_that_leave_the_loop_free(namesrv: Namesrv) -> None:
    count = TOPIC_SLICE * 4 + 1
    body = json_body(many_topics(count), counter=1)

    async def run() -> tuple[int, RemotingCommand | None]:
        turns = 0
        done = False

        async def ticker() -> None:
            nonlocal turns
            while not done:
                turns += 1
                await asyncio.sleep(0)

        task = asyncio.get_running_loop().create_task(ticker())
        await asyncio.sleep(0)
        turns = 0
        response = await namesrv.processor.register_broker(
            namesrv.connection,  # type: ignore[arg-type]
            register_request(body),
        )
        done = True
        await task
        return turns, response

    turns, response = asyncio.run(run())
    assert response is not None and response.code == ResponseCode.SUCCESS
    assert turns >= 4  # one turn between each two of the five slices
    assert len(namesrv.routes.topic_queue_table) == count


def test_registration_whose_connection_closed_while_reading_is_dropped(
    namesrv: Namesrv, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = processor_module.read_topics

    async def read_then_close(opened: OpenedRegisterBody) -> Any:
        topics = await original(opened)
        namesrv.connection.closed = True
        return topics

    monkeypatch.setattr(processor_module, "read_topics", read_then_close)
    assert namesrv.register(json_body(many_topics(3), counter=1)) is None
    assert namesrv.routes.broker_live_table == {}
    assert namesrv.routes.topic_queue_table == {}


def test_registrations_of_one_broker_apply_in_arrival_order(namesrv: Namesrv) -> None:
    namesrv.register(json_body(many_topics(3), counter=1))
    slow = json_body(many_topics(TOPIC_SLICE * 3, perm=4), counter=2)  # read in 3 slices
    quick = json_body(many_topics(3, perm=2), counter=3)  # read at once

    async def run() -> list[RemotingCommand | None]:
        loop = asyncio.get_running_loop()
        first = loop.create_task(
            namesrv.processor.register_broker(
                namesrv.connection,  # type: ignore[arg-type]
                register_request(slow),
            )
        )
        await asyncio.sleep(0)  # the slow one has begun reading
        second = loop.create_task(
            namesrv.processor.register_broker(
                namesrv.connection,  # type: ignore[arg-type]
                register_request(quick),
            )
        )
        return list(await asyncio.gather(first, second))

    responses = asyncio.run(run())
    assert [r.code if r else None for r in responses] == [ResponseCode.SUCCESS] * 2
    live = namesrv.routes.broker_live_table[ADDR]
    assert live.data_version.counter == 3
    assert namesrv.perm("T1") == 2  # the later registration's, applied last
    assert namesrv.perm("T9") == 4
    assert namesrv.processor._reading_topics == {}
