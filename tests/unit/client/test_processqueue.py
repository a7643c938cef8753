"""The process queue: which offset a push consumer may commit, flow-control counters, orderly
take / commit / retry, and the pull-body decoding that feeds it."""

from __future__ import annotations

import zlib

import pytest

from rmq.client.consumer import processqueue
from rmq.client.consumer.processqueue import ProcessQueue
from rmq.client.messageext import MessageExt, decode_pull_body
from rmq.common.message import decode_record, encode_record_into
from rmq.common.msgid import pack_host
from rmq.common.properties import encode_properties_bytes
from rmq.common.sysflag import COMPRESSED_FLAG

HOST = pack_host("127.0.0.1", 10911)


def record_bytes(
    queue_offset: int,
    body: bytes = b"body",
    properties: dict[str, str] | None = None,
    *,
    topic: str = "T",
    sys_flag: int = 0,
    reconsume_times: int = 0,
) -> bytes:
    buf = bytearray(4096)
    size = encode_record_into(
        buf,
        0,
        queue_id=1,
        flag=0,
        queue_offset=queue_offset,
        physical_offset=1000 + queue_offset,
        sys_flag=sys_flag,
        born_timestamp=1,
        born_host=HOST,
        store_timestamp=2,
        store_host=HOST,
        reconsume_times=reconsume_times,
        prepared_transaction_offset=0,
        body=body,
        topic_bytes=topic.encode(),
        properties_bytes=encode_properties_bytes(properties or {}),
    )
    return bytes(buf[:size])


def message(queue_offset: int, body: bytes = b"body") -> MessageExt:
    return MessageExt(decode_record(record_bytes(queue_offset, body)), "broker-a")


def messages(*offsets: int) -> list[MessageExt]:
    return [message(offset) for offset in offsets]


# --- concurrent consumption: the committable offset -----------------------------------------


def test_the_committable_offset_is_the_smallest_unfinished_one() -> None:
    pq = ProcessQueue()
    held = {m.queue_offset: m for m in messages(*range(10, 20))}
    pq.put_messages(held.values())
    assert pq.remove_messages([held[12], held[11]]) == 10
    assert pq.remove_messages([held[10]]) == 13
    assert pq.remove_messages([held[n] for n in range(14, 20)]) == 13
    assert pq.msg_count == 1


def test_when_everything_is_done_the_offset_is_one_past_the_last_pulled() -> None:
    pq = ProcessQueue()
    batch = messages(5, 6, 7)
    pq.put_messages(batch)
    assert pq.remove_messages(reversed(batch)) == 8
    assert (pq.msg_count, pq.msg_size, pq.has_temp_message()) == (0, 0, False)


def test_removing_from_an_empty_queue_gives_nothing_to_commit() -> None:
    assert ProcessQueue().remove_messages(messages(1)) == -1


def test_messages_already_held_are_not_counted_twice() -> None:
    pq = ProcessQueue()
    pq.put_messages(messages(1, 2))
    pq.put_messages(messages(2, 3))
    assert pq.msg_count == 3
    assert pq.msg_size == 3 * len(b"body")


def test_a_message_pulled_again_after_it_was_done_is_held_again() -> None:
    pq = ProcessQueue()
    first = messages(1, 2)
    pq.put_messages(first)
    pq.remove_messages(first[:1])
    pq.put_messages(messages(1))
    assert pq.remove_messages(first[1:]) == 1


def test_span_and_size_feed_flow_control() -> None:
    pq = ProcessQueue()
    assert pq.max_span() == 0
    pq.put_messages([message(3, b"x" * 100), message(2040, b"y" * 50)])
    assert pq.max_span() == 2037
    assert pq.msg_size == 150


def test_the_backlog_is_read_from_the_max_offset_property() -> None:
    pq = ProcessQueue()
    body = b"".join(record_bytes(offset) for offset in (4, 5))
    pq.put_messages(decode_pull_body(body, "broker-a", (), 0, 105))
    assert pq.msg_acc_count == 100


def test_only_an_idle_queue_asks_for_a_consumer() -> None:
    pq = ProcessQueue()
    assert pq.put_messages(messages(1)) is True
    assert pq.put_messages(messages(2)) is False
    assert len(pq.take_messages(10)) == 2
    assert pq.take_messages(10) == []  # idle again
    assert pq.put_messages(messages(3)) is True


# --- orderly consumption --------------------------------------------------------------------


