"""Protocol bodies: exact fastjson text, lenient reading, the compressed register body."""

from __future__ import annotations

import dataclasses
import enum
import functools
import importlib
import json
import struct
import subprocess
import sys
import time
import typing
import zlib
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rmq.common import fastjson
from rmq.remoting import bodies
from rmq.remoting.bodies import (
    Body,
    BodyError,
    BrokerData,
    ClusterInfo,
    Connection,
    ConsumeFromWhere,
    ConsumerConnection,
    ConsumerData,
    ConsumerOffsetSerializeWrapper,
    ConsumeStats,
    ConsumeType,
    DataVersion,
    GetConsumerListByGroupResponseBody,
    GroupList,
    HeartbeatData,
    KVTable,
    LockBatchRequestBody,
    LockBatchResponseBody,
    MessageModel,
    MessageQueue,
    OffsetWrapper,
    ProducerData,
    QueueData,
    QueueTimeSpan,
    RegisterBrokerBody,
    ResetOffsetBody,
    SubscriptionData,
    SubscriptionGroupConfig,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicFilterType,
    TopicList,
    TopicOffset,
    TopicRouteData,
    TopicStatsTable,
    UnlockBatchRequestBody,
    body_crc32,
)
from rmq.remoting.codes import LanguageCode, MQVersion

# ------------------------------------------------------------------------------- heartbeat

# Spec §2.5: a Java push consumer's heartbeat, byte for byte.
JAVA_HEARTBEAT = (
    '{"clientID":"10.0.0.5@12345#88977234","consumerDataSet":[{"consumeFromWhere":'
    '"CONSUME_FROM_FIRST_OFFSET","consumeType":"CONSUME_PASSIVELY","groupName":"g1",'
    '"messageModel":"CLUSTERING","subscriptionDataSet":[{"classFilterMode":false,'
    '"codeSet":[2598919],"expressionType":"TAG","subString":"TagA","subVersion":1700000000000,'
    '"tagsSet":["TagA"],"topic":"T"},{"classFilterMode":false,"codeSet":[],"expressionType":'
    '"TAG","subString":"*","subVersion":1700000000001,"tagsSet":[],"topic":"%RETRY%g1"}],'
    '"unitMode":false}],"producerDataSet":[{"groupName":"CLIENT_INNER_PRODUCER"}]}'
)

# What the C++ client sends: jsoncpp's FastWriter (sorted keys, trailing newline), enums as
# ordinals, subVersion as a string, no classFilterMode / expressionType / unitMode.
CPP_HEARTBEAT = (
    b'{"clientID":"127.0.0.1@4242","consumerDataSet":[{"consumeFromWhere":4,"consumeType":1,'
    b'"groupName":"CID_cpp","messageModel":1,"subscriptionDataSet":[{"codeSet":[2598919],'
    b'"subString":"TagA","subVersion":"1700000000000","tagsSet":["TagA"],"topic":"T"}]}],'
    b'"producerDataSet":[{"groupName":"PID_cpp"}]}\n'
)


def _subscription(topic: str, expression: str, sub_version: int) -> SubscriptionData:
    built = SubscriptionData.from_expression(topic, expression)
    return dataclasses.replace(built, sub_version=sub_version)


def test_java_heartbeat_is_written_exactly() -> None:
    heartbeat = HeartbeatData(
        client_id="10.0.0.5@12345#88977234",
        producer_data_set=[ProducerData(group_name="CLIENT_INNER_PRODUCER")],
        consumer_data_set=[
            ConsumerData(
                group_name="g1",
                consume_type=ConsumeType.CONSUME_PASSIVELY,
                message_model=MessageModel.CLUSTERING,
                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                subscription_data_set=[
                    _subscription("T", "TagA", 1700000000000),
                    _subscription("%RETRY%g1", "*", 1700000000001),
                ],
            )
        ],
    )
    assert heartbeat.encode() == JAVA_HEARTBEAT.encode()
    assert HeartbeatData.decode(JAVA_HEARTBEAT.encode()) == heartbeat


