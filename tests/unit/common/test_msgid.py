"""Socket-address bytes, offset message ids and unique message ids."""

from __future__ import annotations

import datetime
import ipaddress
import os
import struct
import time
from collections.abc import Iterator

import pytest

from rmq.common import msgid
from rmq.common.msgid import (
    UniqueIdGenerator,
    decode_offset_msg_id,
    decode_unique_id,
    host_str,
    offset_msg_id,
    pack_host,
    parse_host,
    pick_client_ip,
)
from rmq.common.timeutil import now_millis


def ip(text: str) -> bytes:
    return ipaddress.ip_address(text).packed


def utc_ms(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0) -> int:
    moment = datetime.datetime(year, month, day, hour, minute, second, tzinfo=datetime.UTC)
    return int(moment.timestamp() * 1000)


@pytest.fixture
def utc() -> Iterator[None]:
    """Run with local time = UTC, so month starts are predictable."""
    old = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield
    if old is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = old
    time.tzset()


def test_host_packing() -> None:
    assert pack_host("192.168.1.10", 10911) == bytes([192, 168, 1, 10]) + struct.pack(">i", 10911)
    assert pack_host("::1", 80) == bytes(15) + b"\x01" + struct.pack(">i", 80)
    assert pack_host("::ffff:10.0.0.1", 5) == bytes([10, 0, 0, 1]) + struct.pack(">i", 5)
    assert parse_host("[fe80::1]:9876") == ip("fe80::1") + struct.pack(">i", 9876)
    assert host_str(parse_host("10.1.2.3:10911")) == "10.1.2.3:10911"
    assert host_str(parse_host("[2001:db8:0::7]:1")) == "[2001:db8::7]:1"
    for bad in ("10.0.0.1", "10.0.0.1:x", "host:10911", "1.2.3.4.5:1"):
        with pytest.raises(ValueError, match="expected ip:port"):
            parse_host(bad)


def test_offset_msg_id_spec_vector() -> None:
    host = pack_host("192.168.1.10", 10911)
    assert offset_msg_id(host, 8000) == "C0A8010A00002A9F0000000000001F40"
    decoded = decode_offset_msg_id("C0A8010A00002A9F0000000000001F40")
    assert decoded == ("192.168.1.10", 10911, 8000)
    assert decoded.address == "192.168.1.10:10911"
    assert decode_offset_msg_id("c0a8010a00002a9f0000000000001f40").physical_offset == 8000


def test_ipv6_offset_msg_id() -> None:
    text = offset_msg_id(pack_host("2001:db8::5", 10911), 2**40)
    assert len(text) == 56
    assert text == "20010DB8000000000000000000000005" + "00002A9F" + "0000010000000000"
    decoded = decode_offset_msg_id(text)
    assert decoded.address == "[2001:db8::5]:10911"
    assert decoded.physical_offset == 2**40


@pytest.mark.parametrize("bad", ["", "C0A8", "Z" * 32, "C0A8010A00002A9F0000000000001F4"])
def test_bad_ids_raise(bad: str) -> None:
    with pytest.raises(ValueError, match="offset message id"):
        decode_offset_msg_id(bad)
    with pytest.raises(ValueError, match="unique message id"):
        decode_unique_id(bad)


@pytest.mark.parametrize(
    ("addresses", "expected"),
    [
        (["127.0.0.1", "192.168.1.5"], "127.0.0.1"),  # loopback is not "private" in Java
        (["10.0.0.1", "192.168.1.1"], "10.0.0.1"),
        (["10.0.0.1", "8.8.8.8"], "8.8.8.8"),
        (["172.16.0.1", "172.15.0.1"], "172.15.0.1"),
        (["172.31.9.9"], "172.31.9.9"),
        (["fe80::1", "::1", "fec0::1", "10.1.1.1"], "10.1.1.1"),
        (["192.168.0.2", "2001:db8::1"], "2001:db8::1"),
    ],
)
def test_client_ip_choice(addresses: list[str], expected: str) -> None:
    assert pick_client_ip([ip(a) for a in addresses]) == ip(expected)


