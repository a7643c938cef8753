"""Route and registration bodies: what brokers tell the name server and what it answers.

* :class:`RegisterBrokerBody` (REGISTER_BROKER) in its three forms: JSON, the compressed
  binary form (``compressed=true`` in the header) and, from brokers older than 3.0.11, a bare
  :class:`TopicConfigSerializeWrapper`; :meth:`RegisterBrokerBody.decode_request` picks the
  form the way the name server does, and :func:`body_crc32` is the header's ``bodyCrc32``.
  :meth:`RegisterBrokerBody.open_request` reads the same forms in two stages
  (:class:`OpenedRegisterBody`): the DataVersion and the filter servers at once, the topic
  table only when asked, in slices, so that a name server can skip it or spread it out;
  :meth:`RegisterBrokerBody.peek_request` reads the DataVersion and filter servers of a JSON
  body in fastjson's own layout from its first bytes, without parsing the rest.
* :class:`TopicConfig` with its JSON form (``topics.json``) and the text form the compressed
  register body carries, :class:`DataVersion`, :class:`TopicConfigSerializeWrapper`.
* The name server's answers: :class:`TopicRouteData` (with :class:`QueueData` and
  :class:`BrokerData`; ``encode(standard=True)`` is the standard-JSON variant for clients of
  4.9.4 and later), :class:`ClusterInfo`, :class:`TopicList`, :class:`KVTable`.

The compressed register body is one zlib stream (Java's Deflater at BEST_COMPRESSION, so
level 9 here) of big-endian parts: int32 length + DataVersion JSON; int32 topic count; per
topic int32 length + ``"<name> <read> <write> <perm> <filterType>"`` (the topic sysflag and
order flag are not carried); int32 length + the filter server list as a JSON array.  Its
content is inflated at most to :data:`MAX_INFLATED_REGISTER_BODY` bytes; a body that would
inflate further is refused with :class:`BodyError` (Java sets no limit).
"""

from __future__ import annotations

import enum
import random
import re
import struct
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Self

from rmq.common import fastjson
from rmq.common.perm import DEFAULT_TOPIC_PERM
from rmq.common.timeutil import now_millis
from rmq.remoting.bodies.codec import Body, BodyError, Buffer, JavaSet
from rmq.remoting.codes import MQVersion
from rmq.remoting.frame import DEFAULT_MAX_FRAME_SIZE

__all__ = [
    "MASTER_ID",
    "MAX_INFLATED_REGISTER_BODY",
    "BrokerData",
    "ClusterInfo",
    "DataVersion",
    "KVTable",
    "OpenedRegisterBody",
    "QueueData",
    "RegisterBrokerBody",
    "TopicConfig",
    "TopicConfigSerializeWrapper",
    "TopicFilterType",
    "TopicList",
    "TopicRouteData",
    "body_crc32",
]