def test_orderly_takes_in_offset_order_and_commits_past_the_batch() -> None:
    pq = ProcessQueue()
    pq.put_messages(messages(7, 5, 6, 8))
    taken = pq.take_messages(3)
    assert [m.queue_offset for m in taken] == [5, 6, 7]
    assert pq.commit() == 8
    assert pq.msg_count == 1
    assert pq.commit() == -1


def test_orderly_retry_puts_the_batch_back_in_front() -> None:
    pq = ProcessQueue()
    pq.put_messages(messages(1, 2, 3, 4))
    taken = pq.take_messages(2)
    pq.make_messages_to_consume_again(taken)
    assert [m.queue_offset for m in pq.take_messages(4)] == [1, 2, 3, 4]
    pq.rollback()
    assert [m.queue_offset for m in pq.take_messages(1)] == [1]
    assert pq.commit() == 2
    assert pq.msg_count == 3


def test_clear_forgets_everything() -> None:
    pq = ProcessQueue()
    pq.put_messages(messages(1, 2))
    pq.take_messages(1)
    pq.clear()
    assert (pq.msg_count, pq.msg_size, pq.has_temp_message(), pq.commit()) == (0, 0, False, -1)


# --- lock and pull liveness -----------------------------------------------------------------


def test_a_lock_is_trusted_for_30_seconds_and_a_silent_pull_for_120(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pq = ProcessQueue()
    start = pq.last_lock_timestamp
    monkeypatch.setattr(processqueue, "now_millis", lambda: start + 30_000)
    assert not pq.is_lock_expired()
    monkeypatch.setattr(processqueue, "now_millis", lambda: start + 30_001)
    assert pq.is_lock_expired()
    assert not pq.is_pull_expired()
    monkeypatch.setattr(processqueue, "now_millis", lambda: start + 120_001)
    assert pq.is_pull_expired()


# --- pull bodies ----------------------------------------------------------------------------


def test_a_pull_body_decodes_with_offsets_and_the_client_tag_check() -> None:
    body = (
        record_bytes(0, b"a", {"TAGS": "TagA", "KEYS": "k1 k2"})
        + record_bytes(1, b"b", {"TAGS": "TagB"})
        + record_bytes(2, b"c")
        + b"\x00\x00\x00\x10garbage-tail"
    )
    found = decode_pull_body(memoryview(body), "broker-a", ["TagA"], 0, 3)
    assert [m.queue_offset for m in found] == [0]
    (only,) = found
    assert only.properties["MIN_OFFSET"] == "0" and only.properties["MAX_OFFSET"] == "3"
    assert (only.tags, only.keys, only.broker_name, only.body) == (
        "TagA",
        ["k1", "k2"],
        "broker-a",
        b"a",
    )
    everything = decode_pull_body(body, "broker-a", (), 0, 3)
    assert [m.queue_offset for m in everything] == [0, 1, 2]


def test_a_compressed_body_is_decompressed_once_and_the_record_dict_is_complete() -> None:
    plain = "é".encode() * 3000
    raw = record_bytes(9, zlib.compress(plain), {"TAGS": "T1"}, sys_flag=COMPRESSED_FLAG)
    (decoded,) = decode_pull_body(raw, "broker-b", (), 0, 10)
    assert decoded.body == plain
    record = decoded.to_record_dict()
    assert record["body"] == plain.decode()
    assert set(record) >= {
        "topic",
        "brokerName",
        "queueId",
        "queueOffset",
        "commitLogOffset",
        "msgId",
        "offsetMsgId",
        "tags",
        "keys",
        "properties",
        "body",
        "bodyCrc",
        "flag",
        "sysFlag",
        "bornTimestamp",
        "storeTimestamp",
        "bornHost",
        "storeHost",
        "reconsumeTimes",
        "preparedTransactionOffset",
    }
    assert (record["brokerName"], record["queueOffset"], record["commitLogOffset"]) == (
        "broker-b",
        9,
        1009,
    )


def test_a_redelivered_message_shows_its_original_topic_and_local_retries() -> None:
    raw = record_bytes(0, properties={"RETRY_TOPIC": "Orders"}, topic="%RETRY%G", reconsume_times=2)
    (redelivered,) = decode_pull_body(raw, "broker-a", (), 0, 1)
    redelivered.restore_retry_topic("Other")
    assert redelivered.topic == "%RETRY%G"
    redelivered.restore_retry_topic("G")
    redelivered.reconsume_times += 1
    record = redelivered.to_record_dict()
    assert (record["topic"], record["reconsumeTimes"]) == ("Orders", 3)
