"""An index file's geometry: its size from its slot and entry counts, and those counts worked
out again from a file, which does not record them.

``index_geometries`` lists the (slots, entries) pairs the size allows that are worth trying
first: the configured counts, Apache's defaults and their four-entries-per-slot ratio.  A
broker configured otherwise (``maxHashSlotNum=64``, ``maxIndexNum=200``, say) writes files
that none of those fit, and a size alone allows many pairs.  ``entry_geometries`` then reads
the answer off the entries: entries are written one after the other from number 1 on and the
rest of the file stays zero, so the file's last non-zero byte lies in the newest entry, number
``indexCount - 1``; that bounds ``40 + 4*slots + 20*(indexCount - 1)`` to a 20-byte window,
which leaves at most one or two slot counts.  The caller keeps the one under which the
header's begin and end offsets are those of the first and newest entries.
"""

from __future__ import annotations

import mmap
from typing import Final

from rmq.common.indexsize import HASH_SLOT_SIZE as HASH_SLOT_SIZE
from rmq.common.indexsize import INDEX_ENTRY_SIZE as INDEX_ENTRY_SIZE
from rmq.common.indexsize import INDEX_HEADER_SIZE as INDEX_HEADER_SIZE
from rmq.common.indexsize import index_file_size as index_file_size

DEFAULT_HASH_SLOT_NUM: Final = 5_000_000
DEFAULT_INDEX_NUM: Final = DEFAULT_HASH_SLOT_NUM * 4
_SCAN_CHUNK: Final = 1 << 20


def _fits(file_size: int, slots: int, entries: int) -> bool:
    return slots > 0 and entries > 1 and index_file_size(slots, entries) == file_size


def index_geometries(
    file_size: int, hash_slot_num: int = 0, index_num: int = 0
) -> list[tuple[int, int]]:
    """The (slots, entries) pairs an index file of ``file_size`` bytes may have, best first.

    Candidates: the given values; the given slot or entry count with the other derived;
    four entries per slot (Apache's defaults keep that ratio); Apache's default slot or
    entry count with the other derived.  Only pairs that add up to the size are returned.
    """
    body = file_size - INDEX_HEADER_SIZE
    candidates = [(hash_slot_num, index_num)]
    for slots in (hash_slot_num, DEFAULT_HASH_SLOT_NUM):
        candidates.append((slots, (body - slots * HASH_SLOT_SIZE) // INDEX_ENTRY_SIZE))
    for entries in (index_num, DEFAULT_INDEX_NUM):
        candidates.append(((body - entries * INDEX_ENTRY_SIZE) // HASH_SLOT_SIZE, entries))
    per_slot = HASH_SLOT_SIZE + 4 * INDEX_ENTRY_SIZE
    candidates.insert(3, (body // per_slot, 4 * (body // per_slot)))
    fitting: list[tuple[int, int]] = []
    for slots, entries in candidates:
        if _fits(file_size, slots, entries) and (slots, entries) not in fitting:
            fitting.append((slots, entries))
    return fitting


def _last_nonzero(buf: mmap.mmap | bytes, start: int) -> int:
    """Position of the last non-zero byte at or after ``start``, or -1."""
    end = len(buf)
    while end > start:
        begin = max(start, end - _SCAN_CHUNK)
        kept = len(buf[begin:end].rstrip(b"\0"))
        if kept:
            return begin + kept - 1
        end = begin
    return -1


def entry_geometries(buf: mmap.mmap | bytes, index_count: int) -> list[tuple[int, int]]:
    """The (slots, entries) pairs under which the newest entry (``index_count - 1``) holds
    the file's last non-zero byte (see the module docstring); for a file without entries,
    the pair that fits its size nearest to four entries per slot."""
    size = len(buf)
    body = size - INDEX_HEADER_SIZE
    newest = index_count - 1
    if newest < 1:
        slots = body // (HASH_SLOT_SIZE + 4 * INDEX_ENTRY_SIZE)
        for candidate in range(slots, max(slots - 5, 0), -1):
            entries = (body - candidate * HASH_SLOT_SIZE) // INDEX_ENTRY_SIZE
            if _fits(size, candidate, entries):
                return [(candidate, entries)]
        return []
    last = _last_nonzero(buf, INDEX_HEADER_SIZE)
    # INDEX_HEADER_SIZE + 4*slots + 20*newest <= last < that + 20
    high = (last - INDEX_HEADER_SIZE - newest * INDEX_ENTRY_SIZE) // HASH_SLOT_SIZE
    found = []
    for slots in range(high, high - INDEX_ENTRY_SIZE // HASH_SLOT_SIZE, -1):
        entries = (body - slots * HASH_SLOT_SIZE) // INDEX_ENTRY_SIZE
        if entries >= index_count and _fits(size, slots, entries):
            found.append((slots, entries))
    return found
