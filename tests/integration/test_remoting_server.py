"""The remoting server and client over real sockets on 127.0.0.1."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import json
import logging
import socket
import struct
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import pytest

from rmq.remoting.client import RemotingClient
from rmq.remoting.codes import RequestCode, ResponseCode, SerializeType
from rmq.remoting.command import RemotingCommand, create_request, create_response
from rmq.remoting.connection import Connection
from rmq.remoting.errors import (
    ListenError,
    PlainConnectionRefused,
    RemotingConnectError,
    RemotingTimeoutError,
)
from rmq.remoting.frame import decode_frame, encode_frame
from rmq.remoting.headers import (
    GetConsumerRunningInfoRequestHeader,
    GetKVConfigRequestHeader,
    GetKVConfigResponseHeader,
    GetRouteInfoRequestHeader,
    NotifyConsumerIdsChangedRequestHeader,
)
from rmq.remoting.server import RemotingServer
from tests.unit.remoting.wire import binary_header, cpp_request, frame

ECHO = RequestCode.GET_KV_CONFIG
SILENT = RequestCode.PUT_KV_CONFIG  # handler returns None
FAILING = RequestCode.DELETE_KV_CONFIG  # handler raises
ROUTE = RequestCode.GET_ROUTEINFO_BY_TOPIC  # handler decodes a header


Runner = Callable[[Coroutine[Any, Any, None]], None]


@pytest.fixture(params=["asyncio", "uvloop"])
def run(request: pytest.FixtureRequest) -> Runner:
    """Runs a scenario to completion (within 10 s) on the standard loop and on uvloop."""
    if request.param == "uvloop":
        uvloop = pytest.importorskip("uvloop")
        loop_run = uvloop.run
    else:
        loop_run = asyncio.run

    def run_scenario(coroutine: Coroutine[Any, Any, None]) -> None:
        loop_run(asyncio.wait_for(coroutine, 10.0))

    return run_scenario


async def echo(connection: Connection, request: RemotingCommand) -> RemotingCommand:
    header = request.read_header(GetKVConfigRequestHeader)
    await asyncio.sleep(float(header.key) if header.key.replace(".", "").isdigit() else 0)
    return create_response(
        ResponseCode.SUCCESS,
        header=GetKVConfigResponseHeader(value=f"{header.namespace}/{header.key}"),
        body=request.body,
    )


async def silent(connection: Connection, request: RemotingCommand) -> None:
    connection.attributes["silent"] = request.opaque


async def failing(connection: Connection, request: RemotingCommand) -> RemotingCommand:
    raise ValueError("broken processor")


async def route(connection: Connection, request: RemotingCommand) -> RemotingCommand:
    topic = request.read_header(GetRouteInfoRequestHeader).topic
    return create_response(ResponseCode.TOPIC_NOT_EXIST, f"no route for {topic}")


@contextlib.asynccontextmanager
async def serving(**options: Any) -> AsyncIterator[RemotingServer]:
    server = RemotingServer("127.0.0.1", 0, **options)
    server.register(ECHO, echo)
    server.register(SILENT, silent)
    server.register(FAILING, failing)
    server.register(ROUTE, route)
    async with server:
        yield server


def addr_of(server: RemotingServer) -> str:
    return f"127.0.0.1:{server.port}"


def echo_request(
    namespace: str = "ns", key: str = "k", body: bytes | None = None
) -> RemotingCommand:
    return create_request(ECHO, GetKVConfigRequestHeader(namespace=namespace, key=key), body=body)


class RawPeer:
    """A hand-driven socket: writes any bytes, reads frames back."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, port: int) -> RawPeer:
        return cls(*await asyncio.open_connection("127.0.0.1", port))

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def read_frame(self, timeout: float = 3.0) -> bytes:
        async with asyncio.timeout(timeout):
            (length,) = struct.unpack(">i", await self.reader.readexactly(4))
            return await self.reader.readexactly(length)

    async def read_command(self, timeout: float = 3.0) -> RemotingCommand:
        return decode_frame(memoryview(await self.read_frame(timeout)))

    async def closed_by_peer(self, timeout: float = 3.0) -> bool:
        async with asyncio.timeout(timeout):
            return await self.reader.read(65536) == b""

    def close(self) -> None:
        self.writer.close()


# --- requests and responses ------------------------------------------------------------------


