"""The custom header codec: declarations, round trips, V2 short keys and bad headers."""

from __future__ import annotations

import dataclasses
import typing

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rmq.remoting.errors import HeaderError
from rmq.remoting.headercodec import Long, decode_header, encode_header, header_classes
from rmq.remoting.headers import (
    GetConsumeStatsInBrokerHeader,
    GetRouteInfoRequestHeader,
    PullMessageRequestHeader,
    QueryMessageResponseHeader,
    RegisterBrokerRequestHeader,
    RegisterMessageFilterClassRequestHeader,
    ResetOffsetRequestHeader,
    SendMessageRequestHeader,
    SendMessageResponseHeader,
    UnregisterClientRequestHeader,
)

SAMPLE = {str: "text ✓", int: -(2**31), Long: 2**62, bool: True}


def _sample(cls: type) -> object:
    """An instance of `cls` with every field set to a non-default value of its type."""
    hints = typing.get_type_hints(cls, include_extras=True)
    values = {}
    for field in dataclasses.fields(cls):
        hint = hints[field.name]
        if typing.get_origin(hint) in (typing.Union, type(int | None)):
            (hint,) = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        values[field.name] = SAMPLE[hint]
    return cls(**values)


@pytest.mark.parametrize("cls", header_classes(), ids=lambda cls: cls.__name__)
def test_every_header_round_trips(cls: type) -> None:
    header = _sample(cls)
    ext_fields = encode_header(header)
    assert all(isinstance(value, str) for value in ext_fields.values())
    assert len(ext_fields) == len(dataclasses.fields(cls))
    assert decode_header(cls, ext_fields) == header


def test_every_header_class_of_the_spec_is_declared() -> None:
    assert len(header_classes()) == 78


@pytest.mark.parametrize(
    ("header", "keys"),
    [
        (UnregisterClientRequestHeader(client_id="c"), ["clientID"]),
        (
            RegisterMessageFilterClassRequestHeader(
                consumer_group="g", topic="t", class_name="C", class_crc=1
            ),
            ["consumerGroup", "topic", "className", "classCRC"],
        ),
        (GetConsumeStatsInBrokerHeader(is_order=True), ["isOrder"]),
        (
            ResetOffsetRequestHeader(topic="t", group="g"),
            ["topic", "group", "timestamp", "isForce"],
        ),
        (
            QueryMessageResponseHeader(
                index_last_update_timestamp=1, index_last_update_phyoffset=2
            ),
            ["indexLastUpdateTimestamp", "indexLastUpdatePhyoffset"],
        ),
    ],
)
def test_ext_field_keys_are_the_java_field_names(header: object, keys: list[str]) -> None:
    assert list(encode_header(header)) == keys


def test_booleans_are_written_as_java_does_and_none_is_left_out() -> None:
    header = RegisterBrokerRequestHeader(
        broker_name="b",
        broker_addr="1.2.3.4:10911",
        cluster_name="c",
        ha_server_addr="1.2.3.4:10912",
        broker_id=0,
        compressed=True,
    )
    assert encode_header(header) == {
        "brokerName": "b",
        "brokerAddr": "1.2.3.4:10911",
        "clusterName": "c",
        "haServerAddr": "1.2.3.4:10912",
        "brokerId": "0",
        "compressed": "true",
        "bodyCrc32": "0",
    }
    assert encode_header(GetRouteInfoRequestHeader(topic="T")) == {"topic": "T"}


SEND_HEADER = SendMessageRequestHeader(
    producer_group="PG",
    topic="T",
    default_topic="TBW102",
    default_topic_queue_nums=4,
    queue_id=-1,
    sys_flag=4,
    born_timestamp=1700000000000,
    flag=7,
    properties="p",
    reconsume_times=2,
    unit_mode=True,
    batch=True,
    max_reconsume_times=16,
    bname="broker-a",
)


def test_send_header_short_keys_are_written_a_to_n() -> None:
    ext_fields = encode_header(SEND_HEADER, short_keys=True)
    assert list(ext_fields) == list("abcdefghijklmn")
    assert ext_fields == {
        "a": "PG",
        "b": "T",
        "c": "TBW102",
        "d": "4",
        "e": "-1",
        "f": "4",
        "g": "1700000000000",
        "h": "7",
        "i": "p",
        "j": "2",
        "k": "true",
        "l": "16",
        "m": "true",
        "n": "broker-a",
    }