def test_cpp_heartbeat_with_ordinals_and_trailing_newline() -> None:
    heartbeat = HeartbeatData.decode(CPP_HEARTBEAT)
    assert heartbeat.client_id == "127.0.0.1@4242"
    assert heartbeat.producer_data_set == [ProducerData(group_name="PID_cpp")]
    (consumer,) = heartbeat.consumer_data_set
    assert consumer.consume_type is ConsumeType.CONSUME_PASSIVELY
    assert consumer.message_model is MessageModel.CLUSTERING
    assert consumer.consume_from_where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    assert consumer.unit_mode is False
    (subscription,) = consumer.subscription_data_set
    assert subscription.sub_version == 1700000000000
    assert subscription.expression_type == "TAG"
    assert subscription.class_filter_mode is False
    # Re-encoded, it is what a Java client would have sent: names and every property.
    assert heartbeat.encode() == (
        b'{"clientID":"127.0.0.1@4242","consumerDataSet":[{"consumeFromWhere":'
        b'"CONSUME_FROM_FIRST_OFFSET","consumeType":"CONSUME_PASSIVELY","groupName":"CID_cpp",'
        b'"messageModel":"CLUSTERING","subscriptionDataSet":[{"classFilterMode":false,'
        b'"codeSet":[2598919],"expressionType":"TAG","subString":"TagA",'
        b'"subVersion":1700000000000,"tagsSet":["TagA"],"topic":"T"}],"unitMode":false}],'
        b'"producerDataSet":[{"groupName":"PID_cpp"}]}'
    )


def test_producer_only_heartbeat_without_consumer_key() -> None:
    heartbeat = HeartbeatData.decode(b'{"clientID":"c","producerDataSet":[{"groupName":"p"}]}')
    assert heartbeat.consumer_data_set == []
    assert heartbeat.encode() == (
        b'{"clientID":"c","consumerDataSet":[],"producerDataSet":[{"groupName":"p"}]}'
    )


# ---------------------------------------------------------------------------- subscriptions


def test_tag_code_is_java_string_hash() -> None:
    subscription = SubscriptionData.from_expression("T", "TagA")
    assert subscription.tags_set == ["TagA"]
    assert subscription.code_set == [2598919]
    assert subscription.sub_string == "TagA"
    assert subscription.expression_type == "TAG"


def test_tag_expression_is_split_trimmed_and_deduplicated() -> None:
    subscription = SubscriptionData.from_expression("T", " TagA ||TagB||\tTagA|| ||")
    assert subscription.tags_set == ["TagA", "TagB"]
    assert subscription.code_set == [2598919, 2598920]
    assert subscription.sub_string == " TagA ||TagB||\tTagA|| ||"


def test_tags_with_equal_hashes_share_one_code() -> None:
    subscription = SubscriptionData.from_expression("T", "Aa||BB")
    assert subscription.tags_set == ["Aa", "BB"]
    assert subscription.code_set == [2112]


@pytest.mark.parametrize("expression", [None, "", "*"])
def test_empty_or_star_expression_subscribes_to_all(expression: str | None) -> None:
    subscription = SubscriptionData.from_expression("T", expression)
    assert (subscription.sub_string, subscription.tags_set, subscription.code_set) == (
        "*",
        [],
        [],
    )


def test_sql92_expression_is_kept_whole() -> None:
    subscription = SubscriptionData.from_expression("T", "a > 1 || b = 2", "SQL92")
    assert subscription.expression_type == "SQL92"
    assert subscription.sub_string == "a > 1 || b = 2"
    assert subscription.tags_set == []
    assert SubscriptionData.from_expression("T", "TagA", None).tags_set == ["TagA"]
    with pytest.raises(ValueError, match="SQL92"):
        SubscriptionData.from_expression("T", "", "SQL92")


def test_new_subscription_version_is_now() -> None:
    before = time.time_ns() // 1_000_000
    version = SubscriptionData.from_expression("T", "*").sub_version
    assert before <= version <= time.time_ns() // 1_000_000


# ------------------------------------------------------------------------------ route data

ROUTE_STANDARD = (
    b'{"brokerDatas":[{"brokerAddrs":{"0":"192.168.1.10:10911"},"brokerName":"broker-a",'
    b'"cluster":"DefaultCluster"}],"filterServerTable":{},"queueDatas":[{"brokerName":'
    b'"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}'
)
ROUTE_DEFAULT = ROUTE_STANDARD.replace(b'{"0":', b"{0:")
CLUSTER_INFO = (
    b'{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"192.168.1.10:10911"},'
    b'"brokerName":"broker-a","cluster":"DefaultCluster"}},'
    b'"clusterAddrTable":{"DefaultCluster":["broker-a"]}}'
)


def _broker_a() -> BrokerData:
    return BrokerData(
        cluster="DefaultCluster", broker_name="broker-a", broker_addrs={0: "192.168.1.10:10911"}
    )


def _route() -> TopicRouteData:
    return TopicRouteData(
        queue_datas=[
            QueueData(broker_name="broker-a", read_queue_nums=4, write_queue_nums=4, perm=6)
        ],
        broker_datas=[_broker_a()],
    )


def test_route_data_standard_and_default_variants() -> None:
    route = _route()
    assert route.encode(standard=True) == ROUTE_STANDARD
    assert route.encode() == ROUTE_DEFAULT
    assert TopicRouteData.decode(ROUTE_STANDARD) == route
    assert TopicRouteData.decode(ROUTE_DEFAULT) == route


