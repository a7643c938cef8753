"""How `rmq consume` reads: where each queue starts, the pull loops over the queues, and the
group's push consumer.

`--from` is a `StartPosition` (`parse_start`); `start_offsets` resolves it per queue, unless
the group has a committed offset above 0.  Without a group, or with `-e`, `read_queues` pulls
every queue itself, one task per queue, printing in offset order and committing what was
printed every `COMMIT_INTERVAL` seconds and at the end; with a group and without `-e`,
`consume_group` runs the group's push consumer, whose shutdown commits what was printed.
Stopping (count reached, broken pipe, a signal) cancels the pulls under way after
`STOP_GRACE`; `quiet_late_responses` hides the remoting warnings about their late answers.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    import asyncio

    from rmq.cli.consume import ConsumeOptions, Printer
    from rmq.client.consumer import MessageExt, MessageQueue, OffsetStore, PullConsumer
    from rmq.client.instance import ClientInstance

PULL_BATCH = 32
PULL_RETRY_DELAY = 1.0
COMMIT_INTERVAL = 5.0
TIMESTAMP_WINDOW = 32
STOP_GRACE = 0.5


class StartKind(enum.Enum):
    FIRST = "first"
    LAST = "last"
    TIMESTAMP = "timestamp"
    OFFSET = "offset"
    FROM_END = "from-end"


@dataclass(frozen=True)
class StartPosition:
    """Where a queue without a committed offset starts: `value` is the time (ms), the queue
    offset or the count from the end."""

    kind: StartKind
    value: int = 0


def parse_start(text: str) -> StartPosition:
    """`--from`: first, last, a queue offset N, -N, or a time: @<ms>, @<ISO time> (the @ may
    be left out) or @-<duration> (`rmq.common.timeutil.parse_time`)."""
    from rmq.common.timeutil import parse_time

    word = text.strip()
    if word.lower() in ("first", "last"):
        return StartPosition(StartKind(word.lower()))
    if word.isdigit():
        return StartPosition(StartKind.OFFSET, int(word))
    if word.startswith("-") and word[1:].isdigit():
        return StartPosition(StartKind.FROM_END, int(word[1:]))
    if not word.startswith("-"):  # a relative time needs its @: -N is a count of messages
        try:
            return StartPosition(StartKind.TIMESTAMP, parse_time(word))
        except ValueError:
            pass
    raise click.BadParameter(
        f"{text!r} is not first, last, N, -N, @<epoch ms>, @<ISO time> or @-<duration> "
        "(@-1h: an hour ago; units ms s m h d w)",
        param_hint="'--from'",
    )


async def commit(store: OffsetStore, offsets: dict[MessageQueue, int], *, oneway: bool) -> None:
    """Set and write out the group's offsets of these queues."""
    for mq, offset in offsets.items():
        store.update_offset(mq, offset, increase_only=False)
    await store.persist_all(list(offsets), oneway=oneway)


# --- start offsets ---------------------------------------------------------------------------


async def start_offsets(
    reader: PullConsumer,
    queues: Sequence[MessageQueue],
    start: StartPosition,
    store: OffsetStore | None,
    reset: bool,
) -> dict[MessageQueue, int]:
    """Where each queue starts: the group's committed offset when it has one above 0 (and
    `reset` is off), else the `start` position."""
    from rmq.cli.errors import RmqError
    from rmq.client.consumer import ReadOffsetType
    from rmq.client.consumer.offsetstore import READ_FAILED

    starts = {}
    for mq in queues:
        committed = -1
        if store is not None and not reset:
            committed = await store.read_offset(mq, ReadOffsetType.READ_FROM_STORE)
            if committed == READ_FAILED:
                raise RmqError(
                    f"cannot read the offset of group {store.group!r} for queue {mq.queue_id} "
                    f"of {mq.broker_name}",
                    "check that the broker is running",
                )
        starts[mq] = committed if committed > 0 else await resolve_start(reader, mq, start)
    return starts


