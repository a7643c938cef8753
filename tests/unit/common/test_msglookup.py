"""How a pasted message id is looked up: offset id or unique key, and the order of the
unique-key matches (rmq.common.msglookup)."""

from __future__ import annotations

from rmq.common.message import MessageRecord, decode_record, encode_record_into
from rmq.common.msgid import UniqueIdGenerator, offset_msg_id, pack_host
from rmq.common.msglookup import offset_id_of, unique_key_matches

BROKER = "127.0.0.1:10911"


def record(topic: str, uniq_key: str, store_timestamp: int, physical_offset: int) -> MessageRecord:
    buf = bytearray(1024)
    size = encode_record_into(
        buf,
        0,
        queue_id=0,
        flag=0,
        queue_offset=0,
        physical_offset=physical_offset,
        sys_flag=0,
        born_timestamp=store_timestamp,
        born_host=pack_host("127.0.0.1", 50000),
        store_timestamp=store_timestamp,
        store_host=pack_host("127.0.0.1", 10911),
        reconsume_times=0,
        prepared_transaction_offset=0,
        body=b"x",
        topic_bytes=topic.encode(),
        properties_bytes=f"UNIQ_KEY\x01{uniq_key}\x02".encode(),
    )
    return decode_record(bytes(buf[:size]))


def test_an_offset_id_of_a_known_host_is_an_offset_id() -> None:
    msg_id = offset_msg_id(pack_host("127.0.0.1", 10911), 4096)
    found = offset_id_of(msg_id, {BROKER, "127.0.0.1:10921"})
    assert found is not None and (found.address, found.physical_offset) == (BROKER, 4096)
    assert offset_id_of(msg_id, {"127.0.0.1:10921"}) is None


def test_a_unique_key_is_never_an_offset_id() -> None:
    """A unique key decodes as an offset id whose port is pid and salt bits: far outside
    0-65535 for a pid above 0, and never one of the brokers."""
    unique = UniqueIdGenerator(ip=bytes([127, 0, 0, 1]), pid=0x22EE, salt=0x6160A605).next_id()
    assert offset_id_of(unique, {BROKER}) is None
    assert offset_id_of("not hex at all", {BROKER}) is None
    assert offset_id_of("", {BROKER}) is None


def test_unique_key_matches_user_topics_first_then_earliest() -> None:
    key = "7F00000100012345678900000000000A"
    retry = record("%RETRY%G", key, 3000, 300)
    later = record("T", key, 2000, 200)
    first = record("T", key, 1000, 500)
    delayed = record("SCHEDULE_TOPIC_XXXX", key, 500, 100)
    other = record("T", "7F00000100012345678900000000000B", 10, 0)
    matches = unique_key_matches([retry, later, other, delayed, first], key)
    assert [(r.topic, r.store_timestamp) for r in matches] == [
        ("T", 1000),
        ("T", 2000),
        ("SCHEDULE_TOPIC_XXXX", 500),
        ("%RETRY%G", 3000),
    ]
