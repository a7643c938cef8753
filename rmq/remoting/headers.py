"""Custom headers: every header class of RocketMQ 4.9.8, declared once, and one codec for all.

A custom header is the typed view of a command's `extFields` (a flat string-to-string map).
Each header below is a slotted, keyword-only dataclass whose fields are the Java class's
fields in Java's declaration order.  The extFields key of a field is its Java name, derived
from the snake_case Python name (`consumer_group` -> `consumerGroup`); the two Java names
that camelCase cannot produce (`clientID`, `classCRC`) are given with `wire(key=...)`.
`wire(short=...)` gives the V2 short key of a field (SendMessageRequestHeaderV2's `a`..`n`).
There is no separate V2 class: a 310/320/325 request decodes straight into
`SendMessageRequestHeader` with `short_keys=True`, and encodes back to the short form the
same way.

Field types follow the Java ones: `str`; `int` (Java int/Integer, 32 bits); `Long`
(Java long/Long, 64 bits; an `int` with a range check); `bool` (Java's parseBoolean: only a
case-insensitive "true" is true).  On the wire every value is text.

What rmq does with a bad header (Java only logs and leaves the field null, so its processor
fails later with a NullPointerException that becomes SYSTEM_ERROR): a field is *required*
exactly when it has no default here, i.e. when Java could leave it null; a missing required
field, or a number that does not parse or does not fit its Java type, raises `HeaderError`
naming the header and the field.  The server answers a request whose handler raises it with
SYSTEM_ERROR and the error's text.  Java primitives (`boolean`, `int`, `long`) and boxed
fields with an initialiser can never be null, so they carry their Java default here and a
missing value keeps it.

Encoding writes every field that is not None, in declaration order (short-key order for the
short form); booleans as "true"/"false".  Declaration order is what the ROCKETMQ binary
header needs for the four "fast codec" headers (SendMessageRequestHeaderV2,
PullMessageRequestHeader, PullMessageResponseHeader, SendMessageResponseHeader): their
fields come first in the extFields area, in Java's order, before any other entries; a
command built with `create_request`/`create_response` puts them first in its `ext_fields`.

The codec is driven by a per-class table of `(attribute, key, parser, required)` built once
when the class is declared, so decoding a header is one dict lookup and at most one small
conversion per field.
"""

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from typing import Annotated, Any, NamedTuple, TypeVar, dataclass_transform

from rmq.common.javanames import camel_case
from rmq.remoting.errors import HeaderError


class _Int64:
    """Marker of a Java long inside `Long`."""


Long = Annotated[int, _Int64]

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _parse_int(text: str) -> int:
    value = int(text)
    if not _INT32_MIN <= value <= _INT32_MAX:
        raise ValueError(f"{value} does not fit a Java int")
    return value


def _parse_long(text: str) -> int:
    value = int(text)
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise ValueError(f"{value} does not fit a Java long")
    return value


def _parse_bool(text: str) -> bool:
    return text.lower() == "true"


_PARSERS: dict[object, Callable[[str], object] | None] = {
    str: None,
    int: _parse_int,
    bool: _parse_bool,
}


def _to_text(value: object) -> str:
    """A field value as Java's `toString()` writes it."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    return str(value)


class _WireField(NamedTuple):
    name: str  # Python attribute
    key: str  # extFields key
    parse: Callable[[str], object] | None  # None: the text is the value
    required: bool


class _HeaderCodec(NamedTuple):
    fields: tuple[_WireField, ...]  # long keys, declaration order
    short_fields: tuple[_WireField, ...]  # V2 short keys, short-key order


_CODECS: dict[type, _HeaderCodec] = {}

H = TypeVar("H")


def wire(
    *, key: str | None = None, short: str | None = None, default: Any = dataclasses.MISSING
) -> Any:
    """Declare a header field whose extFields key is not the camelCase of its name, or that
    has a V2 short key."""
    metadata = {
        name: value for name, value in (("key", key), ("short", short)) if value is not None
    }
    return dataclasses.field(default=default, metadata=metadata)


def _parser_for(annotation: object) -> Callable[[str], object] | None:
    """The text parser of a field annotation such as `str`, `int | None` or `Long`."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        (annotation,) = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
    if typing.get_origin(annotation) is Annotated:
        annotation, *markers = typing.get_args(annotation)
        if _Int64 in markers:
            return _parse_long
    if annotation not in _PARSERS:
        raise TypeError(f"unsupported header field type {annotation!r}")
    return _PARSERS[annotation]


