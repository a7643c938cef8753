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
instance's connection to a broker as PUSH_REPLY_MESSAGE_TO_CLIENT (326) and is handed, a
:class:`~rmq.client.messageext.MessageExt`, to the request waiting under its
``CORRELATION_ID`` (:mod:`rmq.client.replyrequests`).  No reply within the timeout raises
:class:`RequestTimeoutError`; a failed send raises ``MQClientError`` with the failure as its
cause.  The requester is anything that sends as a producer does (:class:`Requester`; the
producer is one), so this module needs no producer.

The replier builds its answer with :func:`create_reply_message` (Java's
``MessageUtil.createReplyMessage``): a message of ``<CLUSTER>_REPLY_TOPIC``, with the request's
``CORRELATION_ID``, ``REPLY_TO_CLIENT`` and ``TTL`` and ``MSG_TYPE`` ``reply``, which a producer
sends with SEND_REPLY_MESSAGE_V2 (325) instead of SEND_MESSAGE_V2 (:func:`is_reply`).
"""

from __future__ import annotations

import asyncio
import functools
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from rmq.client.api import SendResult
from rmq.client.callbacks import ExceptionCallback, run_callbacks
from rmq.client.errors import ClientErrorCode, MQClientError
from rmq.client.instance import ClientInstance
from rmq.client.message import Message
from rmq.client.messageext import MessageExt
from rmq.common.msgconst import (
    PROPERTY_CLUSTER,
    PROPERTY_CORRELATION_ID,
    PROPERTY_MESSAGE_REPLY_TO_CLIENT,
    PROPERTY_MESSAGE_TTL,
    PROPERTY_MESSAGE_TYPE,
)
from rmq.common.naming import reply_topic
from rmq.common.properties import NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR

__all__ = [
    "REPLY_MESSAGE_FLAG",
    "RequestTimeoutError",
    "Requester",
    "SystemPropertiesMessage",
    "create_reply_message",
    "is_reply",
    "request",
    "request_async",
]

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


class Requester(Protocol):
    """What sends a request: a started producer of ``group`` on ``instance``."""

    @property
    def group(self) -> str: ...

    @property
    def instance(self) -> ClientInstance: ...

    def send_async(self, msg: Message, *, timeout: float | None = None) -> asyncio.Task[SendResult]:
        """Send ``msg`` in a task, retrying only connection failures."""
        ...


async def request(producer: Requester, msg: Message, timeout: float) -> MessageExt:
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
    producer: Requester,
    msg: Message,
    timeout: float,
    on_success: Callable[[MessageExt], None] | None = None,
    on_exception: ExceptionCallback | None = None,
) -> asyncio.Task[MessageExt]:
    """:func:`request` in a task; ``on_success(reply)`` or ``on_exception(error)`` runs when
    it ends (Java's ``request(msg, RequestCallback, timeout)``)."""
    task = asyncio.get_running_loop().create_task(request(producer, msg, timeout))
    what = f"a request callback of producer {producer.group}"
    task.add_done_callback(functools.partial(run_callbacks, on_success, on_exception, what=what))
    return task
