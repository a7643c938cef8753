"""The send path: SEND_MESSAGE / V2 / batch and CONSUMER_SEND_MSG_BACK against a real store.

Requests are built as the wire carries them (JSON frames with typed values as the C++ client
writes them, V2 short keys, ROCKETMQ binary headers built byte by byte) and handed to the
processor; what the store then holds is read back from the commitlog and consume-queue files
and parsed with the spec's layout (§3.1, §4.4), not with rmq's record codec.
"""

from __future__ import annotations

import json
import re
import struct
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from rmq.common.config import FlushDiskType
from rmq.remoting.bodies import SubscriptionGroupConfig, TopicConfig, TopicFilterType
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand
from rmq.server.broker.context import BrokerContext
from rmq.server.broker.processor.sendback import SendBackProcessor
from rmq.server.broker.processor.sendprocessor import SendMessageProcessor
from rmq.store.putmessage import InnerMessage, PutMessageResult, PutMessageStatus
from tests.unit.broker.helpers import (
    BORN_TIME,
    BROKER_IP,
    SEP_NV,
    SEP_P,
    STORE_HOST,
    STORE_TIME,
    USER_PROPS,
    call,
    commitlog_bytes,
    decoded,
    offset_of,
    properties_text,
    record_bytes,
    registrations,
    running_broker,
    send_v1,
)
from tests.unit.remoting.wire import binary_header, cpp_request, frame

TAG_A = 2598919  # "TagA".hashCode(), spec §8.1
MESSAGE_MAGIC = 0xDAA320A7


@pytest.fixture
def processor(broker: BrokerContext) -> SendMessageProcessor:
    return SendMessageProcessor(broker)


def parse_properties(raw: bytes) -> dict[str, str]:
    text = raw.decode()
    return dict(segment.split(SEP_NV, 1) for segment in text.split(SEP_P)) if text else {}


def send_v2(
    topic: str = "TopicTest",
    body: bytes = b"hello v2",
    *,
    queue_id: int = 0,
    props: dict[str, str] | None = None,
    code: int = RequestCode.SEND_MESSAGE_V2,
    version: int = 409,
    **fields: str,
) -> RemotingCommand:
    """A SEND_MESSAGE_V2 JSON frame with the short keys a..n (Java 4.9.8 style)."""
    ext = {
        "a": "PG",
        "b": topic,
        "c": "TBW102",
        "d": "4",
        "e": str(queue_id),
        "f": "0",
        "g": str(BORN_TIME),
        "h": "0",
        "i": properties_text(USER_PROPS if props is None else props),
        "j": "0",
        "k": "false",
        "m": "false",
        "n": "broker-a",
    }
    ext.update(fields)
    header = {
        "code": code,
        "extFields": ext,
        "flag": 0,
        "language": "JAVA",
        "opaque": 5,
        "version": version,
    }
    return decoded(frame(json.dumps(header).encode(), body))


# -- reading what the store holds, with the spec's layout ------------------------------------


def stored_record(broker: BrokerContext, physical_offset: int) -> dict[str, Any]:
    """The record at ``physical_offset``, read from the commitlog file per spec §3.1."""
    data = commitlog_bytes(broker)
    pos = physical_offset
    (total, magic, crc, queue_id, flag, queue_offset, phys, sys_flag, born_ts) = struct.unpack_from(
        ">iIiiiqqiq", data, pos
    )
    assert magic == MESSAGE_MAGIC
    born_len = 20 if sys_flag & 0x10 else 8
    store_len = 20 if sys_flag & 0x20 else 8
    cursor = pos + 48
    born_host = data[cursor : cursor + born_len]
    cursor += born_len
    (store_ts,) = struct.unpack_from(">q", data, cursor)
    cursor += 8
    store_host = data[cursor : cursor + store_len]
    cursor += store_len
    reconsume, prepared, body_len = struct.unpack_from(">iqi", data, cursor)
    cursor += 16
    body = data[cursor : cursor + body_len]
    cursor += body_len
    topic_len = data[cursor]
    topic = data[cursor + 1 : cursor + 1 + topic_len].decode()
    cursor += 1 + topic_len
    (props_len,) = struct.unpack_from(">h", data, cursor)
    props = data[cursor + 2 : cursor + 2 + props_len]
    cursor += 2 + props_len
    assert cursor - pos == total, "TOTALSIZE covers the whole record"
    assert crc == zlib.crc32(body) & 0x7FFFFFFF
    assert phys == physical_offset
    return {
        "queue_id": queue_id,
        "flag": flag,
        "queue_offset": queue_offset,
        "sys_flag": sys_flag,
        "born_timestamp": born_ts,
        "born_host": born_host,
        "store_timestamp": store_ts,
        "store_host": store_host,
        "reconsume_times": reconsume,
        "prepared_offset": prepared,
        "body": body,
        "topic": topic,
        "properties_raw": props,
        "properties": parse_properties(props),
    }


