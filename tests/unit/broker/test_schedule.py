"""Delayed delivery: messages parked in SCHEDULE_TOPIC_XXXX reach their real queue when due.

Messages are parked the way the send path parks them (a put with a delay level on a real
store), time is a settable clock shared by the store and the service, and what got delivered
is read back from the consume-queue and commitlog files with the spec's layouts (§3.1, §4.4).
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rmq.common.config import MessageStoreConfig
from rmq.common.naming import RMQ_SYS_SCHEDULE_TOPIC
from rmq.server.broker.schedule.schedule import ScheduleMessageService
from rmq.store.configfile import ConfigFileError
from rmq.store.putmessage import InnerMessage
from rmq.store.store import MessageStore

T0 = 1_700_000_000_000
TOPIC = "TopicA"
TAG_A = 2598919  # "TagA".hashCode(), spec §8.1
BORN_HOST = struct.pack(">4Bi", 10, 1, 2, 3, 40000)
LEVELS = "1s 5s 10s"
CQ_ENTRY = struct.Struct(">qiq")
SEP_NV, SEP_P = "\x01", "\x02"


class Clock:
    """Milliseconds that only move when a test says so."""

    def __init__(self, now: int) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def store_config(root: Path) -> MessageStoreConfig:
    return MessageStoreConfig(
        store_path_root_dir=str(root),
        mapped_file_size_commit_log=256 * 1024,
        mapped_file_size_consume_queue=100 * 20,
        max_hash_slot_num=64,
        max_index_num=256,
        flush_interval_commit_log=20,
        flush_interval_consume_queue=20,
        message_delay_level=LEVELS,
    )


class Broker:
    """A started store and its schedule service over ``root``, sharing one clock."""

    def __init__(self, root: Path, clock: Clock) -> None:
        self.root = root
        config = store_config(root)
        self.store = MessageStore(config, store_host="192.168.0.10:10911", clock=clock)
        self.store.start()
        self.service = ScheduleMessageService(
            self.store, config, root / "config" / "delayOffset.json", clock=clock
        )

    def park(self, body: bytes, level: int, queue_id: int = 3, **fields: Any) -> None:
        """Put a message with a delay level, as the send path does (WAIT kept)."""
        properties = {
            "UNIQ_KEY": "0A010203000078C0000000000000000" + str(level),
            "WAIT": "true",
            "TAGS": "TagA",
            "KEYS": "order-" + body.decode(),
            "DELAY": str(level),
        }
        message = InnerMessage(
            TOPIC,
            queue_id,
            body,
            SEP_P.join(f"{k}{SEP_NV}{v}" for k, v in properties.items()).encode(),
            TAG_A,
            properties["KEYS"],
            properties["UNIQ_KEY"],
            born_host=BORN_HOST,
            delay_level=level,
            **fields,
        )
        assert self.store.put_message(message).ok

    def close(self) -> None:
        self.store.shutdown()


@pytest.fixture
def clock() -> Clock:
    return Clock(T0)


@pytest.fixture
def broker(tmp_path: Path, clock: Clock) -> Iterator[Broker]:
    opened = Broker(tmp_path, clock)
    yield opened
    opened.close()


# -- reading the files back with the spec's layouts -------------------------------------------


def cq_entries(root: Path, topic: str, queue_id: int) -> list[tuple[int, int, int]]:
    """(commitlog offset, size, tags code) of every entry of a consume queue (§4.4)."""
    directory = root / "consumequeue" / topic / str(queue_id)
    if not directory.exists():
        return []
    data = b"".join(path.read_bytes() for path in sorted(directory.iterdir()))
    entries = []
    for pos in range(0, len(data), 20):
        entry = CQ_ENTRY.unpack_from(data, pos)
        if entry == (0, 0, 0):
            break
        entries.append(entry)
    return entries


def parse_record(data: bytes, pos: int = 0) -> dict[str, Any]:
    """The fields of the IPv4 record at ``data[pos:]`` (spec §3.1)."""
    fixed = struct.unpack_from(">iIiiiqqiq8sq8siqi", data, pos)
    pos += 88
    body = data[pos : pos + fixed[14]]
    pos += fixed[14]
    topic = data[pos + 1 : pos + 1 + data[pos]].decode()
    pos += 1 + data[pos]
    props_len = struct.unpack_from(">h", data, pos)[0]
    props_text = data[pos + 2 : pos + 2 + props_len].decode()
    return {
        "total_size": fixed[0],
        "queue_id": fixed[3],
        "flag": fixed[4],
        "queue_offset": fixed[5],
        "physical_offset": fixed[6],
        "sys_flag": fixed[7],
        "born_timestamp": fixed[8],
        "born_host": fixed[9],
        "store_timestamp": fixed[10],
        "store_host": fixed[11],
        "reconsume_times": fixed[12],
        "prepared_transaction_offset": fixed[13],
        "body": body,
        "topic": topic,
        "properties_text": props_text,
        "properties": dict(segment.split(SEP_NV, 1) for segment in props_text.split(SEP_P)),
    }


def read_record(root: Path, physical_offset: int) -> dict[str, Any]:
    """The record at ``physical_offset`` of the store's first commitlog file."""
    return parse_record((root / "commitlog" / ("0" * 20)).read_bytes(), physical_offset)


