"""Building commands: opaques, flags, headers by request code."""

from __future__ import annotations

import itertools

import pytest

from rmq.remoting import command as command_module
from rmq.remoting.codes import RPC_ONEWAY, RPC_TYPE, RequestCode, ResponseCode
from rmq.remoting.command import (
    RemotingCommand,
    create_request,
    create_response,
    next_opaque,
    not_supported_response,
)
from rmq.remoting.headers import (
    GetRouteInfoRequestHeader,
    SendMessageRequestHeader,
    UnregisterClientResponseHeader,
)

SEND_HEADER = SendMessageRequestHeader(
    producer_group="PG",
    topic="T",
    default_topic="TBW102",
    default_topic_queue_nums=4,
    queue_id=0,
    sys_flag=0,
    born_timestamp=1,
    flag=0,
)


def test_requests_get_fresh_opaques() -> None:
    first = create_request(RequestCode.HEART_BEAT)
    second = create_request(RequestCode.HEART_BEAT)
    assert second.opaque > first.opaque >= 0
    assert not first.is_response and not first.is_oneway


def test_opaques_stay_non_negative_past_int32(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(command_module, "_opaques", itertools.count(2**31 - 1))
    assert [next_opaque(), next_opaque(), next_opaque()] == [2**31 - 1, 0, 1]


def test_request_header_is_encoded_into_ext_fields() -> None:
    request = create_request(
        RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic="T")
    )
    assert request.ext_fields == {"topic": "T"}
    assert request.read_header(GetRouteInfoRequestHeader) == GetRouteInfoRequestHeader(topic="T")


@pytest.mark.parametrize(
    "code",
    [
        RequestCode.SEND_MESSAGE_V2,
        RequestCode.SEND_BATCH_MESSAGE,
        RequestCode.SEND_REPLY_MESSAGE_V2,
    ],
)
def test_v2_send_codes_use_short_keys(code: RequestCode) -> None:
    request = create_request(code, SEND_HEADER, body=b"b")
    assert request.ext_fields is not None and request.ext_fields["a"] == "PG"
    assert "producerGroup" not in request.ext_fields
    assert request.read_header(SendMessageRequestHeader) == SEND_HEADER


@pytest.mark.parametrize("code", [RequestCode.SEND_MESSAGE, RequestCode.SEND_REPLY_MESSAGE])
def test_v1_send_codes_use_long_keys(code: RequestCode) -> None:
    request = create_request(code, SEND_HEADER)
    assert request.ext_fields is not None and request.ext_fields["producerGroup"] == "PG"
    assert request.read_header(SendMessageRequestHeader) == SEND_HEADER


def test_responses_are_marked_and_empty_headers_give_an_empty_map() -> None:
    response = create_response(ResponseCode.SUCCESS, None, UnregisterClientResponseHeader())
    assert response.flag == RPC_TYPE and response.is_response
    assert response.ext_fields == {}
    assert create_response(ResponseCode.SYSTEM_ERROR, "boom").ext_fields is None


def test_not_supported_response_names_the_code_like_java() -> None:
    response = not_supported_response(RemotingCommand(4242))
    assert response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert response.remark == " request type 4242 not supported"


def test_flags_and_names() -> None:
    command = RemotingCommand(RequestCode.PULL_MESSAGE)
    command.mark_oneway()
    assert command.flag == RPC_ONEWAY and command.is_oneway
    assert command.code_name == "PULL_MESSAGE(11)"
    command.mark_response()
    assert command.code_name == "SLAVE_NOT_AVAILABLE(11)"
    assert RemotingCommand(9999).code_name == "9999"


def test_ext_fields_are_added_after_the_header_fields() -> None:
    command = RemotingCommand(RequestCode.QUERY_MESSAGE)
    command.add_ext_field("_UNIQUE_KEY_QUERY", "true")
    assert command.ext_fields == {"_UNIQUE_KEY_QUERY": "true"}
    request = create_request(
        RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic="T")
    )
    request.add_ext_field("extra", "1")
    assert list(request.ext_fields or {}) == ["topic", "extra"]