def cq_entries(broker: BrokerContext, topic: str, queue_id: int) -> list[tuple[int, int, int]]:
    """(physical offset, size, tags code) of every entry, read from the file per spec §4.4."""
    directory = Path(broker.store_config.store_path_root_dir) / "consumequeue" / topic
    data = (directory / str(queue_id) / ("0" * 20)).read_bytes()
    entries = []
    for pos in range(0, len(data), 20):
        entry = struct.unpack_from(">qiq", data, pos)
        if entry == (0, 0, 0):
            break
        entries.append(entry)
    return entries


def assert_send_ext_fields(response: RemotingCommand) -> None:
    ext = response.ext_fields
    assert ext is not None
    assert ext["MSG_REGION"] == "DefaultRegion"
    assert ext["TRACE_ON"] == "true"
    assert all(isinstance(value, str) for value in ext.values())


def assert_refused(response: RemotingCommand, code: int, remark: str) -> None:
    assert (response.code, response.remark) == (code, remark)
    assert_send_ext_fields(response)
    assert response.ext_fields is not None
    assert set(response.ext_fields) == {"MSG_REGION", "TRACE_ON"}


# -- single messages ------------------------------------------------------------------------


def test_send_v1_stores_the_record_apache_stores(
    broker: BrokerContext, processor: SendMessageProcessor
) -> None:
    response = call(processor.send_message, send_v1(queue_id=2))

    assert response.code == ResponseCode.SUCCESS and response.remark is None
    assert_send_ext_fields(response)
    ext = response.ext_fields
    assert ext is not None
    assert (ext["queueId"], ext["queueOffset"]) == ("2", "0")
    assert "transactionId" not in ext
    physical = offset_of(ext["msgId"])
    record = stored_record(broker, physical)
    assert record["topic"] == "TopicTest"
    assert record["queue_id"] == 2
    assert record["queue_offset"] == 0
    assert record["flag"] == 7
    assert record["sys_flag"] == 0
    assert record["born_timestamp"] == BORN_TIME
    assert record["born_host"] == struct.pack(">4Bi", 10, 1, 2, 3, 40000)
    assert record["store_timestamp"] == STORE_TIME
    assert record["store_host"] == STORE_HOST
    assert record["reconsume_times"] == 0
    assert record["prepared_offset"] == 0
    assert record["body"] == b"hello rocketmq"
    expected = {key: value for key, value in USER_PROPS.items() if key != "WAIT"}
    expected["CLUSTER"] = "DefaultCluster"
    assert record["properties"] == expected
    assert b"WAIT" not in record["properties_raw"]
    assert cq_entries(broker, "TopicTest", 2) == [(physical, len_of(broker, physical), TAG_A)]
    for key in ("order-1", "order-2", USER_PROPS["UNIQ_KEY"]):
        found = broker.store.query_message("TopicTest", key, 32, 0, STORE_TIME + 1)
        assert found.physical_offsets == [physical]
    assert broker.stats.put_total == 1


def len_of(broker: BrokerContext, physical_offset: int) -> int:
    return len(record_bytes(broker, physical_offset))


def test_send_v2_short_keys_and_consecutive_offsets(
    broker: BrokerContext, processor: SendMessageProcessor
) -> None:
    first = call(processor.send_message, send_v2(body=b"one"))
    second = call(processor.send_message, send_v2(body=b"two"))

    assert first.code == second.code == ResponseCode.SUCCESS
    assert first.ext_fields is not None and second.ext_fields is not None
    assert [first.ext_fields["queueOffset"], second.ext_fields["queueOffset"]] == ["0", "1"]
    record = stored_record(broker, offset_of(second.ext_fields["msgId"]))
    assert (record["body"], record["born_timestamp"]) == (b"two", BORN_TIME)
    assert record["properties"]["CLUSTER"] == "DefaultCluster"