def delivered(root: Path, queue_id: int = 3) -> list[bytes]:
    """Bodies of the messages in TopicA's queue, in queue order."""
    return [read_record(root, entry[0])["body"] for entry in cq_entries(root, TOPIC, queue_id)]


# -- delivery ---------------------------------------------------------------------------------


def test_delayed_message_reaches_its_real_queue_at_its_deliver_time_not_before(
    broker: Broker, clock: Clock
) -> None:
    broker.park(b"m1", level=2, flag=7, born_timestamp=T0 - 5, reconsume_times=2)
    parked = cq_entries(broker.root, RMQ_SYS_SCHEDULE_TOPIC, 1)
    assert [entry[2] for entry in parked] == [T0 + 5000]

    clock.now = T0 + 4999
    assert broker.service.deliver_due() == pytest.approx(0.001)
    assert cq_entries(broker.root, TOPIC, 3) == []
    assert broker.service.offset_table() == {}

    clock.now = T0 + 5000
    broker.service.deliver_due()
    [(physical_offset, size, tags_code)] = cq_entries(broker.root, TOPIC, 3)
    assert tags_code == TAG_A
    record = read_record(broker.root, physical_offset)
    assert size == record["total_size"]
    assert record["topic"] == TOPIC
    assert record["queue_id"] == 3
    assert record["queue_offset"] == 0
    assert record["body"] == b"m1"
    assert record["flag"] == 7
    assert record["sys_flag"] == 0
    assert record["born_timestamp"] == T0 - 5
    assert record["born_host"] == BORN_HOST
    assert record["reconsume_times"] == 2
    assert record["prepared_transaction_offset"] == 0
    assert record["properties"] == {
        "UNIQ_KEY": "0A010203000078C00000000000000002",
        "WAIT": "true",
        "TAGS": "TagA",
        "KEYS": "order-m1",
        "DELAY": "2",
        "REAL_TOPIC": TOPIC,
        "REAL_QID": "3",
    }
    assert broker.service.offset_table() == {2: 1}
    found = broker.store.query_message(TOPIC, "order-m1", 32, 0, T0 + 10_000)
    assert found.physical_offsets == [physical_offset]


def test_levels_deliver_independently_each_in_time(broker: Broker, clock: Clock) -> None:
    broker.park(b"ten", level=3)
    broker.park(b"one", level=1)
    broker.park(b"five", level=2)
    clock.now = T0 + 500
    broker.park(b"one-later", level=1)

    expected = {
        T0 + 999: [],
        T0 + 1000: [b"one"],
        T0 + 1499: [b"one"],
        T0 + 1500: [b"one", b"one-later"],
        T0 + 4999: [b"one", b"one-later"],
        T0 + 5000: [b"one", b"one-later", b"five"],
        T0 + 9999: [b"one", b"one-later", b"five"],
        T0 + 10_000: [b"one", b"one-later", b"five", b"ten"],
    }
    for now, bodies in expected.items():
        clock.now = now
        broker.service.deliver_due()
        assert delivered(broker.root) == bodies, now
    assert broker.service.offset_table() == {1: 2, 2: 1, 3: 1}


def test_wait_is_capped_so_new_arrivals_are_seen(broker: Broker, clock: Clock) -> None:
    assert broker.service.deliver_due() == pytest.approx(0.1)
    broker.park(b"m", level=3)
    assert broker.service.deliver_due() == pytest.approx(0.1)
    clock.now = T0 + 9_950
    assert broker.service.deliver_due() == pytest.approx(0.05)


