"""Sending messages: SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE requests, their results, send-back.

Sends are a producer's hot path, so their requests are built apart from the call: either
`send_request` from a `SendMessageRequestHeader`, or a `SendRequestTemplate`, which encodes
once the header fields every send of one producer group to one topic shares and adds only
the per-send ones (the same request, without encoding fourteen fields each time).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, fields

from rmq.client.api.request import request_broker
from rmq.common.naming import (
    DEFAULT_TRACE_REGION_ID,
)
from rmq.remoting.bodies import (
    MessageQueue,
)
from rmq.remoting.client import RemotingClient
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import Buffer, RemotingCommand, create_request
from rmq.remoting.headercodec import encode_header
from rmq.remoting.headers import (
    ConsumerSendMsgBackRequestHeader,
    SendMessageRequestHeader,
    SendMessageResponseHeader,
)

_PROPERTY_MSG_REGION = "MSG_REGION"
_PROPERTY_TRACE_SWITCH = "TRACE_ON"


class SendStatus(enum.Enum):
    """How a broker stored a message (Java's `SendStatus`): anything but SEND_OK means it is
    stored but not as safely as the broker's flush / replication policy asks."""

    SEND_OK = ResponseCode.SUCCESS
    FLUSH_DISK_TIMEOUT = ResponseCode.FLUSH_DISK_TIMEOUT
    FLUSH_SLAVE_TIMEOUT = ResponseCode.FLUSH_SLAVE_TIMEOUT
    SLAVE_NOT_AVAILABLE = ResponseCode.SLAVE_NOT_AVAILABLE


_SEND_ACCEPTED = frozenset(status.value for status in SendStatus)
_SEND_STATUS_OF_CODE: dict[int, SendStatus] = {status.value: status for status in SendStatus}


@dataclass(slots=True)
class SendResult:
    """What a send returns: `msg_id` is the client's UNIQ_KEY (comma-joined for a batch),
    `offset_msg_id` the broker's offset message id (comma-joined for a batch), and
    `queue_offset` the consume queue offset of the (first) message."""

    status: SendStatus
    msg_id: str
    offset_msg_id: str
    message_queue: MessageQueue
    queue_offset: int
    transaction_id: str | None = None
    region_id: str = DEFAULT_TRACE_REGION_ID
    trace_on: bool = True


def _send_code(batch: bool) -> RequestCode:
    return RequestCode.SEND_BATCH_MESSAGE if batch else RequestCode.SEND_MESSAGE_V2


def send_request(header: SendMessageRequestHeader, body: Buffer) -> RemotingCommand:
    """The SEND_MESSAGE_V2 request (SEND_BATCH_MESSAGE when `header.batch`), short keys."""
    return create_request(_send_code(header.batch), header, body=body)


_SEND_KEY = {field.name: field.metadata["short"] for field in fields(SendMessageRequestHeader)}
"""The V2 short key of each SendMessageRequestHeader field, as the header declares it."""


class SendRequestTemplate:
    """The send requests of one producer group to one topic.

    The fields every such send shares (group, topic, default topic and its queue count,
    reconsume times, unit mode) are encoded once; `request` copies them and adds the
    per-send fields, giving the request `send_request` gives for the equal header.
    """

    __slots__ = ("_reply", "_shared")

    def __init__(
        self,
        producer_group: str,
        topic: str,
        default_topic: str,
        default_topic_queue_nums: int,
        reply: bool = False,
    ) -> None:
        self._reply = reply  # replies go as SEND_REPLY_MESSAGE_V2
        header = SendMessageRequestHeader(
            producer_group=producer_group,
            topic=topic,
            default_topic=default_topic,
            default_topic_queue_nums=default_topic_queue_nums,
            queue_id=0,
            sys_flag=0,
            born_timestamp=0,
            flag=0,
            properties="",
            reconsume_times=0,
            bname="",
        )
        # Every field has a value here, so the per-send ones keep their places in the order.
        self._shared = encode_header(header, short_keys=True)

    def request(
        self,
        queue: MessageQueue,
        sys_flag: int,
        born_timestamp: int,
        flag: int,
        properties: str,
        body: Buffer,
        *,
        batch: bool = False,
    ) -> RemotingCommand:
        """The request sending `body` (a batch body with `batch`) to `queue`."""
        ext_fields = self._shared.copy()
        ext_fields[_SEND_KEY["queue_id"]] = str(queue.queue_id)
        ext_fields[_SEND_KEY["sys_flag"]] = str(sys_flag)
        ext_fields[_SEND_KEY["born_timestamp"]] = str(born_timestamp)
        ext_fields[_SEND_KEY["flag"]] = str(flag)
        ext_fields[_SEND_KEY["properties"]] = properties
        ext_fields[_SEND_KEY["batch"]] = "true" if batch else "false"
        ext_fields[_SEND_KEY["bname"]] = queue.broker_name
        code = RequestCode.SEND_REPLY_MESSAGE_V2 if self._reply else _send_code(batch)
        request = create_request(code, body=body)
        request.ext_fields = ext_fields
        return request


async def send_message(
    remoting: RemotingClient,
    addr: str,
    queue: MessageQueue,
    request: RemotingCommand,
    timeout: float,
    *,
    msg_id: str,
) -> SendResult:
    """Send `request` (from `send_request` or a `SendRequestTemplate`) for `queue` to the
    broker at `addr` and wait for the answer.

    Accepts SUCCESS, FLUSH_DISK_TIMEOUT, FLUSH_SLAVE_TIMEOUT and SLAVE_NOT_AVAILABLE (the
    result's `status`); `msg_id` is the UNIQ_KEY the message carries, copied into the result.
    """
    response = await request_broker(remoting, addr, request, timeout, _SEND_ACCEPTED)
    return send_result(response, queue, msg_id)


def send_result(response: RemotingCommand, queue: MessageQueue, msg_id: str) -> SendResult:
    """The SendResult of an accepted send response to a request for `queue`: its message
    queue is the queue id the broker answered (the requested one unless it picked one)."""
    answer = response.read_header(SendMessageResponseHeader)
    if answer.queue_id != queue.queue_id:
        queue = MessageQueue(queue.topic, queue.broker_name, answer.queue_id)
    ext_fields = response.ext_fields or {}
    return SendResult(
        _SEND_STATUS_OF_CODE[response.code],
        msg_id,
        answer.msg_id,
        queue,
        answer.queue_offset,
        answer.transaction_id,
        ext_fields.get(_PROPERTY_MSG_REGION) or DEFAULT_TRACE_REGION_ID,
        ext_fields.get(_PROPERTY_TRACE_SWITCH) != "false",
    )


async def send_message_oneway(
    remoting: RemotingClient, addr: str, request: RemotingCommand
) -> None:
    """Send a send `request` marked oneway: written to the socket, never answered."""
    await remoting.invoke_oneway(addr, request)


async def consumer_send_msg_back(
    remoting: RemotingClient,
    addr: str,
    header: ConsumerSendMsgBackRequestHeader,
    timeout: float,
) -> None:
    """CONSUMER_SEND_MSG_BACK: hand a message that failed to consume back to the broker,
    which stores it in the group's retry topic (or its DLQ)."""
    request = create_request(RequestCode.CONSUMER_SEND_MSG_BACK, header)
    await request_broker(remoting, addr, request, timeout)
