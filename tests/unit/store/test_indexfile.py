"""Index files: header/slot/entry bytes, lookups, rolling, recovery truncation and expiry."""

from __future__ import annotations

import struct
import threading
import time
from datetime import datetime
from pathlib import Path

import pytest

from rmq.common.javahash import index_key_hash
from rmq.store.errors import StoreError
from rmq.store.indexfile import IndexFile
from rmq.store.indexgeometry import index_file_size, index_geometries
from rmq.store.indexservice import IndexService

# Spec §4.5 layouts, big-endian.
SPEC_HEADER = struct.Struct(">qqqqii")  # begin ts, end ts, begin phy, end phy, slots used, count
SPEC_SLOT = struct.Struct(">i")
SPEC_ENTRY = struct.Struct(">iqii")  # key hash, phy offset, time diff (s), previous entry

T0 = 1_700_000_000_000
ORDER_KEY_HASH = 1231272886  # abs("TopicTest#OrderID001".hashCode()), spec §4.5
AA_BB_HASH = 2538191  # "T#Aa".hashCode() == "T#BB".hashCode()


def expected_file(
    slots: int,
    entries: int,
    header: tuple[int, ...],
    slot_values: dict[int, int],
    rows: list[tuple[int, int, int, int]],
) -> bytes:
    data = bytearray(40 + slots * 4 + entries * 20)
    SPEC_HEADER.pack_into(data, 0, *header)
    for slot, value in slot_values.items():
        SPEC_SLOT.pack_into(data, 40 + slot * 4, value)
    for number, row in enumerate(rows, start=1):
        SPEC_ENTRY.pack_into(data, 40 + slots * 4 + number * 20, *row)
    return bytes(data)


def test_default_geometry_is_420000040_bytes() -> None:
    assert index_file_size(5_000_000, 20_000_000) == 420_000_040
    assert index_geometries(420_000_040)[0] == (5_000_000, 20_000_000)


def test_spec_vector_lands_in_slot_1272886_of_5000000(tmp_path: Path) -> None:
    index_file = IndexFile.create(tmp_path / "20240222172627123", 5_000_000, 2)
    assert index_file.put_key("TopicTest#OrderID001", 8000, T0)
    index_file.flush()
    index_file.close()
    data = (tmp_path / "20240222172627123").read_bytes()
    assert len(data) == 40 + 5_000_000 * 4 + 2 * 20
    assert SPEC_SLOT.unpack_from(data, 40 + 1272886 * 4) == (1,)
    assert data[40 : 40 + 1272886 * 4] == bytes(1272886 * 4)
    assert SPEC_ENTRY.unpack_from(data, 40 + 5_000_000 * 4 + 20) == (ORDER_KEY_HASH, 8000, 0, 0)


def test_header_slots_and_entries_match_the_spec_layout(tmp_path: Path) -> None:
    path = tmp_path / "20240222172627123"
    index_file = IndexFile.create(path, 100, 8)
    assert path.read_bytes() == bytes(600)
    index_file.put_key("TopicTest#OrderID001", 0, T0)
    index_file.put_key("T#Aa", 500, T0 + 2_500)
    index_file.put_key("T#BB", 900, T0 + 7_999)
    assert path.read_bytes() == expected_file(
        100,
        8,
        (T0, T0 + 7_999, 0, 900, 2, 4),
        {ORDER_KEY_HASH % 100: 1, AA_BB_HASH % 100: 3},
        [
            # First entry: diff taken before beginTimestamp is set, so 0.
            (ORDER_KEY_HASH, 0, 0, 0),
            (AA_BB_HASH, 500, 2, 0),
            # Same slot (and same hash): chained to entry 2; 7.999 s truncates to 7.
            (AA_BB_HASH, 900, 7, 2),
        ],
    )


def test_flushing_an_empty_file_writes_index_count_one(tmp_path: Path) -> None:
    path = tmp_path / "20240222172627123"
    index_file = IndexFile.create(path, 4, 2, end_phy_offset=77, end_timestamp=T0)
    assert path.read_bytes()[:40] == SPEC_HEADER.pack(T0, T0, 77, 77, 0, 0)
    index_file.flush()
    assert path.read_bytes()[:40] == SPEC_HEADER.pack(T0, T0, 77, 77, 0, 1)


