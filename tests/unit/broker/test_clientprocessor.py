"""Client management: heartbeats (Java names, C++ ordinals), consumer lists, membership
notifications to the right connections, unregistration, closed and silent clients, config
checks and queue locks, over real connections on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import struct
from typing import Any, cast

import pytest

from rmq.remoting.bodies import (
    CheckClientRequestBody,
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    GetConsumerListByGroupResponseBody,
    HeartbeatData,
    LockBatchRequestBody,
    LockBatchResponseBody,
    MessageModel,
    MessageQueue,
    ProducerData,
    SubscriptionData,
    SubscriptionGroupConfig,
    TopicConfig,
)
from rmq.remoting.client import RemotingClient
from rmq.remoting.codes import LanguageCode, RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, create_request
from rmq.remoting.connection import Connection
from rmq.remoting.frame import decode_frame
from rmq.remoting.headers import (
    GetConsumerListByGroupRequestHeader,
    NotifyConsumerIdsChangedRequestHeader,
    UnregisterClientRequestHeader,
)
from rmq.server.broker.context import BrokerContext
from rmq.server.broker.processor.clientprocessor import NOTIFY_COALESCE_S
from tests.unit.broker.helpers import TOPIC, Serving, heartbeat_request, run, until
from tests.unit.remoting.wire import cpp_request

pytestmark = pytest.mark.serving_broker

GROUP = "CID_members"
CPP_EXT_FIELDS = {"AccessKey": "", "OnsChannel": "ALIYUN", "Signature": "x"}


class Member:
    """A client of its own connection that records the NOTIFY_CONSUMER_IDS_CHANGED it gets."""

    def __init__(self, serving: Serving, client_id: str) -> None:
        self.serving = serving
        self.client_id = client_id
        self.client = RemotingClient()
        self.notified: list[str] = []
        self.client.register(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, self._notified)

    async def _notified(self, connection: Connection, request: RemotingCommand) -> None:
        assert request.is_oneway
        header = request.read_header(NotifyConsumerIdsChangedRequestHeader)
        self.notified.append(header.consumer_group)

    async def invoke(self, request: RemotingCommand) -> RemotingCommand:
        return await self.client.invoke(self.serving.addr, request, 5.0)

    async def heartbeat(self, group: str = GROUP, topics: tuple[str, ...] = (TOPIC,)) -> None:
        subscriptions = [SubscriptionData.from_expression(topic, "*") for topic in topics]
        response = await self.invoke(heartbeat_request(self.client_id, group, subscriptions))
        assert response.code == ResponseCode.SUCCESS

    async def unregister(self, group: str = GROUP) -> None:
        header = UnregisterClientRequestHeader(client_id=self.client_id, consumer_group=group)
        response = await self.invoke(create_request(RequestCode.UNREGISTER_CLIENT, header))
        assert response.code == ResponseCode.SUCCESS

    async def close(self) -> None:
        await self.client.close()


async def consumer_list(serving: Serving, group: str = GROUP) -> RemotingCommand:
    header = GetConsumerListByGroupRequestHeader(consumer_group=group)
    return await serving.invoke(create_request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, header))


class RawCppClient:
    """Frames written as the C++ client writes them, answers read back whole."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.opaque = 0

    @classmethod
    async def connect(cls, serving: Serving) -> RawCppClient:
        return cls(*await asyncio.open_connection("127.0.0.1", serving.server.port))

    async def request(
        self, code: int, body: dict[str, Any], ext_fields: dict[str, object] | None = None
    ) -> RemotingCommand:
        self.opaque += 1
        payload = json.dumps(body, separators=(",", ":")).encode() + b"\n"
        fields = {**CPP_EXT_FIELDS, **(ext_fields or {})}
        self.writer.write(cpp_request(code, self.opaque, fields, payload))
        (length,) = struct.unpack(">i", await self.reader.readexactly(4))
        response = decode_frame(memoryview(await self.reader.readexactly(length)))
        assert response.opaque == self.opaque
        return response

    def close(self) -> None:
        self.writer.close()


def java_heartbeat(client_id: str, group: str, unit_mode: bool = False) -> HeartbeatData:
    return HeartbeatData(
        client_id=client_id,
        producer_data_set=[ProducerData(group_name="PID_java")],
        consumer_data_set=[
            ConsumerData(
                group_name=group,
                consume_type=ConsumeType.CONSUME_PASSIVELY,
                message_model=MessageModel.CLUSTERING,
                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                subscription_data_set=[SubscriptionData.from_expression(TOPIC, "TagA || TagB")],
                unit_mode=unit_mode,
            )
        ],
    )


# -- heartbeats -----------------------------------------------------------------------------


