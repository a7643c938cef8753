"""The pull path's read: messages of one queue from a queue offset, as Apache serves them.

:meth:`QueueReader.get_messages` (behind :meth:`MessageStore.get_messages`) takes the
consume-queue entries from the requested offset, filters them by tags code (and optionally by
the record), and returns the matching records as zero-copy slices of the commitlog mapping,
with Apache's ``GetMessageStatus`` and next-offset rules: at most ``max(800, max_msg_nums)``
entries are scanned, never past the end of the consume-queue file holding the offset, and the
transfer stops at the limits for messages in memory (256 KiB / 32 by default) or on disk
(64 KiB / 8), whichever the message's distance from the commitlog end says, always taking the
first match.  A slave that does not check offsets (``offsetCheckInSlave=false``) answers with
the requested offset as the next one.

Reads are safe from any thread: they only look below the published write positions.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Callable
from dataclasses import dataclass, field

from rmq.common.config import BrokerRole, MessageStoreConfig
from rmq.store.commitlog import CommitLog
from rmq.store.consumequeue import CQ_STORE_UNIT_SIZE, PRE_BLANK_SIZE, ConsumeQueue, iter_entries

MIN_SCAN_ENTRIES = 800

TagsFilter = Callable[[int], bool]
"""Decides from a consume-queue tags code whether a message may match the subscription."""

RecordFilter = Callable[[memoryview], bool]
"""Decides from the stored record (e.g. its properties, for SQL92) whether it matches."""


class GetMessageStatus(enum.Enum):
    """Outcome of :meth:`MessageStore.get_messages`, as Apache's ``GetMessageStatus``."""

    FOUND = enum.auto()
    NO_MATCHED_MESSAGE = enum.auto()
    MESSAGE_WAS_REMOVING = enum.auto()
    OFFSET_FOUND_NULL = enum.auto()
    OFFSET_OVERFLOW_BADLY = enum.auto()
    OFFSET_OVERFLOW_ONE = enum.auto()
    OFFSET_TOO_SMALL = enum.auto()
    NO_MATCHED_LOGIC_QUEUE = enum.auto()
    NO_MESSAGE_IN_QUEUE = enum.auto()


@dataclass(slots=True)
class GetMessageResult:
    """Messages found by a pull, as zero-copy views of the commitlog.

    ``messages[i]`` is the whole stored record at ``physical_offsets[i]``; the pull response
    body is their concatenation.  ``next_begin_offset``, ``min_offset`` and ``max_offset``
    follow the pull table of the spec.
    """

    status: GetMessageStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    messages: list[memoryview] = field(default_factory=list)
    physical_offsets: list[int] = field(default_factory=list)
    buffer_total_size: int = 0
    suggest_pulling_from_slave: bool = False

    @property
    def message_count(self) -> int:
        return len(self.messages)


def _physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 8 << 30


class QueueReader:
    """Reads the messages of a queue for a pull (see the module docstring)."""

    def __init__(self, config: MessageStoreConfig, commitlog: CommitLog) -> None:
        self.config = config
        self.commitlog = commitlog
        self._memory_budget = _physical_memory() * config.access_message_in_memory_max_ratio // 100
        self._correct_offsets = (
            config.broker_role is not BrokerRole.SLAVE or config.offset_check_in_slave
        )

    def get_messages(
        self,
        queue: ConsumeQueue | None,
        offset: int,
        max_msg_nums: int,
        tags_filter: TagsFilter | None,
        record_filter: RecordFilter | None,
    ) -> GetMessageResult:
        """Read up to ``max_msg_nums`` messages of ``queue`` (None when the store has no
        such queue) from queue ``offset``.

        Scans at most ``max(800, max_msg_nums)`` consume-queue entries, never past the end
        of the consume-queue file holding ``offset``; stops at the transfer limits (256 KiB /
        32 messages from memory, 64 KiB / 8 from disk by default), always taking the first
        match.
        """
        max_physical = self.commitlog.max_offset()
        if queue is None:
            return GetMessageResult(
                GetMessageStatus.NO_MATCHED_LOGIC_QUEUE, self._next_offset(offset, 0), 0, 0
            )
        min_offset = queue.min_offset
        max_offset = queue.max_offset
        if max_offset == 0:
            status, next_offset = GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0
        elif offset < min_offset:
            status, next_offset = GetMessageStatus.OFFSET_TOO_SMALL, min_offset
        elif offset == max_offset:
            status, next_offset = GetMessageStatus.OFFSET_OVERFLOW_ONE, offset
        elif offset > max_offset:
            status, next_offset = GetMessageStatus.OFFSET_OVERFLOW_BADLY, max_offset
        else:
            entries = queue.get_entries(offset, max(MIN_SCAN_ENTRIES, max_msg_nums))
            if entries is None:
                return GetMessageResult(
                    GetMessageStatus.OFFSET_FOUND_NULL,
                    self._next_offset(offset, self._roll_next_queue_file(offset)),
                    min_offset,
                    max_offset,
                )
            result = GetMessageResult(
                GetMessageStatus.NO_MATCHED_MESSAGE, offset, min_offset, max_offset
            )
            self._collect(result, entries, max_msg_nums, max_physical, tags_filter, record_filter)
            return result
        return GetMessageResult(
            status, self._next_offset(offset, next_offset), min_offset, max_offset
        )

    def _collect(
        self,
        result: GetMessageResult,
        entries: memoryview,
        max_msg_nums: int,
        max_physical: int,
        tags_filter: TagsFilter | None,
        record_filter: RecordFilter | None,
    ) -> None:
        config = self.config
        commitlog = self.commitlog
        memory_budget = self._memory_budget
        messages = result.messages
        next_file_start = -1
        scanned = 0
        last_physical = 0
        for physical_offset, size, tags_code in iter_entries(entries):
            scanned += 1
            last_physical = physical_offset
            if physical_offset < next_file_start or size == PRE_BLANK_SIZE:
                continue
            if messages:
                if len(messages) >= max_msg_nums:
                    scanned -= 1
                    break
                in_disk = max_physical - physical_offset > memory_budget
                if in_disk:
                    max_bytes = config.max_transfer_bytes_on_message_in_disk
                    max_count = config.max_transfer_count_on_message_in_disk
                else:
                    max_bytes = config.max_transfer_bytes_on_message_in_memory
                    max_count = config.max_transfer_count_on_message_in_memory
                if result.buffer_total_size + size > max_bytes or len(messages) >= max_count:
                    scanned -= 1
                    break
            if tags_filter is not None and not tags_filter(tags_code):
                continue
            record = commitlog.get_message(physical_offset, size)
            if record is None:
                if not messages:
                    result.status = GetMessageStatus.MESSAGE_WAS_REMOVING
                next_file_start = self._roll_next_commitlog_file(physical_offset)
                continue
            if record_filter is not None and not record_filter(record):
                continue
            messages.append(record)
            result.physical_offsets.append(physical_offset)
            result.buffer_total_size += size
            result.status = GetMessageStatus.FOUND
            next_file_start = -1
        result.next_begin_offset += scanned
        result.suggest_pulling_from_slave = max_physical - last_physical > memory_budget

    def _next_offset(self, old: int, new: int) -> int:
        return new if self._correct_offsets else old

    def _roll_next_queue_file(self, offset: int) -> int:
        per_file = self.config.mapped_file_size_consume_queue // CQ_STORE_UNIT_SIZE
        return offset + per_file - offset % per_file

    def _roll_next_commitlog_file(self, offset: int) -> int:
        size = self.config.mapped_file_size_commit_log
        return offset + size - offset % size
