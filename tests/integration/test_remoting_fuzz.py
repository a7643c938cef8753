"""Random, truncated and half-valid frames never take the server down.

A live server runs on its own event loop thread for the whole module.  Each example opens a
few connections, writes junk on them and half-closes them: the server must answer what is a
valid request and close every one of those connections.  A well-behaved client on a
connection of its own is served after every example, and the server ends up holding only
that connection.
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import threading
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, create_request, create_response
from rmq.remoting.connection import Connection
from rmq.remoting.frame import FrameSplitter, decode_frame, encode_frame
from rmq.remoting.server import RemotingServer
from tests.unit.remoting.wire import binary_header, frame

T = TypeVar("T")

ECHO = RequestCode.HEART_BEAT
MAX_FRAME_SIZE = 4096


async def echo(connection: Connection, request: RemotingCommand) -> RemotingCommand:
    return create_response(ResponseCode.SUCCESS, body=request.body)


class LiveServer:
    """A RemotingServer on an event loop in a background thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.server = RemotingServer("127.0.0.1", 0, max_frame_size=MAX_FRAME_SIZE)
        self.server.register(ECHO, echo)
        self.call(self.server.start())

    def call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout=10)

    def connection_count(self) -> int:
        async def count() -> int:
            return len(self.server.connections)

        return self.call(count())

    def stop(self) -> None:
        self.call(self.server.close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)
        self.loop.close()


@pytest.fixture(scope="module")
def live() -> Iterator[LiveServer]:
    server = LiveServer()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def good_client(live: LiveServer) -> Iterator[socket.socket]:
    with socket.create_connection(("127.0.0.1", live.server.port), timeout=5) as sock:
        yield sock


def read_all(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    received = bytearray()
    while chunk := sock.recv(65536):
        received += chunk
    return bytes(received)


def whole_frames(data: bytes) -> list[RemotingCommand]:
    """The frames `data` consists of; it must end with the end of a frame."""
    commands, position = [], 0
    while position < len(data):
        (length,) = struct.unpack_from(">i", data, position)
        commands.append(decode_frame(memoryview(data)[position + 4 : position + 4 + length]))
        position += 4 + length
    assert position == len(data)
    return commands


def served(sock: socket.socket, body: bytes) -> bool:
    request = create_request(ECHO, body=body)
    sock.sendall(encode_frame(request))
    splitter = FrameSplitter()
    while True:
        chunk = sock.recv(65536)
        assert chunk, "the server closed the well-behaved connection"
        for raw in splitter.feed(chunk):
            response = decode_frame(raw)
            return response.opaque == request.opaque and bytes(response.body or b"") == body


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=8,
)
json_headers = st.dictionaries(
    st.sampled_from(["code", "opaque", "flag", "extFields", "language", "remark", "version"])
    | st.text(max_size=4),
    json_values,
    max_size=7,
).map(lambda fields: frame(json.dumps(fields).encode()))

valid_requests = st.builds(
    lambda code, body, oneway: encode_frame(
        RemotingCommand(code, opaque=7, flag=2 if oneway else 0, body=body)
    ),
    st.sampled_from([ECHO, RequestCode.PULL_MESSAGE, 9999]),
    st.binary(max_size=64),
    st.booleans(),
)

binary_headers = st.builds(
    lambda code, lang, fields, body: frame(
        binary_header(code, lang, 409, 1, 0, b"", fields), body, serialize_type=1
    ),
    st.integers(-(2**15), 2**15 - 1),
    st.integers(-128, 127),
    st.lists(st.tuples(st.binary(max_size=6), st.binary(max_size=6)), max_size=3),
    st.binary(max_size=16),
)

structured = st.builds(
    lambda length, serialize_type, header_length, rest: (
        struct.pack(">iI", length, (serialize_type << 24) | header_length) + rest
    ),
    st.integers(-(2**31), 2**31 - 1) | st.integers(0, 200),
    st.integers(0, 255),
    st.integers(0, 0xFFFFFF) | st.integers(0, 64),
    st.binary(max_size=128),
)

frames = st.one_of(
    valid_requests, json_headers, binary_headers, structured, st.binary(max_size=256)
)
payloads = st.one_of(
    frames,
    st.tuples(frames, st.floats(0, 1)).map(lambda pair: pair[0][: int(len(pair[0]) * pair[1])]),
    st.lists(frames, min_size=2, max_size=4).map(b"".join),
)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(junk=st.lists(payloads, min_size=1, max_size=3), body=st.binary(max_size=32))
def test_server_survives_junk(
    live: LiveServer, good_client: socket.socket, junk: list[bytes], body: bytes
) -> None:
    connections = [
        socket.create_connection(("127.0.0.1", live.server.port), timeout=5) for _ in junk
    ]
    try:
        for sock, data in zip(connections, junk, strict=True):
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
        for sock in connections:
            for response in whole_frames(read_all(sock)):
                assert response.is_response
    finally:
        for sock in connections:
            sock.close()
    assert served(good_client, body)
    for _ in range(100):
        if live.connection_count() == 1:
            break
        threading.Event().wait(0.01)
    assert live.connection_count() == 1
