"""SYNC_FLUSH group commit: waiters gather while a flush is in the kernel, and each flush's
settled waiters reach their owner in one hand-off."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from rmq.store.checkpoint import StoreCheckpoint
from rmq.store.flush import CommitLogFlushService
from rmq.store.mappedfile import MappedFileQueue

FILE_SIZE = 64 * 1024


class Gate:
    """Holds every flush of `queue` until released, counting the flushes."""

    def __init__(self, queue: MappedFileQueue, monkeypatch: pytest.MonkeyPatch) -> None:
        self.entered = threading.Semaphore(0)
        self.release = threading.Semaphore(0)
        self.flushes = 0
        original = queue.flush

        def held(least_pages: int = 0) -> int:
            self.flushes += 1
            self.entered.release()
            assert self.release.acquire(timeout=10), "the test never released the flush"
            return original(least_pages)

        monkeypatch.setattr(queue, "flush", held)


@pytest.fixture
def queue(tmp_path: Path) -> MappedFileQueue:
    files = MappedFileQueue(tmp_path / "commitlog", FILE_SIZE)
    files.load()
    return files


def append(queue: MappedFileQueue, size: int) -> int:
    """Append `size` bytes; the offset just past them."""
    mapped = queue.get_last_mapped_file(queue.max_offset())
    assert mapped is not None
    assert mapped.append(b"x" * size)
    return queue.max_offset()


def service(queue: MappedFileQueue, tmp_path: Path) -> CommitLogFlushService:
    return CommitLogFlushService(
        queue,
        StoreCheckpoint(tmp_path / "checkpoint"),
        sync=True,
        interval_ms=500,
        least_pages=0,
        thorough_interval_ms=10_000,
        sync_flush_timeout_ms=5_000,
    )


def test_a_group_gathers_during_a_flush_and_is_settled_in_one_handoff(
    queue: MappedFileQueue, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = Gate(queue, monkeypatch)
    flusher = service(queue, tmp_path)
    handoffs: list[int] = []
    ran_on: set[int] = set()
    results: list[tuple[int, bool]] = []
    everyone = threading.Event()

    def handoff(run: object) -> None:
        handoffs.append(threading.get_ident())
        assert callable(run)
        run()

    def waiter(number: int) -> object:
        def settled(flushed: bool) -> None:
            ran_on.add(threading.get_ident())
            results.append((number, flushed))
            if len(results) == 6:
                everyone.set()

        return settled

    flusher.set_handoff(handoff)
    # Waiter 0 before the thread starts: its first flush then holds waiter 0 (started first,
    # a flush with no waiter could hold the gate while all six gather).
    flusher.request_flush(append(queue, 100), waiter(0))  # type: ignore[arg-type]
    flusher.start()
    try:
        assert gate.entered.acquire(timeout=10)  # the first flush is in the "kernel"
        for number in range(1, 6):  # the next group gathers meanwhile
            flusher.request_flush(append(queue, 100), waiter(number))  # type: ignore[arg-type]
        gate.release.release()  # the first flush ends: waiter 0 only
        assert gate.entered.acquire(timeout=10)  # the next flush starts at once
        gate.release.release()
        assert everyone.wait(10)
    finally:
        for _ in range(4):
            gate.release.release()
        flusher.shutdown()
    assert sorted(results) == [(number, True) for number in range(6)]
    assert results[0] == (0, True)
    # Two flushes, two hand-offs: one for the lone first waiter, one for the group of five.
    assert len(handoffs) == 2
    assert ran_on == {handoffs[0]}  # the hand-off ran them, here on the flush thread
    assert queue.flushed_where == queue.max_offset()


def test_a_handoff_that_can_no_longer_run_leaves_the_callbacks_to_the_flush_thread(
    queue: MappedFileQueue, tmp_path: Path
) -> None:
    flusher = service(queue, tmp_path)
    heard = threading.Event()
    outcome: list[bool] = []

    def closed_loop(run: object) -> None:
        raise RuntimeError("Event loop is closed")

    def settled(flushed: bool) -> None:
        outcome.append(flushed)
        heard.set()

    flusher.set_handoff(closed_loop)
    flusher.start()
    try:
        flusher.request_flush(append(queue, 100), settled)
        assert heard.wait(10)
    finally:
        flusher.shutdown()
    assert outcome == [True]