def test_route_order_topic_conf_and_standard_ordering_and_escapes() -> None:
    route = _route()
    route.order_topic_conf = "broker-ä:4"
    route.broker_datas[0].broker_addrs = {1: "10.0.0.2:10911", 0: "10.0.0.1:10911"}
    standard = route.encode(standard=True)
    assert b'"brokerAddrs":{"0":"10.0.0.1:10911","1":"10.0.0.2:10911"}' in standard
    assert b'"orderTopicConf":"broker-\\u00E4:4","queueDatas"' in standard
    default = route.encode()
    assert b'"brokerAddrs":{1:"10.0.0.2:10911",0:"10.0.0.1:10911"}' in default
    assert '"orderTopicConf":"broker-ä:4"'.encode() in default


def test_cluster_info_is_always_default_variant_text() -> None:
    info = ClusterInfo(
        broker_addr_table={"broker-a": _broker_a()},
        cluster_addr_table={"DefaultCluster": ["broker-a"]},
    )
    assert info.encode() == CLUSTER_INFO
    assert ClusterInfo.decode(CLUSTER_INFO) == info


def test_topic_list_omits_a_null_broker_address() -> None:
    assert TopicList(topic_list=["a", "b"]).encode() == b'{"topicList":["a","b"]}'
    assert TopicList(topic_list=["a"], broker_addr="10.0.0.1:10911").encode() == (
        b'{"brokerAddr":"10.0.0.1:10911","topicList":["a"]}'
    )
    assert KVTable(table={"k": "v"}).encode() == b'{"table":{"k":"v"}}'


def test_select_broker_addr_prefers_the_master() -> None:
    assert _broker_a().select_broker_addr() == "192.168.1.10:10911"
    slaves = BrokerData(cluster="c", broker_name="b", broker_addrs={1: "s1:1", 2: "s2:2"})
    assert slaves.select_broker_addr() in {"s1:1", "s2:2"}
    assert BrokerData(cluster="c", broker_name="b").select_broker_addr() is None


# ------------------------------------------------------------------- topic configs, versions


def test_topic_config_defaults_are_javas() -> None:
    config = TopicConfig.from_json({"topicName": "T"})
    assert config == TopicConfig(topic_name="T")
    assert config.encode() == (
        b'{"order":false,"perm":6,"readQueueNums":16,"topicFilterType":"SINGLE_TAG",'
        b'"topicName":"T","topicSysFlag":0,"writeQueueNums":16}'
    )


def test_reading_is_lenient_like_fastjson() -> None:
    config = TopicConfig.from_json(
        {
            "topicName": "T",
            "readQueueNums": "8",
            "writeQueueNums": 8.0,
            "perm": None,
            "order": "true",
            "topicFilterType": 1,
            "unknownProperty": [1, 2],
        }
    )
    assert config == TopicConfig(
        topic_name="T",
        read_queue_nums=8,
        write_queue_nums=8,
        order=True,
        topic_filter_type=TopicFilterType.MULTI_TAG,
    )
    offsets = ConsumerOffsetSerializeWrapper.decode(b'{"offsetTable":{"t@g":{"0":"12",1:7}}}')
    assert offsets.offset_table == {"t@g": {0: 12, 1: 7}}
    assert ProducerData.from_json({"groupName": 42}).group_name == "42"


def test_topic_config_text_form() -> None:
    config = TopicConfig(topic_name="T", read_queue_nums=4, write_queue_nums=2, perm=7)
    assert config.to_text() == "T 4 2 7 SINGLE_TAG"
    assert TopicConfig.from_text("T 4 2 7 SINGLE_TAG") == config
    assert TopicConfig.from_text("T 1 1 6 MULTI_TAG  ").topic_filter_type is (
        TopicFilterType.MULTI_TAG
    )


@pytest.mark.parametrize(
    "text",
    ["T 4 4 6", "T 4 4 6 SINGLE_TAG x", "T  4 4 6 SINGLE_TAG", "T 4 4 6 BAD", "T x 4 6 SINGLE_TAG"],
)
def test_bad_topic_config_text_is_rejected(text: str) -> None:
    with pytest.raises(BodyError, match="TopicConfig"):
        TopicConfig.from_text(text)


def test_data_version() -> None:
    version = DataVersion(timestamp=1700000000000, counter=7)
    assert version.encode() == b'{"counter":7,"timestamp":1700000000000}'
    assert DataVersion.decode(b'{"counter":7,"timestamp":1700000000000}') == version
    assert DataVersion(timestamp=1, counter=7) != version
    assert len({version, DataVersion(timestamp=1700000000000, counter=7)}) == 1
    following = version.next_version()
    assert following.counter == 8
    assert following.timestamp >= time.time_ns() // 1_000_000 - 60_000
    assert version.counter == 7
    assert DataVersion.from_json({"timestamp": 5}) == DataVersion(timestamp=5, counter=0)