def _build_codec(cls: type) -> _HeaderCodec:
    hints = typing.get_type_hints(cls, include_extras=True)
    fields: list[_WireField] = []
    short_fields: list[tuple[str, _WireField]] = []
    for field in dataclasses.fields(cls):
        parse = _parser_for(hints[field.name])
        required = field.default is dataclasses.MISSING
        key = field.metadata.get("key", camel_case(field.name))
        fields.append(_WireField(field.name, key, parse, required))
        if "short" in field.metadata:
            short = field.metadata["short"]
            short_fields.append((short, _WireField(field.name, short, parse, required)))
    return _HeaderCodec(
        tuple(fields), tuple(f for _, f in sorted(short_fields, key=lambda pair: pair[0]))
    )


@dataclass_transform(kw_only_default=True, field_specifiers=(wire,))
def header(cls: type[H]) -> type[H]:
    """Class decorator: make `cls` a slotted keyword-only dataclass and register its codec."""
    declared = dataclasses.dataclass(slots=True, kw_only=True)(cls)
    _CODECS[declared] = _build_codec(declared)
    return declared


def decode_header(
    cls: type[H], ext_fields: Mapping[str, str] | None, *, short_keys: bool = False
) -> H:
    """Build a `cls` header from a command's extFields (see the module docstring for errors)."""
    codec = _CODECS[cls]
    source = ext_fields if ext_fields is not None else {}
    values: dict[str, object] = {}
    for name, key, parse, required in codec.short_fields if short_keys else codec.fields:
        text = source.get(key)
        if text is None:
            if required:
                raise HeaderError(f"{cls.__name__}: the custom field <{key}> is null")
        elif parse is None:
            values[name] = text
        else:
            try:
                values[name] = parse(text)
            except ValueError:
                raise HeaderError(
                    f"{cls.__name__}: the custom field <{key}> has a bad value {text!r}"
                ) from None
    return cls(**values)


def encode_header(header: object, *, short_keys: bool = False) -> dict[str, str]:
    """The extFields of a header: every field that is not None, as text."""
    codec = _CODECS[type(header)]
    ext_fields: dict[str, str] = {}
    for name, key, _, _ in codec.short_fields if short_keys else codec.fields:
        value = getattr(header, name)
        if value is not None:
            ext_fields[key] = _to_text(value)
    return ext_fields


def header_classes() -> tuple[type, ...]:
    """Every declared header class, in declaration order."""
    return tuple(_CODECS)


# ---------------------------------------------------------------------------------------------
# Broker and client headers (org.apache.rocketmq.common.protocol.header)
# ---------------------------------------------------------------------------------------------


@header
class CheckTransactionStateRequestHeader:
    tran_state_table_offset: Long
    commit_log_offset: Long
    msg_id: str | None = None
    transaction_id: str | None = None
    offset_msg_id: str | None = None
    bname: str | None = None


@header
class CheckTransactionStateResponseHeader:
    producer_group: str
    tran_state_table_offset: Long
    commit_log_offset: Long
    commit_or_rollback: int


@header
class CloneGroupOffsetRequestHeader:
    src_group: str
    dest_group: str
    topic: str | None = None
    offline: bool = False


@header
class ConsumeMessageDirectlyResultRequestHeader:
    consumer_group: str
    client_id: str | None = None
    msg_id: str | None = None
    broker_name: str | None = None


@header
class ConsumerSendMsgBackRequestHeader:
    offset: Long
    group: str
    delay_level: int
    origin_msg_id: str | None = None
    origin_topic: str | None = None
    unit_mode: bool = False
    max_reconsume_times: int | None = None
    bname: str | None = None


@header
class CreateAccessConfigRequestHeader:
    access_key: str
    secret_key: str | None = None
    white_remote_address: str | None = None
    admin: bool = False
    default_topic_perm: str | None = None
    default_group_perm: str | None = None
    topic_perms: str | None = None
    group_perms: str | None = None


@header
class CreateTopicRequestHeader:
    topic: str
    default_topic: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_filter_type: str
    topic_sys_flag: int | None = None
    order: bool = False


@header
class DeleteAccessConfigRequestHeader:
    access_key: str


@header
class DeleteSubscriptionGroupRequestHeader:
    group_name: str
    remove_offset: bool = False


@header
class DeleteTopicRequestHeader:
    topic: str


