"""`rmq produce` input parsing and result rows: what a line becomes, and what is refused."""

from __future__ import annotations

import base64
import json

import pytest

from rmq.cli.produce import (
    InputFormat,
    Outgoing,
    describe_lines,
    parse_header,
    parse_line,
)
from rmq.cli.produce_send import result_rows
from rmq.client.api import SendResult, SendStatus
from rmq.common.jsonrecord import RecordDefaults, RecordJsonError
from rmq.remoting.bodies import MessageQueue
from tests.unit.cli.conftest import RunRmq

TOPIC = "Orders"


def parse(
    text: str | bytes, fmt: InputFormat = InputFormat.AUTO, defaults: RecordDefaults | None = None
) -> Outgoing | None:
    raw = text.encode() if isinstance(text, str) else text
    return parse_line(TOPIC, 7, raw, fmt, defaults or RecordDefaults())


def record(**fields: object) -> str:
    return json.dumps(fields, ensure_ascii=False)


def test_a_full_record_becomes_a_message() -> None:
    item = parse(
        record(
            body="hello",
            tags="TagA",
            keys=["k1", "ключ"],
            properties={"名前": "値", "n": 3, "ok": True},
            queueId=2,
            delayLevel=3,
            flag=-5,
        )
    )
    assert item is not None
    message = item.message
    assert item.line == 7
    assert (message.topic, message.body, message.tags) == (TOPIC, b"hello", "TagA")
    assert message.keys_text == "k1 ключ"
    assert message.properties == {"名前": "値", "n": "3", "ok": "true"}
    assert (message.queue_id, message.delay_level, message.flag) == (2, 3, -5)
    assert item.sharding_key is None


def test_base64_bodies_are_decoded_and_json_values_sent_as_json_text() -> None:
    binary = bytes(range(256))
    item = parse(record(body=base64.b64encode(binary).decode(), bodyEncoding="base64"))
    assert item is not None and item.message.body == binary
    item = parse(record(body={"a": [1, 2]}))
    assert item is not None and item.message.body == b'{"a":[1,2]}'


def test_keys_may_be_one_space_separated_string() -> None:
    item = parse(record(body="x", keys="a  b c"))
    assert item is not None and item.message.keys_text == "a b c"


def test_consume_output_fields_and_system_properties_are_ignored() -> None:
    consumed = record(
        topic="Elsewhere",
        brokerName="broker-a",
        queueOffset=17,
        msgId="C0A8000100002A9F0000000000000000",
        body="copied",
        tags="T",
        keys=["k"],
        properties={"UNIQ_KEY": "X", "TAGS": "T", "KEYS": "k", "MIN_OFFSET": "0", "mine": "v"},
    )
    item = parse(consumed)
    assert item is not None
    message = item.message
    assert message.topic == TOPIC
    assert message.properties == {"mine": "v"}
    assert (message.tags, message.keys_text) == ("T", "k")


def test_defaults_apply_unless_the_record_sets_its_own() -> None:
    defaults = RecordDefaults(tags="D", keys=("dk",), properties={"a": "1", "b": "1"})
    item = parse(record(body="x", properties={"b": "2"}), defaults=defaults)
    assert item is not None
    assert (item.message.tags, item.message.keys_text) == ("D", "dk")
    assert item.message.properties == {"a": "1", "b": "2"}
    item = parse(record(body="x", tags="R", keys=["rk"]), defaults=defaults)
    assert item is not None and (item.message.tags, item.message.keys_text) == ("R", "rk")
    item = parse("plain text", defaults=defaults)
    assert item is not None and item.message.properties == {"a": "1", "b": "1"}


def test_auto_format_reads_braces_as_records_and_anything_else_as_a_body() -> None:
    item = parse("  not json, {braces} later")
    assert item is not None and item.message.body == b"  not json, {braces} later"
    with pytest.raises(RecordJsonError, match=r"^not a JSON object \(unexpected"):
        parse("{broken")
    with pytest.raises(RecordJsonError, match='no "body" field'):
        parse(record(orderId=1))


def test_lines_format_sends_the_line_byte_for_byte() -> None:
    raw = b'{"body": "x"}\r\xff'
    item = parse(raw, InputFormat.LINES)
    assert item is not None and item.message.body == raw
    with pytest.raises(RecordJsonError, match="body length is zero"):
        parse(b"", InputFormat.LINES)


def test_blank_lines_are_skipped_in_json_and_auto_formats() -> None:
    assert parse("   ") is None
    assert parse("", InputFormat.JSON) is None


