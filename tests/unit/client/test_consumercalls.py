"""The consumer admin calls: rmq.client.api's request functions for them (against a scripted
server: the header on the wire, the decoded answer, the broker's refusal raised with its
remark), the answers rmq's client gives a broker (served by a ClientInstance's remoting
client, asked over a real connection), and the consume service's parts of them: the rates
of ConsumerStats and the verdicts of a direct consumption."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import pytest

from rmq.client import api
from rmq.client.consumer import ConsumeStatus, MessageExt, PushConsumer
from rmq.client.consumer.consume import ConsumerStats, OrderlyConsumeService
from rmq.client.errors import MQBrokerError
from rmq.client.instance import ClientInstance
from rmq.client.messageext import decode_message
from rmq.remoting.bodies import Body, MessageQueue, ResetOffsetBody
from rmq.remoting.bodies.consumerinfo import (
    PROP_CLIENT_VERSION,
    PROP_CONSUME_TYPE,
    PROP_NAMESERVER_ADDR,
    CMResult,
    ConsumeMessageDirectlyResult,
    ConsumerRunningInfo,
    ConsumeStatusInfo,
    GetConsumerStatusBody,
)
from rmq.remoting.client import RemotingClient
from rmq.remoting.codes import RequestCode, ResponseCode
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
)
from rmq.remoting.server import RemotingServer
from tests.unit.client.fakes import LOOPBACK, run
from tests.unit.client.test_api import TIMEOUT, serve, stored_record

MQ = MessageQueue("TopicA", "broker-a", 2)


def run_serve(serving: Coroutine[Any, Any, list[RemotingCommand]]) -> list[RemotingCommand]:
    """The requests a scripted server received while serving a call."""
    return asyncio.run(asyncio.wait_for(serving, 10))


def answered(
    code: int, answer: Body, call: Callable[[RemotingClient, str], Awaitable[None]]
) -> list[RemotingCommand]:
    """Serve ``code`` with SUCCESS and ``answer``, run ``call``; the requests received."""
    return run_serve(
        serve(
            code, lambda request: create_response(ResponseCode.SUCCESS, body=answer.encode()), call
        )
    )


def body(command: RemotingCommand) -> bytes:
    assert command.body is not None
    return bytes(command.body)


# -- the request functions --------------------------------------------------------------------


def test_reset_offset_sends_the_header_and_returns_the_table() -> None:
    table = {MQ: 5}

    async def call(client: RemotingClient, addr: str) -> None:
        got = await api.invoke_broker_to_reset_offset(
            client, addr, "TopicA", "G", 1234, TIMEOUT, is_force=True
        )
        assert got == table

    received = answered(
        RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, ResetOffsetBody(offset_table=table), call
    )
    assert received[0].ext_fields == {
        "topic": "TopicA",
        "group": "G",
        "timestamp": "1234",
        "isForce": "true",
    }


def test_a_refused_reset_raises_with_the_brokers_remark() -> None:
    async def call(client: RemotingClient, addr: str) -> None:
        with pytest.raises(MQBrokerError) as raised:
            await api.invoke_broker_to_reset_offset(client, addr, "TopicA", "G", -1, TIMEOUT)
        assert (raised.value.code, raised.value.remark) == (206, "Consumer not online")

    run_serve(
        serve(
            RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
            lambda request: create_response(
                ResponseCode.CONSUMER_NOT_ONLINE, "Consumer not online"
            ),
            call,
        )
    )


def test_consumer_status_returns_the_table_per_client() -> None:
    table = {"10.0.0.1@1": {MQ: 3}}

    async def call(client: RemotingClient, addr: str) -> None:
        got = await api.invoke_broker_to_get_consumer_status(
            client, addr, "TopicA", "G", TIMEOUT, client_addr="10.0.0.1@1"
        )
        assert got == table

    received = answered(
        RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS,
        GetConsumerStatusBody(consumer_table=table),
        call,
    )
    assert received[0].read_header(GetConsumerStatusRequestHeader).client_addr == "10.0.0.1@1"


def test_running_info_and_direct_consumption_decode_the_clients_answer() -> None:
    info = ConsumerRunningInfo(properties={"a": "b"}, status_table={"T": ConsumeStatusInfo()})
    result = ConsumeMessageDirectlyResult(consume_result=CMResult.CR_SUCCESS, spent_time_mills=4)

    async def ask_info(client: RemotingClient, addr: str) -> None:
        got = await api.get_consumer_running_info(client, addr, "G", "cid", TIMEOUT, jstack=True)
        assert got == info

    received = answered(RequestCode.GET_CONSUMER_RUNNING_INFO, info, ask_info)
    assert received[0].read_header(GetConsumerRunningInfoRequestHeader).jstack_enable

    async def consume(client: RemotingClient, addr: str) -> None:
        got = await api.consume_message_directly(client, addr, "G", "cid", "MSGID", TIMEOUT)
        assert got == result

    received = answered(RequestCode.CONSUME_MESSAGE_DIRECTLY, result, consume)
    header = received[0].read_header(ConsumeMessageDirectlyResultRequestHeader)
    assert (header.consumer_group, header.client_id, header.msg_id) == ("G", "cid", "MSGID")


# -- the answers of rmq's client ------------------------------------------------------------


async def ask_instance(instance: ClientInstance, request: RemotingCommand) -> RemotingCommand:
    """Send ``request`` to the instance the way a broker does: on a connection the instance
    opened to a server (the broker), which then invokes on it."""
    connections: list[Connection] = []

    async def accept(connection: Connection, heartbeat: RemotingCommand) -> RemotingCommand:
        connections.append(connection)
        return create_response(ResponseCode.SUCCESS)

    server = RemotingServer(LOOPBACK, 0)
    server.register(RequestCode.HEART_BEAT, accept)
    async with server:
        addr = f"{LOOPBACK}:{server.port}"
        await instance.remoting.invoke(addr, create_request(RequestCode.HEART_BEAT), TIMEOUT)
        return await connections[0].send_request(request, TIMEOUT)


def test_the_client_answers_for_its_push_consumer() -> None:
    seen: list[MessageExt] = []

    async def listener(messages: list[MessageExt]) -> ConsumeStatus:
        seen.extend(messages)
        return ConsumeStatus.RECONSUME_LATER

    async def scenario() -> None:
        instance = ClientInstance("127.0.0.1:1;127.0.0.1:2")
        await instance.start()
        push = PushConsumer("G", instance=instance)
        push.subscribe("TopicA")
        push.register_listener(listener)
        try:
            await push.start()
            header = GetConsumerRunningInfoRequestHeader(consumer_group="G", client_id="x")
            response = await ask_instance(
                instance, create_request(RequestCode.GET_CONSUMER_RUNNING_INFO, header)
            )
            assert response.remark == UNSET_RESPONSE_REMARK  # as Java's answer
            info = ConsumerRunningInfo.decode(body(response))
            assert info.properties[PROP_NAMESERVER_ADDR] == "127.0.0.1:1;127.0.0.1:2;"
            assert info.properties[PROP_CONSUME_TYPE] == "CONSUME_PASSIVELY"
            assert info.properties[PROP_CLIENT_VERSION] == "V4_9_8"
            assert [sub.topic for sub in info.subscription_set] == ["%RETRY%G", "TopicA"]

            header.consumer_group = "Other"
            response = await ask_instance(
                instance, create_request(RequestCode.GET_CONSUMER_RUNNING_INFO, header)
            )
            assert (response.code, response.remark) == (
                ResponseCode.SYSTEM_ERROR,
                "The Consumer Group <Other> not exist in this consumer",
            )

            push.offset_store.update_offset(MQ, 9, increase_only=False)
            status = GetConsumerStatusRequestHeader(topic="TopicA", group="G")
            response = await ask_instance(
                instance, create_request(RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT, status)
            )
            assert GetConsumerStatusBody.decode(body(response)).message_queue_table == {MQ: 9}

            direct = ConsumeMessageDirectlyResultRequestHeader(
                consumer_group="G", broker_name="broker-a"
            )
            request = create_request(
                RequestCode.CONSUME_MESSAGE_DIRECTLY,
                direct,
                body=stored_record(b"again", 7),
            )
            response = await ask_instance(instance, request)
            result = ConsumeMessageDirectlyResult.decode(body(response))
            assert (result.consume_result, result.order) == (CMResult.CR_LATER, False)
            assert [(m.topic, m.queue_offset, m.body, m.broker_name) for m in seen] == [
                ("TopicA", 7, b"again", "broker-a")
            ]
        finally:
            await push.shutdown()
            await instance.shutdown()

    run(scenario())


# -- the consume service's parts --------------------------------------------------------------


def test_consumer_stats_rates_over_the_last_minute_and_hour() -> None:
    now = [1000.0]
    stats = ConsumerStats(clock=lambda: now[0])
    now[0] += 120
    stats.inc_pull_rt("T", 30)
    stats.inc_pull_rt("T", 10)
    stats.inc_pull_tps("T", 30)
    stats.inc_consume("T", 8, ok=3, failed=0)
    stats.inc_consume("T", 4, ok=0, failed=2)
    status = stats.status("T")
    assert status == ConsumeStatusInfo(
        pull_rt=20.0,
        pull_tps=0.5,
        consume_rt=6.0,
        consume_ok_tps=0.05,
        consume_failed_tps=2 / 60,
        consume_failed_msgs=2,
    )
    now[0] += 600  # the minute has passed: rates fall to 0, consumeRT falls back to the hour
    status = stats.status("T")
    assert (status.pull_tps, status.consume_ok_tps, status.consume_rt) == (0.0, 0.0, 6.0)
    assert status.consume_failed_msgs == 2
    now[0] += 3600
    assert stats.status("T") == ConsumeStatusInfo()
    assert stats.status("Unknown") == ConsumeStatusInfo()


@pytest.mark.parametrize(
    ("verdict", "expected"),
    [
        (ConsumeStatus.CONSUME_SUCCESS, CMResult.CR_SUCCESS),
        (ConsumeStatus.RECONSUME_LATER, CMResult.CR_LATER),
        (None, CMResult.CR_RETURN_NULL),
        (ValueError("broken"), CMResult.CR_THROW_EXCEPTION),
    ],
)
def test_a_direct_consumption_reports_the_listeners_verdict(
    verdict: ConsumeStatus | Exception | None, expected: CMResult
) -> None:
    async def listener(messages: list[MessageExt]) -> ConsumeStatus | None:
        if isinstance(verdict, Exception):
            raise verdict
        return verdict

    results: list[ConsumeMessageDirectlyResult] = []

    async def scenario() -> None:
        service = OrderlyConsumeService(PushConsumer("G", "127.0.0.1:1"), listener)
        message = decode_message(stored_record(b"x", 3), "broker-a")
        results.append(await service.consume_directly(message))

    run(scenario())
    result = results[0]
    assert (result.consume_result, result.order, result.auto_commit) == (expected, True, True)
    failed = expected is CMResult.CR_THROW_EXCEPTION
    assert result.remark == ("ValueError: broken" if failed else None)