def test_send_v2_with_a_rocketmq_binary_header(
    broker: BrokerContext, processor: SendMessageProcessor
) -> None:
    props = properties_text({"TAGS": "TagA", "WAIT": "true"}).encode()
    fields = [
        (b"a", b"PG"),
        (b"b", b"BinaryTopic"),
        (b"c", b"TBW102"),
        (b"d", b"4"),
        (b"e", b"1"),
        (b"f", b"0"),
        (b"g", str(BORN_TIME).encode()),
        (b"h", b"3"),
        (b"i", props),
        (b"j", b"0"),
        (b"k", b"false"),
        (b"m", b"false"),
    ]
    header = binary_header(RequestCode.SEND_MESSAGE_V2, 0, 409, 9, 0, b"", fields)
    request = decoded(frame(header, b"binary body", serialize_type=1))

    response = call(processor.send_message, request)

    assert response.code == ResponseCode.SUCCESS
    assert response.ext_fields is not None
    assert list(response.ext_fields)[:3] == ["msgId", "queueId", "queueOffset"]
    record = stored_record(broker, offset_of(response.ext_fields["msgId"]))
    assert (record["topic"], record["queue_id"], record["flag"]) == ("BinaryTopic", 1, 3)
    assert record["properties"] == {"TAGS": "TagA", "CLUSTER": "DefaultCluster"}


def test_ipv6_producer_sets_the_born_host_v6_flag(
    broker: BrokerContext, processor: SendMessageProcessor
) -> None:
    response = call(processor.send_message, send_v1(), peer=("::1", 5000))

    assert response.ext_fields is not None
    record = stored_record(broker, offset_of(response.ext_fields["msgId"]))
    assert record["sys_flag"] == 0x10
    assert record["born_host"] == bytes(15) + b"\x01" + struct.pack(">i", 5000)


def test_negative_queue_id_picks_one_of_the_write_queues(
    broker: BrokerContext, processor: SendMessageProcessor
) -> None:
    broker.topic_config_manager.update(
        TopicConfig(topic_name="Picky", read_queue_nums=8, write_queue_nums=3)
    )
    picked = set()
    for _ in range(60):
        response = call(processor.send_message, send_v1("Picky", queue_id=-1))
        assert response.ext_fields is not None
        queue_id = int(response.ext_fields["queueId"])
        record = stored_record(broker, offset_of(response.ext_fields["msgId"]))
        assert record["queue_id"] == queue_id
        picked.add(queue_id)
    assert picked == {0, 1, 2}


def test_multi_tag_topic_sets_the_multi_tags_flag(
    broker: BrokerContext, processor: SendMessageProcessor
) -> None:
    broker.topic_config_manager.update(
        TopicConfig(topic_name="Multi", topic_filter_type=TopicFilterType.MULTI_TAG)
    )
    response = call(processor.send_message, send_v1("Multi"))

    assert response.ext_fields is not None
    physical = offset_of(response.ext_fields["msgId"])
    assert stored_record(broker, physical)["sys_flag"] == 0x2
    assert cq_entries(broker, "Multi", 0)[0][2] == TAG_A


# -- topics -------------------------------------------------------------------------------


def test_unknown_topic_is_created_from_tbw102(
    broker: BrokerContext, processor: SendMessageProcessor
) -> None:
    before = set(broker.topic_config_manager.topic_config_table)
    response = call(processor.send_message, send_v1("BrandNew", defaultTopicQueueNums=4))

    assert response.code == ResponseCode.SUCCESS
    config = broker.topic_config_manager.select("BrandNew")
    assert config is not None
    assert (config.read_queue_nums, config.write_queue_nums, config.perm) == (4, 4, 6)
    assert registrations(broker) == [before | {"BrandNew"}]
    assert (
        "BrandNew"
        in (Path(broker.store_config.store_path_root_dir) / "config" / "topics.json").read_text()
    )


def test_unit_mode_marks_the_topics_it_creates(
    broker: BrokerContext, processor: SendMessageProcessor
) -> None:
    sent = call(processor.send_message, send_v1("UnitTopic", unitMode="true"))
    call(processor.send_message, send_v1("%RETRY%UnitGroup", unitMode="true"))
    assert sent.ext_fields is not None
    back = send_back(offset_of(sent.ext_fields["msgId"]), group="G2", unitMode="true")
    assert call(SendBackProcessor(broker).consumer_send_msg_back, back).code == ResponseCode.SUCCESS

    flags = {
        topic: broker.topic_config_manager.topic_config_table[topic].topic_sys_flag
        for topic in ("UnitTopic", "%RETRY%UnitGroup", "%RETRY%G2")
    }
    # TopicSysFlag: bit 0 a unit topic, bit 1 a topic with unit subscriptions.
    assert flags == {"UnitTopic": 1, "%RETRY%UnitGroup": 2, "%RETRY%G2": 2}