MASTER_ID = 0
"""Broker id of a master; slaves have ids >= 1."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DataVersion(Body):
    """Version stamp of a broker's topic or subscription-group table.

    Two versions are equal when both fields are; a new one (Java's ``new DataVersion()``)
    carries the current time and counter 0.
    """

    timestamp: int = field(default_factory=now_millis)
    counter: int = 0

    def next_version(self) -> DataVersion:
        """The version after this one: counter + 1, stamped now."""
        return DataVersion(timestamp=now_millis(), counter=self.counter + 1)


class TopicFilterType(enum.Enum):
    SINGLE_TAG = 0
    MULTI_TAG = 1


_JAVA_INT = re.compile(r"[+-]?[0-9]+")
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def _parse_java_int(text: str) -> int:
    """Java's ``Integer.parseInt`` (ASCII digits)."""
    if _JAVA_INT.fullmatch(text) is None or not _INT32_MIN <= int(text) <= _INT32_MAX:
        raise ValueError(f"{text!r} is not a Java int")
    return int(text)


@dataclass(slots=True, kw_only=True)
class TopicConfig(Body):
    """A topic on a broker (``topics.json`` entry), with Java's defaults."""

    topic_name: str
    read_queue_nums: int = 16
    write_queue_nums: int = 16
    perm: int = DEFAULT_TOPIC_PERM
    topic_filter_type: TopicFilterType = TopicFilterType.SINGLE_TAG
    topic_sys_flag: int = 0
    order: bool = False

    def to_text(self) -> str:
        """The text form of the compressed register body (no sysflag, no order flag)."""
        return (
            f"{self.topic_name} {self.read_queue_nums} {self.write_queue_nums} {self.perm} "
            f"{self.topic_filter_type.name}"
        )

    @classmethod
    def from_text(cls, text: str) -> TopicConfig:
        """Parse :meth:`to_text`'s form; trailing spaces are ignored, as Java's split does."""
        parts = text.split(" ")
        while parts and not parts[-1]:
            parts.pop()
        if len(parts) != 5:
            raise BodyError(f"TopicConfig: {text!r} does not have 5 space-separated parts")
        name, read, write, perm, filter_type = parts
        if filter_type not in TopicFilterType.__members__:
            raise BodyError(f"TopicConfig: unknown topic filter type {filter_type!r}")
        try:
            return cls(
                topic_name=name,
                read_queue_nums=_parse_java_int(read),
                write_queue_nums=_parse_java_int(write),
                perm=_parse_java_int(perm),
                topic_filter_type=TopicFilterType[filter_type],
            )
        except ValueError as exc:
            raise BodyError(f"TopicConfig: {exc} in {text!r}") from None


@dataclass(slots=True, kw_only=True)
class TopicConfigSerializeWrapper(Body):
    """A broker's topic table with its version (``topics.json``, register bodies)."""

    topic_config_table: dict[str, TopicConfig] = field(default_factory=dict)
    data_version: DataVersion = field(default_factory=DataVersion)


def body_crc32(body: Buffer | None) -> int:
    """``bodyCrc32`` of RegisterBrokerRequestHeader: CRC32 & 0x7FFFFFFF, 0 without a body."""
    return zlib.crc32(body) & 0x7FFFFFFF if body is not None else 0


_INT32 = struct.Struct(">i")
_COMPRESSION_LEVEL = 9  # java.util.zip.Deflater.BEST_COMPRESSION

MAX_INFLATED_REGISTER_BODY = 4 * DEFAULT_MAX_FRAME_SIZE
"""Largest content a compressed register body may inflate to (64 MiB): four times the frame
limit, far above what any broker's topic table needs (about 60 bytes a topic), and a bound
on the memory a small, hostile body can make the name server allocate."""


def _no_topics() -> TopicConfigSerializeWrapper:
    """What the name server assumes for a registration without a body."""
    return TopicConfigSerializeWrapper(data_version=DataVersion(timestamp=0, counter=0))


@dataclass(slots=True, kw_only=True)
class RegisterBrokerBody(Body):
    """REGISTER_BROKER body: the broker's topics and its filter servers.

    ``filter_server_list`` is None only for a broker older than 3.0.11, whose body carries
    none (the name server then leaves the broker's filter servers as they are).
    """

    topic_config_serialize_wrapper: TopicConfigSerializeWrapper = field(
        default_factory=TopicConfigSerializeWrapper
    )
    filter_server_list: list[str] | None = field(default_factory=list)

    def encode(
        self, *, standard: bool = False, pretty: bool = False, compressed: bool = False
    ) -> bytes:
        """JSON, or with ``compressed`` the zlib binary form (see the module docstring)."""
        if not compressed:
            return Body.encode(self, standard=standard, pretty=pretty)
        wrapper = self.topic_config_serialize_wrapper
        out = bytearray()

        def put(part: bytes) -> None:
            out.extend(_INT32.pack(len(part)))
            out.extend(part)

        put(wrapper.data_version.encode())
        out.extend(_INT32.pack(len(wrapper.topic_config_table)))
        for config in wrapper.topic_config_table.values():
            put(config.to_text().encode("utf-8"))
        put(fastjson.dumps_bytes(self.filter_server_list))
        return zlib.compress(bytes(out), _COMPRESSION_LEVEL)

    @classmethod
    def decode(cls, data: Buffer, *, compressed: bool = False) -> Self:
        """Parse the JSON form, or with ``compressed`` the zlib binary form."""
        if not compressed:
            return super(RegisterBrokerBody, cls).decode(data)
        return cls._from_opened(_open_compressed(data))

    @classmethod
    def decode_request(cls, body: Buffer | None, *, compressed: bool, version: int) -> Self:
        """The body of a REGISTER_BROKER request of protocol ``version``, as the name server
        reads it: a bare topic wrapper before 3.0.11; no body means no topics, version 0/0."""
        return cls._from_opened(cls.open_request(body, compressed=compressed, version=version))

    @classmethod
    def open_request(
        cls, body: Buffer | None, *, compressed: bool, version: int
    ) -> OpenedRegisterBody:
        """`decode_request` up to the topic table: the DataVersion and filter servers are
        read (and every error outside the topic entries raised) now, the topics later."""
        if version < MQVersion.V3_0_11:
            if not body:
                return OpenedRegisterBody(_no_topics().data_version, None)
            return _open_json(body, bare_wrapper=True)
        if not body:
            return OpenedRegisterBody(_no_topics().data_version, [])
        if compressed:
            return _open_compressed(body)
        return _open_json(body, bare_wrapper=False)

    @staticmethod
    def peek_request(
        body: Buffer | None, *, compressed: bool, version: int
    ) -> tuple[DataVersion, list[str]] | None:
        """The DataVersion and filter servers of a JSON REGISTER_BROKER body, read from its
        first bytes when it is in the exact layout fastjson writes (what Java and rmq brokers
        send): ``{"filterServerList":[...],"topicConfigSerializeWrapper":{"dataVersion":
        {"counter":N,"timestamp":T},"topicConfigTable":{`` and ending ``}}}}`` (``{}}}``
        without topics).  The rest is neither parsed nor checked, so this costs the same for
        any size.  None for any other body: `open_request` reads those.
        """
        if compressed or version < MQVersion.V3_0_11 or not body:
            return None
        match = _FASTJSON_REGISTER_HEAD.match(body)
        if match is None or bytes(body[-4:]) not in (b"}}}}", b"{}}}"):
            return None
        try:
            filters = RegisterBrokerBody.from_json(
                {"filterServerList": fastjson.loads(match["filters"])}
            ).filter_server_list
        except ValueError:
            return None
        data_version = DataVersion(timestamp=int(match["timestamp"]), counter=int(match["counter"]))
        return data_version, filters or []

    @classmethod
    def _from_opened(cls, opened: OpenedRegisterBody) -> Self:
        table = dict(entry for chunk in opened.topic_slices(_ALL) for entry in chunk)
        return cls(
            topic_config_serialize_wrapper=TopicConfigSerializeWrapper(
                topic_config_table=table, data_version=opened.data_version
            ),
            filter_server_list=opened.filter_server_list,
        )


_ALL = 1 << 62

_FASTJSON_REGISTER_HEAD = re.compile(
    rb'\{"filterServerList":(?P<filters>\[[^\]\\]*\]),"topicConfigSerializeWrapper":'
    rb'\{"dataVersion":\{"counter":(?P<counter>-?[0-9]{1,18}),'
    rb'"timestamp":(?P<timestamp>-?[0-9]{1,18})\},"topicConfigTable":\{'
)

TopicEntries = list[tuple[str, TopicConfig]]


def _no_entries(start: int, stop: int) -> TopicEntries:
    return []


@dataclass(slots=True)
class OpenedRegisterBody:
    """A REGISTER_BROKER body read up to its topic table (`RegisterBrokerBody.open_request`).

    ``topic_count`` entries are waiting to be decoded; :meth:`topic_slices` decodes them, up
    to ``size`` a slice, as (table key, TopicConfig) pairs, raising :class:`BodyError` (with
    the text `decode_request` would give) at the first bad one.
    """

    data_version: DataVersion
    filter_server_list: list[str] | None
    topic_count: int = 0
    read_entries: Callable[[int, int], TopicEntries] = _no_entries

    def topic_slices(self, size: int) -> Iterator[TopicEntries]:
        for start in range(0, self.topic_count, size):
            yield self.read_entries(start, min(start + size, self.topic_count))


def _open_json(data: Buffer, *, bare_wrapper: bool) -> OpenedRegisterBody:
    """Parse the JSON text, decode all but the topic table's entries, keep those for later.

    The table is cut out of the parsed document before the rest goes through the generic
    decoder, and its entries go through it a slice at a time, so both give the errors and
    values decoding the whole at once would.
    """
    cls: type[Body] = TopicConfigSerializeWrapper if bare_wrapper else RegisterBrokerBody
    try:
        document = fastjson.loads(data)
    except ValueError as exc:
        raise BodyError(f"{cls.__name__}: {exc}") from None
    wrapper = document if bare_wrapper else _get(document, "topicConfigSerializeWrapper")
    table = _get(wrapper, "topicConfigTable")
    if not isinstance(table, Mapping) or not isinstance(wrapper, Mapping):
        wrapper_body, filters = _parts(cls.from_json(document))
        entries = list(wrapper_body.topic_config_table.items())
        return OpenedRegisterBody(
            wrapper_body.data_version, filters, len(entries), lambda a, b: entries[a:b]
        )
    head: dict[Any, Any] = {k: v for k, v in wrapper.items() if k != "topicConfigTable"}
    if not bare_wrapper:
        head = {**document, "topicConfigSerializeWrapper": head}
    wrapper_body, filters = _parts(cls.from_json(head))
    items = list(table.items())
    prefix = "" if bare_wrapper else "RegisterBrokerBody.topicConfigSerializeWrapper: "

    def read_entries(start: int, stop: int) -> TopicEntries:
        try:
            part = TopicConfigSerializeWrapper.from_json(
                {"topicConfigTable": dict(items[start:stop])}
            )
        except BodyError as exc:
            raise BodyError(f"{prefix}{exc}") from None
        return list(part.topic_config_table.items())

    return OpenedRegisterBody(wrapper_body.data_version, filters, len(items), read_entries)


def _parts(body: Body) -> tuple[TopicConfigSerializeWrapper, list[str] | None]:
    """The topic wrapper and filter servers of a decoded register body or bare wrapper."""
    if isinstance(body, RegisterBrokerBody):
        return body.topic_config_serialize_wrapper, body.filter_server_list
    assert isinstance(body, TopicConfigSerializeWrapper)
    return body, None


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, Mapping) else None


