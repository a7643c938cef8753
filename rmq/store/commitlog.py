"""The commitlog: every message the broker stores, appended to one log of mapped files.

Appending (:meth:`CommitLog.put_message`, :meth:`CommitLog.put_messages`) runs on the
broker's event-loop thread under the append lock and is kept short: the record size is
computed from the lengths, the last file is checked for room (when ``size + 8`` bytes do not
fit, the next file is created and an 8-byte BLANK record whose TOTALSIZE covers the rest of
the current file closes it), the queue offset comes from a dict keyed by ``(topic, queue
id)``, the record is encoded with the common codec (``rmq.common.message``) into a
preallocated buffer and copied into the mapping TOTALSIZE last (see :func:`_commit`), and
the store's dispatch function is called inline with the consume queue and index fields.

A batch (SEND_BATCH_MESSAGE) is prepared outside the lock (``prepare_batch``: the body is
walked once, each record's size, BODYCRC, trailing bytes and dispatch fields worked out), so
that under the lock there is one room check for the whole batch (it never straddles two
files), one run of consecutive queue offsets, one pass writing every record straight into
the mapping with the first record's TOTALSIZE last (``encode_batch_into``: a kill in the
middle leaves no record of the batch), and one call of the store's batch dispatch function.

Transactional PREPARED and ROLLBACK records take queue offset 0 and do not advance the
queue's offset (they are not consumable).  A message with a delay level whose transaction
type is NOT or COMMIT is parked: topic ``SCHEDULE_TOPIC_XXXX``, queue ``level - 1`` (levels
above the highest are clamped), ``REAL_TOPIC`` / ``REAL_QID`` added to its properties, and its
consume-queue tags code is the delivery time (store time + the level's delay).

Reading the log back (recovery, slaves) goes through :meth:`CommitLog.scan`, which walks
records from an offset, follows BLANK records to the next file and stops at the first zero,
unknown, incomplete or invalid record; the same walk feeds dispatch in abnormal recovery,
catch-up and replication.  :meth:`CommitLog.recovery_start` picks where recovery starts and
:meth:`CommitLog.truncate` cuts everything after the valid end, reporting what was cut.

Threads: appends and recovery on the writer thread under ``lock``; reads lock-free from any
thread (they only look below the published wrote positions); the flush thread only flushes.
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
import zlib
from collections.abc import Callable
from typing import Final

from rmq.common.delay import (
    DEFAULT_MESSAGE_DELAY_LEVEL,
    clamp_delay_level,
    deliver_timestamp,
    parse_delay_levels,
    schedule_queue_id,
)
from rmq.common.message import (
    DispatchInfo,
    PreparedBatch,
    dispatch_info,
    encode_batch_into,
    encode_record_into,
    prepare_batch,
    record_size,
)
from rmq.common.msgconst import (
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_REAL_QUEUE_ID,
    PROPERTY_REAL_TOPIC,
)
from rmq.common.msgid import IPV6_HOST_LENGTH
from rmq.common.naming import RMQ_SYS_SCHEDULE_TOPIC
from rmq.common.properties import decode_properties_bytes, encode_properties_bytes
from rmq.common.recordwalk import (
    BLANK_MAGIC,
    CRC_MASK,
    END_FILE_MIN_BLANK_LENGTH,
    MAX_PROPERTIES_BYTES,
    MAX_TOPIC_BYTES,
    MESSAGE_MAGIC,
    PropertiesSizeError,
    RecordError,
    encode_blank_into,
    frame_at,
    iter_frames,
    peek_size_magic,
    store_timestamp_at,
)
from rmq.common.sysflag import (
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_NOT_TYPE,
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    TRANSACTION_TYPE_MASK,
)
from rmq.common.timeutil import now_millis
from rmq.store.errors import DiskFullError, StoreError
from rmq.store.mappedfile import Allocate, MappedFile, MappedFileQueue, TruncatedRange
from rmq.store.putmessage import (
    DispatchRequest,
    InnerMessage,
    PutMessageResult,
    PutMessageStatus,
)

log = logging.getLogger("rmq.store")

BODY_SIZE_RESERVE: Final = 64 * 1024
"""A record may exceed ``max_message_size`` by this much (topic, properties, fixed part)."""

NORMAL_RECOVERY_FILES: Final = 3
DEFAULT_DELAY_LEVELS: Final = parse_delay_levels(DEFAULT_MESSAGE_DELAY_LEVEL)


Dispatch = Callable[[DispatchRequest], None]
"""The store's dispatch function: builds one record's consume queue entry and index keys."""

DispatchBatch = Callable[[str, int, int, int, PreparedBatch, int], None]
"""The store's batch dispatch function, called as ``(topic, queue id, queue offset, physical
offset, batch, store timestamp)``: the consume queue entries and index keys of the records of
one batch, stored from ``physical_offset`` on with consecutive queue offsets from
``queue_offset`` (sizes and dispatch fields in ``batch``)."""


def _failure(status: PutMessageStatus) -> PutMessageResult:
    return PutMessageResult(status)


def _slice(mapped: MappedFile, pos: int, size: int) -> memoryview | None:
    """``mapped.slice``, or None when expiry deleted the file after it was looked up."""
    try:
        return mapped.slice(pos, size)
    except ValueError:
        return None


def _commit(mapped: MappedFile, pos: int, encoded: memoryview, size: int) -> None:
    """Copy ``size`` encoded bytes into ``mapped`` at ``pos``, their first 4 bytes last.

    Those 4 bytes are the first record's TOTALSIZE and the space after the end of data is
    all zeros, so a process killed in the middle of the copy leaves TOTALSIZE 0 there:
    recovery sees the end of the log, never a record with part of its fields unwritten (the
    body CRC alone would not notice missing properties).
    """
    buffer = mapped.buffer
    buffer[pos + 4 : pos + size] = encoded[4:size]
    buffer[pos : pos + 4] = encoded[:4]


class CommitLog:
    """The commitlog of one store.

    ``dispatch`` is called with a :class:`DispatchRequest` for every record appended by
    :meth:`put_message` and ``dispatch_batch`` once for every batch appended by
    :meth:`put_messages`, inside the append lock, in commitlog order.
    ``delay_levels[level - 1]`` is the delay of each level in ms.  ``clock`` returns the
    store timestamp in ms (replaceable in tests).
    """

    def __init__(
        self,
        store_path: str | os.PathLike[str],
        mapped_file_size: int,
        *,
        store_host: bytes,
        max_message_size: int,
        dispatch: Dispatch,
        dispatch_batch: DispatchBatch,
        delay_levels: tuple[int, ...] = DEFAULT_DELAY_LEVELS,
        allocate: Allocate = os.posix_fallocate,
        clock: Callable[[], int] = now_millis,
    ) -> None:
        self.queue = MappedFileQueue(store_path, mapped_file_size, allocate)
        self.store_host = store_host
        self.max_message_size = max_message_size
        self.delay_levels = delay_levels
        self.topic_queue_table: dict[tuple[str, int], int] = {}
        self.lock = threading.Lock()
        self.on_disk_full: Callable[[DiskFullError], None] | None = None
        """Told when a new file cannot be created for want of space (the put is then
        SERVICE_NOT_AVAILABLE, not CREATE_MAPPED_FILE_FAILED)."""
        self._dispatch = dispatch
        self._dispatch_batch = dispatch_batch
        self._clock = clock
        self._store_v6 = len(store_host) == IPV6_HOST_LENGTH
        self._scratch = memoryview(bytearray(max_message_size + BODY_SIZE_RESERVE))

    # -- appending -----------------------------------------------------------------------

    def put_message(self, msg: InnerMessage) -> PutMessageResult:
        """Append one message and dispatch it; never raises for a bad message or full disk."""
        topic = msg.topic
        queue_id = msg.queue_id
        properties = msg.properties
        tran_type = msg.sys_flag & TRANSACTION_TYPE_MASK
        delay_level = 0
        if msg.delay_level > 0 and tran_type in (TRANSACTION_NOT_TYPE, TRANSACTION_COMMIT_TYPE):
            topic, queue_id, properties, delay_level = self._park_delayed(msg)
        topic_bytes = topic.encode()
        body_size = len(msg.body)
        if body_size > self.max_message_size:
            log.warning("message body of %d bytes exceeds %d", body_size, self.max_message_size)
            return _failure(PutMessageStatus.MESSAGE_ILLEGAL)
        if len(properties) > MAX_PROPERTIES_BYTES:
            return _failure(PutMessageStatus.PROPERTIES_SIZE_EXCEEDED)
        if len(topic_bytes) > MAX_TOPIC_BYTES:
            return _failure(PutMessageStatus.MESSAGE_ILLEGAL)
        born_v6 = len(msg.born_host) == IPV6_HOST_LENGTH
        size = record_size(body_size, len(topic_bytes), len(properties), born_v6, self._store_v6)
        consumable = tran_type not in (TRANSACTION_PREPARED_TYPE, TRANSACTION_ROLLBACK_TYPE)
        return self._append(
            msg,
            topic,
            queue_id,
            size,
            1 if consumable else 0,
            topic_bytes=topic_bytes,
            properties=properties,
            delay_level=delay_level,
        )

    def put_messages(self, batch: InnerMessage) -> PutMessageResult:
        """Append a SEND_BATCH_MESSAGE batch atomically (one file, consecutive offsets)."""
        if batch.sys_flag & TRANSACTION_TYPE_MASK != TRANSACTION_NOT_TYPE or batch.delay_level > 0:
            return _failure(PutMessageStatus.MESSAGE_ILLEGAL)
        if len(batch.body) > self.max_message_size:
            log.warning("batch body of %d bytes exceeds %d", len(batch.body), self.max_message_size)
            return _failure(PutMessageStatus.MESSAGE_ILLEGAL)
        try:
            prepared = prepare_batch(
                batch.body,
                batch.properties,
                batch.topic.encode(),
                born_v6=len(batch.born_host) == IPV6_HOST_LENGTH,
                store_v6=self._store_v6,
            )
        except PropertiesSizeError:
            return _failure(PutMessageStatus.PROPERTIES_SIZE_EXCEEDED)
        except RecordError as exc:
            log.warning("malformed batch: %s", exc)
            return _failure(PutMessageStatus.MESSAGE_ILLEGAL)
        count = len(prepared.sizes)
        if not count:
            return _failure(PutMessageStatus.MESSAGE_ILLEGAL)
        return self._append(
            batch, batch.topic, batch.queue_id, prepared.total_size, count, batch=prepared
        )

    def _append(
        self,
        msg: InnerMessage,
        topic: str,
        queue_id: int,
        size: int,
        count: int,
        *,
        batch: PreparedBatch | None = None,
        topic_bytes: bytes = b"",
        properties: bytes = b"",
        delay_level: int = 0,
    ) -> PutMessageResult:
        """The locked sequence of every append: ``size`` bytes holding ``count`` messages of
        ``topic``'s queue ``queue_id`` (0 for a record no consume queue holds: it takes
        queue offset 0 and leaves the queue's offset alone).

        One record: ``msg`` with the topic, properties and delay level it is stored with (a
        parked delayed message's).  A batch: ``msg`` is its header and ``batch`` its
        prepared records.  Under :attr:`lock`: the store time, a file with room, the queue
        offset; the bytes written (one record encoded into the scratch buffer and copied in
        TOTALSIZE last, a batch straight into the mapping) and published (the file's wrote
        position); the queue offset advanced; dispatch.  Nothing is appended when there is
        no room, no new file or a batch that does not encode.
        """
        key = (topic, queue_id)
        with self.lock:
            store_timestamp = self._clock()
            mapped = self._file_with_room(size)
            if not isinstance(mapped, MappedFile):
                return _failure(mapped)
            pos = mapped.wrote_position
            physical_offset = mapped.file_from_offset + pos
            queue_offset = self.topic_queue_table.get(key, 0) if count else 0
            if batch is None:
                scratch = self._scratch_for(size)
                written = encode_record_into(
                    scratch,
                    0,
                    queue_id=queue_id,
                    flag=msg.flag,
                    queue_offset=queue_offset,
                    physical_offset=physical_offset,
                    sys_flag=msg.sys_flag,
                    born_timestamp=msg.born_timestamp,
                    born_host=msg.born_host,
                    store_timestamp=store_timestamp,
                    store_host=self.store_host,
                    reconsume_times=msg.reconsume_times,
                    prepared_transaction_offset=msg.prepared_transaction_offset,
                    body=msg.body,
                    topic_bytes=topic_bytes,
                    properties_bytes=properties,
                )
                assert written == size, (
                    f"record at {physical_offset}: TOTALSIZE {written} "
                    f"but {size} bytes appended and dispatched"
                )
                _commit(mapped, pos, scratch, size)
            else:
                try:
                    encode_batch_into(
                        mapped.buffer,
                        pos,
                        batch,
                        queue_id=queue_id,
                        queue_offset=queue_offset,
                        physical_offset=physical_offset,
                        sys_flag=msg.sys_flag,
                        born_timestamp=msg.born_timestamp,
                        born_host=msg.born_host,
                        store_timestamp=store_timestamp,
                        store_host=self.store_host,
                        reconsume_times=msg.reconsume_times,
                    )
                except RecordError as exc:
                    log.warning("batch refused: %s", exc)
                    return _failure(PutMessageStatus.MESSAGE_ILLEGAL)
            mapped.appended(pos + size, store_timestamp)
            if count:
                self.topic_queue_table[key] = queue_offset + count
            if batch is None:
                tags_code = msg.tags_code
                if delay_level:
                    tags_code = deliver_timestamp(delay_level, store_timestamp, self.delay_levels)
                self._dispatch(
                    DispatchRequest(
                        topic,
                        queue_id,
                        queue_offset,
                        physical_offset,
                        size,
                        tags_code,
                        store_timestamp,
                        msg.sys_flag,
                        msg.keys,
                        msg.uniq_key,
                    )
                )
            else:
                self._dispatch_batch(
                    topic, queue_id, queue_offset, physical_offset, batch, store_timestamp
                )
        return PutMessageResult(
            PutMessageStatus.PUT_OK,
            physical_offset,
            size,
            queue_offset,
            store_timestamp,
            self.store_host,
            list(itertools.accumulate(batch.sizes[:-1], initial=physical_offset))
            if batch is not None
            else (),
            topic=topic,
            queue_id=queue_id,
        )

    def _scratch_for(self, size: int) -> memoryview:
        """The preallocated encode buffer, grown when a batch needs more."""
        if size > len(self._scratch):
            self._scratch = memoryview(bytearray(size))
        return self._scratch

    def _file_with_room(self, size: int) -> MappedFile | PutMessageStatus:
        """The file to write ``size`` bytes to, closing the current one with a BLANK if needed.

        MESSAGE_ILLEGAL when ``size`` can never fit in one file, CREATE_MAPPED_FILE_FAILED
        when a new file cannot be created, SERVICE_NOT_AVAILABLE when that is for want of
        space (the current file is left untouched then).
        """
        queue = self.queue
        needed = size + END_FILE_MIN_BLANK_LENGTH
        if needed > queue.mapped_file_size:
            log.warning(
                "a %d-byte append does not fit a %d-byte commitlog file",
                size,
                queue.mapped_file_size,
            )
            return PutMessageStatus.MESSAGE_ILLEGAL
        try:
            mapped = queue.get_last_mapped_file()
            assert mapped is not None
            if needed <= mapped.remaining():
                return mapped
            if mapped.wrote_position == 0:
                return PutMessageStatus.MESSAGE_ILLEGAL
            # Create the next file first: if that fails, nothing was written.
            start = mapped.wrote_position
            nxt = queue.create_next_file()
        except DiskFullError as exc:
            if self.on_disk_full is not None:
                self.on_disk_full(exc)
            return PutMessageStatus.SERVICE_NOT_AVAILABLE
        except StoreError as exc:
            log.error("%s", exc)
            return PutMessageStatus.CREATE_MAPPED_FILE_FAILED
        encode_blank_into(mapped.buffer, start, mapped.file_size - start)
        mapped.appended(mapped.file_size)
        return nxt

    def _park_delayed(self, msg: InnerMessage) -> tuple[str, int, bytes, int]:
        """Topic, queue, properties and delay level of a message parked for delivery later."""
        level = clamp_delay_level(msg.delay_level, self.delay_levels)
        properties = decode_properties_bytes(msg.properties)
        properties[PROPERTY_DELAY_TIME_LEVEL] = str(level)
        properties[PROPERTY_REAL_TOPIC] = msg.topic
        properties[PROPERTY_REAL_QUEUE_ID] = str(msg.queue_id)
        return (
            RMQ_SYS_SCHEDULE_TOPIC,
            schedule_queue_id(level),
            encode_properties_bytes(properties),
            level,
        )

    # -- reading -------------------------------------------------------------------------

    def min_offset(self) -> int:
        """Offset of the first stored byte (-1 with no files)."""
        return self.queue.min_offset()

    def max_offset(self) -> int:
        """Offset just past the last record (0 with no files)."""
        return self.queue.max_offset()

    def get_message(self, offset: int, size: int) -> memoryview | None:
        """A zero-copy view of ``size`` bytes at ``offset``; None if not (or no longer) stored."""
        found = self._locate(offset)
        if found is None:
            return None
        mapped, pos = found
        if pos + size > mapped.wrote_position:
            return None
        return _slice(mapped, pos, size)

    def get_data(self, offset: int) -> memoryview | None:
        """Everything written from ``offset`` to the end of its file (for replication)."""
        found = self._locate(offset)
        if found is None:
            return None
        mapped, pos = found
        if pos >= mapped.wrote_position:
            return None
        return _slice(mapped, pos, mapped.wrote_position - pos)

    def record_at(self, offset: int) -> memoryview | None:
        """The whole record starting at ``offset`` (its TOTALSIZE read first), or None."""
        found = self._locate(offset)
        if found is None:
            return None
        mapped, pos = found
        if pos + END_FILE_MIN_BLANK_LENGTH > mapped.wrote_position:
            return None
        header = _slice(mapped, pos, END_FILE_MIN_BLANK_LENGTH)
        if header is None:
            return None
        size, magic = peek_size_magic(header, 0)
        if magic != MESSAGE_MAGIC or size <= 0 or pos + size > mapped.wrote_position:
            return None
        return _slice(mapped, pos, size)

    def _locate(self, offset: int) -> tuple[MappedFile, int] | None:
        mapped = self.queue.find_mapped_file_by_offset(offset)
        if mapped is None:
            return None
        return mapped, offset - mapped.file_from_offset

    # -- replication ---------------------------------------------------------------------

    def append_data(self, start_offset: int, data: bytes | memoryview) -> bool:
        """Append raw commitlog bytes received from a master at ``start_offset``.

        The data must continue the log exactly and stay within one file (a master sends
        one file's bytes at a time).  Records are dispatched afterwards by the store.
        """
        with self.lock:
            try:
                mapped = self.queue.get_last_mapped_file(start_offset)
            except StoreError as exc:
                log.error("%s", exc)
                return False
            if mapped is None or mapped.file_from_offset + mapped.wrote_position != start_offset:
                return False
            return mapped.append(data)

    # -- recovery ------------------------------------------------------------------------

    def scan(
        self,
        start_offset: int,
        *,
        check_crc: bool,
        on_record: Callable[[DispatchInfo], None] | None = None,
    ) -> int:
        """Walk valid records from ``start_offset``; returns the offset where they end.

        BLANK records lead to the next file; a zero size, an unknown magic, a record reaching
        past the written bytes, a record that fails validation (length fields, CRC when
        ``check_crc``) or one whose PHYSICALOFFSET field is not its own offset ends the walk.
        ``on_record`` gets every valid record.  Only bytes below each file's wrote position
        are read.
        """
        mapped = self.queue.find_mapped_file_by_offset(start_offset)
        if mapped is None:
            return start_offset
        pos = start_offset - mapped.file_from_offset
        while True:
            limit = mapped.wrote_position
            view = mapped.view[:limit]
            base = mapped.file_from_offset
            for frame in iter_frames(view, pos, limit):
                at, end, prefix, _, body_pos, body_end, _ = frame
                if check_crc:
                    crc = zlib.crc32(view[body_pos:body_end]) & CRC_MASK
                    if crc != prefix[2]:
                        log.warning(
                            "commitlog %s: record at offset %d: body CRC %d != stored %d",
                            mapped.file_name,
                            at,
                            crc,
                            prefix[2],
                        )
                        return base + at
                if prefix[6] != base + at:
                    log.warning(
                        "commitlog %s: record at %d claims offset %d",
                        mapped.file_name,
                        at,
                        prefix[6],
                    )
                    return base + at
                if on_record is not None:
                    on_record(dispatch_info(view, frame))
                pos = end
            if pos + END_FILE_MIN_BLANK_LENGTH > limit:
                return base + pos
            size, magic = peek_size_magic(view, pos)
            if magic != BLANK_MAGIC or size != mapped.file_size - pos:
                if magic == MESSAGE_MAGIC and size > 0 and pos + size <= limit:
                    try:
                        frame_at(view, pos, limit)
                    except RecordError as exc:
                        log.warning("commitlog %s: %s", mapped.file_name, exc)
                return base + pos
            following = self.queue.find_mapped_file_by_offset(mapped.file_tail_offset)
            if following is None:
                return mapped.file_tail_offset
            mapped, pos = following, 0

    def recovery_start(self, abnormal: bool, min_timestamp: int) -> int:
        """Where recovery starts walking.

        Normal: the third file from the end.  Abnormal: the newest file whose first record
        was stored at or before ``min_timestamp`` (from the checkpoint), else the first file.
        """
        files = self.queue.files
        if not files:
            return 0
        if not abnormal:
            return files[max(len(files) - NORMAL_RECOVERY_FILES, 0)].file_from_offset
        for mapped in reversed(files):
            size, magic = peek_size_magic(mapped.view, 0)
            if magic != MESSAGE_MAGIC or size <= 0:
                continue
            stored = store_timestamp_at(mapped.view, 0)
            if 0 < stored <= min_timestamp:
                return mapped.file_from_offset
        return files[0].file_from_offset

    def truncate(self, end_offset: int) -> list[TruncatedRange]:
        """Cut the log at ``end_offset`` (recovery); returns what was cut."""
        with self.lock:
            return self.queue.truncate_dirty_files(end_offset)

    # -- expiry --------------------------------------------------------------------------

    def delete_expired_files(
        self, expired_before: float, clean_immediately: bool, max_files: int
    ) -> list[MappedFile]:
        """Delete up to ``max_files`` oldest files last modified before ``expired_before``.

        ``expired_before`` is in seconds since the epoch; with ``clean_immediately`` age does
        not matter.  Deletion stops at the first file to keep; the file being written is
        never deleted.
        """
        deleted = 0

        def expired(mapped: MappedFile) -> bool:
            nonlocal deleted
            if deleted >= max_files:
                return False
            if clean_immediately or mapped.mtime() < expired_before:
                deleted += 1
                return True
            return False

        return self.queue.delete_leading_files(expired)
