"""The stored message record's byte layout: the one place in rmq that knows it.

A record is what the commitlog holds and what PULL_MESSAGE / QUERY_MESSAGE / VIEW_MESSAGE_BY_ID
bodies concatenate (RocketMQ 4.x "V1" layout, all integers big-endian)::

    TOTALSIZE i32 | MAGICCODE u32 | BODYCRC i32 | QUEUEID i32 | FLAG i32 | QUEUEOFFSET i64
    | PHYSICALOFFSET i64 | SYSFLAG i32 | BORNTIMESTAMP i64 | BORNHOST 8/20 | STORETIMESTAMP i64
    | STOREHOSTADDRESS 8/20 | RECONSUMETIMES i32 | PREPARED TRANSACTION OFFSET i64
    | BODY (i32 length + bytes) | TOPIC (i8 length + UTF-8) | PROPERTIES (i16 length + UTF-8)

A host is 8 bytes (IPv4 + int32 port) or 20 (IPv6 + port); SYSFLAG bits 4 and 5 say which.
The four host-width combinations give four layouts (``LAYOUTS``, indexed by
``(sys_flag >> 4) & 3``), each with one precompiled ``struct.Struct`` for its fixed part
(``HEADS``).  A commitlog file ends with a BLANK record (TOTALSIZE = the rest of the file,
BLANK magic) or with zeros.

Framing a record means checking its magic, its bounds and that TOTALSIZE equals the size its
length fields add up to.  Two functions do it, with the same checks:

* :func:`frame_at` frames one record and raises ``RecordError`` naming the first check that
  failed; the codec (:mod:`rmq.common.message`) decodes from it;
* :func:`iter_frames` frames the records laid end to end in a buffer and stops, quietly, at the
  first thing that is not a valid message record (a BLANK, zeros, another magic, damage, the
  end): the walk of commitlog recovery, dispatch and every offline scan.  It reads only the
  fields every layout shares (:class:`Frame`); the callers read the rest from the frame's
  layout.

Also here: the position readers of the hot paths (``peek_size_magic``, ``store_timestamp_at``)
and ``body_crc``.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from typing import Any, NamedTuple

from rmq.common import compiled
from rmq.common.msgid import IPV4_HOST_LENGTH, IPV6_HOST_LENGTH
from rmq.common.sysflag import BORNHOST_V6_FLAG, STOREHOSTADDRESS_V6_FLAG

MESSAGE_MAGIC = 0xDAA320A7
MESSAGE_MAGIC_V2 = 0xDAA320AB  # RocketMQ 5.x two-byte topic length; recognised, not decoded
BLANK_MAGIC = 0xCBD43194
END_FILE_MIN_BLANK_LENGTH = 8
MAX_TOPIC_BYTES = 127
MAX_PROPERTIES_BYTES = 32767

# Offsets shared by every layout.
TOTAL_SIZE_POS = 0
MAGIC_POS = 4
BODY_CRC_POS = 8
QUEUE_ID_POS = 12
FLAG_POS = 16
QUEUE_OFFSET_POS = 20
PHYSICAL_OFFSET_POS = 28
SYS_FLAG_POS = 36
BORN_TIMESTAMP_POS = 40
BORN_HOST_POS = 48

HOST_BITS = BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG
TRAILER_LENGTH = 1 + 2  # topic length byte + properties length short


class RecordLayout(NamedTuple):
    """Where the host-width dependent fields sit for one born/store host combination."""

    born_host_length: int
    store_host_length: int
    store_timestamp_pos: int
    store_host_pos: int
    reconsume_times_pos: int
    prepared_transaction_offset_pos: int
    body_length_pos: int
    body_pos: int  # also the size of the fixed part including the body length


def _layout(born_v6: bool, store_v6: bool) -> RecordLayout:
    born = IPV6_HOST_LENGTH if born_v6 else IPV4_HOST_LENGTH
    store = IPV6_HOST_LENGTH if store_v6 else IPV4_HOST_LENGTH
    store_timestamp = BORN_HOST_POS + born
    store_host = store_timestamp + 8
    reconsume = store_host + store
    prepared = reconsume + 4
    body_length = prepared + 8
    return RecordLayout(
        born, store, store_timestamp, store_host, reconsume, prepared, body_length, body_length + 4
    )


LAYOUTS: tuple[RecordLayout, ...] = (
    _layout(False, False),
    _layout(True, False),
    _layout(False, True),
    _layout(True, True),
)
"""Indexed by ``(sys_flag >> 4) & 3``: bit 0 = born host IPv6, bit 1 = store host IPv6."""

HEADS = tuple(
    struct.Struct(f">iIiiiqqiq{layout.born_host_length}sq{layout.store_host_length}siqi")
    for layout in LAYOUTS
)
_SIZE_MAGIC = struct.Struct(">iI")
_INT = struct.Struct(">i")
_SHORT = struct.Struct(">h")
_LONG = struct.Struct(">q")
_TWO_LONGS = struct.Struct(">qq")
# TOTALSIZE, MAGICCODE, BODYCRC, QUEUEID, FLAG, QUEUEOFFSET, PHYSICALOFFSET, SYSFLAG: the
# fields every layout has at the same place.
_PREFIX = struct.Struct(">iIiiiqqi")
CRC_MASK = 0x7FFFFFFF
"""BODYCRC is ``zlib.crc32(body) & CRC_MASK``."""
MIN_RECORD_SIZE = LAYOUTS[0].body_pos + TRAILER_LENGTH
"""The smallest record: IPv4 hosts, empty body, topic and properties."""


class RecordError(ValueError):
    """Bytes that are not a valid message record at the given offset."""


class PropertiesSizeError(RecordError):
    """A property string longer than a record can hold (``MAX_PROPERTIES_BYTES``)."""


def layout_of(sys_flag: int) -> RecordLayout:
    """The field positions of a record with this sysFlag."""
    return LAYOUTS[(sys_flag >> 4) & 3]


def peek_size_magic(buf: Any, pos: int) -> tuple[int, int]:
    """TOTALSIZE and MAGICCODE (unsigned) at ``pos``, without any validation of the record."""
    if pos + 8 > len(buf):
        raise RecordError(f"truncated record at offset {pos}: fewer than 8 bytes left")
    size, magic = _SIZE_MAGIC.unpack_from(buf, pos)
    return size, magic


def _magic_error(pos: int, magic: int) -> RecordError:
    if magic == BLANK_MAGIC:
        return RecordError(f"blank (end-of-file) record at offset {pos}, not a message")
    if magic == MESSAGE_MAGIC_V2:
        return RecordError(
            f"record at offset {pos} uses the RocketMQ 5.x message format (magic 0xDAA320AB)"
        )
    return RecordError(f"bad magic 0x{magic:08X} at offset {pos}")


def frame_at(buf: Any, pos: int, limit: int) -> tuple[tuple[Any, ...], int, int, int, int, int]:
    """Validate the record at ``pos`` (ending by ``limit``) and locate its variable parts.

    Returns the unpacked fixed part (``HEADS`` of its layout) and the positions of body,
    topic (position, length), properties and the record's end; raises ``RecordError``
    naming the offset and the first check that failed.  It accepts exactly the records
    :func:`iter_frames` yields.
    """
    if pos < 0 or pos + MIN_RECORD_SIZE > limit:
        raise _short_record_error(buf, pos, limit)
    sys_flag = _INT.unpack_from(buf, pos + SYS_FLAG_POS)[0]
    head_struct = HEADS[(sys_flag >> 4) & 3]
    body_pos = pos + head_struct.size
    if body_pos > limit:
        raise _short_record_error(buf, pos, limit)
    head = head_struct.unpack_from(buf, pos)
    size = head[0]
    if head[1] != MESSAGE_MAGIC:
        raise _magic_error(pos, head[1])
    end = pos + size
    if size < body_pos - pos + TRAILER_LENGTH or end > limit:
        raise RecordError(
            f"truncated record at offset {pos}: TOTALSIZE {size}, {limit - pos} bytes available"
        )
    body_len = head[14]
    topic_pos = body_pos + body_len + 1
    if body_len < 0 or topic_pos + 2 > end:
        raise RecordError(f"record at offset {pos}: body length {body_len} overruns TOTALSIZE")
    topic_len = buf[topic_pos - 1]
    props_pos = topic_pos + topic_len + 2
    if topic_len > MAX_TOPIC_BYTES or props_pos > end:
        raise RecordError(f"record at offset {pos}: topic length {topic_len} is invalid")
    props_len = _SHORT.unpack_from(buf, props_pos - 2)[0]
    if props_len < 0 or props_pos + props_len != end:
        raise RecordError(
            f"record at offset {pos}: TOTALSIZE {size} does not match its fields "
            f"(body {body_len}, topic {topic_len}, properties {props_len} bytes)"
        )
    return head, body_pos, topic_pos, topic_len, props_pos, end


def _short_record_error(buf: Any, pos: int, limit: int) -> RecordError:
    """The error for a record cut short: report its magic when that much is there."""
    if pos >= 0 and pos + 8 <= limit:
        magic = _SIZE_MAGIC.unpack_from(buf, pos)[1]
        if magic != MESSAGE_MAGIC:
            return _magic_error(pos, magic)
    return RecordError(f"truncated record at offset {pos}: only {max(limit - pos, 0)} bytes left")


# Writing in place (the record itself is encoded by rmq.common.message).


def patch_record(
    buf: Any, pos: int, *, queue_offset: int, physical_offset: int, store_timestamp: int
) -> None:
    """Overwrite QUEUEOFFSET, PHYSICALOFFSET and STORETIMESTAMP of the record at ``pos``."""
    _TWO_LONGS.pack_into(buf, pos + QUEUE_OFFSET_POS, queue_offset, physical_offset)
    sys_flag = _INT.unpack_from(buf, pos + SYS_FLAG_POS)[0]
    _LONG.pack_into(buf, pos + layout_of(sys_flag).store_timestamp_pos, store_timestamp)


def encode_blank_into(buf: Any, pos: int, max_blank: int) -> None:
    """Write the end-of-file BLANK record: TOTALSIZE = ``max_blank``, BLANK magic (8 bytes)."""
    if max_blank < END_FILE_MIN_BLANK_LENGTH:
        raise RecordError(f"a blank record needs 8 bytes, only {max_blank} remain at {pos}")
    _SIZE_MAGIC.pack_into(buf, pos, max_blank, BLANK_MAGIC)


Frame = tuple[int, int, tuple[int, int, int, int, int, int, int, int], RecordLayout, int, int, int]
"""One record framed by :func:`iter_frames`, a plain tuple (the hot loops unpack it):
``(pos, end, prefix, layout, body_pos, body_end, topic_end)``.

