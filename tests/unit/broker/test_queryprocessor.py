"""QUERY_MESSAGE and VIEW_MESSAGE_BY_ID: lookups by key, unique key and commitlog offset."""

from __future__ import annotations

import struct

import pytest

from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand
from rmq.server.broker.context import BrokerContext
from rmq.server.broker.processor.queryprocessor import QueryMessageProcessor
from tests.unit.broker.helpers import (
    STORE_TIME,
    call,
    decoded,
    record_bytes,
    send_v1,
    stored_offset,
)
from tests.unit.remoting.wire import cpp_request


@pytest.fixture
def processor(broker: BrokerContext) -> QueryMessageProcessor:
    return QueryMessageProcessor(broker)


def send(broker: BrokerContext, topic: str, keys: str, uniq: str, body: bytes) -> int:
    """Store one message through the send path; returns its commitlog offset."""
    props = {"UNIQ_KEY": uniq, "KEYS": keys, "TAGS": "TagA"}
    return stored_offset(broker, send_v1(topic, body, props=props))


def query(
    key: str, topic: str = "TopicTest", max_num: int = 32, **extra: object
) -> RemotingCommand:
    ext: dict[str, object] = {
        "topic": topic,
        "key": key,
        "maxNum": max_num,
        "beginTimestamp": 0,
        "endTimestamp": STORE_TIME + 1,
    }
    ext.update(extra)
    return decoded(cpp_request(RequestCode.QUERY_MESSAGE, 7, ext))


def body_records(response: RemotingCommand) -> list[bytes]:
    """Split a response body into records by their TOTALSIZE (spec §3.9)."""
    assert response.body is None
    data = b"".join(bytes(segment) for segment in response.body_segments)
    records = []
    pos = 0
    while pos < len(data):
        (size,) = struct.unpack_from(">i", data, pos)
        records.append(data[pos : pos + size])
        pos += size
    return records


def test_query_by_key_returns_the_stored_records(
    broker: BrokerContext, processor: QueryMessageProcessor
) -> None:
    first = send(broker, "TopicTest", "order-1 shared", "U1", b"one")
    send(broker, "TopicTest", "order-2", "U2", b"two")
    third = send(broker, "TopicTest", "shared", "U3", b"three")
    last = send(broker, "OtherTopic", "shared", "U4", b"elsewhere")

    response = call(processor.query_message, query("shared"))

    assert response.code == ResponseCode.SUCCESS and response.remark is None
    assert body_records(response) == [record_bytes(broker, first), record_bytes(broker, third)]
    assert all(isinstance(segment, memoryview) for segment in response.body_segments)
    ext = response.ext_fields
    assert ext is not None
    assert ext["indexLastUpdateTimestamp"] == str(STORE_TIME)
    assert ext["indexLastUpdatePhyoffset"] == str(last)


def test_query_by_unique_key_caps_max_num(
    broker: BrokerContext, processor: QueryMessageProcessor
) -> None:
    offsets = [send(broker, "TopicTest", "k", "SAME", b"%d" % n) for n in range(40)]

    plain = call(processor.query_message, query("SAME", max_num=64))
    unique = call(processor.query_message, query("SAME", max_num=64, _UNIQUE_KEY_QUERY="true"))

    assert len(body_records(plain)) == 40
    # The index walks from the newest entry: the 32 latest messages, oldest first.
    assert body_records(unique) == [record_bytes(broker, offset) for offset in offsets[-32:]]


def test_query_with_a_colliding_hash_is_filtered(
    broker: BrokerContext, processor: QueryMessageProcessor
) -> None:
    # "Aa" and "BB" have the same Java hashCode, so "TopicTest#Aa" and "TopicTest#BB" share
    # an index slot and hash: only the record that really carries the key is answered.
    aa = send(broker, "TopicTest", "Aa", "U1", b"aa")
    send(broker, "TopicTest", "BB", "U2", b"bb")

    response = call(processor.query_message, query("Aa"))

    assert body_records(response) == [record_bytes(broker, aa)]


def test_query_without_a_match(broker: BrokerContext, processor: QueryMessageProcessor) -> None:
    send(broker, "TopicTest", "present", "U1", b"x")

    response = call(processor.query_message, query("absent"))

    assert (response.code, response.remark) == (
        ResponseCode.QUERY_NOT_FOUND,
        "can not find message, maybe time range not correct",
    )
    assert response.body_segments == ()
    assert response.ext_fields is not None
    assert set(response.ext_fields) == {"indexLastUpdateTimestamp", "indexLastUpdatePhyoffset"}


def test_query_outside_the_time_range(
    broker: BrokerContext, processor: QueryMessageProcessor
) -> None:
    send(broker, "TopicTest", "present", "U1", b"x")

    response = call(processor.query_message, query("present", endTimestamp=STORE_TIME - 1))

    assert response.code == ResponseCode.QUERY_NOT_FOUND


def test_view_message_by_offset(broker: BrokerContext, processor: QueryMessageProcessor) -> None:
    send(broker, "TopicTest", "k1", "U1", b"first")
    second = send(broker, "TopicTest", "k2", "U2", b"second")
    request = decoded(cpp_request(RequestCode.VIEW_MESSAGE_BY_ID, 8, {"offset": second}))

    response = call(processor.view_message_by_id, request)

    assert response.code == ResponseCode.SUCCESS
    assert response.body is not None
    assert bytes(response.body) == record_bytes(broker, second)


@pytest.mark.parametrize("offset", [1, 10**9, -5])
def test_view_message_at_no_record(
    broker: BrokerContext, processor: QueryMessageProcessor, offset: int
) -> None:
    send(broker, "TopicTest", "k1", "U1", b"first")
    request = decoded(cpp_request(RequestCode.VIEW_MESSAGE_BY_ID, 8, {"offset": str(offset)}))

    response = call(processor.view_message_by_id, request)

    assert (response.code, response.remark) == (
        ResponseCode.SYSTEM_ERROR,
        f"can not find message by the offset, {offset}",
    )
    assert response.body is None