# ------------------------------------------------------------------------ register broker

REGISTER_JSON = (
    b'{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":3,'
    b'"timestamp":1700000000000},"topicConfigTable":{"TopicTest":{"order":false,"perm":6,'
    b'"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"TopicTest",'
    b'"topicSysFlag":0,"writeQueueNums":4}}}}'
)


def _register_body() -> RegisterBrokerBody:
    return RegisterBrokerBody(
        topic_config_serialize_wrapper=TopicConfigSerializeWrapper(
            topic_config_table={
                "TopicTest": TopicConfig(
                    topic_name="TopicTest", read_queue_nums=4, write_queue_nums=4
                ),
                "%RETRY%g": TopicConfig(
                    topic_name="%RETRY%g",
                    read_queue_nums=1,
                    write_queue_nums=1,
                    topic_filter_type=TopicFilterType.MULTI_TAG,
                    topic_sys_flag=1,
                    order=True,
                ),
            },
            data_version=DataVersion(timestamp=1700000000000, counter=3),
        ),
        filter_server_list=["10.0.0.9:45001"],
    )


def _int32(value: int) -> bytes:
    return struct.pack(">i", value)


def _part(data: bytes) -> bytes:
    return _int32(len(data)) + data


def _compressed_payload() -> bytes:
    """The inflated compressed form of `_register_body()`, laid out from spec §2.5."""
    return (
        _part(b'{"counter":3,"timestamp":1700000000000}')
        + _int32(2)
        + _part(b"TopicTest 4 4 6 SINGLE_TAG")
        + _part(b"%RETRY%g 1 1 6 MULTI_TAG")
        + _part(b'["10.0.0.9:45001"]')
    )


def test_register_body_json_form() -> None:
    body = RegisterBrokerBody(
        topic_config_serialize_wrapper=TopicConfigSerializeWrapper(
            topic_config_table={
                "TopicTest": TopicConfig(
                    topic_name="TopicTest", read_queue_nums=4, write_queue_nums=4
                )
            },
            data_version=DataVersion(timestamp=1700000000000, counter=3),
        )
    )
    assert body.encode() == REGISTER_JSON
    assert RegisterBrokerBody.decode(REGISTER_JSON) == body


def test_compressed_register_body_layout() -> None:
    encoded = _register_body().encode(compressed=True)
    assert encoded[:2] == b"\x78\xda"  # zlib header of the best compression level
    assert zlib.decompress(encoded) == _compressed_payload()


def test_compressed_register_body_round_trip_loses_sysflag_and_order() -> None:
    decoded = RegisterBrokerBody.decode(_register_body().encode(compressed=True), compressed=True)
    expected = _register_body()
    retry = expected.topic_config_serialize_wrapper.topic_config_table["%RETRY%g"]
    retry.topic_sys_flag, retry.order = 0, False
    assert decoded == expected


def test_hand_built_compressed_body_decodes() -> None:
    payload = (
        _part(b'{"counter":12,"timestamp":1690000000000}')
        + _int32(1)
        + _part(b"OrderTopic 8 8 4 MULTI_TAG")
        + _part(b"[]")
    )
    body = RegisterBrokerBody.decode(zlib.compress(payload, 6), compressed=True)
    wrapper = body.topic_config_serialize_wrapper
    assert wrapper.data_version == DataVersion(timestamp=1690000000000, counter=12)
    assert wrapper.topic_config_table == {
        "OrderTopic": TopicConfig(
            topic_name="OrderTopic",
            read_queue_nums=8,
            write_queue_nums=8,
            perm=4,
            topic_filter_type=TopicFilterType.MULTI_TAG,
        )
    }
    assert body.filter_server_list == []


@pytest.mark.parametrize(
    ("servers", "expected"), [(b"null", None), (b"not json", []), (b'{"a":1}', [])]
)
def test_compressed_filter_server_list_as_java_reads_it(
    servers: bytes, expected: list[str] | None
) -> None:
    payload = _part(b'{"counter":1,"timestamp":2}') + _int32(0) + _part(servers)
    body = RegisterBrokerBody.decode(zlib.compress(payload), compressed=True)
    assert body.filter_server_list == expected