def _open_compressed(data: Buffer) -> OpenedRegisterBody:
    """Inflate, read the DataVersion and the filter servers, find each topic's text."""
    content = _inflate(data)
    view = memoryview(content)
    part, pos = _take_part(view, 0)
    data_version = DataVersion.decode(part)
    count, pos = _take_int(view, pos)
    spans: list[int] = []
    end_of_content = len(content)
    unpack = _INT32.unpack_from
    for _ in range(count):
        if pos + 4 > end_of_content:
            raise _truncated()
        (length,) = unpack(content, pos)
        end = pos + 4 + length
        if length < 0 or end > end_of_content:
            raise _truncated()
        spans.append(pos + 4)
        pos = end
    part, pos = _take_part(view, pos)
    filters = _filter_server_list(part)

    def read_entries(start: int, stop: int) -> TopicEntries:
        entries = []
        for index in range(start, stop):
            begin = spans[index]
            (length,) = unpack(content, begin - 4)
            text = content[begin : begin + length].decode("utf-8", "replace")
            config = TopicConfig.from_text(text)
            entries.append((config.topic_name, config))
        return entries

    return OpenedRegisterBody(data_version, filters, len(spans), read_entries)


def _truncated() -> BodyError:
    return BodyError("RegisterBrokerBody: the compressed body ends in the middle of a part")


