"""The admin requests the broker answers by calling its consumers (ClientCallProcessor): the
refusals Apache's Broker2Client and callConsumer give, driven directly, and the calls to a
client served over real connections: a stand-in consumer client heartbeats, then an admin
client resets offsets, asks for status and running info and consumes a message directly,
and the test checks what reached the consumer client and what the admin got back."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from rmq.remoting.bodies import (
    ConsumeFromWhere,
    ConsumeType,
    MessageModel,
    MessageQueue,
    ResetOffsetBody,
    SubscriptionData,
)
from rmq.remoting.bodies.consumerinfo import (
    CMResult,
    ConsumeMessageDirectlyResult,
    ConsumerRunningInfo,
    GetConsumerStatusBody,
    ResetOffsetBodyForC,
)
from rmq.remoting.client import RemotingClient
from rmq.remoting.codes import LanguageCode, RequestCode, ResponseCode
from rmq.remoting.command import (
    UNSET_RESPONSE_REMARK,
    RemotingCommand,
    create_request,
    create_response,
)
from rmq.remoting.connection import Connection
from rmq.remoting.headers import (
    ConsumeMessageDirectlyResultRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetConsumerStatusRequestHeader,
    ResetOffsetRequestHeader,
)
from rmq.remoting.server import RemotingServer
from rmq.server.broker.client.clientmanager import ClientChannelInfo
from rmq.server.broker.context import BrokerContext
from rmq.server.broker.processor.clientcallprocessor import ClientCallProcessor
from rmq.server.broker.processor.clientprocessor import ClientProcessor
from tests.unit.broker.helpers import (
    GROUP,
    TOPIC,
    FakeChannel,
    call,
    heartbeat_request,
    put,
    run,
    until,
)

pytestmark = pytest.mark.serving_broker

CLIENT_ID = "10.0.0.7@4242"


def reset_request(topic: str = TOPIC, timestamp: int = -1, force: bool = True) -> RemotingCommand:
    header = ResetOffsetRequestHeader(topic=topic, group=GROUP, timestamp=timestamp, is_force=force)
    return create_request(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, header)


def running_info_request(client_id: str = CLIENT_ID) -> RemotingCommand:
    header = GetConsumerRunningInfoRequestHeader(consumer_group=GROUP, client_id=client_id)
    return create_request(RequestCode.GET_CONSUMER_RUNNING_INFO, header)


def status_request(client_addr: str | None = None) -> RemotingCommand:
    header = GetConsumerStatusRequestHeader(topic=TOPIC, group=GROUP, client_addr=client_addr)
    return create_request(RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, header)


def commit_offsets(broker: BrokerContext, offsets: dict[int, int]) -> None:
    for queue_id, offset in offsets.items():
        broker.consumer_offset_manager.commit("test", GROUP, TOPIC, queue_id, offset)


def register(broker: BrokerContext, version: int) -> None:
    info = ClientChannelInfo(FakeChannel("10.0.0.7:5000"), CLIENT_ID, LanguageCode.JAVA, version)
    broker.client_manager.register_consumer(
        GROUP,
        info,
        ConsumeType.CONSUME_PASSIVELY,
        MessageModel.CLUSTERING,
        ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
        [SubscriptionData.from_expression(TOPIC, "*")],
        True,
    )


def body(command: RemotingCommand) -> bytes:
    assert command.body is not None
    return bytes(command.body)


def answer(broker: BrokerContext, request: RemotingCommand) -> tuple[int, str | None]:
    handler = ClientCallProcessor(broker).handlers()[request.code]
    response = call(handler, request)
    return response.code, response.remark


# -- refusals ---------------------------------------------------------------------------------


def test_reset_offset_of_an_unknown_topic(broker: BrokerContext) -> None:
    assert answer(broker, reset_request(topic="NoSuchTopic")) == (
        ResponseCode.SYSTEM_ERROR,
        "[reset-offset] reset offset failed, no topic in this broker. topic=NoSuchTopic",
    )


def test_reset_offset_of_a_group_without_offsets(broker: BrokerContext) -> None:
    assert answer(broker, reset_request()) == (
        ResponseCode.SYSTEM_ERROR,
        f"THe consumer group <{GROUP}> not exist",
    )


def test_reset_offset_of_a_group_with_no_member_online(broker: BrokerContext) -> None:
    commit_offsets(broker, dict.fromkeys(range(4), 0))
    assert answer(broker, reset_request(timestamp=123)) == (
        ResponseCode.CONSUMER_NOT_ONLINE,
        f"Consumer not online, so can not reset offset, Group: {GROUP} Topic: {TOPIC} "
        "Timestamp: 123",
    )


def test_reset_offset_and_status_refuse_a_client_older_than_3_0_7(broker: BrokerContext) -> None:
    commit_offsets(broker, dict.fromkeys(range(4), 0))
    register(broker, version=20)
    refusal = (
        ResponseCode.SYSTEM_ERROR,
        "the client does not support this feature. version=V3_0_3_SNAPSHOT",
    )
    assert answer(broker, reset_request()) == refusal
    assert answer(broker, status_request()) == refusal


def test_status_of_a_group_with_no_member_online(broker: BrokerContext) -> None:
    assert answer(broker, status_request()) == (
        ResponseCode.SYSTEM_ERROR,
        f"No Any Consumer online in the consumer group: [{GROUP}]",
    )


def test_calls_to_a_client_not_online_or_too_old(broker: BrokerContext) -> None:
    assert answer(broker, running_info_request()) == (
        ResponseCode.SYSTEM_ERROR,
        f"The Consumer <{GROUP}> <{CLIENT_ID}> not online",
    )
    register(broker, version=61)
    assert answer(broker, running_info_request()) == (
        ResponseCode.SYSTEM_ERROR,
        f"The Consumer <{CLIENT_ID}> Version <V3_1_7> too low to finish, please upgrade it to "
        "V3_1_8_SNAPSHOT",
    )
    assert answer(broker, running_info_request("someone-else")) == (
        ResponseCode.SYSTEM_ERROR,
        f"The Consumer <{GROUP}> <someone-else> not online",
    )


def test_consume_directly_needs_a_stored_message(broker: BrokerContext) -> None:
    register(broker, version=409)
    header = ConsumeMessageDirectlyResultRequestHeader(
        consumer_group=GROUP, client_id=CLIENT_ID, msg_id="C0A8000A00002A9F00000000DEADBEEF"
    )
    request = create_request(RequestCode.CONSUME_MESSAGE_DIRECTLY, header)
    code, remark = answer(broker, request)
    assert code == ResponseCode.SYSTEM_ERROR
    assert remark == f"no message at commitlog offset {0xDEADBEEF}"
    header.msg_id = "not-an-id"
    request = create_request(RequestCode.CONSUME_MESSAGE_DIRECTLY, header)
    assert answer(broker, request)[0] == ResponseCode.SYSTEM_ERROR


# -- calls reaching a client ------------------------------------------------------------------


class ConsumerClient:
    """A consumer client as the broker sees one: it heartbeats, then answers the broker's
    calls with what the test gives and records what it was sent."""

    def __init__(self, client_id: str = CLIENT_ID) -> None:
        self.client_id = client_id
        self.remoting = RemotingClient()
        self.received: list[RemotingCommand] = []
        self.answers: dict[int, Callable[[RemotingCommand], RemotingCommand]] = {}
        for code in (
            RequestCode.RESET_CONSUMER_CLIENT_OFFSET,
            RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT,
            RequestCode.GET_CONSUMER_RUNNING_INFO,
            RequestCode.CONSUME_MESSAGE_DIRECTLY,
        ):
            self.remoting.register(code, self._answer)

    async def _answer(self, connection: Connection, request: RemotingCommand) -> Any:
        self.received.append(request)
        answer = self.answers.get(request.code)
        return None if answer is None else answer(request)

    async def join(self, addr: str) -> None:
        subscription = SubscriptionData.from_expression(TOPIC, "*")
        request = heartbeat_request(self.client_id, GROUP, [subscription])
        response = await self.remoting.invoke(addr, request, 5.0)
        assert response.code == ResponseCode.SUCCESS


class Served:
    def __init__(self, broker: BrokerContext) -> None:
        self.server = RemotingServer("127.0.0.1", 0)
        for processor in (ClientProcessor(broker), ClientCallProcessor(broker)):
            for code, handler in processor.handlers().items():
                self.server.register(code, handler)
        self.admin = RemotingClient()

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.server.port}"

    async def ask(self, request: RemotingCommand, timeout: float = 15.0) -> RemotingCommand:
        return await self.admin.invoke(self.addr, request, timeout)


def served(
    broker: BrokerContext, scenario: Callable[[Served, ConsumerClient], Any], timeout: float = 20
) -> None:
    async def main() -> None:
        serving = Served(broker)
        client = ConsumerClient()
        await serving.server.start()
        try:
            await client.join(serving.addr)
            await scenario(serving, client)
        finally:
            await client.remoting.close()
            await serving.admin.close()
            await serving.server.close()

    run(main(), timeout)


def test_reset_offset_tells_every_member_and_answers_the_table(broker: BrokerContext) -> None:
    for queue_id in range(4):
        for _ in range(queue_id + 2):
            put(broker, queue_id=queue_id)
    commit_offsets(broker, {0: 1, 1: 3, 2: 4, 3: 0})

    async def scenario(serving: Served, client: ConsumerClient) -> None:
        # Not forced, to the end: a queue keeps the committed offset when it is smaller.
        response = await serving.ask(reset_request(force=False))
        assert (response.code, response.remark) == (ResponseCode.SUCCESS, UNSET_RESPONSE_REMARK)
        table = ResetOffsetBody.decode(body(response)).offset_table
        name = broker.broker_config.broker_name
        assert table == {MessageQueue(TOPIC, name, q): o for q, o in enumerate([1, 3, 4, 0])}
        await until(lambda: len(client.received) == 1)
        pushed = client.received[0]
        assert pushed.code == RequestCode.RESET_CONSUMER_CLIENT_OFFSET
        assert pushed.is_oneway
        assert pushed.read_header(ResetOffsetRequestHeader) == ResetOffsetRequestHeader(
            topic=TOPIC, group=GROUP, timestamp=-1
        )
        assert pushed.body == response.body
        # Forced: every queue goes to its end.
        response = await serving.ask(reset_request(force=True))
        table = ResetOffsetBody.decode(body(response)).offset_table
        assert [table[MessageQueue(TOPIC, name, q)] for q in range(4)] == [2, 3, 4, 5]
        # A C++ tool's clients get the list form.
        request = reset_request()
        request.language = LanguageCode.CPP
        response = await serving.ask(request)
        await until(lambda: len(client.received) == 3)
        pushed_list = ResetOffsetBodyForC.decode(body(client.received[2])).offset_table
        assert {(mq.queue_id, mq.offset) for mq in pushed_list} == {(0, 2), (1, 3), (2, 4), (3, 5)}
        assert ResetOffsetBody.decode(body(response)).offset_table == table

    served(broker, scenario)


def test_status_collects_each_members_offsets(broker: BrokerContext) -> None:
    mine = {MessageQueue(TOPIC, "broker-a", 0): 7}

    async def scenario(serving: Served, client: ConsumerClient) -> None:
        client.answers[RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT] = lambda request: (
            create_response(
                ResponseCode.SUCCESS,
                body=GetConsumerStatusBody(message_queue_table=mine).encode(),
            )
        )
        response = await serving.ask(status_request())
        assert (response.code, response.remark) == (ResponseCode.SUCCESS, UNSET_RESPONSE_REMARK)
        status = GetConsumerStatusBody.decode(body(response))
        assert status.consumer_table == {CLIENT_ID: mine}
        asked = client.received[0].read_header(GetConsumerStatusRequestHeader)
        assert asked == GetConsumerStatusRequestHeader(topic=TOPIC, group=GROUP)
        response = await serving.ask(status_request(client_addr="another-client"))
        assert GetConsumerStatusBody.decode(body(response)).consumer_table == {}
        # A member that answers with an error is left out.
        client.answers[RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT] = lambda request: (
            create_response(ResponseCode.SYSTEM_ERROR, "no")
        )
        response = await serving.ask(status_request())
        assert GetConsumerStatusBody.decode(body(response)).consumer_table == {}

    served(broker, scenario)


def test_running_info_and_direct_consumption_are_the_clients_answers(
    broker: BrokerContext,
) -> None:
    stored = put(broker, body=b"direct")
    info = ConsumerRunningInfo(properties={"consumerGroup": GROUP})
    result = ConsumeMessageDirectlyResult(consume_result=CMResult.CR_LATER, spent_time_mills=3)

    async def scenario(serving: Served, client: ConsumerClient) -> None:
        client.answers[RequestCode.GET_CONSUMER_RUNNING_INFO] = lambda request: create_response(
            ResponseCode.SUCCESS, body=info.encode()
        )
        client.answers[RequestCode.CONSUME_MESSAGE_DIRECTLY] = lambda request: create_response(
            ResponseCode.SUCCESS, "kept as is", body=result.encode()
        )
        response = await serving.ask(running_info_request())
        assert (response.code, response.body) == (ResponseCode.SUCCESS, info.encode())
        forwarded = client.received[-1]
        assert forwarded.ext_fields == {
            "consumerGroup": GROUP,
            "clientId": CLIENT_ID,
            "jstackEnable": "false",
        }

        header = ConsumeMessageDirectlyResultRequestHeader(
            consumer_group=GROUP, client_id=CLIENT_ID, msg_id=stored.msg_id
        )
        response = await serving.ask(create_request(RequestCode.CONSUME_MESSAGE_DIRECTLY, header))
        assert (response.code, response.remark) == (ResponseCode.SUCCESS, "kept as is")
        assert ConsumeMessageDirectlyResult.decode(body(response)) == result
        forwarded = client.received[-1]
        assert forwarded.read_header(ConsumeMessageDirectlyResultRequestHeader).broker_name == (
            broker.broker_config.broker_name
        )
        record = broker.store.select_one_message_by_offset(stored.physical_offset)
        assert record is not None and forwarded.body == bytes(record)

    served(broker, scenario)


def test_a_client_that_does_not_answer_times_out(
    broker: BrokerContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("rmq.server.broker.processor.clientcallprocessor.CALL_CLIENT_TIMEOUT", 0.2)

    async def scenario(serving: Served, client: ConsumerClient) -> None:
        release = asyncio.Event()

        async def never(connection: Connection, request: RemotingCommand) -> None:
            await release.wait()

        client.remoting.register(RequestCode.GET_CONSUMER_RUNNING_INFO, never)
        response = await serving.ask(running_info_request())
        release.set()
        assert response.code == ResponseCode.CONSUME_MSG_TIMEOUT
        assert response.remark is not None
        assert response.remark.startswith(f"consumer <{GROUP}> <{CLIENT_ID}> Timeout: ")

    served(broker, scenario)
