"""`rmq standalone`: name server and broker in one process, answering both roles."""

from __future__ import annotations

import time

from rmq.common import fastjson
from rmq.remoting.bodies import TopicRouteData
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.headers import CreateTopicRequestHeader, GetRouteInfoRequestHeader
from tests.procs import RemotingSession, RmqProcesses, registered_brokers


def test_standalone_serves_both_roles_and_stops_cleanly(rmq_processes: RmqProcesses) -> None:
    process = rmq_processes.start_standalone()
    store = process.home / "store"

    assert registered_brokers(process.namesrv_addr) == {0: process.addr}
    assert (
        f"rmq standalone is ready: name server {process.namesrv_addr}, broker {process.addr}"
        in process.log_text()
    )
    with RemotingSession() as session:
        header = CreateTopicRequestHeader(
            topic="StandaloneTopic",
            default_topic="TBW102",
            read_queue_nums=2,
            write_queue_nums=2,
            perm=6,
            topic_filter_type="SINGLE_TAG",
        )
        created = session.invoke(process.addr, RequestCode.UPDATE_AND_CREATE_TOPIC, header)
        assert created.code == ResponseCode.SUCCESS
        deadline = time.monotonic() + 10
        while True:
            response = session.invoke(
                process.namesrv_addr,
                RequestCode.GET_ROUTEINFO_BY_TOPIC,
                GetRouteInfoRequestHeader(topic="StandaloneTopic"),
            )
            if response.code == ResponseCode.SUCCESS:
                break
            assert time.monotonic() < deadline, response.remark
            time.sleep(0.05)
        route = TopicRouteData.decode(response.body or b"")
        assert route.broker_datas[0].broker_addrs == {0: process.addr}
        runtime = session.invoke(process.addr, RequestCode.GET_BROKER_RUNTIME_INFO)
        assert "bootTimestamp" in fastjson.loads(runtime.body or b"")["table"]
    assert (store / "abort").exists()

    process.stop_cleanly()

    assert not (store / "abort").exists()
    assert "StandaloneTopic" in (store / "config" / "topics.json").read_text()
    log = process.log_text()
    assert log.index("unregister broker OK") < log.index("the name server stopped")


def test_standalone_store_option(rmq_processes: RmqProcesses) -> None:
    store = rmq_processes.root / "elsewhere"
    process = rmq_processes.start_standalone("standalone-store", args=["--store", str(store)])
    assert (store / "lock").exists()
    assert not (process.home / "store").exists()
    process.stop_cleanly()
    assert not (store / "abort").exists()
