"""The frames of Apache 4.9's HA protocol and its offset rules (HAService / HAConnection).

A slave writes its max physical offset as one big-endian 8-byte long (:func:`pack_report`);
the first one it sends on a connection is where the master starts streaming, every later one
acknowledges what the slave holds.  The master writes transfers: a 12-byte header (8-byte
physical offset, 4-byte size; :data:`TRANSFER_HEADER`) and ``size`` raw commitlog bytes, at
most ``haTransferBatchSize`` of them and never across a commitlog file's end.  A transfer of
size 0 is the master's heartbeat.  The bytes are not cut at record boundaries.
"""

from __future__ import annotations

import struct

REPORT = struct.Struct(">q")
"""The slave's report: its max physical offset."""
TRANSFER_HEADER = struct.Struct(">qi")
"""A master transfer's header: the physical offset of its first byte and its size."""


def pack_report(max_offset: int) -> bytes:
    """A slave's report of its max physical offset."""
    return REPORT.pack(max_offset)


def pack_transfer_header(offset: int, size: int) -> bytes:
    """The header of a transfer of ``size`` bytes stored from ``offset`` (size 0: heartbeat)."""
    return TRANSFER_HEADER.pack(offset, size)


def unpack_transfer_header(data: bytes | memoryview) -> tuple[int, int]:
    """Offset and size of a transfer header."""
    offset, size = TRANSFER_HEADER.unpack_from(data)
    return int(offset), int(size)


def transfer_start(slave_request_offset: int, master_max_offset: int, file_size: int) -> int:
    """Where the master starts streaming to a slave whose first report was
    ``slave_request_offset``: an empty slave (0) gets the start of the master's last commitlog
    file, any other slave its own max offset (Apache's rule)."""
    if slave_request_offset != 0:
        return slave_request_offset
    return max(0, master_max_offset - master_max_offset % file_size)


def continues(slave_max_offset: int, transfer_offset: int) -> bool:
    """Whether a transfer at ``transfer_offset`` may be appended by a slave holding
    ``slave_max_offset`` bytes: an empty slave takes any, others only their own end (a
    mismatch closes the connection and the slave reconnects)."""
    return slave_max_offset == 0 or slave_max_offset == transfer_offset


def batch_size(available: int, ha_transfer_batch_size: int) -> int:
    """How many of the ``available`` bytes one transfer carries."""
    return min(available, ha_transfer_batch_size)
