"""The admin API: how results are assembled from name server and broker answers, which
requests go where, and how failures are reported.

The pure helpers are checked on hand-built cluster info, routes and runtime tables; the
`AdminClient` scenarios run against scripted name servers and brokers (rmq's own remoting
server on loopback ports), so requests travel as real frames.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from rmq.client.admin import (
    AdminClient,
    AdminError,
    BrokerStatus,
    PlannedRequest,
    QueueStatus,
    TopicEntry,
    broker_status,
    cluster_members,
    clusters_of_route,
    master_addrs,
    merge_order_conf,
    plan_topic_deletion,
    plan_topic_update,
    topic_entries,
)
from rmq.client.errors import RouteNotFound
from rmq.remoting.bodies import (
    BrokerData,
    ClusterInfo,
    KVTable,
    MessageQueue,
    QueueData,
    TopicConfig,
    TopicList,
    TopicOffset,
    TopicRouteData,
    TopicStatsTable,
)
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, create_response
from rmq.remoting.connection import Connection
from rmq.remoting.errors import RemotingConnectError
from rmq.remoting.headers import (
    CreateTopicRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    DeleteTopicRequestHeader,
    GetKVConfigResponseHeader,
    GetRouteInfoRequestHeader,
    PutKVConfigRequestHeader,
)
from tests.procs import free_port
from tests.unit.client.fakes import LOOPBACK, FakeServer, run

Respond = Callable[[RemotingCommand], RemotingCommand]


def cluster_info(clusters: dict[str, dict[str, dict[int, str]]]) -> ClusterInfo:
    """ClusterInfo of {cluster: {broker name: {broker id: addr}}}."""
    return ClusterInfo(
        broker_addr_table={
            name: BrokerData(cluster=cluster, broker_name=name, broker_addrs=addrs)
            for cluster, brokers in clusters.items()
            for name, addrs in brokers.items()
        },
        cluster_addr_table={cluster: list(brokers) for cluster, brokers in clusters.items()},
    )


TWO_CLUSTERS = cluster_info(
    {
        "zeta": {"broker-z": {0: "10.0.0.9:10911"}},
        "alpha": {
            "broker-b": {1: "10.0.0.4:10911", 0: "10.0.0.3:10911"},
            "broker-a": {0: "10.0.0.1:10911", 2: "10.0.0.2:10911"},
            "broker-slave-only": {1: "10.0.0.5:10911"},
        },
    }
)


# -- assembly from cluster info and routes ----------------------------------------------------


def test_cluster_members_are_ordered_by_cluster_broker_name_and_id() -> None:
    assert cluster_members(TWO_CLUSTERS) == [
        ("alpha", "broker-a", 0, "10.0.0.1:10911"),
        ("alpha", "broker-a", 2, "10.0.0.2:10911"),
        ("alpha", "broker-b", 0, "10.0.0.3:10911"),
        ("alpha", "broker-b", 1, "10.0.0.4:10911"),
        ("alpha", "broker-slave-only", 1, "10.0.0.5:10911"),
        ("zeta", "broker-z", 0, "10.0.0.9:10911"),
    ]


def test_master_addrs_take_broker_id_0_of_each_broker_name() -> None:
    assert master_addrs(TWO_CLUSTERS, "alpha") == ["10.0.0.1:10911", "10.0.0.3:10911"]
    assert master_addrs(TWO_CLUSTERS, "zeta") == ["10.0.0.9:10911"]


def test_unknown_cluster_names_the_known_ones() -> None:
    with pytest.raises(AdminError, match=r"cluster 'nope' is not known .*known: alpha, zeta"):
        master_addrs(TWO_CLUSTERS, "nope")


def test_cluster_without_master_is_an_error() -> None:
    info = cluster_info({"c": {"b": {1: "10.0.0.5:10911"}}})
    with pytest.raises(AdminError, match="cluster 'c' has no master"):
        master_addrs(info, "c")


def test_clusters_of_route_are_those_with_a_broker_of_the_route() -> None:
    route = TopicRouteData(
        broker_datas=[
            BrokerData(cluster="zeta", broker_name="broker-z"),
            BrokerData(cluster="alpha", broker_name="broker-b"),
        ]
    )
    assert clusters_of_route(route, TWO_CLUSTERS) == ["alpha", "zeta"]
    assert clusters_of_route(TopicRouteData(), TWO_CLUSTERS) == []


def test_topic_entries_collect_clusters_per_topic_sorted() -> None:
    entries = topic_entries(
        ["T2", "T1", "orphan"], {"zeta": ["T1"], "alpha": ["T2", "T1", "only-in-cluster"]}
    )
    assert entries == [
        TopicEntry("T1", ["alpha", "zeta"]),
        TopicEntry("T2", ["alpha"]),
        TopicEntry("only-in-cluster", ["alpha"]),
        TopicEntry("orphan", []),
    ]


@pytest.mark.parametrize(
    ("current", "entry", "merged"),
    [
        (None, "broker-a:8", "broker-a:8"),
        ("", "broker-a:8", "broker-a:8"),
        ("broker-b:4", "broker-a:8", "broker-b:4;broker-a:8"),
        ("broker-a:4;broker-b:4", "broker-a:8", "broker-a:8;broker-b:4"),
        ("broker-a:8", "broker-a:8", "broker-a:8"),
    ],
)
def test_merge_order_conf_replaces_or_adds_the_brokers_entry(
    current: str | None, entry: str, merged: str
) -> None:
    assert merge_order_conf(current, entry) == merged


def test_admin_client_takes_a_namesrv_list_as_text_or_sequence() -> None:
    assert AdminClient(" a:1; b:2 ;").namesrv_addrs == ["a:1", "b:2"]
    assert AdminClient(["a:1", " ", "b:2"]).namesrv_addrs == ["a:1", "b:2"]
    with pytest.raises(ValueError, match="no name server"):
        AdminClient(" ; ")


# -- broker status from a runtime table -------------------------------------------------------

RUNTIME_TABLE = {
    "brokerVersionDesc": "V4_9_8",
    "putTps": "125.5 100.25 90.0",
    "getTransferedTps": "42.75 40.0 38.0",
    "sendThreadPoolQueueSize": "3",
    "sendThreadPoolQueueHeadWaitTimeMills": "12",
    "pullThreadPoolQueueSize": "1",
    "pullThreadPoolQueueHeadWaitTimeMills": "7",
    "pageCacheLockTimeMills": "2",
    "earliestMessageTimeStamp": "1700000000000",
    "commitLogDiskRatio": "0.4375",
    "msgPutTotalYesterdayMorning": "100",
    "msgPutTotalTodayMorning": "1100",
    "msgPutTotalTodayNow": "1600",
    "msgGetTotalYesterdayMorning": "50",
    "msgGetTotalTodayMorning": "850",
    "msgGetTotalTodayNow": "900",
}


def test_broker_status_takes_mqadmin_cluster_list_figures_from_the_runtime_table() -> None:
    status = broker_status("alpha", "broker-a", 0, "10.0.0.1:10911", RUNTIME_TABLE)
    assert status == BrokerStatus(
        cluster="alpha",
        broker_name="broker-a",
        broker_id=0,
        addr="10.0.0.1:10911",
        version="V4_9_8",
        in_tps=125.5,
        out_tps=42.75,
        send_queue_size=3,
        send_queue_head_wait_ms=12,
        pull_queue_size=1,
        pull_queue_head_wait_ms=7,
        page_cache_lock_time_ms=2,
        earliest_message_timestamp=1_700_000_000_000,
        commitlog_disk_ratio=0.4375,
        in_total_yesterday=1000,
        out_total_yesterday=800,
        in_total_today=500,
        out_total_today=50,
        runtime_info=RUNTIME_TABLE,
        error=None,
        role="MASTER",
        term=None,
        committed_index=None,
    )


def test_broker_status_leaves_missing_or_unreadable_figures_empty() -> None:
    table = {"putTps": "", "getTransferedTps": "n/a", "msgPutTotalTodayNow": "5"}
    status = broker_status("c", "b", 1, "h:1", table)
    assert (status.version, status.in_tps, status.out_tps) == (None, None, None)
    assert (status.in_total_today, status.commitlog_disk_ratio) == (None, None)
    assert status.broker_id == 1
    assert (status.role, status.term, status.committed_index) == ("SLAVE", None, None)


def test_broker_status_takes_an_rmq_dledger_nodes_role_term_and_committed_index() -> None:
    table = {"dLegerRole": "FOLLOWER", "dLegerTerm": "3", "dLegerCommittedIndex": "41"}
    status = broker_status("c", "b", 2, "h:1", table)
    assert (status.role, status.term, status.committed_index) == ("FOLLOWER", 3, 41)


def test_broker_status_of_a_broker_that_did_not_answer() -> None:
    status = broker_status("c", "b", 0, "h:1", {}, "connect to h:1 failed")
    assert status.error == "connect to h:1 failed"
    assert status.runtime_info == {}
    assert status.in_tps is None and status.earliest_message_timestamp is None


# -- dry-run plans ----------------------------------------------------------------------------


def test_plan_of_a_topic_update_on_a_broker_is_mqadmins_create_topic_header() -> None:
    config = TopicConfig(topic_name="T", read_queue_nums=4, write_queue_nums=2, perm=4)
    plan = plan_topic_update(config, ["n:1"], broker_addr="10.0.0.1:10911")
    assert plan == [
        PlannedRequest(
            RequestCode.UPDATE_AND_CREATE_TOPIC,
            "broker 10.0.0.1:10911",
            {
                "topic": "T",
                "defaultTopic": "TBW102",
                "readQueueNums": "4",
                "writeQueueNums": "2",
                "perm": "4",
                "topicFilterType": "SINGLE_TAG",
                "topicSysFlag": "0",
                "order": "false",
            },
        )
    ]


def test_plan_of_an_ordered_cluster_update_writes_the_order_conf_to_every_namesrv() -> None:
    config = TopicConfig(topic_name="T", write_queue_nums=3, order=True)
    plan = plan_topic_update(config, ["n:1", "n:2"], cluster="alpha")
    assert [(p.code, p.target) for p in plan] == [
        (RequestCode.UPDATE_AND_CREATE_TOPIC, "every master of cluster alpha"),
        (RequestCode.PUT_KV_CONFIG, "name server n:1"),
        (RequestCode.PUT_KV_CONFIG, "name server n:2"),
    ]
    assert plan[0].ext_fields["order"] == "true"
    assert plan[1].ext_fields == {
        "namespace": "ORDER_TOPIC_CONFIG",
        "key": "T",
        "value": "<brokerName>:3;...",
    }


def test_plan_needs_exactly_one_target() -> None:
    config = TopicConfig(topic_name="T")
    with pytest.raises(ValueError, match="exactly one"):
        plan_topic_update(config, ["n:1"])
    with pytest.raises(ValueError, match="exactly one"):
        plan_topic_update(config, ["n:1"], broker_addr="b:1", cluster="c")


def test_plan_of_a_deletion_covers_the_masters_then_every_namesrv() -> None:
    assert plan_topic_deletion("T", "alpha", ["n:1", "n:2"]) == [
        PlannedRequest(
            RequestCode.DELETE_TOPIC_IN_BROKER, "every master of cluster alpha", {"topic": "T"}
        ),
        PlannedRequest(
            RequestCode.DELETE_TOPIC_IN_NAMESRV,
            "name server n:1",
            {"topic": "T", "clusterName": "alpha"},
        ),
        PlannedRequest(
            RequestCode.DELETE_TOPIC_IN_NAMESRV,
            "name server n:2",
            {"topic": "T", "clusterName": "alpha"},
        ),
    ]


# -- AdminClient against scripted servers -----------------------------------------------------


class Scripted(FakeServer):
    """A server answering each registered code with a function of the request; keeps every
    request it got, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[RemotingCommand] = []

    def answer(self, code: int, respond: Respond) -> None:
        async def handler(_: Connection, request: RemotingCommand) -> RemotingCommand:
            self.requests.append(request)
            return respond(request)

        self.server.register(code, handler)

    def got(self, code: int) -> list[RemotingCommand]:
        return [request for request in self.requests if request.code == code]


