"""fastjson-compatible JSON: exact bytes of the writer, leniency of the reader."""

import math
from dataclasses import dataclass
from enum import Enum
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rmq.common import fastjson
from rmq.common.fastjson import FastjsonDecodeError, JsonObjectKey


@dataclass(frozen=True)
class MessageQueue:
    topic: str
    broker_name: str
    queue_id: int

    def __fastjson_key__(self) -> dict[str, Any]:
        return {"brokerName": self.broker_name, "queueId": self.queue_id, "topic": self.topic}


class ConsumeType(Enum):
    CONSUME_ACTIVELY = 0
    CONSUME_PASSIVELY = 1


def test_compact_bean_and_scalars() -> None:
    value = {"a": 1, "b": True, "c": False, "d": "x", "e": [1, "y"], "f": {}, "g": []}
    assert fastjson.dumps(value) == '{"a":1,"b":true,"c":false,"d":"x","e":[1,"y"],"f":{},"g":[]}'


def test_integer_keys_are_written_bare() -> None:
    offsets = {"offsetTable": {"TopicTest@group": {0: 12, 1: 7}}}
    assert fastjson.dumps(offsets) == '{"offsetTable":{"TopicTest@group":{0:12,1:7}}}'


def test_null_map_values_are_dropped_unless_asked() -> None:
    bean = {"brokerAddr": None, "topicList": ["t"]}
    assert fastjson.dumps(bean) == '{"topicList":["t"]}'
    assert fastjson.dumps(bean, write_nulls=True) == '{"brokerAddr":null,"topicList":["t"]}'


def test_null_list_items_are_kept() -> None:
    assert fastjson.dumps([None, 1]) == "[null,1]"


def test_sort_keys_orders_like_fastjson_bean_properties() -> None:
    bean = {"topicName": "t", "perm": 6, "order": False, "Zeta": 1}
    assert (
        fastjson.dumps(bean, sort_keys=True) == '{"Zeta":1,"order":false,"perm":6,"topicName":"t"}'
    )


def test_object_keys_are_written_as_nested_objects() -> None:
    table = {
        "offsetTable": {
            MessageQueue("t", "b", 0): {"brokerOffset": 5, "consumerOffset": 3},
            JsonObjectKey({"brokerName": "b", "queueId": 1, "topic": "t"}): {"brokerOffset": 9},
        }
    }
    assert fastjson.dumps(table) == (
        '{"offsetTable":{'
        '{"brokerName":"b","queueId":0,"topic":"t"}:{"brokerOffset":5,"consumerOffset":3},'
        '{"brokerName":"b","queueId":1,"topic":"t"}:{"brokerOffset":9}}}'
    )


def test_object_keys_round_trip() -> None:
    queue = JsonObjectKey({"brokerName": "b", "queueId": 0, "topic": "t"})
    table = {"offsetTable": {queue: 42}}
    parsed = fastjson.loads(fastjson.dumps(table))
    assert parsed == table
    (key,) = parsed["offsetTable"]
    assert isinstance(key, JsonObjectKey)
    assert (key["topic"], key["brokerName"], key["queueId"]) == ("t", "b", 0)


def test_object_key_equality_ignores_property_order() -> None:
    first = JsonObjectKey({"topic": "t", "queueId": 0})
    second = JsonObjectKey([("queueId", 0), ("topic", "t")])
    assert first == second
    assert hash(first) == hash(second)
    with pytest.raises(AttributeError):
        first._items = ()


def test_enums_are_written_by_name() -> None:
    assert fastjson.dumps({"consumeType": ConsumeType.CONSUME_PASSIVELY}) == (
        '{"consumeType":"CONSUME_PASSIVELY"}'
    )
    assert fastjson.dumps({ConsumeType.CONSUME_ACTIVELY: 1}) == '{"CONSUME_ACTIVELY":1}'


def test_sets_and_tuples_are_collections() -> None:
    assert fastjson.dumps({"tagsSet": ("TagA", "TagB")}) == '{"tagsSet":["TagA","TagB"]}'
    assert fastjson.dumps({"codeSet": frozenset()}) == '{"codeSet":[]}'


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (1.0, "1.0"),
        (123.456, "123.456"),
        (1234567.0, "1234567.0"),
        (1e7, "1.0E7"),
        (12345678.9, "1.23456789E7"),
        (0.001, "0.001"),
        (1e-4, "1.0E-4"),
        (-2.5e-10, "-2.5E-10"),
        (1e16, "1.0E16"),
        (1.7976931348623157e308, "1.7976931348623157E308"),
        (math.nan, "null"),
        (math.inf, "null"),
    ],
)
def test_doubles_print_as_java(value: float, text: str) -> None:
    assert fastjson.dumps(value) == text


def test_big_integers_are_written_in_full() -> None:
    assert fastjson.dumps({"v": 2**70}) == '{"v":1180591620717411303424}'


def test_string_escapes() -> None:
    text = 'q"b\\s/t\tn\nr\rf\fb\bc\x01v\x0bd\x7fn\x85l\u2028p\u2029é中😀'
    assert fastjson.dumps(text) == (
        '"q\\"b\\\\s/t\\tn\\nr\\rf\\fb\\bc\\u0001v\\u000Bd\\u007Fn\\u0085l\\u2028p\\u2029é中😀"'
    )


