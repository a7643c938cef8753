"""Bodies of the broker's consumer and producer queries (the admin tools' view of a broker).

* :class:`ConsumeStatsList` (GET_BROKER_CONSUME_STATS): for every subscription group a
  one-entry map ``group -> [ConsumeStats per topic]``, the broker's address and the summed
  lag.
* :class:`ProducerTableInfo` of :class:`ProducerInfo` (GET_ALL_PRODUCER_INFO): every
  producer group's clients.
* :class:`QueryCorrectionOffsetBody` (QUERY_CORRECTION_OFFSET): queue id -> offset.
* :class:`QueryConsumeQueueResponseBody` of :class:`ConsumeQueueData` (QUERY_CONSUME_QUEUE):
  raw consume queue entries with the group's subscription and filter data.

Like every body they are written as fastjson writes the Java bean (see
:mod:`rmq.remoting.bodies.codec`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rmq.remoting.bodies.admin import ConsumeStats
from rmq.remoting.bodies.client import SubscriptionData
from rmq.remoting.bodies.codec import Body, java_key
from rmq.remoting.codes import LanguageCode

__all__ = [
    "ConsumeQueueData",
    "ConsumeStatsList",
    "ProducerInfo",
    "ProducerTableInfo",
    "QueryConsumeQueueResponseBody",
    "QueryCorrectionOffsetBody",
]


@dataclass(slots=True, kw_only=True)
class ConsumeStatsList(Body):
    """GET_BROKER_CONSUME_STATS answer: one ``{group: [ConsumeStats, ...]}`` map per group."""

    consume_stats_list: list[dict[str, list[ConsumeStats]]] = field(default_factory=list)
    broker_addr: str | None = None
    total_diff: int = 0


@dataclass(slots=True, kw_only=True)
class ProducerInfo(Body):
    """One producer client; ``remote_ip`` is Java's ``SocketAddress.toString()``
    (``/127.0.0.1:54321``)."""

    client_id: str
    remote_ip: str = field(metadata=java_key("remoteIP"))
    language: LanguageCode
    version: int = 0
    last_update_timestamp: int = 0


@dataclass(slots=True, kw_only=True)
class ProducerTableInfo(Body):
    """GET_ALL_PRODUCER_INFO answer: producer group -> its clients."""

    data: dict[str, list[ProducerInfo]] = field(default_factory=dict)


@dataclass(slots=True, kw_only=True)
class QueryCorrectionOffsetBody(Body):
    """QUERY_CORRECTION_OFFSET answer: queue id -> correction offset."""

    correction_offsets: dict[int, int] = field(default_factory=dict)


@dataclass(slots=True, kw_only=True)
class ConsumeQueueData(Body):
    """One consume queue entry.  The extension fields (``extend_data_json``, ``bit_map``,
    ``eval``, ``msg``) are set only for entries whose tags code points into a consume queue
    extension file."""

    physic_offset: int = 0
    physic_size: int = 0
    tags_code: int = 0
    extend_data_json: str | None = None
    bit_map: str | None = None
    eval: bool = False
    msg: str | None = None


@dataclass(slots=True, kw_only=True)
class QueryConsumeQueueResponseBody(Body):
    """QUERY_CONSUME_QUEUE answer: the entries asked for, the queue's index range and, when a
    group was named, its subscription and filter data (or why there is none)."""

    subscription_data: SubscriptionData | None = None
    filter_data: str | None = None
    queue_data: list[ConsumeQueueData] | None = None
    max_queue_index: int = 0
    min_queue_index: int = 0
