"""Consume queues: entry bytes, puts, reads, time search, recovery, truncation and expiry."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from rmq.store.consumequeue import (
    ConsumeQueue,
    ConsumeQueueStore,
    iter_entries,
)
from rmq.store.errors import StoreError
from rmq.store.layout import StoreLayout

# Spec §4.4: commitlog offset int64, size int32, tags code int64, big-endian.
SPEC_ENTRY = struct.Struct(">qiq")
SPEC_PRE_BLANK = SPEC_ENTRY.pack(0, 0x7FFFFFFF, 0)
FILE_SIZE = 100  # five entries per file


def queue_files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def make_queue(tmp_path: Path, file_size: int = FILE_SIZE) -> ConsumeQueue:
    return ConsumeQueue("TopicTest", 3, tmp_path / "TopicTest" / "3", file_size)


def fill(queue: ConsumeQueue, first: int, count: int, *, size: int = 100) -> None:
    """Queue offsets first.. with messages of ``size`` bytes laid end to end from 1000."""
    for offset in range(first, first + count):
        queue.put(offset, 1000 + offset * size, size, offset, 1_700_000_000_000 + offset)


def test_entries_are_spec_bytes_in_files_named_by_byte_offset(tmp_path: Path) -> None:
    queue = make_queue(tmp_path)
    queue.put(0, 0, 178, 2598919)
    queue.put(1, 178, 200, -5)
    files = queue_files(queue.directory)
    assert list(files) == ["00000000000000000000"]
    content = files["00000000000000000000"]
    assert len(content) == FILE_SIZE
    assert content[:40] == SPEC_ENTRY.pack(0, 178, 2598919) + SPEC_ENTRY.pack(178, 200, -5)
    assert content[40:] == bytes(60)
    assert (queue.min_offset, queue.max_offset, queue.max_physical_offset) == (0, 2, 378)


def test_queue_starting_late_is_padded_with_pre_blank_entries(tmp_path: Path) -> None:
    queue = make_queue(tmp_path)
    assert queue.put(7, 5000, 120, 42)
    files = queue_files(queue.directory)
    # Queue offset 7 is byte 140, in the file starting at byte 100, at position 40.
    assert list(files) == ["00000000000000000100"]
    assert files["00000000000000000100"][:60] == SPEC_PRE_BLANK * 2 + SPEC_ENTRY.pack(5000, 120, 42)
    assert (queue.min_offset, queue.max_offset) == (7, 8)
    assert queue.get_entries(6, 10) is None
    assert queue.entry_at(7) == (5000, 120, 42)


def test_gap_inside_a_queue_keeps_the_entry_at_its_queue_offset(tmp_path: Path) -> None:
    queue = make_queue(tmp_path)
    fill(queue, 0, 2)
    assert queue.put(8, 9000, 10, 0)
    assert queue.entry_at(8) == (9000, 10, 0)
    assert [queue.entry_at(n) for n in range(2, 8)] == [(0, 0x7FFFFFFF, 0)] * 6
    files = queue_files(queue.directory)
    assert files["00000000000000000000"][40:] == SPEC_PRE_BLANK * 3
    assert files["00000000000000000100"] == (
        SPEC_PRE_BLANK * 3 + SPEC_ENTRY.pack(9000, 10, 0) + bytes(20)
    )


def test_repeated_put_is_skipped_and_changes_nothing(tmp_path: Path) -> None:
    queue = make_queue(tmp_path)
    fill(queue, 0, 3)
    before = queue_files(queue.directory)
    assert not queue.put(1, 1100, 100, 1)
    assert not queue.put(1, 7777, 1, 1)
    assert queue_files(queue.directory) == before
    assert queue.max_offset == 3


def test_redispatch_rewrites_a_last_entry_a_kill_left_half_written(tmp_path: Path) -> None:
    queue = make_queue(tmp_path)
    fill(queue, 0, 3, size=300)
    queue.close()
    # Killed while writing entry 2 (1600, 300, 2): the offset and the low byte of the size
    # were written, the rest not.  It still looks like a valid entry.
    path = queue.directory / "00000000000000000000"
    data = bytearray(path.read_bytes())
    data[40 + 8 : 40 + 20] = struct.pack(">i", 0x2C) + bytes(8)
    path.write_bytes(bytes(data))

    reopened = make_queue(tmp_path)
    reopened.load()
    reopened.recover()
    assert reopened.entry_at(2) == (1600, 0x2C, 0)
    assert not reopened.put(2, 1600, 300, 2)
    assert reopened.entry_at(2) == (1600, 300, 2)
    assert reopened.max_physical_offset == 1900
    assert queue_files(reopened.directory)["00000000000000000000"][40:60] == SPEC_ENTRY.pack(
        1600, 300, 2
    )
    # Entries before the last one are never rewritten.
    assert not reopened.put(1, 7777, 1, 1)
    assert reopened.entry_at(1) == (1300, 300, 1)
    assert reopened.put(3, 1900, 300, 3)
    assert reopened.max_offset == 4


def test_get_entries_is_a_view_limited_to_one_file(tmp_path: Path) -> None:
    queue = make_queue(tmp_path)
    fill(queue, 0, 8)
    view = queue.get_entries(3, 10)
    assert isinstance(view, memoryview)
    assert [entry[0] for entry in iter_entries(view)] == [1300, 1400]
    view = queue.get_entries(5, 2)
    assert view is not None
    assert list(iter_entries(view)) == [(1500, 100, 5), (1600, 100, 6)]
    assert queue.get_entries(8, 1) is None


def test_search_by_time_exact_nearest_and_ties(tmp_path: Path) -> None:
    queue = make_queue(tmp_path, 200)
    store_times = {}
    for offset, stored in enumerate([1000, 2000, 3000, 3000, 5000, 8000]):
        queue.put(offset, offset * 100, 100, 0)
        store_times[offset * 100] = stored

    def search(timestamp: int, min_commitlog_offset: int = 0) -> int:
        return queue.search_offset_by_time(
            timestamp, lambda phy, size: store_times[phy], min_commitlog_offset
        )

    assert search(2000) == 1
    assert search(2400) == 1
    assert search(2600) == 2
    assert search(6500) == 4  # equally far from 5000 and 8000: the earlier one
    assert search(6600) == 5
    assert search(10) == 0
    assert search(99_999) == 5
    assert search(1000, min_commitlog_offset=250) == 3


def test_search_by_time_starts_in_the_first_file_modified_after_the_time(tmp_path: Path) -> None:
    queue = make_queue(tmp_path, 40)  # two entries per file
    fill(queue, 0, 4)
    first, second = sorted(queue.directory.iterdir())
    os.utime(first, (2_000, 2_000))
    os.utime(second, (5_000, 5_000))
    times = [1_000_000, 1_500_000, 4_000_000, 4_500_000]
    store_times = {1000 + n * 100: stored for n, stored in enumerate(times)}

    def lookup(phy: int, size: int) -> int:
        return store_times[phy]

    assert queue.search_offset_by_time(1_600_000, lookup, 0) == 1
    # 2,500,000 ms is nearer to offset 1 (1,500,000), but only the second file was modified
    # after it, so the search runs in that file.
    assert queue.search_offset_by_time(2_500_000, lookup, 0) == 2


def test_truncate_dirty_cuts_entries_past_the_commitlog_end(tmp_path: Path) -> None:
    queue = make_queue(tmp_path)
    fill(queue, 0, 12)
    queue.truncate_dirty(1000 + 6 * 100)
    assert queue.max_offset == 6
    assert queue.max_physical_offset == 1600
    assert sorted(queue_files(queue.directory)) == [
        "00000000000000000000",
        "00000000000000000100",
    ]
    assert queue_files(queue.directory)["00000000000000000100"] == SPEC_ENTRY.pack(
        1500, 100, 5
    ) + bytes(80)
    assert queue.put(6, 1600, 100, 6)
    assert queue.entry_at(6) == (1600, 100, 6)


def test_truncate_dirty_below_every_entry_empties_the_queue(tmp_path: Path) -> None:
    queue = make_queue(tmp_path)
    fill(queue, 0, 7)
    queue.truncate_dirty(500)
    assert queue.max_offset == 0
    assert queue.max_physical_offset == -1
    assert queue_files(queue.directory) == {"00000000000000000000": bytes(FILE_SIZE)}


def test_recover_finds_the_last_valid_entry_and_drops_later_files(tmp_path: Path) -> None:
    queue = make_queue(tmp_path)
    fill(queue, 0, 7)
    queue.close()
    # A torn write: an all-zero entry at queue offset 5, later entries and a stray file.
    middle = queue.directory / "00000000000000000100"
    data = bytearray(middle.read_bytes())
    data[0:20] = bytes(20)
    middle.write_bytes(bytes(data))
    (queue.directory / "00000000000000000200").write_bytes(SPEC_ENTRY.pack(9, 9, 9) * 5)

    reopened = make_queue(tmp_path)
    reopened.load()
    reopened.recover()
    assert reopened.max_offset == 5
    assert reopened.max_physical_offset == 1500
    assert sorted(queue_files(reopened.directory)) == [
        "00000000000000000000",
        "00000000000000000100",
    ]
    assert queue_files(reopened.directory)["00000000000000000100"] == bytes(FILE_SIZE)


def test_load_rejects_a_file_that_is_not_whole_entries(tmp_path: Path) -> None:
    directory = tmp_path / "TopicTest" / "3"
    directory.mkdir(parents=True)
    (directory / "00000000000000000000").write_bytes(bytes(90))
    with pytest.raises(StoreError, match="20-byte"):
        make_queue(tmp_path).load()


def test_min_offset_follows_the_commitlog_minimum(tmp_path: Path) -> None:
    queue = make_queue(tmp_path)
    fill(queue, 0, 8)
    queue.correct_min_offset(1000 + 3 * 100)
    assert queue.min_offset == 3
    assert queue.get_entries(2, 1) is None
    queue.correct_min_offset(10**9)
    assert queue.min_offset == queue.max_offset == 8


def test_delete_expired_removes_files_pointing_below_the_minimum(tmp_path: Path) -> None:
    queue = make_queue(tmp_path)
    fill(queue, 0, 12)
    assert queue.delete_expired(1000 + 4 * 100) == 0  # file 0's last entry is at 1400
    assert queue.delete_expired(1000 + 4 * 100 + 1) == 1
    assert sorted(queue_files(queue.directory)) == [
        "00000000000000000100",
        "00000000000000000200",
    ]
    assert queue.min_offset == 5
    # Everything expired: the last file stays, the queue reads as empty.
    assert queue.delete_expired(10**9) == 1
    assert sorted(queue_files(queue.directory)) == ["00000000000000000200"]
    assert queue.min_offset == queue.max_offset == 12


def test_flush_reports_the_store_time_of_the_newest_entry(tmp_path: Path) -> None:
    queue = make_queue(tmp_path)
    fill(queue, 0, 3)
    assert queue.flush() == 1_700_000_000_002


def test_file_size_must_be_whole_entries(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="multiple of 20"):
        make_queue(tmp_path, 90)


def test_store_loads_existing_queues(tmp_path: Path) -> None:
    layout = StoreLayout.of(tmp_path)
    store = ConsumeQueueStore(layout, FILE_SIZE)
    store.put("TopicA", 0, 0, 0, 100, 0, 11)
    store.put("TopicA", 1, 0, 100, 100, 0, 12)
    store.put("TopicB", 0, 0, 200, 100, 0, 13)
    assert store.flush() == 13
    assert store.flush(least_pages=1) == 0
    store.close()

    reloaded = ConsumeQueueStore(layout, FILE_SIZE)
    reloaded.load()
    assert reloaded.recover() == 300
    assert reloaded.topics() == ["TopicA", "TopicB"]
    assert sorted(reloaded.queues_of("TopicA")) == [0, 1]
    assert len(reloaded) == 3
    queue = reloaded.find("TopicA", 1)
    assert queue is not None
    assert queue.entry_at(0) == (100, 100, 0)
    assert reloaded.find("TopicC", 0) is None
    assert reloaded.find_or_create("TopicC", 0) is reloaded.find_or_create("TopicC", 0)

    reloaded.delete_topic("TopicA")
    assert reloaded.topics() == ["TopicB", "TopicC"]
    assert not (layout.consume_queue_root / "TopicA").exists()


def test_store_recovery_truncation_and_expiry_cover_every_queue(tmp_path: Path) -> None:
    store = ConsumeQueueStore(StoreLayout.of(tmp_path), FILE_SIZE)
    for n in range(12):
        store.put("T", n % 2, n // 2, n * 100, 100, 0, n)
    store.truncate_dirty(700)
    assert [q.max_offset for q in store] == [4, 3]
    assert store.delete_expired(10**9) == 0  # each queue has a single file
    store.correct_min_offsets(300)
    assert [q.min_offset for q in store] == [2, 1]


def test_an_entry_pointing_back_in_the_commitlog_is_refused(tmp_path: Path) -> None:
    queue = make_queue(tmp_path)
    fill(queue, 0, 2)  # the second message ends at 1200
    with pytest.raises(AssertionError, match="before the previous entry's end"):
        queue.put(2, 1150, 100, 0)
    assert queue.max_offset == 2


def test_an_entry_is_never_written_below_the_queue_end(tmp_path: Path) -> None:
    queue = make_queue(tmp_path)
    fill(queue, 0, 2)
    last = queue._files.last_file()
    assert last is not None
    last.wrote_position = 20  # a corrupted state: the file claims less than the queue holds
    queue._files.max_offset = lambda: 40  # type: ignore[method-assign]
    with pytest.raises(AssertionError, match="would be written at byte 20, not 40"):
        queue.put(2, 1200, 100, 0)


@pytest.mark.parametrize(("entries", "end"), [(0, -1), (3, 1300), (5, 1500), (7, 1700)])
def test_last_physical_end_is_where_the_newest_entry_ends(
    tmp_path: Path, entries: int, end: int
) -> None:
    queue = make_queue(tmp_path)
    fill(queue, 0, entries)
    assert queue.last_physical_end() == end
