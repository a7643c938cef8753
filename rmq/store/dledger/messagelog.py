"""RocketMQ messages in a DLedger log, as RocketMQ 4.9.8's DLedgerCommitLog stores them.

Each message is one entry whose body is the message record in the classic commitlog layout
(encoded by ``rmq.common.message``, the one record codec).  The record's PHYSICALOFFSET (record
offset 28) holds ``entry pos + 48``: the offset of the record itself, which is what consume
queues, msgIds and lookups use as the message's commitlog offset.  Two consecutive messages are
therefore 48 bytes (plus any blank closing a file) apart, not contiguous.

Queue offsets are assigned when the message is appended (from :attr:`MessageLog.topic_queue_table`,
as Apache's does, before the quorum acknowledges it); transactional PREPARED and ROLLBACK
records take queue offset 0 and do not advance the queue.  Only committed entries are handed
to dispatch: :meth:`MessageLog.dispatch_committed` walks from where it last stopped up to the
ledger's committed position, on every node alike.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from rmq.common.message import DispatchInfo, encode_record_into, read_dispatch_info, record_size
from rmq.common.recordwalk import RecordError
from rmq.common.sysflag import (
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    transaction_type,
)
from rmq.store.dledger.entry import HEADER_SIZE, Entry
from rmq.store.dledger.ledger import Ledger
from rmq.store.putmessage import InnerMessage

PHY_POS_POSITION = 28
"""Offset of PHYSICALOFFSET inside a message record (MessageDecoder.PHY_POS_POSITION)."""
_LONG = struct.Struct(">q")


def wrote_offset(entry_pos: int) -> int:
    """The commitlog offset of the message in the entry at ``entry_pos``: ``pos + 48``."""
    return entry_pos + HEADER_SIZE


def entry_pos_of(offset: int) -> int:
    """The entry position of the message at commitlog offset ``offset``."""
    return offset - HEADER_SIZE


def physical_offset_hook(buf: Any, body_offset: int, pos: int) -> None:
    """DLedgerCommitLog's append hook: the record's PHYSICALOFFSET becomes ``pos + 48``."""
    _LONG.pack_into(buf, body_offset + PHY_POS_POSITION, pos + body_offset)


class Prepared(NamedTuple):
    """A message encoded for an entry, its queue offset not yet taken."""

    key: tuple[str, int]
    counted: bool
    queue_offset: int
    store_timestamp: int
    body: bytes


class Appended(NamedTuple):
    """A message appended (not yet committed): its entry and where consumers will find it."""

    entry: Entry
    physical_offset: int
    size: int
    queue_offset: int
    store_timestamp: int


class MessageLog:
    """The RocketMQ view of a :class:`Ledger`."""

    def __init__(
        self,
        ledger: Ledger,
        store_host: bytes,
        clock: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        self.ledger = ledger
        self.store_host = store_host
        self.topic_queue_table: dict[tuple[str, int], int] = {}
        self._clock = clock
        self.dispatched_pos = -1
        """Entry position the next dispatch starts from (-1: the ledger's first entry)."""
        self.dispatched_queue_table: dict[tuple[str, int], int] = {}
        """One past the queue offset of the last record dispatched, per queue."""

    def encode(self, msg: InnerMessage, queue_offset: int, store_timestamp: int) -> bytes:
        """The record of ``msg`` with PHYSICALOFFSET left 0 (the append hook sets it)."""
        topic = msg.topic.encode()
        born_v6 = len(msg.born_host) > 8
        store_v6 = len(self.store_host) > 8
        size = record_size(len(msg.body), len(topic), len(msg.properties), born_v6, store_v6)
        buf = bytearray(size)
        encode_record_into(
            buf,
            0,
            queue_id=msg.queue_id,
            flag=msg.flag,
            queue_offset=queue_offset,
            physical_offset=0,
            sys_flag=msg.sys_flag,
            born_timestamp=msg.born_timestamp,
            born_host=msg.born_host,
            store_timestamp=store_timestamp,
            store_host=self.store_host,
            reconsume_times=msg.reconsume_times,
            prepared_transaction_offset=msg.prepared_transaction_offset,
            body=msg.body,
            topic_bytes=topic,
            properties_bytes=msg.properties,
        )
        return bytes(buf)

    def prepare(self, msg: InnerMessage) -> Prepared:
        """The record of ``msg`` with its queue offset and store time (nothing is taken
        yet: :meth:`taken` advances the queue once the entry is appended).  Raises
        RecordError for a record that cannot be encoded."""
        key = (msg.topic, msg.queue_id)
        counted = transaction_type(msg.sys_flag) not in (
            TRANSACTION_PREPARED_TYPE,
            TRANSACTION_ROLLBACK_TYPE,
        )
        store_timestamp = self._clock()
        queue_offset = self.topic_queue_table.get(key, 0) if counted else 0
        body = self.encode(msg, queue_offset, store_timestamp)
        return Prepared(key, counted, queue_offset, store_timestamp, body)

    def taken(self, prepared: Prepared) -> None:
        """The prepared record was appended: its queue moves on (before the quorum ack, as
        Apache's does: a failed ack leaves a gap)."""
        if prepared.counted:
            self.topic_queue_table[prepared.key] = prepared.queue_offset + 1

    def append(self, term: int, msg: InnerMessage) -> Appended:
        """Append ``msg`` straight to the ledger as the leader of ``term`` (no quorum)."""
        with self.ledger.lock:
            prepared = self.prepare(msg)
            entry = self.ledger.append_as_leader(term, prepared.body, physical_offset_hook)
            self.taken(prepared)
        return Appended(
            entry,
            wrote_offset(entry.pos),
            len(prepared.body),
            prepared.queue_offset,
            prepared.store_timestamp,
        )

    def recover_topic_queue_table(self) -> None:
        """Queue offsets for a new leader: one past the last dispatched record of each queue
        (Apache's recoverTopicQueueTable, from the consume queues)."""
        self.topic_queue_table = dict(self.dispatched_queue_table)

    def committed_entries(self, start_pos: int) -> Iterator[tuple[int, memoryview]]:
        """``(entry pos, entry bytes)`` of each committed entry from ``start_pos`` on."""
        limit = self.ledger.committed_pos
        pos = start_pos
        while pos < limit:
            following, raw = self.ledger.read_at(pos)
            if raw is None:
                if following == pos:
                    return
                pos = following
                continue
            if following > limit:
                return
            yield pos, raw
            pos = following

    def dispatch_committed(self, dispatch: Callable[[DispatchInfo], None]) -> int:
        """Hand every committed record not yet dispatched to ``dispatch``; returns how many.

        A record that does not decode stops the walk there (it is retried next time)."""
        start = self.dispatched_pos
        if start < 0:
            if self.ledger.begin_index < 0:
                return 0
            start = self.ledger.pos_and_size(self.ledger.begin_index)[0]
        count = 0
        for pos, raw in self.committed_entries(start):
            try:
                info = read_dispatch_info(raw, HEADER_SIZE)
            except RecordError:
                break
            dispatch(info)
            key = (info.topic, info.queue_id)
            if transaction_type(info.sys_flag) not in (
                TRANSACTION_PREPARED_TYPE,
                TRANSACTION_ROLLBACK_TYPE,
            ):
                self.dispatched_queue_table[key] = info.queue_offset + 1
            count += 1
            self.dispatched_pos = pos + len(raw)
        if count == 0 and self.dispatched_pos < 0:
            self.dispatched_pos = start
        return count

    def record_at(self, offset: int) -> memoryview | None:
        """The committed record at commitlog offset ``offset`` (None at or past the
        committed end, as DLedgerCommitLog.getData)."""
        pos = entry_pos_of(offset)
        if pos < 0 or pos >= self.ledger.committed_pos:
            return None
        _, raw = self.ledger.read_at(pos)
        return None if raw is None else raw[HEADER_SIZE:]
