"""`rmq namesrv` as a real process, driven over sockets with rmq's RemotingClient.

Most tests share one name server; each test registers brokers over its own connection, and
closing that connection (the end of the `session` fixture) drops them again, so tests do not
see each other's brokers.  Broker expiry, restarts and settings get name servers of their own.
Request bodies are built here from the spec's layouts (plain JSON, struct + zlib), not with
rmq's encoders.
"""

from __future__ import annotations

import itertools
import json
import struct
import subprocess
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from rmq.common import fastjson, javaprops
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand
from rmq.remoting.headers import (
    AddWritePermOfBrokerRequestHeader,
    DeleteKVConfigRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    GetKVConfigRequestHeader,
    GetKVListByNamespaceRequestHeader,
    GetRouteInfoRequestHeader,
    GetTopicsByClusterRequestHeader,
    PutKVConfigRequestHeader,
    QueryDataVersionRequestHeader,
    RegisterBrokerRequestHeader,
    UnRegisterBrokerRequestHeader,
    WipeWritePermOfBrokerRequestHeader,
)
from tests.cli_forkserver import run as cli_run
from tests.procs import RemotingSession, RmqProcess, RmqProcesses, rmq_command, unique

FAQ_HINT = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."
TIMESTAMP = 1_700_000_000_000
_hosts = itertools.count(1)


def topic_config(
    name: str, read: int = 4, write: int = 4, perm: int = 6, sys_flag: int = 0
) -> dict[str, Any]:
    return {
        "order": False,
        "perm": perm,
        "readQueueNums": read,
        "topicFilterType": "SINGLE_TAG",
        "topicName": name,
        "topicSysFlag": sys_flag,
        "writeQueueNums": write,
    }


def topic_wrapper(topics: Sequence[dict[str, Any]], counter: int) -> dict[str, Any]:
    return {
        "dataVersion": {"counter": counter, "timestamp": TIMESTAMP},
        "topicConfigTable": {t["topicName"]: t for t in topics},
    }


def json_register_body(
    topics: Sequence[dict[str, Any]], counter: int = 1, filter_servers: Sequence[str] = ()
) -> bytes:
    body = {
        "filterServerList": list(filter_servers),
        "topicConfigSerializeWrapper": topic_wrapper(topics, counter),
    }
    return json.dumps(body).encode()


def compressed_register_body(topics: Sequence[dict[str, Any]], counter: int = 1) -> bytes:
    """Spec §2.5: zlib of [len][DataVersion JSON][count]([len][topic text])*[len][filters]."""

    def block(data: bytes) -> bytes:
        return struct.pack(">i", len(data)) + data

    raw = block(json.dumps({"counter": counter, "timestamp": TIMESTAMP}).encode())
    raw += struct.pack(">i", len(topics))
    for t in topics:
        text = (
            f"{t['topicName']} {t['readQueueNums']} {t['writeQueueNums']} {t['perm']} "
            f"{t['topicFilterType']}"
        )
        raw += block(text.encode())
    raw += block(b"[]")
    return zlib.compress(raw, 9)