async def resolve_start(reader: PullConsumer, mq: MessageQueue, start: StartPosition) -> int:
    """The queue offset `start` means in queue `mq`."""
    kind = start.kind
    if kind is StartKind.TIMESTAMP:
        return await first_stored_at_or_after(reader, mq, start.value)
    # A queue the broker has never written answers -1: it starts at 0.
    low = max(await reader.min_offset(mq), 0)
    if kind is StartKind.FIRST:
        return low
    high = max(await reader.max_offset(mq), low)
    if kind is StartKind.LAST:
        return high
    if kind is StartKind.FROM_END:
        return max(high - start.value, low)
    return min(max(start.value, low), high)


async def first_stored_at_or_after(reader: PullConsumer, mq: MessageQueue, millis: int) -> int:
    """The offset of the first message of `mq` stored at or after `millis` (the queue's max
    offset when there is none).  The broker answers the message stored *nearest* to a time,
    which may be earlier; a look at the messages up to its answer settles it (store times
    never decrease along a queue)."""
    from rmq.client.consumer import PullStatus

    nearest = await reader.search_offset(mq, millis)
    low = max(await reader.min_offset(mq), 0)
    window_start = max(low, nearest - TIMESTAMP_WINDOW + 1)
    result = await reader.pull(mq, window_start, TIMESTAMP_WINDOW)
    if result.status is not PullStatus.FOUND:
        return nearest
    for msg in result.messages:
        if msg.store_timestamp >= millis:
            return msg.queue_offset
    return result.next_begin_offset


# --- reading queues --------------------------------------------------------------------------


async def read_queues(
    reader: PullConsumer,
    starts: dict[MessageQueue, int],
    ends: dict[MessageQueue, int] | None,
    expression: str,
    printer: Printer,
    store: OffsetStore | None,
    interrupted: asyncio.Future[Any],
    *,
    expression_type: str = "TAG",
    advanced: Callable[[int], None] | None = None,
) -> None:
    """Read every queue from its start (to its end, when `ends` are given) until the
    printer stops or a signal arrives; commit what was printed to `store`.  `expression` is
    a tag expression, or SQL92 when `expression_type` says so; `advanced` is told how many
    queue offsets each pull moved past."""
    import asyncio

    loop = asyncio.get_running_loop()
    positions = dict(starts)
    readers = [
        loop.create_task(
            _read_queue(
                reader,
                mq,
                ends[mq] if ends else None,
                (expression, expression_type),
                printer,
                positions,
                advanced,
            )
        )
        for mq in starts
    ]
    everything = asyncio.gather(*readers)
    stopped = loop.create_task(printer.stopped.wait())
    helpers: list[asyncio.Future[Any]] = [stopped]
    if store is not None:
        helpers.append(loop.create_task(_commit_every(store, positions)))
    try:
        endings: set[asyncio.Future[Any]] = {everything, stopped, interrupted}
        await asyncio.wait(endings, return_when=asyncio.FIRST_COMPLETED)
        # Pulls under way end with nothing printed; a long poll still waiting after the
        # grace period is cancelled.  Quiet first: a reader's error (a refused pull) ends
        # the others too, and their answers may still come.
        printer.stop()
        quiet_late_responses()
        if everything.done():
            everything.result()
        await asyncio.wait(readers, timeout=STOP_GRACE)
    finally:
        for task in (*readers, *helpers):
            task.cancel()
        await asyncio.gather(everything, *helpers, return_exceptions=True)
    if store is not None:
        await commit(store, positions, oneway=False)


