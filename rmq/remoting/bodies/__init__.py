"""RocketMQ protocol bodies: every JSON body shape, declared once, for every rmq process.

The name server, the broker, rmq's client and its admin API all read and write the same
bodies; each is declared here once as a slotted dataclass with snake_case attributes, and one
codec (:mod:`rmq.remoting.bodies.codec`) turns any of them into the exact JSON fastjson writes
for the Java bean and reads it back as leniently as fastjson does.  Every body has:

* ``to_json() -> dict``: fastjson's key set and key order (alphabetical, nulls left out,
  enums by name, integer and MessageQueue map keys kept as keys for the writer);
* ``from_json(obj)`` (classmethod): tolerant of enum ordinals, numbers given as strings and
  missing keys (Java defaults);
* ``encode(*, standard=False, pretty=False) -> bytes`` and ``decode(data)`` through
  :mod:`rmq.common.fastjson`.  ``standard`` is the name server's standard-JSON route variant,
  ``pretty`` the format of the broker's ``config/*.json`` files.

A body that cannot be decoded raises :class:`BodyError`.  The modules: :mod:`.route` (name
server and broker registration), :mod:`.client` (heartbeats, subscriptions, queues, locks),
:mod:`.admin` (offsets, groups, statistics, connections), :mod:`.brokerquery` (the broker's
consumer and producer queries), :mod:`.consumerinfo` (what a broker asks a consumer client
for: its offsets, running info, a direct consumption).

Each name is imported on first use (PEP 562 ``__getattr__``): a program that needs the route
bodies does not make the admin ones, each a dataclass built as its module is imported.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rmq.remoting.bodies.admin import (
        AclAccount,
        AclConfigBody,
        Connection,
        ConsumerConnection,
        ConsumerOffsetSerializeWrapper,
        ConsumeStats,
        GroupList,
        OffsetWrapper,
        ProducerConnection,
        QueryConsumeTimeSpanBody,
        QueueTimeSpan,
        ResetOffsetBody,
        SubscriptionGroupConfig,
        SubscriptionGroupWrapper,
        TopicOffset,
        TopicStatsTable,
    )
    from rmq.remoting.bodies.brokerquery import (
        ConsumeQueueData,
        ConsumeStatsList,
        ProducerInfo,
        ProducerTableInfo,
        QueryConsumeQueueResponseBody,
        QueryCorrectionOffsetBody,
    )
    from rmq.remoting.bodies.client import (
        EXPRESSION_TYPE_SQL92,
        EXPRESSION_TYPE_TAG,
        SUB_ALL,
        CheckClientRequestBody,
        ConsumeFromWhere,
        ConsumerData,
        ConsumeType,
        GetConsumerListByGroupResponseBody,
        HeartbeatData,
        LockBatchRequestBody,
        LockBatchResponseBody,
        MessageModel,
        MessageQueue,
        ProducerData,
        SubscriptionData,
        UnlockBatchRequestBody,
    )
    from rmq.remoting.bodies.codec import Body, BodyError, JavaSet
    from rmq.remoting.bodies.consumerinfo import (
        CMResult,
        ConsumeMessageDirectlyResult,
        ConsumerRunningInfo,
        ConsumeStatusInfo,
        GetConsumerStatusBody,
        MessageQueueForC,
        ProcessQueueInfo,
        ResetOffsetBodyForC,
    )
    from rmq.remoting.bodies.route import (
        MASTER_ID,
        BrokerData,
        ClusterInfo,
        DataVersion,
        KVTable,
        OpenedRegisterBody,
        QueueData,
        RegisterBrokerBody,
        TopicConfig,
        TopicConfigSerializeWrapper,
        TopicFilterType,
        TopicList,
        TopicRouteData,
        body_crc32,
    )

__all__ = [
    "EXPRESSION_TYPE_SQL92",
    "EXPRESSION_TYPE_TAG",
    "MASTER_ID",
    "SUB_ALL",
    "AclAccount",
    "AclConfigBody",
    "Body",
    "BodyError",
    "BrokerData",
    "CMResult",
    "CheckClientRequestBody",
    "ClusterInfo",
    "Connection",
    "ConsumeFromWhere",
    "ConsumeMessageDirectlyResult",
    "ConsumeQueueData",
    "ConsumeStats",
    "ConsumeStatsList",
    "ConsumeStatusInfo",
    "ConsumeType",
    "ConsumerConnection",
    "ConsumerData",
    "ConsumerOffsetSerializeWrapper",
    "ConsumerRunningInfo",
    "DataVersion",
    "GetConsumerListByGroupResponseBody",
    "GetConsumerStatusBody",
    "GroupList",
    "HeartbeatData",
    "JavaSet",
    "KVTable",
    "LockBatchRequestBody",
    "LockBatchResponseBody",
    "MessageModel",
    "MessageQueue",
    "MessageQueueForC",
    "OffsetWrapper",
    "OpenedRegisterBody",
    "ProcessQueueInfo",
    "ProducerConnection",
    "ProducerData",
    "ProducerInfo",
    "ProducerTableInfo",
    "QueryConsumeQueueResponseBody",
    "QueryConsumeTimeSpanBody",
    "QueryCorrectionOffsetBody",
    "QueueData",
    "QueueTimeSpan",
    "RegisterBrokerBody",
    "ResetOffsetBody",
    "ResetOffsetBodyForC",
    "SubscriptionData",
    "SubscriptionGroupConfig",
    "SubscriptionGroupWrapper",
    "TopicConfig",
    "TopicConfigSerializeWrapper",
    "TopicFilterType",
    "TopicList",
    "TopicOffset",
    "TopicRouteData",
    "TopicStatsTable",
    "UnlockBatchRequestBody",
    "body_crc32",
]

_SUBMODULES = ("codec", "route", "client", "consumerinfo", "brokerquery", "admin")
"""Where `__getattr__` looks for a name, cheapest to import first."""


def __getattr__(name: str) -> Any:
    if name in __all__:
        for submodule in _SUBMODULES:
            module = importlib.import_module(f"{__name__}.{submodule}")
            if name in vars(module):
                value = vars(module)[name]
                globals()[name] = value
                return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