@pytest.mark.parametrize(
    "payload",
    [
        _compressed_payload()[:-3],  # the filter server list is cut short
        _part(b'{"counter":1}') + _int32(1) + _int32(-1),  # negative length
        _part(b'{"counter":1}') + _int32(1) + _part(b"T 1 1"),  # bad topic text
    ],
)
def test_broken_compressed_body_is_a_body_error(payload: bytes) -> None:
    with pytest.raises(BodyError, match=r"RegisterBrokerBody|TopicConfig"):
        RegisterBrokerBody.decode(zlib.compress(payload), compressed=True)
    with pytest.raises(BodyError, match="zlib"):
        RegisterBrokerBody.decode(payload, compressed=True)


INFLATE_LIMIT = 64 * 1024 * 1024  # documented cap of a compressed register body's content


def _deflate_padded(payload: bytes, inflated_size: int) -> bytes:
    """A zlib stream of `payload` followed by zero bytes up to `inflated_size` in all."""
    deflater = zlib.compressobj(9)
    chunks = [deflater.compress(payload)]
    padding = inflated_size - len(payload)
    zeros = bytes(1 << 20)
    while padding > 0:
        chunks.append(deflater.compress(zeros[: min(padding, len(zeros))]))
        padding -= len(zeros)
    chunks.append(deflater.flush())
    return b"".join(chunks)


def test_compressed_body_inflating_to_the_limit_decodes() -> None:
    body = RegisterBrokerBody.decode(
        _deflate_padded(_compressed_payload(), INFLATE_LIMIT), compressed=True
    )
    assert list(body.topic_config_serialize_wrapper.topic_config_table) == [
        "TopicTest",
        "%RETRY%g",
    ]


def test_compressed_body_inflating_past_the_limit_is_refused() -> None:
    bomb = _deflate_padded(_compressed_payload(), INFLATE_LIMIT + 1)
    assert len(bomb) < 100_000
    with pytest.raises(BodyError, match="inflates to more than 67108864 bytes"):
        RegisterBrokerBody.decode(bomb, compressed=True)
    with pytest.raises(BodyError, match="inflates to more than"):
        RegisterBrokerBody.decode_request(bomb, compressed=True, version=MQVersion.V4_9_8)


def test_decode_request_picks_the_form_by_version_and_header() -> None:
    old = MQVersion.V3_0_11 - 1
    wrapper_json = REGISTER_JSON[len(b'{"filterServerList":[],"topicConfigSerializeWrapper":') : -1]
    body = RegisterBrokerBody.decode_request(wrapper_json, compressed=False, version=old)
    assert body.filter_server_list is None
    assert list(body.topic_config_serialize_wrapper.topic_config_table) == ["TopicTest"]

    cases: list[tuple[int, list[str] | None]] = [(old, None), (MQVersion.V4_9_8, [])]
    for version, servers in cases:
        empty = RegisterBrokerBody.decode_request(None, compressed=True, version=version)
        wrapper = empty.topic_config_serialize_wrapper
        assert wrapper.data_version == DataVersion(timestamp=0, counter=0)
        assert wrapper.topic_config_table == {}
        assert empty.filter_server_list == servers

    compressed = _register_body().encode(compressed=True)
    decoded = RegisterBrokerBody.decode_request(
        memoryview(compressed), compressed=True, version=MQVersion.V4_9_8
    )
    assert decoded.filter_server_list == ["10.0.0.9:45001"]
    as_json = RegisterBrokerBody.decode_request(
        REGISTER_JSON, compressed=False, version=MQVersion.V4_9_8
    )
    assert as_json == RegisterBrokerBody.decode(REGISTER_JSON)


@pytest.mark.parametrize("compressed", [False, True])
def test_open_request_reads_the_topics_only_when_asked_in_slices(compressed: bool) -> None:
    body = _register_body()
    data = body.encode(compressed=compressed)
    opened = RegisterBrokerBody.open_request(data, compressed=compressed, version=MQVersion.V4_9_8)
    assert opened.data_version == DataVersion(timestamp=1700000000000, counter=3)
    assert opened.filter_server_list == ["10.0.0.9:45001"]
    assert opened.topic_count == 2
    slices = list(opened.topic_slices(1))
    assert [len(entries) for entries in slices] == [1, 1]
    decoded = RegisterBrokerBody.decode_request(data, compressed=compressed, version=409)
    assert dict(entry for entries in slices for entry in entries) == (
        decoded.topic_config_serialize_wrapper.topic_config_table
    )


@pytest.mark.parametrize(
    ("data", "compressed"),
    [
        (REGISTER_JSON.replace(b'"topicName":"TopicTest",', b""), False),
        (REGISTER_JSON.replace(b'"perm":6', b'"perm":"six"'), False),
        (
            zlib.compress(
                _part(b'{"counter":1}') + _int32(1) + _part(b"T 1 x 6 SINGLE_TAG") + _part(b"[]")
            ),
            True,
        ),
    ],
)
def test_a_bad_topic_entry_fails_when_its_slice_is_read(data: bytes, compressed: bool) -> None:
    opened = RegisterBrokerBody.open_request(data, compressed=compressed, version=409)
    with pytest.raises(BodyError) as when_read:
        list(opened.topic_slices(100))
    with pytest.raises(BodyError) as when_decoded:
        RegisterBrokerBody.decode_request(data, compressed=compressed, version=409)
    assert str(when_read.value) == str(when_decoded.value)