def _inflate(data: Buffer) -> bytes:
    """The compressed register body's content, refused beyond MAX_INFLATED_REGISTER_BODY."""
    inflater = zlib.decompressobj()
    try:
        content = inflater.decompress(data, MAX_INFLATED_REGISTER_BODY + 1)
    except zlib.error as exc:
        raise BodyError(f"RegisterBrokerBody: bad zlib stream: {exc}") from None
    if len(content) > MAX_INFLATED_REGISTER_BODY:
        raise BodyError(
            f"RegisterBrokerBody: the compressed body inflates to more than "
            f"{MAX_INFLATED_REGISTER_BODY} bytes"
        )
    return content


def _take(view: memoryview, pos: int, length: int) -> tuple[memoryview, int]:
    end = pos + length
    if length < 0 or end > len(view):
        raise _truncated()
    return view[pos:end], end


def _take_int(view: memoryview, pos: int) -> tuple[int, int]:
    chunk, pos = _take(view, pos, 4)
    (value,) = _INT32.unpack(chunk)
    return int(value), pos


def _take_part(view: memoryview, pos: int) -> tuple[memoryview, int]:
    length, pos = _take_int(view, pos)
    return _take(view, pos, length)


def _filter_server_list(part: memoryview) -> list[str] | None:
    """The filter server JSON array; unreadable text gives an empty list, as in Java."""
    try:
        servers = fastjson.loads(part)
    except ValueError:
        return []
    if servers is None:
        return None
    if not isinstance(servers, list):
        return []
    return [str(server) for server in servers if server is not None]


