"""Random and mutated frames at real `rmq namesrv` and `rmq broker` processes.

The seeds are real: the frames rmq's client API sends (route and cluster queries, topic
creation, a send, a pull, a heartbeat, offset calls, a key query), recorded by a proxy in
front of each server.  Each case opens a connection, writes a mutant (or random bytes), waits
briefly for an answer when the bytes hold a whole two-way request, then half-closes and reads
until the server closes.  The server must answer only with whole response frames and close
the connection within the deadline; afterwards it still answers a good request on a
connection of its own, it holds no more sockets than before (every fuzz connection is gone;
sockets, as mutated sends may open new queue files) and its anonymous memory (RssAnon) has
not grown past a bound.  At least some cases must have been answered: the mutants get
past the framing.

A short run in `make test` (400 cases per server); 50,000 per server under `make stress`.
"""

from __future__ import annotations

import asyncio
import contextlib
import select
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest
from hypothesis import strategies as st

from rmq.client.api import brokeradmin, group, lookup, namesrv, pull, send
from rmq.client.errors import RouteNotFound
from rmq.remoting.bodies import (
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    HeartbeatData,
    MessageModel,
    MessageQueue,
    ProducerData,
    SubscriptionData,
    TopicConfig,
)
from rmq.remoting.client import RemotingClient
from rmq.remoting.codes import RequestCode
from rmq.remoting.errors import RemotingProtocolError
from rmq.remoting.frame import FrameSplitter, decode_frame
from tests.fuzzing import budgets, fuzz, mutated_frames
from tests.procs import (
    LOOPBACK,
    RemotingSession,
    RmqProcess,
    RmqProcesses,
    pull_header,
    send_header,
)

CASES = budgets(400, 50_000)
TOPIC = "FuzzSeedTopic"
ANSWER_WINDOW = 1.0
"""How long a case waits for the first answer to a whole two-way request."""
CLOSE_DEADLINE = 20.0
"""A server that has not closed a half-closed connection by then hangs."""
RSS_GROWTH_LIMIT = 48 << 20
SERVER_REQUESTS = {
    RequestCode.NOTIFY_CONSUMER_IDS_CHANGED,
    RequestCode.CHECK_TRANSACTION_STATE,
    RequestCode.RESET_CONSUMER_CLIENT_OFFSET,
    RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT,
    RequestCode.GET_CONSUMER_RUNNING_INFO,
    RequestCode.CONSUME_MESSAGE_DIRECTLY,
}
"""The requests a broker sends its clients (a fuzz case may look like a client to it)."""


class RecordingProxy:
    """A TCP proxy to `target` that keeps every byte the clients sent."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.sent = bytearray()
        self._listener = socket.create_server((LOOPBACK, 0))
        self.addr = f"{LOOPBACK}:{self._listener.getsockname()[1]}"
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.target)
            threading.Thread(target=self._pump, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, False), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, record: bool) -> None:
        try:
            while data := source.recv(65536):
                if record:
                    with self._lock:
                        self.sent += data
                sink.sendall(data)
        except OSError:
            pass
        finally:
            source.close()
            sink.close()

    def frames(self) -> list[bytes]:
        """The recorded requests, each with its length prefix."""
        with self._lock:
            data = bytes(self.sent)
        return [struct.pack(">i", len(raw)) + bytes(raw) for raw in FrameSplitter().feed(data)]

    def close(self) -> None:
        self._listener.close()


async def _client_requests(namesrv_addr: str, broker_addr: str, broker_name: str) -> None:
    """Drive rmq's client API once through the proxies."""
    timeout = 10.0
    queue = MessageQueue(topic=TOPIC, broker_name=broker_name, queue_id=0)
    async with RemotingClient() as client:
        await brokeradmin.update_and_create_topic(
            client, broker_addr, TopicConfig(topic_name=TOPIC, read_queue_nums=2), timeout
        )
        await namesrv.get_broker_cluster_info(client, namesrv_addr, timeout)
        await namesrv.get_all_topic_list(client, namesrv_addr, timeout)
        with contextlib.suppress(RouteNotFound):  # recorded all the same
            await namesrv.get_topic_route(client, namesrv_addr, TOPIC, timeout)
        header = send_header(TOPIC, {"KEYS": "fuzz-key", "TAGS": "seed"})
        request = send.send_request(header, b"seed body")
        await send.send_message(client, broker_addr, queue, request, timeout, msg_id="seed")
        consumer = ConsumerData(
            group_name="FuzzGroup",
            consume_type=ConsumeType.CONSUME_ACTIVELY,
            message_model=MessageModel.CLUSTERING,
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_MIN_OFFSET,
            subscription_data_set=[SubscriptionData(topic=TOPIC, sub_string="*")],
        )
        heartbeat = HeartbeatData(
            client_id="127.0.0.1@fuzz",
            producer_data_set=[ProducerData(group_name="FuzzProducers")],
            consumer_data_set=[consumer],
        )
        await group.send_heartbeat(client, broker_addr, heartbeat, timeout)
        await pull.pull_message(client, broker_addr, pull_header(TOPIC, "FuzzGroup"), timeout)
        await pull.update_consumer_offset(client, broker_addr, "FuzzGroup", queue, 1, timeout)
        await pull.query_consumer_offset(client, broker_addr, "FuzzGroup", queue, timeout)
        await pull.get_max_offset(client, broker_addr, queue, timeout)
        now = int(time.time() * 1000)
        await lookup.query_message(client, broker_addr, TOPIC, "fuzz-key", 8, 0, now, timeout)