def test_a_java_heartbeat_registers_its_groups_and_creates_the_retry_topic(
    broker: BrokerContext,
) -> None:
    body = java_heartbeat("10.0.0.5@1234#99", GROUP).encode()
    assert b'"consumeType":"CONSUME_PASSIVELY"' in body

    async def scenario() -> None:
        async with Serving(broker) as serving:
            response = await serving.invoke(create_request(RequestCode.HEART_BEAT, body=body))
            assert response.code == ResponseCode.SUCCESS
            listed = await consumer_list(serving)
            connection = broker.client_manager.consumer_connection(GROUP)
            producers = broker.client_manager.producer_connection("PID_java")
        assert listed.code == ResponseCode.SUCCESS
        assert GetConsumerListByGroupResponseBody.decode(listed.body or b"").consumer_id_list == [
            "10.0.0.5@1234#99"
        ]
        assert connection is not None
        assert (connection.consume_from_where, connection.message_model) == (
            ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            MessageModel.CLUSTERING,
        )
        (member,) = connection.connection_set
        assert (member.client_id, member.language, member.version) == (
            "10.0.0.5@1234#99",
            LanguageCode.JAVA,
            409,
        )
        assert connection.subscription_table[TOPIC].tags_set == ["TagA", "TagB"]
        assert producers is not None
        assert [c.client_id for c in producers.connection_set] == ["10.0.0.5@1234#99"]

    run(scenario())
    assert broker.subscription_group_manager.find(GROUP, auto_create=False) is not None
    retry = broker.topic_config_manager.select(f"%RETRY%{GROUP}")
    assert retry == TopicConfig(
        topic_name=f"%RETRY%{GROUP}", read_queue_nums=1, write_queue_nums=1, perm=6
    )


def test_a_unit_mode_consumer_gets_a_unit_sub_retry_topic_with_the_groups_queue_count(
    broker: BrokerContext,
) -> None:
    broker.subscription_group_manager.update(
        SubscriptionGroupConfig(group_name=GROUP, retry_queue_nums=3)
    )
    body = java_heartbeat("c1", GROUP, unit_mode=True).encode()

    async def scenario() -> None:
        async with Serving(broker) as serving:
            await serving.invoke(create_request(RequestCode.HEART_BEAT, body=body))

    run(scenario())
    retry = broker.topic_config_manager.select(f"%RETRY%{GROUP}")
    assert retry is not None
    assert (retry.read_queue_nums, retry.write_queue_nums, retry.topic_sys_flag) == (3, 3, 2)


def test_a_cpp_heartbeat_with_ordinals_and_a_trailing_newline(broker: BrokerContext) -> None:
    heartbeat = {
        "clientID": "127.0.0.1@cpp-instance",
        "consumerDataSet": [
            {
                "groupName": GROUP,
                "consumeType": 1,
                "messageModel": 1,
                "consumeFromWhere": 0,
                "subscriptionDataSet": [
                    {
                        "topic": TOPIC,
                        "subString": "TagA",
                        "subVersion": "1700000000000",
                        "tagsSet": ["TagA"],
                        "codeSet": [2598919],
                        "classFilterMode": False,
                    }
                ],
            }
        ],
        "producerDataSet": [{"groupName": "CLIENT_INNER_PRODUCER"}],
    }

    async def scenario() -> None:
        async with Serving(broker) as serving:
            cpp = await RawCppClient.connect(serving)
            response = await cpp.request(RequestCode.HEART_BEAT, heartbeat)
            connection = broker.client_manager.consumer_connection(GROUP)
            cpp.close()
        assert response.code == ResponseCode.SUCCESS
        assert connection is not None
        (member,) = connection.connection_set
        assert (member.client_id, member.language, member.version) == (
            "127.0.0.1@cpp-instance",
            LanguageCode.CPP,
            63,
        )
        assert (connection.consume_type, connection.consume_from_where) == (
            ConsumeType.CONSUME_PASSIVELY,
            ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
        )
        assert connection.subscription_table[TOPIC].sub_version == 1_700_000_000_000

    run(scenario())


def test_a_heartbeat_without_a_body_is_a_system_error(broker: BrokerContext) -> None:
    async def scenario() -> None:
        async with Serving(broker) as serving:
            response = await serving.invoke(create_request(RequestCode.HEART_BEAT))
        assert response.code == ResponseCode.SYSTEM_ERROR
        assert "HeartbeatData" in (response.remark or "")

    run(scenario())


# -- membership and notifications ------------------------------------------------------------------


