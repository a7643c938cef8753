"""Flush services: the threads that make appended bytes durable.

Two daemon threads, as in Apache's store:

* :class:`CommitLogFlushService` ``msync``s the commitlog.
  - ASYNC_FLUSH: every ``interval_ms`` it flushes when at least ``least_pages`` pages are
    dirty, and everything (``least_pages`` 0) once per ``thorough_interval_ms``.
  - SYNC_FLUSH (group commit): every put that must be durable before its answer registers a
    waiter ``(target offset, callback)`` with :meth:`CommitLogFlushService.request_flush`.
    The thread wakes at once (or every 10 ms), takes all waiters registered so far, flushes
    everything written (one ``msync`` covers the whole group) and calls each callback with
    ``True``.  A waiter whose flush has not succeeded ``sync_flush_timeout_ms`` after it was
    registered gets ``False`` (the store answers FLUSH_DISK_TIMEOUT).  While one flush is in
    the kernel the next group gathers (registering takes only the waiter lock), and the
    flush after it starts at once.  The callbacks a flush settles go to their owner in one
    hand-off (:meth:`CommitLogFlushService.set_handoff`: the broker passes its event loop's
    ``call_soon_threadsafe``, so a group of any size wakes the loop once); without one they
    run on the flush thread and must be quick.  A flush that blocks in the kernel delays
    every answer until it returns, so a caller that must bound its wait also bounds its own
    await.
  After a flush the store time of the last flushed record goes into the checkpoint's
  ``physic_msg_timestamp`` (written to disk by the logics flush).
* :class:`LogicsFlushService` calls the store's logics flush (consume queues, index,
  checkpoint) every ``interval_ms`` with ``least_pages``, and with 0 every
  ``thorough_interval_ms``.

Both stop with :meth:`shutdown`, which runs a last complete flush on the calling thread.
Which thread touches what: the flush threads only read write positions and call ``msync``;
all appends happen on the writer thread; the waiter list is guarded by a lock.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Final

from rmq.store.checkpoint import StoreCheckpoint
from rmq.store.mappedfile import MappedFileQueue

log = logging.getLogger("rmq.store")

GROUP_COMMIT_TICK_S: Final = 0.01

FlushCallback = Callable[[bool], None]
"""Called with True when flushed, False on timeout: on the flush thread, or where the
service's hand-off runs it."""

Handoff = Callable[[Callable[[], None]], object]
"""Runs a function elsewhere, soon (e.g. ``loop.call_soon_threadsafe``); raises
RuntimeError when it no longer can (the function then runs on the flush thread)."""


class _FlushThread(ABC):
    """A daemon thread running ``_run_once`` until shut down; setting ``_wake`` cuts a wait
    short.

    ``_least_pages_now`` gives the configured least pages, or 0 once per thorough interval.
    """

    name = "flush"

    def __init__(self, least_pages: int, thorough_interval_ms: int) -> None:
        self._least_pages = least_pages
        self._thorough_interval_s = thorough_interval_ms / 1000
        self._last_thorough = time.monotonic()
        self._wake = threading.Event()
        self._stopping = False
        self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def shutdown(self) -> None:
        """Stop the thread, then flush everything once more on the calling thread."""
        self._stopping = True
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join()
        self._final_flush()

    def _wait(self, seconds: float) -> None:
        self._wake.wait(seconds)
        self._wake.clear()

    def _loop(self) -> None:
        while not self._stopping:
            try:
                self._run_once()
            except Exception:
                log.exception("%s thread: flush failed", self.name)
                self._wait(GROUP_COMMIT_TICK_S)

    def _least_pages_now(self) -> int:
        now = time.monotonic()
        if now - self._last_thorough >= self._thorough_interval_s:
            self._last_thorough = now
            return 0
        return self._least_pages

    @abstractmethod
    def _run_once(self) -> None: ...

    @abstractmethod
    def _final_flush(self) -> None: ...


