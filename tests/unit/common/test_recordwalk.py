"""The record walker (``iter_frames``, ``frame_at``) and the codec (``decode_record``,
``dispatch_info``) agree on every input: valid records, random bytes and damaged records
(truncated, bytes flipped, BLANK and zero tails)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from rmq.common.message import (
    decode_record,
    dispatch_info,
    encode_record_into,
    read_dispatch_info,
    record_size,
)
from rmq.common.msgid import pack_host
from rmq.common.properties import decode_properties_bytes, encode_properties_bytes
from rmq.common.recordwalk import (
    BLANK_MAGIC,
    MESSAGE_MAGIC,
    MIN_RECORD_SIZE,
    RecordError,
    body_crc,
    encode_blank_into,
    frame_at,
    iter_frames,
    layout_of,
)

HOSTS = (pack_host("10.0.0.1", 9876), pack_host("fe80::1", 10911))


@st.composite
def records(draw: st.DrawFn) -> bytes:
    """One valid record with random fields and host widths."""
    body = draw(st.binary(max_size=64))
    topic = draw(st.text(min_size=0, max_size=20)).encode()[:127]
    props = encode_properties_bytes(
        draw(st.dictionaries(st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "a"]), st.text()))
    )[:32767]
    born = draw(st.sampled_from(HOSTS))
    store = draw(st.sampled_from(HOSTS))
    size = record_size(len(body), len(topic), len(props), len(born) == 20, len(store) == 20)
    buf = bytearray(size)
    encode_record_into(
        buf,
        0,
        queue_id=draw(st.integers(0, 255)),
        flag=draw(st.integers(-(2**31), 2**31 - 1)),
        queue_offset=draw(st.integers(0, 2**40)),
        physical_offset=draw(st.integers(0, 2**40)),
        sys_flag=draw(st.integers(0, 2**31 - 1)),
        born_timestamp=draw(st.integers(0, 2**45)),
        born_host=born,
        store_timestamp=draw(st.integers(0, 2**45)),
        store_host=store,
        reconsume_times=draw(st.integers(0, 16)),
        prepared_transaction_offset=draw(st.integers(0, 2**40)),
        body=body,
        topic_bytes=topic,
        properties_bytes=props,
    )
    return bytes(buf)


@st.composite
def damaged(draw: st.DrawFn) -> bytes:
    """A few records, then damage: a cut, flipped bytes, a BLANK or zero tail, garbage."""
    data = bytearray(b"".join(draw(st.lists(records(), min_size=1, max_size=3))))
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(data) - 1))
        data[at] ^= draw(st.integers(1, 255))
    tail = draw(st.sampled_from(["none", "blank", "zeros", "garbage"]))
    if tail == "blank":
        blank = bytearray(draw(st.integers(8, 64)))
        encode_blank_into(blank, 0, len(blank))
        data += blank
    elif tail == "zeros":
        data += bytes(draw(st.integers(1, 64)))
    elif tail == "garbage":
        data += draw(st.binary(min_size=1, max_size=64))
    cut = draw(st.integers(0, len(data)))
    return bytes(data[:cut]) if draw(st.booleans()) else bytes(data)


def decoded_walk(buf: bytes) -> list[tuple[int, Any]]:
    """What the codec finds at each position the records lead to, up to the first error."""
    found = []
    pos = 0
    while pos + 8 <= len(buf):
        try:
            record = decode_record(buf, pos)
        except RecordError:
            break
        found.append((pos, record))
        pos += record.total_size
    return found


def assert_agree(buf: bytes) -> None:
    frames = list(iter_frames(buf, 0, len(buf)))
    decoded = decoded_walk(buf)
    assert [frame[0] for frame in frames] == [pos for pos, _ in decoded]
    for frame, (pos, record) in zip(frames, decoded, strict=True):
        _, end, prefix, layout, body_pos, body_end, topic_end = frame
        assert end == pos + record.total_size
        assert prefix == record[:8]
        assert layout == layout_of(record.sys_flag)
        assert buf[body_pos:body_end] == record.body
        assert buf[body_end + 1 : topic_end].decode("utf-8", "replace") == record.topic
        assert decode_properties_bytes(buf[topic_end + 2 : end]) == record.properties
        crc_ok = body_crc(buf, body_pos, body_end) == prefix[2]
        assert crc_ok == record.body_crc_matches()
        assert dispatch_info(buf, frame) == read_dispatch_info(buf, pos)
        assert frame_at(buf, pos, len(buf))[0][:8] == prefix
    stop = frames[-1][1] if frames else 0
    if stop + 8 <= len(buf):
        try:
            frame_at(buf, stop, len(buf))
        except RecordError:
            pass
        else:
            raise AssertionError(f"the walker stopped at {stop}, where frame_at frames a record")


@settings(max_examples=300, deadline=None)
@given(st.lists(records(), min_size=1, max_size=4))
def test_walker_and_codec_agree_on_valid_records(recs: list[bytes]) -> None:
    buf = b"".join(recs)
    assert_agree(buf)
    assert len(list(iter_frames(buf, 0, len(buf)))) == len(recs)


@settings(max_examples=500, deadline=None)
@given(damaged())
def test_walker_and_codec_agree_on_damaged_records(buf: bytes) -> None:
    assert_agree(buf)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_walker_and_codec_agree_on_random_bytes(buf: bytes) -> None:
    assert_agree(buf)


@settings(max_examples=200, deadline=None)
@given(records(), st.binary(min_size=8, max_size=200))
def test_random_bytes_behind_a_message_magic(record: bytes, noise: bytes) -> None:
    """Bytes that pass the magic and size checks exercise the deeper checks."""
    size = max(len(noise), MIN_RECORD_SIZE)
    buf = bytearray(size.to_bytes(4, "big") + MESSAGE_MAGIC.to_bytes(4, "big") + noise)
    buf += bytes(max(size - len(buf), 0))
    assert_agree(bytes(buf))
    assert_agree(record + bytes(buf))


def test_walker_stops_at_blank_and_zeros() -> None:
    encoded = bytearray(record_size(3, 1, 0, False, False))
    encode_record_into(
        encoded,
        0,
        queue_id=0,
        flag=0,
        queue_offset=0,
        physical_offset=0,
        sys_flag=0,
        born_timestamp=0,
        born_host=HOSTS[0],
        store_timestamp=0,
        store_host=HOSTS[0],
        reconsume_times=0,
        prepared_transaction_offset=0,
        body=b"abc",
        topic_bytes=b"T",
        properties_bytes=b"",
    )
    record = bytes(encoded)
    blank = bytearray(16)
    encode_blank_into(blank, 0, 16)
    assert int.from_bytes(blank[4:8], "big") == BLANK_MAGIC
    for tail in (bytes(blank), bytes(16)):
        buf = record * 2 + tail + record
        assert [frame[0] for frame in iter_frames(buf, 0, len(buf))] == [0, len(record)]
