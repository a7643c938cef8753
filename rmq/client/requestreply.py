"""Request-reply (RocketMQ 4.6+) in rmq's client: the requester's wait and the replier's message.

The requester (:func:`request`, what ``Producer.request`` calls) sends an ordinary message
with three system properties added, as Java's ``DefaultMQProducerImpl.request`` does:

* ``CORRELATION_ID``: a fresh random UUID, the key its reply comes back under;
* ``REPLY_TO_CLIENT``: the requester's client id, by which the broker finds its connection;
* ``TTL``: the timeout in milliseconds.

The first request to a topic looks its route up if needed and sends a heartbeat to every
broker (Java sends it only when the route was not known yet, which misses the brokers of a
route fetched before without one), so the brokers know the requester's connection before any
reply can come.  The request is
sent as an async send is (retries only on connection failures).  The reply arrives on the
instance's connection to a broker as PUSH_REPLY_MESSAGE_TO_CLIENT (326): the header carries
what the replier sent (topic, queue id, flags, properties, birth time and host) and the
broker's ``storeHost`` and ``storeTimestamp``; the client adds ``ARRIVE_TIME`` and hands the
reply, a :class:`~rmq.client.consumer.message.MessageExt` (no queue offset: it was pushed,
not pulled), to the request waiting under its ``CORRELATION_ID``
(:class:`RequestFutures`, one per client instance).  A reply nobody waits for is logged and
answered SUCCESS, as Java does.  No reply within the timeout raises
:class:`RequestTimeoutError`; a failed send raises ``MQClientError`` with the failure as its
cause.

The replier builds its answer with :func:`create_reply_message` (Java's
``MessageUtil.createReplyMessage``): a message of ``<CLUSTER>_REPLY_TOPIC``, with the request's
``CORRELATION_ID``, ``REPLY_TO_CLIENT`` and ``TTL`` and ``MSG_TYPE`` ``reply``, which a producer
sends with SEND_REPLY_MESSAGE_V2 (325) instead of SEND_MESSAGE_V2 (:func:`is_reply`).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import uuid
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rmq.client.errors import ClientErrorCode, MQClientError
from rmq.client.message import Message
from rmq.common.message import MessageRecord
from rmq.common.msgconst import (
    PROPERTY_CLUSTER,
    PROPERTY_CORRELATION_ID,
    PROPERTY_MESSAGE_REPLY_TO_CLIENT,
    PROPERTY_MESSAGE_TTL,
    PROPERTY_MESSAGE_TYPE,
    PROPERTY_REPLY_MESSAGE_ARRIVE_TIME,
)
from rmq.common.naming import reply_topic
from rmq.common.properties import (
    NAME_VALUE_SEPARATOR,
    PROPERTY_SEPARATOR,
    decode_properties,
)
from rmq.common.recordwalk import CRC_MASK
from rmq.common.timeutil import now_millis
from rmq.remoting.client import RemotingClient
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, create_response
from rmq.remoting.connection import Connection
from rmq.remoting.headers import ReplyMessageRequestHeader

if TYPE_CHECKING:
    from rmq.client.consumer.message import MessageExt
    from rmq.client.producer import Producer

__all__ = [
    "REPLY_MESSAGE_FLAG",
    "RequestFutures",
    "RequestTimeoutError",
    "SystemPropertiesMessage",
    "create_reply_message",
    "is_reply",
    "register_reply_requests",
    "request",
    "request_async",
]

log = logging.getLogger("rmq.client")

REPLY_MESSAGE_FLAG = "reply"
"""``MSG_TYPE`` of a reply message (Java's ``MixAll.REPLY_MESSAGE_FLAG``)."""


class RequestTimeoutError(MQClientError):
    """The request was sent but no reply came within its timeout (REQUEST_TIMEOUT_EXCEPTION)."""

    def __init__(self, topic: str, timeout: float) -> None:
        super().__init__(
            ClientErrorCode.REQUEST_TIMEOUT_EXCEPTION,
            f"send request message to <{topic}> OK, but wait reply message timeout, "
            f"{round(timeout * 1000)} ms.",
        )
        self.topic = topic


@dataclass(slots=True)
class SystemPropertiesMessage(Message):
    """A message that also carries system properties (request-reply's) ahead of the user's;
    only the user ``properties`` are validated."""

    system_properties: dict[str, str] = field(default_factory=dict)

    def properties_text(self, uniq_id: str | None) -> str:
        own = Message.properties_text(self, uniq_id)
        system = PROPERTY_SEPARATOR.join(
            f"{name}{NAME_VALUE_SEPARATOR}{value}" for name, value in self.system_properties.items()
        )
        return f"{system}{PROPERTY_SEPARATOR}{own}" if system else own


def is_reply(msg: Message) -> bool:
    """Whether ``msg`` is a reply (``MSG_TYPE`` ``reply``), sent with SEND_REPLY_MESSAGE_V2."""
    return (
        isinstance(msg, SystemPropertiesMessage)
        and msg.system_properties.get(PROPERTY_MESSAGE_TYPE) == REPLY_MESSAGE_FLAG
    )


def create_reply_message(request_msg: MessageExt, body: bytes) -> SystemPropertiesMessage:
    """The reply to a received request (Java's ``MessageUtil.createReplyMessage``): raises
    MQClientError CREATE_REPLY_MESSAGE_EXCEPTION when the request lacks the ``CLUSTER``
    property a broker adds to every stored message."""
    properties = request_msg.properties
    cluster = properties.get(PROPERTY_CLUSTER)
    if cluster is None:
        raise MQClientError(
            ClientErrorCode.CREATE_REPLY_MESSAGE_EXCEPTION,
            "create reply message fail, requestMessage error, "
            f"property[{PROPERTY_CLUSTER}] is null.",
        )
    system = {PROPERTY_MESSAGE_TYPE: REPLY_MESSAGE_FLAG}
    for name in (PROPERTY_CORRELATION_ID, PROPERTY_MESSAGE_REPLY_TO_CLIENT, PROPERTY_MESSAGE_TTL):
        value = properties.get(name)
        if value is not None:
            system[name] = value
    return SystemPropertiesMessage(reply_topic(cluster), body, system_properties=system)


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
    from rmq.client.consumer.message import MessageExt  # the consumer package imports this one

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


async def request(producer: Producer, msg: Message, timeout: float) -> MessageExt:
    """Send ``msg`` as a request and return its reply (see the module docstring)."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    instance = producer.instance
    correlation_id = str(uuid.uuid4())
    outgoing = SystemPropertiesMessage(
        msg.topic,
        msg.body,
        tags=msg.tags,
        keys=msg.keys,
        properties=msg.properties,
        flag=msg.flag,
        delay_level=msg.delay_level,
        queue_id=msg.queue_id,
        wait_store_msg_ok=msg.wait_store_msg_ok,
        system_properties={
            **(msg.system_properties if isinstance(msg, SystemPropertiesMessage) else {}),
            PROPERTY_CORRELATION_ID: correlation_id,
            PROPERTY_MESSAGE_REPLY_TO_CLIENT: instance.client_id,
            PROPERTY_MESSAGE_TTL: str(round(timeout * 1000)),
        },
    )
    futures = instance.request_futures
    if msg.topic not in futures.ready_topics:
        # The brokers must know this client's connection before a reply can come back.
        if instance.cached_publish_info(msg.topic) is None:
            await instance.publish_info(msg.topic)
        await instance.send_heartbeat_to_all_brokers()
        futures.ready_topics.add(msg.topic)
    reply = futures.expect(correlation_id)
    try:
        remaining = timeout - (loop.time() - started)
        try:
            await producer.send_async(outgoing, timeout=max(remaining, 0.001))
        except Exception as exc:
            raise MQClientError(-1, f"send request message to <{msg.topic}> fail") from exc
        try:
            async with asyncio.timeout_at(started + timeout):
                return await reply
        except TimeoutError:
            raise RequestTimeoutError(msg.topic, timeout) from None
    finally:
        futures.forget(correlation_id)


def request_async(
    producer: Producer,
    msg: Message,
    timeout: float,
    on_success: Callable[[MessageExt], None] | None = None,
    on_exception: Callable[[BaseException], None] | None = None,
) -> asyncio.Task[MessageExt]:
    """:func:`request` in a task; ``on_success(reply)`` or ``on_exception(error)`` runs when
    it ends (Java's ``request(msg, RequestCallback, timeout)``)."""
    from rmq.client.producer import run_callbacks  # the producer module imports this one

    task = asyncio.get_running_loop().create_task(request(producer, msg, timeout))
    what = f"a request callback of producer {producer.group}"
    task.add_done_callback(functools.partial(run_callbacks, on_success, on_exception, what=what))
    return task