class Broker:
    """A broker identity registering with the name server over one session."""

    def __init__(
        self,
        session: RemotingSession,
        namesrv: str,
        name: str | None = None,
        *,
        cluster: str = "DefaultCluster",
        broker_id: int = 0,
        host_port: str | None = None,
    ) -> None:
        self.session = session
        self.namesrv = namesrv
        self.name = name or unique("broker")
        self.cluster = cluster
        self.broker_id = broker_id
        if host_port is None:
            n = next(_hosts)
            host_port = f"10.77.{n // 256}.{n % 256}:10911"
        self.addr = host_port
        self.ha_addr = host_port.replace(":10911", ":10912")

    def register(
        self,
        topics: Sequence[dict[str, Any]] = (),
        *,
        counter: int = 1,
        body: bytes | None = None,
        compressed: bool = False,
        crc32: int = 0,
        version: int | None = None,
    ) -> RemotingCommand:
        header = RegisterBrokerRequestHeader(
            broker_name=self.name,
            broker_addr=self.addr,
            cluster_name=self.cluster,
            ha_server_addr=self.ha_addr,
            broker_id=self.broker_id,
            compressed=compressed,
            body_crc32=crc32,
        )
        if body is None:
            body = json_register_body(topics, counter)
        response = self.session.invoke(
            self.namesrv, RequestCode.REGISTER_BROKER, header, body=body, version=version
        )
        return response

    def unregister(self) -> RemotingCommand:
        header = UnRegisterBrokerRequestHeader(
            broker_name=self.name,
            broker_addr=self.addr,
            cluster_name=self.cluster,
            broker_id=self.broker_id,
        )
        return self.session.invoke(self.namesrv, RequestCode.UNREGISTER_BROKER, header)

    def query_data_version(self, counter: int) -> RemotingCommand:
        header = QueryDataVersionRequestHeader(
            broker_name=self.name,
            broker_addr=self.addr,
            cluster_name=self.cluster,
            broker_id=self.broker_id,
        )
        body = json.dumps({"counter": counter, "timestamp": TIMESTAMP}).encode()
        return self.session.invoke(self.namesrv, RequestCode.QUERY_DATA_VERSION, header, body=body)


def route(
    session: RemotingSession,
    namesrv: str,
    topic: str,
    *,
    version: int | None = None,
    standard_only: bool | None = None,
) -> RemotingCommand:
    header = GetRouteInfoRequestHeader(topic=topic, accept_standard_json_only=standard_only)
    return session.invoke(namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC, header, version=version)


def body_of(response: RemotingCommand) -> Any:
    assert response.code == ResponseCode.SUCCESS, response
    assert response.body is not None
    return fastjson.loads(bytes(response.body))


def cluster_info(session: RemotingSession, namesrv: str) -> Any:
    return body_of(session.invoke(namesrv, RequestCode.GET_BROKER_CLUSTER_INFO))


def topic_list(session: RemotingSession, namesrv: str, code: int, header: object = None) -> Any:
    return body_of(session.invoke(namesrv, code, header))


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} within {timeout}s")
        time.sleep(0.05)


def has_route(session: RemotingSession, namesrv: str, topic: str) -> bool:
    return route(session, namesrv, topic).code == ResponseCode.SUCCESS


@pytest.fixture
def session() -> Iterator[RemotingSession]:
    with RemotingSession() as remoting:
        yield remoting


# -- routes ------------------------------------------------------------------------------


def test_unknown_topic_is_topic_not_exist_with_the_faq_hint(
    namesrv: RmqProcess, session: RemotingSession
) -> None:
    response = route(session, namesrv.addr, "NoSuchTopic")
    assert response.code == ResponseCode.TOPIC_NOT_EXIST
    assert response.remark == (
        "No topic route info in name server for the topic: NoSuchTopic" + FAQ_HINT
    )
    assert not response.body


