"""Frames on the wire: splitting a TCP stream into frames, and the two header encodings.

A frame is (big-endian):

    int32 length                      bytes that follow: 4 + header length + body length
    int32 serializeType<<24 | hlen    0 = JSON header, 1 = ROCKETMQ binary header
    hlen bytes header
    body (the rest)

`FrameSplitter` cuts a byte stream into frames (memoryviews of everything after the length
word) and refuses lengths below 4 or frames larger than the maximum (16 MiB by default,
the length word included, as Netty counts it).  A chunk that holds whole frames is sliced
without copying; only a frame split across reads is assembled, once, when its last byte
arrives.

`decode_frame` reads one frame.  JSON headers are decoded with orjson and may end in
whitespace (the C++ client writes a trailing newline, counted in the header length); ext
field values may be JSON strings, numbers or booleans and become the text Java would make
of them (`true`/`false`, integer digits).  ROCKETMQ binary headers follow the Java reader:
a zero-length string reads as null, negative lengths and lengths beyond the header are
errors.  An unknown language name or byte reads as OTHER instead of failing the frame.
Anything that cannot be decoded raises `RemotingProtocolError`; the caller closes the
connection.

`encode_header_parts(cmd, body_length)` produces the length word, the type/length word and
the header, so that a writer can send the body buffers after it without joining them.  JSON
headers are written the way fastjson writes a Java command: keys in alphabetical order,
`remark` and `extFields` left out when null, `serializeTypeCurrentRPC` present.  Binary
headers write `ext_fields` in its own order, which puts a fast-codec header's fields first
(see `headers.py`).
"""

from __future__ import annotations

import struct

import orjson

from rmq.common import compiled
from rmq.remoting.codes import LanguageCode, SerializeType
from rmq.remoting.command import Buffer, RemotingCommand
from rmq.remoting.errors import RemotingProtocolError

DEFAULT_MAX_FRAME_SIZE = 16_777_216  # bytes, the 4-byte length word included

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_MAX_HEADER_LENGTH = 0xFFFFFF

_INT = struct.Struct(">i")
_SHORT = struct.Struct(">h")
_UINT = struct.Struct(">I")
_PREFIX = struct.Struct(">iI")  # length, serialize type << 24 | header length
_BINARY_FIXED = struct.Struct(">hbhii")  # code, language, version, opaque, flag

_LANGUAGE_BY_NAME = {language.name: language for language in LanguageCode}
_LANGUAGE_BY_BYTE = {int(language): language for language in LanguageCode}


class FrameSplitter:
    """Cuts a byte stream into frames: memoryviews of what follows each length word."""

    __slots__ = ("_max_length", "_needed", "_pending")

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        self._max_length = max_frame_size - 4
        self._pending = bytearray()  # bytes of an incomplete frame
        self._needed = 0  # how many pending bytes complete that frame (or its length word)

    def feed(self, data: bytes) -> list[memoryview]:
        """The frames completed by `data`; raises RemotingProtocolError on a bad length."""
        if self._pending:
            self._pending += data
            if len(self._pending) < self._needed:
                return []
            data = bytes(self._pending)
            self._pending.clear()
        view = memoryview(data)
        frames = []
        position, size = 0, len(data)
        self._needed = 4
        while size - position >= 4:
            (length,) = _INT.unpack_from(data, position)
            if length < 4:
                raise RemotingProtocolError(f"frame length {length} is less than 4")
            if length > self._max_length:
                raise RemotingProtocolError(
                    f"frame of {length + 4} bytes exceeds the maximum of {self._max_length + 4}"
                )
            end = position + 4 + length
            if end > size:
                self._needed = end - position
                break
            frames.append(view[position + 4 : end])
            position = end
        if position < size:
            self._pending += view[position:]
        return frames

    @property
    def pending_bytes(self) -> int:
        """Bytes held of a frame not yet complete."""
        return len(self._pending)

    def discard(self) -> None:
        """Drop the bytes of the incomplete frame (its connection is closing)."""
        self._pending = bytearray()


