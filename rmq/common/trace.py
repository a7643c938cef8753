"""Message trace records: the text Apache 4.9's client writes into trace messages, both ways.

A traced client sends, besides its own messages, trace messages to a trace topic
(RMQ_SYS_TRACE_TOPIC unless another is named).  A trace message's body is one or more
records, each ended by FIELD_SPLITOR (\\x02), each a list of fields joined by
CONTENT_SPLITOR (\\x01); the first field is the record's type:

    Pub        timestamp region group topic msgId tags keys storeHost bodyLength
               costTime msgType offsetMsgId success
    SubBefore  timestamp region group requestId msgId retryTimes keys
    SubAfter   requestId msgId costTime success keys contextCode [timestamp group]

(SubAfter's last two fields are left out for the CLOUD access channel, whose record then
ends with a CONTENT_SPLITOR.)  A missing text field prints as `null`, as Java's
StringBuilder prints a null String; booleans as `true` / `false`; msgType is the ordinal of
Java's MessageType.  The trace message's keys are every record's msgId and the traced
message's own keys, which is how a query by message id finds its traces.

:func:`encode_context` writes one context (a SubBefore / SubAfter context covers a batch of
messages and writes a record per message), :func:`decode_trace_data` reads a body the way
Apache's TraceDataEncoder does (older Pub records with 13 fields and newer ones with a client
host included), and :func:`trace_views` is TraceView.decodeFromTraceTransData: the records of
one message id as the rows queryMsgTraceById prints.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from rmq.common.msgconst import KEY_SEPARATOR

__all__ = [
    "CONTENT_SPLITOR",
    "FIELD_SPLITOR",
    "ConsumeReturnType",
    "TraceBean",
    "TraceContext",
    "TraceMessageType",
    "TraceType",
    "TraceView",
    "decode_trace_data",
    "encode_context",
    "trace_views",
]

CONTENT_SPLITOR = "\x01"
FIELD_SPLITOR = "\x02"
TRACE_PRODUCER_GROUP_PREFIX = "_INNER_TRACE_PRODUCER"
TRACE_INSTANCE_NAME = "PID_CLIENT_INNER_TRACE_PRODUCER"


class TraceType(enum.Enum):
    Pub = "Pub"
    SubBefore = "SubBefore"
    SubAfter = "SubAfter"
    EndTransaction = "EndTransaction"


class TraceMessageType(enum.IntEnum):
    """Java's MessageType; a record holds the ordinal."""

    Normal_Msg = 0
    Trans_Msg_Half = 1
    Trans_msg_Commit = 2
    Delay_Msg = 3


class ConsumeReturnType(enum.IntEnum):
    """Java's ConsumeReturnType: a SubAfter record's contextCode is the ordinal."""

    SUCCESS = 0
    TIME_OUT = 1
    EXCEPTION = 2
    RETURNNULL = 3
    FAILED = 4


@dataclass
class TraceBean:
    """One traced message.  None stands for Java's null (written as `null`)."""

    topic: str | None = ""
    msg_id: str | None = ""
    offset_msg_id: str | None = ""
    tags: str | None = ""
    keys: str | None = ""
    store_host: str | None = ""
    client_host: str | None = ""
    retry_times: int = 0
    body_length: int = 0
    msg_type: TraceMessageType | None = TraceMessageType.Normal_Msg
    transaction_id: str | None = None
    transaction_state: str | None = None
    from_transaction_check: bool = False


@dataclass
class TraceContext:
    """One trace event: a send (Pub), the start (SubBefore) or end (SubAfter) of consuming
    a batch, or the end of a transaction; `beans` are the messages it is about."""

    trace_type: TraceType
    timestamp: int = 0
    region_id: str | None = ""
    group: str | None = ""
    cost_time: int = 0
    success: bool = True
    request_id: str | None = ""
    context_code: int = 0
    cloud: bool = False
    """The CLOUD access channel: SubAfter records leave out timestamp and group."""
    beans: list[TraceBean] = field(default_factory=list)


def _text(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, enum.IntEnum):
        return str(int(value))
    return str(value)


def _record(*values: object, end: str = FIELD_SPLITOR) -> str:
    return CONTENT_SPLITOR.join(_text(value) for value in values) + end


def _message_fields(ctx: TraceContext, bean: TraceBean) -> tuple[object, ...]:
    """The fields a Pub and an EndTransaction record open with."""
    return (
        ctx.trace_type.value,
        ctx.timestamp,
        ctx.region_id,
        ctx.group,
        bean.topic,
        bean.msg_id,
        bean.tags,
        bean.keys,
        bean.store_host,
    )