def test_route_of_a_master_in_both_json_variants(
    namesrv: RmqProcess, session: RemotingSession
) -> None:
    broker = Broker(session, namesrv.addr, "broker-é", host_port="127.0.0.1:10911")
    topic = unique("Route")
    response = broker.register([topic_config(topic, read=8, write=4, perm=6, sys_flag=0)])
    assert response.code == ResponseCode.SUCCESS
    assert not response.body  # no ORDER_TOPIC_CONFIG namespace on this name server

    # Clients before 4.9.4 get fastjson's default form: bare integer keys, raw UTF-8.
    old = route(session, namesrv.addr, topic, version=333)
    assert (
        bytes(old.body or b"")
        == (
            '{"brokerDatas":[{"brokerAddrs":{0:"127.0.0.1:10911"},"brokerName":"broker-é",'
            '"cluster":"DefaultCluster"}],"filterServerTable":{},"queueDatas":[{"brokerName":'
            '"broker-é","perm":6,"readQueueNums":8,"topicSysFlag":0,"writeQueueNums":4}]}'
        ).encode()
    )

    standard = (
        b'{"brokerDatas":[{"brokerAddrs":{"0":"127.0.0.1:10911"},"brokerName":"broker-\\u00E9",'
        b'"cluster":"DefaultCluster"}],"filterServerTable":{},"queueDatas":[{"brokerName":'
        b'"broker-\\u00E9","perm":6,"readQueueNums":8,"topicSysFlag":0,"writeQueueNums":4}]}'
    )
    assert bytes(route(session, namesrv.addr, topic, version=401).body or b"") == standard
    assert bytes(route(session, namesrv.addr, topic).body or b"") == standard
    asked = route(session, namesrv.addr, topic, version=121, standard_only=True)
    assert bytes(asked.body or b"") == standard


def test_slave_learns_its_master_and_adds_only_its_address(
    namesrv: RmqProcess, session: RemotingSession
) -> None:
    master = Broker(session, namesrv.addr)
    slave = Broker(session, namesrv.addr, master.name, broker_id=1)
    topic, slave_topic = unique("T"), unique("OnSlave")
    assert master.register([topic_config(topic)]).code == ResponseCode.SUCCESS

    response = slave.register([topic_config(slave_topic)])
    assert response.code == ResponseCode.SUCCESS
    assert response.ext_fields == {"masterAddr": master.addr, "haServerAddr": master.ha_addr}

    assert route(session, namesrv.addr, slave_topic).code == ResponseCode.TOPIC_NOT_EXIST
    brokers = body_of(route(session, namesrv.addr, topic))["brokerDatas"]
    assert brokers == [
        {
            "brokerAddrs": {"0": master.addr, "1": slave.addr},
            "brokerName": master.name,
            "cluster": "DefaultCluster",
        }
    ]


def test_master_response_has_no_master_address(
    namesrv: RmqProcess, session: RemotingSession
) -> None:
    response = Broker(session, namesrv.addr).register([topic_config(unique("T"))])
    assert response.code == ResponseCode.SUCCESS
    assert not response.ext_fields


def test_compressed_registration(namesrv: RmqProcess, session: RemotingSession) -> None:
    broker = Broker(session, namesrv.addr)
    topic = unique("Zipped")
    body = compressed_register_body([topic_config(topic, read=3, write=2, perm=4)])
    response = broker.register(body=body, compressed=True, crc32=zlib.crc32(body) & 0x7FFFFFFF)
    assert response.code == ResponseCode.SUCCESS, response.remark
    queues = body_of(route(session, namesrv.addr, topic))["queueDatas"]
    assert queues == [
        {
            "brokerName": broker.name,
            "perm": 4,
            "readQueueNums": 3,
            "topicSysFlag": 0,
            "writeQueueNums": 2,
        }
    ]


def test_body_crc32_mismatch_is_refused(namesrv: RmqProcess, session: RemotingSession) -> None:
    broker = Broker(session, namesrv.addr)
    topic = unique("Crc")
    body = json_register_body([topic_config(topic)])
    response = broker.register(body=body, crc32=(zlib.crc32(body) & 0x7FFFFFFF) ^ 1)
    assert (response.code, response.remark) == (ResponseCode.SYSTEM_ERROR, "crc32 not match")
    assert route(session, namesrv.addr, topic).code == ResponseCode.TOPIC_NOT_EXIST


def test_undecodable_body_is_a_system_error(namesrv: RmqProcess, session: RemotingSession) -> None:
    response = Broker(session, namesrv.addr).register(body=b"\x78\x9c garbage", compressed=True)
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert "Failed to decode RegisterBrokerBody" in (response.remark or "")


