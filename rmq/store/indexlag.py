"""Indexing put off while an index file cannot be created, and caught up afterwards.

The index needs a new file now and then (hundreds of MiB with the default geometry).  When
it cannot be created (a disk too small or too full for it) the message is stored and its
consume queue entry written as usual; only its keys wait.  :class:`IndexLag` stands between
dispatch and :class:`~rmq.store.indexservice.IndexService`: on the first failure it notes the
first record left unindexed (:attr:`IndexLag.behind_from`), logs one ERROR for the episode
and writes that offset to ``<store>/recovery/index-behind``; every later record's keys are
left out (the index only takes records in commitlog order).  Sends go on.

:meth:`IndexLag.catch_up` indexes the records from :attr:`IndexLag.behind_from` on, read
back from the commitlog: the store tries it from its logics flush thread at most once every
``interval_ms`` (and once more at shutdown), and at start when the file says a previous run
left the index behind.  It walks the records written so far without the commitlog lock
(appends go on meanwhile, still without keys), then, under the lock, the few written during
that walk, and ends the episode (one INFO line, the file removed).  A file that still cannot
be created stops the walk at that record, for the next try.  The same walk rebuilds the keys
of an index file set aside at start (:mod:`rmq.store.setaside`).

Apache's broker (4.9.8) instead retries that record on its dispatch thread without pause, so
no later message reaches its consume queue until a file can be created.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Final

from rmq.common.message import DispatchInfo
from rmq.common.msgconst import KEY_SEPARATOR
from rmq.common.sysflag import TRANSACTION_ROLLBACK_TYPE, TRANSACTION_TYPE_MASK
from rmq.store.commitlog import CommitLog
from rmq.store.errors import StoreError
from rmq.store.indexservice import IndexService
from rmq.store.salvage import salvage_walk

log = logging.getLogger("rmq.store")

MARKER_FILE: Final = "index-behind"
"""The file under ``<store>/recovery/`` holding the first unindexed commitlog offset."""

CATCH_UP_INTERVAL_MS: Final = 1000


def _monotonic_millis() -> int:
    return time.monotonic_ns() // 1_000_000


class _Stop(Exception):
    """A record whose keys still cannot be written: the walk stops there."""

    def __init__(self, physical_offset: int, cause: StoreError) -> None:
        super().__init__(physical_offset)
        self.physical_offset = physical_offset
        self.cause = cause


class IndexLag:
    """Writes dispatched keys to ``index`` unless it is behind (see the module docstring).

    ``marker`` is the file that keeps :attr:`behind_from` across restarts (None: not kept).
    """

    def __init__(
        self,
        index: IndexService,
        marker: Path | None = None,
        *,
        interval_ms: int = CATCH_UP_INTERVAL_MS,
        clock: Callable[[], int] = _monotonic_millis,
    ) -> None:
        self.index = index
        self.marker = marker
        self.interval_ms = interval_ms
        self._clock = clock
        self.behind_from = -1
        """Commitlog offset of the first record whose keys are not indexed (-1: none)."""
        self.failure: StoreError | None = None
        self.left_out = 0
        """Records whose keys dispatch left out in this episode."""
        self._next_try = 0
        self._walk_lock = threading.Lock()
        self._marker_lock = threading.Lock()

    @property
    def behind(self) -> bool:
        return self.behind_from >= 0

    def load(self) -> int:
        """Read the marker a previous run left (the store's start); returns behind_from."""
        if self.marker is None:
            return self.behind_from
        try:
            text = self.marker.read_text().strip()
        except FileNotFoundError:
            return self.behind_from
        except OSError as exc:
            log.error("cannot read %s: %s", self.marker, exc.strerror)
            return self.behind_from
        if text.lstrip("-").isdigit():
            self.fall_behind(int(text), None)
        return self.behind_from

    def put_keys(
        self,
        topic: str,
        keys: Iterable[str],
        uniq_key: str | None,
        physical_offset: int,
        store_timestamp: int,
    ) -> None:
        """Index one dispatched record's keys, or leave them for :meth:`catch_up`."""
        if self.behind_from >= 0:
            self.left_out += 1
            return
        try:
            self.index.put_keys(topic, keys, uniq_key, physical_offset, store_timestamp)
        except StoreError as exc:
            self.left_out += 1
            self.fall_behind(physical_offset, exc)

    def fall_behind(self, physical_offset: int, failure: StoreError | None) -> None:
        """Note that the records from ``physical_offset`` on are not indexed (the earliest
        such offset wins); an episode's first call logs one ERROR when ``failure`` says why."""
        starting = self.behind_from < 0
        if starting or physical_offset < self.behind_from:
            self.behind_from = max(physical_offset, 0)
            self._write_marker()
        if starting:
            self.failure = failure
            self._next_try = self._clock() + self.interval_ms
            if failure is not None:
                log.error(
                    "cannot write index entries from commitlog offset %d on: %s; messages "
                    "are stored and consumable, their keys are indexed once an index file "
                    "can be created",
                    physical_offset,
                    failure,
                )

    def due(self) -> bool:
        """Whether a catch-up should be tried now (behind, and the interval has passed)."""
        return self.behind_from >= 0 and self._clock() >= self._next_try

    def catch_up(self, commitlog: CommitLog) -> bool:
        """Index the records from :attr:`behind_from` on (see the module docstring); True
        when the index is complete.  Call under no lock; takes the commitlog lock at the
        end."""
        with self._walk_lock:
            if self.behind_from < 0:
                return True
            self._next_try = self._clock() + self.interval_ms
            indexed = 0
            try:
                start = self.behind_from
                indexed += self._walk(commitlog, start)
                with commitlog.lock:
                    indexed += self._walk(commitlog, self.behind_from)
                    self._remove_marker()
                    self.behind_from = -1
            except ValueError as exc:  # a commitlog file expired (unmapped) under the walk
                log.debug("index catch-up interrupted: %s", exc)
                return False
            except _Stop as stop:
                self.behind_from = stop.physical_offset
                self._write_marker()
                if self.failure is None:  # an episode a restart or a damaged file began
                    self.failure = stop.cause
                    log.error(
                        "cannot write index entries from commitlog offset %d on: %s; they are "
                        "indexed once an index file can be created",
                        stop.physical_offset,
                        stop.cause,
                    )
                log.debug("index catch-up stopped at %d: %s", stop.physical_offset, stop.cause)
                return False
            log.info(
                "index caught up from commitlog offset %d: keys of %d records indexed "
                "(%d left out by dispatch meanwhile)",
                start,
                indexed,
                self.left_out,
            )
            self.failure = None
            self.left_out = 0
            return True

    def _walk(self, commitlog: CommitLog, start: int) -> int:
        """Index the records from ``start`` to the end of the log; moves behind_from along."""
        index = self.index
        begin = max(start, commitlog.min_offset(), 0)
        indexed = 0

        def on_record(info: DispatchInfo) -> None:
            nonlocal indexed
            keys, uniq_key = info.keys, info.uniq_key
            if (keys or uniq_key) and (
                info.sys_flag & TRANSACTION_TYPE_MASK != TRANSACTION_ROLLBACK_TYPE
            ):
                try:
                    index.put_keys(
                        info.topic,
                        keys.split(KEY_SEPARATOR) if keys else (),
                        uniq_key,
                        info.physical_offset,
                        info.store_timestamp,
                    )
                except StoreError as exc:
                    raise _Stop(info.physical_offset, exc) from exc
                indexed += 1

        end, _ = salvage_walk(commitlog, begin, check_crc=False, on_record=on_record)
        self.behind_from = max(end, self.behind_from)
        return indexed

    def _write_marker(self) -> None:
        if self.marker is None:
            return
        with self._marker_lock:  # the writer thread and the catch-up may both write it
            try:
                self.marker.parent.mkdir(parents=True, exist_ok=True)
                temporary = self.marker.with_name(self.marker.name + ".tmp")
                temporary.write_text(f"{self.behind_from}\n")
                os.replace(temporary, self.marker)
            except OSError as exc:
                log.error("cannot write %s: %s", self.marker, exc.strerror)

    def _remove_marker(self) -> None:
        if self.marker is not None:
            with self._marker_lock, contextlib.suppress(FileNotFoundError):
                self.marker.unlink()