def test_dumps_bytes_is_utf8() -> None:
    assert fastjson.dumps_bytes({"k": "é"}) == '{"k":"é"}'.encode()


def test_unsupported_value_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="bytes"):
        fastjson.dumps({"body": b"x"})


# topics.json as the broker persists it (TopicConfigManager.encode(true)): one TAB per level,
# "key":value without a space, each bean property on its own line.
TOPICS_JSON = """{
\t"dataVersion":{
\t\t"counter":2,
\t\t"timestamp":1700000000000
\t},
\t"topicConfigTable":{
\t\t"SCHEDULE_TOPIC_XXXX":{
\t\t\t"order":false,
\t\t\t"perm":6,
\t\t\t"readQueueNums":18,
\t\t\t"topicFilterType":"SINGLE_TAG",
\t\t\t"topicName":"SCHEDULE_TOPIC_XXXX",
\t\t\t"topicSysFlag":0,
\t\t\t"writeQueueNums":18
\t\t},
\t\t"TopicTest":{
\t\t\t"order":false,
\t\t\t"perm":6,
\t\t\t"readQueueNums":4,
\t\t\t"topicFilterType":"SINGLE_TAG",
\t\t\t"topicName":"TopicTest",
\t\t\t"topicSysFlag":0,
\t\t\t"writeQueueNums":4
\t\t}
\t}
}"""

# consumerOffset.json: fastjson puts no line break before a non-string map key, so a queue's
# offsets stay on the line of its "topic@group" key and only the closing brace moves down.
CONSUMER_OFFSET_JSON = """{
\t"offsetTable":{
\t\t"TopicTest@please_rename_unique_group_name":{0:250,1:249,2:251,3:250
\t\t},
\t\t"%RETRY%please_rename_unique_group_name@please_rename_unique_group_name":{0:0
\t\t},
\t\t"idle@group":{}
\t}
}"""


def _topic_config(name: str, queues: int) -> dict[str, Any]:
    """A TopicConfig bean with its properties deliberately out of fastjson's order."""
    return {
        "writeQueueNums": queues,
        "topicName": name,
        "readQueueNums": queues,
        "topicSysFlag": 0,
        "perm": 6,
        "topicFilterType": "SINGLE_TAG",
        "order": False,
    }


def _topics() -> dict[str, Any]:
    return {
        "dataVersion": {"counter": 2, "timestamp": 1700000000000},
        "topicConfigTable": {
            "TopicTest": _topic_config("TopicTest", 4),
            "SCHEDULE_TOPIC_XXXX": _topic_config("SCHEDULE_TOPIC_XXXX", 18),
        },
    }


def _consumer_offsets() -> dict[str, Any]:
    group = "please_rename_unique_group_name"
    return {
        "offsetTable": {
            f"TopicTest@{group}": {0: 250, 1: 249, 2: 251, 3: 250},
            f"%RETRY%{group}@{group}": {0: 0},
            "idle@group": {},
        }
    }


def test_pretty_topics_json_exact_text() -> None:
    assert fastjson.dumps(_topics(), pretty=True, sort_keys=True) == TOPICS_JSON


def test_pretty_writes_maps_in_their_own_order_without_sort_keys() -> None:
    text = fastjson.dumps(_topics(), pretty=True)
    assert text.index('"TopicTest"') < text.index('"SCHEDULE_TOPIC_XXXX"')
    assert text.index('"writeQueueNums":4') < text.index('"order":false')


def test_pretty_consumer_offset_json_exact_text() -> None:
    assert fastjson.dumps(_consumer_offsets(), pretty=True) == CONSUMER_OFFSET_JSON


def test_pretty_lists_sets_and_empty_containers() -> None:
    value = {"list": [1, {"a": 1}, [], {}], "set": ("x", "y"), "empty": {}, "none": []}
    assert fastjson.dumps(value, pretty=True) == (
        "{\n"
        '\t"list":[\n'
        "\t\t1,\n"
        "\t\t{\n"
        '\t\t\t"a":1\n'
        "\t\t},\n"
        "\t\t[],\n"
        "\t\t{}\n"
        "\t],\n"
        '\t"set":["x","y"],\n'
        '\t"empty":{},\n'
        '\t"none":[]\n'
        "}"
    )


def test_pretty_object_key() -> None:
    value = {"mq": {JsonObjectKey({"brokerName": "b", "queueId": 0}): 5}}
    assert fastjson.dumps(value, pretty=True) == (
        '{\n\t"mq":{{\n\t\t\t"brokerName":"b",\n\t\t\t"queueId":0\n\t\t}:5\n\t}\n}'
    )


def test_pretty_files_parse_back() -> None:
    assert fastjson.loads(TOPICS_JSON) == _topics()
    assert fastjson.loads(CONSUMER_OFFSET_JSON) == _consumer_offsets()