def test_slot_value_beyond_index_count_counts_as_empty(tmp_path: Path) -> None:
    path = tmp_path / "20240222172627123"
    index_file = IndexFile.create(path, 100, 8)
    index_file.put_key("TopicTest#OrderID001", 0, T0)
    stale = bytearray(path.read_bytes())
    index_file.close()
    SPEC_SLOT.pack_into(stale, 40 + (AA_BB_HASH % 100) * 4, 77)
    path.write_bytes(bytes(stale))

    reopened = IndexFile.open(path, 100, 8)
    reopened.put_key("T#Aa", 500, T0 + 1_000)
    data = path.read_bytes()
    assert SPEC_ENTRY.unpack_from(data, 40 + 400 + 2 * 20) == (AA_BB_HASH, 500, 1, 0)
    assert SPEC_HEADER.unpack_from(data, 0)[4:] == (2, 3)
    found: list[int] = []
    reopened.select_phy_offsets("T#Aa", 10, 0, 2**62, found)
    assert found == [500]


def service(tmp_path: Path, slots: int = 100, entries: int = 8) -> IndexService:
    index_service = IndexService(tmp_path / "index", slots, entries)
    index_service.load()
    return index_service


def test_lookup_returns_hash_matches_newest_first_within_the_time_window(tmp_path: Path) -> None:
    index_service = service(tmp_path)
    index_service.put_keys("T", ["Aa"], None, 100, T0)
    index_service.put_keys("T", ["BB"], None, 200, T0 + 10_000)
    index_service.put_keys("T", ["Aa", ""], "U1", 300, T0 + 20_000)
    index_service.put_keys("Other", ["Aa"], None, 400, T0 + 30_000)
    # "Aa" and "BB" share a hash: the index returns both, callers re-check the keys.
    assert index_service.query("T", "Aa", 10, 0, 2**62) == [300, 200, 100]
    assert index_service.query("T", "Aa", 2, 0, 2**62) == [300, 200]
    assert index_service.query("T", "Aa", 10, T0 + 5_000, T0 + 15_000) == [200]
    assert index_service.query("T", "Aa", 10, T0 + 25_000, 2**62) == []
    assert index_service.query("T", "U1", 10, 0, 2**62) == [300]
    assert index_service.query("Other", "Aa", 10, 0, 2**62) == [400]
    assert index_service.query("T", "missing", 10, 0, 2**62) == []


def test_rolled_files_are_seeded_and_searched_newest_first(tmp_path: Path) -> None:
    index_service = service(tmp_path, slots=10, entries=3)  # two keys per file
    for n in range(5):
        index_service.put_keys("T", [f"k{n}", "same"], None, 1000 * (n + 1), T0 + 3_500 * n)
    files = index_service.files
    assert len(files) == 5
    assert [f.path.name for f in files] == sorted(f.path.name for f in files)
    second = files[1].path.read_bytes()
    # Seeded with the first file's end (phy 1000, T0), then the first entry overwrote begin.
    begin_ts, end_ts, begin_phy, end_phy, _, count = SPEC_HEADER.unpack(second[:40])
    assert (begin_ts, end_ts, begin_phy, end_phy, count) == (T0 + 3_500, T0 + 3_500, 2000, 2000, 3)
    # That first entry's time diff was taken against the seeded begin: 3.5 s -> 3.
    assert SPEC_ENTRY.unpack_from(second, 40 + 40 + 20)[2] == 3
    assert index_service.query("T", "same", 64, 0, 2**62) == [5000, 4000, 3000, 2000, 1000]
    assert index_service.query("T", "same", 3, 0, 2**62) == [5000, 4000, 3000]
    assert index_service.query("T", "k1", 64, 0, 2**62) == [2000]
    assert (index_service.last_update_phy_offset, index_service.last_update_timestamp) == (
        5000,
        T0 + 14_000,
    )


def test_redispatching_a_message_does_not_duplicate_its_keys(tmp_path: Path) -> None:
    index_service = service(tmp_path)
    index_service.put_keys("T", ["k"], "U", 0, T0)
    index_service.put_keys("T", ["k"], "U", 0, T0)
    index_service.put_keys("T", ["j"], None, 100, T0 + 1)
    index_service.put_keys("T", ["k"], "U", 0, T0)
    assert index_service.files[0].index_count == 4
    assert index_service.query("T", "k", 10, 0, 2**62) == [0]


