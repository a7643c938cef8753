"""The Apache C++ client (PyPI wheel rocketmq 0.4.4) against `rmq namesrv`."""

from __future__ import annotations

import json
import re
import socket
import threading

import pytest

from rmq.remoting.codes import RequestCode
from rmq.remoting.headers import RegisterBrokerRequestHeader
from tests.interop.cpp_client import run_cpp, unique_name
from tests.procs import RemotingSession, RmqProcesses

pytestmark = pytest.mark.interop

SEND_TIMEOUT_MS = 20_000


def route_misses(log: str) -> list[str]:
    """Topics of the GET_ROUTEINFO_BY_TOPIC requests the name server answered TOPIC_NOT_EXIST."""
    return re.findall(r"GET_ROUTEINFO_BY_TOPIC topic=(\S+) from \S+ -> TOPIC_NOT_EXIST", log)


def test_producer_without_broker_fails_fast_with_no_route(rmq_processes: RmqProcesses) -> None:
    namesrv = rmq_processes.start_namesrv(debug=True)
    topic = unique_name("NoRoute")
    run = run_cpp(
        "produce",
        {
            "namesrv": namesrv.addr,
            "topic": topic,
            "messages": [{"body": "hello", "tags": "TagA", "keys": "k1"}],
            "send_timeout_ms": SEND_TIMEOUT_MS,
        },
        timeout=60,
    )
    [result] = run.result["results"]
    assert not result["ok"], result
    assert result["error_type"] == "ProducerSendSyncFailed"
    assert f"No route info of this topic: {topic}" in result["error"]
    assert result["elapsed"] < SEND_TIMEOUT_MS / 1000 / 4, "failed by timeout, not by no-route"

    misses = route_misses(namesrv.log_text())
    assert topic in misses
    assert "TBW102" in misses  # the client falls back to the auto-create template topic
    namesrv.stop_cleanly()


class FakeBrokerPort:
    """A listening socket that counts the connections made to it and closes them at once."""

    def __init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.socket.settimeout(0.1)
        self.addr = f"127.0.0.1:{self.socket.getsockname()[1]}"
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self.socket.accept()
            except TimeoutError:
                continue
            self.connections += 1
            connection.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.socket.close()


def test_producer_follows_the_route_to_the_broker(rmq_processes: RmqProcesses) -> None:
    """The C++ client (version 63) gets fastjson's bare-integer-key route JSON and goes to the
    broker address it names (where nothing answers, so the send still fails)."""
    namesrv = rmq_processes.start_namesrv(debug=True)
    topic = unique_name("Routed")
    broker = FakeBrokerPort()
    try:
        with RemotingSession() as broker_link:
            header = RegisterBrokerRequestHeader(
                broker_name="broker-cpp",
                broker_addr=broker.addr,
                cluster_name="DefaultCluster",
                ha_server_addr="127.0.0.1:1",
                broker_id=0,
            )
            table = {
                topic: {"perm": 6, "readQueueNums": 2, "topicName": topic, "writeQueueNums": 2}
            }
            wrapper = {"dataVersion": {"counter": 1, "timestamp": 1}, "topicConfigTable": table}
            body = json.dumps(
                {"filterServerList": [], "topicConfigSerializeWrapper": wrapper}
            ).encode()
            registered = broker_link.invoke(
                namesrv.addr, RequestCode.REGISTER_BROKER, header, body=body
            )
            assert registered.code == 0
            run = run_cpp(
                "produce",
                {
                    "namesrv": namesrv.addr,
                    "topic": topic,
                    "messages": [{"body": "hello"}],
                    "send_timeout_ms": 1000,
                },
                timeout=60,
            )
    finally:
        broker.close()
    [result] = run.result["results"]
    assert not result["ok"], "nothing answers on the broker port"
    assert broker.connections >= 1
    assert topic not in route_misses(namesrv.log_text())
    namesrv.stop_cleanly()


def test_push_consumer_without_broker_asks_for_its_routes_and_gets_nothing(
    rmq_processes: RmqProcesses,
) -> None:
    namesrv = rmq_processes.start_namesrv(debug=True)
    topic, group = unique_name("NoRouteSub"), unique_name("GID_sub")
    run = run_cpp(
        "consume",
        {"namesrv": namesrv.addr, "topic": topic, "group": group, "count": 1, "max_wait": 2},
        timeout=60,
    )
    assert run.result["messages"] == []
    misses = route_misses(namesrv.log_text())
    assert topic in misses
    assert f"%RETRY%{group}" in misses
    namesrv.stop_cleanly()
