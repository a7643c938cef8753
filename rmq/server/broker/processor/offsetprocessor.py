"""Consumer offsets over the wire: QUERY_CONSUMER_OFFSET (14) and UPDATE_CONSUMER_OFFSET (15).

UPDATE_CONSUMER_OFFSET (usually oneway) commits a group's next offset in a queue to the
:class:`~rmq.server.broker.offset.consumeroffset.ConsumerOffsetManager`, which persists it on its
own schedule.  QUERY_CONSUMER_OFFSET answers the stored offset; for a group without one it
applies Apache's rule (:func:`~rmq.server.broker.offset.consumeroffset.offset_for_new_group`):
offset 0 when the queue was never cleaned and its first message is still "in memory", else
QUERY_NOT_FOUND, after which the client falls back to its ``consumeFromWhere``.

"In memory" is Apache's ``checkInDiskByConsumeOffset``, which the store does not offer yet;
:func:`offset_in_disk` computes it from public store methods: the message at a queue offset
is "in disk" when the commitlog holds more bytes after it than the share of physical memory
the store keeps hot (``accessMessageInMemoryMaxRatio`` percent of RAM).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, create_response
from rmq.remoting.connection import Connection, Handler
from rmq.remoting.headers import (
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    UpdateConsumerOffsetRequestHeader,
    UpdateConsumerOffsetResponseHeader,
)
from rmq.server.broker.offset.consumeroffset import QUERY_NOT_FOUND_REMARK, offset_for_new_group
from rmq.store.store import MessageStore

if TYPE_CHECKING:
    from rmq.server.broker.context import BrokerContext


def physical_memory() -> int:
    """Bytes of physical memory (Java's ``TOTAL_PHYSICAL_MEMORY_SIZE``)."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def offset_in_disk(
    store: MessageStore, topic: str, queue_id: int, queue_offset: int, memory: int
) -> bool:
    """Whether the message at ``queue_offset`` lies further behind the commitlog's end than
    ``accessMessageInMemoryMaxRatio`` percent of ``memory`` bytes; False when the queue has
    no such message."""
    if (
        not store.get_min_offset_in_queue(topic, queue_id)
        <= queue_offset
        < (store.get_max_offset_in_queue(topic, queue_id))
    ):
        return False
    physical_offset = store.get_commitlog_offset_in_queue(topic, queue_id, queue_offset)
    hot_bytes = memory * store.config.access_message_in_memory_max_ratio // 100
    return store.max_physical_offset() - physical_offset > hot_bytes


class ConsumerOffsetProcessor:
    """Serves the consumer offset queries and commits of one broker."""

    def __init__(self, context: BrokerContext) -> None:
        self.context = context
        self._memory = physical_memory()

    def handlers(self) -> dict[int, Handler]:
        return {
            RequestCode.QUERY_CONSUMER_OFFSET: self.query_consumer_offset,
            RequestCode.UPDATE_CONSUMER_OFFSET: self.update_consumer_offset,
        }

    async def query_consumer_offset(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = request.read_header(QueryConsumerOffsetRequestHeader)
        topic, queue_id = header.topic, header.queue_id
        store = self.context.store
        stored = self.context.consumer_offset_manager.query(header.consumer_group, topic, queue_id)
        offset = (
            stored
            if stored >= 0
            else offset_for_new_group(
                store.get_min_offset_in_queue(topic, queue_id),
                lambda: offset_in_disk(store, topic, queue_id, 0, self._memory),
            )
        )
        if offset is None:
            response = create_response(ResponseCode.QUERY_NOT_FOUND, QUERY_NOT_FOUND_REMARK)
            response.ext_fields = {}
            return response
        return create_response(
            ResponseCode.SUCCESS, None, QueryConsumerOffsetResponseHeader(offset=offset)
        )

    async def update_consumer_offset(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = request.read_header(UpdateConsumerOffsetRequestHeader)
        self.context.consumer_offset_manager.commit(
            connection.remote_addr,
            header.consumer_group,
            header.topic,
            header.queue_id,
            header.commit_offset,
        )
        return create_response(ResponseCode.SUCCESS, None, UpdateConsumerOffsetResponseHeader())