def test_truncate_restores_slots_and_counts(tmp_path: Path) -> None:
    path = tmp_path / "20240222172627123"
    index_file = IndexFile.create(path, 100, 8)
    index_file.put_key("TopicTest#OrderID001", 0, T0)
    index_file.put_key("T#Aa", 500, T0 + 2_500)
    index_file.put_key("T#BB", 900, T0 + 7_999)
    assert index_file.truncate(900) == 1
    assert path.read_bytes() == expected_file(
        100,
        8,
        (T0, T0 + 2_000, 0, 500, 2, 3),
        {ORDER_KEY_HASH % 100: 1, AA_BB_HASH % 100: 2},
        [(ORDER_KEY_HASH, 0, 0, 0), (AA_BB_HASH, 500, 2, 0)],
    )
    assert index_file.truncate(1) == 1
    assert path.read_bytes() == expected_file(
        100, 8, (T0, T0, 0, 0, 1, 2), {ORDER_KEY_HASH % 100: 1}, [(ORDER_KEY_HASH, 0, 0, 0)]
    )


def test_service_truncation_deletes_emptied_files_and_keeps_indexing(tmp_path: Path) -> None:
    index_service = service(tmp_path, slots=10, entries=3)
    for n in range(4):
        index_service.put_keys("T", [f"k{n}", "same"], None, 1000 * (n + 1), T0 + 1_000 * n)
    assert len(index_service.files) == 4
    index_service.truncate_dirty(2500)
    assert len(index_service.files) == 2
    assert len(list((tmp_path / "index").iterdir())) == 2
    assert index_service.query("T", "same", 64, 0, 2**62) == [2000, 1000]
    assert index_service.indexed_up_to() == 2000
    index_service.put_keys("T", ["k9", "same"], None, 2600, T0 + 9_000)
    assert index_service.query("T", "same", 64, 0, 2**62) == [2600, 2000, 1000]


def test_reload_from_disk_and_continue(tmp_path: Path) -> None:
    index_service = service(tmp_path)
    index_service.put_keys("T", ["a", "b"], None, 10, T0)
    assert index_service.flush() == T0
    index_service.close()

    reloaded = service(tmp_path)
    assert reloaded.query("T", "b", 10, 0, 2**62) == [10]
    reloaded.put_keys("T", ["b"], None, 20, T0 + 1_000)
    assert reloaded.query("T", "b", 10, 0, 2**62) == [20, 10]
    assert reloaded.files[0].index_count == 4


def test_delete_expired_keeps_the_newest_file(tmp_path: Path) -> None:
    index_service = service(tmp_path, slots=10, entries=2)  # one key per file
    for n in range(4):
        index_service.put_keys("T", [f"k{n}"], None, 100 * n, T0 + n)
    assert index_service.delete_expired(150) == 2
    assert [f.end_phy_offset for f in index_service.files] == [200, 300]
    assert index_service.delete_expired(10**9) == 1
    assert [f.end_phy_offset for f in index_service.files] == [300]


def test_read_only_open_infers_the_geometry_from_the_size(tmp_path: Path) -> None:
    writable = IndexFile.create(tmp_path / "20240101000000000", 10, 40)
    writable.put_key("T#k", 5, T0)
    writable.flush()
    reader = IndexFile.open_read_only(tmp_path / "20240101000000000")
    assert (reader.hash_slot_num, reader.index_num, reader.index_count) == (10, 40, 2)
    found: list[int] = []
    reader.select_phy_offsets("T#k", 5, 0, 2**62, found)
    assert found == [5]
    # "T#k".hashCode() = 84*31*31 + 35*31 + 107
    assert list(reader.entries()) == [(1, (81916, 5, 0, 0))]

    IndexFile.create(tmp_path / "20240101000000001", 100, 8).close()
    odd = IndexFile.open_read_only(tmp_path / "20240101000000001", hash_slot_num=100)
    assert (odd.hash_slot_num, odd.index_num) == (100, 8)
    (tmp_path / "20240101000000002").write_bytes(bytes(41))
    with pytest.raises(StoreError, match="not the size of an index file"):
        IndexFile.open_read_only(tmp_path / "20240101000000002")