def ok(body: bytes | None = None) -> Respond:
    return lambda _: create_response(ResponseCode.SUCCESS, body=body)


def refuse(code: int, remark: str) -> Respond:
    return lambda _: create_response(code, remark)


async def started(*servers: Scripted) -> None:
    for server in servers:
        await server.start()


async def closed(*servers: Scripted) -> None:
    for server in servers:
        await server.close()


def namesrv_for(info: ClusterInfo) -> Scripted:
    namesrv = Scripted()
    namesrv.answer(RequestCode.GET_BROKER_CLUSTER_INFO, ok(info.encode()))
    return namesrv


def test_namesrv_reads_fail_over_to_the_next_name_server() -> None:
    async def scenario() -> None:
        namesrv = namesrv_for(TWO_CLUSTERS)
        await started(namesrv)
        dead = f"{LOOPBACK}:{free_port()}"
        try:
            async with AdminClient([dead, namesrv.addr], timeout=2.0) as admin:
                assert sorted((await admin.cluster_info()).cluster_addr_table) == [
                    "alpha",
                    "zeta",
                ]
                assert await admin.cluster_masters("zeta") == ["10.0.0.9:10911"]
            assert len(namesrv.got(RequestCode.GET_BROKER_CLUSTER_INFO)) == 2
        finally:
            await closed(namesrv)

    run(scenario())