def test_topic_config_without_topic_name_refuses_the_registration(
    namesrv: RmqProcess, session: RemotingSession
) -> None:
    broker = Broker(session, namesrv.addr)
    named, nameless = unique("Named"), unique("Nameless")
    config = topic_config(nameless)
    del config["topicName"]
    body = {
        "filterServerList": [],
        "topicConfigSerializeWrapper": {
            "dataVersion": {"counter": 1, "timestamp": TIMESTAMP},
            "topicConfigTable": {named: topic_config(named), nameless: config},
        },
    }
    response = broker.register(body=json.dumps(body).encode())
    assert response.code == ResponseCode.SYSTEM_ERROR
    remark = response.remark or ""
    assert remark.startswith("Failed to decode RegisterBrokerBody")
    assert "<topicName> is missing" in remark
    assert broker.name not in cluster_info(session, namesrv.addr)["brokerAddrTable"]
    for topic in (named, nameless):
        assert not has_route(session, namesrv.addr, topic)


def test_compressed_body_inflating_past_64_mib_is_refused(
    namesrv: RmqProcess, session: RemotingSession
) -> None:
    deflater = zlib.compressobj(9)
    zeros = bytes(1 << 20)
    bomb = b"".join(deflater.compress(zeros) for _ in range(65)) + deflater.flush()
    response = Broker(session, namesrv.addr).register(body=bomb, compressed=True)
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert "inflates to more than 67108864 bytes" in (response.remark or "")


def test_brokers_before_3_0_11_send_a_bare_topic_config_wrapper(
    namesrv: RmqProcess, session: RemotingSession
) -> None:
    broker = Broker(session, namesrv.addr)
    topic = unique("Old")
    body = json.dumps(topic_wrapper([topic_config(topic, read=2, write=2)], 1)).encode()
    assert broker.register(body=body, version=36).code == ResponseCode.SUCCESS
    assert body_of(route(session, namesrv.addr, topic))["queueDatas"][0]["readQueueNums"] == 2


def test_queue_data_follows_the_data_version(namesrv: RmqProcess, session: RemotingSession) -> None:
    broker = Broker(session, namesrv.addr)
    topic = unique("Versioned")

    def perm() -> int:
        queues = body_of(route(session, namesrv.addr, topic))["queueDatas"]
        return int(queues[0]["perm"])

    broker.register([topic_config(topic, perm=6)], counter=1)
    broker.register([topic_config(topic, perm=4)], counter=1)
    assert perm() == 6
    broker.register([topic_config(topic, perm=4)], counter=2)
    assert perm() == 4

    unchanged = broker.query_data_version(counter=2)
    assert unchanged.ext_fields == {"changed": "false"}
    assert json.loads(bytes(unchanged.body or b"")) == {"counter": 2, "timestamp": TIMESTAMP}
    assert broker.query_data_version(counter=3).ext_fields == {"changed": "true"}

    stranger = Broker(session, namesrv.addr).query_data_version(counter=1)
    assert stranger.ext_fields == {"changed": "true"}
    assert not stranger.body


# -- brokers leaving -----------------------------------------------------------------------


def test_unregister_broker(namesrv: RmqProcess, session: RemotingSession) -> None:
    master = Broker(session, namesrv.addr)
    slave = Broker(session, namesrv.addr, master.name, broker_id=1)
    topic = unique("T")
    master.register([topic_config(topic)])
    slave.register()

    assert master.unregister().code == ResponseCode.SUCCESS
    brokers = body_of(route(session, namesrv.addr, topic))["brokerDatas"]
    assert brokers[0]["brokerAddrs"] == {"1": slave.addr}
    slave.unregister()
    assert route(session, namesrv.addr, topic).code == ResponseCode.TOPIC_NOT_EXIST
    clusters = cluster_info(session, namesrv.addr)
    assert master.name not in clusters["brokerAddrTable"]