def decode_frame(frame: memoryview) -> RemotingCommand:
    """Decode one frame (everything after its length word)."""
    if len(frame) < 4:
        raise RemotingProtocolError(f"frame of {len(frame)} bytes has no header length")
    (word,) = _UINT.unpack_from(frame)
    serialize_type, header_length = word >> 24, word & _MAX_HEADER_LENGTH
    body_start = 4 + header_length
    if body_start > len(frame):
        raise RemotingProtocolError(
            f"header length {header_length} exceeds the frame's {len(frame) - 4} bytes"
        )
    header = frame[4:body_start]
    if serialize_type == SerializeType.JSON:
        command = _decode_json_header(header)
    elif serialize_type == SerializeType.ROCKETMQ:
        command = _decode_binary_header(header)
        command.serialize_type = SerializeType.ROCKETMQ
    else:
        raise RemotingProtocolError(f"unknown serialize type {serialize_type}")
    if body_start < len(frame):
        command.body = frame[body_start:]
    return command


def encode_header_parts(command: RemotingCommand, body_length: int) -> bytes:
    """Length word, serialize-type/header-length word and header of a frame whose body
    (written separately) is `body_length` bytes long."""
    if command.serialize_type == SerializeType.ROCKETMQ:
        header = _encode_binary_header(command)
    else:
        header = _encode_json_header(command)
    if len(header) > _MAX_HEADER_LENGTH:
        raise ValueError(f"header of {len(header)} bytes does not fit a frame")
    word = command.serialize_type << 24 | len(header)
    return _PREFIX.pack(4 + len(header) + body_length, word) + header


def encode_frame(command: RemotingCommand) -> bytes:
    """The whole frame in one bytes object (copies the body)."""
    parts: list[Buffer] = [encode_header_parts(command, command.body_length)]
    if command.body is not None:
        parts.append(command.body)
    parts.extend(command.body_segments)
    return b"".join(parts)


# --- JSON headers ----------------------------------------------------------------------------


def _encode_json_header(command: RemotingCommand) -> bytes:
    header: dict[str, object] = {"code": command.code}
    if command.ext_fields is not None:
        header["extFields"] = command.ext_fields
    header["flag"] = command.flag
    header["language"] = command.language.name
    header["opaque"] = command.opaque
    if command.remark is not None:
        header["remark"] = command.remark
    header["serializeTypeCurrentRPC"] = "JSON"
    header["version"] = command.version
    return orjson.dumps(header)


def _decode_json_header(header: memoryview) -> RemotingCommand:
    try:
        fields = orjson.loads(header)
    except orjson.JSONDecodeError as exc:
        raise RemotingProtocolError(f"JSON header does not parse: {exc}") from None
    if type(fields) is not dict:
        raise RemotingProtocolError("JSON header is not an object")
    language = fields.get("language")
    remark = fields.get("remark")
    ext_fields = fields.get("extFields")
    return RemotingCommand(
        _json_int(fields, "code"),
        language=LanguageCode.JAVA if language is None else _language_named(language),
        version=_json_int(fields, "version"),
        opaque=_json_int(fields, "opaque"),
        flag=_json_int(fields, "flag"),
        remark=None if remark is None else _json_text("remark", remark),
        ext_fields=None if ext_fields is None else _string_map(ext_fields),
    )


def _json_int(fields: dict[str, object], key: str) -> int:
    value = fields.get(key, 0)
    if type(value) is not int or not _INT32_MIN <= value <= _INT32_MAX:
        raise RemotingProtocolError(f"JSON header field {key} is not an int32: {value!r}")
    return value


def _json_text(key: str, value: object) -> str:
    """A JSON string, number or boolean as the text Java would make of it."""
    if type(value) is str:
        return value
    if type(value) is bool:
        return "true" if value else "false"
    if type(value) in (int, float):
        return str(value)
    raise RemotingProtocolError(f"JSON header value of {key} is not a string: {value!r}")


