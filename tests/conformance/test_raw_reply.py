"""SEND_REPLY_MESSAGE (324) and SEND_REPLY_MESSAGE_V2 (325) as raw frames, differential: the
same replies sent to Apache's broker and to rmq's, with and without a connected requester.

The requester is a bare remoting client: a HEART_BEAT registers its client id as a producer,
and it answers PUSH_REPLY_MESSAGE_TO_CLIENT (326) as the test says (SUCCESS, or a refusal).
The replier is another connection sending the reply.  Compared: the reply's answer (code,
remark, which header fields it carries, ``msgId`` "0" or a stored message's offset id,
``queueId``), and the push the requester got (every header field, the properties, the body).

Normalised, because they legitimately differ between two runs: the push's ``bornHost`` (the
replier's ephemeral port: checked to be loopback), ``storeHost`` (checked to be the broker's
own address), ``storeTimestamp`` and ``PUSH_REPLY_TIME`` (checked to be times), a remark's
``Producer: host:port`` and the stored message's offset id (checked to be 32 hex digits).
The Apache answers are asserted too, so a comparison of two identical wrong answers fails.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import time
from dataclasses import dataclass
from typing import Any

import pytest

from rmq.client import api
from rmq.common.naming import reply_topic
from rmq.common.properties import decode_properties, encode_properties
from rmq.remoting.bodies import HeartbeatData, ProducerData
from rmq.remoting.client import RemotingClient
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, create_request, create_response
from rmq.remoting.connection import Connection
from rmq.remoting.headers import SendMessageRequestHeader
from tests.conformance.clusters import CLUSTER, Cluster

REPLY_TOPIC = reply_topic(CLUSTER)
BORN = 1_700_000_000_123
BODY = b"the reply"
_ids = itertools.count()


@dataclass
class Exchange:
    """What one reply came to: the broker's answer and the pushes the requester got."""

    response: RemotingCommand
    pushed: list[RemotingCommand]


def _requester_id(kind: str) -> str:
    return f"127.0.0.1@RawReply{kind}{next(_ids)}"


async def _exchange(
    cluster: Cluster,
    code: int,
    properties: dict[str, str],
    *,
    requester_id: str | None,
    answer: int = ResponseCode.SUCCESS,
    queue_id: int = 0,
) -> Exchange:
    addr = cluster.broker_addr
    pushed: list[RemotingCommand] = []

    async def receive(connection: Connection, request: RemotingCommand) -> RemotingCommand:
        pushed.append(request)
        return create_response(answer, None if answer == ResponseCode.SUCCESS else "not mine")

    requester, replier = RemotingClient(), RemotingClient()
    requester.register(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, receive)
    try:
        if requester_id is not None:
            heartbeat = HeartbeatData(
                client_id=requester_id, producer_data_set=[ProducerData(group_name="RawReqG")]
            )
            await api.send_heartbeat(requester, addr, heartbeat, 10)
        header = SendMessageRequestHeader(
            producer_group="RawReplierG",
            topic=REPLY_TOPIC,
            default_topic="TBW102",
            default_topic_queue_nums=4,
            queue_id=queue_id,
            sys_flag=0,
            born_timestamp=BORN,
            flag=7,
            properties=encode_properties(properties),
            reconsume_times=0,
        )
        request = create_request(code, header, body=BODY)
        response = await replier.invoke(addr, request, 20)
    finally:
        await replier.close()
        await requester.close()
    return Exchange(response, pushed)


def _run(cluster: Cluster, code: int, properties: dict[str, str], **options: Any) -> Exchange:
    return asyncio.run(_exchange(cluster, code, properties, **options))


def _answer(response: RemotingCommand) -> dict[str, Any]:
    fields = dict(response.ext_fields or {})
    msg_id = fields.get("msgId")
    if msg_id not in (None, "0"):
        assert re.fullmatch(r"[0-9A-F]{32}", msg_id), msg_id
        msg_id = "<stored offset id>"
    remark = response.remark
    if remark is not None:
        remark = re.sub(r"Producer: [0-9.]+:\d+", "Producer: <addr>", remark)
    return {
        "code": response.code,
        "remark": remark,
        "fields": sorted(fields),
        "msgId": msg_id,
        "queueId": fields.get("queueId"),
    }


def _push(command: RemotingCommand, cluster: Cluster) -> dict[str, Any]:
    fields = dict(command.ext_fields or {})
    properties = decode_properties(fields.pop("properties"))
    assert properties.pop("PUSH_REPLY_TIME").isdigit(), cluster.kind
    assert fields.pop("bornHost").startswith("127.0.0.1:"), cluster.kind
    assert fields.pop("storeHost") == cluster.broker_addr, cluster.kind
    assert abs(int(fields.pop("storeTimestamp")) - time.time() * 1000) < 120_000
    return {
        "code": command.code,
        "fields": fields,
        "properties": properties,
        "body": bytes(command.body or b""),
    }


