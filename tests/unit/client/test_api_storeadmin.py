"""rmq.client.api's store maintenance, stats and half-message resume requests against a real
remoting server with scripted answers: the request on the wire, the result, the errors."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import pytest

from rmq.client import api
from rmq.client.errors import MQBrokerError
from rmq.remoting.bodies.brokerstats import BrokerStatsData, BrokerStatsItem
from rmq.remoting.client import RemotingClient
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, create_response
from tests.unit.client.fakes import run
from tests.unit.client.test_api import Answer, serve

Maintenance = Callable[[RemotingClient, str, float], Awaitable[None]]

TIMEOUT = 3.0
MAINTENANCE = [
    (RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE, api.clean_expired_consume_queue),
    (RequestCode.DELETE_EXPIRED_COMMITLOG, api.delete_expired_commitlog),
    (RequestCode.CLEAN_UNUSED_TOPIC, api.clean_unused_topic),
]


@pytest.mark.parametrize(("code", "function"), MAINTENANCE)
def test_maintenance_requests_carry_no_header(code: int, function: Maintenance) -> None:
    async def call(client: RemotingClient, addr: str) -> None:
        await function(client, addr, TIMEOUT)

    def answer(_: RemotingCommand) -> RemotingCommand:
        return create_response(ResponseCode.SUCCESS)

    received = run_serve(code, answer, call)
    assert [request.code for request in received] == [code]
    assert not received[0].ext_fields


@pytest.mark.parametrize(("code", "function"), MAINTENANCE)
def test_maintenance_refused_raises_with_the_remark(code: int, function: Maintenance) -> None:
    async def call(client: RemotingClient, addr: str) -> None:
        with pytest.raises(MQBrokerError, match="no way") as raised:
            await function(client, addr, TIMEOUT)
        assert raised.value.code == ResponseCode.SYSTEM_ERROR

    run_serve(code, lambda _: create_response(ResponseCode.SYSTEM_ERROR, "no way"), call)


def test_view_broker_stats_data_sends_name_and_key_and_decodes_the_windows() -> None:
    data = BrokerStatsData(stats_minute=BrokerStatsItem(sum=6, tps=0.1, avgpt=2.0))
    got: list[BrokerStatsData] = []

    async def call(client: RemotingClient, addr: str) -> None:
        got.append(await api.view_broker_stats_data(client, addr, "GROUP_GET_NUMS", "T@G", TIMEOUT))

    received = run_serve(
        RequestCode.VIEW_BROKER_STATS_DATA,
        lambda _: create_response(ResponseCode.SUCCESS, body=data.encode()),
        call,
    )
    assert received[0].ext_fields == {"statsName": "GROUP_GET_NUMS", "statsKey": "T@G"}
    assert got == [data]


def test_view_broker_stats_data_of_an_unknown_item_raises() -> None:
    remark = "The stats <TOPIC_PUT_NUMS> <Nope> not exist"

    async def call(client: RemotingClient, addr: str) -> None:
        with pytest.raises(MQBrokerError, match=remark):
            await api.view_broker_stats_data(client, addr, "TOPIC_PUT_NUMS", "Nope", TIMEOUT)

    run_serve(
        RequestCode.VIEW_BROKER_STATS_DATA,
        lambda _: create_response(ResponseCode.SYSTEM_ERROR, remark),
        call,
    )


@pytest.mark.parametrize(
    ("code", "expected"), [(ResponseCode.SUCCESS, True), (ResponseCode.SYSTEM_ERROR, False)]
)
def test_resume_check_half_message_answers_whether_it_worked(
    code: int, expected: bool, caplog: pytest.LogCaptureFixture
) -> None:
    got: list[bool] = []

    async def call(client: RemotingClient, addr: str) -> None:
        got.append(await api.resume_check_half_message(client, addr, "AB" * 16, TIMEOUT))

    with caplog.at_level(logging.ERROR, "rmq.client"):
        received = run_serve(
            RequestCode.RESUME_CHECK_HALF_MESSAGE,
            lambda _: create_response(code, None if expected else "it failed"),
            call,
        )
    assert received[0].ext_fields == {"msgId": "AB" * 16}
    assert got == [expected]
    assert ("it failed" in caplog.text) is not expected


def run_serve(
    code: int, answer: Answer, call: Callable[[RemotingClient, str], Awaitable[None]]
) -> list[RemotingCommand]:
    received: list[RemotingCommand] = []

    async def scenario() -> None:
        received.extend(await serve(code, answer, call))

    run(scenario())
    return received