def test_geometry_that_disagrees_with_the_header_is_not_chosen(tmp_path: Path) -> None:
    path = tmp_path / "20240101000000000"
    writable = IndexFile.create(path, 5, 20)
    for n in range(3):
        writable.put_key(f"T#k{n}", 100 * n, T0 + n)
    writable.close()
    # 10 slots and 19 entries fit the size too, but then entry 1 is not at the header's
    # begin offset; the four-entries-per-slot geometry agrees with the header.
    assert index_geometries(path.stat().st_size, hash_slot_num=10)[0] == (10, 19)
    reader = IndexFile.open_read_only(path, hash_slot_num=10)
    assert (reader.hash_slot_num, reader.index_num) == (5, 20)
    assert reader.header_problem() is None
    found: list[int] = []
    reader.select_phy_offsets("T#k2", 5, 0, 2**62, found)
    assert found == [200]


def test_new_files_are_named_by_local_creation_time(tmp_path: Path) -> None:
    index_service = service(tmp_path, slots=10, entries=2)
    before = time.time()
    index_service.put_keys("T", ["a"], None, 0, T0)
    index_service.put_keys("T", ["b"], None, 1, T0)
    names = [f.path.name for f in index_service.files]
    assert len(names) == 2 and names[0] < names[1]
    for name in names:
        assert len(name) == 17 and name.isdigit()  # yyyyMMddHHmmssSSS
        created = datetime.strptime(name[:14], "%Y%m%d%H%M%S").timestamp() + int(name[14:]) / 1000
        assert before - 1 <= created <= time.time() + 1


def test_file_names_keep_sorting_by_age_when_the_clock_goes_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index_service = service(tmp_path, slots=10, entries=2)
    index_service.put_keys("T", ["a"], None, 0, T0)
    hour_ago = time.time_ns() - 3600 * 10**9
    monkeypatch.setattr(time, "time_ns", lambda: hour_ago)
    index_service.put_keys("T", ["b"], None, 1, T0)
    index_service.put_keys("T", ["c"], None, 2, T0)
    names = [f.path.name for f in index_service.files]
    assert names == sorted(names) and len(set(names)) == 3
    index_service.close()
    assert [p.name for p in sorted((tmp_path / "index").iterdir())] == names


# -- crash safety ------------------------------------------------------------------------

SLOTS_1 = 1  # one slot: every key chains to the one before


def index_path(tmp_path: Path) -> Path:
    (path,) = (tmp_path / "index").iterdir()
    return path


def patch(path: Path, position: int, data: bytes) -> None:
    with open(path, "r+b") as file:
        file.seek(position)
        file.write(data)


def read_header(path: Path) -> tuple[int, ...]:
    return SPEC_HEADER.unpack(path.read_bytes()[:40])


def read_slot(path: Path, slot: int = 0) -> int:
    return int(SPEC_SLOT.unpack_from(path.read_bytes(), 40 + slot * 4)[0])


def test_put_killed_before_the_header_update_keeps_older_keys_reachable(tmp_path: Path) -> None:
    # Entry and slot are written before the header (as Apache does): a kill before the
    # header leaves entry 2 written and the slot pointing at it, but indexCount still 2.
    first = service(tmp_path, slots=SLOTS_1)
    first.put_keys("T", ["a"], None, 100, T0)
    first.put_keys("T", ["b"], None, 200, T0 + 1_000)
    first.close()
    path = index_path(tmp_path)
    patch(path, 36, SPEC_SLOT.pack(2))

    reopened = service(tmp_path, slots=SLOTS_1)
    assert reopened.query("T", "a", 10, 0, 2**62) == [100]
    assert reopened.indexed_up_to() == 100
    # The entry the header never counted is gone and its slot points back at entry 1.
    data = path.read_bytes()
    assert data[40 + 4 + 2 * 20 : 40 + 4 + 3 * 20] == bytes(20)
    assert read_slot(path) == 1
    assert read_header(path)[3:] == (100, 1, 2)
    # Re-dispatch adds "b" again; the next put chains to it instead of to itself.
    reopened.put_keys("T", ["b"], None, 200, T0 + 1_000)
    reopened.put_keys("T", ["c"], None, 300, T0 + 2_000)
    assert reopened.query("T", "a", 10, 0, 2**62) == [100]
    assert reopened.query("T", "b", 10, 0, 2**62) == [200]
    assert reopened.query("T", "c", 10, 0, 2**62) == [300]
    assert SPEC_ENTRY.unpack_from(path.read_bytes(), 40 + 4 + 3 * 20) == (
        index_key_hash("T#c"),
        300,
        2,
        2,
    )