def test_unknown_topic_without_auto_create(tmp_path: Path) -> None:
    with running_broker(tmp_path, broker={"auto_create_topic_enable": False}) as broker:
        response = call(SendMessageProcessor(broker).send_message, send_v1("BrandNew"))
        assert_refused(
            response,
            ResponseCode.TOPIC_NOT_EXIST,
            "topic[BrandNew] not exist, apply first please!"
            "\nSee http://rocketmq.apache.org/docs/faq/ for further details.",
        )
        assert broker.topic_config_manager.select("BrandNew") is None
        assert broker.store.max_physical_offset() == 0


def test_unknown_retry_topic_is_created_with_one_queue(tmp_path: Path) -> None:
    with running_broker(tmp_path, broker={"auto_create_topic_enable": False}) as broker:
        processor = SendMessageProcessor(broker)
        before = set(broker.topic_config_manager.topic_config_table)
        response = call(processor.send_message, send_v1("%RETRY%G1"))
        assert response.code == ResponseCode.SUCCESS
        config = broker.topic_config_manager.select("%RETRY%G1")
        assert config is not None
        assert (config.read_queue_nums, config.write_queue_nums, config.perm) == (1, 1, 6)
        assert registrations(broker) == [before | {"%RETRY%G1"}]


ILLEGAL_CHARACTERS = (
    "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
)


@pytest.mark.parametrize(
    ("topic", "code", "remark"),
    [
        ("", ResponseCode.SYSTEM_ERROR, "The specified topic is blank."),
        ("bad topic", ResponseCode.SYSTEM_ERROR, ILLEGAL_CHARACTERS),
        (
            "x" * 128,
            ResponseCode.SYSTEM_ERROR,
            "The specified topic is longer than topic max length.",
        ),
        (
            "SCHEDULE_TOPIC_XXXX",
            ResponseCode.NO_PERMISSION,
            "Sending message to topic[SCHEDULE_TOPIC_XXXX] is forbidden.",
        ),
        (
            "RMQ_SYS_TRANS_HALF_TOPIC",
            ResponseCode.NO_PERMISSION,
            "Sending message to topic[RMQ_SYS_TRANS_HALF_TOPIC] is forbidden.",
        ),
    ],
)
def test_invalid_topics_are_refused(
    broker: BrokerContext, processor: SendMessageProcessor, topic: str, code: int, remark: str
) -> None:
    response = call(processor.send_message, send_v2(topic))

    assert_refused(response, code, remark)
    assert broker.store.max_physical_offset() == 0


def test_queue_id_beyond_the_queues_is_refused(
    broker: BrokerContext, processor: SendMessageProcessor
) -> None:
    broker.topic_config_manager.update(
        TopicConfig(topic_name="Small", read_queue_nums=2, write_queue_nums=4)
    )
    assert call(processor.send_message, send_v1("Small", queue_id=3)).code == ResponseCode.SUCCESS

    response = call(processor.send_message, send_v1("Small", queue_id=4))

    assert_refused(
        response,
        ResponseCode.SYSTEM_ERROR,
        "request queueId[4] is illegal, TopicConfig [topicName=Small, readQueueNums=2, "
        "writeQueueNums=4, perm=RW-, topicFilterType=SINGLE_TAG, topicSysFlag=0, order=false] "
        "Producer: 10.1.2.3:40000",
    )


def test_read_only_broker_refuses_only_order_topics(tmp_path: Path) -> None:
    with running_broker(tmp_path, broker={"broker_permission": 4}) as broker:
        processor = SendMessageProcessor(broker)
        broker.topic_config_manager.update(TopicConfig(topic_name="Ordered", order=True))
        assert_refused(
            call(processor.send_message, send_v1("Ordered")),
            ResponseCode.NO_PERMISSION,
            f"the broker[{BROKER_IP}] sending message is forbidden",
        )
        assert call(processor.send_message, send_v1("TopicTest")).code == ResponseCode.SUCCESS


def test_sends_before_the_accept_time_are_refused(tmp_path: Path) -> None:
    with running_broker(
        tmp_path, broker={"start_accept_send_request_time_stamp": 4_102_444_800_000}
    ) as broker:
        response = call(SendMessageProcessor(broker).send_message, send_v1())
        assert response.code == ResponseCode.SYSTEM_ERROR
        assert re.fullmatch(
            r"broker unable to service, until \d{4}-\d\d-\d\d \d\d:\d\d:\d\d,000",
            response.remark or "",
        )
        assert_send_ext_fields(response)


# -- sizes and store failures ----------------------------------------------------------------

