"""Floods for tests of the flow limits: raw frames written without reading the answers, and
a check that the flooded broker still serves another client.

Used by tests/integration/test_flow_control.py (rmq alone) and
tests/conformance/test_floods.py (the same flood against Apache's broker and rmq's).
"""

from __future__ import annotations

import contextlib
import dataclasses
import socket
import struct

from rmq.common.sysflag import PULL_SUBSCRIPTION, PULL_SUSPEND
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, create_request
from rmq.remoting.frame import encode_header_parts
from tests.procs import RemotingSession, RmqProcess, pull_header, send_header
from tests.unit.remoting.wire import decode

MB = 1024 * 1024


def wire_bytes(request: RemotingCommand) -> bytes:
    """`request` as it goes on the wire, length word included."""
    body = bytes(request.body or b"")
    return encode_header_parts(request, len(body)) + body


def flood(sock: socket.socket, data: bytes, seconds: float) -> int:
    """Write `data` until it is all sent or the peer stops reading for `seconds`; the bytes
    sent."""
    sock.settimeout(seconds)
    view, sent = memoryview(data), 0
    with contextlib.suppress(TimeoutError, OSError):
        while sent < len(view):
            sent += sock.send(view[sent : sent + MB])
    return sent


def read_command(sock: socket.socket) -> RemotingCommand:
    """The next frame `sock` receives, decoded."""
    prefix = read_exactly(sock, 4)
    return decode(prefix + read_exactly(sock, struct.unpack(">i", prefix)[0]))


def read_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError(f"closed after {len(data)} of {size} bytes")
        data += chunk
    return data


def send_message(session: RemotingSession, addr: str, topic: str, body: bytes) -> RemotingCommand:
    """SEND_MESSAGE_V2 of `body` to queue 0 of `topic` (created from TBW102 if need be)."""
    header = send_header(topic, {"WAIT": "true"}, producer_group="FloodProducer")
    return session.invoke(addr, RequestCode.SEND_MESSAGE_V2, header, body=body)


def pull_request(
    topic: str, offset: int, *, max_msg_nums: int = 32, suspend: bool = False
) -> RemotingCommand:
    """PULL_MESSAGE of queue 0 of `topic` from `offset` (held 20 s with `suspend`)."""
    header = dataclasses.replace(
        pull_header(topic, "FloodConsumer", queue_offset=offset),
        max_msg_nums=max_msg_nums,
        sys_flag=PULL_SUBSCRIPTION | (PULL_SUSPEND if suspend else 0),
        suspend_timeout_millis=20_000 if suspend else 0,
    )
    return create_request(RequestCode.PULL_MESSAGE, header)


def check_still_serving(broker: RmqProcess, topic: str, body: bytes) -> None:
    """Another client's send to `topic` is stored and its pull finds the message."""
    with RemotingSession(timeout=10.0) as session:
        sent = send_message(session, broker.addr, topic, body)
        assert sent.code == ResponseCode.SUCCESS, sent.remark
        assert sent.ext_fields is not None
        queue_offset = int(sent.ext_fields["queueOffset"])
        pulled = session.send(broker.addr, pull_request(topic, queue_offset), timeout=10.0)
        assert pulled.code == ResponseCode.SUCCESS, pulled.remark
        assert body in bytes(pulled.body or b"")
