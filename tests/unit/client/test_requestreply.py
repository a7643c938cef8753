"""Request-reply without a broker: the pushed reply as a consumed message and matching
replies to waiting requests (rmq.client.replyrequests); the reply built for a request, the
system properties a request and a reply carry and the request code a reply is sent with
(rmq.client.requestreply)."""

from __future__ import annotations

import asyncio
import zlib

import pytest

from rmq.client import api
from rmq.client.errors import ClientErrorCode, MQClientError
from rmq.client.message import Message
from rmq.client.replyrequests import RequestFutures, pushed_reply
from rmq.client.requestreply import SystemPropertiesMessage, create_reply_message, is_reply
from rmq.common.properties import decode_properties, encode_properties
from rmq.common.sysflag import COMPRESSED_FLAG
from rmq.remoting.bodies import MessageQueue
from rmq.remoting.codes import RequestCode
from rmq.remoting.headers import ReplyMessageRequestHeader


def push_header(properties: dict[str, str], sys_flag: int = 0) -> ReplyMessageRequestHeader:
    return ReplyMessageRequestHeader(
        producer_group="PG",
        topic="DefaultCluster_REPLY_TOPIC",
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=0,
        sys_flag=sys_flag,
        born_timestamp=1_700_000_000_000,
        flag=3,
        properties=encode_properties(properties),
        reconsume_times=0,
        born_host="10.0.0.1:5000",
        store_host="10.0.0.2:10911",
        store_timestamp=1_700_000_000_500,
    )


def test_a_pushed_reply_is_a_consumed_message() -> None:
    body = b"x" * 5000
    header = push_header({"CORRELATION_ID": "c-1", "UNIQ_KEY": "AB"}, COMPRESSED_FLAG)
    reply = pushed_reply(header, zlib.compress(body), 1_700_000_000_900)
    assert reply.body == body, "decompressed as its sysFlag says"
    assert reply.properties["ARRIVE_TIME"] == "1700000000900"
    assert reply.properties["CORRELATION_ID"] == "c-1" and reply.msg_id == "AB"
    record = reply.to_record_dict()
    assert record["bornHost"] == "10.0.0.1:5000" and record["storeHost"] == "10.0.0.2:10911"
    assert record["storeTimestamp"] == 1_700_000_000_500 and record["flag"] == 3


def test_the_reply_to_a_request() -> None:
    request = pushed_reply(
        push_header(
            {
                "CLUSTER": "East",
                "CORRELATION_ID": "c-9",
                "REPLY_TO_CLIENT": "10.0.0.1@req",
                "TTL": "3000",
                "TAGS": "T",
            }
        ),
        b"question",
        0,
    )
    reply = create_reply_message(request, b"answer")
    assert reply.topic == "East_REPLY_TOPIC" and reply.body == b"answer"
    assert is_reply(reply) and not is_reply(Message("T", b"x"))
    reply.validate()  # the system properties are not user properties
    text = decode_properties(reply.properties_text("UNIQ"))
    assert text == {
        "MSG_TYPE": "reply",
        "CORRELATION_ID": "c-9",
        "REPLY_TO_CLIENT": "10.0.0.1@req",
        "TTL": "3000",
        "WAIT": "true",
        "UNIQ_KEY": "UNIQ",
    }


def test_no_reply_to_a_message_without_its_cluster() -> None:
    request = pushed_reply(push_header({"CORRELATION_ID": "c-1"}), b"question", 0)
    with pytest.raises(MQClientError) as raised:
        create_reply_message(request, b"answer")
    assert raised.value.code == ClientErrorCode.CREATE_REPLY_MESSAGE_EXCEPTION
    assert "property[CLUSTER] is null" in raised.value.remark


def test_user_properties_stay_validated() -> None:
    message = SystemPropertiesMessage("T", b"x", properties={"TTL": "1"})
    with pytest.raises(MQClientError):
        message.validate()


def test_a_reply_goes_as_send_reply_message_v2() -> None:
    queue = MessageQueue("DefaultCluster_REPLY_TOPIC", "broker-a", 0)
    plain = api.SendRequestTemplate("PG", queue.topic, "TBW102", 4)
    reply = api.SendRequestTemplate("PG", queue.topic, "TBW102", 4, reply=True)
    assert plain.request(queue, 0, 1, 0, "", b"x").code == RequestCode.SEND_MESSAGE_V2
    request = reply.request(queue, 0, 1, 0, "", b"x")
    assert request.code == RequestCode.SEND_REPLY_MESSAGE_V2
    assert (request.ext_fields or {})["b"] == queue.topic, "V2 short keys"


def test_replies_find_their_requests() -> None:
    async def run() -> None:
        futures = RequestFutures()
        waiting = futures.expect("c-1")
        stray = pushed_reply(push_header({"CORRELATION_ID": "c-2"}), b"a", 0)
        assert not futures.deliver(stray)
        mine = pushed_reply(push_header({"CORRELATION_ID": "c-1"}), b"b", 0)
        assert futures.deliver(mine)
        assert (await waiting).body == b"b"
        assert len(futures) == 0
        assert not futures.deliver(mine), "delivered once"

    asyncio.run(run())