@header
class EndTransactionRequestHeader:
    producer_group: str
    tran_state_table_offset: Long
    commit_log_offset: Long
    commit_or_rollback: int
    from_transaction_check: bool = False
    msg_id: str
    transaction_id: str | None = None
    bname: str | None = None


@header
class EndTransactionResponseHeader:
    pass


@header
class GetAllProducerInfoRequestHeader:
    pass


@header
class GetAllTopicConfigResponseHeader:
    pass


@header
class GetBrokerAclConfigResponseHeader:
    version: str
    all_acl_file_version: str | None = None
    broker_name: str
    broker_addr: str
    cluster_name: str


@header
class GetBrokerConfigResponseHeader:
    version: str


@header
class GetConsumeStatsInBrokerHeader:
    is_order: bool = False


@header
class GetConsumeStatsRequestHeader:
    consumer_group: str
    topic: str | None = None


@header
class GetConsumerConnectionListRequestHeader:
    consumer_group: str


@header
class GetConsumerListByGroupRequestHeader:
    consumer_group: str


@header
class GetConsumerListByGroupResponseHeader:
    pass


@header
class GetConsumerRunningInfoRequestHeader:
    consumer_group: str
    client_id: str
    jstack_enable: bool = False


@header
class GetConsumerStatusRequestHeader:
    topic: str
    group: str
    client_addr: str | None = None


@header
class GetEarliestMsgStoretimeRequestHeader:
    topic: str
    queue_id: int
    bname: str | None = None


@header
class GetEarliestMsgStoretimeResponseHeader:
    timestamp: Long


@header
class GetMaxOffsetRequestHeader:
    topic: str
    queue_id: int
    bname: str | None = None


@header
class GetMaxOffsetResponseHeader:
    offset: Long


@header
class GetMinOffsetRequestHeader:
    topic: str
    queue_id: int
    bname: str | None = None


@header
class GetMinOffsetResponseHeader:
    offset: Long


@header
class GetProducerConnectionListRequestHeader:
    producer_group: str


@header
class GetTopicStatsInfoRequestHeader:
    topic: str


@header
class GetTopicsByClusterRequestHeader:
    cluster: str


@header
class NotifyConsumerIdsChangedRequestHeader:
    consumer_group: str


@header
class PullMessageRequestHeader:
    consumer_group: str
    topic: str
    queue_id: int
    queue_offset: Long
    max_msg_nums: int
    sys_flag: int
    commit_offset: Long
    suspend_timeout_millis: Long
    subscription: str | None = None
    sub_version: Long
    expression_type: str | None = None
    bname: str | None = None


@header
class PullMessageResponseHeader:
    suggest_which_broker_id: Long
    next_begin_offset: Long
    min_offset: Long
    max_offset: Long


@header
class QueryConsumeQueueRequestHeader:
    topic: str | None = None
    queue_id: int = 0
    index: Long = 0
    count: int = 0
    consumer_group: str | None = None


@header
class QueryConsumeTimeSpanRequestHeader:
    topic: str
    group: str


@header
class QueryConsumerOffsetRequestHeader:
    consumer_group: str
    topic: str
    queue_id: int
    bname: str | None = None


@header
class QueryConsumerOffsetResponseHeader:
    offset: Long


@header
class QueryCorrectionOffsetHeader:
    filter_groups: str | None = None
    compare_group: str
    topic: str


@header
class QueryMessageRequestHeader:
    topic: str
    key: str
    max_num: int
    begin_timestamp: Long
    end_timestamp: Long


@header
class QueryMessageResponseHeader:
    index_last_update_timestamp: Long
    index_last_update_phyoffset: Long


@header
class QueryTopicConsumeByWhoRequestHeader:
    topic: str


@header
class ReplyMessageRequestHeader:
    producer_group: str
    topic: str
    default_topic: str
    default_topic_queue_nums: int
    queue_id: int
    sys_flag: int
    born_timestamp: Long
    flag: int
    properties: str | None = None
    reconsume_times: int | None = None
    unit_mode: bool = False
    born_host: str
    store_host: str
    store_timestamp: Long = 0


@header
class ResetOffsetRequestHeader:
    topic: str
    group: str
    timestamp: Long = 0
    is_force: bool = False


@header
class ResumeCheckHalfMessageRequestHeader:
    msg_id: str | None = None


@header
class SearchOffsetRequestHeader:
    topic: str
    queue_id: int
    timestamp: Long
    bname: str | None = None


