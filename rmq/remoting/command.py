"""The remoting command: one request or response, as every processor sees it.

A `RemotingCommand` is the decoded form of a frame (see `frame.py` for the bytes): the fixed
header fields, the custom header as a string map (`ext_fields`) and an opaque body.  Typed
custom headers (`headers.py`) are converted at the edges: `create_request` /
`create_response` encode one into `ext_fields`, `read_header` decodes one out of them.  The
request code decides whether a send header travels with its V2 short keys, so callers never
deal with the two forms.

Bodies are never copied here.  A received command's `body` is a memoryview into the frame
it arrived in.  A command to be sent may carry, after `body`, any number of further byte
buffers in `body_segments` (for instance commitlog slices of a pull response); the
connection writes them after the header one by one.

Opaques come from one process-wide counter, masked to a non-negative int32 as the C++
client does, so no two requests in flight from this process share one.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import TypeVar

from rmq.remoting.codes import (
    CURRENT_LANGUAGE,
    CURRENT_VERSION,
    RPC_ONEWAY,
    RPC_TYPE,
    SHORT_KEY_SEND_CODES,
    LanguageCode,
    RequestCode,
    ResponseCode,
    SerializeType,
    code_name,
)
from rmq.remoting.headercodec import decode_header, encode_header

H = TypeVar("H")

Buffer = bytes | bytearray | memoryview

_opaques = itertools.count()


def next_opaque() -> int:
    """A fresh request id: a process-wide counter masked to a non-negative int32."""
    return next(_opaques) & 0x7FFFFFFF


@dataclasses.dataclass(slots=True)
class RemotingCommand:
    """One request or response.  `flag` bit RPC_TYPE marks a response, RPC_ONEWAY a request
    that expects none; `serialize_type` is the header encoding of the frame."""

    code: int
    language: LanguageCode = CURRENT_LANGUAGE
    version: int = CURRENT_VERSION
    opaque: int = 0
    flag: int = 0
    remark: str | None = None
    ext_fields: dict[str, str] | None = None
    body: Buffer | None = dataclasses.field(default=None, repr=False)
    body_segments: tuple[Buffer, ...] = dataclasses.field(default=(), repr=False)
    serialize_type: SerializeType = SerializeType.JSON

    @property
    def is_response(self) -> bool:
        return bool(self.flag & RPC_TYPE)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & RPC_ONEWAY)

    @property
    def code_name(self) -> str:
        """`NAME(code)` of a request or response code, for logs."""
        return code_name(self.code, ResponseCode if self.is_response else RequestCode)

    @property
    def body_length(self) -> int:
        """Bytes of `body` plus `body_segments`: what the frame carries after the header."""
        length = sum(map(len, self.body_segments))
        return length if self.body is None else length + len(self.body)

    def add_ext_field(self, key: str, value: str) -> None:
        """Set one extFields entry (after any header fields already there)."""
        if self.ext_fields is None:
            self.ext_fields = {}
        self.ext_fields[key] = value

    def mark_response(self) -> None:
        self.flag |= RPC_TYPE

    def mark_oneway(self) -> None:
        self.flag |= RPC_ONEWAY

    def read_header(self, cls: type[H]) -> H:
        """Decode the custom header `cls` from `ext_fields` (raises HeaderError)."""
        return decode_header(cls, self.ext_fields, short_keys=self.code in SHORT_KEY_SEND_CODES)


def create_request(
    code: int, header: object | None = None, *, body: Buffer | None = None
) -> RemotingCommand:
    """A new request with a fresh opaque; `header` is encoded into `ext_fields`."""
    ext_fields = None
    if header is not None:
        ext_fields = encode_header(header, short_keys=code in SHORT_KEY_SEND_CODES)
    return RemotingCommand(code, opaque=next_opaque(), ext_fields=ext_fields, body=body)


def create_response(
    code: int,
    remark: str | None = None,
    header: object | None = None,
    *,
    body: Buffer | None = None,
) -> RemotingCommand:
    """A response; the connection fills in the request's opaque and serialize type when it
    writes it.  With a `header`, `ext_fields` starts with the header's fields (an empty
    header still gives an empty map, as Java writes it)."""
    ext_fields = encode_header(header) if header is not None else None
    return RemotingCommand(code, flag=RPC_TYPE, remark=remark, ext_fields=ext_fields, body=body)


UNSET_RESPONSE_REMARK = "not set any response code"
"""The remark of a Java response made with ``createResponseCommand(null)``: it stays on the
answers whose code is set afterwards and whose remark is not (a SUCCESS among them)."""


def not_supported_response(request: RemotingCommand) -> RemotingCommand:
    """The REQUEST_CODE_NOT_SUPPORTED answer to a request no processor serves."""
    return create_response(
        ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f" request type {request.code} not supported"
    )