def test_no_reachable_name_server_raises_the_connection_error() -> None:
    async def scenario() -> None:
        async with AdminClient(f"{LOOPBACK}:{free_port()}", timeout=2.0) as admin:
            with pytest.raises(RemotingConnectError):
                await admin.cluster_info()

    run(scenario())


def test_a_namesrv_refusal_names_the_name_server_and_keeps_the_remark() -> None:
    async def scenario() -> None:
        namesrv = Scripted()
        namesrv.answer(
            RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
            refuse(ResponseCode.SYSTEM_ERROR, "disable"),
        )
        namesrv.answer(RequestCode.GET_BROKER_CLUSTER_INFO, ok(ClusterInfo().encode()))
        await started(namesrv)
        try:
            async with AdminClient(namesrv.addr) as admin:
                with pytest.raises(AdminError) as raised:
                    await admin.list_topics()
            assert str(raised.value) == (
                f"name server {namesrv.addr} refused: SYSTEM_ERROR(1): disable"
            )
        finally:
            await closed(namesrv)

    run(scenario())


def test_route_not_found_stays_route_not_found() -> None:
    async def scenario() -> None:
        namesrv = Scripted()
        namesrv.answer(
            RequestCode.GET_ROUTEINFO_BY_TOPIC,
            refuse(ResponseCode.TOPIC_NOT_EXIST, "No topic route info in name server"),
        )
        await started(namesrv)
        try:
            async with AdminClient(namesrv.addr) as admin:
                with pytest.raises(RouteNotFound) as raised:
                    await admin.topic_route("missing")
            assert raised.value.topic == "missing"
            topic = namesrv.requests[0].read_header(GetRouteInfoRequestHeader).topic
            assert topic == "missing"
        finally:
            await closed(namesrv)

    run(scenario())


