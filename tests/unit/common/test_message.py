"""The stored message record codec, batch bodies and the JSON message record.

Expected bytes are built here field by field from the spec's record table with struct.
"""

from __future__ import annotations

import base64
import importlib.util
import ipaddress
import mmap
import struct
import zlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmq.common.compression import CompressionError
from rmq.common.jsonrecord import to_record_dict
from rmq.common.message import (
    decode_record,
    encode_batch,
    encode_batch_into,
    encode_record_into,
    iter_batch_messages,
    iter_records,
    prepare_batch,
    read_dispatch_info,
    record_size,
)
from rmq.common.msgid import pack_host
from rmq.common.properties import encode_properties_bytes
from rmq.common.recordwalk import (
    BLANK_MAGIC,
    LAYOUTS,
    MESSAGE_MAGIC,
    PropertiesSizeError,
    RecordError,
    encode_blank_into,
    layout_of,
    patch_record,
    peek_size_magic,
    store_timestamp_at,
)

HELLO = b"Hello RocketMQ"
HELLO_CRC = 1774740973  # spec 8.1
PROPS = b"TAGS\x01TagA\x02KEYS\x01k1  k2\x02UNIQ_KEY\x01C0A8010A0001DEADBEEF0000000A0001"


def record_fields(**overrides: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "queue_id": 3,
        "flag": 7,
        "queue_offset": 42,
        "physical_offset": 8000,
        "sys_flag": 0,
        "born_timestamp": 1_700_000_000_123,
        "born_host": pack_host("10.0.0.1", 54321),
        "store_timestamp": 1_700_000_000_456,
        "store_host": pack_host("192.168.1.10", 10911),
        "reconsume_times": 2,
        "prepared_transaction_offset": 0,
        "body": HELLO,
        "topic_bytes": b"TopicTest",
        "properties_bytes": PROPS,
    }
    fields.update(overrides)
    return fields


def encode(**overrides: Any) -> bytes:
    fields = record_fields(**overrides)
    buf = bytearray(70_000)
    size = encode_record_into(buf, 0, **fields)
    return bytes(buf[:size])


def expected_record(sys_flag: int, born: bytes, store: bytes, props: bytes = PROPS) -> bytes:
    """The record of ``record_fields()`` written out from the spec table."""
    topic = b"TopicTest"
    tail = (
        struct.pack(">i", len(HELLO))
        + HELLO
        + struct.pack(">b", len(topic))
        + topic
        + struct.pack(">h", len(props))
        + props
    )
    head = (
        struct.pack(">I", 0xDAA320A7)
        + struct.pack(">i", HELLO_CRC)
        + struct.pack(">i", 3)
        + struct.pack(">i", 7)
        + struct.pack(">q", 42)
        + struct.pack(">q", 8000)
        + struct.pack(">i", sys_flag)
        + struct.pack(">q", 1_700_000_000_123)
        + born
        + struct.pack(">q", 1_700_000_000_456)
        + store
        + struct.pack(">i", 2)
        + struct.pack(">q", 0)
    )
    return struct.pack(">i", 4 + len(head) + len(tail)) + head + tail


def test_ipv4_record_golden_bytes() -> None:
    born = bytes([10, 0, 0, 1]) + struct.pack(">i", 54321)
    store = bytes([192, 168, 1, 10]) + struct.pack(">i", 10911)
    data = encode()
    assert data == expected_record(0, born, store)
    # Offsets from the spec table (IPv4 both).
    assert data[48:52] == bytes([10, 0, 0, 1])
    assert struct.unpack_from(">q", data, 56)[0] == 1_700_000_000_456
    assert data[64:68] == bytes([192, 168, 1, 10])
    assert struct.unpack_from(">i", data, 84)[0] == len(HELLO)
    assert len(data) == 84 + 4 + len(HELLO) + 1 + 9 + 2 + len(PROPS)


def test_ipv6_record_golden_bytes_and_host_bits_from_lengths() -> None:
    born_ip = ipaddress.IPv6Address("2001:db8::1").packed
    born = born_ip + struct.pack(">i", 40000)
    store = bytes([192, 168, 1, 10]) + struct.pack(">i", 10911)
    data = encode(born_host=pack_host("2001:db8::1", 40000), sys_flag=0x20 | 0x1)
    # Born host IPv6 sets bit 4; the stale store-host bit 5 is cleared (store host is IPv4).
    assert data == expected_record(0x10 | 0x1, born, store)
    assert struct.unpack_from(">q", data, 68)[0] == 1_700_000_000_456

    both = encode(born_host=pack_host("2001:db8::1", 40000), store_host=pack_host("::1", 10911))
    store6 = ipaddress.IPv6Address("::1").packed + struct.pack(">i", 10911)
    assert both == expected_record(0x30, born, store6)


