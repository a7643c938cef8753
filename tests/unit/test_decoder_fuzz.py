"""Fuzz of every decoder that reads bytes or text from outside: any input gives either a value
or the decoder's own documented error, never another exception.

The eight targets and their errors: remoting frames, JSON and ROCKETMQ headers
(`RemotingProtocolError`), the frame splitter of a byte stream (`RemotingProtocolError`),
custom headers from extFields (`HeaderError`), message records in a commitlog or pull body
(`RecordError`), batch bodies (`RecordError`), property strings (never an error), SQL92
selectors (`SqlSyntaxError` when compiled, `SqlEvaluationError` when evaluated, never one
from `matches`) and broker / name server config files (`PropertiesSyntaxError` from the
parser, `ConfigError` from the config builders).  Mutation targets start from real inputs:
frames of the requests rmq's client sends, records as the store writes them, selectors of
the SQL tests, a broker config file.

A short run per target in `make test`; 10^6 cases in all under `make stress`
(tests/fuzzing.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import struct
import zlib
from collections.abc import Callable

import pytest
from hypothesis import strategies as st

from rmq.client.api.send import send_request
from rmq.common import javaprops
from rmq.common.config import build_broker_configs, build_namesrv_configs
from rmq.common.configfields import ConfigError
from rmq.common.javanames import camel_case
from rmq.common.message import (
    decode_record,
    encode_batch,
    encode_record_into,
    iter_batch_messages,
    iter_records,
    read_dispatch_info,
)
from rmq.common.msgid import pack_host
from rmq.common.properties import decode_properties_bytes, encode_properties_bytes
from rmq.common.recordwalk import RecordError, iter_frames
from rmq.common.sqlfilter import SqlEvaluationError, SqlSyntaxError, compile_selector
from rmq.remoting import headers
from rmq.remoting.codes import RequestCode, ResponseCode, SerializeType
from rmq.remoting.command import RemotingCommand, create_request, create_response
from rmq.remoting.errors import HeaderError, RemotingProtocolError
from rmq.remoting.frame import FrameSplitter, decode_frame, encode_frame
from rmq.remoting.headercodec import decode_header, header_classes
from tests.fuzzing import (
    STRESS_DECODER_CASES,
    budgets,
    fuzz,
    mutated,
    mutated_frames,
)
from tests.procs import pull_header, send_header

CASES = budgets(300, STRESS_DECODER_CASES)


def _requests() -> list[RemotingCommand]:
    pull = dataclasses.replace(
        pull_header("FuzzTopic", "fuzz-group", queue_id=1, queue_offset=42),
        sys_flag=2,
        commit_offset=40,
        suspend_timeout_millis=15000,
        subscription="a > 3 AND b IN ('x', 'y')",
        sub_version=1700000000000,
        expression_type="SQL92",
    )
    send = send_request(send_header("FuzzTopic", {"KEYS": "k1 k2", "TAGS": "t"}), b"hello")
    answer = create_response(
        ResponseCode.SUCCESS,
        "a remark",
        headers.PullMessageResponseHeader(
            suggest_which_broker_id=0, next_begin_offset=43, min_offset=0, max_offset=99
        ),
        body=b"\x00" * 8,
    )
    return [
        send,
        create_request(RequestCode.PULL_MESSAGE, pull),
        create_request(RequestCode.HEART_BEAT, body=b'{"clientID":"c@1","producerDataSet":[]}'),
        create_request(
            RequestCode.GET_ROUTEINFO_BY_TOPIC, headers.GetRouteInfoRequestHeader(topic="FuzzTopic")
        ),
        answer,
    ]


def _frames() -> list[bytes]:
    """Frames without their length prefix, as `decode_frame` gets them, in both encodings."""
    frames = []
    for command in _requests():
        for serialize_type in SerializeType:
            command.serialize_type = serialize_type
            frames.append(encode_frame(command)[4:])
    return frames


FRAMES = _frames()
_PREFIXED = [struct.pack(">i", len(frame)) + frame for frame in FRAMES]


def _decoded_frame(data: bytes) -> None:
    try:
        command = decode_frame(memoryview(data))
    except RemotingProtocolError:
        return
    assert isinstance(command.code, int)
    assert all(
        isinstance(key, str) and isinstance(value, str)
        for key, value in (command.ext_fields or {}).items()
    )


@pytest.mark.parametrize("cases", CASES)
def test_frame_decoder(cases: int) -> None:
    frames = mutated_frames(_PREFIXED).map(lambda data: data[4:])
    fuzz(frames | st.binary(max_size=64), _decoded_frame, cases)


def _split_stream(chunks: list[bytes]) -> None:
    splitter = FrameSplitter(max_frame_size=4096)
    try:
        for chunk in chunks:
            for raw in splitter.feed(chunk):
                _decoded_frame(bytes(raw))
    except RemotingProtocolError:
        return
    assert 0 <= splitter.pending_bytes <= 4 + 4096


@pytest.mark.parametrize("cases", CASES)
def test_frame_splitter(cases: int) -> None:
    streams = st.lists(mutated(_PREFIXED, max_steps=2), min_size=1, max_size=4).map(b"".join)
    chunked = st.tuples(streams, st.lists(st.integers(1, 64), max_size=6)).map(_chunks)
    fuzz(chunked, _split_stream, cases)


def _chunks(pair: tuple[bytes, list[int]]) -> list[bytes]:
    data, sizes = pair
    chunks, position = [], 0
    for size in sizes:
        chunks.append(data[position : position + size])
        position += size
    return [*chunks, data[position:]]


def _header_keys(cls: type) -> list[str]:
    keys = []
    for field in dataclasses.fields(cls):
        keys.append(field.metadata.get("key", camel_case(field.name)))
        if "short" in field.metadata:
            keys.append(field.metadata["short"])
    return keys


HEADER_CLASSES = header_classes()
_numbers = st.integers(-(2**64), 2**64).map(str)
_header_values = _numbers | st.sampled_from(["", "true", "FALSE", " 1", "1.5", "0x10", "-"])
_header_values |= st.text(max_size=8)


@st.composite
def _header_cases(draw: st.DrawFn) -> tuple[type, dict[str, str], bool]:
    cls = draw(st.sampled_from(HEADER_CLASSES))
    known = _header_keys(cls)
    keys = st.sampled_from(known) | st.text(max_size=4) if known else st.text(max_size=4)
    short_keys = any("short" in field.metadata for field in dataclasses.fields(cls))
    fields = draw(st.dictionaries(keys, _header_values, max_size=12))
    return cls, fields, short_keys and draw(st.booleans())


def _decoded_header(case: tuple[type, dict[str, str], bool]) -> None:
    cls, ext_fields, short_keys = case
    try:
        decoded: object = decode_header(cls, ext_fields, short_keys=short_keys)
    except HeaderError:
        return
    assert isinstance(decoded, cls)


@pytest.mark.parametrize("cases", CASES)
def test_header_codec(cases: int) -> None:
    fuzz(_header_cases(), _decoded_header, cases)


def _record(body: bytes, properties: dict[str, str], *, v6: bool, physical_offset: int) -> bytes:
    buffer = bytearray(4096)
    size = encode_record_into(
        buffer,
        0,
        queue_id=3,
        flag=0,
        queue_offset=7,
        physical_offset=physical_offset,
        sys_flag=0,
        born_timestamp=1_700_000_000_000,
        born_host=pack_host("::1" if v6 else "10.0.0.1", 5000),
        store_timestamp=1_700_000_000_001,
        store_host=pack_host("127.0.0.1", 10911),
        reconsume_times=0,
        prepared_transaction_offset=0,
        body=body,
        topic_bytes=b"FuzzTopic",
        properties_bytes=encode_properties_bytes(properties),
    )
    return bytes(buffer[:size])


_ONE = _record(
    b"hello", {"KEYS": "a b", "TAGS": "t", "UNIQ_KEY": "AC1"}, v6=False, physical_offset=0
)
_TWO = _record(b"", {}, v6=True, physical_offset=len(_ONE))
_COMPRESSED = _record(zlib.compress(b"x" * 300), {"a": "b"}, v6=False, physical_offset=0)
RECORDS = [_ONE, _TWO, _ONE + _TWO, _COMPRESSED, _ONE + b"\x00" * 16]


def _decoded_records(data: bytes) -> None:
    try:
        record = decode_record(data)
    except RecordError:
        pass
    else:
        assert 0 < record.total_size <= len(data)
        assert isinstance(record.topic, str)
        record.body_crc_matches()
    with contextlib.suppress(RecordError):
        read_dispatch_info(data, 0, check_crc=True)
    walked = [position for position, _ in iter_records(data)]
    framed = [frame[0] for frame in iter_frames(data, 0, len(data))]
    assert walked == framed


@pytest.mark.parametrize("cases", CASES)
def test_record_decoder(cases: int) -> None:
    fuzz(mutated(RECORDS), _decoded_records, cases)


BATCHES = [
    encode_batch(
        [(0, b"one", b"KEYS\x01k"), (5, b"", b""), (0, b"three" * 9, b"a\x01b\x02c\x01d")]
    ),
    encode_batch([(0, b"solo", b"")]),
]


def _decoded_batch(data: bytes) -> None:
    try:
        messages = list(iter_batch_messages(data))
    except RecordError:
        return
    assert sum(len(message.body) for message in messages) <= len(data)


@pytest.mark.parametrize("cases", CASES)
def test_batch_decoder(cases: int) -> None:
    fuzz(mutated(BATCHES), _decoded_batch, cases)


_PROPERTIES = [encode_properties_bytes({"KEYS": "a b", "TAGS": "t", "é": "ü\x01x"}), b"\x01\x02"]


def _decoded_properties(data: bytes) -> None:
    properties = decode_properties_bytes(data)
    assert all(
        isinstance(name, str) and name and isinstance(value, str) and value
        for name, value in properties.items()
    )


@pytest.mark.parametrize("cases", CASES)
def test_property_decoder(cases: int) -> None:
    fuzz(mutated(_PROPERTIES) | st.binary(max_size=32), _decoded_properties, cases)


SELECTORS = [
    "a > 3 AND b IN ('x', 'y')",
    "TAGS = 'tag1' OR (price BETWEEN 10 AND 20.5)",
    "NOT (region IS NULL) AND region <> 'eu' AND n <= -9223372036854775808",
    "flag = TRUE AND s LIKE 'a%' AND t NOT IN ('q') AND x IS NOT NULL",
    "1.5E10 >= a AND b NOT BETWEEN 1 AND 2",
]
_SQL_PROPERTIES = st.dictionaries(
    st.sampled_from(["a", "b", "TAGS", "price", "region", "n", "flag", "s", "t", "x"]),
    st.sampled_from(["1", "x", "-0", "NaN", "1e400", "true", "", "9223372036854775808"])
    | st.text(max_size=6),
)


def _compiled_selector(case: tuple[bytes, dict[str, str]]) -> None:
    data, properties = case
    try:
        selector = compile_selector(data.decode("utf-8", "replace"))
    except SqlSyntaxError:
        return
    assert isinstance(selector.matches(properties), bool)
    with contextlib.suppress(SqlEvaluationError):
        assert selector.evaluate(properties) in (True, False, None)


@pytest.mark.parametrize("cases", CASES)
def test_sql_selector(cases: int) -> None:
    seeds = [selector.encode() for selector in SELECTORS]
    fuzz(st.tuples(mutated(seeds), _SQL_PROPERTIES), _compiled_selector, cases)


CONFIG = b"""# a broker
brokerClusterName = DefaultCluster
brokerName=broker-a
listenPort:10911
namesrvAddr=127.0.0.1:9876;127.0.0.1:9877
brokerRole=SYNC_MASTER
flushDiskType=ASYNC_FLUSH
storePathRootDir=/tmp/store\\
  /more
mappedFileSizeCommitLog=1073741824
deleteWhen=04
key\\u0041=\\t value \\
"""


def _built_configs(data: bytes) -> None:
    try:
        properties = javaprops.loads(data.decode("iso-8859-1"))
    except javaprops.PropertiesSyntaxError:
        return
    builders: list[Callable[..., object]] = [build_broker_configs, build_namesrv_configs]
    for build in builders:
        with contextlib.suppress(ConfigError):
            build(properties)


@pytest.mark.parametrize("cases", CASES)
def test_config_parser(cases: int) -> None:
    fuzz(mutated([CONFIG]), _built_configs, cases)


def test_a_namesrv_addr_port_of_non_ascii_digits_is_a_config_error() -> None:
    # Found by the fuzz: "\u00b9" (superscript one) passes str.isdigit() but not int().
    with pytest.raises(ConfigError, match="namesrvAddr"):
        build_broker_configs({"namesrvAddr": "127.0.0.1:\u00b9876"})
