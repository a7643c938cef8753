"""The stored message record's codec: encoding, decoding, dispatch fields, batches.

The byte layout (RocketMQ 4.x "V1", big-endian) and the framing of a record are
:mod:`rmq.common.recordwalk`'s; this module encodes and decodes whole records on top of it.

Writing: ``encode_record_into`` packs one record into a preallocated writable buffer (an mmap
of a commitlog file, or a bytearray) with two ``pack_into`` calls and slice copies of body,
topic and properties, nothing else: hosts come pre-packed (``rmq.common.msgid.pack_host``,
once per connection), topic and properties come as UTF-8 bytes, and the SYSFLAG host bits are
set from the host lengths so a record can never disagree with itself.  A store that encodes
ahead of its append lock patches QUEUEOFFSET, PHYSICALOFFSET and STORETIMESTAMP afterwards
with ``patch_record``.

Batches (SEND_BATCH_MESSAGE) are stored in two steps so that the part under the store's
append lock is one tight loop: ``prepare_batch`` walks the batch body once, outside the lock,
and works out everything that does not depend on where the batch goes (each record's size,
BODYCRC, FLAG, the bytes after its body, and the consume queue and index fields read from its
properties); ``encode_batch_into`` then writes every record of the batch with one
``pack_into`` of the fixed part and two slice copies each, the first record's TOTALSIZE last.

Reading: ``decode_record`` frames the record with ``recordwalk.frame_at`` (magic, bounds,
TOTALSIZE equal to what its length fields add up to; ``RecordError`` naming the offset
otherwise).
Bodies are copied out so a record outlives the mapped file it came from.  Hot paths that do
not need a whole record use ``read_dispatch_info`` (what consume queue and index dispatch
need, also from a frame of ``recordwalk.iter_frames``: ``dispatch_info``).

Also here: the SEND_BATCH_MESSAGE body codec.  A record's JSON form (the "message record" of
``rmq consume``, ``rmq inspect`` and the Spark export) is :mod:`rmq.common.jsonrecord`'s.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

from rmq.common import compiled
from rmq.common.compression import decompress_body
from rmq.common.javahash import tags_code
from rmq.common.msgconst import (
    KEY_SEPARATOR,
    PROPERTY_KEYS,
    PROPERTY_TAGS,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
)
from rmq.common.msgid import IPV4_HOST_LENGTH, IPV6_HOST_LENGTH, host_str, offset_msg_id
from rmq.common.properties import decode_properties_bytes, merge_batch_properties
from rmq.common.recordwalk import (
    CRC_MASK,
    HEADS,
    HOST_BITS,
    LAYOUTS,
    MAX_PROPERTIES_BYTES,
    MAX_TOPIC_BYTES,
    MESSAGE_MAGIC,
    TRAILER_LENGTH,
    Frame,
    PropertiesSizeError,
    RecordError,
    body_crc,
    frame_at,
)

_INT = struct.Struct(">i")
_SHORT = struct.Struct(">h")
_LONG = struct.Struct(">q")

Buffer = bytes | bytearray | memoryview
"""A bytes-like body or property string.  Record buffers are typed ``Any`` so mmaps fit too."""


def record_size(
    body_len: int, topic_len: int, props_len: int, born_v6: bool, store_v6: bool
) -> int:
    """TOTALSIZE of a record with these lengths (topic and properties in UTF-8 bytes)."""
    fixed = LAYOUTS[born_v6 | store_v6 << 1].body_pos + TRAILER_LENGTH
    return fixed + body_len + topic_len + props_len


# Writing.


def encode_record_into(
    buf: Any,
    pos: int,
    *,
    queue_id: int,
    flag: int,
    queue_offset: int,
    physical_offset: int,
    sys_flag: int,
    born_timestamp: int,
    born_host: bytes,
    store_timestamp: int,
    store_host: bytes,
    reconsume_times: int,
    prepared_transaction_offset: int,
    body: Buffer,
    topic_bytes: bytes,
    properties_bytes: bytes,
) -> int:
    """Write one record at ``buf[pos:]`` and return its size.

    ``buf`` is any writable buffer (mmap, bytearray, writable memoryview).  Hosts are the
    packed 8/20-byte form of ``rmq.common.msgid.pack_host``; the SYSFLAG host bits are set
    from their lengths.  BODYCRC is computed here.  Raises ``RecordError`` when the topic or
    properties are too long or the record does not fit in ``buf``; nothing past ``pos`` is
    written then.
    """
    topic_len = len(topic_bytes)
    props_len = len(properties_bytes)
    if topic_len > MAX_TOPIC_BYTES:
        raise RecordError(f"topic is {topic_len} bytes; a record allows at most {MAX_TOPIC_BYTES}")
    if props_len > MAX_PROPERTIES_BYTES:
        raise _properties_size_error(props_len)
    born_len = len(born_host)
    store_len = len(store_host)
    if born_len not in (IPV4_HOST_LENGTH, IPV6_HOST_LENGTH) or store_len not in (
        IPV4_HOST_LENGTH,
        IPV6_HOST_LENGTH,
    ):
        raise RecordError(f"hosts are 8 or 20 bytes, got {born_len} and {store_len}")
    host_bits = (born_len == IPV6_HOST_LENGTH) | (store_len == IPV6_HOST_LENGTH) << 1
    head = HEADS[host_bits]
    body_len = len(body)
    body_pos = pos + head.size
    topic_pos = body_pos + body_len + 1
    props_pos = topic_pos + topic_len + 2
    end = props_pos + props_len
    if end > len(buf):
        raise RecordError(f"a {end - pos}-byte record at offset {pos} does not fit the buffer")
    head.pack_into(
        buf,
        pos,
        end - pos,
        MESSAGE_MAGIC,
        zlib.crc32(body) & CRC_MASK,
        queue_id,
        flag,
        queue_offset,
        physical_offset,
        (sys_flag & ~HOST_BITS) | host_bits << 4,
        born_timestamp,
        born_host,
        store_timestamp,
        store_host,
        reconsume_times,
        prepared_transaction_offset,
        body_len,
    )
    buf[body_pos : topic_pos - 1] = body
    buf[topic_pos - 1] = topic_len
    buf[topic_pos : props_pos - 2] = topic_bytes
    _SHORT.pack_into(buf, props_pos - 2, props_len)
    buf[props_pos:end] = properties_bytes
    return end - pos


def _properties_size_error(props_len: int) -> PropertiesSizeError:
    return PropertiesSizeError(
        f"properties are {props_len} bytes; a record allows at most {MAX_PROPERTIES_BYTES}"
    )


# Reading.


def _text(buf: Any, start: int, end: int) -> str:
    return str(buf[start:end], "utf-8", "replace")


class MessageRecord(NamedTuple):
    """One decoded record (a NamedTuple: immutable and cheap to build).

    Hosts render as ``ip:port`` / ``[ipv6]:port``.

    ``body`` is the body as stored (compressed when the sysFlag says so), or None when it
    was not read; ``offset_msg_id`` is recomputed from the store host and physical offset.
    """

    total_size: int
    magic: int
    body_crc: int
    queue_id: int
    flag: int
    queue_offset: int
    physical_offset: int
    sys_flag: int
    born_timestamp: int
    born_host: str
    store_timestamp: int
    store_host: str
    reconsume_times: int
    prepared_transaction_offset: int
    body: bytes | None
    topic: str
    properties: dict[str, str]
    offset_msg_id: str

    @property
    def tags(self) -> str | None:
        return self.properties.get(PROPERTY_TAGS)

    @property
    def keys(self) -> list[str]:
        """KEYS split on spaces, empty tokens dropped (the keys the index holds)."""
        keys = self.properties.get(PROPERTY_KEYS)
        return [key for key in keys.split(KEY_SEPARATOR) if key] if keys else []

    @property
    def uniq_key(self) -> str | None:
        return self.properties.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)

    @property
    def msg_id(self) -> str:
        """What clients call the message id: UNIQ_KEY when present, else the offset id."""
        return self.uniq_key or self.offset_msg_id

    def body_crc_matches(self) -> bool:
        """Whether BODYCRC matches the stored body (True when the body was not read)."""
        return self.body is None or zlib.crc32(self.body) & CRC_MASK == self.body_crc

    def decompressed_body(self) -> bytes | None:
        """The body a consumer sees (raises ``CompressionError`` for an unreadable codec)."""
        return None if self.body is None else decompress_body(self.body, self.sys_flag)


def decode_record(buf: Any, pos: int = 0, *, with_body: bool = True) -> MessageRecord:
    """Decode the record at ``buf[pos:]``; raises ``RecordError`` if it is not a valid one."""
    return _decode(buf, pos, len(buf), with_body)


def _decode(buf: Any, pos: int, limit: int, with_body: bool) -> MessageRecord:
    head, body_pos, topic_pos, topic_len, props_pos, end = frame_at(buf, pos, limit)
    body = None
    if with_body:
        body = buf[body_pos : topic_pos - 1]
        if type(body) is not bytes:
            body = bytes(body)
    store_host = head[11]
    return MessageRecord(
        head[0],
        head[1],
        head[2],
        head[3],
        head[4],
        head[5],
        head[6],
        head[7],
        head[8],
        host_str(head[9]),
        head[10],
        host_str(store_host),
        head[12],
        head[13],
        body,
        _text(buf, topic_pos, topic_pos + topic_len),
        decode_properties_bytes(buf[props_pos:end]),
        offset_msg_id(store_host, head[6]),
    )


def iter_records(
    buf: Any, start: int = 0, end: int | None = None, *, with_body: bool = True
) -> Iterator[tuple[int, MessageRecord]]:
    """Yield ``(position, record)`` for records laid end to end in ``buf[start:end]``.

    Stops quietly at the end or at the first record that does not decode, as the Java
    client does with pull and query bodies.
    """
    limit = len(buf) if end is None else min(end, len(buf))
    pos = start
    while pos < limit:
        try:
            record = _decode(buf, pos, limit, with_body)
        except RecordError:
            return
        yield pos, record
        pos += record.total_size


class DispatchInfo(NamedTuple):
    """What consume queue and index dispatch need from a record, without hosts or body."""

    total_size: int
    topic: str
    queue_id: int
    queue_offset: int
    physical_offset: int
    sys_flag: int
    store_timestamp: int
    prepared_transaction_offset: int
    tags_code: int
    keys: str | None
    uniq_key: str | None
    properties: dict[str, str]


def read_dispatch_info(buf: Any, pos: int, *, check_crc: bool = False) -> DispatchInfo:
    """Validate the record at ``pos`` and read its dispatch fields (and optionally its CRC).

    ``tags_code`` is the hash of TAGS; for delayed messages in SCHEDULE_TOPIC_XXXX the
    store replaces it with the delivery time (see ``rmq.common.delay``).
    """
    head, body_pos, topic_pos, topic_len, props_pos, end = frame_at(buf, pos, len(buf))
    if check_crc:
        crc = body_crc(buf, body_pos, topic_pos - 1)
        if crc != head[2]:
            raise RecordError(f"record at offset {pos}: body CRC {crc} != stored {head[2]}")
    properties = decode_properties_bytes(buf[props_pos:end])
    return DispatchInfo(
        head[0],
        _text(buf, topic_pos, topic_pos + topic_len),
        head[3],
        head[5],
        head[6],
        head[7],
        head[10],
        head[13],
        tags_code(properties.get(PROPERTY_TAGS)),
        properties.get(PROPERTY_KEYS),
        properties.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX),
        properties,
    )


def dispatch_info(buf: Any, frame: Frame) -> DispatchInfo:
    """:func:`read_dispatch_info` of a record framed by ``recordwalk.iter_frames`` (no CRC)."""
    pos, end, prefix, layout, _, body_end, topic_end = frame
    properties = decode_properties_bytes(buf[topic_end + 2 : end])
    return DispatchInfo(
        prefix[0],
        _text(buf, body_end + 1, topic_end),
        prefix[3],
        prefix[5],
        prefix[6],
        prefix[7],
        _LONG.unpack_from(buf, pos + layout.store_timestamp_pos)[0],
        _LONG.unpack_from(buf, pos + layout.prepared_transaction_offset_pos)[0],
        tags_code(properties.get(PROPERTY_TAGS)),
        properties.get(PROPERTY_KEYS),
        properties.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX),
        properties,
    )


# SEND_BATCH_MESSAGE bodies.

_BATCH_HEAD = struct.Struct(">iiiii")  # TOTALSIZE, MAGICCODE, BODYCRC, FLAG, body length
_BATCH_OVERHEAD = _BATCH_HEAD.size + 2


class BatchMessage(NamedTuple):
    """One inner message of a batch; ``body`` and ``properties`` are views of the request body."""

    flag: int
    body: memoryview
    properties: memoryview


def iter_batch_messages(data: Buffer) -> Iterator[BatchMessage]:
    """Walk a SEND_BATCH_MESSAGE body as the broker does.

    Only the FLAG, body length and properties length are read; the inner TOTALSIZE,
    MAGICCODE and BODYCRC are ignored.  A truncated body raises ``RecordError``.
    """
    return map(BatchMessage._make, zip(*_split_batch(data), strict=True))


def _split_batch(data: Buffer) -> tuple[list[int], list[memoryview], list[memoryview]]:
    """The FLAGs, bodies and property strings of a batch body (views of ``data``)."""
    view = memoryview(data)
    limit = len(view)
    unpack_head = _BATCH_HEAD.unpack_from
    unpack_short = _SHORT.unpack_from
    head_size = _BATCH_HEAD.size
    flags: list[int] = []
    bodies: list[memoryview] = []
    properties: list[memoryview] = []
    pos = 0
    while pos < limit:
        body_pos = pos + head_size
        if body_pos > limit:
            raise RecordError(f"truncated batch message at offset {pos}")
        _, _, _, flag, body_len = unpack_head(view, pos)
        props_len_pos = body_pos + body_len
        if body_len < 0 or props_len_pos + 2 > limit:
            raise RecordError(f"batch message at offset {pos}: body length {body_len} overruns")
        (props_len,) = unpack_short(view, props_len_pos)
        end = props_len_pos + 2 + props_len
        if props_len < 0 or end > limit:
            raise RecordError(
                f"batch message at offset {pos}: properties length {props_len} overruns"
            )
        flags.append(flag)
        bodies.append(view[body_pos:props_len_pos])
        properties.append(view[props_len_pos + 2 : end])
        pos = end
    return flags, bodies, properties


class PreparedBatch(NamedTuple):
    """A batch body made ready by :func:`prepare_batch`: one entry per record, in order.

    ``trailers[i]`` are the bytes after record ``i``'s body (topic length, topic, properties
    length, properties, the batch-level properties merged in); ``body_crcs`` are BODYCRCs;
    ``tags_codes``, ``keys`` and ``uniq_keys`` are the dispatch fields read from each
    record's properties.  ``total_size`` is the sum of ``sizes``.
    """

    host_bits: int
    total_size: int
    flags: list[int]
    bodies: list[memoryview]
    trailers: list[bytes]
    sizes: list[int]
    body_crcs: list[int]
    tags_codes: list[int]
    keys: list[str | None]
    uniq_keys: list[str | None]


_DISPATCH_PROPERTIES = (PROPERTY_TAGS, PROPERTY_KEYS, PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)


def prepare_batch(
    data: Buffer, batch_properties: bytes, topic_bytes: bytes, *, born_v6: bool, store_v6: bool
) -> PreparedBatch:
    """Walk a SEND_BATCH_MESSAGE body once and work out its records (see :class:`PreparedBatch`).

    Each inner message's properties get ``batch_properties`` appended (as the broker stores
    them, ``merge_batch_properties``); its TAGS, KEYS and UNIQ_KEY are those of the merged
    string.  Raises ``PropertiesSizeError`` when a merged string is too long and
    ``RecordError`` for a malformed body or a topic longer than a record allows.
    """
    topic_len = len(topic_bytes)
    if topic_len > MAX_TOPIC_BYTES:
        raise RecordError(f"topic is {topic_len} bytes; a record allows at most {MAX_TOPIC_BYTES}")
    flags, bodies, inner_properties = _split_batch(data)
    host_bits = born_v6 | store_v6 << 1
    head_size = LAYOUTS[host_bits].body_pos
    topic_part = bytes((topic_len,)) + topic_bytes
    pack_short = _SHORT.pack
    # Later pairs win when the merged string is decoded: a dispatch property the batch sets
    # overrides the inner message's own.
    batch_map = decode_properties_bytes(batch_properties)
    overrides = {name: batch_map[name] for name in _DISPATCH_PROPERTIES if name in batch_map}
    trailers: list[bytes] = []
    sizes: list[int] = []
    body_crcs: list[int] = []
    tags_codes: list[int] = []
    keys: list[str | None] = []
    uniq_keys: list[str | None] = []
    total = 0
    for body, inner in zip(bodies, inner_properties, strict=True):
        merged = merge_batch_properties(inner, batch_properties)
        props_len = len(merged)
        if props_len > MAX_PROPERTIES_BYTES:
            raise _properties_size_error(props_len)
        trailer = b"".join((topic_part, pack_short(props_len), merged))
        size = head_size + len(body) + len(trailer)
        total += size
        trailers.append(trailer)
        sizes.append(size)
        body_crcs.append(zlib.crc32(body) & CRC_MASK)
        properties = decode_properties_bytes(inner)
        if overrides:
            properties.update(overrides)
        tags_codes.append(tags_code(properties.get(PROPERTY_TAGS)))
        keys.append(properties.get(PROPERTY_KEYS))
        uniq_keys.append(properties.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX))
    return PreparedBatch(
        host_bits,
        total,
        flags,
        bodies,
        trailers,
        sizes,
        body_crcs,
        tags_codes,
        keys,
        uniq_keys,
    )


def encode_batch_into(
    buf: Any,
    pos: int,
    batch: PreparedBatch,
    *,
    queue_id: int,
    queue_offset: int,
    physical_offset: int,
    sys_flag: int,
    born_timestamp: int,
    born_host: bytes,
    store_timestamp: int,
    store_host: bytes,
    reconsume_times: int,
) -> None:
    """Write the records of ``batch`` at ``buf[pos:]``, laid end to end.

    Record ``i`` gets queue offset ``queue_offset + i`` and physical offset
    ``physical_offset`` plus the sizes before it.  ``buf[pos:pos + batch.total_size]`` must
    be zeros: every byte is written in order except the first record's TOTALSIZE, written
    last, so a writer stopped in the middle leaves TOTALSIZE 0 where the batch starts.
    Raises ``RecordError`` when a host length disagrees with the batch, the batch does not
    fit, or a field is out of range; the range is all zeros again then.
    """
    host_bits = batch.host_bits
    layout = LAYOUTS[host_bits]
    if len(born_host) != layout.born_host_length or len(store_host) != layout.store_host_length:
        raise RecordError(
            f"hosts of {len(born_host)} and {len(store_host)} bytes do not match the batch "
            f"layout ({layout.born_host_length} and {layout.store_host_length})"
        )
    start = pos
    end = pos + batch.total_size
    if end > len(buf):
        raise RecordError(f"a {batch.total_size}-byte batch at offset {pos} does not fit")
    pack_head = HEADS[host_bits].pack_into
    head_size = layout.body_pos
    sys_flag = (sys_flag & ~HOST_BITS) | host_bits << 4
    base = physical_offset - pos
    sizes = batch.sizes
    try:
        for flag, body, trailer, size, crc in zip(
            batch.flags,
            batch.bodies,
            batch.trailers,
            [0, *sizes[1:]],
            batch.body_crcs,
            strict=True,
        ):
            body_len = len(body)
            pack_head(
                buf,
                pos,
                size,
                MESSAGE_MAGIC,
                crc,
                queue_id,
                flag,
                queue_offset,
                base + pos,
                sys_flag,
                born_timestamp,
                born_host,
                store_timestamp,
                store_host,
                reconsume_times,
                0,
                body_len,
            )
            pos += head_size
            buf[pos : pos + body_len] = body
            pos += body_len
            buf[pos : pos + len(trailer)] = trailer
            pos += len(trailer)
            queue_offset += 1
    except struct.error as exc:
        buf[start:end] = bytes(end - start)
        raise RecordError(f"batch at offset {start}: {exc}") from exc
    buf[start : start + 4] = _INT.pack(sizes[0])  # one 4-byte store, never half written


def encode_batch(messages: Iterable[tuple[int, Buffer, bytes]]) -> bytes:
    """Build a SEND_BATCH_MESSAGE body from ``(flag, body, properties_bytes)`` triples.

    Like the Java client, MAGICCODE and BODYCRC are written as 0.
    """
    parts: list[Buffer] = []
    for flag, body, properties in messages:
        if len(properties) > MAX_PROPERTIES_BYTES:
            raise RecordError(
                f"properties are {len(properties)} bytes; at most {MAX_PROPERTIES_BYTES} allowed"
            )
        size = _BATCH_OVERHEAD + len(body) + len(properties)
        parts += (
            _BATCH_HEAD.pack(size, 0, 0, flag, len(body)),
            body,
            _SHORT.pack(len(properties)),
            properties,
        )
    return b"".join(parts)


# The compiled twins (rmq.common.compiled); the functions above stay the reference.
_pure_encode_record_into = encode_record_into
_pure_encode_batch_into = encode_batch_into
_pure_prepare_batch = prepare_batch
_pure_decode = _decode
_fast = compiled.load("rmq.common._speedups")
if _fast is not None:
    _decode = _fast.decode
    encode_record_into = _fast.encode_record_into
    encode_batch_into = _fast.encode_batch_into
    prepare_batch = _fast.prepare_batch
