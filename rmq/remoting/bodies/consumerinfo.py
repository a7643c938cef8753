"""The bodies of what a broker asks a consumer client for, on an admin tool's behalf: its
offsets (GET_CONSUMER_STATUS_FROM_CLIENT, INVOKE_BROKER_TO_GET_CONSUMER_STATUS), its running
state (GET_CONSUMER_RUNNING_INFO) and the result of consuming one message directly
(CONSUME_MESSAGE_DIRECTLY).  The offset table of RESET_CONSUMER_CLIENT_OFFSET is
:class:`~rmq.remoting.bodies.admin.ResetOffsetBody` (:class:`ResetOffsetBodyForC` for a C++
client); Java keeps those queue tables in HashMaps,
whose order :func:`in_hash_map_order` gives.

Java keeps a running info's ``subscriptionSet``, ``mqTable`` and ``statusTable`` in sorted
collections (TreeSet, TreeMap): :meth:`ConsumerRunningInfo.sorted` puts a built one in that
order (subscriptions by ``topic@expression``, queues by topic, broker name and queue id,
topics by name), which is the order fastjson writes.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from rmq.common.javahash import java_hash, java_hash_order_by
from rmq.remoting.bodies.client import MessageQueue, SubscriptionData
from rmq.remoting.bodies.codec import Body, JavaSet, java_key

__all__ = [
    "PROP_CLIENT_VERSION",
    "PROP_CONSUMER_START_TIMESTAMP",
    "PROP_CONSUME_ORDERLY",
    "PROP_CONSUME_TYPE",
    "PROP_NAMESERVER_ADDR",
    "PROP_THREADPOOL_CORE_SIZE",
    "CMResult",
    "ConsumeMessageDirectlyResult",
    "ConsumeStatusInfo",
    "ConsumerRunningInfo",
    "GetConsumerStatusBody",
    "MessageQueueForC",
    "ProcessQueueInfo",
    "ResetOffsetBodyForC",
    "in_hash_map_order",
]

V = TypeVar("V")

# The property keys of ConsumerRunningInfo that Apache's tools read.
PROP_NAMESERVER_ADDR = "PROP_NAMESERVER_ADDR"
PROP_THREADPOOL_CORE_SIZE = "PROP_THREADPOOL_CORE_SIZE"
PROP_CONSUME_ORDERLY = "PROP_CONSUMEORDERLY"
PROP_CONSUME_TYPE = "PROP_CONSUME_TYPE"
PROP_CLIENT_VERSION = "PROP_CLIENT_VERSION"
PROP_CONSUMER_START_TIMESTAMP = "PROP_CONSUMER_START_TIMESTAMP"


def _queue_hash_code(mq: MessageQueue) -> int:
    """``MessageQueue.hashCode()``: broker name, queue id and topic, 31-fold."""
    result = 31 + java_hash(mq.broker_name)
    result = 31 * result + mq.queue_id
    return 31 * result + java_hash(mq.topic)


def in_hash_map_order(table: Mapping[MessageQueue, V]) -> dict[MessageQueue, V]:
    """``table`` in the order a Java ``HashMap`` of queues filled in this order iterates (and
    fastjson writes) it: how Apache's broker and client order a ResetOffsetBody or a
    GetConsumerStatusBody table."""
    return {mq: table[mq] for mq in java_hash_order_by(table, _queue_hash_code)}


@dataclass(slots=True, kw_only=True)
class MessageQueueForC(Body):
    """A queue and its offset, as the C++ client takes a reset offset table."""

    topic: str
    broker_name: str
    queue_id: int
    offset: int


@dataclass(slots=True, kw_only=True)
class ResetOffsetBodyForC(Body):
    """RESET_CONSUMER_CLIENT_OFFSET body for a C++ client: the offset table as a list."""

    offset_table: list[MessageQueueForC] = field(default_factory=list)


@dataclass(slots=True, kw_only=True)
class GetConsumerStatusBody(Body):
    """A client answers with ``message_queue_table`` (its offsets of one topic); the broker
    answers the tool with ``consumer_table`` (client id -> that client's table)."""

    message_queue_table: dict[MessageQueue, int] = field(default_factory=dict)
    consumer_table: dict[str, dict[MessageQueue, int]] = field(default_factory=dict)


@dataclass(slots=True, kw_only=True)
class ProcessQueueInfo(Body):
    """One owned queue of a push consumer (Java's ProcessQueueInfo; ``droped`` is Java's
    spelling)."""

    commit_offset: int = 0
    cached_msg_min_offset: int = 0
    cached_msg_max_offset: int = 0
    cached_msg_count: int = 0
    cached_msg_size_in_mib: int = field(default=0, metadata=java_key("cachedMsgSizeInMiB"))
    transaction_msg_min_offset: int = 0
    transaction_msg_max_offset: int = 0
    transaction_msg_count: int = 0
    locked: bool = False
    try_unlock_times: int = 0
    last_lock_timestamp: int = 0
    droped: bool = False
    last_pull_timestamp: int = 0
    last_consume_timestamp: int = 0


@dataclass(slots=True, kw_only=True)
class ConsumeStatusInfo(Body):
    """Java's ConsumeStatus: a group's pull and consume rates for one topic (RT in ms, TPS per
    second; ``consume_failed_msgs`` over the last hour)."""

    pull_rt: float = field(default=0.0, metadata=java_key("pullRT"))
    pull_tps: float = field(default=0.0, metadata=java_key("pullTPS"))
    consume_rt: float = field(default=0.0, metadata=java_key("consumeRT"))
    consume_ok_tps: float = field(default=0.0, metadata=java_key("consumeOKTPS"))
    consume_failed_tps: float = field(default=0.0, metadata=java_key("consumeFailedTPS"))
    consume_failed_msgs: int = 0


@dataclass(slots=True, kw_only=True)
class ConsumerRunningInfo(Body):
    """GET_CONSUMER_RUNNING_INFO answer: a consumer's settings (``properties``, Apache's
    ``PROP_*`` keys among them), subscriptions, owned queues and rates per topic."""

    properties: dict[str, str] = field(default_factory=dict)
    subscription_set: JavaSet[SubscriptionData] = field(default_factory=list)
    mq_table: dict[MessageQueue, ProcessQueueInfo] = field(default_factory=dict)
    status_table: dict[str, ConsumeStatusInfo] = field(default_factory=dict)
    jstack: str | None = None

    def sorted(self) -> ConsumerRunningInfo:
        """This info with its sets and maps in Java's TreeSet/TreeMap order."""
        return ConsumerRunningInfo(
            properties=self.properties,
            subscription_set=sorted(
                self.subscription_set, key=lambda sub: f"{sub.topic}@{sub.sub_string}"
            ),
            mq_table=dict(sorted(self.mq_table.items())),
            status_table=dict(sorted(self.status_table.items())),
            jstack=self.jstack,
        )


class CMResult(enum.Enum):
    """How a directly consumed message came out."""

    CR_SUCCESS = 0
    CR_LATER = 1
    CR_ROLLBACK = 2
    CR_COMMIT = 3
    CR_THROW_EXCEPTION = 4
    CR_RETURN_NULL = 5


@dataclass(slots=True, kw_only=True)
class ConsumeMessageDirectlyResult(Body):
    """CONSUME_MESSAGE_DIRECTLY answer: the listener's verdict on one message."""

    order: bool = False
    auto_commit: bool = True
    consume_result: CMResult | None = None
    remark: str | None = None
    spent_time_mills: int = 0