def test_closing_the_broker_connection_drops_it_at_once(
    namesrv: RmqProcess, session: RemotingSession
) -> None:
    topic = unique("Conn")
    with RemotingSession() as broker_session:
        Broker(broker_session, namesrv.addr).register([topic_config(topic)])
        assert has_route(session, namesrv.addr, topic)
    wait_for(
        lambda: not has_route(session, namesrv.addr, topic), 3.0, "route still there after close"
    )


# -- cluster, permissions, topics --------------------------------------------------------


def test_cluster_info(namesrv: RmqProcess, session: RemotingSession) -> None:
    cluster = unique("Cluster")
    a = Broker(session, namesrv.addr, cluster=cluster)
    b = Broker(session, namesrv.addr, cluster=cluster)
    a_slave = Broker(session, namesrv.addr, a.name, cluster=cluster, broker_id=1)
    for broker in (a, b, a_slave):
        broker.register([topic_config(unique("T"))])

    info = cluster_info(session, namesrv.addr)
    assert sorted(info["clusterAddrTable"][cluster]) == sorted([a.name, b.name])
    assert info["brokerAddrTable"][a.name] == {
        "brokerAddrs": {0: a.addr, 1: a_slave.addr},
        "brokerName": a.name,
        "cluster": cluster,
    }


def test_wipe_and_add_write_perm(namesrv: RmqProcess, session: RemotingSession) -> None:
    broker = Broker(session, namesrv.addr)
    t1, t2 = unique("W1"), unique("W2")
    broker.register([topic_config(t1, perm=6), topic_config(t2, perm=7)])

    wiped = session.invoke(
        namesrv.addr,
        RequestCode.WIPE_WRITE_PERM_OF_BROKER,
        WipeWritePermOfBrokerRequestHeader(broker_name=broker.name),
    )
    assert wiped.ext_fields == {"wipeTopicCount": "2"}
    perms = [body_of(route(session, namesrv.addr, t))["queueDatas"][0]["perm"] for t in (t1, t2)]
    assert perms == [4, 5]

    added = session.invoke(
        namesrv.addr,
        RequestCode.ADD_WRITE_PERM_OF_BROKER,
        AddWritePermOfBrokerRequestHeader(broker_name=broker.name),
    )
    assert added.ext_fields == {"addTopicCount": "2"}
    perms = [body_of(route(session, namesrv.addr, t))["queueDatas"][0]["perm"] for t in (t1, t2)]
    assert perms == [6, 6]

    none = session.invoke(
        namesrv.addr,
        RequestCode.WIPE_WRITE_PERM_OF_BROKER,
        WipeWritePermOfBrokerRequestHeader(broker_name=unique("nobody")),
    )
    assert none.ext_fields == {"wipeTopicCount": "0"}


def test_delete_topic_in_one_cluster_or_everywhere(
    namesrv: RmqProcess, session: RemotingSession
) -> None:
    c1, c2 = unique("C1"), unique("C2")
    topic = unique("Del")
    a = Broker(session, namesrv.addr, cluster=c1)
    b = Broker(session, namesrv.addr, cluster=c2)
    for broker in (a, b):
        broker.register([topic_config(topic)])

    def delete(cluster: str | None) -> None:
        header = DeleteTopicFromNamesrvRequestHeader(topic=topic, cluster_name=cluster)
        response = session.invoke(namesrv.addr, RequestCode.DELETE_TOPIC_IN_NAMESRV, header)
        assert response.code == ResponseCode.SUCCESS

    delete(c1)
    queues = body_of(route(session, namesrv.addr, topic))["queueDatas"]
    assert [q["brokerName"] for q in queues] == [b.name]
    delete(None)
    assert route(session, namesrv.addr, topic).code == ResponseCode.TOPIC_NOT_EXIST


