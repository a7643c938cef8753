"""The broker's side of request-reply: SEND_REPLY_MESSAGE (324) and SEND_REPLY_MESSAGE_V2 (325),
after Apache 4.9.8's ``ReplyMessageProcessor``.

A replier sends its reply (a message of ``<clusterName>_REPLY_TOPIC``, property ``MSG_TYPE``
``reply``) with 324 (long header keys) or 325 (the V2 short keys ``a``..``n``).  The broker:

1. checks it as a send (``startAcceptSendRequestTimeStamp``, broker perm on order topics, the
   topic's name, auto-creation, the queue id: :class:`SendMessageProcessor`'s checks, same
   codes and remarks); a negative queue id picks ``random % writeQueueNums``;
2. finds the requester: the producer connection whose heartbeat carried the client id of the
   message's ``REPLY_TO_CLIENT`` property, and pushes the reply to it with
   PUSH_REPLY_MESSAGE_TO_CLIENT (326, a :class:`ReplyMessageRequestHeader`: the send header's
   fields, ``bornHost`` the replier's address, ``storeHost`` the broker's, ``storeTimestamp``
   now, and the properties plus ``PUSH_REPLY_TIME``), waiting up to 10 s for its answer;
3. answers SUCCESS with ``msgId`` "0", the queue id and ``queueOffset`` 0 when the requester
   answered SUCCESS, else SYSTEM_ERROR with one of Apache's remarks: ``reply message
   properties[REPLY_TO_CLIENT] is null``, ``push reply message fail, channel of <ID> not
   found.`` or ``push reply message to <ID>fail.`` (sic: no space);
4. with ``storeReplyMessageEnable`` (the default), also stores the reply whatever the push
   did: the property string as the replier sent it, sysFlag 0, and on a stored put the
   answer's ``msgId``, ``queueId`` and ``queueOffset`` become the stored message's, while its
   code stays the push's (a SYSTEM_ERROR answer may thus carry a stored message's id).

Every answer carries ``MSG_REGION`` and ``TRACE_ON`` as send answers do.
"""

from __future__ import annotations

import logging
import time
from typing import cast

from rmq.common.javahash import tags_code
from rmq.common.msgconst import (
    PROPERTY_KEYS,
    PROPERTY_MESSAGE_REPLY_TO_CLIENT,
    PROPERTY_PUSH_REPLY_TIME,
    PROPERTY_TAGS,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
)
from rmq.common.properties import decode_properties, encode_properties
from rmq.common.timeutil import now_millis
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, create_request
from rmq.remoting.connection import Connection, Handler
from rmq.remoting.errors import RemotingError
from rmq.remoting.headers import (
    ReplyMessageRequestHeader,
    SendMessageRequestHeader,
    SendMessageResponseHeader,
)
from rmq.server.broker.processor.sendprocessor import (
    SendMessageProcessor,
    SendRefused,
    _born_host,
    await_durable,
    count_put,
    random_queue_id,
    wait_store_msg_ok,
)
from rmq.store.putmessage import InnerMessage, PutMessageStatus

log = logging.getLogger("rmq.broker")

PUSH_REPLY_TIMEOUT_S = 10.0
"""How long the broker waits for the requester's answer to PUSH_REPLY_MESSAGE_TO_CLIENT."""

_STORED = frozenset(
    {
        PutMessageStatus.PUT_OK,
        PutMessageStatus.FLUSH_DISK_TIMEOUT,
        PutMessageStatus.FLUSH_SLAVE_TIMEOUT,
        PutMessageStatus.SLAVE_NOT_AVAILABLE,
    }
)


