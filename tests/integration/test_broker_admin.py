"""`rmq broker` as a real process next to a real `rmq namesrv`, driven over sockets.

Admin requests as mqadmin sends them (topic create -> route on the name server, topic stats,
runtime info, broker config get/update), the command line (`-p`, `-m`, bad settings, a port
in use, a store in use) and a clean SIGTERM: exit 0, unregistered, `abort` gone, store lock
free for the next broker.
"""

from __future__ import annotations

import fcntl
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from rmq.common import fastjson, javaprops
from rmq.remoting.bodies import TopicRouteData
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.headers import (
    CreateTopicRequestHeader,
    GetRouteInfoRequestHeader,
    GetTopicStatsInfoRequestHeader,
)
from tests.cli_forkserver import run as cli_run
from tests.procs import (
    LOOPBACK,
    RemotingSession,
    RmqProcess,
    RmqProcesses,
    registered_brokers,
    rmq_command,
    write_properties,
)

RUNTIME_KEYS_SAMPLE = {
    "brokerVersionDesc",
    "msgPutTotalTodayNow",
    "putTps",
    "commitLogMaxOffset",
    "bootTimestamp",
    "runtime",
    "earliestMessageTimeStamp",
}


def wait_for_route(session: RemotingSession, namesrv: RmqProcess, topic: str) -> TopicRouteData:
    deadline = time.monotonic() + 10
    while True:
        response = session.invoke(
            namesrv.addr, RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic=topic)
        )
        if response.code == ResponseCode.SUCCESS:
            return TopicRouteData.decode(response.body or b"{}")
        assert time.monotonic() < deadline, f"no route for {topic}: {response.remark}"
        time.sleep(0.05)


def create_topic(session: RemotingSession, broker: RmqProcess, topic: str, queues: int) -> None:
    header = CreateTopicRequestHeader(
        topic=topic,
        default_topic="TBW102",
        read_queue_nums=queues,
        write_queue_nums=queues,
        perm=6,
        topic_filter_type="SINGLE_TAG",
    )
    response = session.invoke(broker.addr, RequestCode.UPDATE_AND_CREATE_TOPIC, header)
    assert response.code == ResponseCode.SUCCESS, response


def test_admin_requests_over_the_wire(rmq_processes: RmqProcesses, namesrv: RmqProcess) -> None:
    broker = rmq_processes.start_broker("admin-broker", namesrv=namesrv, props={"extraKey": "x"})
    with RemotingSession() as session:
        create_topic(session, broker, "AdminTopic", queues=3)
        route = wait_for_route(session, namesrv, "AdminTopic")
        assert [(q.broker_name, q.write_queue_nums) for q in route.queue_datas] == [
            ("admin-broker", 3)
        ]
        assert route.broker_datas[0].broker_addrs == {0: broker.addr}

        stats = session.invoke(
            broker.addr,
            RequestCode.GET_TOPIC_STATS_INFO,
            GetTopicStatsInfoRequestHeader(topic="AdminTopic"),
        )
        table = fastjson.loads(stats.body or b"")["offsetTable"]
        assert sorted(key["queueId"] for key in table) == [0, 1, 2]
        assert all(value["maxOffset"] == 0 for value in table.values())

        runtime = session.invoke(broker.addr, RequestCode.GET_BROKER_RUNTIME_INFO)
        info = fastjson.loads(runtime.body or b"")["table"]
        assert RUNTIME_KEYS_SAMPLE - set(info) == set()
        assert info["brokerVersionDesc"] == "V4_9_8"

        config = session.invoke(broker.addr, RequestCode.GET_BROKER_CONFIG)
        settings = javaprops.loads(bytes(config.body or b"").decode())
        assert settings["brokerName"] == "admin-broker"
        assert settings["extraKey"] == "x"

        update = session.invoke(
            broker.addr, RequestCode.UPDATE_BROKER_CONFIG, body=b"defaultTopicQueueNums=3\n"
        )
        assert update.code == ResponseCode.SUCCESS
        config = session.invoke(broker.addr, RequestCode.GET_BROKER_CONFIG)
        assert javaprops.loads(bytes(config.body or b"").decode())["defaultTopicQueueNums"] == "3"

        unknown = session.invoke(broker.addr, 4242)
        assert (unknown.code, unknown.remark) == (
            ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
            " request type 4242 not supported",
        )
    written = javaprops.loads((rmq_processes.root / "admin-broker.conf").read_text())
    assert written["defaultTopicQueueNums"] == "3"
    assert written["extraKey"] == "x"
    broker.stop_cleanly()