def encode_context(ctx: TraceContext) -> tuple[str, list[str]]:
    """The records of `ctx` and the keys the trace message carries for it (each bean's
    msgId, then its own keys), as TraceDataEncoder.encoderFromContextBean makes them."""
    kind = ctx.trace_type
    if kind is TraceType.Pub:
        bean = ctx.beans[0]
        data = _record(
            *_message_fields(ctx, bean),
            bean.body_length,
            ctx.cost_time,
            bean.msg_type,
            bean.offset_msg_id,
            ctx.success,
        )
    elif kind is TraceType.SubBefore:
        data = "".join(
            _record(
                kind.value,
                ctx.timestamp,
                ctx.region_id,
                ctx.group,
                ctx.request_id,
                bean.msg_id,
                bean.retry_times,
                bean.keys,
            )
            for bean in ctx.beans
        )
    elif kind is TraceType.SubAfter:
        parts = []
        for bean in ctx.beans:
            head = (kind.value, ctx.request_id, bean.msg_id, ctx.cost_time, ctx.success)
            fields = (*head, bean.keys, ctx.context_code)
            if ctx.cloud:
                parts.append(_record(*fields, end=CONTENT_SPLITOR))
            else:
                parts.append(_record(*fields, ctx.timestamp, ctx.group))
        data = "".join(parts)
    else:
        bean = ctx.beans[0]
        data = _record(
            *_message_fields(ctx, bean),
            bean.msg_type,
            bean.transaction_id,
            bean.transaction_state,
            bean.from_transaction_check,
        )
    keys: list[str] = []
    for bean in ctx.beans:
        keys.append(_text(bean.msg_id))
        if bean.keys:
            keys.extend(bean.keys.split(KEY_SEPARATOR))
    return data, keys


def _java_split(text: str, separator: str) -> list[str]:
    """Java's String.split: trailing empty strings are dropped (all but one of an empty
    text)."""
    parts = text.split(separator)
    while len(parts) > 1 and parts[-1] == "":
        parts.pop()
    return parts


def _bool(text: str) -> bool:
    """Boolean.parseBoolean: true only for `true`, any case."""
    return text.lower() == "true"


def decode_trace_data(data: str) -> list[TraceContext]:
    """The contexts of a trace message body; one context per record.  Raises ValueError on
    a record Apache's decoder could not read either (a missing field, a bad number)."""
    if not data:
        return []
    contexts = []
    for record in _java_split(data, FIELD_SPLITOR):
        line = _java_split(record, CONTENT_SPLITOR)
        try:
            ctx = _decode_record(line)
        except (IndexError, ValueError) as exc:
            raise ValueError(f"unreadable trace record {record!r}: {exc}") from exc
        if ctx is not None:
            contexts.append(ctx)
    return contexts


def _decode_record(line: list[str]) -> TraceContext | None:
    kind = line[0]
    if kind == TraceType.Pub.value:
        bean = TraceBean(
            topic=line[4],
            msg_id=line[5],
            tags=line[6],
            keys=line[7],
            store_host=line[8],
            body_length=int(line[9]),
            msg_type=TraceMessageType(int(line[11])),
        )
        ctx = TraceContext(
            TraceType.Pub,
            timestamp=int(line[1]),
            region_id=line[2],
            group=line[3],
            cost_time=int(line[10]),
            beans=[bean],
        )
        if len(line) == 13:
            ctx.success = _bool(line[12])
        elif len(line) >= 14:
            bean.offset_msg_id = line[12]
            ctx.success = _bool(line[13])
            if len(line) >= 15:
                bean.client_host = line[14]
        return ctx
    if kind == TraceType.SubBefore.value:
        bean = TraceBean(msg_id=line[5], retry_times=int(line[6]), keys=line[7])
        return TraceContext(
            TraceType.SubBefore,
            timestamp=int(line[1]),
            region_id=line[2],
            group=line[3],
            request_id=line[4],
            beans=[bean],
        )
    if kind == TraceType.SubAfter.value:
        ctx = TraceContext(
            TraceType.SubAfter,
            request_id=line[1],
            cost_time=int(line[3]),
            success=_bool(line[4]),
            beans=[TraceBean(msg_id=line[2], keys=line[5])],
        )
        if len(line) >= 7:
            ctx.context_code = int(line[6])
        if len(line) >= 9:
            ctx.timestamp = int(line[7])
            ctx.group = line[8]
        return ctx
    if kind == TraceType.EndTransaction.value:
        bean = TraceBean(
            topic=line[4],
            msg_id=line[5],
            tags=line[6],
            keys=line[7],
            store_host=line[8],
            msg_type=TraceMessageType(int(line[9])),
            transaction_id=line[10],
            transaction_state=line[11],
            from_transaction_check=_bool(line[12]),
        )
        return TraceContext(
            TraceType.EndTransaction,
            timestamp=int(line[1]),
            region_id=line[2],
            group=line[3],
            beans=[bean],
        )
    return None


@dataclass(frozen=True)
class TraceView:
    """One row of a message's trace, as Apache's TraceView holds it: `msg_type` is the
    record's type (Pub, SubBefore, SubAfter, EndTransaction), `client_host` the address
    the trace message was born at, `status` success or failed."""

    msg_type: str
    msg_id: str
    group: str
    timestamp: int
    cost_time: int
    status: str
    topic: str
    tags: str
    keys: str
    store_host: str
    client_host: str
    offset_msg_id: str


def trace_views(msg_id: str, body: bytes, born_host_ip: str) -> list[TraceView]:
    """The rows of trace message `body` (born at `born_host_ip`) about message `msg_id`."""
    views = []
    for ctx in decode_trace_data(body.decode("utf-8", errors="replace")):
        bean = ctx.beans[0]
        if bean.msg_id != msg_id:
            continue
        views.append(
            TraceView(
                msg_type=ctx.trace_type.value,
                msg_id=msg_id,
                group=_text(ctx.group),
                timestamp=ctx.timestamp,
                cost_time=ctx.cost_time,
                status="success" if ctx.success else "failed",
                topic=_text(bean.topic),
                tags=_text(bean.tags),
                keys=_text(bean.keys),
                store_host=_text(bean.store_host),
                client_host=born_host_ip,
                offset_msg_id=_text(bean.offset_msg_id),
            )
        )
    return views
