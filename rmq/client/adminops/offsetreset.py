"""Moving a consumer group's offsets on a topic to a time (mqadmin resetOffsetByTime), as
`rmq group reset-offsets` and the console's reset do it, and the preview the console shows
before it.

`reset_group_offsets`: a group no broker knows (no route for its retry topic) is
`GroupNotFound`; the online members are told to move (INVOKE_BROKER_TO_RESET_OFFSET to every
broker of the topic); a group without members has its offsets committed directly (the
offline path of `reset_offset_offline`).  The timestamp is ms since the epoch, 0 for the
oldest messages and -1 for the end (skipping the backlog).

`reset_preview`: for each queue of the topic the group's consumer offset now and where the
reset would put it, so a page can show what changes before it is confirmed.  Where it
lands is the broker's offset-by-time answer (the end for -1), as the broker itself will
compute it; without `force` an offset is only ever moved back.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from rmq.client import api
from rmq.client.admin import AdminClient, AdminError
from rmq.client.adminops.consumer import (
    GroupOffline,
    consume_stats,
    reset_offset_by_time,
    reset_offset_offline,
    retry_topic,
)
from rmq.client.errors import RouteNotFound
from rmq.remoting.bodies import MASTER_ID
from rmq.remoting.bodies.client import MessageQueue


class GroupNotFound(AdminError):
    """No broker knows the group (its retry topic has no route)."""


@dataclass(frozen=True, slots=True)
class QueueReset:
    """One queue after a reset: the offset committed, and whether members were online."""

    topic: str
    broker_name: str
    queue_id: int
    offset: int
    online: bool


@dataclass(frozen=True, slots=True)
class QueuePreview:
    """One queue before a reset: the group's offset now, the queue's end, and where the
    reset would move the group's offset."""

    broker_name: str
    queue_id: int
    consumer_offset: int
    broker_offset: int
    target_offset: int

    @property
    def lag_after(self) -> int:
        return max(self.broker_offset - self.target_offset, 0)


async def _known(admin: AdminClient, group: str) -> None:
    try:
        await admin.topic_route(retry_topic(group))
    except RouteNotFound:
        raise GroupNotFound(
            f"consumer group {group!r} not found: no broker knows it (no route for its retry topic)"
        ) from None


async def reset_group_offsets(
    admin: AdminClient, group: str, topic: str, timestamp: int, *, force: bool = True
) -> list[QueueReset]:
    """Reset `group`'s offsets on `topic` to `timestamp` (module docstring)."""
    await _known(admin, group)
    try:
        offsets = await reset_offset_by_time(admin, topic, group, timestamp, force=force)
    except GroupOffline:
        stats = await reset_offset_offline(admin, group, topic, timestamp, force=force)
        return [
            QueueReset(topic, row.broker_name, row.queue_id, row.rollback_offset, False)
            for row in stats
        ]
    return [
        QueueReset(topic, mq.broker_name, mq.queue_id, offset, True)
        for mq, offset in sorted(offsets.items(), key=lambda i: (i[0].broker_name, i[0].queue_id))
    ]


async def reset_preview(
    admin: AdminClient, group: str, topic: str, timestamp: int, *, force: bool = True
) -> list[QueuePreview]:
    """What `reset_group_offsets` would do to each queue of `topic` (module docstring)."""
    await _known(admin, group)
    route = await admin.topic_route(topic)
    try:
        stats = await consume_stats(admin, group, topic)
        current = {mq: (o.broker_offset, o.consumer_offset) for mq, o in stats.offset_table.items()}
    except GroupOffline:
        current = {}
    queues: list[tuple[str, MessageQueue]] = []
    for data in route.broker_datas:
        addr = data.broker_addrs.get(MASTER_ID) or data.select_broker_addr()
        count = max(
            (q.read_queue_nums for q in route.queue_datas if q.broker_name == data.broker_name),
            default=0,
        )
        if addr is not None:
            queues += [(addr, MessageQueue(topic, data.broker_name, i)) for i in range(count)]

    async def one(addr: str, mq: MessageQueue) -> QueuePreview:
        end = await api.get_max_offset(admin.remoting, addr, mq, admin.timeout)
        target = (
            end
            if timestamp < 0
            else await api.search_offset(admin.remoting, addr, mq, timestamp, admin.timeout)
        )
        consumer_offset = current.get(mq, (end, -1))[1]
        if not force and consumer_offset >= 0:
            target = min(target, consumer_offset)
        return QueuePreview(mq.broker_name, mq.queue_id, consumer_offset, end, target)

    rows = await asyncio.gather(*(one(addr, mq) for addr, mq in queues))
    return sorted(rows, key=lambda r: (r.broker_name, r.queue_id))