ILLEGAL_REMARK = (
    "the message is illegal, maybe msg body or properties length not matched. "
    "msg body length limit 1024B, msg properties length limit 32KB."
)


def test_body_and_properties_limits(tmp_path: Path) -> None:
    with running_broker(tmp_path, store={"max_message_size": 1024}) as broker:
        processor = SendMessageProcessor(broker)
        assert call(processor.send_message, send_v1(body=b"x" * 1024)).code == ResponseCode.SUCCESS
        assert_refused(
            call(processor.send_message, send_v1(body=b"x" * 1025)),
            ResponseCode.MESSAGE_ILLEGAL,
            ILLEGAL_REMARK,
        )
        assert_refused(
            call(processor.send_message, send_v1(props={"big": "y" * 32768})),
            ResponseCode.MESSAGE_ILLEGAL,
            ILLEGAL_REMARK,
        )
        assert (broker.stats.put_total, broker.stats.put_failed) == (1, 2)


def test_stopped_store_answers_service_not_available(
    broker: BrokerContext, processor: SendMessageProcessor
) -> None:
    broker.store.shutdown()

    response = call(processor.send_message, send_v1())

    assert response.code == ResponseCode.SERVICE_NOT_AVAILABLE
    assert re.fullmatch(
        r"service not available now\. It may be caused by one of the following reasons: "
        r"the broker's disk is full \[CL: [ \d.-]{5} CQ: [ \d.-]{5} INDEX: [ \d.-]{5}\], "
        r"messages are put to the slave, message store has been shut down, etc\.",
        response.remark or "",
    )
    assert_send_ext_fields(response)


# -- flushing --------------------------------------------------------------------------------


@pytest.fixture
def sync_broker(tmp_path: Path) -> Iterator[BrokerContext]:
    with running_broker(tmp_path, store={"flush_disk_type": FlushDiskType.SYNC_FLUSH}) as running:
        yield running


def test_sync_flush_answers_after_the_flush(sync_broker: BrokerContext) -> None:
    processor = SendMessageProcessor(sync_broker)
    response = call(processor.send_message, send_v1())

    assert response.code == ResponseCode.SUCCESS
    assert response.ext_fields is not None
    physical = offset_of(response.ext_fields["msgId"])
    flushed = sync_broker.store.get_flushed_where()
    assert flushed >= physical + len_of(sync_broker, physical)