def test_json_format_refuses_plain_lines_and_non_objects() -> None:
    with pytest.raises(
        RecordJsonError,
        match=r"^not a JSON object \(unexpected character at column 1\); -f lines sends each line",
    ):
        parse("plain", InputFormat.JSON)
    with pytest.raises(RecordJsonError, match=r"^not a JSON object but an array; -f lines"):
        parse("[1, 2]", InputFormat.JSON)


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"body": None}, '"body" is null'),
        ({"body": "!!", "bodyEncoding": "base64"}, "not valid base64"),
        ({"body": "x", "bodyEncoding": "zstd"}, 'unknown "bodyEncoding"'),
        ({"body": "x", "tags": 5}, '"tags" must be a string'),
        ({"body": "x", "keys": ["a b"]}, "has a space"),
        ({"body": "x", "keys": [1]}, '"keys" must be an array of strings'),
        ({"body": "x", "properties": []}, '"properties" must be an object'),
        ({"body": "x", "properties": {"p": None}}, "property p must be"),
        ({"body": "x", "properties": {"p": "a\u0001b"}}, "separate properties"),
        ({"body": "x", "queueId": -1}, '"queueId" must be an integer'),
        ({"body": "x", "delayLevel": "3"}, '"delayLevel" must be an integer'),
        ({"body": "x", "flag": True}, '"flag" must be an integer'),
        ({"body": ""}, "body length is zero"),
    ],
)
def test_invalid_records_are_refused_with_the_reason(fields: dict[str, object], error: str) -> None:
    with pytest.raises(RecordJsonError, match=error):
        parse(record(**fields))


def test_sharding_key_from_the_record_or_the_field_named() -> None:
    item = parse(record(body="x", shardingKey=42))
    assert item is not None and item.sharding_key == "42"
    field = RecordDefaults(sharding_key_field="orderId")
    item = parse(record(body="x", orderId="o-1"), defaults=field)
    assert item is not None and item.sharding_key == "o-1"
    item = parse(record(body="x", properties={"orderId": "o-2"}), defaults=field)
    assert item is not None and item.sharding_key == "o-2"
    item = parse('{"orderId": 7, "amount": 1}', InputFormat.LINES, defaults=field)
    assert item is not None
    assert (item.sharding_key, item.message.body) == ("7", b'{"orderId": 7, "amount": 1}')
    with pytest.raises(RecordJsonError, match="no 'orderId' field"):
        parse(record(body="x"), defaults=field)
    with pytest.raises(RecordJsonError, match="needs a JSON object: the line is not a JSON object"):
        parse("plain", InputFormat.LINES, defaults=field)


def test_result_rows_of_a_batch_split_the_ids_and_count_the_offsets() -> None:
    queue = MessageQueue("Orders", "broker-a", 3)
    result = SendResult(SendStatus.SEND_OK, "U1,U2,U3", "O1,O2,O3", queue, 40)
    rows = result_rows([5, 6, 8], result)
    assert rows == [
        {
            "line": line,
            "msgId": f"U{n}",
            "offsetMsgId": f"O{n}",
            "brokerName": "broker-a",
            "queueId": 3,
            "queueOffset": 39 + n,
            "status": "SEND_OK",
        }
        for n, line in ((1, 5), (2, 6), (3, 8))
    ]


def test_describe_lines_names_at_most_ten() -> None:
    assert describe_lines([4]) == "line 4"
    assert describe_lines([4, 7]) == "lines 4, 7"
    assert describe_lines(list(range(1, 14))) == "lines 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 and 3 more"


def test_parse_header() -> None:
    assert parse_header("a=b=c") == ("a", "b=c")
    assert parse_header("empty=") == ("empty", "")


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--sync", "--async"], "give at most one of --sync, --async and --oneway"),
        (["--in-flight", "4"], "--in-flight applies to --async only"),
        (["--batch", "4", "--oneway"], "--batch cannot be combined"),
        (["-H", "novalue"], "'novalue' is not name=value"),
        (["%bad topic"], "TOPIC"),
    ],
)
def test_bad_usage_exits_2_before_connecting(rmq: RunRmq, args: list[str], error: str) -> None:
    topic = [] if any(arg.startswith("%") for arg in args) else ["Orders"]
    result = rmq("produce", *topic, *args, "-n", "127.0.0.1:1")
    assert result.returncode == 2, result.stderr
    assert error in result.stderr
    assert result.stdout == ""