def test_send_header_long_keys_follow_the_java_field_order() -> None:
    assert list(encode_header(SEND_HEADER)) == [
        "producerGroup",
        "topic",
        "defaultTopic",
        "defaultTopicQueueNums",
        "queueId",
        "sysFlag",
        "bornTimestamp",
        "flag",
        "properties",
        "reconsumeTimes",
        "unitMode",
        "batch",
        "maxReconsumeTimes",
        "bname",
    ]


def test_v2_request_decodes_into_the_send_header() -> None:
    short = encode_header(SEND_HEADER, short_keys=True)
    assert decode_header(SendMessageRequestHeader, short, short_keys=True) == SEND_HEADER
    assert decode_header(SendMessageRequestHeader, encode_header(SEND_HEADER)) == SEND_HEADER


def test_v2_request_without_optional_keys_gets_defaults() -> None:
    ext_fields = {"a": "PG", "b": "T", "c": "TBW102", "d": "4", "e": "0", "f": "0"}
    ext_fields |= {"g": "1", "h": "0"}
    header = decode_header(SendMessageRequestHeader, ext_fields, short_keys=True)
    assert (header.unit_mode, header.batch, header.properties, header.bname) == (
        False,
        False,
        None,
        None,
    )


def test_missing_required_field_names_it() -> None:
    with pytest.raises(HeaderError, match=r"GetRouteInfoRequestHeader.*<topic> is null"):
        decode_header(GetRouteInfoRequestHeader, {"acceptStandardJsonOnly": "true"})
    with pytest.raises(HeaderError, match="<topic> is null"):
        decode_header(GetRouteInfoRequestHeader, None)
    with pytest.raises(HeaderError, match="<b> is null"):
        decode_header(SendMessageRequestHeader, {"a": "PG"}, short_keys=True)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("queueId", "abc"),
        ("queueId", "1.5"),
        ("queueId", str(2**31)),
        ("queueOffset", str(2**63)),
        ("queueOffset", ""),
    ],
)
def test_unparsable_numbers_are_header_errors(key: str, value: str) -> None:
    ext_fields = encode_header(_sample(PullMessageRequestHeader))
    ext_fields[key] = value
    with pytest.raises(HeaderError, match=f"<{key}> has a bad value"):
        decode_header(PullMessageRequestHeader, ext_fields)


def test_numbers_use_the_full_range_of_their_java_type() -> None:
    ext_fields = {"msgId": "m", "queueId": str(2**31 - 1), "queueOffset": str(-(2**63))}
    header = decode_header(SendMessageResponseHeader, ext_fields)
    assert (header.queue_id, header.queue_offset) == (2**31 - 1, -(2**63))


@pytest.mark.parametrize(
    ("text", "value"),
    [("true", True), ("TRUE", True), ("True", True), ("yes", False), ("1", False)],
)
def test_booleans_parse_like_java(text: str, value: bool) -> None:
    header = decode_header(
        GetRouteInfoRequestHeader, {"topic": "T", "acceptStandardJsonOnly": text}
    )
    assert header.accept_standard_json_only is value


def test_java_primitives_keep_their_default_when_missing() -> None:
    assert decode_header(GetConsumeStatsInBrokerHeader, {}) == GetConsumeStatsInBrokerHeader()
    header = decode_header(ResetOffsetRequestHeader, {"topic": "t", "group": "g"})
    assert (header.timestamp, header.is_force) == (0, False)


@given(
    group=st.text(min_size=1),
    queue_id=st.integers(-(2**31), 2**31 - 1),
    offsets=st.lists(st.integers(-(2**63), 2**63 - 1), min_size=4, max_size=4),
    subscription=st.none() | st.text(min_size=1),
)
def test_pull_header_round_trips_any_values(
    group: str, queue_id: int, offsets: list[int], subscription: str | None
) -> None:
    header = PullMessageRequestHeader(
        consumer_group=group,
        topic="T",
        queue_id=queue_id,
        queue_offset=offsets[0],
        max_msg_nums=32,
        sys_flag=queue_id & 0xF,
        commit_offset=offsets[1],
        suspend_timeout_millis=offsets[2],
        subscription=subscription,
        sub_version=offsets[3],
    )
    assert decode_header(PullMessageRequestHeader, encode_header(header)) == header