def test_layout_table_and_sizes() -> None:
    assert LAYOUTS[0].body_length_pos == 84
    assert layout_of(0x10).store_timestamp_pos == 68
    assert layout_of(0x20).store_timestamp_pos == 56
    assert layout_of(0x30).body_length_pos == 108
    assert record_size(len(HELLO), 9, len(PROPS), False, False) == len(encode())
    v6 = encode(born_host=pack_host("::1", 1), store_host=pack_host("::2", 2))
    assert record_size(len(HELLO), 9, len(PROPS), True, True) == len(v6)


def test_decode_every_field() -> None:
    record = decode_record(encode())
    assert record.total_size == len(encode())
    assert record.magic == MESSAGE_MAGIC
    assert record.body_crc == HELLO_CRC
    assert (record.queue_id, record.flag, record.queue_offset) == (3, 7, 42)
    assert record.physical_offset == 8000
    assert record.sys_flag == 0
    assert record.born_timestamp == 1_700_000_000_123
    assert record.born_host == "10.0.0.1:54321"
    assert record.store_timestamp == 1_700_000_000_456
    assert record.store_host == "192.168.1.10:10911"
    assert record.reconsume_times == 2
    assert record.prepared_transaction_offset == 0
    assert record.body == HELLO
    assert record.topic == "TopicTest"
    assert record.properties == {
        "TAGS": "TagA",
        "KEYS": "k1  k2",
        "UNIQ_KEY": "C0A8010A0001DEADBEEF0000000A0001",
    }
    assert record.offset_msg_id == "C0A8010A00002A9F0000000000001F40"  # spec 8.1
    assert record.tags == "TagA"
    assert record.keys == ["k1", "k2"]
    assert record.msg_id == "C0A8010A0001DEADBEEF0000000A0001"
    assert record.body_crc_matches()


def test_ipv6_hosts_render_bracketed() -> None:
    data = encode(born_host=pack_host("2001:db8::1", 40000), store_host=pack_host("::1", 10911))
    record = decode_record(data)
    assert record.born_host == "[2001:db8::1]:40000"
    assert record.store_host == "[::1]:10911"
    assert len(record.offset_msg_id) == 56
    assert record.offset_msg_id == "0" * 31 + "1" + "00002A9F" + "0000000000001F40"


def rendered_address(ip: str, port: int) -> str:
    """How a decoded record shows a host; IPv4-mapped IPv6 addresses are stored as IPv4."""
    address = ipaddress.ip_address(ip)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is None:
        return f"[{address}]:{port}"
    mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else address
    return f"{mapped}:{port}"


hosts = st.one_of(st.ip_addresses(v=4).map(str), st.ip_addresses(v=6).map(str)).flatmap(
    lambda ip: st.integers(0, 65535).map(lambda port: (ip, port))
)
texts = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x01\x02"), min_size=1)
int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)


@settings(max_examples=150)
@given(
    queue_id=int32,
    flag=int32,
    queue_offset=int64,
    physical_offset=int64,
    sys_flag=int32,
    born_timestamp=int64,
    store_timestamp=int64,
    reconsume_times=int32,
    prepared_transaction_offset=int64,
    born=hosts,
    store=hosts,
    body=st.binary(max_size=3000),
    topic=st.text(max_size=40).filter(lambda t: len(t.encode()) <= 127),
    properties=st.dictionaries(texts, texts, max_size=6),
)
def test_round_trip(
    born: tuple[str, int],
    store: tuple[str, int],
    topic: str,
    properties: dict[str, str],
    **fields: Any,
) -> None:
    buf = bytearray(80_000)
    props = encode_properties_bytes(properties)
    size = encode_record_into(
        buf,
        11,
        born_host=pack_host(*born),
        store_host=pack_host(*store),
        topic_bytes=topic.encode(),
        properties_bytes=props,
        **fields,
    )
    record = decode_record(buf, 11)
    born_address = rendered_address(*born)
    born_v6 = born_address.startswith("[")
    store_v6 = rendered_address(*store).startswith("[")
    assert record.total_size == size
    assert size == record_size(
        len(fields["body"]), len(topic.encode()), len(props), born_v6, store_v6
    )
    for name in (
        "queue_id",
        "flag",
        "queue_offset",
        "physical_offset",
        "born_timestamp",
        "store_timestamp",
        "reconsume_times",
        "prepared_transaction_offset",
        "body",
    ):
        assert getattr(record, name) == fields[name]
    assert record.sys_flag == (fields["sys_flag"] & ~0x30) | born_v6 << 4 | store_v6 << 5
    assert record.topic == topic
    assert record.properties == properties
    assert record.born_host == born_address
    assert record.body_crc == zlib.crc32(fields["body"]) & 0x7FFFFFFF
    assert [pos for pos, _ in iter_records(buf, 11, 11 + size)] == [11]


