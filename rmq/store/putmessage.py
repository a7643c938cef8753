"""What a put hands the store, what it gets back, and what an append hands dispatch.

:class:`InnerMessage` is a message as the broker hands it to
:meth:`~rmq.store.store.MessageStore.put_message` (or a SEND_BATCH_MESSAGE batch, to
:meth:`~rmq.store.store.MessageStore.put_messages`); :class:`PutMessageResult` is what the
put answers, with a :class:`PutMessageStatus` named as Apache's.  The commitlog
(:mod:`rmq.store.commitlog`) consumes the one and builds the other.  :class:`DispatchRequest`
is what the commitlog (after each single append) and recovery (for each record read back)
hand dispatch (:mod:`rmq.store.dispatch`).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import NamedTuple

from rmq.common.msgid import offset_msg_id


class PutMessageStatus(enum.Enum):
    """Outcome of a put, as Apache's ``PutMessageStatus``."""

    PUT_OK = enum.auto()
    FLUSH_DISK_TIMEOUT = enum.auto()
    FLUSH_SLAVE_TIMEOUT = enum.auto()
    SLAVE_NOT_AVAILABLE = enum.auto()
    SERVICE_NOT_AVAILABLE = enum.auto()
    CREATE_MAPPED_FILE_FAILED = enum.auto()
    MESSAGE_ILLEGAL = enum.auto()
    PROPERTIES_SIZE_EXCEEDED = enum.auto()
    OS_PAGECACHE_BUSY = enum.auto()
    UNKNOWN_ERROR = enum.auto()


class InnerMessage(NamedTuple):
    """A message as the broker hands it to the store (Apache's ``MessageExtBrokerInner``).

    ``properties`` is the UTF-8 property string to store.  ``tags_code``, ``keys`` (the raw
    KEYS value) and ``uniq_key`` are what the broker already read from the properties, for
    dispatch.  ``born_host`` is the packed 8/20-byte address (``rmq.common.msgid.pack_host``).
    ``delay_level`` is the parsed DELAY property (0 = none).

    For :meth:`~rmq.store.commitlog.CommitLog.put_messages` the same type is the batch
    header: ``body`` is the SEND_BATCH_MESSAGE body, ``properties`` the batch-level string
    appended to every inner message's own properties, and ``tags_code``/``keys``/``uniq_key``
    are ignored (each inner message carries its own).
    """

    topic: str
    queue_id: int
    body: bytes | memoryview
    properties: bytes = b""
    tags_code: int = 0
    keys: str | None = None
    uniq_key: str | None = None
    flag: int = 0
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: bytes = b"\x7f\x00\x00\x01\x00\x00\x00\x00"
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    delay_level: int = 0


class DispatchRequest(NamedTuple):
    """What dispatch needs of one stored record (Apache's ``DispatchRequest``): where its
    consume queue entry goes and what it holds, and its index keys.

    ``keys`` is the KEYS property as stored (space-separated), ``uniq_key`` the UNIQ_KEY;
    ``tags_code`` is the consume queue's (a parked delayed message's delivery time).  Built
    on every append, so always positionally (keyword arguments cost several times more).
    """

    topic: str
    queue_id: int
    queue_offset: int
    physical_offset: int
    size: int
    tags_code: int
    store_timestamp: int
    sys_flag: int
    keys: str | None
    uniq_key: str | None


class PutMessageResult:
    """What a put returns: status, where the record(s) went and their message ids.

    ``physical_offset`` is the offset of the first record, ``wrote_bytes`` the bytes of all
    records, ``queue_offset`` the first queue offset, ``msg_num`` the number of records.
    ``msg_id`` is the offset message id (comma-joined for a batch), computed on demand.
    ``topic`` and ``queue_id`` say where a stored message went (``SCHEDULE_TOPIC_XXXX`` and
    its level's queue for a delayed one).
    """

    __slots__ = (
        "msg_num",
        "physical_offset",
        "physical_offsets",
        "queue_id",
        "queue_offset",
        "status",
        "store_host",
        "store_timestamp",
        "topic",
        "wrote_bytes",
    )

    def __init__(
        self,
        status: PutMessageStatus,
        physical_offset: int = -1,
        wrote_bytes: int = 0,
        queue_offset: int = -1,
        store_timestamp: int = 0,
        store_host: bytes = b"",
        physical_offsets: Sequence[int] = (),
        topic: str = "",
        queue_id: int = -1,
    ) -> None:
        self.status = status
        self.physical_offset = physical_offset
        self.wrote_bytes = wrote_bytes
        self.queue_offset = queue_offset
        self.store_timestamp = store_timestamp
        self.store_host = store_host
        self.physical_offsets = physical_offsets
        self.topic = topic
        self.queue_id = queue_id
        self.msg_num = len(physical_offsets) if physical_offsets else int(wrote_bytes > 0)

    @property
    def ok(self) -> bool:
        return self.status is PutMessageStatus.PUT_OK

    @property
    def next_offset(self) -> int:
        """Commitlog offset just past the last record written (the flush target)."""
        return self.physical_offset + self.wrote_bytes

    @property
    def msg_id(self) -> str:
        """Offset message id(s) of the stored record(s); empty when nothing was stored."""
        if self.wrote_bytes <= 0:
            return ""
        offsets = self.physical_offsets or (self.physical_offset,)
        return ",".join(offset_msg_id(self.store_host, offset) for offset in offsets)

    def __repr__(self) -> str:
        return (
            f"PutMessageResult({self.status.name}, physical_offset={self.physical_offset}, "
            f"wrote_bytes={self.wrote_bytes}, queue_offset={self.queue_offset}, "
            f"msg_num={self.msg_num})"
        )