async def _read_queue(
    reader: PullConsumer,
    mq: MessageQueue,
    end: int | None,
    subscription: tuple[str, str],
    printer: Printer,
    positions: dict[MessageQueue, int],
    advanced: Callable[[int], None] | None,
) -> None:
    """Pull `mq` from `positions[mq]` on, printing in offset order; `positions[mq]` is
    always the offset after the last message printed or skipped."""
    import asyncio
    import logging

    from rmq.cli.refusals import refusal
    from rmq.client.consumer import PullStatus
    from rmq.client.errors import ClientError
    from rmq.remoting.errors import RemotingError

    log = logging.getLogger("rmq.consume")
    offset = positions[mq]
    expression, expression_type = subscription
    while (end is None or offset < end) and not printer.stopped.is_set():
        try:
            result = await reader.pull(
                mq,
                offset,
                PULL_BATCH,
                expression,
                expression_type=expression_type,
                block=end is None,
            )
        except (ClientError, RemotingError) as exc:
            refused = refusal(exc, topic_perm="SUB")
            if refused is not None:
                raise refused from exc  # every pull would be refused alike
            log.warning("pulling queue %d of %s failed: %s", mq.queue_id, mq.broker_name, exc)
            await asyncio.sleep(PULL_RETRY_DELAY)
            continue
        status = result.status
        if status is PullStatus.OFFSET_ILLEGAL:
            log.warning(
                "offset %d of queue %d of %s is gone, going on at %d",
                offset,
                mq.queue_id,
                mq.broker_name,
                result.next_begin_offset,
            )
        elif status is PullStatus.NO_NEW_MSG and end is not None:
            return
        messages = result.messages
        next_offset = result.next_begin_offset
        if end is not None and next_offset > end:
            messages = [msg for msg in messages if msg.queue_offset < end]
            next_offset = end
        printed = printer.write(messages)
        if printed < len(messages):
            positions[mq] = messages[printed].queue_offset
            return
        if advanced is not None:
            advanced(next_offset - offset)
        offset = positions[mq] = next_offset


async def _commit_every(store: OffsetStore, positions: dict[MessageQueue, int]) -> None:
    import asyncio

    while True:
        await asyncio.sleep(COMMIT_INTERVAL)
        await commit(store, positions, oneway=True)


# --- the group's push consumer ---------------------------------------------------------------


async def consume_group(
    instance: ClientInstance,
    options: ConsumeOptions,
    printer: Printer,
    interrupted: asyncio.Future[Any],
) -> None:
    """Consume as a push consumer of the group until the printer stops or a signal
    arrives; its shutdown commits what was printed."""
    import asyncio

    from rmq.client.consumer import (
        ConsumeFromWhere,
        ConsumeStatus,
        MessageModel,
        PushConsumer,
        strategy_by_name,
    )

    assert options.group is not None
    where = {
        StartKind.FIRST: ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        StartKind.TIMESTAMP: ConsumeFromWhere.CONSUME_FROM_TIMESTAMP,
    }.get(options.start.kind, ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET)
    consumer = PushConsumer(
        options.group,
        instance=instance,
        message_model=MessageModel.BROADCASTING if options.broadcast else MessageModel.CLUSTERING,
        consume_from_where=where,
        consume_timestamp=options.start.value
        if where is ConsumeFromWhere.CONSUME_FROM_TIMESTAMP
        else None,
        consume_concurrency=1,
        consume_message_batch_max_size=1,
        allocate_strategy=strategy_by_name(options.allocate),
    )
    consumer.subscribe(options.topic, options.expression, options.expression_type)

    async def listener(messages: list[MessageExt]) -> ConsumeStatus:
        if printer.write(messages) < len(messages):
            # Not printed, so never acknowledged: the call waits until the shutdown
            # cancels it, and the message stays for the group's next consumer.
            await asyncio.get_running_loop().create_future()
        return ConsumeStatus.CONSUME_SUCCESS

    consumer.register_listener(listener, orderly=options.orderly)
    await consumer.start()
    stopped = asyncio.get_running_loop().create_task(printer.stopped.wait())
    try:
        await asyncio.wait({stopped, interrupted}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        printer.stop()
        quiet_late_responses()
        stopped.cancel()
        await consumer.shutdown()


def quiet_late_responses() -> None:
    """Hide the remoting layer's warnings about answers to the pulls that stopping cancels
    (see the module docstring); nothing changes when debugging."""
    import logging

    remoting = logging.getLogger("rmq.remoting")
    if not remoting.isEnabledFor(logging.DEBUG):
        remoting.setLevel(logging.ERROR)