def lock_is_free(store: Path) -> bool:
    fd = os.open(store / "lock", os.O_RDWR)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)
    except OSError:
        return False
    finally:
        os.close(fd)
    return True


def test_sigterm_unregisters_flushes_and_frees_the_store(
    rmq_processes: RmqProcesses, namesrv: RmqProcess
) -> None:
    broker = rmq_processes.start_broker("stopping-broker", namesrv=namesrv)
    store = broker.home / "store"
    assert (store / "abort").exists()
    assert not lock_is_free(store)
    with RemotingSession() as session:
        create_topic(session, broker, "Persisted", queues=2)

    broker.stop_cleanly()

    assert broker.addr not in registered_brokers(namesrv.addr).values()
    assert not (store / "abort").exists()
    assert lock_is_free(store)
    topics = fastjson.loads((store / "config" / "topics.json").read_text())
    assert "Persisted" in topics["topicConfigTable"]
    assert "the broker[stopping-broker" in broker.log_text()

    restarted = rmq_processes.restart_broker(broker, namesrv)
    assert "abnormal recovery" not in restarted.log_text()
    with RemotingSession() as session:
        route = wait_for_route(session, namesrv, "Persisted")
    assert route.queue_datas[0].write_queue_nums == 2
    restarted.stop_cleanly()


def run_rmq(args: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    return cli_run(
        rmq_command(args),
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "HOME": str(home)},
    )


def test_print_config_and_exit(tmp_path: Path) -> None:
    conf = write_properties(tmp_path / "b.conf", {"brokerName": "printed", "listenPort": 12345})
    result = run_rmq(["broker", "-c", str(conf), "-n", "10.0.0.1:9876", "-p"], tmp_path)
    assert result.returncode == 0, result.stderr
    printed = dict(line.split("=", 1) for line in result.stdout.splitlines())
    assert printed["brokerName"] == "printed"
    assert printed["listenPort"] == "12345"
    assert printed["haListenPort"] == "12346"
    assert printed["namesrvAddr"] == "10.0.0.1:9876"
    assert printed["storePathRootDir"] == str(tmp_path / "store")
    assert not (tmp_path / "store").exists()

    important = run_rmq(["broker", "-c", str(conf), "-m"], tmp_path)
    assert important.returncode == 0, important.stderr
    keys = {line.split("=", 1)[0] for line in important.stdout.splitlines()}
    assert {"brokerName", "brokerClusterName", "flushDiskType", "storePathRootDir"} <= keys
    assert "listenPort" not in keys
    assert "clientWorkerThreads" not in keys


def test_bad_settings_stop_the_start(tmp_path: Path) -> None:
    conf = write_properties(tmp_path / "b.conf", {"listenPort": "abc"})
    result = run_rmq(["broker", "-c", str(conf)], tmp_path)
    assert result.returncode == 2
    assert "listenPort='abc'" in result.stderr

    result = run_rmq(["broker", "-n", "nonsense"], tmp_path)
    assert result.returncode == 2
    assert "namesrvAddr" in result.stderr


def test_a_port_in_use_and_a_locked_store_are_errors(
    rmq_processes: RmqProcesses, tmp_path: Path
) -> None:
    with socket.socket() as taken:
        taken.bind((LOOPBACK, 0))
        taken.listen()
        port = taken.getsockname()[1]
        conf = write_properties(
            tmp_path / "b.conf",
            {"bindAddress": LOOPBACK, "listenPort": port, "storePathRootDir": tmp_path / "s1"},
        )
        result = run_rmq(["broker", "-c", str(conf)], tmp_path)
    assert result.returncode == 1
    assert f"cannot listen on {LOOPBACK}:{port}" in result.stderr
    assert not (tmp_path / "s1" / "abort").exists()

    first = rmq_processes.start_broker("lock-holder", namesrv=None)
    result = run_rmq(["broker", "--store", str(first.home / "store"), "--port", "3"], tmp_path)
    assert result.returncode == 1
    assert "locked by another process" in result.stderr
    first.stop_cleanly()


def test_ctrl_c_stops_cleanly_with_130(rmq_processes: RmqProcesses) -> None:
    broker = rmq_processes.start_broker("interrupted-broker", namesrv=None)
    broker.popen.send_signal(signal.SIGINT)
    assert broker.popen.wait(15) == 130
    assert not (broker.home / "store" / "abort").exists()
