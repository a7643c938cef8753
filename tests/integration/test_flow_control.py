"""Floods a client can aim at a real `rmq broker`, and the limits that keep its memory bounded.

* One connection writes pull requests without ever reading the responses: the broker stops
  reading it once its write buffer passes the high-water mark, stays under 300 MB of
  anonymous memory (RssAnon: the mapped store files do not count) and keeps serving another
  client's send and pull meanwhile.
* Many connections each hold most of a 16 MiB frame: the bytes held in incomplete frames are
  bounded by `serverPartialFrameMemoryLimit`; the connection with the oldest incomplete frame
  is closed with a WARNING line.
* Requests in progress on one connection past `serverMaxRequestsPerConnection` are answered
  SYSTEM_BUSY with Apache's remark, and the connection keeps working.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rmq.common.properties import encode_properties
from rmq.common.sysflag import PULL_SUBSCRIPTION, PULL_SUSPEND
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, create_request
from rmq.remoting.frame import encode_header_parts
from rmq.remoting.headers import PullMessageRequestHeader, SendMessageRequestHeader
from rmq.remoting.limits import OVERLOAD_REMARK
from tests.procs import LOOPBACK, RemotingSession, RmqProcess, RmqProcesses
from tests.unit.remoting.wire import decode

MB = 1024 * 1024
RSS_BOUND = 300 * MB
TOPIC = "FloodTopic"


def rss_anon(process: RmqProcess) -> int:
    """The process's anonymous resident memory in bytes (RssAnon of /proc/<pid>/status)."""
    for line in Path(f"/proc/{process.popen.pid}/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no RssAnon line")


def wire_bytes(request: RemotingCommand) -> bytes:
    body = bytes(request.body or b"")
    return encode_header_parts(request, len(body)) + body


def send_message(session: RemotingSession, addr: str, body: bytes) -> RemotingCommand:
    header = SendMessageRequestHeader(
        producer_group="FloodProducer",
        topic=TOPIC,
        default_topic="TBW102",
        default_topic_queue_nums=1,
        queue_id=0,
        sys_flag=0,
        born_timestamp=int(time.time() * 1000),
        flag=0,
        properties=encode_properties({"WAIT": "true"}),
    )
    return session.invoke(addr, RequestCode.SEND_MESSAGE_V2, header, body=body)


def pull_request(offset: int, *, suspend: bool = False) -> RemotingCommand:
    header = PullMessageRequestHeader(
        consumer_group="FloodConsumer",
        topic=TOPIC,
        queue_id=0,
        queue_offset=offset,
        max_msg_nums=32,
        sys_flag=PULL_SUBSCRIPTION | (PULL_SUSPEND if suspend else 0),
        commit_offset=0,
        suspend_timeout_millis=20_000 if suspend else 0,
        subscription="*",
        sub_version=0,
    )
    return create_request(RequestCode.PULL_MESSAGE, header)


def flood(sock: socket.socket, data: bytes, seconds: float) -> int:
    """Write `data` until it is all sent or the peer stops reading for `seconds`; the bytes
    sent."""
    sock.settimeout(seconds)
    view, sent = memoryview(data), 0
    with contextlib.suppress(TimeoutError, OSError):
        while sent < len(view):
            sent += sock.send(view[sent : sent + MB])
    return sent


def check_still_serving(broker: RmqProcess, body: bytes) -> None:
    """Another client's send is stored and its pull finds the message."""
    with RemotingSession(timeout=10.0) as session:
        sent = send_message(session, broker.addr, body)
        assert sent.code == ResponseCode.SUCCESS, sent.remark
        assert sent.ext_fields is not None
        queue_offset = int(sent.ext_fields["queueOffset"])
        pulled = session.send(broker.addr, pull_request(queue_offset), timeout=10.0)
        assert pulled.code == ResponseCode.SUCCESS, pulled.remark
        assert body in bytes(pulled.body or b"")


@pytest.fixture
def broker(rmq_processes: RmqProcesses, namesrv_for_test: RmqProcess) -> Iterator[RmqProcess]:
    process = rmq_processes.start_broker("flood-broker", namesrv=namesrv_for_test)
    yield process
    process.stop_cleanly()


@pytest.fixture
def namesrv_for_test(rmq_processes: RmqProcesses) -> RmqProcess:
    return rmq_processes.start_namesrv("flood-namesrv")


def test_unread_pulls_stop_the_reading_and_leave_memory_bounded(broker: RmqProcess) -> None:
    with RemotingSession(timeout=10.0) as session:
        for _ in range(32):
            assert send_message(session, broker.addr, b"m" * 4096).code == ResponseCode.SUCCESS
    one_pull = wire_bytes(pull_request(0))
    requests = one_pull * 100_000  # each answer carries 32 messages of 4 KiB
    before = rss_anon(broker)

    with socket.create_connection((LOOPBACK, broker.port)) as flooder:
        sent = flood(flooder, requests, seconds=5.0)
        check_still_serving(broker, b"during the unread pulls")
        after = rss_anon(broker)

    assert after < RSS_BOUND, f"RssAnon {after / MB:.0f} MB (before the flood {before / MB:.0f})"
    # The broker stopped reading: far from every pull got in.
    assert sent < len(requests) // 2, f"{sent} of {len(requests)} bytes were read"
    check_still_serving(broker, b"after the flooder left")


def test_partial_frames_are_bounded_by_closing_the_oldest(broker: RmqProcess) -> None:
    frame_length = 16 * MB - 4  # the largest frame: 16 MiB with its length word
    held = 15 * MB
    chunk = struct.pack(">i", frame_length) + bytes(held)
    connections = [socket.create_connection((LOOPBACK, broker.port)) for _ in range(24)]
    try:
        threads = [threading.Thread(target=flood, args=(sock, chunk, 10.0)) for sock in connections]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        check_still_serving(broker, b"after the partial frames")
        after = rss_anon(broker)
    finally:
        for sock in connections:
            sock.close()

    assert after < RSS_BOUND, f"RssAnon {after / MB:.0f} MB with 24 x 15 MiB partial frames"
    assert "serverPartialFrameMemoryLimit" in broker.wait_for_log("incomplete frames")


def test_requests_past_the_per_connection_limit_get_system_busy(
    rmq_processes: RmqProcesses, namesrv_for_test: RmqProcess
) -> None:
    broker = rmq_processes.start_broker(
        "busy-broker",
        namesrv=namesrv_for_test,
        props={"serverMaxRequestsPerConnection": 4},
    )
    with RemotingSession(timeout=10.0) as session:
        assert send_message(session, broker.addr, b"seed").code == ResponseCode.SUCCESS
    held = b"".join(wire_bytes(pull_request(1, suspend=True)) for _ in range(4))
    extra = wire_bytes(pull_request(0))
    with socket.create_connection((LOOPBACK, broker.port), timeout=10.0) as sock:
        sock.sendall(held + extra)  # four long polls wait for message 1; the fifth is refused
        answer = read_command(sock)
        assert answer.code == ResponseCode.SYSTEM_BUSY
        assert answer.remark == OVERLOAD_REMARK
        with RemotingSession(timeout=10.0) as session:
            assert send_message(session, broker.addr, b"wakes").code == ResponseCode.SUCCESS
        codes = [read_command(sock).code for _ in range(4)]
        assert codes == [ResponseCode.SUCCESS] * 4
    assert broker.wait_for_log("answering SYSTEM_BUSY")
    broker.stop_cleanly()


def read_command(sock: socket.socket) -> RemotingCommand:
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
