"""A scripted name server and brokers for client tests: real `RemotingServer`s on 127.0.0.1.

Each fake is rmq's own remoting server on a free loopback port with a few handlers, so the
client under test talks over real sockets and real frames; only the answers are scripted.

* `FakeNamesrv` answers GET_ROUTEINFO_BY_TOPIC from `routes` (TOPIC_NOT_EXIST otherwise)
  and counts the route requests per topic.
* `FakeBroker` answers SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE with the next code of
  `send_codes` (SUCCESS when the list is empty), keeping every request it got; it answers
  HEART_BEAT and UNREGISTER_CLIENT with SUCCESS and keeps those too.
"""

from __future__ import annotations

import asyncio
import struct
from collections import Counter
from collections.abc import Callable, Coroutine
from typing import Any

from rmq.remoting.bodies import BrokerData, QueueData, TopicRouteData
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, create_response
from rmq.remoting.connection import Connection
from rmq.remoting.headers import (
    GetRouteInfoRequestHeader,
    SendMessageRequestHeader,
    SendMessageResponseHeader,
)
from rmq.remoting.server import RemotingServer

LOOPBACK = "127.0.0.1"


def run(scenario: Coroutine[Any, Any, None], timeout: float = 10.0) -> None:
    """Run an async scenario to completion within `timeout` seconds."""
    asyncio.run(asyncio.wait_for(scenario, timeout))


async def until(condition: Callable[[], bool], timeout: float = 3.0) -> None:
    """Wait until `condition()` holds."""
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.005)


async def closed_port_addr() -> str:
    """The address of a loopback port that was listening a moment ago and is closed now."""
    server = RemotingServer(LOOPBACK, 0)
    await server.start()
    addr = f"{LOOPBACK}:{server.port}"
    await server.close()
    return addr


def offset_msg_id(port: int, physical_offset: int) -> str:
    """An offset message id of 127.0.0.1:`port` (IPv4 bytes, int32 port, int64 offset)."""
    return struct.pack(">4siq", bytes([127, 0, 0, 1]), port, physical_offset).hex().upper()


class FakeServer:
    def __init__(self) -> None:
        self.server = RemotingServer(LOOPBACK, 0)

    @property
    def addr(self) -> str:
        return f"{LOOPBACK}:{self.server.port}"

    async def start(self) -> None:
        await self.server.start()

    async def close(self) -> None:
        await self.server.close()


class FakeNamesrv(FakeServer):
    def __init__(self) -> None:
        super().__init__()
        self.routes: dict[str, TopicRouteData] = {}
        self.route_requests: Counter[str] = Counter()
        self.server.register(RequestCode.GET_ROUTEINFO_BY_TOPIC, self._route)

    async def _route(self, _: Connection, request: RemotingCommand) -> RemotingCommand:
        topic = request.read_header(GetRouteInfoRequestHeader).topic
        self.route_requests[topic] += 1
        route = self.routes.get(topic)
        if route is None:
            return create_response(
                ResponseCode.TOPIC_NOT_EXIST,
                f"No topic route info in name server for the topic: {topic}",
            )
        return create_response(ResponseCode.SUCCESS, body=route.encode(standard=True))


class FakeBroker(FakeServer):
    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.send_codes: list[int] = []
        self.sends: list[RemotingCommand] = []
        self.heartbeats: list[RemotingCommand] = []
        self.unregisters: list[RemotingCommand] = []
        for code in (RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE):
            self.server.register(code, self._send)
        self.server.register(RequestCode.HEART_BEAT, self._keep(self.heartbeats))
        self.server.register(RequestCode.UNREGISTER_CLIENT, self._keep(self.unregisters))

    def send_headers(self) -> list[SendMessageRequestHeader]:
        return [request.read_header(SendMessageRequestHeader) for request in self.sends]

    async def _send(self, _: Connection, request: RemotingCommand) -> RemotingCommand:
        request.body = bytes(request.body or b"")
        self.sends.append(request)
        code = self.send_codes.pop(0) if self.send_codes else ResponseCode.SUCCESS
        if code not in (ResponseCode.SUCCESS, ResponseCode.FLUSH_DISK_TIMEOUT):
            return create_response(code, f"scripted failure {code} of {self.name}")
        header = request.read_header(SendMessageRequestHeader)
        answer = SendMessageResponseHeader(
            msg_id=offset_msg_id(self.server.port, 1000 * len(self.sends)),
            queue_id=header.queue_id,
            queue_offset=len(self.sends) - 1,
        )
        response = create_response(code, None, answer)
        response.add_ext_field("MSG_REGION", "DefaultRegion")
        response.add_ext_field("TRACE_ON", "true")
        return response

    @staticmethod
    def _keep(kept: list[RemotingCommand]) -> Any:
        async def handler(_: Connection, request: RemotingCommand) -> RemotingCommand:
            request.body = bytes(request.body or b"")
            kept.append(request)
            return create_response(ResponseCode.SUCCESS)

        return handler


def route_of(brokers: dict[str, str | None], queues: int = 4, perm: int = 6) -> TopicRouteData:
    """A route over broker name -> master address (None: a broker name without a master,
    known only by a slave at a made-up address)."""
    return TopicRouteData(
        queue_datas=[
            QueueData(broker_name=name, read_queue_nums=queues, write_queue_nums=queues, perm=perm)
            for name in brokers
        ],
        broker_datas=[
            BrokerData(
                cluster="DefaultCluster",
                broker_name=name,
                broker_addrs={0: addr} if addr is not None else {1: "127.0.0.1:1"},
            )
            for name, addr in brokers.items()
        ],
    )