def _both(
    apache: Cluster,
    rmq: Cluster,
    code: int,
    *,
    connected: bool = True,
    no_reply_to: bool = False,
    answer: int = ResponseCode.SUCCESS,
    queue_id: int = 0,
) -> dict[str, Any]:
    """The same exchange on both clusters, each with a requester of its own id."""
    results = {}
    for cluster in (apache, rmq):
        rid = _requester_id(cluster.kind)
        properties = {
            "CORRELATION_ID": "corr-1",
            "REPLY_TO_CLIENT": rid,
            "TTL": "3000",
            "MSG_TYPE": "reply",
            "UNIQ_KEY": "7F0000010000000000000000000000AA",
        }
        if no_reply_to:
            del properties["REPLY_TO_CLIENT"]
        exchange = _run(
            cluster,
            code,
            properties,
            requester_id=rid if connected else None,
            answer=answer,
            queue_id=queue_id,
        )
        answered = _answer(exchange.response)
        if answered["remark"] is not None:
            answered["remark"] = answered["remark"].replace(rid, "<requester>")
        pushed = [_push(command, cluster) for command in exchange.pushed]
        for push in pushed:
            assert push["properties"]["REPLY_TO_CLIENT"] == rid
            push["properties"]["REPLY_TO_CLIENT"] = "<requester>"
        results[cluster.kind] = {"answer": answered, "pushed": pushed}
    return results


CODES = pytest.mark.parametrize(
    "code",
    [RequestCode.SEND_REPLY_MESSAGE, RequestCode.SEND_REPLY_MESSAGE_V2],
    ids=["324", "325"],
)


@CODES
def test_a_reply_is_pushed_to_its_requester_and_stored(
    apache: Cluster, rmq: Cluster, code: int
) -> None:
    results = _both(apache, rmq, code)
    expected = results["apache"]
    assert expected["answer"]["code"] == ResponseCode.SUCCESS, expected
    assert expected["answer"]["msgId"] == "<stored offset id>", expected
    assert len(expected["pushed"]) == 1, expected
    push = expected["pushed"][0]
    assert push["code"] == RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT
    assert push["body"] == BODY and push["fields"]["flag"] == "7", push
    assert push["properties"]["CORRELATION_ID"] == "corr-1", push
    assert results["rmq"] == expected


@CODES
def test_a_reply_whose_requester_is_not_connected(apache: Cluster, rmq: Cluster, code: int) -> None:
    results = _both(apache, rmq, code, connected=False)
    expected = results["apache"]["answer"]
    assert expected["code"] == ResponseCode.SYSTEM_ERROR, expected
    assert expected["remark"] == "push reply message fail, channel of <<requester>> not found."
    assert results["apache"]["pushed"] == []
    assert results["rmq"] == results["apache"]


def test_a_reply_without_reply_to_client(apache: Cluster, rmq: Cluster) -> None:
    results = _both(apache, rmq, RequestCode.SEND_REPLY_MESSAGE_V2, no_reply_to=True)
    expected = results["apache"]["answer"]
    assert expected["code"] == ResponseCode.SYSTEM_ERROR, expected
    assert expected["remark"] == "reply message properties[REPLY_TO_CLIENT] is null", expected
    assert results["rmq"] == results["apache"]


def test_a_requester_refusing_the_push(apache: Cluster, rmq: Cluster) -> None:
    results = _both(
        apache, rmq, RequestCode.SEND_REPLY_MESSAGE_V2, answer=ResponseCode.SYSTEM_ERROR
    )
    expected = results["apache"]
    assert expected["answer"]["code"] == ResponseCode.SYSTEM_ERROR, expected
    assert expected["answer"]["remark"] == "push reply message to <requester>fail.", expected
    assert len(expected["pushed"]) == 1
    assert results["rmq"] == expected


def test_a_reply_to_an_illegal_queue(apache: Cluster, rmq: Cluster) -> None:
    results = _both(apache, rmq, RequestCode.SEND_REPLY_MESSAGE_V2, queue_id=99)
    expected = results["apache"]
    assert expected["answer"]["code"] == ResponseCode.SYSTEM_ERROR, expected
    assert "request queueId[99] is illegal" in expected["answer"]["remark"], expected
    assert expected["pushed"] == []
    assert results["rmq"] == expected
