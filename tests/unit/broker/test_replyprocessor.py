"""SEND_REPLY_MESSAGE(_V2) against a real store, with a fake requester connection: what is
pushed to the requester, what is stored, and the answer with and without
``storeReplyMessageEnable`` (the differential raw-frame tests against Apache's broker are in
tests/conformance/test_raw_reply.py)."""

from __future__ import annotations

from pathlib import Path

from rmq.common.config import BrokerRole
from rmq.common.message import iter_records
from rmq.common.naming import reply_topic
from rmq.common.properties import decode_properties
from rmq.remoting.codes import LanguageCode, RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, create_response
from rmq.remoting.errors import RemotingTimeoutError
from rmq.server.broker.client.clientmanager import ClientChannelInfo
from rmq.server.broker.context import BrokerContext
from rmq.server.broker.processor.replyprocessor import ReplyMessageProcessor
from rmq.store.putmessage import PutMessageStatus
from tests.unit.broker.helpers import (
    BORN_TIME,
    BROKER_IP,
    BROKER_PORT,
    call,
    commitlog_bytes,
    running_broker,
    send_v1,
)

REQUESTER = "10.0.0.9@requester"
REPLY_TOPIC = reply_topic("DefaultCluster")
REPLY_PROPS = {
    "MSG_TYPE": "reply",
    "CORRELATION_ID": "c-1",
    "REPLY_TO_CLIENT": REQUESTER,
    "TTL": "3000",
    "WAIT": "true",
    "UNIQ_KEY": "0A01020300002A9F0000000000000009",
}


class Requester:
    """A requester's connection: records the pushes, answers them with ``answer`` (or
    times out)."""

    def __init__(self, answer: int | None = ResponseCode.SUCCESS) -> None:
        self.remote_addr = "10.0.0.9:50000"
        self.closed = False
        self.answer = answer
        self.pushed: list[RemotingCommand] = []

    def close(self) -> None:
        self.closed = True

    async def send_request(self, request: RemotingCommand, timeout: float) -> RemotingCommand:
        self.pushed.append(request)
        if self.answer is None:
            raise RemotingTimeoutError(f"no answer within {timeout}s")
        return create_response(self.answer)


def connect(broker: BrokerContext, requester: Requester) -> None:
    info = ClientChannelInfo(requester, REQUESTER, LanguageCode.JAVA, 409)
    broker.client_manager.register_producer("ReqGroup", info)


def reply(broker: BrokerContext, *, sys_flag: int = 0) -> RemotingCommand:
    request = send_v1(
        REPLY_TOPIC,
        b"the answer",
        props=REPLY_PROPS,
        code=RequestCode.SEND_REPLY_MESSAGE,
        sysFlag=sys_flag,
    )
    return call(ReplyMessageProcessor(broker).send_reply, request)


def test_the_reply_is_pushed_and_stored_as_sent(broker: BrokerContext) -> None:
    requester = Requester()
    connect(broker, requester)
    response = reply(broker, sys_flag=1)
    assert response.code == ResponseCode.SUCCESS and response.remark is None
    fields = response.ext_fields or {}
    assert fields["queueId"] == "0" and fields["queueOffset"] == "0"
    assert len(fields["msgId"]) == 32, "a stored message's offset id"
    assert fields["MSG_REGION"] == "DefaultRegion" and fields["TRACE_ON"] == "true"
    (push,) = requester.pushed
    assert push.code == RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT and push.body == b"the answer"
    header = push.ext_fields or {}
    assert header["bornHost"] == "10.1.2.3:40000"
    assert header["storeHost"] == f"{BROKER_IP}:{BROKER_PORT}"
    assert header["sysFlag"] == "1" and header["bornTimestamp"] == str(BORN_TIME)
    pushed = decode_properties(header["properties"])
    assert pushed.pop("PUSH_REPLY_TIME").isdigit()
    assert pushed == REPLY_PROPS
    ((_, record),) = iter_records(commitlog_bytes(broker))
    assert record.topic == REPLY_TOPIC and record.body == b"the answer"
    assert record.sys_flag == 0, "Apache stores a reply with sysFlag 0"
    assert record.properties == REPLY_PROPS, "stored as sent: no CLUSTER, WAIT kept"


def test_without_storing_the_answer_has_msg_id_zero(tmp_path: Path) -> None:
    with running_broker(tmp_path, broker={"store_reply_message_enable": False}) as broker:
        connect(broker, Requester())
        response = reply(broker)
        assert response.code == ResponseCode.SUCCESS
        fields = response.ext_fields or {}
        assert (fields["msgId"], fields["queueId"], fields["queueOffset"]) == ("0", "0", "0")
        assert broker.store.get_max_offset_in_queue(REPLY_TOPIC, 0) == 0, "nothing stored"


def test_a_requester_that_refuses_or_does_not_answer(broker: BrokerContext) -> None:
    for requester in (Requester(ResponseCode.SYSTEM_ERROR), Requester(None)):
        connect(broker, requester)
        response = reply(broker)
        broker.client_manager.channel_closed(requester)
        assert response.code == ResponseCode.SYSTEM_ERROR
        assert response.remark == f"push reply message to {REQUESTER}fail."
        assert len(requester.pushed) == 1
        assert "msgId" in (response.ext_fields or {}), "stored all the same"


def test_without_storing_a_failed_push_answers_no_message(tmp_path: Path) -> None:
    with running_broker(tmp_path, broker={"store_reply_message_enable": False}) as broker:
        response = reply(broker)
        assert response.code == ResponseCode.SYSTEM_ERROR
        assert response.remark == f"push reply message fail, channel of <{REQUESTER}> not found."
        assert set(response.ext_fields or {}) == {"MSG_REGION", "TRACE_ON"}


class SlaveWaits:
    """A SYNC_MASTER's replication as the reply processor sees it: records the offsets it
    is asked to wait for and answers ``status``."""

    def __init__(self, status: PutMessageStatus) -> None:
        self.status = status
        self.waited: list[int] = []

    async def wait_replica(self, next_offset: int) -> PutMessageStatus:
        self.waited.append(next_offset)
        return self.status


def test_a_sync_master_answers_a_stored_reply_once_a_slave_holds_it(tmp_path: Path) -> None:
    """Apache's reply processor stores with the blocking putMessage: flush and replication
    waited for (WAIT true), the answer the same whatever they gave."""
    with running_broker(tmp_path, store={"broker_role": BrokerRole.SYNC_MASTER}) as broker:
        waits = SlaveWaits(PutMessageStatus.FLUSH_SLAVE_TIMEOUT)
        broker.ha_service = waits  # type: ignore[assignment]
        connect(broker, Requester())
        response = reply(broker)
        assert response.code == ResponseCode.SUCCESS
        ((offset, record),) = iter_records(commitlog_bytes(broker))
        assert waits.waited == [offset + record.total_size], "the reply's end offset"
        assert (response.ext_fields or {})["queueOffset"] == "0"
