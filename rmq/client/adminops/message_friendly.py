"""Message admin operations of the friendly `rmq message` verbs that mqadmin's commands do
inline (none prints).

* `stored_by`: the broker name that stored a record (its store host in the cluster info);
* `message_at`: the message at one queue offset, read with the tools' pull group as
  queryMsgByOffset reads it (`queue_pulls` of adminops/message.py), with its broker name;
* `resend_copy` / `resend`: queryMsgById -s true: the stored message sent again by producer
  group ReSendMsgById, with its tags, keys, flag and user properties (the client refuses
  system properties, so the copy gets a new unique key);
* `send_status`: sendMsgStatus: one warm-up send, then `count` timed sends of `size` bytes
  to the broker's own topic (the topic named after the broker), producer group PID_SMSC.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from rmq.client.admin import AdminClient
from rmq.client.adminops.message import TOOLS_CONSUMER_GROUP, queue_pulls
from rmq.client.api import SendResult
from rmq.client.consumer.pull import PullConsumer
from rmq.client.message import Message
from rmq.client.producer import Producer
from rmq.common.message import MessageRecord
from rmq.common.msgconst import PROPERTY_KEYS
from rmq.common.properties import user_property_error
from rmq.remoting.bodies import MessageQueue

RESEND_GROUP = "ReSendMsgById"
SEND_STATUS_GROUP = "PID_SMSC"


def _namesrvs(admin: AdminClient) -> str:
    return ";".join(admin.namesrv_addrs)


async def stored_by(admin: AdminClient, record: MessageRecord) -> str | None:
    """The name of the broker whose address is the record's store host (None if unknown)."""
    info = await admin.cluster_info()
    for broker_name, data in info.broker_addr_table.items():
        if record.store_host in data.broker_addrs.values():
            return broker_name
    return None


async def message_at(
    admin: AdminClient, topic: str, broker_name: str, queue_id: int, offset: int
) -> MessageRecord | None:
    """The message at `offset` of the queue, None when the queue has none there."""
    async with PullConsumer(TOOLS_CONSUMER_GROUP, _namesrvs(admin)) as consumer:
        mq = MessageQueue(topic, broker_name, queue_id)
        (pull,) = await queue_pulls(consumer, mq, "*", offset, offset + 1, batch=1)
    messages = pull.result.messages
    return messages[0].record if messages else None


def resend_copy(record: MessageRecord) -> Message:
    """The message queryMsgById -s true sends for a stored record."""
    properties = {
        name: value
        for name, value in record.properties.items()
        if user_property_error(name, value) is None
    }
    return Message(
        record.topic,
        record.decompressed_body() or b"",
        tags=record.tags,
        keys=record.properties.get(PROPERTY_KEYS),
        properties=properties,
        flag=record.flag,
    )


async def resend(admin: AdminClient, record: MessageRecord) -> SendResult:
    """Send `resend_copy(record)` with producer group ReSendMsgById."""
    async with Producer(RESEND_GROUP, _namesrvs(admin)) as producer:
        return await producer.send(resend_copy(record))


@dataclass(frozen=True, slots=True)
class TimedSend:
    """One send of `send_status` and how long it took (ms)."""

    rt_ms: int
    result: SendResult


async def send_status(
    admin: AdminClient, broker_name: str, size: int = 128, count: int = 50
) -> list[TimedSend]:
    """sendMsgStatus' sends to the broker's own topic (see the module docstring)."""
    instance = f"{SEND_STATUS_GROUP}_{int(time.time() * 1000)}"
    sends = []
    async with Producer(SEND_STATUS_GROUP, _namesrvs(admin), instance_name=instance) as sender:
        await sender.send(Message(broker_name, b"a" * 16))
        for _ in range(count):
            begin = time.monotonic()
            result = await sender.send(Message(broker_name, b"a" * size))
            sends.append(TimedSend(int((time.monotonic() - begin) * 1000), result))
    return sends