def test_compressed_body_is_stored_as_sent_and_decompressed_on_request() -> None:
    text = "Hello RocketMQ " * 400
    packed = zlib.compress(text.encode())
    for sys_flag in (0x1, 0x301):
        record = decode_record(encode(body=packed, sys_flag=sys_flag))
        assert record.body == packed
        assert record.body_crc == zlib.crc32(packed) & 0x7FFFFFFF
        assert record.decompressed_body() == text.encode()
        assert to_record_dict(record)["body"] == text


@pytest.mark.skipif(importlib.util.find_spec("lz4") is not None, reason="lz4 is installed")
def test_unavailable_codec_is_a_clear_error() -> None:
    record = decode_record(encode(body=b"\x04\x22\x4d\x18", sys_flag=0x101))
    with pytest.raises(CompressionError, match="install the Python package 'lz4'"):
        record.decompressed_body()
    with pytest.raises(CompressionError, match="lz4"):
        to_record_dict(record)


def test_empty_properties_and_max_topic_length() -> None:
    record = decode_record(encode(properties_bytes=b"", topic_bytes=b"T" * 127))
    assert record.properties == {}
    assert record.topic == "T" * 127
    assert record.msg_id == record.offset_msg_id
    assert record.total_size == 84 + 4 + len(HELLO) + 1 + 127 + 2
    with pytest.raises(RecordError, match="topic is 128 bytes"):
        encode(topic_bytes=b"T" * 128)
    with pytest.raises(RecordError, match="properties are 32768 bytes"):
        encode(properties_bytes=b"x" * 32768)


def test_non_ascii_topic_and_properties() -> None:
    props = encode_properties_bytes({"名字": "值😀", "KEYS": "ключ"})
    record = decode_record(encode(properties_bytes=props, topic_bytes="主题".encode()))
    assert record.topic == "主题"
    assert record.properties == {"名字": "值😀", "KEYS": "ключ"}
    assert record.keys == ["ключ"]


def test_encoding_into_mmap_and_decoding_from_it() -> None:
    with mmap.mmap(-1, 4096) as mapped:
        size = encode_record_into(mapped, 100, **record_fields())
        assert decode_record(mapped, 100).body == HELLO
        assert read_dispatch_info(mapped, 100, check_crc=True).total_size == size
        assert mapped[100 : 100 + size] == encode()


def test_record_that_does_not_fit_is_refused_without_writing() -> None:
    buf = bytearray(100)
    with pytest.raises(RecordError, match="does not fit"):
        encode_record_into(buf, 0, **record_fields())
    assert buf == bytearray(100)


def test_blank_record() -> None:
    buf = bytearray(64)
    encode_blank_into(buf, 16, 48)
    assert buf[16:24] == struct.pack(">iI", 48, 0xCBD43194)
    assert peek_size_magic(buf, 16) == (48, BLANK_MAGIC)
    with pytest.raises(RecordError, match="blank"):
        decode_record(buf, 16)
    with pytest.raises(RecordError):
        encode_blank_into(buf, 60, 4)


@pytest.mark.parametrize("cut", [0, 4, 7, 8, 50, 84, 90, -1])
def test_truncated_records_raise(cut: int) -> None:
    data = encode()[:cut] if cut >= 0 else encode()[:-1]
    with pytest.raises(RecordError, match="offset 0"):
        decode_record(data)
    assert list(iter_records(data)) == []