def test_membership_changes_notify_exactly_the_groups_connections(broker: BrokerContext) -> None:
    async def scenario() -> None:
        async with Serving(broker) as serving:
            one, two, other = (Member(serving, name) for name in ("c1", "c2", "c3"))
            await one.heartbeat()
            await other.heartbeat(group="CID_elsewhere")
            await until(lambda: one.notified == [GROUP] and other.notified == ["CID_elsewhere"])
            await two.heartbeat()
            await until(lambda: len(one.notified) == 2 and len(two.notified) == 1)
            await one.heartbeat()  # nothing new: nobody hears about it
            await two.heartbeat(topics=(TOPIC, "OtherTopic"))  # a new topic: a change
            await until(lambda: len(one.notified) == 3 and len(two.notified) == 2)
            await asyncio.sleep(0.05)
            assert one.notified == [GROUP] * 3
            assert two.notified == [GROUP] * 2
            assert other.notified == ["CID_elsewhere"]

            await two.unregister()
            await until(lambda: len(one.notified) == 4)
            listed = await consumer_list(serving)
            assert GetConsumerListByGroupResponseBody.decode(
                listed.body or b""
            ).consumer_id_list == ["c1"]

            await one.close()
            await until(lambda: broker.client_manager.consumer_ids(GROUP) == [])
            await asyncio.sleep(0.05)
            assert len(two.notified) == 2
            gone = await consumer_list(serving)
            assert (gone.code, gone.remark) == (
                ResponseCode.SYSTEM_ERROR,
                f"no consumer for this group, {GROUP}",
            )
            for member in (two, other):
                await member.close()

    run(scenario())


def test_a_closed_connection_notifies_the_members_left(broker: BrokerContext) -> None:
    async def scenario() -> None:
        async with Serving(broker) as serving:
            staying, leaving = Member(serving, "stay"), Member(serving, "leave")
            await staying.heartbeat()
            await until(lambda: len(staying.notified) == 1)
            await leaving.heartbeat()
            await until(lambda: len(staying.notified) == 2)
            await leaving.close()
            await until(lambda: len(staying.notified) == 3)
            assert broker.client_manager.consumer_ids(GROUP) == ["stay"]
            await staying.close()

    run(scenario())


def test_members_leaving_together_cost_one_notification_each(broker: BrokerContext) -> None:
    """Thirty connections of a group closing together: the member left is told once, not
    thirty times."""

    async def scenario() -> None:
        async with Serving(broker) as serving:
            staying = Member(serving, "stay")
            await staying.heartbeat()
            leaving = [Member(serving, f"leave-{index}") for index in range(30)]
            for member in leaving:
                await member.heartbeat()
            await until(lambda: all(member.notified for member in leaving))
            await asyncio.sleep(2 * NOTIFY_COALESCE_S)  # the joins' notifications are out
            told = len(staying.notified)
            group_info = broker.client_manager.consumer_group_info(GROUP)
            assert group_info is not None
            closing = [
                channel for channel, info in group_info.channels.items() if info.client_id != "stay"
            ]
            for channel in closing:  # as the server's callbacks run when they all close
                serving.client_processor.channel_closed(cast(Connection, channel))
            assert broker.client_manager.consumer_ids(GROUP) == ["stay"]
            await until(lambda: len(staying.notified) == told + 1)
            await asyncio.sleep(2 * NOTIFY_COALESCE_S)
            assert len(staying.notified) == told + 1
            for member in leaving:
                await member.close()
            await staying.close()

    run(scenario())


def test_groups_with_notification_off_are_not_told(broker: BrokerContext) -> None:
    broker.subscription_group_manager.update(
        SubscriptionGroupConfig(group_name=GROUP, notify_consumer_ids_changed_enable=False)
    )

    async def scenario() -> None:
        async with Serving(broker) as serving:
            one, two = Member(serving, "c1"), Member(serving, "c2")
            await one.heartbeat()
            await two.heartbeat()
            await two.unregister()
            await asyncio.sleep(0.1)
            assert one.notified == two.notified == []
            assert broker.client_manager.consumer_ids(GROUP) == ["c1"]
            for member in (one, two):
                await member.close()

    run(scenario())


def test_a_silent_client_is_disconnected_by_the_scan_without_notifications(
    broker: BrokerContext,
) -> None:
    async def scenario() -> None:
        async with Serving(broker) as serving:
            silent, talking = Member(serving, "silent"), Member(serving, "talking")
            await talking.heartbeat()
            await until(lambda: len(talking.notified) == 1)
            await silent.heartbeat()
            await until(lambda: len(talking.notified) == 2)
            broker.client_manager.channel_expired_timeout_ms = 1_000
            broker.client_manager.scan_not_active_channels()
            assert broker.client_manager.consumer_ids(GROUP) == ["talking", "silent"]
            broker.client_manager.channel_expired_timeout_ms = -1
            closed = broker.client_manager.scan_not_active_channels()
            assert len(closed) == 2
            await until(lambda: not serving.server.connections)
            await asyncio.sleep(2 * NOTIFY_COALESCE_S)
            assert len(talking.notified) == 2
            assert broker.client_manager.consumer_ids(GROUP) == []
            for member in (silent, talking):
                await member.close()

    run(scenario())


