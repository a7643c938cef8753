"""The offsets of a ``rocketmq`` stream and the arithmetic on them, in plain Python (no
pyspark, no broker): what Spark keeps in its checkpoint, how far a micro-batch may go, how a
micro-batch is cut into partitions.

An offset of the stream is, per queue, the queue offset of the next message to read, keyed
topic -> broker name -> queue id as the reader's ``startingOffsets`` JSON is::

    {"Orders": {"broker-a": {"0": 1042, "1": 998}, "broker-b": {"0": 1003}}}

:func:`to_json` writes it with sorted keys (Spark compares offsets by their JSON text, and
the checkpoint's ``offsets/N`` files stay easy to read and edit); :func:`from_json` reads it
back into a map (topic, broker name, queue id) -> offset, the :data:`Positions` used here.

:func:`advance` is the end of the next micro-batch: every queue moves from its start to the
queue's max offset, at most ``max_rows`` messages over all queues together
(``maxOffsetsPerTrigger``), shared in proportion to what each queue has waiting
(:func:`allot`).  A queue missing from the start (one added to the topic, or a broker that
joined, since the last batch) enters the offsets at its min offset and is read from the next
batch on, so every range read is given by the offsets of the checkpoint alone and a replayed
batch reads the same messages.  A queue that left the route keeps its offset.

:func:`split` cuts the per-queue ranges of a batch into more partitions when ``minPartitions``
asks for more than there are queues with messages, each range in proportion to its size.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping
from typing import Any, Final, TypeAlias

from rmq.spark.options import queue_offsets

QueueKey: TypeAlias = tuple[str, str, int]
"""(topic, broker name, queue id)."""
Positions: TypeAlias = dict[QueueKey, int]
"""Queue offsets by queue: the next message to read in each."""
Span: TypeAlias = tuple[int, int]
"""A queue's (min offset, max offset) on its broker: the stored messages are [min, max)."""

NO_ROWS_LIMIT: Final = None


def to_json(positions: Mapping[QueueKey, int]) -> dict[str, dict[str, dict[str, int]]]:
    """``positions`` as the offset JSON of the module docstring, keys sorted (queue ids as
    decimal strings in numeric order)."""
    document: dict[str, dict[str, dict[str, int]]] = {}
    for topic, broker_name, queue_id in sorted(positions):
        queues = document.setdefault(topic, {}).setdefault(broker_name, {})
        queues[str(queue_id)] = positions[topic, broker_name, queue_id]
    return document


def from_json(document: Mapping[str, Any]) -> Positions:
    """The positions an offset JSON names; ValueError when it is not one (the walk is the
    reader options', :func:`rmq.spark.options.queue_offsets`)."""
    return queue_offsets(document, "stream offset", 0, "a queue offset")


def allot(waiting: Mapping[QueueKey, int], budget: int) -> dict[QueueKey, int]:
    """How many of the ``waiting`` messages of each queue to admit when at most ``budget``
    may be admitted in all: everything when that fits, else shares in proportion to what
    waits (floors, then one more each for the largest remainders, ties in queue order), which
    add up to exactly ``budget`` and never exceed what a queue has."""
    total = sum(waiting.values())
    if total <= budget:
        return dict(waiting)
    shares = {key: count * budget // total for key, count in waiting.items()}
    left = budget - sum(shares.values())
    by_remainder = sorted(waiting, key=lambda key: (-(waiting[key] * budget % total), key))
    for key in by_remainder[:left]:
        shares[key] += 1
    return shares


def lost_queues(start: Mapping[QueueKey, int], spans: Mapping[QueueKey, Span]) -> list[QueueKey]:
    """The queues whose start lies below their min offset: messages the stream has not read
    were deleted (or the queue was recreated)."""
    return sorted(key for key, offset in start.items() if key in spans and offset < spans[key][0])


def advance(
    start: Mapping[QueueKey, int],
    spans: Mapping[QueueKey, Span],
    max_rows: int | None = NO_ROWS_LIMIT,
) -> Positions:
    """The end of the micro-batch starting at ``start`` (see the module docstring).  Queues
    in :func:`lost_queues` count from their min offset (the messages below it are gone)."""
    waiting: dict[QueueKey, int] = {}
    begin: dict[QueueKey, int] = {}
    for key, offset in start.items():
        if key not in spans:
            continue
        low, high = spans[key]
        begin[key] = max(offset, low)
        waiting[key] = max(high - begin[key], 0)
    admitted = waiting if max_rows is None else allot(waiting, max_rows)
    end = dict(start)
    for key, count in admitted.items():
        end[key] = begin[key] + count
    for key, (low, _high) in spans.items():
        if key not in end:
            end[key] = low
    return end


def waiting_rows(start: Mapping[QueueKey, int], spans: Mapping[QueueKey, Span]) -> int:
    """How many messages the queues hold beyond ``start`` (queues new since then: none)."""
    return sum(
        max(spans[key][1] - max(offset, spans[key][0]), 0)
        for key, offset in start.items()
        if key in spans
    )


def ranges(
    start: Mapping[QueueKey, int], end: Mapping[QueueKey, int]
) -> list[tuple[QueueKey, int, int]]:
    """The non-empty queue ranges ``[start, end)`` of one micro-batch, in queue order; a
    queue missing from ``start`` (new in ``end``) has none."""
    return [
        (key, start[key], end[key]) for key in sorted(end) if key in start and end[key] > start[key]
    ]


def split(
    parts: Iterable[tuple[QueueKey, int, int]], min_partitions: int | None
) -> list[tuple[QueueKey, int, int]]:
    """``parts`` cut into sub-ranges when there are fewer than ``min_partitions`` of them:
    each into about ``size * min_partitions / total`` pieces of nearly equal size (at least
    one, at most one per message)."""
    listed = list(parts)
    if not min_partitions or len(listed) >= min_partitions:
        return listed
    total = sum(end - begin for _key, begin, end in listed)
    if total == 0:
        return listed
    pieces: list[tuple[QueueKey, int, int]] = []
    for key, begin, end in listed:
        size = end - begin
        count = max(1, min(size, math.ceil(size * min_partitions / total)))
        bounds = [begin + size * n // count for n in range(count + 1)]
        pieces += [(key, low, high) for low, high in itertools.pairwise(bounds) if high > low]
    return pieces
