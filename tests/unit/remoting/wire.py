"""Frames built byte by byte from the protocol description, independent of rmq's encoder."""

from __future__ import annotations

import json
import struct

from rmq.remoting.command import RemotingCommand
from rmq.remoting.frame import decode_frame


def frame(header: bytes, body: bytes = b"", serialize_type: int = 0) -> bytes:
    """length, serializeType<<24 | header length, header, body."""
    word = (serialize_type << 24) | len(header)
    return struct.pack(">iI", 4 + len(header) + len(body), word) + header + body


def cpp_header(fields: dict[str, object]) -> bytes:
    """A header as the C++ client writes it: jsoncpp FastWriter, keys sorted, trailing newline."""
    return (
        json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"
    ).encode()


def cpp_request(code: int, opaque: int, ext_fields: dict[str, object], body: bytes = b"") -> bytes:
    """A complete request frame of the C++ client (version 63, remark always present)."""
    header = {
        "code": code,
        "extFields": ext_fields,
        "flag": 0,
        "language": "CPP",
        "opaque": opaque,
        "remark": "",
        "version": 63,
    }
    return frame(cpp_header(header), body)


def binary_string(value: bytes, short: bool = False) -> bytes:
    return struct.pack(">h" if short else ">i", len(value)) + value


def binary_header(
    code: int,
    language: int,
    version: int,
    opaque: int,
    flag: int,
    remark: bytes,
    ext_fields: list[tuple[bytes, bytes]],
) -> bytes:
    """A ROCKETMQ binary header laid out field by field."""
    area = b"".join(binary_string(k, short=True) + binary_string(v) for k, v in ext_fields)
    return (
        struct.pack(">hbhii", code, language, version, opaque, flag)
        + binary_string(remark)
        + struct.pack(">i", len(area))
        + area
    )


def decode(data: bytes) -> RemotingCommand:
    """Decode a whole frame (length word included)."""
    (length,) = struct.unpack_from(">i", data)
    assert length == len(data) - 4
    return decode_frame(memoryview(data)[4:])