def test_failed_put_is_retried_from_the_same_message(broker: Broker, clock: Clock) -> None:
    broker.park(b"m", level=1)
    clock.now = T0 + 1000
    broker.store.disk_full = True
    assert broker.service.deliver_due() == pytest.approx(0.1)
    assert broker.service.offset_table() == {}
    broker.store.disk_full = False
    broker.service.deliver_due()
    broker.service.deliver_due()
    assert delivered(broker.root) == [b"m"]
    assert broker.service.offset_table() == {1: 1}


def test_clock_set_back_delivers_instead_of_waiting_for_ever(broker: Broker, clock: Clock) -> None:
    broker.park(b"m", level=2)
    clock.now = T0 - 60_000
    broker.service.deliver_due()
    assert delivered(broker.root) == [b"m"]


def test_parked_record_without_real_queue_is_skipped(broker: Broker, clock: Clock) -> None:
    stray = InnerMessage(RMQ_SYS_SCHEDULE_TOPIC, 0, b"stray", b"TAGS\x01x", T0)
    assert broker.store.put_message(stray).ok
    broker.park(b"good", level=1)
    clock.now = T0 + 1000
    broker.service.deliver_due()
    assert delivered(broker.root) == [b"good"]
    assert broker.service.offset_table() == {1: 2}


# -- progress across restarts ----------------------------------------------------------------


def test_delay_offset_json_is_fastjson_pretty_text(broker: Broker, clock: Clock) -> None:
    for body in (b"a", b"b"):
        broker.park(body, level=1)
    broker.park(b"c", level=3)
    clock.now = T0 + 10_000
    broker.service.deliver_due()
    broker.service.persist()
    # Spec §4.8 / §2.7: tab indent, bare integer keys written without a line break.
    text = (broker.root / "config" / "delayOffset.json").read_text()
    assert text == '{\n\t"offsetTable":{1:2,3:1\n\t}\n}'
    assert broker.service.encode() == b'{"offsetTable":{1:2,3:1}}'


def test_restart_resumes_from_the_persisted_offsets(tmp_path: Path, clock: Clock) -> None:
    first = Broker(tmp_path, clock)
    for body in (b"a", b"b"):
        first.park(body, level=1)
    clock.now = T0 + 2000
    first.park(b"c", level=1)

    async def run_until_two_delivered() -> None:
        await first.service.start()
        for _ in range(100):
            if len(delivered(tmp_path)) == 2:
                break
            await asyncio.sleep(0.01)
        await first.service.stop()

    asyncio.run(run_until_two_delivered())
    first.close()
    assert delivered(tmp_path) == [b"a", b"b"]

    second = Broker(tmp_path, clock)
    try:
        second.service.load()
        assert second.service.offset_table() == {1: 2}
        clock.now = T0 + 3000
        second.service.deliver_due()
        assert delivered(tmp_path) == [b"a", b"b", b"c"]
    finally:
        second.close()


def test_offsets_not_yet_persisted_are_delivered_again(tmp_path: Path, clock: Clock) -> None:
    first = Broker(tmp_path, clock)
    first.park(b"a", level=1)
    clock.now = T0 + 100
    first.park(b"b", level=1)
    clock.now = T0 + 1000
    first.service.deliver_due()
    first.service.persist()
    clock.now = T0 + 1100
    first.service.deliver_due()
    first.close()  # the broker dies before the next persist

    second = Broker(tmp_path, clock)
    try:
        second.service.load()
        second.service.deliver_due()
        assert delivered(tmp_path) == [b"a", b"b", b"b"]
    finally:
        second.close()


def test_load_clamps_offsets_to_the_schedule_queue(broker: Broker) -> None:
    broker.park(b"a", level=1)
    broker.park(b"b", level=1)
    broker.service.path.parent.mkdir(parents=True, exist_ok=True)
    broker.service.path.write_text('{"offsetTable":{1:99,"2":0}}')
    broker.service.load()
    assert broker.service.offset_table() == {1: 2, 2: 0}


def test_unreadable_delay_offset_json_stops_the_load(broker: Broker) -> None:
    broker.service.path.parent.mkdir(parents=True, exist_ok=True)
    broker.service.path.write_text('{"offsetTable":[1,2]}')
    with pytest.raises(ConfigFileError):
        broker.service.load()