def test_no_address_gives_none() -> None:
    assert pick_client_ip([]) is None
    assert pick_client_ip([ip("fe80::1")]) is None


def test_unique_id_layout(utc: None, monkeypatch: pytest.MonkeyPatch) -> None:
    now = utc_ms(2024, 3, 5, 6, 7, 8) + 9
    monkeypatch.setattr(msgid, "now_millis", lambda: now)
    generator = UniqueIdGenerator(ip("192.168.1.10"), pid=0x12345, salt=0xDEADBEEF)
    elapsed = now - utc_ms(2024, 3, 1)
    assert generator.prefix == "C0A8010A2345DEADBEEF"
    assert generator.next_id() == f"C0A8010A2345DEADBEEF{elapsed:08X}0000"
    assert generator.next_id() == f"C0A8010A2345DEADBEEF{elapsed:08X}0001"

    info = decode_unique_id(generator.next_id(), now_ms=now + 5)
    assert info == ("192.168.1.10", 0x2345, 0xDEADBEEF, now, 2)


def test_unique_id_counter_wraps_at_16_bits() -> None:
    generator = UniqueIdGenerator(ip("10.0.0.1"), pid=1, salt=1)
    ids = [generator.next_id() for _ in range(0x10001)]
    assert ids[0].endswith("0000")
    assert ids[0xFFFF].endswith("FFFF")
    assert ids[0x10000].endswith("0000")
    assert len(ids[0]) == 32


def test_ipv6_unique_id_round_trip() -> None:
    generator = UniqueIdGenerator(ip("2001:db8::9"), pid=7, salt=3)
    value = generator.next_id()
    assert len(value) == 56
    info = decode_unique_id(value, now_ms=now_millis() + 1000)
    assert (info.ip, info.pid, info.salt) == ("2001:db8::9", 7, 3)
    assert abs(info.time_ms - now_millis()) < 5000


def test_month_rollover_and_clock_set_back(utc: None, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [utc_ms(2024, 1, 31, 23, 59, 59) + 999]
    monkeypatch.setattr(msgid, "now_millis", lambda: clock[0])
    generator = UniqueIdGenerator(ip("10.0.0.1"), pid=1, salt=1)
    late_january = generator.next_id()
    assert int(late_january[20:28], 16) == clock[0] - utc_ms(2024, 1, 1)
    # Past 24.8 days the month offset no longer fits a signed int; Java writes its bits.
    assert int(late_january[20:28], 16) > 2**31

    clock[0] = utc_ms(2024, 2, 1)
    assert generator.next_id()[20:28] == "00000000"
    clock[0] = utc_ms(2024, 2, 1) - 500  # NTP stepped back half a second
    assert generator.next_id()[20:28] == "00000000"


def test_nearly_time_uses_previous_month_when_offset_is_in_the_future(utc: None) -> None:
    generator_id = "0A000001" + "0001" + "00000001" + f"{20 * 86_400_000:08X}" + "0000"
    now = utc_ms(2024, 3, 10)
    # Day 21 of March is after "now": it must be 21 February.
    assert decode_unique_id(generator_id, now_ms=now).time_ms == utc_ms(2024, 2, 21)
    assert decode_unique_id(generator_id, now_ms=utc_ms(2024, 3, 25)).time_ms == utc_ms(2024, 3, 21)
    january = decode_unique_id(generator_id, now_ms=utc_ms(2024, 1, 5))
    assert january.time_ms == utc_ms(2023, 12, 21)


def test_generator_finds_an_address_by_itself() -> None:
    value = UniqueIdGenerator().next_id()
    assert len(value) in (32, 56)
    assert decode_unique_id(value).pid == os.getpid() & 0xFFFF