@given(
    st.lists(st.text(max_size=12), max_size=3),
    st.integers(min_value=-(10**17), max_value=10**17),
    st.integers(min_value=0, max_value=10**17),
    st.booleans(),
)
def test_peek_request_reads_what_open_request_reads_from_fastjson_bodies(
    filters: list[str], counter: int, timestamp: int, with_topics: bool
) -> None:
    body = _register_body()
    body.filter_server_list = filters
    wrapper = body.topic_config_serialize_wrapper
    wrapper.data_version = DataVersion(timestamp=timestamp, counter=counter)
    if not with_topics:
        wrapper.topic_config_table = {}
    data = body.encode()
    peeked = RegisterBrokerBody.peek_request(data, compressed=False, version=MQVersion.V4_9_8)
    opened = RegisterBrokerBody.open_request(data, compressed=False, version=MQVersion.V4_9_8)
    if peeked is not None:
        assert peeked == (opened.data_version, opened.filter_server_list)
    else:  # only a filter server with "]" or a backslash is left to open_request
        assert any("]" in server or "\\" in fastjson.dumps(server) for server in filters)


def test_peek_request_declines_every_other_body() -> None:
    peeked = RegisterBrokerBody.peek_request(
        memoryview(REGISTER_JSON), compressed=False, version=MQVersion.V4_9_8
    )
    assert peeked == (DataVersion(timestamp=1700000000000, counter=3), [])
    spaced = json.dumps(json.loads(REGISTER_JSON)).encode()
    compressed = _register_body().encode(compressed=True)
    for data, is_compressed, version in [
        (spaced, False, MQVersion.V4_9_8),  # standard JSON with spaces: parsed instead
        (REGISTER_JSON[:-1], False, MQVersion.V4_9_8),  # its end is missing
        (REGISTER_JSON, False, MQVersion.V3_0_11 - 1),  # a bare topic wrapper is expected
        (compressed, True, MQVersion.V4_9_8),
        (b"", False, MQVersion.V4_9_8),
    ]:
        assert (
            RegisterBrokerBody.peek_request(data, compressed=is_compressed, version=version) is None
        )


def test_body_crc32_is_masked_to_31_bits() -> None:
    assert body_crc32(b"Hello RocketMQ") == 1774740973  # spec §8.1
    assert body_crc32(b"a") == 0xE8B7BE43 & 0x7FFFFFFF  # CRC32("a") has the top bit set
    assert body_crc32(memoryview(b"a")) == body_crc32(b"a")
    assert body_crc32(None) == 0


# ------------------------------------------------------------- queues, locks and statistics


def test_message_queue_orders_like_java_and_is_a_value() -> None:
    queues = [
        MessageQueue("b", "x", 0),
        MessageQueue("a", "y", 1),
        MessageQueue("a", "x", 2),
        MessageQueue("a", "x", 1),
    ]
    assert sorted(queues) == [queues[3], queues[2], queues[1], queues[0]]
    assert {MessageQueue("a", "x", 1): 1}[MessageQueue("a", "x", 1)] == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        queues[0].queue_id = 5  # type: ignore[misc]


MQ_TEXT = '{"brokerName":"broker-a","queueId":1,"topic":"T"}'


def test_topic_stats_table_has_message_queue_object_keys() -> None:
    table = TopicStatsTable(
        offset_table={
            MessageQueue("T", "broker-a", 1): TopicOffset(
                min_offset=0, max_offset=120, last_update_timestamp=1700000000000
            )
        }
    )
    text = (
        '{"offsetTable":{' + MQ_TEXT + ':{"lastUpdateTimestamp":1700000000000,'
        '"maxOffset":120,"minOffset":0}}}'
    ).encode()
    assert table.encode() == text
    decoded = TopicStatsTable.decode(text)
    assert decoded == table
    assert isinstance(next(iter(decoded.offset_table)), MessageQueue)


