"""RouteInfoManager: registration, route answers, expiry, permissions and topic lists."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rmq.common.perm import DEFAULT_TOPIC_PERM
from rmq.remoting.bodies import DataVersion, QueueData, TopicConfig
from rmq.server.namesrv.routeinfo import RegisterBrokerResult, RouteInfoManager

V1 = DataVersion(timestamp=1_700_000_000_000, counter=1)
V2 = DataVersion(timestamp=1_700_000_000_500, counter=2)


def topic(
    name: str,
    read: int = 16,
    write: int = 16,
    perm: int = DEFAULT_TOPIC_PERM,
    topic_sys_flag: int = 0,
) -> TopicConfig:
    return TopicConfig(
        topic_name=name,
        read_queue_nums=read,
        write_queue_nums=write,
        perm=perm,
        topic_sys_flag=topic_sys_flag,
    )


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


def register(
    routes: RouteInfoManager,
    name: str = "broker-a",
    addr: str = "10.0.0.1:10911",
    broker_id: int = 0,
    topics: tuple[TopicConfig, ...] = (topic("T1", 4, 4, 6, 0),),
    version: DataVersion = V1,
    cluster: str = "DefaultCluster",
    connection: object | None = None,
    ha: str | None = "10.0.0.1:10912",
    filter_servers: list[str] | None = None,
) -> RegisterBrokerResult:
    return routes.register_broker(
        cluster, addr, name, broker_id, ha, version, topics, filter_servers, connection
    )


def test_master_registration_makes_a_route() -> None:
    routes = RouteInfoManager()
    result = register(routes, topics=(topic("T1", 8, 4, 6, 1),))
    assert result.master_addr is None and result.ha_server_addr is None

    route = routes.pickup_topic_route_data("T1")
    assert route is not None
    assert [
        (q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm, q.topic_sys_flag)
        for q in route.queue_datas
    ] == [("broker-a", 8, 4, 6, 1)]
    assert [(b.cluster, b.broker_name, b.broker_addrs) for b in route.broker_datas] == [
        ("DefaultCluster", "broker-a", {0: "10.0.0.1:10911"})
    ]
    assert route.filter_server_table == {}
    assert routes.pickup_topic_route_data("Unknown") is None


def test_route_answer_is_a_copy() -> None:
    routes = RouteInfoManager()
    register(routes)
    route = routes.pickup_topic_route_data("T1")
    assert route is not None
    route.queue_datas[0].perm = 0
    route.broker_datas[0].broker_addrs[5] = "x"
    again = routes.pickup_topic_route_data("T1")
    assert again is not None
    assert again.queue_datas[0].perm == 6
    assert again.broker_datas[0].broker_addrs == {0: "10.0.0.1:10911"}


def test_slave_learns_master_and_its_topics_are_ignored() -> None:
    routes = RouteInfoManager()
    register(routes, ha="10.0.0.1:10912")
    result = register(
        routes,
        addr="10.0.0.2:10911",
        broker_id=1,
        ha="10.0.0.2:10912",
        topics=(topic("OnlyOnSlave"),),
    )
    assert result.master_addr == "10.0.0.1:10911"
    assert result.ha_server_addr == "10.0.0.1:10912"
    assert routes.pickup_topic_route_data("OnlyOnSlave") is None
    route = routes.pickup_topic_route_data("T1")
    assert route is not None
    assert route.broker_datas[0].broker_addrs == {0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}


def test_slave_without_live_master_gets_no_master_address() -> None:
    routes = RouteInfoManager()
    result = register(routes, addr="10.0.0.2:10911", broker_id=1)
    assert result.master_addr is None and result.ha_server_addr is None


def test_queue_data_is_rebuilt_only_when_the_data_version_changes() -> None:
    routes = RouteInfoManager()
    register(routes, topics=(topic("T1", 4, 4, 6, 0),), version=V1)
    register(routes, topics=(topic("T1", 2, 2, 4, 0),), version=V1)
    route = routes.pickup_topic_route_data("T1")
    assert route is not None and route.queue_datas[0].read_queue_nums == 4

    register(routes, topics=(topic("T1", 2, 2, 4, 0),), version=V2)
    route = routes.pickup_topic_route_data("T1")
    assert route is not None
    assert (route.queue_datas[0].read_queue_nums, route.queue_datas[0].perm) == (2, 4)


def test_slave_promoted_to_master_keeps_one_entry_per_address() -> None:
    routes = RouteInfoManager()
    register(routes, addr="10.0.0.2:10911", broker_id=1)
    register(routes, addr="10.0.0.2:10911", broker_id=0)
    assert routes.get_all_cluster_info().broker_addr_table["broker-a"].broker_addrs == {
        0: "10.0.0.2:10911"
    }


def test_data_version_query_and_touch() -> None:
    clock = FakeClock()
    routes = RouteInfoManager(clock)
    assert routes.query_broker_data_version("10.0.0.1:10911") is None
    assert routes.is_broker_topic_config_changed("10.0.0.1:10911", V1)
    register(routes, version=V1)
    assert routes.query_broker_data_version("10.0.0.1:10911") == V1
    assert not routes.is_broker_topic_config_changed(
        "10.0.0.1:10911", DataVersion(timestamp=V1.timestamp, counter=1)
    )
    assert routes.is_broker_topic_config_changed("10.0.0.1:10911", V2)

    clock.now += 5000
    routes.touch_broker("10.0.0.1:10911")
    assert routes.broker_live_table["10.0.0.1:10911"].last_update_timestamp == clock.now


def test_unregister_master_keeps_topic_while_a_slave_remains() -> None:
    routes = RouteInfoManager()
    register(routes)
    register(routes, addr="10.0.0.2:10911", broker_id=1)
    routes.unregister_broker("DefaultCluster", "10.0.0.1:10911", "broker-a", 0)
    route = routes.pickup_topic_route_data("T1")
    assert route is not None and route.broker_datas[0].broker_addrs == {1: "10.0.0.2:10911"}

    routes.unregister_broker("DefaultCluster", "10.0.0.2:10911", "broker-a", 1)
    assert routes.pickup_topic_route_data("T1") is None
    info = routes.get_all_cluster_info()
    assert info.broker_addr_table == {} and info.cluster_addr_table == {}
    assert routes.get_all_topic_list().topic_list == []


def test_topic_shared_by_two_brokers_survives_losing_one() -> None:
    routes = RouteInfoManager()
    register(routes, name="broker-a", addr="10.0.0.1:10911")
    register(routes, name="broker-b", addr="10.0.0.3:10911")
    routes.unregister_broker("DefaultCluster", "10.0.0.1:10911", "broker-a", 0)
    route = routes.pickup_topic_route_data("T1")
    assert route is not None
    assert [q.broker_name for q in route.queue_datas] == ["broker-b"]
    assert routes.get_all_cluster_info().cluster_addr_table == {"DefaultCluster": ["broker-b"]}


def test_scan_drops_only_brokers_past_the_expiry_and_returns_their_connections() -> None:
    clock = FakeClock()
    routes = RouteInfoManager(clock)
    conn_a, conn_b = object(), object()
    register(routes, name="broker-a", addr="10.0.0.1:10911", connection=conn_a)
    register(
        routes,
        name="broker-b",
        addr="10.0.0.3:10911",
        connection=conn_b,
        topics=(topic("T2"),),
    )
    clock.now += 2000
    register(
        routes,
        name="broker-b",
        addr="10.0.0.3:10911",
        connection=conn_b,
        topics=(topic("T2"),),
    )

    clock.now += 1500
    assert routes.scan_not_active_brokers(3000) == [("10.0.0.1:10911", conn_a)]
    assert routes.pickup_topic_route_data("T1") is None
    assert routes.pickup_topic_route_data("T2") is not None
    assert sorted(routes.broker_live_table) == ["10.0.0.3:10911"]

    clock.now += 1501
    assert routes.scan_not_active_brokers(3000) == [("10.0.0.3:10911", conn_b)]
    assert routes.get_all_cluster_info().cluster_addr_table == {}


def test_scan_at_exactly_the_expiry_keeps_the_broker() -> None:
    clock = FakeClock()
    routes = RouteInfoManager(clock)
    register(routes)
    clock.now += 3000
    assert routes.scan_not_active_brokers(3000) == []
    assert routes.pickup_topic_route_data("T1") is not None


def test_connection_close_drops_the_broker_registered_over_it() -> None:
    routes = RouteInfoManager()
    conn = object()
    register(routes, connection=conn)
    assert routes.on_connection_closed("127.0.0.1:50000", object()) is None
    assert routes.pickup_topic_route_data("T1") is not None

    assert routes.on_connection_closed("127.0.0.1:50001", conn) == "10.0.0.1:10911"
    assert routes.pickup_topic_route_data("T1") is None
    assert routes.broker_live_table == {}


def test_connection_close_falls_back_to_the_remote_address() -> None:
    routes = RouteInfoManager()
    register(routes, addr="127.0.0.1:40000", connection=object())
    assert routes.on_connection_closed("127.0.0.1:40000", object()) == "127.0.0.1:40000"
    assert routes.get_all_cluster_info().broker_addr_table == {}


def test_wipe_and_add_write_perm_count_the_topics_of_that_broker() -> None:
    routes = RouteInfoManager()
    register(
        routes,
        name="broker-a",
        topics=(topic("T1", perm=6), topic("T2", perm=7)),
    )
    register(routes, name="broker-b", addr="10.0.0.3:10911", topics=(topic("T1", perm=6),))

    def perms() -> dict[tuple[str, str], int]:
        table = routes.topic_queue_table
        return {(q.broker_name, t): q.perm for t in ("T1", "T2") for q in table[t].values()}

    assert routes.wipe_write_perm_of_broker("broker-a") == 2
    assert perms() == {("broker-a", "T1"): 4, ("broker-b", "T1"): 6, ("broker-a", "T2"): 5}

    assert routes.add_write_perm_of_broker("broker-a") == 2
    route = routes.pickup_topic_route_data("T2")
    assert route is not None and route.queue_datas[0].perm == 6
    assert routes.wipe_write_perm_of_broker("no-such-broker") == 0


def test_delete_topic_everywhere_or_in_one_cluster() -> None:
    routes = RouteInfoManager()
    register(routes, name="broker-a", cluster="c1", topics=(topic("T1"), topic("T2")))
    register(
        routes,
        name="broker-b",
        addr="10.0.0.3:10911",
        cluster="c2",
        topics=(topic("T1"), topic("T2")),
    )

    routes.delete_topic("T1", "c1")
    route = routes.pickup_topic_route_data("T1")
    assert route is not None and [q.broker_name for q in route.queue_datas] == ["broker-b"]
    routes.delete_topic("T1", "c2")
    assert routes.pickup_topic_route_data("T1") is None
    routes.delete_topic("T2", "unknown-cluster")
    assert routes.pickup_topic_route_data("T2") is not None
    routes.delete_topic("T2")
    assert routes.get_all_topic_list().topic_list == []


def test_topic_lists() -> None:
    routes = RouteInfoManager()
    register(
        routes,
        name="broker-a",
        cluster="c1",
        topics=(
            topic("Plain", topic_sys_flag=0),
            topic("Unit", topic_sys_flag=1),
            topic("UnitSub", topic_sys_flag=2),
            topic("UnitAndSub", topic_sys_flag=3),
        ),
    )
    register(
        routes,
        name="broker-b",
        addr="10.0.0.3:10911",
        cluster="c2",
        topics=(topic("OnlyB"),),
    )

    assert routes.get_all_topic_list().topic_list == [
        "OnlyB",
        "Plain",
        "Unit",
        "UnitAndSub",
        "UnitSub",
    ]
    assert routes.get_all_topic_list().broker_addr is None
    assert routes.get_topics_by_cluster("c2").topic_list == ["OnlyB"]
    assert routes.get_topics_by_cluster("nope").topic_list == []
    assert routes.get_unit_topic_list().topic_list == ["Unit", "UnitAndSub"]
    assert routes.get_has_unit_sub_topic_list().topic_list == ["UnitAndSub", "UnitSub"]
    assert routes.get_has_unit_sub_ununit_topic_list().topic_list == ["UnitSub"]

    system = routes.get_system_topic_list()
    assert system.topic_list == ["broker-a", "broker-b", "c1", "c2"]
    assert system.broker_addr == "10.0.0.1:10911"


def test_system_topic_list_of_an_empty_name_server() -> None:
    system = RouteInfoManager().get_system_topic_list()
    assert system.topic_list == [] and system.broker_addr is None


def test_filter_servers_appear_in_the_route_and_an_empty_list_clears_them() -> None:
    routes = RouteInfoManager()
    register(routes, filter_servers=["10.0.0.9:5000"])
    route = routes.pickup_topic_route_data("T1")
    assert route is not None
    assert route.filter_server_table == {"10.0.0.1:10911": ["10.0.0.9:5000"]}
    register(routes, filter_servers=[])
    route = routes.pickup_topic_route_data("T1")
    assert route is not None and route.filter_server_table == {}


brokers = st.lists(
    st.tuples(
        st.sampled_from(["c1", "c2"]),
        st.sampled_from(["broker-a", "broker-b", "broker-c"]),
        st.integers(min_value=0, max_value=2),
        st.lists(st.sampled_from(["T1", "T2", "T3", "%RETRY%g"]), max_size=3),
    ),
    max_size=8,
)


@given(brokers)
def test_unregistering_every_address_empties_every_table(
    registrations: list[tuple[str, str, int, list[str]]],
) -> None:
    routes = RouteInfoManager()
    registered: dict[str, tuple[str, str, int]] = {}
    for cluster, name, broker_id, topics in registrations:
        addr = f"{name}-{broker_id}:10911"
        if addr in registered and registered[addr][0] != cluster:
            continue
        routes.register_broker(
            cluster,
            addr,
            name,
            broker_id,
            None,
            V1,
            [topic(t) for t in topics],
            None,
            None,
        )
        registered[addr] = (cluster, name, broker_id)
    for addr, (cluster, name, broker_id) in registered.items():
        routes.unregister_broker(cluster, addr, name, broker_id)
    assert routes.broker_live_table == {}
    assert routes.broker_addr_table == {}
    assert routes.topic_queue_table == {}


# -- indexes: a broker leaving costs what it held -------------------------------------------


class CountingTable(dict[str, dict[str, QueueData]]):
    """The topic queue table, counting the topic entries an operation reads or removes."""

    touched = 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        self.touched += len(self)
        return super().__iter__()

    def items(self):  # type: ignore[no-untyped-def]
        self.touched += len(self)
        return super().items()

    def values(self):  # type: ignore[no-untyped-def]
        self.touched += len(self)
        return super().values()

    def get(self, key, default=None):  # type: ignore[no-untyped-def]
        self.touched += 1
        return super().get(key, default)

    def __getitem__(self, key):  # type: ignore[no-untyped-def]
        self.touched += 1
        return super().__getitem__(key)

    def __delitem__(self, key):  # type: ignore[no-untyped-def]
        self.touched += 1
        super().__delitem__(key)

    def pop(self, key, *default):  # type: ignore[no-untyped-def]
        self.touched += 1
        return super().pop(key, *default)


def entries_touched_by_leaving(others: int, way: str) -> int:
    """Topic entries read or removed when a broker with 20 topics leaves, `others` other
    brokers holding 300 topics each (10 of them shared with it)."""
    clock = FakeClock()
    routes = RouteInfoManager(clock)
    conn = object()
    shared = tuple(topic(f"Shared{i}") for i in range(10))
    own = tuple(topic(f"Own{i}") for i in range(10))
    register(routes, name="leaving", addr="10.9.9.9:10911", topics=shared + own, connection=conn)
    clock.now += 10_000
    for n in range(others):
        topics = shared + tuple(topic(f"B{n}T{i}") for i in range(290))
        register(routes, name=f"b{n}", addr=f"10.1.0.{n}:10911", topics=topics)
    table = routes.topic_queue_table = CountingTable(routes.topic_queue_table)
    if way == "close":
        assert routes.on_connection_closed("10.9.9.9:50000", conn) == "10.9.9.9:10911"
    elif way == "unregister":
        routes.unregister_broker("DefaultCluster", "10.9.9.9:10911", "leaving", 0)
    else:
        assert routes.scan_not_active_brokers(5_000) == [("10.9.9.9:10911", conn)]
    touched = table.touched
    routes.check_indexes()
    for t in own:
        assert routes.pickup_topic_route_data(t.topic_name) is None
    assert len(routes.topic_queue_table) == 10 * (others > 0) + 290 * others
    return touched


@pytest.mark.parametrize("way", ["close", "unregister", "expire"])
def test_a_broker_leaving_touches_only_its_own_topics(way: str) -> None:
    # At most a read and a removal for each of its 20 topics, however many other topics
    # there are (a walk of the whole table would touch all 11,610 of the crowded case).
    assert entries_touched_by_leaving(0, way) <= 2 * 20
    assert entries_touched_by_leaving(40, way) <= 2 * 20


def test_route_answers_after_a_broker_leaves_keep_the_others() -> None:
    routes = RouteInfoManager()
    conn = object()
    register(routes, name="a", addr="10.0.0.1:1", topics=(topic("S"), topic("A")), connection=conn)
    register(routes, name="b", addr="10.0.0.2:1", topics=(topic("S"), topic("B")))
    routes.on_connection_closed("x", conn)
    route = routes.pickup_topic_route_data("S")
    assert route is not None and [q.broker_name for q in route.queue_datas] == ["b"]
    assert routes.pickup_topic_route_data("A") is None
    assert routes.get_topics_by_cluster("DefaultCluster").topic_list == ["B", "S"]
    routes.check_indexes()


def test_one_connection_drops_one_broker_per_close() -> None:
    routes = RouteInfoManager()
    conn = object()
    register(routes, name="a", addr="10.0.0.1:1", connection=conn)
    register(routes, name="b", addr="10.0.0.2:1", connection=conn)
    assert routes.on_connection_closed("x", conn) == "10.0.0.1:1"
    assert routes.on_connection_closed("x", conn) == "10.0.0.2:1"
    assert routes.on_connection_closed("x", conn) is None
    assert routes.broker_live_table == {}
    routes.check_indexes()


def test_a_broker_re_registering_over_a_new_connection_moves_to_it() -> None:
    routes = RouteInfoManager()
    old, new = object(), object()
    register(routes, connection=old)
    register(routes, connection=new)
    assert routes.on_connection_closed("127.0.0.1:1", old) is None
    assert routes.pickup_topic_route_data("T1") is not None
    assert routes.on_connection_closed("127.0.0.1:1", new) == "10.0.0.1:10911"
    routes.check_indexes()


operations = st.lists(
    st.one_of(
        st.tuples(
            st.just("register"),
            st.sampled_from(["a", "b", "c"]),
            st.integers(min_value=0, max_value=1),
            st.lists(st.sampled_from(["T1", "T2", "T3", "T4"]), max_size=3),
            st.integers(min_value=1, max_value=3),
            st.sampled_from(["c1", "c2"]),
        ),
        st.tuples(st.just("unregister"), st.sampled_from(["a", "b", "c"]), st.integers(0, 1)),
        st.tuples(st.just("close"), st.sampled_from(["a", "b", "c"]), st.integers(0, 1)),
        st.tuples(st.just("expire"), st.sampled_from(["a", "b", "c"]), st.integers(0, 1)),
        st.tuples(
            st.just("delete"), st.sampled_from(["T1", "T2", "T3"]), st.sampled_from(["", "c1"])
        ),
        st.tuples(st.just("wipe"), st.sampled_from(["a", "b", "c"])),
    ),
    max_size=25,
)


@given(operations)
def test_indexes_follow_every_operation(ops: list[tuple[object, ...]]) -> None:
    clock = FakeClock()
    routes = RouteInfoManager(clock)
    connections: dict[str, object] = {}
    clusters: dict[str, str] = {}
    for op in ops:
        clock.now += 1
        kind = op[0]
        if kind == "register":
            _, name, broker_id, topics, counter, cluster = op
            addr = f"{name}-{broker_id}:1"
            connection = connections.setdefault(addr, object())
            clusters.setdefault(str(name), str(cluster))
            routes.register_broker(
                clusters[str(name)],
                addr,
                str(name),
                int(broker_id),  # type: ignore[call-overload]
                None,
                DataVersion(timestamp=1, counter=int(counter)),  # type: ignore[call-overload]
                [topic(str(t)) for t in topics],  # type: ignore[attr-defined]
                None,
                connection,
            )
        elif kind in ("unregister", "close", "expire"):
            _, name, broker_id = op
            addr = f"{name}-{broker_id}:1"
            if kind == "unregister":
                cluster = clusters.get(str(name), "c1")
                routes.unregister_broker(cluster, addr, str(name), int(broker_id))  # type: ignore[call-overload]
            elif kind == "close" and addr in connections:
                routes.on_connection_closed("127.0.0.1:1", connections.pop(addr))
            elif kind == "expire" and addr in routes.broker_live_table:
                routes.broker_live_table[addr].last_update_timestamp = 0
                routes.scan_not_active_brokers(clock.now - 1)
        elif kind == "delete":
            routes.delete_topic(str(op[1]), str(op[2]) or None)
        else:
            routes.wipe_write_perm_of_broker(str(op[1]))
        routes.check_indexes()
        for cluster in ("c1", "c2"):
            names = routes.cluster_addr_table.get(cluster, set())
            expected = sorted(
                t for t, queue_datas in routes.topic_queue_table.items() if names & set(queue_datas)
            )
            assert routes.get_topics_by_cluster(cluster).topic_list == expected