def test_garbage_and_inconsistent_records_raise() -> None:
    good = bytearray(encode())
    with pytest.raises(RecordError, match="bad magic 0x00000000 at offset 0"):
        decode_record(bytes(200))
    v2 = bytearray(good)
    v2[4:8] = struct.pack(">I", 0xDAA320AB)
    with pytest.raises(RecordError, match=r"5\.x"):
        decode_record(v2)
    bigger = bytearray(good) + b"\0"
    struct.pack_into(">i", bigger, 0, len(good) + 1)
    with pytest.raises(RecordError, match="does not match its fields"):
        decode_record(bigger)
    long_body = bytearray(good)
    struct.pack_into(">i", long_body, 84, 10_000)
    with pytest.raises(RecordError, match="body length 10000"):
        decode_record(long_body)
    bad_topic = bytearray(good)
    bad_topic[88 + len(HELLO)] = 200
    with pytest.raises(RecordError, match="topic length 200"):
        decode_record(bad_topic)


def test_iter_records_walks_concatenated_records_and_stops_at_garbage() -> None:
    first = encode()
    second = encode(queue_offset=43, physical_offset=8000 + len(first), body=b"second")
    data = first + second + b"\xde\xad" * 20
    records = list(iter_records(data))
    assert [pos for pos, _ in records] == [0, len(first)]
    assert [r.body for _, r in records] == [HELLO, b"second"]
    assert [r.queue_offset for _, r in iter_records(memoryview(data), len(first))] == [43]
    assert [pos for pos, _ in iter_records(data, 0, len(first) + 10)] == [0]


def test_decode_without_body() -> None:
    record = decode_record(encode(), with_body=False)
    assert record.body is None
    assert record.decompressed_body() is None
    assert to_record_dict(record)["body"] is None


def test_patch_record_rewrites_offsets_and_store_time() -> None:
    for born_host, ts_pos in ((pack_host("10.0.0.1", 1), 56), (pack_host("::1", 1), 68)):
        buf = bytearray(
            encode(queue_offset=0, physical_offset=0, store_timestamp=0, born_host=born_host)
        )
        patch_record(buf, 0, queue_offset=77, physical_offset=123456, store_timestamp=999)
        assert struct.unpack_from(">qq", buf, 20) == (77, 123456)
        assert struct.unpack_from(">q", buf, ts_pos)[0] == 999
        record = decode_record(buf)
        assert (record.queue_offset, record.physical_offset, record.store_timestamp) == (
            77,
            123456,
            999,
        )
        assert store_timestamp_at(buf, 0) == 999


def test_dispatch_info() -> None:
    info = read_dispatch_info(encode(), 0)
    assert info.topic == "TopicTest"
    assert (info.queue_id, info.queue_offset, info.physical_offset) == (3, 42, 8000)
    assert info.tags_code == 2598919
    assert info.keys == "k1  k2"
    assert info.uniq_key == "C0A8010A0001DEADBEEF0000000A0001"
    assert info.store_timestamp == 1_700_000_000_456
    assert info.sys_flag == 0
    assert read_dispatch_info(encode(properties_bytes=b""), 0).tags_code == 0

    corrupt = bytearray(encode())
    corrupt[88] ^= 0xFF  # first body byte
    assert read_dispatch_info(corrupt, 0).total_size == len(corrupt)
    with pytest.raises(RecordError, match="body CRC"):
        read_dispatch_info(corrupt, 0, check_crc=True)
    assert not decode_record(corrupt).body_crc_matches()


# Batch bodies (spec 3.8).


def batch_entry(flag: int, body: bytes, props: bytes, *, junk: bool = False) -> bytes:
    total = 4 + 4 + 4 + 4 + 4 + len(body) + 2 + len(props)
    head = struct.pack(
        ">iiii", 12345 if junk else total, -1 if junk else 0, 99 if junk else 0, flag
    )
    return head + struct.pack(">i", len(body)) + body + struct.pack(">h", len(props)) + props


def test_batch_body_decodes_by_lengths_only() -> None:
    body = (
        batch_entry(1, b"first", b"KEYS\x01a", junk=True)
        + batch_entry(0, b"", b"")
        + batch_entry(-5, "二".encode(), b"UNIQ_KEY\x01X")
    )
    messages = [(m.flag, bytes(m.body), bytes(m.properties)) for m in iter_batch_messages(body)]
    assert messages == [
        (1, b"first", b"KEYS\x01a"),
        (0, b"", b""),
        (-5, "二".encode(), b"UNIQ_KEY\x01X"),
    ]


def test_batch_encoder_writes_the_java_layout() -> None:
    entries = [(1, b"first", b"KEYS\x01a"), (0, b"second", b"")]
    assert encode_batch(entries) == b"".join(batch_entry(*entry) for entry in entries)
    assert [bytes(m.body) for m in iter_batch_messages(encode_batch(entries))] == [
        b"first",
        b"second",
    ]