def test_consume_stats_and_reset_offset_body() -> None:
    stats = ConsumeStats(
        offset_table={
            MessageQueue("T", "broker-a", 1): OffsetWrapper(
                broker_offset=10, consumer_offset=7, last_timestamp=5
            )
        },
        consume_tps=12.5,
    )
    assert (
        stats.encode()
        == (
            '{"consumeTps":12.5,"offsetTable":{' + MQ_TEXT + ':{"brokerOffset":10,'
            '"consumerOffset":7,"lastTimestamp":5}}}'
        ).encode()
    )
    assert ConsumeStats().encode() == b'{"consumeTps":0.0,"offsetTable":{}}'
    assert ConsumeStats.decode(b'{"consumeTps":3,"offsetTable":{}}').consume_tps == 3.0

    reset = ResetOffsetBody(offset_table={MessageQueue("T", "broker-a", 1): 100})
    assert reset.encode() == ('{"offsetTable":{' + MQ_TEXT + ":100}}").encode()
    quoted = ('{"offsetTable":{' + json.dumps(MQ_TEXT) + ":100}}").encode()
    assert ResetOffsetBody.decode(quoted) == reset


def test_lock_bodies() -> None:
    queues = [MessageQueue("T", "broker-a", 1)]
    lock = LockBatchRequestBody(consumer_group="g", client_id="c", mq_set=queues)
    assert (
        lock.encode() == ('{"clientId":"c","consumerGroup":"g","mqSet":[' + MQ_TEXT + "]}").encode()
    )
    unlock = UnlockBatchRequestBody(consumer_group="g", client_id="c", mq_set=queues)
    assert unlock.encode() == lock.encode()
    response = LockBatchResponseBody(lock_ok_mq_set=queues)
    assert response.encode() == ('{"lockOKMQSet":[' + MQ_TEXT + "]}").encode()
    assert LockBatchResponseBody.decode(response.encode()) == response


def test_consumer_offsets_pretty_file_text() -> None:
    offsets = ConsumerOffsetSerializeWrapper(offset_table={"TopicTest@g": {0: 250, 1: 249}})
    text = b'{\n\t"offsetTable":{\n\t\t"TopicTest@g":{0:250,1:249\n\t\t}\n\t}\n}'
    assert offsets.encode(pretty=True) == text
    assert ConsumerOffsetSerializeWrapper.decode(text) == offsets


def test_java_sets_stay_inline_in_pretty_format_and_lists_do_not() -> None:
    assert GroupList(group_list=["a", "b"]).encode(pretty=True) == b'{\n\t"groupList":["a","b"]\n}'
    consumers = GetConsumerListByGroupResponseBody(consumer_id_list=["a", "b"])
    assert consumers.encode(pretty=True) == b'{\n\t"consumerIdList":[\n\t\t"a",\n\t\t"b"\n\t]\n}'


def test_subscription_group_config_defaults() -> None:
    assert SubscriptionGroupConfig.decode(b'{"groupName":"g"}').encode() == (
        b'{"brokerId":0,"consumeBroadcastEnable":true,"consumeEnable":true,'
        b'"consumeFromMinEnable":true,"groupName":"g","notifyConsumerIdsChangedEnable":true,'
        b'"retryMaxTimes":16,"retryQueueNums":1,"whichBrokerWhenConsumeSlowly":1}'
    )


def test_connections_write_enums_by_name() -> None:
    connection = Connection.from_json(
        {"clientAddr": "127.0.0.1:5555", "clientId": "c1", "language": 1, "version": 409}
    )
    assert connection.language is LanguageCode.CPP
    assert connection.encode() == (
        b'{"clientAddr":"127.0.0.1:5555","clientId":"c1","language":"CPP","version":409}'
    )
    group = ConsumerConnection(connection_set=[connection])
    assert group.encode() == (
        b'{"connectionSet":[' + connection.encode() + b'],"subscriptionTable":{}}'
    )


@pytest.fixture
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.usefixtures("utc")
def test_queue_time_span_writes_formatted_times() -> None:
    span = QueueTimeSpan(
        message_queue=MessageQueue("T", "broker-a", 1),
        min_time_stamp=1700000000123,
        max_time_stamp=1700000001000,
        consume_time_stamp=0,
        delay_time=877,
    )
    assert (
        span.encode()
        == (
            '{"consumeTimeStamp":0,"consumeTimeStampStr":"1970-01-01#00:00:00:000",'
            '"delayTime":877,"maxTimeStamp":1700000001000,'
            '"maxTimeStampStr":"2023-11-14#22:13:21:000","messageQueue":' + MQ_TEXT + ","
            '"minTimeStamp":1700000000123,"minTimeStampStr":"2023-11-14#22:13:20:123"}'
        ).encode()
    )
    assert QueueTimeSpan.decode(span.encode()) == span