def _route_data() -> dict[str, Any]:
    return {
        "queueDatas": [
            {
                "writeQueueNums": 4,
                "brokerName": "broker-a",
                "topicSysFlag": 0,
                "readQueueNums": 4,
                "perm": 6,
            }
        ],
        "filterServerTable": {},
        "brokerDatas": [
            {
                "cluster": "DefaultCluster",
                "brokerName": "broker-a",
                "brokerAddrs": {0: "192.168.1.10:10911"},
            }
        ],
    }


def test_standard_variant_of_route_data() -> None:
    assert fastjson.dumps(_route_data(), standard=True) == (
        '{"brokerDatas":[{"brokerAddrs":{"0":"192.168.1.10:10911"},"brokerName":"broker-a",'
        '"cluster":"DefaultCluster"}],"filterServerTable":{},"queueDatas":[{"brokerName":'
        '"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}'
    )


def test_default_variant_of_route_data_has_bare_broker_ids() -> None:
    text = fastjson.dumps(_route_data(), sort_keys=True)
    assert '"brokerAddrs":{0:"192.168.1.10:10911"}' in text
    assert orjson.loads(fastjson.dumps(_route_data(), standard=True))["brokerDatas"][0][
        "brokerAddrs"
    ] == {"0": "192.168.1.10:10911"}


def test_standard_variant_sorts_integer_keys_numerically() -> None:
    assert fastjson.dumps({10: "x", 2: "y", 0: "z"}, standard=True) == '{"0":"z","2":"y","10":"x"}'


def test_standard_variant_escapes_like_browser_compatible() -> None:
    assert fastjson.dumps({"s": "é/😀\x01\t"}, standard=True) == (
        '{"s":"\\u00E9\\/\\uD83D\\uDE00\\u0001\\t"}'
    )


def test_standard_variant_writes_unsafe_longs_as_strings() -> None:
    safe = 2**53 - 1
    assert fastjson.dumps([safe, safe + 1, -safe - 1], standard=True) == (
        '[9007199254740991,"9007199254740992","-9007199254740992"]'
    )


def test_standard_variant_writes_object_keys_as_strings() -> None:
    value = {JsonObjectKey({"queueId": 0, "topic": "t"}): 1}
    assert fastjson.dumps(value, standard=True) == '{"{\\"queueId\\":0,\\"topic\\":\\"t\\"}":1}'


def test_lenient_reader_accepts_fastjson_extensions() -> None:
    text = """{
        unquoted: 'single "quoted"',
        'k2': [1, 2,],
        7: {-1: true, 2.5: null,},
        $id: "\\x41\\v\\'\\/\\u00e9\\ud83d\\ude00"
    }"""
    assert fastjson.loads(text) == {
        "unquoted": 'single "quoted"',
        "k2": [1, 2],
        7: {-1: True, 2.5: None},
        "$id": "A\v'/é😀",
    }


def test_nested_object_keys_are_frozen() -> None:
    text = '{{"brokerName":"b","inner":{"x":[1,{"y":2}]},"queueId":0}:{0:{"t":[]}}}'
    parsed = fastjson.loads(text)
    (key,) = parsed
    inner = key["inner"]
    assert isinstance(inner, JsonObjectKey)
    assert inner["x"] == (1, JsonObjectKey({"y": 2}))
    assert parsed[key] == {0: {"t": []}}
    assert fastjson.dumps(parsed) == text


def test_big_integers_parse_exactly() -> None:
    assert fastjson.loads("[-9223372036854775809, 18446744073709551616]") == [
        -9223372036854775809,
        18446744073709551616,
    ]
    assert fastjson.loads(b'{"v":123456789012345678901234567890}') == {
        "v": 123456789012345678901234567890
    }
    for buffer in (bytearray, memoryview):
        assert fastjson.loads(buffer(b"[18446744073709551616, 1]")) == [18446744073709551616, 1]
    assert fastjson.loads(b'{"t1234567890123456789":1.5}') == {"t1234567890123456789": 1.5}


def test_loads_accepts_bytes_and_memoryview_and_bom() -> None:
    assert fastjson.loads(memoryview(b"{0:1}")) == {0: 1}
    assert fastjson.loads("\ufeff{0:1}") == {0: 1}


@pytest.mark.parametrize("text", ["", "{", '{"a" 1}', "[1 2]", "tru", '"\\q"', "{} x", "{[1]:2}"])
def test_malformed_text_is_a_decode_error(text: str) -> None:
    with pytest.raises(FastjsonDecodeError):
        fastjson.loads(text)


def test_decode_error_reports_position() -> None:
    with pytest.raises(FastjsonDecodeError) as caught:
        fastjson.loads('{"a":1,"b":}')
    assert caught.value.pos == 11


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


@given(json_values)
def test_orjson_fast_path_and_lenient_parser_agree(value: Any) -> None:
    text = orjson.dumps(value)
    assert fastjson.loads(text) == fastjson.loads_lenient(text) == orjson.loads(text)


@given(json_values)
def test_own_output_round_trips(value: Any) -> None:
    for pretty in (False, True):
        text = fastjson.dumps(value, pretty=pretty, write_nulls=True)
        assert fastjson.loads(text) == value
        assert fastjson.loads_lenient(text) == value
