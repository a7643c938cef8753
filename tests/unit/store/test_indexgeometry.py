"""Index files whose slot and entry counts are neither the configured ones nor in Apache's
four-entries-per-slot ratio (a broker with maxHashSlotNum=64, maxIndexNum=200): opening them
read-only works the counts out from the newest entry."""

from __future__ import annotations

from pathlib import Path

import pytest

from rmq.store.indexfile import IndexFile
from rmq.store.indexgeometry import entry_geometries, index_file_size, index_geometries

T0 = 1_700_000_000_000


def written(path: Path, slots: int, entries: int, keys: int) -> Path:
    writable = IndexFile.create(path, slots, entries)
    for n in range(keys):
        assert writable.put_key(f"T#k{n}", 100 * n, T0 + n)
    writable.close()
    return path


@pytest.mark.parametrize(
    ("slots", "entries", "keys"),
    [(64, 200, 72), (64, 200, 1), (7, 9, 8), (3, 1000, 500), (1000, 3, 2)],
)
def test_uncommon_geometry_is_found_from_the_entries(
    tmp_path: Path, slots: int, entries: int, keys: int
) -> None:
    path = written(tmp_path / "20240101000000000", slots, entries, keys)
    assert (slots, entries) not in index_geometries(path.stat().st_size)
    reader = IndexFile.open_read_only(path)
    try:
        assert (reader.hash_slot_num, reader.index_num) == (slots, entries)
        assert reader.header_problem() is None
        found: list[int] = []
        reader.select_phy_offsets(f"T#k{keys - 1}", 5, 0, 2**62, found)
        assert found == [100 * (keys - 1)]
    finally:
        reader.close()


def test_an_empty_file_of_uncommon_size_opens(tmp_path: Path) -> None:
    path = written(tmp_path / "20240101000000000", 64, 200, 0)
    reader = IndexFile.open_read_only(path)
    try:
        assert index_file_size(reader.hash_slot_num, reader.index_num) == path.stat().st_size
        assert reader.index_count == 1
    finally:
        reader.close()


def test_no_geometry_for_a_size_that_fits_none() -> None:
    assert entry_geometries(bytes(41), 1) == []
