"""Mapped files and mapped-file queues: naming, preallocation, rolling, flushing, cutting."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

import pytest

from rmq.store.errors import StoreError
from rmq.store.mappedfile import MappedFile, MappedFileQueue

SIZE = 4096


def names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def test_files_are_named_by_start_offset_and_preallocated_full_size(tmp_path: Path) -> None:
    queue = MappedFileQueue(tmp_path, SIZE)
    first = queue.get_last_mapped_file()
    assert first is not None
    assert first.append(b"a" * SIZE)
    second = queue.get_last_mapped_file()
    assert second is not None and second is not first
    assert names(tmp_path) == ["00000000000000000000", "00000000000000004096"]
    stat = os.stat(second.path)
    assert stat.st_size == SIZE
    assert stat.st_blocks * 512 >= SIZE  # blocks reserved, not a sparse file
    assert (tmp_path / "00000000000000004096").read_bytes() == bytes(SIZE)


def test_first_file_starts_at_the_requested_offset_rounded_down(tmp_path: Path) -> None:
    queue = MappedFileQueue(tmp_path, 100)
    mapped = queue.get_last_mapped_file(start_offset=1234)
    assert mapped is not None
    assert mapped.file_name == "00000000000000001200"
    assert (queue.min_offset(), queue.max_offset()) == (1200, 1200)


def test_append_publishes_bytes_and_refuses_what_does_not_fit(tmp_path: Path) -> None:
    queue = MappedFileQueue(tmp_path, 16)
    mapped = queue.get_last_mapped_file()
    assert mapped is not None
    assert mapped.append(b"0123456789", store_timestamp=77)
    assert not mapped.append(b"too long")
    assert (mapped.wrote_position, mapped.remaining(), mapped.store_timestamp) == (10, 6, 77)
    assert bytes(mapped.slice(2, 3)) == b"234"
    assert queue.max_offset() == 10


def test_find_by_offset_uses_file_ranges(tmp_path: Path) -> None:
    queue = MappedFileQueue(tmp_path, 100)
    for _ in range(3):
        mapped = queue.get_last_mapped_file()
        assert mapped is not None and mapped.append(bytes(100))
    found = queue.find_mapped_file_by_offset(250)
    assert found is not None and found.file_from_offset == 200
    assert queue.find_mapped_file_by_offset(300) is None
    first = queue.find_mapped_file_by_offset(999, return_first_on_not_found=True)
    assert first is not None and first.file_from_offset == 0


def test_load_takes_sizes_from_files_and_treats_them_as_full(tmp_path: Path) -> None:
    (tmp_path / "00000000000000000000").write_bytes(b"x" * 300)
    (tmp_path / "00000000000000000300").write_bytes(b"y" * 300)
    (tmp_path / "not-a-store-file").write_bytes(b"ignored")
    queue = MappedFileQueue(tmp_path, 1000)
    queue.load()
    assert [m.file_size for m in queue.files] == [300, 300]
    assert queue.max_offset() == 600
    assert queue.flushed_where == 600
    mapped = queue.get_last_mapped_file()
    assert mapped is not None and mapped.file_name == "00000000000000000600"
    assert mapped.file_size == 1000


def test_load_refuses_files_that_do_not_follow_on(tmp_path: Path) -> None:
    (tmp_path / "00000000000000000000").write_bytes(bytes(300))
    (tmp_path / "00000000000000000400").write_bytes(bytes(300))
    with pytest.raises(StoreError, match="is not followed by 00000000000000000300"):
        MappedFileQueue(tmp_path, 300).load()


def test_load_refuses_an_empty_file(tmp_path: Path) -> None:
    (tmp_path / "00000000000000000000").write_bytes(b"")
    with pytest.raises(StoreError, match="empty"):
        MappedFileQueue(tmp_path, 300).load()


def test_flush_advances_across_files_and_records_the_store_time(tmp_path: Path) -> None:
    queue = MappedFileQueue(tmp_path, SIZE)
    mapped = queue.get_last_mapped_file()
    assert mapped is not None and mapped.append(b"a" * SIZE, store_timestamp=5)
    following = queue.get_last_mapped_file()
    assert following is not None and following.append(b"b" * 10, store_timestamp=9)
    assert queue.flush() == SIZE + 10
    assert queue.store_timestamp == 9
    assert (mapped.flushed_position, following.flushed_position) == (SIZE, 10)


def test_flush_with_least_pages_waits_for_enough_dirty_pages(tmp_path: Path) -> None:
    queue = MappedFileQueue(tmp_path, 8 * SIZE)
    mapped = queue.get_last_mapped_file()
    assert mapped is not None and mapped.append(b"a" * 100)
    assert queue.flush(least_pages=2) == 0
    assert mapped.append(b"b" * (2 * SIZE))
    assert queue.flush(least_pages=2) == 2 * SIZE + 100


def test_truncate_cuts_zeroes_and_deletes_later_files(tmp_path: Path) -> None:
    queue = MappedFileQueue(tmp_path, 100)
    for fill in (b"a", b"b", b"c"):
        mapped = queue.get_last_mapped_file()
        assert mapped is not None and mapped.append(fill * 100)
    assert queue.flush() == 300
    cut = queue.truncate_dirty_files(130)
    assert names(tmp_path) == ["00000000000000000000", "00000000000000000100"]
    assert [(Path(c.path).name, c.position, c.length) for c in cut] == [
        ("00000000000000000100", 30, 70),
        ("00000000000000000200", 0, 100),
    ]
    assert (tmp_path / "00000000000000000100").read_bytes() == b"b" * 30 + bytes(70)
    assert queue.max_offset() == 130
    assert queue.flushed_where == 130
    mapped = queue.get_last_mapped_file()
    assert mapped is not None and mapped.file_from_offset == 100 and mapped.wrote_position == 30


def test_truncate_of_a_clean_tail_reports_nothing(tmp_path: Path) -> None:
    queue = MappedFileQueue(tmp_path, 100)
    mapped = queue.get_last_mapped_file()
    assert mapped is not None and mapped.append(b"a" * 40)
    assert queue.truncate_dirty_files(40) == []


def test_delete_leading_files_stops_at_the_first_kept_and_spares_the_last(
    tmp_path: Path,
) -> None:
    queue = MappedFileQueue(tmp_path, 100)
    for _ in range(4):
        mapped = queue.get_last_mapped_file()
        assert mapped is not None and mapped.append(bytes(100))
    deleted = queue.delete_leading_files(lambda m: m.file_from_offset != 200)
    assert [m.file_from_offset for m in deleted] == [0, 100]
    assert names(tmp_path) == ["00000000000000000200", "00000000000000000300"]
    queue.delete_leading_files(lambda m: True)
    assert names(tmp_path) == ["00000000000000000300"]
    assert queue.min_offset() == 300


def test_a_deleted_file_stays_readable_through_a_held_slice(tmp_path: Path) -> None:
    queue = MappedFileQueue(tmp_path, 100)
    mapped = queue.get_last_mapped_file()
    assert mapped is not None and mapped.append(b"hello" + bytes(95))
    queue.get_last_mapped_file()
    view = mapped.slice(0, 5)
    queue.delete_leading_files(lambda m: True)
    assert not Path(mapped.path).exists()
    assert bytes(view) == b"hello"


def test_full_disk_fails_at_creation_with_a_clear_error_and_no_file(tmp_path: Path) -> None:
    def no_space(fd: int, offset: int, length: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    queue = MappedFileQueue(tmp_path, 1000, allocate=no_space)
    with pytest.raises(StoreError) as failure:
        queue.get_last_mapped_file()
    path = tmp_path / "00000000000000000000"
    assert str(failure.value) == f"disk full: cannot create {path} (1000 bytes)"
    assert not path.exists()
    assert queue.files == ()


def test_other_allocation_errors_name_the_file_and_the_cause(tmp_path: Path) -> None:
    def broken(fd: int, offset: int, length: int) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    with pytest.raises(StoreError, match=r"cannot create .*00000000000000000000 \(10 bytes\)"):
        MappedFile.create(str(tmp_path / "00000000000000000000"), 10, broken)


def test_load_removes_files_left_by_an_interrupted_creation(tmp_path: Path) -> None:
    (tmp_path / "00000000000000000000").write_bytes(bytes(100))
    (tmp_path / "00000000000000000100.tmp").write_bytes(b"")
    queue = MappedFileQueue(tmp_path, 100)
    queue.load()
    assert names(tmp_path) == ["00000000000000000000"]
    assert [m.file_name for m in queue.files] == ["00000000000000000000"]


def test_the_wrote_position_never_goes_back_or_past_the_file(tmp_path: Path) -> None:
    mapped = MappedFileQueue(tmp_path, 16).get_last_mapped_file()
    assert mapped is not None
    mapped.appended(10)
    with pytest.raises(AssertionError, match="wrote position"):
        mapped.appended(9)
    with pytest.raises(AssertionError, match="wrote position"):
        mapped.appended(17)
    assert mapped.wrote_position == 10


def test_the_flushed_position_never_passes_the_end_of_the_file(tmp_path: Path) -> None:
    mapped = MappedFileQueue(tmp_path, 16).get_last_mapped_file()
    assert mapped is not None
    mapped.wrote_position = 32  # a corrupted state: past the end of the file
    with pytest.raises(AssertionError, match="flushed position"):
        mapped.flush()
    assert mapped.flushed_position == 0


def test_reset_stays_inside_the_file(tmp_path: Path) -> None:
    mapped = MappedFileQueue(tmp_path, 16).get_last_mapped_file()
    assert mapped is not None
    with pytest.raises(AssertionError, match="outside the file"):
        mapped.reset_to(17)
    with pytest.raises(AssertionError, match="outside the file"):
        mapped.reset_to(-1)


def test_a_flush_syncs_the_file_and_lets_the_writer_run_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The flush is an fdatasync of the file, which releases the GIL: a flush that blocks
    in the kernel does not stop appends on another thread."""
    mapped = MappedFile.create(str(tmp_path / "00000000000000000000"), 2 * 4096)
    assert mapped.append(b"first")
    entered, release = threading.Event(), threading.Event()
    synced: list[str] = []
    real_fdatasync = os.fdatasync

    def slow_fdatasync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        entered.set()
        assert release.wait(30), "the test never released the flush"
        real_fdatasync(fd)

    monkeypatch.setattr(os, "fdatasync", slow_fdatasync)
    flusher = threading.Thread(target=mapped.flush)
    flusher.start()
    try:
        assert entered.wait(30), "the flush never reached fdatasync"
        assert mapped.append(b"second"), "the append waited for the flush"
        assert mapped.flushed_position == 0
    finally:
        release.set()
        flusher.join(30)
    assert synced == [mapped.path]
    assert mapped.flushed_position == len(b"first")
    assert mapped.flush() == len(b"firstsecond")
    with open(mapped.path, "rb") as file:
        assert file.read(11) == b"firstsecond"