@dataclass(slots=True, kw_only=True)
class QueueData(Body):
    """One broker's queues of one topic, in a route."""

    broker_name: str
    read_queue_nums: int = 0
    write_queue_nums: int = 0
    perm: int = 0
    topic_sys_flag: int = 0


@dataclass(slots=True, kw_only=True)
class BrokerData(Body):
    """A broker name (a master and its slaves): its cluster and broker id -> address."""

    cluster: str
    broker_name: str
    broker_addrs: dict[int, str] = field(default_factory=dict)

    def select_broker_addr(self) -> str | None:
        """The master's address, else a random slave's; None without any address."""
        master = self.broker_addrs.get(MASTER_ID)
        if master is not None:
            return master
        return random.choice(list(self.broker_addrs.values())) if self.broker_addrs else None


@dataclass(slots=True, kw_only=True)
class TopicRouteData(Body):
    """GET_ROUTEINFO_BY_TOPIC answer; ``order_topic_conf`` is left out when None."""

    order_topic_conf: str | None = None
    queue_datas: list[QueueData] = field(default_factory=list)
    broker_datas: list[BrokerData] = field(default_factory=list)
    filter_server_table: dict[str, list[str]] = field(default_factory=dict)


@dataclass(slots=True, kw_only=True)
class ClusterInfo(Body):
    """GET_BROKER_CLUSTER_INFO answer: broker name -> BrokerData, cluster -> broker names."""

    broker_addr_table: dict[str, BrokerData] = field(default_factory=dict)
    cluster_addr_table: dict[str, JavaSet[str]] = field(default_factory=dict)


@dataclass(slots=True, kw_only=True)
class TopicList(Body):
    """A set of topic names; ``broker_addr`` only in the system topic list."""

    topic_list: JavaSet[str] = field(default_factory=list)
    broker_addr: str | None = None


@dataclass(slots=True, kw_only=True)
class KVTable(Body):
    """A string map: a KV config namespace, or a broker's runtime info."""

    table: dict[str, str] = field(default_factory=dict)