class ReplyMessageProcessor(SendMessageProcessor):
    """Serves 324 and 325 (see the module docstring); the checks are the send path's."""

    def handlers(self) -> dict[int, Handler]:
        return {
            RequestCode.SEND_REPLY_MESSAGE: self.send_reply,
            RequestCode.SEND_REPLY_MESSAGE_V2: self.send_reply,
        }

    async def send_reply(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        header = request.read_header(SendMessageRequestHeader)
        try:
            topic_config = self._check(connection, header)
        except SendRefused as refused:
            return self._send_response(refused.code, refused.remark)
        queue_id = header.queue_id
        if queue_id < 0:
            queue_id = random_queue_id(topic_config.write_queue_nums)
        body = bytes(request.body or b"")
        properties = decode_properties(header.properties or "")
        failure = await self._push(connection, header, properties, body)
        answer: SendMessageResponseHeader | None = None
        if failure is None:
            answer = SendMessageResponseHeader(msg_id="0", queue_id=queue_id, queue_offset=0)
        if self.context.broker_config.store_reply_message_enable:
            answer = await self._store(connection, header, queue_id, body, properties) or answer
        if failure is None:
            return self._send_response(ResponseCode.SUCCESS, None, answer)
        return self._send_response(ResponseCode.SYSTEM_ERROR, failure, answer)

    async def _push(
        self,
        connection: Connection,
        header: SendMessageRequestHeader,
        properties: dict[str, str],
        body: bytes,
    ) -> str | None:
        """Push the reply to its requester; None when it answered SUCCESS, else the remark."""
        sender_id = properties.get(PROPERTY_MESSAGE_REPLY_TO_CLIENT)
        if sender_id is None:
            log.warning("%s is null, can not reply message", PROPERTY_MESSAGE_REPLY_TO_CLIENT)
            return f"reply message properties[{PROPERTY_MESSAGE_REPLY_TO_CLIENT}] is null"
        channel = self.context.client_manager.find_producer_channel(sender_id)
        if channel is None:
            remark = f"push reply message fail, channel of <{sender_id}> not found."
            log.warning(remark)
            return remark
        pushed = dict(properties)
        pushed[PROPERTY_PUSH_REPLY_TIME] = str(now_millis())
        push_header = ReplyMessageRequestHeader(
            producer_group=header.producer_group,
            topic=header.topic,
            default_topic=header.default_topic,
            default_topic_queue_nums=header.default_topic_queue_nums,
            queue_id=header.queue_id,
            sys_flag=header.sys_flag,
            born_timestamp=header.born_timestamp,
            flag=header.flag,
            properties=encode_properties(pushed),
            reconsume_times=header.reconsume_times,
            unit_mode=header.unit_mode,
            born_host=connection.remote_addr,
            store_host=self.context.broker_addr,
            store_timestamp=now_millis(),
        )
        push = create_request(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, push_header, body=body)
        # The client manager holds the connections the client processor registered.
        requester = cast(Connection, channel)
        try:
            response = await requester.send_request(push, PUSH_REPLY_TIMEOUT_S)
        except RemotingError as exc:
            log.warning("push reply message to <%s> fail. %s: %s", sender_id, requester, exc)
            return f"push reply message to {sender_id}fail."
        if response.code != ResponseCode.SUCCESS:
            log.warning(
                "push reply message to <%s> return fail, response remark: %s",
                sender_id,
                response.remark,
            )
            return f"push reply message to {sender_id}fail."
        return None

    async def _store(
        self,
        connection: Connection,
        header: SendMessageRequestHeader,
        queue_id: int,
        body: bytes,
        properties: dict[str, str],
    ) -> SendMessageResponseHeader | None:
        """Store the reply (``storeReplyMessageEnable``), flushed and replicated as a send
        is (SYNC_FLUSH, SYNC_MASTER); the answer's header when stored."""
        started = time.monotonic()
        message = InnerMessage(
            header.topic,
            queue_id,
            body,
            (header.properties or "").encode(),
            tags_code(properties.get(PROPERTY_TAGS)),
            properties.get(PROPERTY_KEYS),
            properties.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX),
            header.flag,
            0,
            header.born_timestamp,
            _born_host(connection.remote_address),
            header.reconsume_times or 0,
        )
        result = self.context.store.put_message(message)
        count_put(self.context.stats, result, started)
        if result.status not in _STORED:
            log.warning("storing the reply message of %s failed: %s", header.topic, result.status)
            return None
        if result.ok and wait_store_msg_ok(properties):
            await await_durable(self.context, result)
        self.context.stats.items.put(
            result.topic, result.queue_id, result.msg_num, result.wrote_bytes
        )
        return SendMessageResponseHeader(
            msg_id=result.msg_id, queue_id=queue_id, queue_offset=result.queue_offset
        )
