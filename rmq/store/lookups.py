"""The store's lookups, named as Apache's ``DefaultMessageStore`` names them: consume queues
by (topic, queue id), their offsets and store times, records by physical offset, offset
message id and key.  :class:`StoreLookups` is a base of :class:`rmq.store.store.MessageStore`,
reading only its commitlog, consume queues and index; safe from any thread.
"""

from __future__ import annotations

from dataclasses import dataclass

from rmq.common.message import MessageRecord, decode_record
from rmq.common.msgid import decode_offset_msg_id
from rmq.common.recordwalk import MIN_RECORD_SIZE, RecordError, store_timestamp_at
from rmq.store.commitlog import CommitLog
from rmq.store.consumequeue import ConsumeQueue, ConsumeQueueStore
from rmq.store.indexservice import IndexService
from rmq.store.salvage import record_intact


@dataclass(slots=True)
class QueryMessageResult:
    """Messages found by key (QUERY_MESSAGE), oldest first, with the index's freshness."""

    messages: list[memoryview]
    physical_offsets: list[int]
    index_last_update_timestamp: int
    index_last_update_phy_offset: int


class StoreLookups:
    """Lookups over the store's files (see the module docstring)."""

    commitlog: CommitLog
    consume_queues: ConsumeQueueStore
    index: IndexService | None

    def get_consume_queue(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        """The consume queue of (topic, queue id), None when it was never written."""
        return self.consume_queues.find(topic, queue_id)

    def find_consume_queue(self, topic: str, queue_id: int) -> ConsumeQueue:
        """The consume queue of (topic, queue id), created (without files yet) when missing."""
        return self.consume_queues.find_or_create(topic, queue_id)

    def topics(self) -> list[str]:
        """The topics that have consume queues, sorted."""
        return self.consume_queues.topics()

    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int:
        """The next queue offset to be written (0 for an unknown queue)."""
        queue = self.get_consume_queue(topic, queue_id)
        return queue.max_offset if queue is not None else 0

    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int:
        """The first readable queue offset (-1 for an unknown queue, as Apache)."""
        queue = self.get_consume_queue(topic, queue_id)
        return queue.min_offset if queue is not None else -1

    def get_commitlog_offset_in_queue(self, topic: str, queue_id: int, queue_offset: int) -> int:
        """The physical offset of the message at ``queue_offset`` (0 when unknown)."""
        queue = self.get_consume_queue(topic, queue_id)
        entry = queue.entry_at(queue_offset) if queue is not None else None
        return entry.physical_offset if entry is not None else 0

    def get_offset_in_queue_by_time(self, topic: str, queue_id: int, timestamp: int) -> int:
        """The queue offset of the message stored closest to ``timestamp`` (ms)."""
        queue = self.get_consume_queue(topic, queue_id)
        if queue is None:
            return 0
        return queue.search_offset_by_time(
            timestamp, self.pickup_store_timestamp, max(self.commitlog.min_offset(), 0)
        )

    def get_message_store_timestamp(self, topic: str, queue_id: int, queue_offset: int) -> int:
        """Store time of the message at ``queue_offset`` (-1 when unknown)."""
        queue = self.get_consume_queue(topic, queue_id)
        entry = queue.entry_at(queue_offset) if queue is not None else None
        if entry is None:
            return -1
        return self.pickup_store_timestamp(entry.physical_offset, entry.size)

    def get_earliest_message_time(self, topic: str, queue_id: int) -> int:
        """Store time of the first readable message of a queue (-1 when none)."""
        queue = self.get_consume_queue(topic, queue_id)
        if queue is None:
            return -1
        return self.get_message_store_timestamp(topic, queue_id, queue.min_offset)

    def pickup_store_timestamp(self, physical_offset: int, size: int) -> int:
        """Store time of the record at ``physical_offset`` (-1 when not stored)."""
        record = self.commitlog.get_message(physical_offset, size)
        if record is None or size < MIN_RECORD_SIZE:
            return -1
        return store_timestamp_at(record, 0)

    def min_physical_offset(self) -> int:
        return self.commitlog.min_offset()

    def max_physical_offset(self) -> int:
        return self.commitlog.max_offset()

    def select_one_message_by_offset(
        self, physical_offset: int, size: int | None = None
    ) -> memoryview | None:
        """The whole stored record at ``physical_offset`` (zero copy), or None.

        With ``size``, the ``size`` bytes stored from ``physical_offset`` on, whatever they
        hold (None when not all of them are stored in one file).
        """
        if size is not None:
            return self.commitlog.get_message(physical_offset, size)
        return self.commitlog.record_at(physical_offset)

    def get_commitlog_data(self, offset: int) -> memoryview | None:
        """Everything written from ``offset`` to the end of its commitlog file (what a master
        sends its slaves), or None when nothing is."""
        return self.commitlog.get_data(offset)

    def look_message_by_offset(self, physical_offset: int) -> MessageRecord | None:
        """The decoded record at ``physical_offset``, or None."""
        record = self.commitlog.record_at(physical_offset)
        if record is None:
            return None
        try:
            return decode_record(record)
        except RecordError:
            return None

    def look_message_by_msg_id(self, offset_msg_id: str) -> MessageRecord | None:
        """The record an offset message id points at (VIEW_MESSAGE_BY_ID), or None.

        Raises ValueError for a string that is not an offset message id.
        """
        return self.look_message_by_offset(decode_offset_msg_id(offset_msg_id).physical_offset)

    def query_message(
        self, topic: str, key: str, max_num: int, begin: int, end: int
    ) -> QueryMessageResult:
        """Messages indexed under ``key`` (a KEYS token or the unique key) stored within
        ``[begin, end]`` ms, oldest first; callers re-check the keys (hashes may collide)."""
        index = self.index
        if index is None:
            return QueryMessageResult([], [], 0, 0)
        offsets = sorted(set(index.query(topic, key, max_num, begin, end)))
        messages = []
        found = []
        for physical_offset in offsets:
            record = self.commitlog.record_at(physical_offset)
            if record is not None and record_intact(record):
                messages.append(record)
                found.append(physical_offset)
        return QueryMessageResult(
            messages, found, index.last_update_timestamp, index.last_update_phy_offset
        )
