"""Requests of the real C++ client, rebuilt byte for byte as it sends them, decode correctly.

The captures hold the start-up requests of the Apache C++ client (one JSON object per frame,
as a capturing server logged them).  Each request is rebuilt the way that client writes it
(jsoncpp FastWriter: keys sorted, no serializeTypeCurrentRPC, trailing newline counted in the
header length, no serialize byte) and decoded with rmq's codec.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rmq.remoting.codes import LanguageCode, RequestCode, SerializeType
from rmq.remoting.headers import (
    GetRouteInfoRequestHeader,
    PullMessageRequestHeader,
    SendMessageRequestHeader,
)
from tests.unit.remoting.wire import cpp_request, decode

CAPTURES = Path(__file__).parent / "captures"


def _captured_requests() -> list[dict[str, object]]:
    requests = []
    for path in sorted(CAPTURES.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            if record.get("dir") == "req":
                requests.append(record)
    return requests


CAPTURED = _captured_requests()


def test_captures_are_present() -> None:
    assert len(CAPTURED) >= 10


@pytest.mark.parametrize("record", CAPTURED, ids=lambda r: f"{r['code']}-{r['opaque']}")
def test_captured_cpp_request_decodes(record: dict[str, object]) -> None:
    ext_fields = record["extFields"]
    assert isinstance(ext_fields, dict)
    code, opaque = record["code"], record["opaque"]
    assert isinstance(code, int) and isinstance(opaque, int)
    command = decode(cpp_request(code, opaque, ext_fields))
    assert command.code == code
    assert command.opaque == opaque
    assert command.remark == ""
    assert command.language is LanguageCode.CPP
    assert command.version == 63
    assert command.serialize_type is SerializeType.JSON
    assert not command.is_response and not command.is_oneway
    assert command.ext_fields == {key: str(value) for key, value in ext_fields.items()}
    assert command.body is None
    if code == RequestCode.GET_ROUTEINFO_BY_TOPIC:
        header = command.read_header(GetRouteInfoRequestHeader)
        assert header.topic == ext_fields["topic"]


CREDENTIALS = {"AccessKey": "", "OnsChannel": "ALIYUN", "Signature": "a/6CAWhV64zoeNqFS0fGgIU="}


def test_cpp_send_v2_with_numeric_fields_decodes_into_the_send_header() -> None:
    ext_fields: dict[str, object] = {
        **CREDENTIALS,
        "a": "PG",
        "b": "TopicA",
        "c": "TBW102",
        "d": 4,
        "e": 2,
        "f": 0,
        "g": "1700000000123",
        "h": 0,
        "i": "KEYS\x01k1\x02WAIT\x01true\x02",
        "j": "0",
        "k": "false",
        "l": 16,
        "m": "false",
    }
    command = decode(cpp_request(RequestCode.SEND_MESSAGE_V2, 5, ext_fields, b"hello"))
    assert command.body == b"hello"
    header = command.read_header(SendMessageRequestHeader)
    assert header == SendMessageRequestHeader(
        producer_group="PG",
        topic="TopicA",
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=2,
        sys_flag=0,
        born_timestamp=1700000000123,
        flag=0,
        properties="KEYS\x01k1\x02WAIT\x01true\x02",
        reconsume_times=0,
        unit_mode=False,
        batch=False,
        max_reconsume_times=16,
    )


def test_cpp_pull_with_numeric_fields_decodes_into_the_pull_header() -> None:
    ext_fields: dict[str, object] = {
        **CREDENTIALS,
        "consumerGroup": "CG",
        "topic": "TopicA",
        "queueId": 1,
        "queueOffset": "10",
        "maxMsgNums": 32,
        "sysFlag": 2,
        "commitOffset": "0",
        "suspendTimeoutMillis": "15000",
        "subVersion": "1700000000000",
        "subscription": "*",
    }
    header = decode(cpp_request(RequestCode.PULL_MESSAGE, 6, ext_fields)).read_header(
        PullMessageRequestHeader
    )
    assert (header.queue_id, header.queue_offset, header.max_msg_nums) == (1, 10, 32)
    assert (header.sys_flag, header.suspend_timeout_millis) == (2, 15000)
    assert header.sub_version == 1700000000000
    assert header.expression_type is None
