"""Client bodies: heartbeats, subscriptions, message queues and queue locks.

* :class:`HeartbeatData` (HEART_BEAT) with :class:`ProducerData`, :class:`ConsumerData` and
  :class:`SubscriptionData`; the consumer enums :class:`ConsumeType`, :class:`MessageModel`
  and :class:`ConsumeFromWhere` are read from names (Java) or ordinals (C++), written as names.
* :class:`MessageQueue`: a frozen value, ordered as Java's ``compareTo`` (topic, broker name,
  queue id), usable directly as a fastjson object key (``__fastjson_key__``).
* LOCK_BATCH_MQ / UNLOCK_BATCH_MQ bodies, GET_CONSUMER_LIST_BY_GROUP's answer and
  CHECK_CLIENT_CONFIG's request.

:meth:`SubscriptionData.from_expression` is the client's subscription builder: a TAG
expression ``null``, empty or ``*`` subscribes to everything; otherwise it is split on
``||``, each tag trimmed as Java's ``String.trim`` does and empty ones dropped, and the tags
code set holds each tag's Java ``String.hashCode`` (what the consume queue stores).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from rmq.common.javahash import java_hash
from rmq.common.timeutil import now_millis
from rmq.remoting.bodies.codec import Body, JavaSet, java_key

__all__ = [
    "EXPRESSION_TYPE_SQL92",
    "EXPRESSION_TYPE_TAG",
    "SUB_ALL",
    "CheckClientRequestBody",
    "ConsumeFromWhere",
    "ConsumeType",
    "ConsumerData",
    "GetConsumerListByGroupResponseBody",
    "HeartbeatData",
    "LockBatchRequestBody",
    "LockBatchResponseBody",
    "MessageModel",
    "MessageQueue",
    "ProducerData",
    "SubscriptionData",
    "UnlockBatchRequestBody",
]

SUB_ALL = "*"
EXPRESSION_TYPE_TAG = "TAG"
EXPRESSION_TYPE_SQL92 = "SQL92"

# Java's String.trim() removes every character up to and including the space.
_JAVA_TRIMMED = "".join(map(chr, range(0x21)))


class ConsumeType(enum.Enum):
    CONSUME_ACTIVELY = 0  # pull
    CONSUME_PASSIVELY = 1  # push


class MessageModel(enum.Enum):
    BROADCASTING = 0
    CLUSTERING = 1


class ConsumeFromWhere(enum.Enum):
    CONSUME_FROM_LAST_OFFSET = 0
    CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST = 1
    CONSUME_FROM_MIN_OFFSET = 2
    CONSUME_FROM_MAX_OFFSET = 3
    CONSUME_FROM_FIRST_OFFSET = 4
    CONSUME_FROM_TIMESTAMP = 5


@dataclass(frozen=True, slots=True, order=True)
class MessageQueue(Body):
    """One queue of a topic on one broker name."""

    topic: str
    broker_name: str
    queue_id: int

    def __fastjson_key__(self) -> dict[str, object]:
        return self.to_json()

    def java_text(self) -> str:
        """Java's ``MessageQueue.toString()``: how Apache's logs and tools print a queue, and
        the key the consistent-hash allocation hashes."""
        return (
            f"MessageQueue [topic={self.topic}, brokerName={self.broker_name}, "
            f"queueId={self.queue_id}]"
        )


@dataclass(slots=True, kw_only=True)
class ProducerData(Body):
    group_name: str


@dataclass(slots=True, kw_only=True)
class SubscriptionData(Body):
    """One topic subscription of a consumer group; ``sub_version`` is its creation time."""

    topic: str
    sub_string: str
    class_filter_mode: bool = False
    tags_set: JavaSet[str] = field(default_factory=list)
    code_set: JavaSet[int] = field(default_factory=list)
    sub_version: int = field(default_factory=now_millis)
    expression_type: str = EXPRESSION_TYPE_TAG

    @classmethod
    def from_expression(
        cls, topic: str, expression: str | None, expression_type: str | None = EXPRESSION_TYPE_TAG
    ) -> SubscriptionData:
        """Build a subscription as the client does (see the module docstring).

        A non-TAG expression (SQL92) is kept whole and must not be empty (ValueError).
        """
        if expression_type is not None and expression_type != EXPRESSION_TYPE_TAG:
            if not expression:
                raise ValueError(f"Expression can't be null! {expression_type}")
            return cls(topic=topic, sub_string=expression, expression_type=expression_type)
        if not expression or expression == SUB_ALL:
            return cls(topic=topic, sub_string=SUB_ALL)
        tags = [tag.strip(_JAVA_TRIMMED) for tag in expression.split("||")]
        unique_tags = list(dict.fromkeys(tag for tag in tags if tag))
        codes = list(dict.fromkeys(java_hash(tag) for tag in unique_tags))
        return cls(topic=topic, sub_string=expression, tags_set=unique_tags, code_set=codes)


@dataclass(slots=True, kw_only=True)
class ConsumerData(Body):
    group_name: str
    consume_type: ConsumeType
    message_model: MessageModel
    consume_from_where: ConsumeFromWhere
    subscription_data_set: JavaSet[SubscriptionData] = field(default_factory=list)
    unit_mode: bool = False


@dataclass(slots=True, kw_only=True)
class HeartbeatData(Body):
    """HEART_BEAT body: one client instance's producer and consumer groups."""

    client_id: str = field(metadata=java_key("clientID"))
    producer_data_set: JavaSet[ProducerData] = field(default_factory=list)
    consumer_data_set: JavaSet[ConsumerData] = field(default_factory=list)


@dataclass(slots=True, kw_only=True)
class LockBatchRequestBody(Body):
    """LOCK_BATCH_MQ body: the queues a client of a group wants to consume orderly."""

    consumer_group: str
    client_id: str
    mq_set: JavaSet[MessageQueue] = field(default_factory=list)


@dataclass(slots=True, kw_only=True)
class UnlockBatchRequestBody(LockBatchRequestBody):
    """UNLOCK_BATCH_MQ body: the same properties as a lock request."""


@dataclass(slots=True, kw_only=True)
class LockBatchResponseBody(Body):
    """LOCK_BATCH_MQ answer: the queues now locked by the requesting client."""

    lock_ok_mq_set: JavaSet[MessageQueue] = field(
        default_factory=list, metadata=java_key("lockOKMQSet")
    )


@dataclass(slots=True, kw_only=True)
class GetConsumerListByGroupResponseBody(Body):
    consumer_id_list: list[str] = field(default_factory=list)


@dataclass(slots=True, kw_only=True)
class CheckClientRequestBody(Body):
    """CHECK_CLIENT_CONFIG body: a subscription to validate on the broker."""

    client_id: str
    group: str
    subscription_data: SubscriptionData | None = None