def _string_map(ext_fields: object) -> dict[str, str]:
    if type(ext_fields) is not dict:
        raise RemotingProtocolError("JSON header field extFields is not an object")
    if all(type(value) is str for value in ext_fields.values()):
        return ext_fields
    return {key: _json_text(key, value) for key, value in ext_fields.items() if value is not None}


def _language_named(name: object) -> LanguageCode:
    if type(name) is not str:
        raise RemotingProtocolError(f"JSON header field language is not a string: {name!r}")
    return _LANGUAGE_BY_NAME.get(name, LanguageCode.OTHER)


# --- ROCKETMQ binary headers -----------------------------------------------------------------


def _encode_binary_header(command: RemotingCommand) -> bytes:
    parts = [
        _BINARY_FIXED.pack(
            command.code, command.language, command.version, command.opaque, command.flag
        )
    ]
    remark = command.remark.encode() if command.remark else b""
    parts += (_INT.pack(len(remark)), remark)
    entries: list[bytes] = []
    for key, value in (command.ext_fields or {}).items():
        key_bytes, value_bytes = key.encode(), value.encode()
        entries += (
            _SHORT.pack(len(key_bytes)),
            key_bytes,
            _INT.pack(len(value_bytes)),
            value_bytes,
        )
    area = b"".join(entries)
    parts += (_INT.pack(len(area)), area)
    return b"".join(parts)


def _decode_binary_header(header: memoryview) -> RemotingCommand:
    limit = len(header)
    if limit < _BINARY_FIXED.size + 8:
        raise RemotingProtocolError(f"ROCKETMQ header of {limit} bytes is truncated")
    code, language, version, opaque, flag = _BINARY_FIXED.unpack_from(header)
    position = _BINARY_FIXED.size
    remark, position = _read_string(header, position, _INT, limit, limit, "remark")
    if position + 4 > limit:
        raise RemotingProtocolError("ROCKETMQ header is truncated before the extFields length")
    (area_length,) = _INT.unpack_from(header, position)
    position += 4
    ext_fields = None
    if area_length > 0:
        if area_length > limit:
            raise RemotingProtocolError(
                f"extFields length {area_length} exceeds the header length {limit}"
            )
        area_end = position + area_length
        if area_end > limit:
            raise RemotingProtocolError("ROCKETMQ header is truncated in the extFields")
        ext_fields = {}
        while position < area_end:
            key, position = _read_string(header, position, _SHORT, area_length, area_end, "key")
            value, position = _read_string(header, position, _INT, area_length, area_end, "value")
            if key is not None and value is not None:
                ext_fields[key] = value
    return RemotingCommand(
        code,
        language=_LANGUAGE_BY_BYTE.get(language, LanguageCode.OTHER),
        version=version,
        opaque=opaque,
        flag=flag,
        remark=remark,
        ext_fields=ext_fields,
    )


def _read_string(
    header: memoryview, position: int, prefix: struct.Struct, limit: int, end: int, what: str
) -> tuple[str | None, int]:
    """A length-prefixed UTF-8 string at `position` that must end by `end`; its length may
    not be negative or exceed `limit`.  Zero length reads as None."""
    if position + prefix.size > end:
        raise RemotingProtocolError(f"ROCKETMQ header is truncated in a {what} length")
    (length,) = prefix.unpack_from(header, position)
    position += prefix.size
    if length < 0 or length > limit:
        raise RemotingProtocolError(f"ROCKETMQ header {what} length {length} is out of range")
    if length == 0:
        return None, position
    if position + length > end:
        raise RemotingProtocolError(f"ROCKETMQ header is truncated in a {what}")
    try:
        return str(header[position : position + length], "utf-8"), position + length
    except UnicodeDecodeError:
        raise RemotingProtocolError(f"ROCKETMQ header {what} is not UTF-8") from None


# The compiled twin (rmq.common.compiled); the class above stays the reference.
_PureFrameSplitter = FrameSplitter
_fast = compiled.load("rmq.remoting._framesplit")
if _fast is not None:
    FrameSplitter = _fast.FrameSplitter  # type: ignore[misc]  # same interface (_framesplit.pyi)
