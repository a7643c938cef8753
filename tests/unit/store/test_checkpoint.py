"""The checkpoint file: one 4096-byte page with three big-endian int64 timestamps."""

from __future__ import annotations

import struct
from pathlib import Path

from rmq.store.checkpoint import StoreCheckpoint


def test_new_checkpoint_is_one_zero_page(tmp_path: Path) -> None:
    path = tmp_path / "checkpoint"
    checkpoint = StoreCheckpoint(path)
    checkpoint.close()
    assert path.read_bytes() == bytes(4096)


def test_timestamps_are_written_at_offsets_0_8_16_big_endian(tmp_path: Path) -> None:
    path = tmp_path / "checkpoint"
    checkpoint = StoreCheckpoint(path)
    checkpoint.physic_msg_timestamp = 1_700_000_000_123
    checkpoint.logics_msg_timestamp = 1_700_000_000_100
    checkpoint.index_msg_timestamp = 1_699_999_999_999
    checkpoint.flush()
    expected = (
        struct.pack(">q", 1_700_000_000_123)
        + struct.pack(">q", 1_700_000_000_100)
        + struct.pack(">q", 1_699_999_999_999)
        + bytes(4096 - 24)
    )
    assert path.read_bytes() == expected
    checkpoint.close()


def test_timestamps_are_read_back_when_reopened(tmp_path: Path) -> None:
    path = tmp_path / "checkpoint"
    path.write_bytes(struct.pack(">qqq", 10_000, 20_000, 5_000) + bytes(4096 - 24))
    checkpoint = StoreCheckpoint(path)
    assert (
        checkpoint.physic_msg_timestamp,
        checkpoint.logics_msg_timestamp,
        checkpoint.index_msg_timestamp,
    ) == (10_000, 20_000, 5_000)
    # Recovery starts 3 s before the older of physic and logics, and the index time counts too.
    assert checkpoint.min_timestamp() == 7_000
    assert checkpoint.min_timestamp_index() == 5_000
    checkpoint.close()


def test_min_timestamp_is_never_negative(tmp_path: Path) -> None:
    checkpoint = StoreCheckpoint(tmp_path / "checkpoint")
    checkpoint.physic_msg_timestamp = 1000
    checkpoint.logics_msg_timestamp = 2000
    assert checkpoint.min_timestamp() == 0
    checkpoint.close()