@header
class SearchOffsetResponseHeader:
    offset: Long


@header
class SendMessageRequestHeader:
    """SEND_MESSAGE / SEND_REPLY_MESSAGE header; with `short_keys` the V2 header of
    SEND_MESSAGE_V2, SEND_BATCH_MESSAGE and SEND_REPLY_MESSAGE_V2."""

    producer_group: str = wire(short="a")
    topic: str = wire(short="b")
    default_topic: str = wire(short="c")
    default_topic_queue_nums: int = wire(short="d")
    queue_id: int = wire(short="e")
    sys_flag: int = wire(short="f")
    born_timestamp: Long = wire(short="g")
    flag: int = wire(short="h")
    properties: str | None = wire(short="i", default=None)
    reconsume_times: int | None = wire(short="j", default=None)
    unit_mode: bool = wire(short="k", default=False)
    batch: bool = wire(short="m", default=False)
    max_reconsume_times: int | None = wire(short="l", default=None)
    bname: str | None = wire(short="n", default=None)


@header
class SendMessageResponseHeader:
    msg_id: str
    queue_id: int
    queue_offset: Long
    transaction_id: str | None = None


@header
class UnregisterClientRequestHeader:
    client_id: str = wire(key="clientID")
    producer_group: str | None = None
    consumer_group: str | None = None


@header
class UnregisterClientResponseHeader:
    pass


@header
class UpdateConsumerOffsetRequestHeader:
    consumer_group: str
    topic: str
    queue_id: int
    commit_offset: Long
    bname: str | None = None


@header
class UpdateConsumerOffsetResponseHeader:
    pass


@header
class UpdateGlobalWhiteAddrsConfigRequestHeader:
    global_white_addrs: str
    acl_file_full_path: str


@header
class ViewBrokerStatsDataRequestHeader:
    stats_name: str
    stats_key: str


@header
class ViewMessageRequestHeader:
    offset: Long


@header
class ViewMessageResponseHeader:
    pass


# ---------------------------------------------------------------------------------------------
# Filter server headers (header.filtersrv; no 4.9.8 process serves them)
# ---------------------------------------------------------------------------------------------


@header
class RegisterFilterServerRequestHeader:
    filter_server_addr: str


@header
class RegisterFilterServerResponseHeader:
    broker_name: str
    broker_id: Long = 0


@header
class RegisterMessageFilterClassRequestHeader:
    consumer_group: str
    topic: str
    class_name: str
    class_crc: int = wire(key="classCRC")


# ---------------------------------------------------------------------------------------------
# Name server headers (header.namesrv)
# ---------------------------------------------------------------------------------------------


@header
class AddWritePermOfBrokerRequestHeader:
    broker_name: str


@header
class AddWritePermOfBrokerResponseHeader:
    add_topic_count: int


@header
class DeleteKVConfigRequestHeader:
    namespace: str
    key: str


@header
class DeleteTopicFromNamesrvRequestHeader:
    topic: str
    cluster_name: str | None = None


@header
class GetKVConfigRequestHeader:
    namespace: str
    key: str


@header
class GetKVConfigResponseHeader:
    value: str | None = None


@header
class GetKVListByNamespaceRequestHeader:
    namespace: str


@header
class GetRouteInfoRequestHeader:
    topic: str
    accept_standard_json_only: bool | None = None


@header
class PutKVConfigRequestHeader:
    namespace: str
    key: str
    value: str


@header
class QueryDataVersionRequestHeader:
    broker_name: str
    broker_addr: str
    cluster_name: str
    broker_id: Long


@header
class QueryDataVersionResponseHeader:
    changed: bool


@header
class RegisterBrokerRequestHeader:
    broker_name: str
    broker_addr: str
    cluster_name: str
    ha_server_addr: str
    broker_id: Long
    compressed: bool = False
    body_crc32: int = 0


@header
class RegisterBrokerResponseHeader:
    ha_server_addr: str | None = None
    master_addr: str | None = None


@header
class RegisterOrderTopicRequestHeader:
    topic: str
    order_topic_string: str


@header
class UnRegisterBrokerRequestHeader:
    broker_name: str
    broker_addr: str
    cluster_name: str
    broker_id: Long


@header
class WipeWritePermOfBrokerRequestHeader:
    broker_name: str


@header
class WipeWritePermOfBrokerResponseHeader:
    wipe_topic_count: int
