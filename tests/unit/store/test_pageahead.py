"""The commitlog's page-ahead thread: which pages it brings into the cache, that it follows
the writer into a new file, never changes a byte, and leaves no descriptor behind."""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os
from pathlib import Path

import pytest

from rmq.store.mappedfile import MappedFileQueue
from rmq.store.pageahead import PageAhead, supported

PAGE = mmap.PAGESIZE
FILE_SIZE = 256 * PAGE

pytestmark = pytest.mark.skipif(not supported(), reason="no posix_fadvise here")


def resident(path: str, offset: int, length: int) -> list[bool]:
    """Which pages of ``path`` in [offset, offset + length) are in the page cache
    (``mincore`` on a fresh mapping, which itself brings nothing in)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    fd = os.open(path, os.O_RDWR)
    try:
        mapping = mmap.mmap(fd, offset + length)
    finally:
        os.close(fd)
    try:
        view = (ctypes.c_char * (offset + length)).from_buffer(mapping)
        pages = (offset + length) // PAGE
        vector = (ctypes.c_ubyte * pages)()
        result = libc.mincore(ctypes.c_void_p(ctypes.addressof(view)), offset + length, vector)
        del view
        assert result == 0, os.strerror(ctypes.get_errno())
        return [bool(vector[number] & 1) for number in range(offset // PAGE, pages)]
    finally:
        mapping.close()


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.parametrize("populate", [True, False], ids=["madvise", "fadvise"])
def test_the_window_past_the_write_position_comes_into_the_cache(
    tmp_path: Path, populate: bool
) -> None:
    # A file larger than any read-ahead window; positions moved without touching the
    # mapping (a write through it would make the kernel read around it by itself).
    size = 64 * 1024 * 1024
    start = size // 2
    queue = MappedFileQueue(tmp_path, size)
    first = queue.get_last_mapped_file()
    assert first is not None
    first.appended(start)
    if any(resident(first.path, start, size - start)):
        pytest.skip("this file system keeps preallocated files in the cache")
    ahead = PageAhead(queue, ahead=64 * PAGE, refill=16 * PAGE)
    if not populate:
        ahead.populating = False
    elif not ahead.populating:
        pytest.skip("no C library to call madvise through")
    try:
        assert ahead.run_once() == 64 * PAGE
        if populate and not ahead.populating:
            pytest.skip("this kernel has no MADV_POPULATE_READ (the fadvise case covers it)")
        assert ahead.filled_to == start + 64 * PAGE
        assert all(resident(first.path, start, 64 * PAGE))
        # (the kernel may read around the window as well: what lies past it is not checked)
        # Nothing new until the writer has used a refill's worth; then the whole difference,
        # in one call, and a file's last bytes whatever their size.
        assert ahead.run_once() == 0
        first.appended(start + 8 * PAGE)
        assert ahead.run_once() == 0
        first.appended(start + 20 * PAGE)
        assert ahead.run_once() == 20 * PAGE
        assert all(resident(first.path, start + 64 * PAGE, 20 * PAGE))
        first.appended(size - 10 * PAGE)
        assert ahead.run_once() == 10 * PAGE
        assert ahead.filled_to == size
    finally:
        ahead.shutdown()
        queue.close()


def test_it_follows_the_writer_into_the_next_file_and_changes_nothing(tmp_path: Path) -> None:
    queue = MappedFileQueue(tmp_path, FILE_SIZE)
    first = queue.get_last_mapped_file()
    assert first is not None
    payload = bytes(range(256)) * (FILE_SIZE // 256)
    assert first.append(payload)
    ahead = PageAhead(queue, ahead=32 * PAGE, refill=8 * PAGE)
    try:
        assert ahead.run_once() == 0  # the first file is full
        second = queue.get_last_mapped_file()
        assert second is not None and second is not first
        assert second.append(b"a" * PAGE)
        assert ahead.run_once() == 32 * PAGE
        assert ahead.filled_to == 33 * PAGE
        assert first.slice(0, FILE_SIZE) == payload
        assert second.slice(0, 34 * PAGE) == b"a" * PAGE + bytes(33 * PAGE)
    finally:
        ahead.shutdown()
        queue.close()
    with open(first.path, "rb") as stream:
        assert stream.read() == payload


def test_the_thread_stops_and_closes_its_descriptor(tmp_path: Path) -> None:
    queue = MappedFileQueue(tmp_path, FILE_SIZE)
    assert queue.get_last_mapped_file() is not None
    before = open_descriptors()
    ahead = PageAhead(queue, ahead=32 * PAGE, refill=8 * PAGE)
    ahead.run_once()
    assert open_descriptors() == before + 1
    ahead.start()
    ahead.shutdown()
    assert open_descriptors() == before
    queue.close()


def test_an_empty_queue_asks_for_nothing(tmp_path: Path) -> None:
    ahead = PageAhead(MappedFileQueue(tmp_path, FILE_SIZE))
    assert ahead.run_once() == 0
    assert ahead.filled_to == 0


def test_sizes_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="positive"):
        PageAhead(MappedFileQueue(tmp_path, FILE_SIZE), ahead=0)
    with pytest.raises(ValueError, match="at most ahead"):
        PageAhead(MappedFileQueue(tmp_path, FILE_SIZE), ahead=8 * PAGE, refill=16 * PAGE)