def test_request_gets_its_response(run: Runner) -> None:
    async def scenario() -> None:
        async with serving() as server, RemotingClient() as client:
            request = echo_request(body=b"payload")
            response = await client.invoke(addr_of(server), request, timeout=3)
            assert response.code == ResponseCode.SUCCESS
            assert response.is_response and response.opaque == request.opaque
            assert response.read_header(GetKVConfigResponseHeader).value == "ns/k"
            assert response.body == b"payload"

    run(scenario())


def test_concurrent_requests_are_matched_by_opaque(run: Runner) -> None:
    async def scenario() -> None:
        async with serving() as server, RemotingClient() as client:
            # Later requests finish first, so responses come back in reverse order.
            delays = [f"{0.01 * (10 - i):.2f}" for i in range(10)]
            responses = await asyncio.gather(
                *(client.invoke(addr_of(server), echo_request(key=d), timeout=3) for d in delays)
            )
            values = [r.read_header(GetKVConfigResponseHeader).value for r in responses]
            assert values == [f"ns/{d}" for d in delays]
            assert len(server.connections) == 1

    run(scenario())


def test_oneway_request_is_served_without_a_response(run: Runner) -> None:
    async def scenario() -> None:
        async with serving() as server:
            peer = await RawPeer.open(server.port)
            oneway = create_request(SILENT)
            oneway.mark_oneway()
            failing_oneway = create_request(FAILING)
            failing_oneway.mark_oneway()
            echo_oneway = echo_request()
            echo_oneway.mark_oneway()
            normal = echo_request()
            await peer.send(encode_frame(oneway) + encode_frame(failing_oneway))
            await peer.send(encode_frame(echo_oneway) + encode_frame(normal))
            response = await peer.read_command()
            assert response.opaque == normal.opaque
            (connection,) = server.connections
            assert connection.attributes["silent"] == oneway.opaque
            peer.close()

    run(scenario())


def test_client_oneway_reaches_the_handler(run: Runner) -> None:
    async def scenario() -> None:
        async with serving() as server, RemotingClient() as client:
            request = create_request(SILENT)
            await client.invoke_oneway(addr_of(server), request)
            assert request.is_oneway
            (connection,) = server.connections
            for _ in range(100):
                if "silent" in connection.attributes:
                    break
                await asyncio.sleep(0.01)
            assert connection.attributes["silent"] == request.opaque

    run(scenario())


def test_unknown_code_is_not_supported_even_when_oneway(run: Runner) -> None:
    async def scenario() -> None:
        async with serving() as server, RemotingClient() as client:
            response = await client.invoke(addr_of(server), create_request(777), timeout=3)
            assert response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
            assert response.remark == " request type 777 not supported"

            peer = await RawPeer.open(server.port)
            oneway = create_request(RequestCode.GET_TOPIC_NAME_LIST)
            oneway.mark_oneway()
            await peer.send(encode_frame(oneway))
            answer = await peer.read_command()
            assert answer.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
            assert (answer.opaque, answer.flag) == (oneway.opaque, 1)
            assert answer.remark == " request type 23 not supported"
            peer.close()

    run(scenario())


def test_default_handler_serves_unregistered_codes(run: Runner) -> None:
    async def default(connection: Connection, request: RemotingCommand) -> RemotingCommand:
        return create_response(ResponseCode.SUCCESS, f"default saw {request.code}")

    async def scenario() -> None:
        async with serving() as server, RemotingClient() as client:
            server.register_default(default)
            response = await client.invoke(addr_of(server), create_request(777), timeout=3)
            assert (response.code, response.remark) == (ResponseCode.SUCCESS, "default saw 777")
            routed = create_request(ROUTE, GetRouteInfoRequestHeader(topic="T"))
            response = await client.invoke(addr_of(server), routed, timeout=3)
            assert response.code == ResponseCode.TOPIC_NOT_EXIST

    run(scenario())


def test_failing_handler_answers_system_error_and_logs_the_traceback(
    run: Runner, caplog: pytest.LogCaptureFixture
) -> None:
    """The remark names the request and the exception's type only; the message, the file and
    the traceback go to the server's log."""

    async def scenario() -> None:
        async with serving() as server, RemotingClient() as client:
            response = await client.invoke(addr_of(server), create_request(FAILING), timeout=3)
            assert response.code == ResponseCode.SYSTEM_ERROR
            assert response.remark == (
                "DELETE_KV_CONFIG(102) failed: internal server error (ValueError); "
                "see the server's log"
            )

    with caplog.at_level(logging.WARNING, logger="rmq.remoting"):
        run(scenario())
    logged = [r for r in caplog.records if r.exc_info and "DELETE_KV_CONFIG" in r.getMessage()]
    assert len(logged) == 1
    assert "broken processor" in logged[0].getMessage()
    assert "test_remoting_server.py" in caplog.text  # the traceback