@pytest.mark.parametrize("cut", [3, 19, 25, 28, 30])
def test_truncated_batch_raises(cut: int) -> None:
    body = batch_entry(1, b"first", b"KEYS\x01a")
    with pytest.raises(RecordError, match="batch message at offset 0"):
        list(iter_batch_messages(body[:cut]))


# Storing batches: prepare_batch + encode_batch_into.

BORN = pack_host("10.0.0.1", 54321)
STORE = pack_host("192.168.1.10", 10911)
STORE_V6 = pack_host("fe80::1", 10911)


def spec_record(
    *, flag: int, queue_offset: int, physical_offset: int, body: bytes, props: bytes, store: bytes
) -> bytes:
    """A record of topic ``TopicTest``, queue 3, written out from the spec table."""
    sys_flag = 0x20 if len(store) == 20 else 0
    fields = (
        struct.pack(">I", MESSAGE_MAGIC)
        + struct.pack(">i", zlib.crc32(body) & 0x7FFFFFFF)
        + struct.pack(">i", 3)
        + struct.pack(">i", flag)
        + struct.pack(">q", queue_offset)
        + struct.pack(">q", physical_offset)
        + struct.pack(">i", sys_flag)
        + struct.pack(">q", 1_700_000_000_123)
        + BORN
        + struct.pack(">q", 1_700_000_000_456)
        + store
        + struct.pack(">i", 2)
        + struct.pack(">q", 0)
        + struct.pack(">i", len(body))
        + body
        + struct.pack(">b", 9)
        + b"TopicTest"
        + struct.pack(">h", len(props))
        + props
    )
    return struct.pack(">i", 4 + len(fields)) + fields


