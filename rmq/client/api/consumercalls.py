"""Admin requests a broker answers by calling the consumers of a group: offset reset, the
members' offsets, a member's running info and consuming one message on a member."""

from __future__ import annotations

from rmq.client.api.request import body_of, request_broker
from rmq.remoting.bodies import MessageQueue, ResetOffsetBody
from rmq.remoting.bodies.consumerinfo import (
    ConsumeMessageDirectlyResult,
    ConsumerRunningInfo,
    GetConsumerStatusBody,
)
from rmq.remoting.client import RemotingClient
from rmq.remoting.codes import LanguageCode, RequestCode
from rmq.remoting.command import create_request
from rmq.remoting.headers import (
    ConsumeMessageDirectlyResultRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetConsumerStatusRequestHeader,
    ResetOffsetRequestHeader,
)


async def invoke_broker_to_reset_offset(
    remoting: RemotingClient,
    addr: str,
    topic: str,
    group: str,
    timestamp: int,
    timeout: float,
    *,
    is_force: bool = False,
    for_cpp: bool = False,
) -> dict[MessageQueue, int]:
    """INVOKE_BROKER_TO_RESET_OFFSET: the broker moves the group's online members to the
    offsets at ``timestamp`` (ms; -1: the end) and returns them per queue.  Without
    ``is_force`` a queue the group has not yet consumed up to the timestamp keeps its
    offset.  CONSUMER_NOT_ONLINE when the group has no member on that broker.
    ``for_cpp`` sends the request as the C++ client (language CPP), as Java's ``isC`` does,
    so that the broker pushes the C++ client's body."""
    header = ResetOffsetRequestHeader(
        topic=topic, group=group, timestamp=timestamp, is_force=is_force
    )
    request = create_request(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, header)
    if for_cpp:
        request.language = LanguageCode.CPP
    response = await request_broker(remoting, addr, request, timeout)
    if not response.body:
        return {}
    return ResetOffsetBody.decode(response.body).offset_table


async def invoke_broker_to_get_consumer_status(
    remoting: RemotingClient,
    addr: str,
    topic: str,
    group: str,
    timeout: float,
    *,
    client_addr: str | None = None,
) -> dict[str, dict[MessageQueue, int]]:
    """INVOKE_BROKER_TO_GET_CONSUMER_STATUS: client id -> that member's offsets of ``topic``
    (only the member whose client id is ``client_addr``, when given)."""
    header = GetConsumerStatusRequestHeader(topic=topic, group=group, client_addr=client_addr)
    request = create_request(RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, header)
    response = await request_broker(remoting, addr, request, timeout)
    body = body_of(response, addr, "the consumer status")
    return GetConsumerStatusBody.decode(body).consumer_table


async def get_consumer_running_info(
    remoting: RemotingClient,
    addr: str,
    group: str,
    client_id: str,
    timeout: float,
    *,
    jstack: bool = False,
) -> ConsumerRunningInfo:
    """GET_CONSUMER_RUNNING_INFO: member ``client_id``'s settings, subscriptions, queues and
    rates (and its stacks with ``jstack``), through the broker at ``addr``."""
    header = GetConsumerRunningInfoRequestHeader(
        consumer_group=group, client_id=client_id, jstack_enable=jstack
    )
    request = create_request(RequestCode.GET_CONSUMER_RUNNING_INFO, header)
    response = await request_broker(remoting, addr, request, timeout)
    return ConsumerRunningInfo.decode(body_of(response, addr, "the consumer running info"))


async def consume_message_directly(
    remoting: RemotingClient,
    addr: str,
    group: str,
    client_id: str,
    msg_id: str,
    timeout: float,
) -> ConsumeMessageDirectlyResult:
    """CONSUME_MESSAGE_DIRECTLY: member ``client_id`` of ``group`` consumes the message whose
    offset message id is ``msg_id`` (stored on the broker at ``addr``) once, outside its
    queues, and reports how its listener took it."""
    header = ConsumeMessageDirectlyResultRequestHeader(
        consumer_group=group, client_id=client_id, msg_id=msg_id
    )
    request = create_request(RequestCode.CONSUME_MESSAGE_DIRECTLY, header)
    response = await request_broker(remoting, addr, request, timeout)
    body = body_of(response, addr, "the direct consumption result")
    return ConsumeMessageDirectlyResult.decode(body)
