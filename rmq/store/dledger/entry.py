"""DLedger's entry and index-unit byte layouts (DLedger 0.3.1.2, as RocketMQ 4.9.8 uses it).

A data file entry is a 48-byte big-endian header and a body::

    off size field
      0    4 magic        1 (CURRENT_MAGIC); -1 marks the blank that closes a file
      4    4 size         48 + body length
      8    8 index        0-based, consecutive
     16    8 term         leader term that appended it
     24    8 pos          absolute data-file offset of the entry itself
     32    4 channel      0
     36    4 chainCrc     0 (never computed by 0.3.1.2)
     40    4 bodyCrc      0 (never computed by 0.3.1.2)
     44    4 body length
     48    n body

When ``size + 8`` bytes do not fit in the rest of a data file, the rest is closed with a blank
(int -1, int remaining length) and the entry goes to the next file.  Index unit *i* sits at
byte ``i * 32`` of the index stream: magic int, pos long, size int, index long, term long.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, replace
from typing import Any, Final

CURRENT_MAGIC: Final = 1
BLANK_MAGIC: Final = -1
HEADER_SIZE: Final = 48
"""Bytes before the body (Apache names this BODY_OFFSET; its HEADER_SIZE constant is 44,
the header without the body-length field, used only in a size sanity check)."""
POS_OFFSET: Final = 24
MIN_BLANK_LEN: Final = 8
INDEX_UNIT_SIZE: Final = 32

_HEADER: Final = struct.Struct(">iiqqqiiii")
_INDEX: Final = struct.Struct(">iqiqq")
_BLANK: Final = struct.Struct(">ii")
_LONG: Final = struct.Struct(">q")
_INT: Final = struct.Struct(">i")

assert _HEADER.size == HEADER_SIZE and _INDEX.size == INDEX_UNIT_SIZE


class EntryError(ValueError):
    """Bytes that are not a valid entry or index unit."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One DLedger entry; ``size`` is derived (48 + body length)."""

    index: int
    term: int
    pos: int
    body: bytes
    magic: int = CURRENT_MAGIC
    channel: int = 0
    chain_crc: int = 0
    body_crc: int = 0

    @property
    def size(self) -> int:
        return HEADER_SIZE + len(self.body)

    def with_pos(self, pos: int, body: bytes) -> Entry:
        return replace(self, pos=pos, body=body)

    def same_as(self, other: Entry | None) -> bool:
        """DLedgerEntry.equals: size, magic, index, term, channel, pos and body (not CRCs)."""
        return (
            other is not None
            and self.size == other.size
            and self.magic == other.magic
            and self.index == other.index
            and self.term == other.term
            and self.channel == other.channel
            and self.pos == other.pos
            and self.body == other.body
        )


@dataclass(frozen=True, slots=True)
class EntryHeader:
    magic: int
    size: int
    index: int
    term: int
    pos: int
    channel: int
    chain_crc: int
    body_crc: int
    body_size: int


@dataclass(frozen=True, slots=True)
class IndexUnit:
    magic: int
    pos: int
    size: int
    index: int
    term: int


def encode_entry(entry: Entry) -> bytearray:
    """The entry's bytes (header and body)."""
    buf = bytearray(entry.size)
    _HEADER.pack_into(
        buf,
        0,
        entry.magic,
        entry.size,
        entry.index,
        entry.term,
        entry.pos,
        entry.channel,
        entry.chain_crc,
        entry.body_crc,
        len(entry.body),
    )
    buf[HEADER_SIZE:] = entry.body
    return buf


def set_pos(buf: Any, pos: int) -> None:
    """Write the entry's pos field into encoded entry bytes."""
    _LONG.pack_into(buf, POS_OFFSET, pos)


def read_header(buf: Any, offset: int = 0) -> EntryHeader:
    """The header at ``buf[offset:]``; raises EntryError when fewer than 48 bytes are left."""
    if len(buf) - offset < HEADER_SIZE:
        raise EntryError(f"entry header at {offset}: only {len(buf) - offset} bytes left")
    return EntryHeader(*_HEADER.unpack_from(buf, offset))


def peek_magic(buf: Any, offset: int) -> int:
    return int(_INT.unpack_from(buf, offset)[0])


def decode_entry(buf: Any, offset: int = 0) -> Entry:
    """The entry at ``buf[offset:]``, checked for a consistent size and a whole body."""
    head = read_header(buf, offset)
    if head.size != HEADER_SIZE + head.body_size or head.body_size < 0:
        raise EntryError(f"entry at {offset}: size {head.size} != 48 + {head.body_size}")
    end = offset + head.size
    if end > len(buf):
        raise EntryError(f"entry at {offset}: {head.size} bytes but {len(buf) - offset} left")
    return Entry(
        head.index,
        head.term,
        head.pos,
        bytes(buf[offset + HEADER_SIZE : end]),
        head.magic,
        head.channel,
        head.chain_crc,
        head.body_crc,
    )


def encode_blank(length: int) -> bytes:
    """The blank closing a data file: int -1, int ``length``, zeros to ``length`` bytes."""
    return _BLANK.pack(BLANK_MAGIC, length) + bytes(length - MIN_BLANK_LEN)


def encode_index(pos: int, size: int, magic: int, index: int, term: int) -> bytes:
    return _INDEX.pack(magic, pos, size, index, term)


def decode_index(buf: Any, offset: int = 0) -> IndexUnit:
    if len(buf) - offset < INDEX_UNIT_SIZE:
        raise EntryError(f"index unit at {offset}: only {len(buf) - offset} bytes left")
    return IndexUnit(*_INDEX.unpack_from(buf, offset))