def test_writer_never_chains_an_entry_to_itself_even_without_repair(tmp_path: Path) -> None:
    # Even a file that skipped repair (offline copy) never gets a self-pointing entry: a slot
    # naming the uncounted entry is treated as empty by the writer.
    path = tmp_path / "20240222172627123"
    index_file = IndexFile.create(path, SLOTS_1, 8)
    index_file.put_key("T#a", 100, T0)
    index_file.put_key("T#b", 200, T0)
    index_file.close()
    patch(path, 36, SPEC_SLOT.pack(2))
    reopened = IndexFile.open(path, SLOTS_1, 8)
    reopened.put_key("T#c", 300, T0)
    assert SPEC_ENTRY.unpack_from(path.read_bytes(), 40 + 4 + 2 * 20)[3] == 0


def test_message_killed_before_its_header_update_is_undone_key_by_key(tmp_path: Path) -> None:
    # Each key's entry and slot are written, the header once for the message: a kill before
    # it leaves three uncounted entries chained through the one slot.
    first = service(tmp_path, slots=SLOTS_1)
    first.put_keys("T", ["a"], None, 100, T0)
    first.close()
    path = index_path(tmp_path)
    header = path.read_bytes()[:40]
    second = service(tmp_path, slots=SLOTS_1)
    second.put_keys("T", ["b", "c"], "u", 200, T0 + 1_000)
    second.close()
    assert read_slot(path) == 4
    patch(path, 0, header)

    reopened = service(tmp_path, slots=SLOTS_1)
    assert read_slot(path) == 1
    assert path.read_bytes()[40 + 4 + 2 * 20 :] == bytes(6 * 20)
    assert reopened.query("T", "a", 10, 0, 2**62) == [100]
    assert reopened.query("T", "b", 10, 0, 2**62) == []
    reopened.put_keys("T", ["b", "c"], "u", 200, T0 + 1_000)
    for key, expected in (("a", [100]), ("b", [200]), ("c", [200]), ("u", [200])):
        assert reopened.query("T", key, 10, 0, 2**62) == expected, key


def test_put_killed_after_some_entries_before_the_header_drops_them(tmp_path: Path) -> None:
    first = service(tmp_path, slots=SLOTS_1)
    first.put_keys("T", ["a"], None, 100, T0)
    first.close()
    path = index_path(tmp_path)
    before = path.read_bytes()
    # Entries 2 and 3 of the next message written, nothing else.
    base = 40 + 4
    patch(path, base + 2 * 20, SPEC_ENTRY.pack(index_key_hash("T#b"), 200, 1, 1))
    patch(path, base + 3 * 20, SPEC_ENTRY.pack(index_key_hash("T#c"), 200, 1, 2))

    reopened = service(tmp_path, slots=SLOTS_1)
    assert path.read_bytes() == before
    assert reopened.query("T", "a", 10, 0, 2**62) == [100]
    reopened.put_keys("T", ["b", "c"], None, 200, T0 + 1_000)
    assert reopened.query("T", "a", 10, 0, 2**62) == [100]
    assert reopened.query("T", "c", 10, 0, 2**62) == [200]


def test_truncation_killed_after_uncounting_an_entry_is_finished_on_load(tmp_path: Path) -> None:
    first = service(tmp_path, slots=SLOTS_1)
    for n in range(1, 4):
        first.put_keys("T", [f"k{n}"], None, 100 * n, T0 + n)
    first.close()
    path = index_path(tmp_path)
    patch(path, 36, SPEC_SLOT.pack(3))  # entry 3 uncounted, slot and entry not touched yet

    reopened = service(tmp_path, slots=SLOTS_1)
    assert read_slot(path) == 2
    assert reopened.query("T", "k1", 10, 0, 2**62) == [100]
    assert reopened.query("T", "k3", 10, 0, 2**62) == []
    assert reopened.indexed_up_to() == 200