def test_bad_header_answers_system_error_naming_the_field(run: Runner) -> None:
    async def scenario() -> None:
        async with serving() as server, RemotingClient() as client:
            response = await client.invoke(addr_of(server), create_request(ROUTE), timeout=3)
            assert response.code == ResponseCode.SYSTEM_ERROR
            assert response.remark == "GetRouteInfoRequestHeader: the custom field <topic> is null"

    run(scenario())


def test_binary_request_is_answered_in_binary(run: Runner) -> None:
    async def scenario() -> None:
        async with serving() as server:
            peer = await RawPeer.open(server.port)
            header = binary_header(ECHO, 0, 409, 31, 0, b"", [(b"namespace", b"N"), (b"key", b"K")])
            await peer.send(frame(header, b"B", serialize_type=1))
            raw = await peer.read_frame()
            assert raw[0] == SerializeType.ROCKETMQ
            response = decode_frame(memoryview(raw))
            assert response.serialize_type is SerializeType.ROCKETMQ
            assert (response.code, response.opaque, response.flag) == (0, 31, 1)
            assert response.ext_fields == {"value": "N/K"}
            assert response.body == b"B"
            peer.close()

    run(scenario())


def test_cpp_request_is_answered_in_json_with_string_values(run: Runner) -> None:
    async def scenario() -> None:
        async with serving() as server:
            peer = await RawPeer.open(server.port)
            ext: dict[str, object] = {"AccessKey": "", "namespace": 7, "key": True}
            await peer.send(cpp_request(ECHO, 0, ext))
            raw = await peer.read_frame()
            (header_length,) = struct.unpack_from(">I", raw)
            header = json.loads(raw[4 : 4 + header_length])
            assert (header["code"], header["opaque"], header["flag"]) == (0, 0, 1)
            assert header["extFields"] == {"value": "7/true"}
            peer.close()

    run(scenario())


def test_large_body_segments_arrive_whole(run: Runner) -> None:
    chunks = [bytes([i]) * 100_000 for i in range(3)]

    async def pull(connection: Connection, request: RemotingCommand) -> RemotingCommand:
        response = create_response(ResponseCode.SUCCESS, "FOUND")
        response.body_segments = tuple(memoryview(chunk) for chunk in chunks)
        return response

    async def scenario() -> None:
        async with serving() as server, RemotingClient() as client:
            server.register(RequestCode.PULL_MESSAGE, pull)
            request = create_request(RequestCode.PULL_MESSAGE)
            response = await client.invoke(addr_of(server), request, timeout=3)
            assert response.body == b"".join(chunks)

    run(scenario())


def test_requests_and_responses_are_logged_at_debug(
    run: Runner, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="rmq.remoting")

    async def scenario() -> None:
        async with serving() as server, RemotingClient() as client:
            request = create_request(ROUTE, GetRouteInfoRequestHeader(topic="T"))
            await client.invoke(addr_of(server), request, timeout=3)
            messages = [record.getMessage() for record in caplog.records]
            opaque = request.opaque
            assert any(
                m.startswith(f"recv request GET_ROUTEINFO_BY_TOPIC(105) opaque={opaque} ")
                for m in messages
            )
            assert any(
                m.startswith(f"send response TOPIC_NOT_EXIST(17) opaque={opaque} ")
                and "remark='no route for T'" in m
                for m in messages
            )

    run(scenario())


# --- timeouts, lost connections, reconnects --------------------------------------------------


def test_missing_response_times_out_and_the_connection_stays_usable(run: Runner) -> None:
    async def scenario() -> None:
        async with serving() as server, RemotingClient() as client:
            with pytest.raises(RemotingTimeoutError, match="PUT_KV_CONFIG"):
                await client.invoke(addr_of(server), create_request(SILENT), timeout=0.2)
            response = await client.invoke(addr_of(server), echo_request(), timeout=3)
            assert response.code == ResponseCode.SUCCESS
            assert len(server.connections) == 1

    run(scenario())