# ------------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("cls", "data", "message"),
    [
        (ConsumerData, b'{"consumeType":1,"messageModel":1,"consumeFromWhere":0}', "<groupName>"),
        (
            ConsumerData,
            b'{"groupName":"g","consumeType":"PUSH","messageModel":1,"consumeFromWhere":0}',
            "ConsumerData.consumeType",
        ),
        (
            ConsumerData,
            b'{"groupName":"g","consumeType":2,"messageModel":1,"consumeFromWhere":0}',
            "ConsumerData.consumeType",
        ),
        (
            HeartbeatData,
            b'{"clientID":"c","consumerDataSet":[{"groupName":"g"}]}',
            "HeartbeatData.consumerDataSet: ConsumerData: <consumeFromWhere> is missing",
        ),
        (TopicConfig, b'{"topicName":"T","perm":"rw"}', "TopicConfig.perm"),
        (TopicConfig, b'{"topicName":"T","order":"maybe"}', "TopicConfig.order"),
        (TopicList, b'{"topicList":"a"}', "TopicList.topicList"),
        (TopicList, b"[]", "expected a JSON object"),
        (TopicList, b'{"topicList":', "TopicList"),
        (TopicStatsTable, b'{"offsetTable":{"t":{}}}', "TopicStatsTable.offsetTable"),
        (BrokerData, b'{"cluster":"c","brokerName":"b","brokerAddrs":{"m":"x"}}', "brokerAddrs"),
    ],
)
def test_undecodable_bodies_raise_body_error(cls: type[Body], data: bytes, message: str) -> None:
    with pytest.raises(BodyError, match=message.replace(".", r"\.")):
        cls.decode(data)


# ------------------------------------------------------------ every body, generically

BODY_CLASSES = sorted(
    (
        value
        for value in map(functools.partial(getattr, bodies), bodies.__all__)
        if isinstance(value, type) and issubclass(value, Body) and value is not Body
    ),
    key=lambda cls: cls.__name__,
)


def _sample_value(hint: Any) -> Any:
    """A non-default value of a property type (non-ASCII text exercises the escapes)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, type(int | None)):
        return _sample_value(next(arg for arg in args if arg is not type(None)))
    if origin is typing.Annotated:
        return _sample_value(args[0])
    if origin is list:
        return [_sample_value(args[0])]
    if origin is dict:
        return {_sample_value(args[0]): _sample_value(args[1])}
    if isinstance(hint, type) and issubclass(hint, Body):
        return _sample(hint)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return list(hint)[-1]
    return {str: "ä/✓", int: 2**40 + 3, float: 0.25, bool: True}[hint]


def _sample(cls: type[Body]) -> Body:
    hints = typing.get_type_hints(cls, include_extras=True)
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    return cls(**{field.name: _sample_value(hints[field.name]) for field in fields})


def test_every_body_class_is_exported_and_covered() -> None:
    defined = {
        value
        for module in (
            bodies.route,
            bodies.client,
            bodies.admin,
            bodies.brokerquery,
            bodies.consumerinfo,
        )
        for value in vars(module).values()
        if isinstance(value, type)
        and issubclass(value, Body)
        and value.__module__ == module.__name__
    }
    assert set(BODY_CLASSES) == defined
    assert {cls.__name__ for cls in BODY_CLASSES} <= set(bodies.__all__)


def test_the_package_imports_a_body_module_when_one_of_its_names_is_used() -> None:
    """`rmq.remoting.bodies` exports every module's names, importing none until asked."""
    program = (
        "import sys, rmq.remoting.bodies as b\n"
        "loaded = lambda: sorted(m for m in sys.modules if m.startswith('rmq.remoting.bodies.'))\n"
        "print(loaded()); b.TopicRouteData; print(loaded())\n"
        "print(hasattr(b, 'dataclass'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True
    )
    before, after, private = done.stdout.splitlines()
    assert before == "[]"
    assert "rmq.remoting.bodies.route" in after and "rmq.remoting.bodies.admin" not in after
    assert private == "False"  # only the exported names, not a module's own imports
    for cls in map(functools.partial(getattr, bodies), bodies.__all__):
        if isinstance(cls, type):
            assert getattr(importlib.import_module(cls.__module__), cls.__name__) is cls


@pytest.mark.parametrize("cls", BODY_CLASSES, ids=lambda cls: cls.__name__)
@pytest.mark.parametrize("variant", [{}, {"standard": True}, {"pretty": True}], ids=str)
def test_every_body_round_trips(cls: type[Body], variant: dict[str, bool]) -> None:
    body = _sample(cls)
    assert cls.decode(body.encode(**variant)) == body
    assert cls.from_json(body.to_json()) == body


@pytest.mark.parametrize("cls", BODY_CLASSES, ids=lambda cls: cls.__name__)
def test_every_property_is_written_in_alphabetical_order(cls: type[Body]) -> None:
    keys = list(_sample(cls).to_json())
    assert keys == sorted(keys)
    assert len(keys) >= len(dataclasses.fields(cls))  # type: ignore[arg-type]
