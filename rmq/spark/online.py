"""Online scans: the messages brokers hold, pulled with rmq's pull consumer, one partition per
(broker name, queue id) of each topic.

The driver (:func:`plan_queues`) asks the name server for each topic's readable queues and
each queue's broker for its min and max offsets, then turns ``startingOffsets`` /
``endingOffsets`` (:class:`~rmq.spark.options.QueueOffsets`) into a half-open range of queue
offsets per queue: ``earliest`` (-2) is the queue's min offset, ``latest`` (-1) its max offset
at planning time, so a batch read is a snapshot and ends even while producers keep sending.
Explicit offsets above the max are lowered to it; below the min they name messages that are
gone, which fails the read (``failOnDataLoss``, true by default as in the Kafka source) or is
raised to the min with a warning.  Time bounds narrow each range by a binary search over
queue offsets with one-message pulls (store times never decrease along a queue).

Tasks (:func:`read_queue`) pull their range in batches of ``pullBatchSize`` (32) with a
private event loop and the RocketMQ tools group ``TOOLS_CONSUMER`` (what ``rmq consume``
uses without ``-g``; nothing is committed), and check every bound on every message.  The
rows are what consumers see: ``MessageExt``, whose properties include the MIN_OFFSET and
MAX_OFFSET the client adds at pull time.

Streams (:mod:`rmq.spark.stream`) use the same queue bounds and reads: :func:`stream_start`
(where a new stream starts in each queue), :func:`stream_spans` (every queue's min and max
offsets now, for each micro-batch's end) and :func:`commit_group_offsets` (the ``group``
option: a finished batch's offsets committed as a consumer group's).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from rmq.client.consumer import MessageExt, MessageQueue, PullConsumer, PullStatus
from rmq.common.naming import TOOLS_CONSUMER_GROUP
from rmq.spark.options import EARLIEST, LATEST, NO_LIMIT, QueueOffsets, ScanBounds
from rmq.spark.streamoffsets import Positions, QueueKey, Span

log = logging.getLogger("rmq.spark")

DEFAULT_PULL_BATCH_SIZE: Final = 32


@dataclass(frozen=True, slots=True)
class QueueRange:
    """One input partition: queue offsets ``[start, end)`` of one queue of ``topic``."""

    namesrv: str
    topic: str
    broker_name: str
    queue_id: int
    start: int
    end: int


class DataLossError(RuntimeError):
    """Messages a read asked for are no longer stored."""


def plan_queues(
    namesrv: str,
    topics: Sequence[str],
    starting: QueueOffsets,
    ending: QueueOffsets,
    bounds: ScanBounds,
    *,
    fail_on_data_loss: bool = True,
) -> list[QueueRange]:
    """The partitions of an online read (see the module docstring)."""
    return asyncio.run(
        _plan(namesrv, topics, starting, ending, bounds, fail_on_data_loss=fail_on_data_loss)
    )


async def _plan(
    namesrv: str,
    topics: Sequence[str],
    starting: QueueOffsets,
    ending: QueueOffsets,
    bounds: ScanBounds,
    *,
    fail_on_data_loss: bool,
) -> list[QueueRange]:
    ranges = []
    async with PullConsumer(TOOLS_CONSUMER_GROUP, namesrv) as consumer:
        for topic in topics:
            for mq, low, high in await _spans(consumer, topic):
                requested = _resolve(starting.of(topic, mq.broker_name, mq.queue_id), low, high)
                start = _checked_start(mq, requested, low, fail_on_data_loss=fail_on_data_loss)
                end = _resolve(ending.of(topic, mq.broker_name, mq.queue_id), low, high)
                if bounds.min_timestamp > 0:
                    start = await _first_stored_at_or_after(
                        consumer, mq, bounds.min_timestamp, start, end
                    )
                if bounds.max_timestamp < NO_LIMIT:
                    end = await _first_stored_at_or_after(
                        consumer, mq, bounds.max_timestamp, start, end
                    )
                if start < end:
                    ranges.append(
                        QueueRange(namesrv, topic, mq.broker_name, mq.queue_id, start, end)
                    )
    return ranges


async def _spans(consumer: PullConsumer, topic: str) -> list[tuple[MessageQueue, int, int]]:
    """Each readable queue of ``topic`` with its min and max offsets."""
    spans = []
    for mq in await consumer.fetch_subscribe_message_queues(topic):
        # A queue the broker has never written answers -1.
        low = max(await consumer.min_offset(mq), 0)
        spans.append((mq, low, max(await consumer.max_offset(mq), low)))
    return spans


def _checked_start(mq: MessageQueue, start: int, low: int, *, fail_on_data_loss: bool) -> int:
    """``start``, or ``low`` (with a warning) when messages from ``start`` on are gone and
    ``fail_on_data_loss`` is false; DataLossError when it is true."""
    if start >= low:
        return start
    message = f"{_where(mq)}: offsets {start}..{low - 1} are no longer stored"
    if fail_on_data_loss:
        raise DataLossError(f"{message}; set failOnDataLoss=false to skip them")
    log.warning("%s; reading from %d", message, low)
    return low


def _where(mq: MessageQueue) -> str:
    return f"queue {mq.queue_id} of {mq.topic} on {mq.broker_name}"


def _resolve(offset: int, low: int, high: int) -> int:
    if offset == EARLIEST:
        return low
    if offset == LATEST:
        return high
    return min(offset, high)


async def _first_stored_at_or_after(
    consumer: PullConsumer, mq: MessageQueue, millis: int, low: int, high: int
) -> int:
    """The first queue offset in ``[low, high)`` whose message was stored at or after
    ``millis`` (``high`` when none was), by binary search with one-message pulls.  An
    unexpected pull answer ends the search at the lower end, which reads more, never less."""
    while low < high:
        mid = (low + high) // 2
        result = await consumer.pull(mq, mid, 1)
        if result.status is not PullStatus.FOUND or not result.messages:
            return low
        message = result.messages[0]
        if message.store_timestamp >= millis:
            high = mid
        else:
            low = max(mid, message.queue_offset) + 1
    return low


def read_queue(
    part: QueueRange,
    bounds: ScanBounds,
    *,
    batch_size: int = DEFAULT_PULL_BATCH_SIZE,
    fail_on_data_loss: bool = True,
) -> Iterator[MessageExt]:
    """The messages of one partition within ``bounds``, in queue order."""
    loop = asyncio.new_event_loop()
    consumer = PullConsumer(TOOLS_CONSUMER_GROUP, part.namesrv)
    mq = MessageQueue(part.topic, part.broker_name, part.queue_id)
    try:
        loop.run_until_complete(consumer.start())
        offset = part.start
        while offset < part.end:
            wanted = min(batch_size, part.end - offset)
            result = loop.run_until_complete(consumer.pull(mq, offset, wanted))
            if result.status is PullStatus.OFFSET_ILLEGAL:
                message = (
                    f"queue {part.queue_id} of {part.topic} on {part.broker_name}: offset "
                    f"{offset} is no longer stored (the broker moved it to "
                    f"{result.next_begin_offset})"
                )
                if fail_on_data_loss:
                    raise DataLossError(f"{message}; set failOnDataLoss=false to skip")
                log.warning("%s", message)
            elif result.status is PullStatus.NO_NEW_MSG:
                return
            for msg in result.messages:
                if msg.queue_offset >= part.end:
                    return
                if bounds.admits(msg.topic, msg.store_timestamp, msg.commit_log_offset):
                    yield msg
            if result.next_begin_offset <= offset:
                return
            offset = result.next_begin_offset
    finally:
        loop.run_until_complete(consumer.shutdown())
        loop.close()


# --- streams (rmq.spark.stream): positions for Spark's checkpoint -------------------------


def stream_start(
    namesrv: str,
    topics: Sequence[str],
    starting: QueueOffsets,
    since: int | None,
    *,
    fail_on_data_loss: bool,
) -> Positions:
    """Where a new stream starts in each queue: ``starting`` resolved against the queue's
    min and max offsets, or, with ``since`` (epoch ms), the first message stored at or
    after it (the max offset when none is)."""
    return asyncio.run(_stream_start(namesrv, topics, starting, since, fail_on_data_loss))


async def _stream_start(
    namesrv: str,
    topics: Sequence[str],
    starting: QueueOffsets,
    since: int | None,
    fail_on_data_loss: bool,
) -> Positions:
    positions: Positions = {}
    async with PullConsumer(TOOLS_CONSUMER_GROUP, namesrv) as consumer:
        for topic in topics:
            for mq, low, high in await _spans(consumer, topic):
                if since is None:
                    requested = _resolve(starting.of(topic, mq.broker_name, mq.queue_id), low, high)
                    start = _checked_start(mq, requested, low, fail_on_data_loss=fail_on_data_loss)
                else:
                    start = await _first_stored_at_or_after(consumer, mq, since, low, high)
                positions[topic, mq.broker_name, mq.queue_id] = start
    return positions


def stream_spans(namesrv: str, topics: Sequence[str]) -> dict[QueueKey, Span]:
    """Every readable queue of ``topics`` now (the routes asked afresh, so new queues and
    brokers show) with its min and max offsets."""
    return asyncio.run(_stream_spans(namesrv, topics))


async def _stream_spans(namesrv: str, topics: Sequence[str]) -> dict[QueueKey, Span]:
    spans: dict[QueueKey, Span] = {}
    async with PullConsumer(TOOLS_CONSUMER_GROUP, namesrv) as consumer:
        for topic in topics:
            for mq, low, high in await _spans(consumer, topic):
                spans[topic, mq.broker_name, mq.queue_id] = (low, high)
    return spans


def commit_group_offsets(namesrv: str, group: str, positions: Mapping[QueueKey, int]) -> None:
    """Commit ``positions`` as consumer group ``group``'s offsets (UPDATE_CONSUMER_OFFSET to
    each queue's broker), so the group's lag shows what the stream has yet to read."""
    asyncio.run(_commit_group_offsets(namesrv, group, positions))


async def _commit_group_offsets(
    namesrv: str, group: str, positions: Mapping[QueueKey, int]
) -> None:
    async with PullConsumer(group, namesrv) as consumer:
        for (topic, broker_name, queue_id), offset in sorted(positions.items()):
            await consumer.update_consume_offset(MessageQueue(topic, broker_name, queue_id), offset)