def test_unregistering_a_producer_group(broker: BrokerContext) -> None:
    body = java_heartbeat("p1", GROUP).encode()

    async def scenario() -> None:
        async with Serving(broker) as serving:
            await serving.invoke(create_request(RequestCode.HEART_BEAT, body=body))
            assert broker.client_manager.producer_connection("PID_java") is not None
            header = UnregisterClientRequestHeader(client_id="p1", producer_group="PID_java")
            response = await serving.invoke(create_request(RequestCode.UNREGISTER_CLIENT, header))
            assert response.code == ResponseCode.SUCCESS
            assert broker.client_manager.producer_connection("PID_java") is None
            assert broker.client_manager.consumer_ids(GROUP) == ["p1"]

    run(scenario())


# -- CHECK_CLIENT_CONFIG ---------------------------------------------------------------------------


def test_client_config_checks_accept_tags_and_refuse_sql92(broker: BrokerContext) -> None:
    def check(subscription: SubscriptionData | None) -> RemotingCommand:
        body = CheckClientRequestBody(client_id="c1", group=GROUP, subscription_data=subscription)
        return create_request(RequestCode.CHECK_CLIENT_CONFIG, body=body.encode())

    async def scenario() -> None:
        async with Serving(broker) as serving:
            tags = await serving.invoke(check(SubscriptionData.from_expression(TOPIC, "TagA")))
            sql = await serving.invoke(
                check(SubscriptionData.from_expression(TOPIC, "a > 5", "SQL92"))
            )
            nothing = await serving.invoke(check(None))
            no_body = await serving.invoke(create_request(RequestCode.CHECK_CLIENT_CONFIG))
        assert tags.code == nothing.code == no_body.code == ResponseCode.SUCCESS
        assert (sql.code, sql.remark) == (
            ResponseCode.SYSTEM_ERROR,
            "The broker does not support consumer to filter message by SQL92",
        )

    run(scenario())


# -- LOCK_BATCH_MQ / UNLOCK_BATCH_MQ ---------------------------------------------------------------


def test_cpp_lock_bodies_lock_and_unlock_queues_per_client(broker: BrokerContext) -> None:
    queues = [{"topic": TOPIC, "brokerName": "broker-a", "queueId": n} for n in range(3)]

    def body(client_id: str, mqs: list[dict[str, Any]]) -> dict[str, Any]:
        return {"consumerGroup": GROUP, "clientId": client_id, "mqSet": mqs}

    def locked(response: RemotingCommand) -> list[int]:
        assert response.code == ResponseCode.SUCCESS
        data = json.loads(bytes(response.body or b""))
        return sorted(mq["queueId"] for mq in data["lockOKMQSet"])

    async def scenario() -> None:
        async with Serving(broker) as serving:
            cpp = await RawCppClient.connect(serving)
            first = await cpp.request(RequestCode.LOCK_BATCH_MQ, body("cpp-a", queues[:2]))
            second = await cpp.request(RequestCode.LOCK_BATCH_MQ, body("cpp-b", queues))
            unlocked = await cpp.request(RequestCode.UNLOCK_BATCH_MQ, body("cpp-a", queues[:1]))
            again = await cpp.request(RequestCode.LOCK_BATCH_MQ, body("cpp-b", queues))
            cpp.close()
        assert locked(first) == [0, 1]
        assert locked(second) == [2]
        assert unlocked.code == ResponseCode.SUCCESS
        assert locked(again) == [0, 2]

    run(scenario())


def test_lock_answers_are_lock_batch_response_bodies(broker: BrokerContext) -> None:
    mq = MessageQueue(TOPIC, "broker-a", 0)
    request = LockBatchRequestBody(consumer_group=GROUP, client_id="java-a", mq_set=[mq])

    async def scenario() -> None:
        async with Serving(broker) as serving:
            response = await serving.invoke(
                create_request(RequestCode.LOCK_BATCH_MQ, body=request.encode())
            )
        assert response.body is not None
        assert bytes(response.body).startswith(b'{"lockOKMQSet":[')
        assert LockBatchResponseBody.decode(response.body).lock_ok_mq_set == [mq]

    run(scenario())