def test_connection_lost_fails_pending_requests_and_the_client_reconnects(run: Runner) -> None:
    async def hang_up(connection: Connection, request: RemotingCommand) -> None:
        connection.close()

    async def scenario() -> None:
        async with serving() as server, RemotingClient() as client:
            server.register(RequestCode.UNREGISTER_CLIENT, hang_up)
            slow = asyncio.ensure_future(
                client.invoke(addr_of(server), echo_request(key="1"), timeout=5)
            )
            with pytest.raises(RemotingConnectError, match="closed"):
                await client.invoke(
                    addr_of(server), create_request(RequestCode.UNREGISTER_CLIENT), timeout=3
                )
            with pytest.raises(RemotingConnectError):
                await slow
            response = await client.invoke(addr_of(server), echo_request(), timeout=3)
            assert response.code == ResponseCode.SUCCESS

    run(scenario())


def test_connect_failure_is_a_connect_error(run: Runner) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    async def scenario() -> None:
        async with RemotingClient(connect_timeout=1) as client:
            with pytest.raises(RemotingConnectError, match=f"127.0.0.1:{port}"):
                await client.invoke(f"127.0.0.1:{port}", echo_request(), timeout=3)
            with pytest.raises(RemotingConnectError, match="bad address"):
                await client.invoke("no-port", echo_request(), timeout=3)

    run(scenario())


def test_a_port_in_use_is_a_listen_error_naming_it(run: Runner) -> None:
    async def scenario() -> None:
        async with serving() as taken:
            port = taken.port
            plain = RemotingServer("127.0.0.1", port)
            described = RemotingServer("127.0.0.1", port, role="the second port")
            with pytest.raises(ListenError) as caught:
                await plain.start()
            assert str(caught.value) == f"cannot listen on 127.0.0.1:{port}: Address already in use"
            assert caught.value.errno == errno.EADDRINUSE
            with pytest.raises(OSError, match=f"127.0.0.1:{port}, the second port: Address"):
                await described.start()

    run(scenario())


def test_closing_the_server_fails_requests_in_flight(run: Runner) -> None:
    async def scenario() -> None:
        async with RemotingClient() as client:
            async with serving() as server:
                addr = addr_of(server)
                pending = asyncio.ensure_future(client.invoke(addr, echo_request(key="5"), 10))
                await asyncio.sleep(0.1)
            with pytest.raises(RemotingConnectError):
                await pending

    run(scenario())


def test_connection_closed_callbacks_see_the_connection(run: Runner) -> None:
    async def remember(connection: Connection, request: RemotingCommand) -> RemotingCommand:
        connection.attributes["client_id"] = "client-1"
        return create_response(ResponseCode.SUCCESS)

    async def scenario() -> None:
        closed: list[tuple[str, object]] = []
        async with serving() as server:
            server.register(RequestCode.HEART_BEAT, remember)
            server.on_connection_closed(lambda c: closed.append((c.remote_addr, c.attributes)))
            async with RemotingClient() as client:
                await client.invoke(addr_of(server), create_request(RequestCode.HEART_BEAT), 3)
                connection = await client.connection(addr_of(server))
                local = connection.local_addr
            for _ in range(100):
                if closed:
                    break
                await asyncio.sleep(0.01)
            assert closed == [(local, {"client_id": "client-1"})]
            assert not server.connections

    run(scenario())


# --- requests from the server to the client --------------------------------------------------


def test_server_initiated_requests_reach_the_client_handlers(run: Runner) -> None:
    async def running_info(connection: Connection, request: RemotingCommand) -> RemotingCommand:
        header = request.read_header(GetConsumerRunningInfoRequestHeader)
        return create_response(ResponseCode.SUCCESS, body=f"info of {header.client_id}".encode())

    notified: list[str] = []

    async def notify(connection: Connection, request: RemotingCommand) -> RemotingCommand:
        notified.append(request.read_header(NotifyConsumerIdsChangedRequestHeader).consumer_group)
        return create_response(ResponseCode.SUCCESS)  # suppressed: the request is oneway

    async def scenario() -> None:
        async with serving() as server, RemotingClient() as client:
            client.register(RequestCode.GET_CONSUMER_RUNNING_INFO, running_info)
            client.register(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, notify)
            await client.invoke(addr_of(server), echo_request(), timeout=3)
            (connection,) = server.connections

            request = create_request(
                RequestCode.GET_CONSUMER_RUNNING_INFO,
                GetConsumerRunningInfoRequestHeader(consumer_group="CG", client_id="c1"),
            )
            response = await connection.send_request(request, timeout=3)
            assert (response.code, response.body) == (ResponseCode.SUCCESS, b"info of c1")

            await connection.send_oneway(
                create_request(
                    RequestCode.NOTIFY_CONSUMER_IDS_CHANGED,
                    NotifyConsumerIdsChangedRequestHeader(consumer_group="CG"),
                )
            )
            unknown = await connection.send_request(create_request(RequestCode.HEART_BEAT), 3)
            assert unknown.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
            assert notified == ["CG"]

    run(scenario())