BIG = 48 << 20  # several data regions and many 1 MiB read chunks


def big_file(tmp_path: Path) -> MappedFile:
    return MappedFile.create(str(tmp_path / f"{0:020d}"), BIG)


def test_a_reset_zeroes_data_far_past_the_cut_and_reports_how_far_it_reached(
    tmp_path: Path,
) -> None:
    mapped = big_file(tmp_path)
    mapped.buffer[0:100] = b"k" * 100
    mapped.buffer[(1 << 20) - 2 : (1 << 20) + 2] = b"edge"  # across a read chunk's end
    mapped.buffer[40_000_000:40_000_010] = b"stale data"  # far out, in another region
    mapped.appended(100)
    assert mapped.reset_to(50) == 40_000_010 - 50
    assert mapped.buffer[0:50] == b"k" * 50
    assert mapped.buffer.find(b"k", 50) == -1
    for where in (b"edge", b"stale data"):
        assert mapped.buffer.find(where) == -1
    with open(mapped.path, "rb") as written:  # on disk too, not only in the mapping
        assert written.read().rstrip(b"\x00") == b"k" * 50
    assert mapped.reset_to(50) == 0  # nothing is left to zero
    mapped.buffer[50:200] = b"n" * 150  # appended after the cut
    mapped.appended(200)
    assert mapped.reset_to(120) == 80  # what was appended since is scanned again
    assert mapped.buffer[:200].rstrip(b"\x00") == b"k" * 50 + b"n" * 70


def test_find_searches_only_where_the_file_holds_data_and_across_read_chunks(
    tmp_path: Path,
) -> None:
    mapped = big_file(tmp_path)
    magic = bytes.fromhex("daa320a7")
    mapped.buffer[(2 << 20) - 1 : (2 << 20) + 3] = magic  # straddles two 1 MiB reads
    mapped.buffer[30_000_000:30_000_004] = magic
    assert mapped.find(magic, 0, BIG) == (2 << 20) - 1
    assert mapped.find(magic, (2 << 20), BIG) == 30_000_000
    assert mapped.find(magic, 30_000_001, BIG) == -1
    assert mapped.find(magic, 0, 30_000_003) == (2 << 20) - 1
    assert mapped.find(magic, (2 << 20), 30_000_003) == -1  # not wholly inside the range
    fresh = MappedFile.create(str(tmp_path / f"{BIG:020d}"), BIG)
    assert fresh.find(magic, 0, BIG) == -1
    # Preallocated and never written: nothing to read (ext4, xfs), or one region where the
    # file system cannot tell.
    assert fresh.data_regions(0, BIG) in ([], [(0, BIG)])
    assert len(mapped.data_regions(0, BIG)) in (1, 2)