class CommitLogFlushService(_FlushThread):
    """Flushes the commitlog; ASYNC periodic or SYNC group commit (see the module doc)."""

    name = "commitlog-flush"

    def __init__(
        self,
        queue: MappedFileQueue,
        checkpoint: StoreCheckpoint,
        *,
        sync: bool,
        interval_ms: int,
        least_pages: int,
        thorough_interval_ms: int,
        sync_flush_timeout_ms: int,
    ) -> None:
        super().__init__(least_pages, thorough_interval_ms)
        self.sync = sync
        self._queue = queue
        self._checkpoint = checkpoint
        self._interval_s = interval_ms / 1000
        self._timeout_s = sync_flush_timeout_ms / 1000
        self._waiters: list[tuple[int, float, FlushCallback]] = []
        self._waiters_lock = threading.Lock()
        self._handoff: Handoff | None = None

    def set_handoff(self, handoff: Handoff | None) -> None:
        """Deliver each flush's settled callbacks through ``handoff``, all in one call."""
        self._handoff = handoff

    def request_flush(self, target_offset: int, callback: FlushCallback) -> None:
        """Call ``callback(True)`` once the commitlog is durable up to ``target_offset``.

        ``callback(False)`` after the sync flush timeout.  Thread safe; never blocks.
        """
        deadline = time.monotonic() + self._timeout_s
        with self._waiters_lock:
            self._waiters.append((target_offset, deadline, callback))
        self._wake.set()

    def _run_once(self) -> None:
        if self.sync:
            self._wait(GROUP_COMMIT_TICK_S)
            self._group_commit()
            return
        self._wait(self._interval_s)
        self._flush(self._least_pages_now())

    def _flush(self, least_pages: int) -> int:
        flushed = self._queue.flush(least_pages)
        if self._queue.store_timestamp:
            self._checkpoint.physic_msg_timestamp = self._queue.store_timestamp
        return flushed

    def _group_commit(self) -> None:
        with self._waiters_lock:
            waiters, self._waiters = self._waiters, []
        try:
            flushed = self._flush(0)
        except OSError:
            log.exception("commitlog flush failed")
            flushed = self._queue.flushed_where
        self._complete(waiters, flushed, time.monotonic())

    def _complete(
        self, waiters: list[tuple[int, float, FlushCallback]], flushed: int, now: float
    ) -> None:
        pending = []
        settled: list[tuple[FlushCallback, bool]] = []
        for waiter in waiters:
            target, deadline, callback = waiter
            if flushed >= target or now >= deadline:
                settled.append((callback, flushed >= target))
            else:
                pending.append(waiter)
        if pending:
            with self._waiters_lock:
                self._waiters[:0] = pending
        if not settled:
            return
        handoff = self._handoff
        if handoff is not None:
            try:
                handoff(functools.partial(_settle_all, settled))
                return
            except RuntimeError:  # the owner's loop is closed
                pass
        _settle_all(settled)

    def _final_flush(self) -> None:
        flushed = self._flush(0)
        with self._waiters_lock:
            waiters, self._waiters = self._waiters, []
        self._complete(waiters, flushed, float("inf"))


def _settle_all(settled: list[tuple[FlushCallback, bool]]) -> None:
    for callback, flushed in settled:
        try:
            callback(flushed)
        except Exception:
            log.exception("flush waiter callback failed")


class LogicsFlushService(_FlushThread):
    """Calls ``flush_logics(least_pages)`` (consume queues, index, checkpoint) periodically."""

    name = "logics-flush"

    def __init__(
        self,
        flush_logics: Callable[[int], None],
        *,
        interval_ms: int,
        least_pages: int,
        thorough_interval_ms: int,
    ) -> None:
        super().__init__(least_pages, thorough_interval_ms)
        self._flush_logics = flush_logics
        self._interval_s = interval_ms / 1000

    def _run_once(self) -> None:
        self._wait(self._interval_s)
        self._flush_logics(self._least_pages_now())

    def _final_flush(self) -> None:
        self._flush_logics(0)