def test_redispatch_adds_the_keys_a_kill_left_out(tmp_path: Path) -> None:
    index_service = service(tmp_path)
    index_service.put_keys("T", ["a"], None, 100, T0)
    # Only the unique key of the message at 200 is indexed (a kill between its keys).
    index_service.put_keys("T", [], "u", 200, T0 + 1_000)
    index_service.put_keys("T", ["b", "", "c"], "u", 200, T0 + 1_000)
    assert index_service.query("T", "b", 10, 0, 2**62) == [200]
    assert index_service.query("T", "c", 10, 0, 2**62) == [200]
    assert index_service.query("T", "u", 10, 0, 2**62) == [200]
    assert index_service.files[0].index_count == 5
    # Once complete, dispatching it again adds nothing.
    index_service.put_keys("T", ["b", "c"], "u", 200, T0 + 1_000)
    index_service.put_keys("T", ["a"], None, 100, T0)
    assert index_service.files[0].index_count == 5


def test_redispatch_completes_a_message_whose_keys_span_two_files(tmp_path: Path) -> None:
    index_service = service(tmp_path, slots=10, entries=3)  # two keys per file
    index_service.put_keys("T", ["a"], None, 100, T0)
    index_service.put_keys("T", ["b"], None, 200, T0)  # fills the first file
    index_service.put_keys("T", ["c", "d"], "u", 300, T0)  # u, c in file 2; d in file 3
    assert len(index_service.files) == 3
    index_service.truncate_dirty(300)
    index_service.put_keys("T", ["c"], "u", 300, T0)  # as if killed before "d"
    assert len(index_service.files) == 2
    index_service.put_keys("T", ["c", "d"], "u", 300, T0)
    assert [f.index_count for f in index_service.files] == [3, 3, 2]
    for key in "abcdu":
        assert len(index_service.query("T", key, 10, 0, 2**62)) == 1, key


def test_flush_does_not_hold_up_puts_while_it_syncs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index_service = service(tmp_path)
    index_service.put_keys("T", ["a"], None, 100, T0)
    syncing = threading.Event()
    release = threading.Event()

    def slow_sync(self: IndexFile) -> None:
        syncing.set()
        release.wait(10)

    monkeypatch.setattr(IndexFile, "sync", slow_sync)
    flusher = threading.Thread(target=index_service.flush)
    flusher.start()
    try:
        assert syncing.wait(10)
        putter = threading.Thread(
            target=index_service.put_keys, args=("T", ["b"], None, 200, T0 + 1)
        )
        putter.start()
        putter.join(5)
        assert not putter.is_alive(), "put_keys waited for the msync"
        assert index_service.query("T", "b", 10, 0, 2**62) == [200]
    finally:
        release.set()
        flusher.join(10)


def test_flush_syncs_only_files_changed_since_the_last_flush(tmp_path: Path) -> None:
    index_service = service(tmp_path)
    index_service.put_keys("T", ["a"], None, 100, T0)
    assert index_service.flush() == T0
    assert index_service.flush() == T0
    assert not index_service.files[0].begin_flush()
    index_service.put_keys("T", ["b"], None, 200, T0 + 5)
    assert index_service.files[0].begin_flush()


def test_load_deletes_temporary_files_of_an_interrupted_creation(tmp_path: Path) -> None:
    index_service = service(tmp_path)
    index_service.put_keys("T", ["a"], None, 100, T0)
    index_service.close()
    leftover = tmp_path / "index" / "20990101000000000.tmp"
    leftover.write_bytes(bytes(100))
    reloaded = service(tmp_path)
    assert not leftover.exists()
    assert reloaded.query("T", "a", 10, 0, 2**62) == [100]


def test_a_message_without_keys_leaves_the_index_as_it_was(tmp_path: Path) -> None:
    index_service = service(tmp_path)
    index_service.put_keys("T", ["a"], None, 100, T0)
    index_service.put_keys("T", ["", ""], None, 200, T0 + 1_000)
    assert index_service.indexed_up_to() == 100
    assert index_service.last_update_timestamp == T0
