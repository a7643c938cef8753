"""PUSH_REPLY_MESSAGE_TO_CLIENT (326): a broker hands a requester the reply to its request.

The other half of request-reply (:mod:`rmq.client.requestreply` sends the request).  The
reply arrives on the instance's connection to a broker: the header carries what the replier
sent (topic, queue id, flags, properties, birth time and host) and the broker's
``storeHost`` and ``storeTimestamp``; the client adds ``ARRIVE_TIME`` and hands the reply, a
:class:`~rmq.client.messageext.MessageExt` (no queue offset: it was pushed, not pulled), to
the request waiting under its ``CORRELATION_ID`` (:class:`RequestFutures`, one per client
instance; the instance serves 326 with :func:`register_reply_requests`).  A reply
nobody waits for is logged and answered SUCCESS, as Java does; one that does not decode is
answered SYSTEM_ERROR.
"""

from __future__ import annotations

import asyncio
import logging
import zlib

from rmq.client.messageext import MessageExt
from rmq.common.message import MessageRecord
from rmq.common.msgconst import PROPERTY_CORRELATION_ID, PROPERTY_REPLY_MESSAGE_ARRIVE_TIME
from rmq.common.properties import decode_properties
from rmq.common.recordwalk import CRC_MASK
from rmq.common.timeutil import now_millis
from rmq.remoting.client import RemotingClient
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, create_response
from rmq.remoting.connection import Connection
from rmq.remoting.headers import ReplyMessageRequestHeader

__all__ = ["RequestFutures", "pushed_reply", "register_reply_requests"]

log = logging.getLogger("rmq.client")


class RequestFutures:
    """The requests of one client instance waiting for their replies, by correlation id."""

    def __init__(self) -> None:
        self._waiting: dict[str, asyncio.Future[MessageExt]] = {}
        self.ready_topics: set[str] = set()
        """Topics requested before: their brokers had a heartbeat after the route was known."""

    def __len__(self) -> int:
        return len(self._waiting)

    def expect(self, correlation_id: str) -> asyncio.Future[MessageExt]:
        future: asyncio.Future[MessageExt] = asyncio.get_running_loop().create_future()
        self._waiting[correlation_id] = future
        return future

    def forget(self, correlation_id: str) -> None:
        self._waiting.pop(correlation_id, None)

    def deliver(self, reply: MessageExt) -> bool:
        """Hand ``reply`` to its request; False when no request waits for it."""
        future = self._waiting.pop(reply.properties.get(PROPERTY_CORRELATION_ID, ""), None)
        if future is None or future.done():
            return False
        future.set_result(reply)
        return True


def pushed_reply(header: ReplyMessageRequestHeader, body: bytes, arrived: int) -> MessageExt:
    """The reply a PUSH_REPLY_MESSAGE_TO_CLIENT carries, as a consumed message."""
    properties = decode_properties(header.properties or "")
    properties[PROPERTY_REPLY_MESSAGE_ARRIVE_TIME] = str(arrived)
    record = MessageRecord(
        total_size=0,
        magic=0,
        body_crc=zlib.crc32(body) & CRC_MASK,
        queue_id=header.queue_id,
        flag=header.flag,
        queue_offset=0,
        physical_offset=0,
        sys_flag=header.sys_flag,
        born_timestamp=header.born_timestamp,
        born_host=header.born_host,
        store_timestamp=header.store_timestamp,
        store_host=header.store_host,
        reconsume_times=header.reconsume_times or 0,
        prepared_transaction_offset=0,
        body=body,
        topic=header.topic,
        properties=properties,
        offset_msg_id="",
    )
    return MessageExt(record, "")


def register_reply_requests(remoting: RemotingClient, futures: RequestFutures) -> None:
    """Serve PUSH_REPLY_MESSAGE_TO_CLIENT (326) on ``remoting`` for ``futures``."""

    async def receive(connection: Connection, request: RemotingCommand) -> RemotingCommand:
        arrived = now_millis()
        header = request.read_header(ReplyMessageRequestHeader)
        try:
            reply = pushed_reply(header, bytes(request.body or b""), arrived)
        except Exception as exc:
            log.warning("unknown err when receiveReplyMsg from %s: %s", connection, exc)
            return create_response(ResponseCode.SYSTEM_ERROR, "process reply message fail")
        if not futures.deliver(reply):
            log.warning(
                "receive reply message, but not matched any request, CorrelationId: %s , "
                "reply from host: %s",
                reply.properties.get(PROPERTY_CORRELATION_ID),
                header.born_host,
            )
        return create_response(ResponseCode.SUCCESS)

    remoting.register(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, receive)