def test_list_topics_asks_each_cluster_for_its_topics() -> None:
    async def scenario() -> None:
        info = cluster_info({"c1": {"b1": {0: "h:1"}}, "c2": {"b2": {0: "h:2"}}})
        per_cluster = {"c1": ["T", "A"], "c2": ["T"]}
        namesrv = namesrv_for(info)
        namesrv.answer(
            RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
            ok(TopicList(topic_list=["T", "A", "Z"]).encode()),
        )
        namesrv.answer(
            RequestCode.GET_TOPICS_BY_CLUSTER,
            lambda request: create_response(
                ResponseCode.SUCCESS,
                body=TopicList(
                    topic_list=per_cluster[(request.ext_fields or {})["cluster"]]
                ).encode(),
            ),
        )
        await started(namesrv)
        try:
            async with AdminClient(namesrv.addr) as admin:
                assert await admin.list_topics() == [
                    TopicEntry("A", ["c1"]),
                    TopicEntry("T", ["c1", "c2"]),
                    TopicEntry("Z", []),
                ]
                assert await admin.list_topics("c2") == [TopicEntry("T", ["c2"])]
                with pytest.raises(AdminError, match="cluster 'c3' is not known"):
                    await admin.list_topics("c3")
        finally:
            await closed(namesrv)

    run(scenario())


