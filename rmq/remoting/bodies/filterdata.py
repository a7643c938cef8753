"""The broker's SQL92 consumer filters as Apache persists them (``consumerFilter.json``).

``ConsumerFilterManager`` in Apache keeps, per topic, the filter of each consumer group that
subscribes to it with a non-TAG expression, and writes them as fastjson text::

    {"filterDataByTopic": {"<topic>": {"groupFilterData": {"<group>": {
        "bloomFilterData": {"bitNum": 112, "bitPos": [75, 70, 65]},
        "bornTime": ..., "clientVersion": ..., "consumerGroup": "<group>", "dead": false,
        "deadTime": 0, "expression": "a > 14", "expressionType": "SQL92",
        "topic": "<topic>"}}, "topic": "<topic>"}}}

``dead`` is Java's ``isDead()`` getter (``deadTime >= bornTime``), written but never read
back; ``clientVersion`` is the subscription's version (its creation time on the client).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rmq.remoting.bodies.codec import Body, JavaSet

__all__ = [
    "BloomFilterData",
    "ConsumerFilterData",
    "ConsumerFilterWrapper",
    "FilterDataMapByTopic",
]


@dataclass(slots=True, kw_only=True)
class BloomFilterData(Body):
    """The bit positions of ``"<group>#<topic>"`` in the broker's bloom filter of
    ``bit_num`` bits."""

    bit_pos: JavaSet[int] = field(default_factory=list)
    """A Java ``int[]``, which fastjson writes inline even in pretty format, as a set."""
    bit_num: int = 0


@dataclass(slots=True, kw_only=True)
class ConsumerFilterData(Body):
    """One group's filter on one topic."""

    consumer_group: str
    topic: str
    expression: str | None = None
    expression_type: str | None = None
    born_time: int = 0
    dead_time: int = 0
    bloom_filter_data: BloomFilterData | None = None
    client_version: int = 0
    dead: bool = False


@dataclass(slots=True, kw_only=True)
class FilterDataMapByTopic(Body):
    """The filters of one topic, by consumer group."""

    topic: str | None = None
    group_filter_data: dict[str, ConsumerFilterData] = field(default_factory=dict)


@dataclass(slots=True, kw_only=True)
class ConsumerFilterWrapper(Body):
    """``consumerFilter.json``: the filters by topic."""

    filter_data_by_topic: dict[str, FilterDataMapByTopic] = field(default_factory=dict)