def test_topic_lists(namesrv: RmqProcess, session: RemotingSession) -> None:
    cluster, other_cluster = unique("Lists"), unique("Other")
    plain, unit, unit_sub, both, elsewhere = (
        unique(p) for p in ("Plain", "Unit", "UnitSub", "Both", "Elsewhere")
    )
    broker = Broker(session, namesrv.addr, cluster=cluster)
    other = Broker(session, namesrv.addr, cluster=other_cluster)
    broker.register(
        [
            topic_config(plain, sys_flag=0),
            topic_config(unit, sys_flag=1),
            topic_config(unit_sub, sys_flag=2),
            topic_config(both, sys_flag=3),
        ]
    )
    other.register([topic_config(elsewhere)])
    mine = {plain, unit, unit_sub, both, elsewhere}

    def listed(code: int, header: object = None) -> set[str]:
        return set(topic_list(session, namesrv.addr, code, header)["topicList"]) & mine

    assert listed(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER) == mine
    by_cluster = GetTopicsByClusterRequestHeader(cluster=cluster)
    assert listed(RequestCode.GET_TOPICS_BY_CLUSTER, by_cluster) == {plain, unit, unit_sub, both}
    nobody = GetTopicsByClusterRequestHeader(cluster=unique("none"))
    assert topic_list(session, namesrv.addr, RequestCode.GET_TOPICS_BY_CLUSTER, nobody) == {
        "topicList": []
    }
    assert listed(RequestCode.GET_UNIT_TOPIC_LIST) == {unit, both}
    assert listed(RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST) == {unit_sub, both}
    assert listed(RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST) == {unit_sub}

    system = topic_list(session, namesrv.addr, RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS)
    assert {cluster, other_cluster, broker.name, other.name} <= set(system["topicList"])
    assert isinstance(system["brokerAddr"], str) and system["brokerAddr"]


# -- KV config and the rest ----------------------------------------------------------------


def test_kv_config_requests(namesrv: RmqProcess, session: RemotingSession) -> None:
    ns = unique("ns")

    def put(key: str, value: str) -> None:
        header = PutKVConfigRequestHeader(namespace=ns, key=key, value=value)
        assert session.invoke(namesrv.addr, RequestCode.PUT_KV_CONFIG, header).code == 0

    def get(key: str) -> RemotingCommand:
        header = GetKVConfigRequestHeader(namespace=ns, key=key)
        return session.invoke(namesrv.addr, RequestCode.GET_KV_CONFIG, header)

    def listing() -> RemotingCommand:
        header = GetKVListByNamespaceRequestHeader(namespace=ns)
        return session.invoke(namesrv.addr, RequestCode.GET_KVLIST_BY_NAMESPACE, header)

    missing = listing()
    assert (missing.code, missing.remark) == (
        ResponseCode.QUERY_NOT_FOUND,
        f"No config item, Namespace: {ns}",
    )
    put("k1", "v1")
    put("k2", "v=2;x")
    assert get("k2").ext_fields == {"value": "v=2;x"}
    assert body_of(listing()) == {"table": {"k1": "v1", "k2": "v=2;x"}}

    header = DeleteKVConfigRequestHeader(namespace=ns, key="k1")
    assert session.invoke(namesrv.addr, RequestCode.DELETE_KV_CONFIG, header).code == 0
    gone = get("k1")
    assert (gone.code, gone.remark) == (
        ResponseCode.QUERY_NOT_FOUND,
        f"No config item, Namespace: {ns} Key: k1",
    )


def test_missing_required_header_field_is_a_system_error(
    namesrv: RmqProcess, session: RemotingSession
) -> None:
    response = session.invoke(namesrv.addr, RequestCode.GET_ROUTEINFO_BY_TOPIC)
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert "topic" in (response.remark or "")


def test_codes_the_name_server_does_not_serve_are_answered(
    namesrv: RmqProcess, session: RemotingSession
) -> None:
    response = session.invoke(namesrv.addr, RequestCode.SEND_MESSAGE)
    assert response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert response.remark == " request type 10 not supported"


# -- processes of their own ------------------------------------------------------------------


