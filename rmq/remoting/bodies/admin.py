"""Admin and broker-metadata bodies: offsets, groups, statistics and connections.

* The broker's persisted tables: :class:`ConsumerOffsetSerializeWrapper`
  (``consumerOffset.json``, ``"topic@group"`` -> queue id -> offset) and
  :class:`SubscriptionGroupWrapper` of :class:`SubscriptionGroupConfig`
  (``subscriptionGroup.json``; also the UPDATE_AND_CREATE_SUBSCRIPTIONGROUP body).
* Statistics keyed by MessageQueue (written as object keys, ``{{"brokerName":...}:...}``):
  :class:`TopicStatsTable` of :class:`TopicOffset`, :class:`ConsumeStats` of
  :class:`OffsetWrapper`, :class:`ResetOffsetBody`; and :class:`QueryConsumeTimeSpanBody` of
  :class:`QueueTimeSpan`.
* Who is connected: :class:`Connection`, :class:`ProducerConnection`,
  :class:`ConsumerConnection`, and :class:`GroupList`.
* The plain ACL's accounts: :class:`AclConfigBody` of :class:`AclAccount`, the answer to
  GET_BROKER_CLUSTER_ACL_CONFIG (54; 4.9.7's GetBrokerClusterAclConfigResponseBody).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from rmq.remoting.bodies.client import (
    ConsumeFromWhere,
    ConsumeType,
    MessageModel,
    MessageQueue,
    SubscriptionData,
)
from rmq.remoting.bodies.codec import Body, JavaSet
from rmq.remoting.bodies.route import MASTER_ID, DataVersion
from rmq.remoting.codes import LanguageCode

__all__ = [
    "AclAccount",
    "AclConfigBody",
    "Connection",
    "ConsumeStats",
    "ConsumerConnection",
    "ConsumerOffsetSerializeWrapper",
    "GroupList",
    "OffsetWrapper",
    "ProducerConnection",
    "QueryConsumeTimeSpanBody",
    "QueueTimeSpan",
    "ResetOffsetBody",
    "SubscriptionGroupConfig",
    "SubscriptionGroupWrapper",
    "TopicOffset",
    "TopicStatsTable",
]


@dataclass(slots=True, kw_only=True)
class AclAccount(Body):
    """One account of the plain ACL (Java's PlainAccessConfig): permissions as `Name=PERM`
    items.  Apache 4.9.7's broker sends the secret key too; rmq's never does."""

    access_key: str
    secret_key: str | None = None
    white_remote_address: str | None = None
    admin: bool = False
    default_topic_perm: str | None = None
    default_group_perm: str | None = None
    topic_perms: list[str] | None = None
    group_perms: list[str] | None = None


@dataclass(slots=True, kw_only=True)
class AclConfigBody(Body):
    """GET_BROKER_CLUSTER_ACL_CONFIG's answer: the global white addresses and the accounts
    of every ACL file of the broker (an access key in several files: its first)."""

    global_white_addrs: list[str] | None = None
    plain_access_configs: list[AclAccount] | None = None


@dataclass(slots=True, kw_only=True)
class ConsumerOffsetSerializeWrapper(Body):
    """Committed consumer offsets: ``"<topic>@<group>"`` -> queue id -> offset."""

    offset_table: dict[str, dict[int, int]] = field(default_factory=dict)


@dataclass(slots=True, kw_only=True)
class SubscriptionGroupConfig(Body):
    """A consumer group's settings on a broker, with Java's defaults."""

    group_name: str
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    broker_id: int = MASTER_ID
    which_broker_when_consume_slowly: int = 1
    notify_consumer_ids_changed_enable: bool = True


@dataclass(slots=True, kw_only=True)
class SubscriptionGroupWrapper(Body):
    subscription_group_table: dict[str, SubscriptionGroupConfig] = field(default_factory=dict)
    data_version: DataVersion = field(default_factory=DataVersion)


@dataclass(slots=True, kw_only=True)
class TopicOffset(Body):
    min_offset: int = 0
    max_offset: int = 0
    last_update_timestamp: int = 0


@dataclass(slots=True, kw_only=True)
class TopicStatsTable(Body):
    """GET_TOPIC_STATS_INFO answer: each queue's offset range."""

    offset_table: dict[MessageQueue, TopicOffset] = field(default_factory=dict)


@dataclass(slots=True, kw_only=True)
class OffsetWrapper(Body):
    broker_offset: int = 0
    consumer_offset: int = 0
    last_timestamp: int = 0


@dataclass(slots=True, kw_only=True)
class ConsumeStats(Body):
    """GET_CONSUME_STATS answer: a group's progress per queue and its consume TPS."""

    offset_table: dict[MessageQueue, OffsetWrapper] = field(default_factory=dict)
    consume_tps: float = 0.0


@dataclass(slots=True, kw_only=True)
class ResetOffsetBody(Body):
    """RESET_CONSUMER_CLIENT_OFFSET / INVOKE_BROKER_TO_RESET_OFFSET body: queue -> offset."""

    offset_table: dict[MessageQueue, int] = field(default_factory=dict)


def _java_date_text(millis: int) -> str:
    """``UtilAll.formatDate(new Date(millis), "yyyy-MM-dd#HH:mm:ss:SSS")`` in local time."""
    seconds, remainder = divmod(millis, 1000)
    return time.strftime("%Y-%m-%d#%H:%M:%S", time.localtime(seconds)) + f":{remainder:03d}"


@dataclass(slots=True, kw_only=True)
class QueueTimeSpan(Body):
    """One queue's stored and consumed time range.

    Java also writes each time stamp formatted (``consumeTimeStampStr`` and the like, local
    time); they are derived, so they are written but never read.
    """

    message_queue: MessageQueue | None = None
    min_time_stamp: int = 0
    max_time_stamp: int = 0
    consume_time_stamp: int = 0
    delay_time: int = 0

    def to_json(self) -> dict[str, Any]:
        json = Body.to_json(self)
        json["consumeTimeStampStr"] = _java_date_text(self.consume_time_stamp)
        json["maxTimeStampStr"] = _java_date_text(self.max_time_stamp)
        json["minTimeStampStr"] = _java_date_text(self.min_time_stamp)
        return dict(sorted(json.items()))


@dataclass(slots=True, kw_only=True)
class QueryConsumeTimeSpanBody(Body):
    consume_time_span_set: list[QueueTimeSpan] = field(default_factory=list)


@dataclass(slots=True, kw_only=True)
class GroupList(Body):
    group_list: JavaSet[str] = field(default_factory=list)


@dataclass(slots=True, kw_only=True)
class Connection(Body):
    """One client connection of a group, as the broker sees it."""

    client_id: str
    client_addr: str
    language: LanguageCode
    version: int = 0


@dataclass(slots=True, kw_only=True)
class ProducerConnection(Body):
    connection_set: JavaSet[Connection] = field(default_factory=list)


@dataclass(slots=True, kw_only=True)
class ConsumerConnection(Body):
    """GET_CONSUMER_CONNECTION_LIST answer: a group's connections and subscriptions."""

    connection_set: JavaSet[Connection] = field(default_factory=list)
    subscription_table: dict[str, SubscriptionData] = field(default_factory=dict)
    consume_type: ConsumeType | None = None
    message_model: MessageModel | None = None
    consume_from_where: ConsumeFromWhere | None = None