``prefix`` is TOTALSIZE, MAGICCODE, BODYCRC, QUEUEID, FLAG, QUEUEOFFSET, PHYSICALOFFSET,
SYSFLAG (the fields at the same place in every layout); ``layout`` gives the positions of the
others (relative to ``pos``).  The body is ``buf[body_pos:body_end]``, the topic
``buf[body_end + 1:topic_end]`` and the properties ``buf[topic_end + 2:end]``; positions are
in the walked buffer.
"""

_BODY_OFFSETS = tuple(layout.body_pos for layout in LAYOUTS)


def iter_frames(buf: Any, pos: int, limit: int) -> Iterator[Frame]:
    """Frame the records laid end to end in ``buf[pos:limit]``, stopping quietly at the first
    position that holds no valid message record (the ``end`` of the last frame yielded, or
    ``pos``); :func:`frame_at` there says why, unless it is the end, a BLANK or zeros.

    The checks are those of :func:`frame_at`; a record is framed with three ``struct`` reads
    (the shared prefix, the body length, the properties length) and one byte (the topic
    length).
    """
    unpack_prefix = _PREFIX.unpack_from
    unpack_int = _INT.unpack_from
    unpack_short = _SHORT.unpack_from
    layouts = LAYOUTS
    body_offsets = _BODY_OFFSETS
    prefix_size = _PREFIX.size  # less than MIN_RECORD_SIZE: no record ends before it
    while pos + prefix_size <= limit:
        prefix = unpack_prefix(buf, pos)
        size = prefix[0]
        end = pos + size
        if prefix[1] != MESSAGE_MAGIC or size < MIN_RECORD_SIZE or end > limit:
            return
        host_bits = (prefix[7] >> 4) & 3
        body_pos = pos + body_offsets[host_bits]
        if body_pos + TRAILER_LENGTH > end:
            return
        body_end = body_pos + unpack_int(buf, body_pos - 4)[0]
        if not body_pos <= body_end <= end - TRAILER_LENGTH:
            return
        topic_end = body_end + 1 + buf[body_end]
        if (
            topic_end - body_end > MAX_TOPIC_BYTES + 1
            or topic_end + 2 > end
            or unpack_short(buf, topic_end)[0] != end - topic_end - 2
        ):
            return
        yield pos, end, prefix, layouts[host_bits], body_pos, body_end, topic_end
        pos = end


def record_place(buf: Any, pos: int, limit: int) -> tuple[int, int, int, int, bytes] | None:
    """Where the message record at ``pos`` belongs, read with two ``struct`` reads and a
    slice, without framing it: TOTALSIZE, QUEUEID, QUEUEOFFSET, PHYSICALOFFSET and the topic
    bytes; None when the magic is not the message magic or the record does not fit before
    ``limit`` (checks that entries point at their records, many at a time)."""
    if pos < 0 or pos + MIN_RECORD_SIZE > limit:
        return None
    size, magic, _, queue_id, _, queue_offset, physical_offset, sys_flag = _PREFIX.unpack_from(
        buf, pos
    )
    end = pos + size
    if magic != MESSAGE_MAGIC or size < MIN_RECORD_SIZE or end > limit:
        return None
    body_pos = pos + _BODY_OFFSETS[(sys_flag >> 4) & 3]
    body_end = body_pos + _INT.unpack_from(buf, body_pos - 4)[0]
    if not body_pos <= body_end <= end - TRAILER_LENGTH:
        return None
    topic_end = body_end + 1 + buf[body_end]
    if topic_end + 2 > end:
        return None
    return size, queue_id, queue_offset, physical_offset, buf[body_end + 1 : topic_end]


def body_crc(buf: Any, start: int, end: int) -> int:
    """BODYCRC of the body at ``buf[start:end]`` (no copy)."""
    with memoryview(buf) as view:
        return zlib.crc32(view[start:end]) & CRC_MASK


def store_timestamp_at(buf: Any, pos: int) -> int:
    """STORETIMESTAMP of the record at ``pos`` (used by search-by-time), unvalidated."""
    sys_flag = _INT.unpack_from(buf, pos + SYS_FLAG_POS)[0]
    timestamp: int = _LONG.unpack_from(buf, pos + layout_of(sys_flag).store_timestamp_pos)[0]
    return timestamp


# The compiled twins (rmq.common.compiled); the functions above stay the reference.
_pure_frame_at = frame_at
_pure_iter_frames = iter_frames
_fast = compiled.load("rmq.common._speedups")
if _fast is not None:
    frame_at = _fast.frame_at
    iter_frames = _fast.iter_frames