def test_brokers_expire_without_heartbeats(rmq_processes: RmqProcesses) -> None:
    ns = rmq_processes.start_namesrv(
        props={"scanNotActiveBrokerInterval": 250, "brokerChannelExpiredTime": 2000}
    )
    # Each broker has a connection of its own, as real brokers do: expiry closes it.
    with (
        RemotingSession() as silent_link,
        RemotingSession() as alive_link,
        RemotingSession() as session,
    ):
        silent, alive = Broker(silent_link, ns.addr), Broker(alive_link, ns.addr)
        silent_topic, alive_topic = unique("Silent"), unique("Alive")
        started = time.monotonic()
        silent.register([topic_config(silent_topic)])
        alive.register([topic_config(alive_topic)], counter=7)

        def silent_gone_while_alive_beats() -> bool:
            # An unchanged data version counts as a heartbeat.
            assert alive.query_data_version(counter=7).ext_fields == {"changed": "false"}
            return not has_route(session, ns.addr, silent_topic)

        wait_for(silent_gone_while_alive_beats, 5.0, "no expiry")
        assert time.monotonic() - started >= 2.0
        assert has_route(session, ns.addr, alive_topic)
        wait_for(lambda: not has_route(session, ns.addr, alive_topic), 5.0, "no expiry")
        info = cluster_info(session, ns.addr)
        assert info == {"brokerAddrTable": {}, "clusterAddrTable": {}}
    assert "The broker channel expired" in ns.log_text()
    ns.stop_cleanly()


def test_kv_config_survives_a_restart(rmq_processes: RmqProcesses) -> None:
    ns = rmq_processes.start_namesrv()
    with RemotingSession() as session:
        for key, value in (("k", "v"), ("gone", "x")):
            header = PutKVConfigRequestHeader(namespace="ns", key=key, value=value)
            session.invoke(ns.addr, RequestCode.PUT_KV_CONFIG, header)
        header_del = DeleteKVConfigRequestHeader(namespace="ns", key="gone")
        session.invoke(ns.addr, RequestCode.DELETE_KV_CONFIG, header_del)
    ns.stop_cleanly()
    kv_file = ns.home / "namesrv" / "kvConfig.json"
    assert kv_file.read_text(encoding="utf-8") == '{"configTable":{"ns":{"k":"v"}}}'

    restarted = rmq_processes.restart(ns)
    with RemotingSession() as session:
        header_list = GetKVListByNamespaceRequestHeader(namespace="ns")
        listing = session.invoke(restarted.addr, RequestCode.GET_KVLIST_BY_NAMESPACE, header_list)
        assert body_of(listing) == {"table": {"k": "v"}}
    restarted.stop_cleanly()