def test_cluster_update_reaches_every_master_and_reports_each_failure() -> None:
    async def scenario() -> None:
        good, bad, slave = Scripted(), Scripted(), Scripted()
        good.answer(RequestCode.UPDATE_AND_CREATE_TOPIC, ok())
        bad.answer(
            RequestCode.UPDATE_AND_CREATE_TOPIC,
            refuse(ResponseCode.SYSTEM_ERROR, "The topic[T] is conflict with system topic."),
        )
        slave.answer(RequestCode.UPDATE_AND_CREATE_TOPIC, ok())
        await started(good, bad, slave)
        info = cluster_info(
            {"c": {"b-good": {0: good.addr, 1: slave.addr}, "b-bad": {0: bad.addr}}}
        )
        namesrv = namesrv_for(info)
        await started(namesrv)
        try:
            async with AdminClient(namesrv.addr) as admin:
                with pytest.raises(AdminError) as raised:
                    await admin.create_or_update_topic(TopicConfig(topic_name="T"), cluster="c")
            assert str(raised.value) == (
                f"create or update topic 'T': failed on {bad.addr} (SYSTEM_ERROR(1): "
                f"The topic[T] is conflict with system topic.); done on {good.addr}"
            )
            assert list(raised.value.failures) == [bad.addr]
            assert slave.requests == []
            header = good.requests[0].read_header(CreateTopicRequestHeader)
            assert (header.topic, header.read_queue_nums, header.perm) == ("T", 16, 6)
        finally:
            await closed(good, bad, slave, namesrv)

    run(scenario())


def test_ordered_update_on_a_broker_merges_its_entry_into_every_namesrvs_order_conf() -> None:
    async def scenario() -> None:
        broker = Scripted()
        broker.answer(RequestCode.UPDATE_AND_CREATE_TOPIC, ok())
        await started(broker)
        info = cluster_info({"c": {"broker-a": {0: broker.addr}, "broker-b": {0: "h:9"}}})
        first, second = namesrv_for(info), namesrv_for(info)
        current = create_response(
            ResponseCode.SUCCESS, header=GetKVConfigResponseHeader(value="broker-b:4")
        )
        for namesrv in (first, second):
            namesrv.answer(RequestCode.GET_KV_CONFIG, lambda _: current)
            namesrv.answer(RequestCode.PUT_KV_CONFIG, ok())
        await started(first, second)
        try:
            config = TopicConfig(topic_name="T", write_queue_nums=2, order=True)
            async with AdminClient([first.addr, second.addr]) as admin:
                result = await admin.create_or_update_topic(config, broker_addr=broker.addr)
            assert result.broker_addrs == [broker.addr]
            assert result.order_conf == "broker-b:4;broker-a:2"
            for namesrv in (first, second):
                (put,) = namesrv.got(RequestCode.PUT_KV_CONFIG)
                assert put.read_header(PutKVConfigRequestHeader) == PutKVConfigRequestHeader(
                    namespace="ORDER_TOPIC_CONFIG", key="T", value="broker-b:4;broker-a:2"
                )
        finally:
            await closed(broker, first, second)

    run(scenario())


def test_delete_topic_hits_every_master_then_every_name_server() -> None:
    async def scenario() -> None:
        masters = [Scripted(), Scripted()]
        for master in masters:
            master.answer(RequestCode.DELETE_TOPIC_IN_BROKER, ok())
        await started(*masters)
        info = cluster_info({"c": {"b1": {0: masters[0].addr}, "b2": {0: masters[1].addr}}})
        namesrvs = [namesrv_for(info), namesrv_for(info)]
        for namesrv in namesrvs:
            namesrv.answer(RequestCode.DELETE_TOPIC_IN_NAMESRV, ok())
        await started(*namesrvs)
        try:
            async with AdminClient([n.addr for n in namesrvs]) as admin:
                result = await admin.delete_topic("T", "c")
            assert result.broker_addrs == sorted(m.addr for m in masters)
            assert result.namesrv_addrs == [n.addr for n in namesrvs]
            for master in masters:
                (request,) = master.requests
                assert request.read_header(DeleteTopicRequestHeader).topic == "T"
            for namesrv in namesrvs:
                (request,) = namesrv.got(RequestCode.DELETE_TOPIC_IN_NAMESRV)
                header = request.read_header(DeleteTopicFromNamesrvRequestHeader)
                assert (header.topic, header.cluster_name) == ("T", "c")
        finally:
            await closed(*masters, *namesrvs)

    run(scenario())