@dataclass
class Target:
    process: RmqProcess
    seeds: list[bytes]
    good_request: Callable[[RemotingSession], bool]
    answered: int = 0
    cases: int = 0
    seen: set[int] = field(default_factory=set)


@dataclass
class Servers:
    namesrv: Target
    broker: Target


@pytest.fixture(scope="module")
def servers(module_processes: RmqProcesses) -> Iterator[Servers]:
    name_server = module_processes.start_namesrv("fuzz-namesrv")
    broker = module_processes.start_broker("fuzz-broker", namesrv=name_server)
    proxies = [RecordingProxy((LOOPBACK, process.port)) for process in (name_server, broker)]
    try:
        asyncio.run(_client_requests(proxies[0].addr, proxies[1].addr, "fuzz-broker"))
    finally:
        for proxy in proxies:
            proxy.close()

    def cluster_info(session: RemotingSession) -> bool:
        response = session.invoke(name_server.addr, RequestCode.GET_BROKER_CLUSTER_INFO)
        return response.code == 0 and b"fuzz-broker" in bytes(response.body or b"")

    def heartbeat(session: RemotingSession) -> bool:
        heartbeat = HeartbeatData(client_id="127.0.0.1@good")
        response = session.invoke(broker.addr, RequestCode.HEART_BEAT, body=heartbeat.encode())
        return response.code == 0

    yield Servers(
        Target(name_server, proxies[0].frames(), cluster_info),
        Target(broker, proxies[1].frames(), heartbeat),
    )


def _awaits_answer(data: bytes) -> bool:
    """Whether `data` holds a whole, decodable two-way request (which the server answers)."""
    try:
        for raw in FrameSplitter().feed(data):
            command = decode_frame(raw)
            if not command.is_response and not command.is_oneway:
                return True
    except RemotingProtocolError:
        pass
    return False


def _send_case(target: Target, data: bytes) -> None:
    with socket.create_connection((LOOPBACK, target.process.port), timeout=CLOSE_DEADLINE) as sock:
        try:
            sock.sendall(data)
            if _awaits_answer(data):
                select.select([sock], [], [], ANSWER_WINDOW)
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the server closed first: allowed
        received = bytearray()
        deadline = time.monotonic() + CLOSE_DEADLINE
        while True:
            assert time.monotonic() < deadline, "the server did not close the connection"
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                break
            except TimeoutError:
                raise AssertionError("the server did not close the connection") from None
            if not chunk:
                break
            received += chunk
    splitter = FrameSplitter(max_frame_size=1 << 26)
    responses = [decode_frame(raw) for raw in splitter.feed(bytes(received))]
    assert splitter.pending_bytes == 0, "the server sent a partial frame"
    requests = [command.code for command in responses if not command.is_response]
    assert set(requests) <= SERVER_REQUESTS, requests
    target.cases += 1
    if len(requests) < len(responses):
        target.answered += 1
        target.seen.update(command.code for command in responses if command.is_response)
    assert target.process.running, target.process.log_tail()


def _fuzz_server(target: Target, cases: int) -> None:
    assert len(target.seeds) >= 2, "no client frames were recorded"
    process = target.process
    with RemotingSession(timeout=10.0) as session:
        assert target.good_request(session)
        warm_up = st.sampled_from(target.seeds) | mutated_frames(target.seeds)
        fuzz(warm_up, lambda data: _send_case(target, data), 20)
        assert target.good_request(session)
        files_before, rss_before = process.open_files("socket:"), process.rss_anon()
        cases_of = mutated_frames(target.seeds) | st.binary(max_size=256)
        fuzz(cases_of, lambda data: _send_case(target, data), cases)
        assert target.good_request(session)
        deadline = time.monotonic() + 20
        while process.open_files("socket:") > files_before and time.monotonic() < deadline:
            time.sleep(0.05)
        assert process.open_files("socket:") <= files_before, "fuzz connections left open"
        growth = process.rss_anon() - rss_before
        assert growth < RSS_GROWTH_LIMIT, f"RssAnon grew by {growth >> 20} MiB"
    assert target.answered >= target.cases // 10, (target.answered, target.cases)
    assert target.seen - {0}, "no mutant was answered with an error"


@pytest.mark.parametrize("cases", CASES)
def test_name_server_survives_mutated_frames(servers: Servers, cases: int) -> None:
    _fuzz_server(servers.namesrv, cases)


@pytest.mark.parametrize("cases", CASES)
def test_broker_survives_mutated_frames(servers: Servers, cases: int) -> None:
    _fuzz_server(servers.broker, cases)