def test_namesrv_config_get_update_and_order_topics(rmq_processes: RmqProcesses) -> None:
    ns = rmq_processes.start_namesrv(props={"myOwnKey": "kept"})
    conf_path = rmq_processes.root / "namesrv.conf"
    with RemotingSession() as session:
        shown = javaprops.loads(
            bytes(session.invoke(ns.addr, RequestCode.GET_NAMESRV_CONFIG).body or b"").decode()
        )
        assert shown["listenPort"] == str(ns.port)
        assert shown["orderMessageEnable"] == "false"
        assert shown["configStorePath"] == str(conf_path)
        assert shown["brokerChannelExpiredTime"] == "120000"
        assert shown["myOwnKey"] == "kept"

        for refused in ("kvConfigPath=/tmp/x\n", "configStorePath=/tmp/x\n", "rocketmqHome=/x\n"):
            response = session.invoke(
                ns.addr, RequestCode.UPDATE_NAMESRV_CONFIG, body=refused.encode()
            )
            assert (response.code, response.remark) == (
                ResponseCode.NO_PERMISSION,
                "Can not update config in black list.",
            )

        unknown = b"orderMessageEnable=true\nmyOwnKey=changed\n"
        response = session.invoke(ns.addr, RequestCode.UPDATE_NAMESRV_CONFIG, body=unknown)
        assert (response.code, response.remark) == (
            ResponseCode.SYSTEM_ERROR,
            "unknown key myOwnKey: not a setting of rmq's name server (nothing was changed)",
        )
        update = b"orderMessageEnable=true\nlistenPort=0\n"
        response = session.invoke(ns.addr, RequestCode.UPDATE_NAMESRV_CONFIG, body=update)
        assert (response.code, response.remark) == (
            ResponseCode.SUCCESS,
            "listenPort takes effect after a restart",
        )
        persisted = javaprops.loads(conf_path.read_text(encoding="utf-8"))
        assert persisted["orderMessageEnable"] == "true"
        assert persisted["myOwnKey"] == "kept"
        assert persisted["listenPort"] == "0"
        # the saved port is the next start's: this one keeps its own
        conf_path.write_text(
            conf_path.read_text(encoding="utf-8").replace("listenPort=0", f"listenPort={ns.port}"),
            encoding="utf-8",
        )

        # With orderMessageEnable, routes carry the ORDER_TOPIC_CONFIG value of the topic,
        # and every registration answer carries the whole namespace.
        topic = unique("Ordered")
        put = PutKVConfigRequestHeader(
            namespace="ORDER_TOPIC_CONFIG", key=topic, value="broker-a:4"
        )
        session.invoke(ns.addr, RequestCode.PUT_KV_CONFIG, put)
        registered = Broker(session, ns.addr, "broker-a").register([topic_config(topic)])
        assert body_of(registered) == {"table": {topic: "broker-a:4"}}
        assert body_of(route(session, ns.addr, topic))["orderTopicConf"] == "broker-a:4"
    ns.stop_cleanly()

    restarted = rmq_processes.restart(ns)
    with RemotingSession() as session:
        shown = javaprops.loads(
            bytes(
                session.invoke(restarted.addr, RequestCode.GET_NAMESRV_CONFIG).body or b""
            ).decode()
        )
        assert shown["orderMessageEnable"] == "true"
    restarted.stop_cleanly()


# -- the command line ----------------------------------------------------------------------


def run_rmq(args: Sequence[str], home: str) -> subprocess.CompletedProcess[str]:
    return cli_run(
        rmq_command(args),
        capture_output=True,
        text=True,
        timeout=30,
        env={"HOME": home, "PATH": "/usr/bin:/bin"},
    )


def test_print_config_items_and_exit(rmq_processes: RmqProcesses) -> None:
    conf = rmq_processes.root / "p.conf"
    conf.write_text("listenPort=12345\norderMessageEnable=true\n", encoding="utf-8")
    done = run_rmq(["namesrv", "-c", str(conf), "-p"], str(rmq_processes.root))
    assert done.returncode == 0, done.stderr
    printed = javaprops.loads(done.stdout)
    assert printed["listenPort"] == "12345"
    assert printed["orderMessageEnable"] == "true"
    assert printed["scanNotActiveBrokerInterval"] == "10000"
    assert printed["kvConfigPath"] == str(rmq_processes.root / "namesrv" / "kvConfig.json")


def test_bad_config_value_exits_with_usage_error(rmq_processes: RmqProcesses) -> None:
    conf = rmq_processes.root / "bad.conf"
    conf.write_text("listenPort=not-a-port\n", encoding="utf-8")
    done = run_rmq(["namesrv", "-c", str(conf)], str(rmq_processes.root))
    assert done.returncode == 2
    assert "listenPort" in done.stderr and "Traceback" not in done.stderr


def test_port_in_use_exits_with_an_error(namesrv: RmqProcess, tmp_path: Path) -> None:
    done = run_rmq(["namesrv", "--host", "127.0.0.1", "--port", str(namesrv.port)], str(tmp_path))
    assert done.returncode == 1
    assert f"cannot listen on 127.0.0.1:{namesrv.port}" in done.stderr