# --- malformed input and idle connections ----------------------------------------------------

MALFORMED = {
    "unknown serialize type": frame(b'{"code":105}', serialize_type=3),
    "header length beyond frame": struct.pack(">iI", 8, 100) + b"{}{}",
    "garbage JSON": frame(b"\x00garbage{"),
    "oversize frame": struct.pack(">i", 1 << 20) + b"\x00" * 64,
    "negative length": struct.pack(">i", -8),
}


@pytest.mark.parametrize("data", MALFORMED.values(), ids=list(MALFORMED))
def test_malformed_frame_closes_only_its_connection(
    run: Runner, data: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> None:
        async with serving(max_frame_size=65536) as server, RemotingClient() as client:
            await client.invoke(addr_of(server), echo_request(), timeout=3)
            peer = await RawPeer.open(server.port)
            await peer.send(data)
            assert await peer.closed_by_peer()
            response = await client.invoke(addr_of(server), echo_request(key="after"), timeout=3)
            assert response.read_header(GetKVConfigResponseHeader).value == "ns/after"
            assert len(server.connections) == 1
            peer.close()

    run(scenario())
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("malformed frame" in message and "127.0.0.1:" in message for message in warnings)


def test_idle_connection_is_closed(run: Runner) -> None:
    async def scenario() -> None:
        closed: list[Connection] = []
        # The busy peer's gaps (50 ms) stay far below the timeout even when the machine runs
        # the suite on every core; the idle one is closed within the busy peer's run.
        async with serving(idle_timeout=1.0) as server:
            server.on_connection_closed(closed.append)
            idle = await RawPeer.open(server.port)
            busy = await RawPeer.open(server.port)
            loop = asyncio.get_running_loop()
            started = loop.time()
            while loop.time() - started < 1.6:
                await busy.send(encode_frame(echo_request()))
                await busy.read_command()
                await asyncio.sleep(0.05)
            assert await idle.closed_by_peer(timeout=1)
            assert len(closed) == 1
            assert len(server.connections) == 1
            idle.close()
            busy.close()

    run(scenario())


TLS_ALERT = b"\x15\x03\x03\x00\x02\x02\x46"
"""A TLS alert record (fatal, protocol_version), as a TLS server may answer plain bytes."""


def test_a_peer_refusing_a_plain_connection_is_told_apart(run: Runner) -> None:
    """A peer that reads a request and closes without a byte (a server in TLS enforcing mode
    does so to a plain client), or answers it with a TLS record, fails it with
    PlainConnectionRefused; one that answered before it closed fails the next with a plain
    RemotingConnectError."""

    async def peer(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter, answers: int, last: bytes
    ) -> None:
        for _ in range(answers):
            (length,) = struct.unpack(">i", await reader.readexactly(4))
            request = decode_frame(memoryview(await reader.readexactly(length)))
            response = create_response(ResponseCode.SUCCESS)
            response.opaque = request.opaque
            response.mark_response()
            writer.write(encode_frame(response))
        await reader.read(1)
        if last:
            writer.write(last)
            await reader.read()  # the client closes at a TLS record
        writer.close()

    async def refusal(answers: int, last: bytes) -> RemotingConnectError:
        serve = functools.partial(peer, answers=answers, last=last)
        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        addr = f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
        async with server, RemotingClient() as client:
            for _ in range(answers):
                assert (await client.invoke(addr, echo_request(), timeout=3)).code == 0
            with pytest.raises(RemotingConnectError) as raised:
                await client.invoke(addr, echo_request(), timeout=3)
        return raised.value

    async def scenario() -> None:
        closed = await refusal(0, b"")
        assert isinstance(closed, PlainConnectionRefused) and not closed.tls_record
        assert str(closed) == f"connection to {closed.addr} closed"
        alert = await refusal(0, TLS_ALERT)
        assert isinstance(alert, PlainConnectionRefused) and alert.tls_record
        answered = await refusal(1, b"")
        assert not isinstance(answered, PlainConnectionRefused)

    run(scenario())
