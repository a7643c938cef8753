"""ClientInstance against scripted name servers and brokers on 127.0.0.1: routes and their
cache, publish and subscribe queues, broker addresses, name server failover, heartbeats
(and how concurrent ones coalesce), unregistering, the broker's NOTIFY_CONSUMER_IDS_CHANGED
and CHECK_TRANSACTION_STATE."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from rmq.client.errors import ClientErrorCode, MQClientError, RouteNotFound
from rmq.client.instance import (
    ClientInstance,
    NameServerList,
    TopicPublishInfo,
    parse_namesrv_addrs,
)
from rmq.client.transactionrequests import TransactionChecker
from rmq.common.message import MessageRecord
from rmq.common.msgconst import PROPERTY_PRODUCER_GROUP
from rmq.remoting.bodies import (
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    HeartbeatData,
    MessageModel,
    MessageQueue,
    QueueData,
    SubscriptionData,
)
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, create_request, create_response
from rmq.remoting.connection import Connection
from rmq.remoting.errors import RemotingConnectError, RemotingTimeoutError
from rmq.remoting.headers import (
    CheckTransactionStateRequestHeader,
    NotifyConsumerIdsChangedRequestHeader,
)
from tests.unit.client.fakes import (
    FakeBroker,
    FakeNamesrv,
    closed_port_addr,
    route_of,
    run,
    until,
)
from tests.unit.client.test_processqueue import record_bytes


def test_parse_namesrv_addrs_splits_on_semicolons_and_refuses_an_empty_list() -> None:
    assert parse_namesrv_addrs(" 10.0.0.1:9876; 10.0.0.2:9876;") == [
        "10.0.0.1:9876",
        "10.0.0.2:9876",
    ]
    with pytest.raises(ValueError, match="no name server"):
        parse_namesrv_addrs(" ; ")


def test_client_id_is_ip_at_instance_name_and_default_names_differ() -> None:
    first = ClientInstance("127.0.0.1:9876", "inst", client_ip="10.1.2.3")
    assert first.client_id == "10.1.2.3@inst"
    assert ClientInstance("127.0.0.1:9876").client_id != ClientInstance("127.0.0.1:9876").client_id


# --- publish info ----------------------------------------------------------------------------


def test_publish_queues_are_the_write_queues_of_writable_masters_by_broker_name() -> None:
    route = route_of({"broker-b": "b:1", "broker-a": "a:1", "broker-c": None}, queues=2)
    route.queue_datas.append(
        QueueData(broker_name="broker-d", read_queue_nums=2, write_queue_nums=2, perm=4)
    )
    route.broker_datas += route_of({"broker-d": "d:1"}).broker_datas
    info = TopicPublishInfo("T", route)
    assert info.message_queues == (
        MessageQueue("T", "broker-a", 0),
        MessageQueue("T", "broker-a", 1),
        MessageQueue("T", "broker-b", 0),
        MessageQueue("T", "broker-b", 1),
    )
    assert info.ok and not info.order_topic


def test_an_order_topic_conf_lists_the_publish_queues() -> None:
    route = route_of({"broker-a": "a:1", "broker-b": "b:1"})
    route.order_topic_conf = "broker-b:2;broker-a:1"
    info = TopicPublishInfo("T", route)
    assert info.order_topic
    assert [(q.broker_name, q.queue_id) for q in info.message_queues] == [
        ("broker-b", 0),
        ("broker-b", 1),
        ("broker-a", 0),
    ]


def test_select_queue_goes_round_robin_and_skips_avoided_brokers() -> None:
    info = TopicPublishInfo("T", route_of({"broker-a": "a:1", "broker-b": "b:1"}, queues=3))
    picked = [info.select_queue() for _ in range(12)]
    assert all(picked.count(queue) == 2 for queue in info.message_queues)
    assert all(info.select_queue({"broker-a"}).broker_name == "broker-b" for _ in range(10))
    every_broker = {"broker-a", "broker-b"}
    assert {info.select_queue(every_broker) for _ in range(6)} == set(info.message_queues)


# --- routes through a name server ------------------------------------------------------------


async def started(*servers: FakeNamesrv | FakeBroker) -> None:
    for server in servers:
        await server.start()


async def closed(*servers: FakeNamesrv | FakeBroker | ClientInstance) -> None:
    for server in servers:
        if isinstance(server, ClientInstance):
            await server.shutdown()
        else:
            await server.close()


def test_an_unknown_topic_is_published_through_tbw102_capped_at_four_queues() -> None:
    async def scenario() -> None:
        namesrv = FakeNamesrv()
        namesrv.routes["TBW102"] = route_of({"broker-a": "127.0.0.1:1"}, queues=8)
        await started(namesrv)
        instance = ClientInstance(namesrv.addr)
        try:
            info = await instance.publish_info("NewTopic")
            assert [q.queue_id for q in info.message_queues] == [0, 1, 2, 3]
            assert {q.topic for q in info.message_queues} == {"NewTopic"}
            assert instance.cached_publish_info("NewTopic") is info
            assert instance.find_broker_addr("broker-a") == "127.0.0.1:1"
            assert namesrv.route_requests == {"NewTopic": 1, "TBW102": 1}
        finally:
            await closed(instance, namesrv)

    run(scenario())


def test_no_route_and_no_template_raises_not_found_topic() -> None:
    async def scenario() -> None:
        namesrv = FakeNamesrv()
        await started(namesrv)
        instance = ClientInstance(namesrv.addr)
        try:
            with pytest.raises(MQClientError) as error:
                await instance.publish_info("NewTopic")
            assert error.value.code == ClientErrorCode.NOT_FOUND_TOPIC_EXCEPTION
            assert "NewTopic" in error.value.remark
            with pytest.raises(RouteNotFound):
                await instance.subscribe_queues("NewTopic")
        finally:
            await closed(instance, namesrv)

    run(scenario())


def test_concurrent_lookups_of_one_topic_share_one_request_and_the_cache() -> None:
    async def scenario() -> None:
        namesrv = FakeNamesrv()
        namesrv.routes["T"] = route_of({"broker-a": "127.0.0.1:1"})
        await started(namesrv)
        instance = ClientInstance(namesrv.addr)
        try:
            routes = await asyncio.gather(*(instance.get_route("T") for _ in range(20)))
            await instance.get_route("T")
            assert all(route == routes[0] for route in routes)
            assert namesrv.route_requests["T"] == 1
        finally:
            await closed(instance, namesrv)

    run(scenario())


def test_subscribe_queues_are_the_read_queues_of_readable_brokers() -> None:
    async def scenario() -> None:
        namesrv = FakeNamesrv()
        route = route_of({"broker-a": "127.0.0.1:1", "broker-b": "127.0.0.1:2"}, queues=2)
        route.queue_datas[1].perm = 2  # broker-b: write only
        route.queue_datas[0].read_queue_nums = 3
        namesrv.routes["T"] = route
        await started(namesrv)
        instance = ClientInstance(namesrv.addr)
        try:
            queues = await instance.subscribe_queues("T")
        finally:
            await closed(instance, namesrv)
        assert queues == [MessageQueue("T", "broker-a", i) for i in range(3)]

    run(scenario())


def test_a_dead_name_server_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(random, "randrange", lambda _: 0)  # start with the dead one

    async def scenario() -> None:
        dead_addr = await closed_port_addr()
        namesrv = FakeNamesrv()
        namesrv.routes["T"] = route_of({"broker-a": "127.0.0.1:1"})
        namesrv.routes["U"] = route_of({"broker-a": "127.0.0.1:1"})
        await started(namesrv)
        instance = ClientInstance(f"{dead_addr};{namesrv.addr}")
        try:
            await instance.get_route("T")
            await instance.get_route("U")
            assert namesrv.route_requests == {"T": 1, "U": 1}
        finally:
            await closed(instance, namesrv)

    run(scenario())


def test_name_server_list_moves_on_when_unreachable_and_stays_where_answered(
    caplog: pytest.LogCaptureFixture,
) -> None:
    asked: list[str] = []

    async def call(addr: str) -> str:
        asked.append(addr)
        if addr == "dead:1":
            raise RemotingConnectError("connect to dead:1 failed")
        if addr == "slow:2":
            raise RemotingTimeoutError("no response from slow:2")
        return f"answer of {addr}"

    async def scenario() -> None:
        namesrvs = NameServerList(["dead:1", "slow:2", "live:3"])
        with caplog.at_level(logging.WARNING, logger="rmq.client"):
            assert await namesrvs.call(call) == "answer of live:3"
        assert await namesrvs.call(call) == "answer of live:3"
        assert asked == ["dead:1", "slow:2", "live:3", "live:3"]
        assert [record.getMessage() for record in caplog.records] == [
            "name server dead:1 failed (connect to dead:1 failed), trying slow:2",
            "name server slow:2 failed (no response from slow:2), trying live:3",
        ]

    run(scenario())


def test_name_server_list_raises_the_last_failure_and_a_refusal_at_once() -> None:
    asked: list[str] = []

    async def unreachable(addr: str) -> None:
        asked.append(addr)
        raise RemotingConnectError(f"connect to {addr} failed")

    async def refused(addr: str) -> None:
        asked.append(addr)
        raise MQClientError(ResponseCode.SYSTEM_ERROR, "no")

    async def scenario() -> None:
        namesrvs = NameServerList(["a:1", "b:2"], current=1)
        with pytest.raises(RemotingConnectError, match="connect to a:1 failed"):
            await namesrvs.call(unreachable)
        assert asked == ["b:2", "a:1"]
        asked.clear()
        with pytest.raises(MQClientError, match="no"):
            await namesrvs.call(refused)
        assert asked == ["b:2"]

    run(scenario())


def test_broker_address_fetches_the_route_once_more_for_an_unknown_broker() -> None:
    async def scenario() -> None:
        namesrv = FakeNamesrv()
        namesrv.routes["T"] = route_of({"broker-a": "127.0.0.1:7"})
        await started(namesrv)
        instance = ClientInstance(namesrv.addr)
        try:
            await instance.get_route("T")
            namesrv.routes["T"] = route_of({"broker-a": "127.0.0.1:7", "broker-b": None})
            assert await instance.broker_address(MessageQueue("T", "broker-a", 0)) == "127.0.0.1:7"
            assert namesrv.route_requests["T"] == 1
            slave_only = MessageQueue("T", "broker-b", 0)
            assert await instance.broker_address(slave_only, master_only=False) == "127.0.0.1:1"
            assert namesrv.route_requests["T"] == 2
            with pytest.raises(MQClientError) as error:
                await instance.broker_address(slave_only)
            assert error.value.code == ClientErrorCode.BROKER_NOT_EXIST_EXCEPTION
            assert error.value.remark == "The broker[broker-b] not exist"
            assert namesrv.route_requests["T"] == 3
        finally:
            await closed(instance, namesrv)

    run(scenario())


def test_find_broker_addr_prefers_the_master_and_falls_back_to_a_slave_on_request() -> None:
    async def scenario() -> None:
        namesrv = FakeNamesrv()
        namesrv.routes["T"] = route_of({"broker-a": "127.0.0.1:7", "broker-s": None})
        await started(namesrv)
        instance = ClientInstance(namesrv.addr)
        try:
            await instance.get_route("T")
            assert instance.find_broker_addr("broker-a") == "127.0.0.1:7"
            assert instance.find_broker_addr("broker-s") is None
            assert instance.find_broker_addr("broker-s", master_only=False) == "127.0.0.1:1"
            assert instance.find_broker_addr("unknown", master_only=False) is None
            assert instance.find_broker_addr_by_topic("T") in {"127.0.0.1:7", "127.0.0.1:1"}
        finally:
            await closed(instance, namesrv)

    run(scenario())


def test_the_refresh_task_picks_up_a_changed_route() -> None:
    async def scenario() -> None:
        namesrv = FakeNamesrv()
        namesrv.routes["T"] = route_of({"broker-a": "127.0.0.1:1"}, queues=2)
        await started(namesrv)
        instance = ClientInstance(namesrv.addr, poll_name_server_interval=0.05)
        await instance.start()
        try:
            before = await instance.publish_info("T")
            namesrv.routes["T"] = route_of({"broker-a": "127.0.0.1:1"}, queues=6)
            await until(lambda: instance.cached_publish_info("T") is not before)
            after = instance.cached_publish_info("T")
            assert after is not None and len(after.message_queues) == 6
        finally:
            await closed(instance, namesrv)

    run(scenario())


# --- groups, heartbeats and broker requests --------------------------------------------------


class FakeConsumer:
    def __init__(self, group: str, topic: str) -> None:
        self.group = group
        self.subscription = SubscriptionData.from_expression(topic, "*")
        self.rebalances = 0

    def consumer_data(self) -> ConsumerData:
        return ConsumerData(
            group_name=self.group,
            consume_type=ConsumeType.CONSUME_PASSIVELY,
            message_model=MessageModel.CLUSTERING,
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
            subscription_data_set=[self.subscription],
        )

    def rebalance_now(self) -> None:
        self.rebalances += 1


def test_heartbeats_carry_the_groups_and_shutdown_unregisters_them() -> None:
    async def scenario() -> None:
        namesrv, broker = FakeNamesrv(), FakeBroker("broker-a")
        await started(namesrv, broker)
        namesrv.routes["T"] = route_of({"broker-a": broker.addr})
        instance = ClientInstance(namesrv.addr, "hb", client_ip="10.9.8.7")
        await instance.start()
        try:
            instance.register_producer("PG")
            instance.register_consumer(FakeConsumer("CG", "T"))
            with pytest.raises(MQClientError, match=r"producer group\[PG\] has been created"):
                instance.register_producer("PG")
            await instance.get_route("T")
            await instance.send_heartbeat_to_all_brokers()
            [request] = broker.heartbeats
            heartbeat = HeartbeatData.decode(request.body or b"")
            assert heartbeat.client_id == "10.9.8.7@hb"
            assert [p.group_name for p in heartbeat.producer_data_set] == ["PG"]
            assert [c.group_name for c in heartbeat.consumer_data_set] == ["CG"]
            assert heartbeat.consumer_data_set[0].subscription_data_set[0].topic == "T"
        finally:
            await instance.shutdown()
            await closed(namesrv, broker)
        assert sorted(sorted((r.ext_fields or {}).items()) for r in broker.unregisters) == [
            [("clientID", "10.9.8.7@hb"), ("consumerGroup", "CG")],
            [("clientID", "10.9.8.7@hb"), ("producerGroup", "PG")],
        ]

    run(scenario())


def test_a_heartbeat_asked_for_during_another_follows_it_with_the_new_subscription() -> None:
    async def scenario() -> None:
        namesrv, broker = FakeNamesrv(), FakeBroker("broker-a")
        await started(namesrv, broker)
        namesrv.routes["T"] = route_of({"broker-a": broker.addr})
        first_answered = asyncio.Event()

        async def answer_the_first_later(
            _: Connection, request: RemotingCommand
        ) -> RemotingCommand:
            broker.heartbeats.append(request)
            request.body = bytes(request.body or b"")
            if len(broker.heartbeats) == 1:
                await first_answered.wait()
            return create_response(ResponseCode.SUCCESS)

        broker.server.register(RequestCode.HEART_BEAT, answer_the_first_later)
        consumer = FakeConsumer("CG", "T")
        consumer.subscription.sub_version = 1
        instance = ClientInstance(namesrv.addr)
        instance.register_consumer(consumer)
        try:
            await instance.get_route("T")
            first = asyncio.create_task(instance.send_heartbeat_to_all_brokers())
            await until(lambda: len(broker.heartbeats) == 1)
            consumer.subscription.sub_version = 2  # a rebalance changed the assignment
            asked_meanwhile = [
                asyncio.create_task(instance.send_heartbeat_to_all_brokers()) for _ in range(3)
            ]
            await asyncio.sleep(0.05)
            assert not any(task.done() for task in asked_meanwhile)
            first_answered.set()
            await asyncio.gather(first, *asked_meanwhile)
            assert [
                HeartbeatData.decode(request.body or b"")
                .consumer_data_set[0]
                .subscription_data_set[0]
                .sub_version
                for request in broker.heartbeats
            ] == [1, 2]
        finally:
            first_answered.set()
            await closed(instance, namesrv, broker)

    run(scenario())


def test_without_groups_no_heartbeat_is_sent() -> None:
    async def scenario() -> None:
        namesrv, broker = FakeNamesrv(), FakeBroker("broker-a")
        await started(namesrv, broker)
        namesrv.routes["T"] = route_of({"broker-a": broker.addr})
        instance = ClientInstance(namesrv.addr)
        try:
            await instance.get_route("T")
            await instance.send_heartbeat_to_all_brokers()
            assert broker.heartbeats == []
        finally:
            await closed(instance, namesrv, broker)

    run(scenario())


@asynccontextmanager
async def broker_connection(
    consumers: list[FakeConsumer], checker: TransactionChecker | None = None
) -> AsyncIterator[Connection]:
    """A started instance with `consumers` (or producer group PG, with `checker`, when there
    are none) registered, heartbeating to a fake broker: the broker's end of that
    connection."""
    namesrv, broker = FakeNamesrv(), FakeBroker("broker-a")
    await started(namesrv, broker)
    namesrv.routes["T"] = route_of({"broker-a": broker.addr})
    instance = ClientInstance(namesrv.addr)
    await instance.start()
    try:
        for consumer in consumers:
            instance.register_consumer(consumer)
        if not consumers:
            instance.register_producer("PG", checker)
        await instance.get_route("T")
        await instance.send_heartbeat_to_all_brokers()
        [connection] = broker.server.connections
        yield connection
    finally:
        await closed(instance, namesrv, broker)


def test_notify_consumer_ids_changed_makes_every_consumer_rebalance() -> None:
    async def scenario() -> None:
        consumers = [FakeConsumer("CG1", "T"), FakeConsumer("CG2", "T")]
        async with broker_connection(consumers) as connection:
            notify = create_request(
                RequestCode.NOTIFY_CONSUMER_IDS_CHANGED,
                NotifyConsumerIdsChangedRequestHeader(consumer_group="CG1"),
            )
            await connection.send_oneway(notify)
            await until(lambda: all(consumer.rebalances == 1 for consumer in consumers))

    run(scenario())


def test_other_broker_requests_are_answered_not_supported() -> None:
    async def scenario() -> None:
        async with broker_connection([]) as connection:
            request = create_request(RequestCode.PULL_MESSAGE)
            response = await connection.send_request(request, 3.0)
        assert response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED

    run(scenario())


class RecordingChecker:
    """A transactional producer that notes the checks it is handed."""

    def __init__(self) -> None:
        self.checks: list[tuple[MessageRecord, CheckTransactionStateRequestHeader]] = []

    async def check_transaction_state(
        self,
        connection: Connection,
        record: MessageRecord,
        header: CheckTransactionStateRequestHeader,
    ) -> None:
        self.checks.append((record, header))


def test_a_transaction_check_goes_to_the_producer_of_the_messages_group() -> None:
    def check(group: str | None, body: bytes | None = None) -> RemotingCommand:
        header = CheckTransactionStateRequestHeader(
            tran_state_table_offset=7, commit_log_offset=1234, transaction_id=f"tx-{group}"
        )
        properties = {PROPERTY_PRODUCER_GROUP: group} if group else {}
        body = record_bytes(7, b"half", properties) if body is None else body
        return create_request(RequestCode.CHECK_TRANSACTION_STATE, header, body=body)

    async def scenario() -> None:
        checker = RecordingChecker()
        async with broker_connection([], checker) as connection:
            # another group, no group, an undecodable body: nobody is asked; then PG
            for request in (check("OTHER"), check(None), check("PG", b"\0\0"), check("PG")):
                await connection.send_oneway(request)
            await until(lambda: bool(checker.checks))
        [(record, header)] = checker.checks
        assert record.body == b"half" and record.properties[PROPERTY_PRODUCER_GROUP] == "PG"
        assert (header.transaction_id, header.tran_state_table_offset) == ("tx-PG", 7)

    run(scenario())