class StoreLog(bytearray):
    """A buffer noting, at every slice store, its range and the TOTALSIZE at position 0."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.stores: list[tuple[int, int, bytes]] = []

    def __setitem__(self, key: Any, value: Any) -> None:
        self.stores.append((key.start, key.stop, bytes(self[0:4])))
        super().__setitem__(key, value)


def encode_prepared(buf: Any, store: bytes = STORE, **overrides: Any) -> None:
    batch = overrides.pop("batch")
    fields: dict[str, Any] = {
        "queue_id": 3,
        "queue_offset": 10,
        "physical_offset": 5000,
        "sys_flag": 0,
        "born_timestamp": 1_700_000_000_123,
        "born_host": BORN,
        "store_timestamp": 1_700_000_000_456,
        "store_host": store,
        "reconsume_times": 2,
    }
    fields.update(overrides)
    encode_batch_into(buf, 0, batch, **fields)


@pytest.mark.parametrize("store", [STORE, STORE_V6], ids=["ipv4", "ipv6-store"])
def test_a_batch_is_stored_as_spec_records_with_the_first_size_written_last(store: bytes) -> None:
    entries = [
        (1, b"first", b"TAGS\x01TagA\x02KEYS\x01k1 k2"),
        (0, b"", b"UNIQ_KEY\x01U2\x02"),
        (7, b"third body", b""),
    ]
    batch = prepare_batch(
        encode_batch(entries),
        b"WAIT\x01true",
        b"TopicTest",
        born_v6=False,
        store_v6=len(store) == 20,
    )
    stored_props = [
        b"TAGS\x01TagA\x02KEYS\x01k1 k2\x02WAIT\x01true",
        b"UNIQ_KEY\x01U2\x02WAIT\x01true",
        b"WAIT\x01true",
    ]
    records: list[bytes] = []
    for n, ((flag, body, _), props) in enumerate(zip(entries, stored_props, strict=True)):
        records.append(
            spec_record(
                flag=flag,
                queue_offset=10 + n,
                physical_offset=5000 + sum(map(len, records)),
                body=body,
                props=props,
                store=store,
            )
        )
    expected = b"".join(records)
    buf = StoreLog(len(expected) + 16)
    encode_prepared(buf, store, batch=batch)
    assert bytes(buf) == expected + bytes(16)
    assert batch.total_size == len(expected)
    assert batch.sizes == [len(record) for record in records]
    # Every byte but the first TOTALSIZE goes in while that TOTALSIZE still reads 0.
    *before_last, last = buf.stores
    assert all(size == bytes(4) for _, _, size in before_last)
    assert last == (0, 4, bytes(4))


def test_a_prepared_batch_carries_the_dispatch_fields_of_each_message() -> None:
    entries = [
        (0, b"a", b"TAGS\x01TagA\x02KEYS\x01k1 k2\x02UNIQ_KEY\x01U1"),
        (0, b"b", b"TAGS\x01\x02KEYS\x01k3"),
        (0, b"c", b""),
    ]
    batch = prepare_batch(encode_batch(entries), b"", b"T", born_v6=False, store_v6=False)
    assert batch.tags_codes == [2598919, 0, 0]
    assert batch.keys == ["k1 k2", "k3", None]
    assert batch.uniq_keys == ["U1", None, None]
    assert batch.flags == [0, 0, 0]
    assert [bytes(body) for body in batch.bodies] == [b"a", b"b", b"c"]
    # Batch-level properties come after the message's own: theirs win.
    overridden = prepare_batch(
        encode_batch(entries), b"KEYS\x01batch-key", b"T", born_v6=False, store_v6=False
    )
    assert overridden.keys == ["batch-key"] * 3
    assert overridden.uniq_keys == ["U1", None, None]


def test_a_batch_whose_merged_properties_are_too_long_is_refused() -> None:
    inner = b"KEYS\x01" + b"k" * 32750
    body = encode_batch([(0, b"x", inner)])
    assert prepare_batch(body, b"", b"T", born_v6=False, store_v6=False).sizes
    with pytest.raises(PropertiesSizeError, match="32767"):
        prepare_batch(body, b"WAIT\x01true" * 3, b"T", born_v6=False, store_v6=False)
    with pytest.raises(RecordError, match="topic"):
        prepare_batch(body, b"", b"t" * 128, born_v6=False, store_v6=False)
    with pytest.raises(RecordError, match="batch message at offset 0"):
        prepare_batch(body[:30], b"", b"T", born_v6=False, store_v6=False)


def test_a_batch_that_cannot_be_written_leaves_the_buffer_zero() -> None:
    batch = prepare_batch(
        encode_batch([(0, b"one", b""), (0, b"two", b"")]), b"", b"T", born_v6=False, store_v6=False
    )
    buf = bytearray(batch.total_size)
    with pytest.raises(RecordError, match="hosts"):
        encode_prepared(buf, STORE_V6, batch=batch)
    with pytest.raises(RecordError, match="does not fit"):
        encode_prepared(bytearray(batch.total_size - 1), batch=batch)
    with pytest.raises(RecordError, match="batch at offset 0"):
        encode_prepared(buf, batch=batch, queue_id=2**31)
    assert buf == bytearray(batch.total_size)


# The JSON message record.


def test_record_dict_schema_for_text_body() -> None:
    record = decode_record(encode())
    assert to_record_dict(record, broker_name="broker-a") == {
        "topic": "TopicTest",
        "brokerName": "broker-a",
        "queueId": 3,
        "queueOffset": 42,
        "commitLogOffset": 8000,
        "msgId": "C0A8010A0001DEADBEEF0000000A0001",
        "offsetMsgId": "C0A8010A00002A9F0000000000001F40",
        "tags": "TagA",
        "keys": ["k1", "k2"],
        "properties": {
            "TAGS": "TagA",
            "KEYS": "k1  k2",
            "UNIQ_KEY": "C0A8010A0001DEADBEEF0000000A0001",
        },
        "body": "Hello RocketMQ",
        "bodyCrc": HELLO_CRC,
        "flag": 7,
        "sysFlag": 0,
        "bornTimestamp": 1_700_000_000_123,
        "storeTimestamp": 1_700_000_000_456,
        "bornHost": "10.0.0.1:54321",
        "storeHost": "192.168.1.10:10911",
        "reconsumeTimes": 2,
        "preparedTransactionOffset": 0,
    }


def test_record_dict_for_binary_body_and_no_properties() -> None:
    body = b"\xff\x00\xfe binary"
    result = to_record_dict(decode_record(encode(body=body, properties_bytes=b"")))
    assert result["body"] == base64.b64encode(body).decode()
    assert result["bodyEncoding"] == "base64"
    assert result["brokerName"] is None
    assert result["tags"] is None
    assert result["keys"] == []
    assert result["msgId"] == result["offsetMsgId"] == "C0A8010A00002A9F0000000000001F40"
    assert list(result)[10:13] == ["body", "bodyEncoding", "bodyCrc"]