def test_sync_flush_timeout_is_a_send_that_happened(
    sync_broker: BrokerContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    waited = []

    def slow_disk(result: object, callback: Callable[[PutMessageStatus], None]) -> None:
        waited.append(result)
        callback(PutMessageStatus.FLUSH_DISK_TIMEOUT)

    monkeypatch.setattr(sync_broker.store, "request_flush", slow_disk)
    processor = SendMessageProcessor(sync_broker)

    response = call(processor.send_message, send_v1())
    not_waiting = call(processor.send_message, send_v1(props={"WAIT": "false"}))

    assert response.code == ResponseCode.FLUSH_DISK_TIMEOUT and response.remark is None
    assert response.ext_fields is not None and response.ext_fields["queueOffset"] == "0"
    assert_send_ext_fields(response)
    assert not_waiting.code == ResponseCode.SUCCESS
    assert len(waited) == 1


# -- rewrites: retry/DLQ, delay, transactions ----------------------------------------------------


def test_retry_message_out_of_retries_goes_to_the_dlq(
    broker: BrokerContext, processor: SendMessageProcessor
) -> None:
    response = call(processor.send_message, send_v1("%RETRY%G1", queue_id=0, reconsumeTimes=16))

    assert response.code == ResponseCode.SUCCESS
    assert response.ext_fields is not None
    record = stored_record(broker, offset_of(response.ext_fields["msgId"]))
    assert (record["topic"], record["queue_id"], record["reconsume_times"]) == ("%DLQ%G1", 0, 16)
    dlq = broker.topic_config_manager.select("%DLQ%G1")
    assert dlq is not None
    assert (dlq.read_queue_nums, dlq.write_queue_nums, dlq.perm) == (1, 1, 6)
    assert cq_entries(broker, "%DLQ%G1", 0)[0][0] == offset_of(response.ext_fields["msgId"])


@pytest.mark.parametrize(("version", "topic"), [(121, "%DLQ%G1"), (120, "%RETRY%G1")])
def test_client_max_reconsume_times_from_version_3_4_9(
    broker: BrokerContext, processor: SendMessageProcessor, version: int, topic: str
) -> None:
    request = send_v2("%RETRY%G1", version=version, j="3", l="3")

    response = call(processor.send_message, request)

    assert response.ext_fields is not None
    assert stored_record(broker, offset_of(response.ext_fields["msgId"]))["topic"] == topic


def test_retry_topic_of_an_unknown_group(tmp_path: Path) -> None:
    with running_broker(tmp_path, broker={"auto_create_subscription_group": False}) as broker:
        response = call(SendMessageProcessor(broker).send_message, send_v1("%RETRY%G9"))
        assert_refused(
            response,
            ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
            "subscription group not exist, G9 "
            "\nSee http://rocketmq.apache.org/docs/faq/ for further details.",
        )


def test_delayed_message_is_parked_with_wait_kept(
    broker: BrokerContext, processor: SendMessageProcessor
) -> None:
    props = {"TAGS": "TagA", "WAIT": "true", "DELAY": "2"}
    response = call(processor.send_message, send_v1(queue_id=3, props=props))

    assert response.code == ResponseCode.SUCCESS
    assert response.ext_fields is not None and response.ext_fields["queueId"] == "3"
    physical = offset_of(response.ext_fields["msgId"])
    record = stored_record(broker, physical)
    assert (record["topic"], record["queue_id"]) == ("SCHEDULE_TOPIC_XXXX", 1)
    assert record["properties"] == {
        "TAGS": "TagA",
        "WAIT": "true",
        "DELAY": "2",
        "CLUSTER": "DefaultCluster",
        "REAL_TOPIC": "TopicTest",
        "REAL_QID": "3",
    }
    assert cq_entries(broker, "SCHEDULE_TOPIC_XXXX", 1)[0][2] == STORE_TIME + 5000


def test_transactional_message_becomes_a_half_message(
    broker: BrokerContext, processor: SendMessageProcessor
) -> None:
    props = {"TRAN_MSG": "true", "PGROUP": "PG", "WAIT": "true", "UNIQ_KEY": "U1"}
    response = call(processor.send_message, send_v1(queue_id=1, props=props, sysFlag=0x4))

    assert response.code == ResponseCode.SUCCESS
    assert response.ext_fields is not None and response.ext_fields["queueId"] == "1"
    record = stored_record(broker, offset_of(response.ext_fields["msgId"]))
    assert (record["topic"], record["queue_id"], record["sys_flag"]) == (
        "RMQ_SYS_TRANS_HALF_TOPIC",
        0,
        0,
    )
    assert record["properties"] == {
        **props,
        "CLUSTER": "DefaultCluster",
        "REAL_TOPIC": "TopicTest",
        "REAL_QID": "1",
    }
    half = broker.topic_config_manager.select("RMQ_SYS_TRANS_HALF_TOPIC")
    assert half is not None
    assert (half.read_queue_nums, half.perm) == (1, 6)
    assert len(cq_entries(broker, "RMQ_SYS_TRANS_HALF_TOPIC", 0)) == 1


def test_transactional_messages_refused_when_configured(tmp_path: Path) -> None:
    with running_broker(tmp_path, broker={"reject_transaction_message": True}) as broker:
        processor = SendMessageProcessor(broker)
        response = call(processor.send_message, send_v1(props={"TRAN_MSG": "TRUE"}, sysFlag=4))
        assert_refused(
            response,
            ResponseCode.NO_PERMISSION,
            f"the broker[{BROKER_IP}] sending transaction message is forbidden",
        )
        assert broker.store.max_physical_offset() == 0


# -- batches ---------------------------------------------------------------------------------


def batch_body(messages: list[tuple[int, bytes, str]]) -> bytes:
    """A SEND_BATCH_MESSAGE body per spec §3.8 (MAGICCODE and BODYCRC written as 0)."""
    parts = []
    for flag, body, props in messages:
        raw = props.encode()
        parts.append(
            struct.pack(">iiiii", 22 + len(body) + len(raw), 0, 0, flag, len(body))
            + body
            + struct.pack(">h", len(raw))
            + raw
        )
    return b"".join(parts)


BATCH = [
    (1, b"first", properties_text({"UNIQ_KEY": "B1", "TAGS": "TagA", "KEYS": "k1"})),
    (2, b"second", properties_text({"UNIQ_KEY": "B2", "KEYS": "k2"}) + SEP_P),
    (3, b"third", ""),
]


def test_batch_is_stored_as_consecutive_records(
    broker: BrokerContext, processor: SendMessageProcessor
) -> None:
    request = send_v2(
        "BatchTopic",
        batch_body(BATCH),
        queue_id=1,
        code=RequestCode.SEND_BATCH_MESSAGE,
        i=properties_text({"WAIT": "true"}),
        m="true",
    )

    response = call(processor.send_message, request)

    assert response.code == ResponseCode.SUCCESS
    ext = response.ext_fields
    assert ext is not None
    assert (ext["queueId"], ext["queueOffset"]) == ("1", "0")
    msg_ids = ext["msgId"].split(",")
    assert len(msg_ids) == 3
    records = [stored_record(broker, offset_of(msg_id)) for msg_id in msg_ids]
    assert [record["queue_offset"] for record in records] == [0, 1, 2]
    assert [record["flag"] for record in records] == [1, 2, 3]
    assert [record["body"] for record in records] == [b"first", b"second", b"third"]
    batch_props = f"WAIT{SEP_NV}true{SEP_P}CLUSTER{SEP_NV}DefaultCluster"
    assert [record["properties_raw"].decode() for record in records] == [
        BATCH[0][2] + SEP_P + batch_props,
        BATCH[1][2] + batch_props,
        batch_props,
    ]
    offsets = [offset_of(msg_id) for msg_id in msg_ids]
    assert offsets[1] - offsets[0] == len_of(broker, offsets[0])
    assert [entry[2] for entry in cq_entries(broker, "BatchTopic", 1)] == [TAG_A, 0, 0]
    found = broker.store.query_message("BatchTopic", "k2", 32, 0, STORE_TIME + 1)
    assert found.physical_offsets == [offsets[1]]
    assert broker.stats.put_total == 3


def test_batch_with_a_delay_level_is_illegal(
    broker: BrokerContext, processor: SendMessageProcessor
) -> None:
    request = send_v2(
        "BatchTopic",
        batch_body(BATCH),
        code=RequestCode.SEND_BATCH_MESSAGE,
        i=properties_text({"DELAY": "1"}),
        m="true",
    )

    response = call(processor.send_message, request)

    assert response.code == ResponseCode.MESSAGE_ILLEGAL
    assert broker.store.max_physical_offset() == 0


def test_malformed_batch_body_is_illegal(
    broker: BrokerContext, processor: SendMessageProcessor
) -> None:
    body = batch_body(BATCH)[:-3]
    request = send_v2("BatchTopic", body, code=RequestCode.SEND_BATCH_MESSAGE, m="true")

    assert call(processor.send_message, request).code == ResponseCode.MESSAGE_ILLEGAL
    assert broker.store.max_physical_offset() == 0


# -- CONSUMER_SEND_MSG_BACK ------------------------------------------------------------------


def send_back(offset: int, group: str = "G1", **fields: object) -> RemotingCommand:
    ext: dict[str, object] = {
        "offset": offset,
        "group": group,
        "delayLevel": 0,
        "originMsgId": "ignored",
        "originTopic": "TopicTest",
        "unitMode": "false",
    }
    ext.update(fields)
    return decoded(cpp_request(RequestCode.CONSUMER_SEND_MSG_BACK, 3, ext))


def test_send_back_parks_the_message_for_its_retry_topic(
    broker: BrokerContext, processor: SendMessageProcessor
) -> None:
    sent = call(processor.send_message, send_v1())
    assert sent.ext_fields is not None
    original = offset_of(sent.ext_fields["msgId"])

    response = call(SendBackProcessor(broker).consumer_send_msg_back, send_back(original))

    assert (response.code, response.ext_fields) == (ResponseCode.SUCCESS, None)
    retry = broker.topic_config_manager.select("%RETRY%G1")
    assert retry is not None
    assert (retry.read_queue_nums, retry.perm) == (1, 6)
    parked = cq_entries(broker, "SCHEDULE_TOPIC_XXXX", 2)  # level 3 = 10 s
    assert len(parked) == 1
    assert parked[0][2] == STORE_TIME + 10_000
    record = stored_record(broker, parked[0][0])
    assert record["reconsume_times"] == 1
    assert record["body"] == b"hello rocketmq"
    assert record["born_host"] == struct.pack(">4Bi", 10, 1, 2, 3, 40000)
    props = record["properties"]
    assert props["REAL_TOPIC"] == "%RETRY%G1" and props["REAL_QID"] == "0"
    assert props["RETRY_TOPIC"] == "TopicTest"
    assert props["ORIGIN_MESSAGE_ID"] == sent.ext_fields["msgId"]
    assert (props["WAIT"], props["DELAY"]) == ("false", "3")
    assert props["UNIQ_KEY"] == USER_PROPS["UNIQ_KEY"]


def test_send_back_after_the_last_retry_goes_to_the_dlq(
    broker: BrokerContext, processor: SendMessageProcessor
) -> None:
    broker.subscription_group_manager.update(
        SubscriptionGroupConfig(group_name="G1", retry_max_times=2)
    )
    sent = call(processor.send_message, send_v1(reconsumeTimes=2))
    assert sent.ext_fields is not None

    response = call(
        SendBackProcessor(broker).consumer_send_msg_back,
        send_back(offset_of(sent.ext_fields["msgId"])),
    )

    assert response.code == ResponseCode.SUCCESS
    (entry,) = cq_entries(broker, "%DLQ%G1", 0)
    record = stored_record(broker, entry[0])
    assert record["reconsume_times"] == 3
    assert record["properties"]["DELAY"] == "0"


def test_send_back_of_an_unknown_offset(
    broker: BrokerContext, processor: SendMessageProcessor
) -> None:
    response = call(SendBackProcessor(broker).consumer_send_msg_back, send_back(123456))

    assert (response.code, response.remark) == (
        ResponseCode.SYSTEM_ERROR,
        "look message by offset failed, 123456",
    )


def test_send_back_with_a_negative_delay_level_goes_to_the_dlq(
    broker: BrokerContext, processor: SendMessageProcessor
) -> None:
    sent = call(processor.send_message, send_v1())
    assert sent.ext_fields is not None

    response = call(
        SendBackProcessor(broker).consumer_send_msg_back,
        send_back(offset_of(sent.ext_fields["msgId"]), delayLevel=-1),
    )

    assert response.code == ResponseCode.SUCCESS
    (entry,) = cq_entries(broker, "%DLQ%G1", 0)
    assert stored_record(broker, entry[0])["reconsume_times"] == 1


def test_send_back_to_a_group_without_retry_queues_drops_the_message(
    broker: BrokerContext, processor: SendMessageProcessor
) -> None:
    broker.subscription_group_manager.update(
        SubscriptionGroupConfig(group_name="G1", retry_queue_nums=0)
    )
    sent = call(processor.send_message, send_v1())
    assert sent.ext_fields is not None
    end = broker.store.max_physical_offset()

    response = call(
        SendBackProcessor(broker).consumer_send_msg_back,
        send_back(offset_of(sent.ext_fields["msgId"])),
    )

    assert response.code == ResponseCode.SUCCESS
    assert broker.store.max_physical_offset() == end


def test_send_back_refusals(tmp_path: Path) -> None:
    with running_broker(
        tmp_path, broker={"auto_create_subscription_group": False, "broker_permission": 4}
    ) as broker:
        send_back_handler = SendBackProcessor(broker).consumer_send_msg_back
        unknown = call(send_back_handler, send_back(0, group="G9"))
        read_only = call(send_back_handler, send_back(0, group="TOOLS_CONSUMER"))
        assert (unknown.code, unknown.remark) == (
            ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
            "subscription group not exist, G9 "
            "\nSee http://rocketmq.apache.org/docs/faq/ for further details.",
        )
        assert (read_only.code, read_only.remark) == (
            ResponseCode.NO_PERMISSION,
            f"the broker[{BROKER_IP}] sending message is forbidden",
        )


def test_a_delay_level_that_is_not_a_number_is_illegal(
    broker: BrokerContext, processor: SendMessageProcessor
) -> None:
    response = call(processor.send_message, send_v1(props={"DELAY": "soon"}))

    assert_refused(response, ResponseCode.MESSAGE_ILLEGAL, "the delay level 'soon' is not a number")
    assert broker.store.max_physical_offset() == 0


def test_a_dledger_broker_stores_sends_through_its_node_and_refuses_delays_for_now(
    broker: BrokerContext, processor: SendMessageProcessor
) -> None:
    taken: list[InnerMessage] = []

    async def dledger_put(message: InnerMessage) -> PutMessageResult:
        taken.append(message)
        return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE)

    broker.dledger_put = dledger_put
    refused = call(processor.send_message, send_v1(props={"TAGS": "TagA", "DELAY": "2"}))
    assert refused.code == ResponseCode.SYSTEM_ERROR
    assert refused.remark == (
        "this broker's DLedger commitlog does not take delayed messages or batches yet"
    )
    assert taken == []

    answered = call(processor.send_message, send_v2(queue_id=2))
    assert answered.code == ResponseCode.SERVICE_NOT_AVAILABLE
    assert [(m.topic, m.queue_id, m.body) for m in taken] == [("TopicTest", 2, b"hello v2")]
    assert broker.store.max_physical_offset() == 0, "nothing went to the store itself"
