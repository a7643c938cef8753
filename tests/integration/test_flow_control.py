"""Floods a client can aim at a real `rmq broker`, and the limits that keep its memory bounded.

* One connection writes pull requests without ever reading the responses: the broker stops
  reading it once its write buffer passes the high-water mark, stays under 300 MB of
  anonymous memory (RssAnon: the mapped store files do not count) and keeps serving another
  client's send and pull meanwhile.
* Many connections each hold most of a 16 MiB frame: the bytes held in incomplete frames are
  bounded by `serverPartialFrameMemoryLimit`; the connection with the oldest incomplete frame
  is closed with a WARNING line.
* A connection with `serverMaxRequestsPerConnection` requests in progress is not read until
  one ends; past `serverMaxRequestsInProgress` on the whole server, a request is answered
  SYSTEM_BUSY with Apache's remark, and the connections keep working.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Iterator

import pytest

from rmq.remoting.codes import ResponseCode
from rmq.remoting.limits import OVERLOAD_REMARK
from tests.floods import (
    MB,
    check_still_serving,
    flood,
    pull_request,
    read_command,
    send_message,
    wire_bytes,
)
from tests.procs import LOOPBACK, RemotingSession, RmqProcess, RmqProcesses

RSS_BOUND = 300 * MB
TOPIC = "FloodTopic"


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
            assert (
                send_message(session, broker.addr, TOPIC, b"m" * 4096).code == ResponseCode.SUCCESS
            )
    one_pull = wire_bytes(pull_request(TOPIC, 0))
    requests = one_pull * 100_000  # each answer carries 32 messages of 4 KiB
    before = broker.rss_anon()

    with socket.create_connection((LOOPBACK, broker.port)) as flooder:
        sent = flood(flooder, requests, seconds=5.0)
        check_still_serving(broker, TOPIC, b"during the unread pulls")
        after = broker.rss_anon()

    assert after < RSS_BOUND, f"RssAnon {after / MB:.0f} MB (before the flood {before / MB:.0f})"
    # The broker stopped reading: far from every pull got in.
    assert sent < len(requests) // 2, f"{sent} of {len(requests)} bytes were read"
    check_still_serving(broker, TOPIC, b"after the flooder left")


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
        check_still_serving(broker, TOPIC, b"after the partial frames")
        after = broker.rss_anon()
    finally:
        for sock in connections:
            sock.close()

    assert after < RSS_BOUND, f"RssAnon {after / MB:.0f} MB with 24 x 15 MiB partial frames"
    assert "serverPartialFrameMemoryLimit" in broker.wait_for_log("incomplete frames")


def wait_for_count(process: RmqProcess, text: str, count: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while process.log_text().count(text) < count:
        assert time.monotonic() < deadline, (
            f"{text!r} not logged {count} times\n{process.log_tail()}"
        )
        time.sleep(0.05)


def send_one(addr: str, body: bytes) -> None:
    with RemotingSession(timeout=10.0) as session:
        assert send_message(session, addr, TOPIC, body).code == ResponseCode.SUCCESS


def busy_broker(processes: RmqProcesses, namesrv: RmqProcess, limit_key: str) -> RmqProcess:
    """A broker (logging at DEBUG) whose `limit_key` is 4, holding message 0 of TOPIC."""
    broker = processes.start_broker(
        "busy-broker", namesrv=namesrv, props={limit_key: 4}, debug=True
    )
    send_one(broker.addr, b"seed")
    return broker


def test_a_connection_at_its_request_limit_is_not_read_until_one_ends(
    rmq_processes: RmqProcesses, namesrv_for_test: RmqProcess
) -> None:
    broker = busy_broker(rmq_processes, namesrv_for_test, "serverMaxRequestsPerConnection")
    with socket.create_connection((LOOPBACK, broker.port), timeout=10.0) as sock:
        # four long polls wait for message 1 and fill the connection's allowance
        sock.sendall(b"".join(wire_bytes(pull_request(TOPIC, 1, suspend=True)) for _ in range(4)))
        broker.wait_for_log("4 requests in progress, not reading")
        sock.sendall(wire_bytes(pull_request(TOPIC, 0)))  # could be answered at once: not read
        sock.settimeout(1.0)
        with pytest.raises(TimeoutError):
            read_command(sock)
        sock.settimeout(10.0)
        send_one(broker.addr, b"wakes")
        codes = [read_command(sock).code for _ in range(5)]
        assert codes == [ResponseCode.SUCCESS] * 5
    broker.stop_cleanly()


def test_requests_past_the_server_limit_get_system_busy(
    rmq_processes: RmqProcesses, namesrv_for_test: RmqProcess
) -> None:
    broker = busy_broker(rmq_processes, namesrv_for_test, "serverMaxRequestsInProgress")
    received = broker.log_text().count("recv request PULL_MESSAGE")
    with (
        socket.create_connection((LOOPBACK, broker.port), timeout=10.0) as holder,
        socket.create_connection((LOOPBACK, broker.port), timeout=10.0) as other,
    ):
        holder.sendall(b"".join(wire_bytes(pull_request(TOPIC, 1, suspend=True)) for _ in range(4)))
        wait_for_count(broker, "recv request PULL_MESSAGE", received + 4)
        other.sendall(wire_bytes(pull_request(TOPIC, 0)))
        answer = read_command(other)
        assert answer.code == ResponseCode.SYSTEM_BUSY
        assert answer.remark == OVERLOAD_REMARK
        fast_port = f"{LOOPBACK}:{broker.port - 2}"  # a server of its own, with its own limits
        send_one(fast_port, b"wakes")
        assert [read_command(holder).code for _ in range(4)] == [ResponseCode.SUCCESS] * 4
        # the held pulls end as their answers go out: soon the server takes requests again
        deadline = time.monotonic() + 10.0
        while True:
            other.sendall(wire_bytes(pull_request(TOPIC, 0)))
            code = read_command(other).code
            if code != ResponseCode.SYSTEM_BUSY or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert code == ResponseCode.SUCCESS
    assert broker.wait_for_log("answering SYSTEM_BUSY")
    broker.stop_cleanly()
