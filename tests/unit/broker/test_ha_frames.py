"""The HA protocol's frames and offset rules (rmq.server.broker.ha.frames)."""

from __future__ import annotations

from rmq.server.broker.ha.frames import (
    batch_size,
    continues,
    pack_report,
    pack_transfer_header,
    transfer_start,
    unpack_transfer_header,
)

FILE = 1024 * 1024 * 1024


def test_report_is_a_big_endian_long() -> None:
    assert pack_report(0x0102030405060708) == bytes(range(1, 9))
    assert pack_report(-1) == b"\xff" * 8


def test_transfer_header_is_offset_then_size() -> None:
    header = pack_transfer_header(FILE + 5, 32 * 1024)
    assert header == (FILE + 5).to_bytes(8, "big") + (32 * 1024).to_bytes(4, "big")
    assert unpack_transfer_header(header) == (FILE + 5, 32 * 1024)
    assert unpack_transfer_header(memoryview(pack_transfer_header(7, 0))) == (7, 0)


def test_an_empty_slave_starts_at_the_masters_last_file() -> None:
    assert transfer_start(0, 3 * FILE + 12345, FILE) == 3 * FILE
    assert transfer_start(0, 0, FILE) == 0
    assert transfer_start(0, FILE, FILE) == FILE


def test_a_slave_with_data_starts_at_its_own_max_offset() -> None:
    assert transfer_start(4096, 3 * FILE, FILE) == 4096


def test_only_the_slaves_own_end_continues_it() -> None:
    assert continues(0, 3 * FILE)
    assert continues(500, 500)
    assert not continues(500, 400)
    assert not continues(500, 600)


def test_a_transfer_carries_at_most_the_batch_size() -> None:
    assert batch_size(100, 32 * 1024) == 100
    assert batch_size(1_000_000, 32 * 1024) == 32 * 1024