def test_topic_status_merges_one_broker_per_name_preferring_the_master() -> None:
    async def scenario() -> None:
        master_a, slave_a, slave_only_b = Scripted(), Scripted(), Scripted()

        def stats(broker_name: str, queues: dict[int, tuple[int, int, int]]) -> Respond:
            table = TopicStatsTable(
                offset_table={
                    MessageQueue("T", broker_name, queue_id): TopicOffset(
                        min_offset=low, max_offset=high, last_update_timestamp=stamp
                    )
                    for queue_id, (low, high, stamp) in queues.items()
                }
            )
            return ok(table.encode())

        master_a.answer(RequestCode.GET_TOPIC_STATS_INFO, stats("a", {1: (0, 5, 9), 0: (2, 3, 0)}))
        slave_a.answer(RequestCode.GET_TOPIC_STATS_INFO, stats("a", {0: (99, 99, 99)}))
        slave_only_b.answer(RequestCode.GET_TOPIC_STATS_INFO, stats("b", {0: (1, 1, 1)}))
        await started(master_a, slave_a, slave_only_b)
        route = TopicRouteData(
            queue_datas=[QueueData(broker_name="b"), QueueData(broker_name="a")],
            broker_datas=[
                BrokerData(cluster="c", broker_name="b", broker_addrs={1: slave_only_b.addr}),
                BrokerData(
                    cluster="c", broker_name="a", broker_addrs={1: slave_a.addr, 0: master_a.addr}
                ),
            ],
        )
        namesrv = Scripted()
        namesrv.answer(RequestCode.GET_ROUTEINFO_BY_TOPIC, ok(route.encode()))
        await started(namesrv)
        try:
            async with AdminClient(namesrv.addr) as admin:
                assert await admin.topic_status("T") == [
                    QueueStatus("a", 0, 2, 3, 0, master_a.addr),
                    QueueStatus("a", 1, 0, 5, 9, master_a.addr),
                    QueueStatus("b", 0, 1, 1, 1, slave_only_b.addr),
                ]
            assert slave_a.requests == []
        finally:
            await closed(master_a, slave_a, slave_only_b, namesrv)

    run(scenario())


def test_topic_status_without_any_queue_is_an_error() -> None:
    async def scenario() -> None:
        broker = Scripted()
        broker.answer(RequestCode.GET_TOPIC_STATS_INFO, ok(TopicStatsTable().encode()))
        await started(broker)
        route = TopicRouteData(
            broker_datas=[BrokerData(cluster="c", broker_name="a", broker_addrs={0: broker.addr})]
        )
        namesrv = Scripted()
        namesrv.answer(RequestCode.GET_ROUTEINFO_BY_TOPIC, ok(route.encode()))
        await started(namesrv)
        try:
            async with AdminClient(namesrv.addr) as admin:
                with pytest.raises(AdminError, match="no broker reports a queue of topic 'T'"):
                    await admin.topic_status("T")
        finally:
            await closed(broker, namesrv)

    run(scenario())


def test_cluster_list_keeps_a_row_for_a_broker_that_does_not_answer() -> None:
    async def scenario() -> None:
        alive = Scripted()
        alive.answer(RequestCode.GET_BROKER_RUNTIME_INFO, ok(KVTable(table=RUNTIME_TABLE).encode()))
        await started(alive)
        dead = f"{LOOPBACK}:{free_port()}"
        namesrv = namesrv_for(cluster_info({"c": {"a": {0: alive.addr}, "b": {0: dead}}}))
        await started(namesrv)
        try:
            async with AdminClient(namesrv.addr, timeout=2.0) as admin:
                first, second = await admin.cluster_list()
            assert (first.broker_name, first.addr, first.in_tps) == ("a", alive.addr, 125.5)
            assert first.runtime_info == RUNTIME_TABLE and first.error is None
            assert (second.broker_name, second.addr, second.in_tps) == ("b", dead, None)
            assert second.error is not None and dead in second.error
        finally:
            await closed(alive, namesrv)

    run(scenario())


def test_broker_runtime_info_refusal_names_the_broker() -> None:
    async def scenario() -> None:
        broker = Scripted()
        broker.answer(
            RequestCode.GET_BROKER_RUNTIME_INFO, refuse(ResponseCode.SYSTEM_ERROR, "boom")
        )
        await started(broker)
        try:
            async with AdminClient("127.0.0.1:1") as admin:
                with pytest.raises(AdminError) as raised:
                    await admin.broker_runtime_info(broker.addr)
            assert str(raised.value) == (
                f"get the runtime info: failed on {broker.addr} (SYSTEM_ERROR(1): boom)"
            )
        finally:
            await closed(broker)

    run(scenario())
