"""Refusing puts while the store's disk is full, and taking them again once it is not.

A put is refused (SERVICE_NOT_AVAILABLE, answered with code 14 by the broker) from the moment
the store sees the disk is full until a later put gets through again.  The store sees it

* when a new commitlog file cannot be created for want of space (ENOSPC, EDQUOT, EFBIG:
  :class:`~rmq.store.errors.DiskFullError`; that put stored nothing);
* when a record's consume queue entry cannot be written (a file that cannot be created): the
  record is stored, so its put is answered as stored, and it is dispatched later
  (:meth:`~rmq.store.dispatch.Dispatcher.retry`), with every record after it (an index file
  that cannot be created refuses nothing: :mod:`rmq.store.indexlag`);
* when the file system holding the commitlog or the consume queues is more than
  :data:`~rmq.store.cleanup.WARNING_RATIO` used, checked at put time, at most once every
  ``interval_ms`` (one ``statvfs`` per path).

While refusing, :meth:`PutGate.admit` lets one put try every ``interval_ms`` once the used
space is back under the ratio: that put first re-dispatches the records left behind, then
appends; when either still fails for space, refusing goes on, else it ends.  So a put costs
one disk check per interval and, on a disk still full, one dispatch attempt per interval,
however many records wait.

An episode (from the first refusal to the first put taken again) logs one ERROR when it
starts and one INFO, with the number of puts refused, when it ends.

Runs on the writer thread; the store calls :meth:`PutGate.admit` before an append and
:meth:`PutGate.settle` after it, and a slave's store :meth:`PutGate.catch_up` after
dispatching what its master sent.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from typing import Final

from rmq.store.cleanup import WARNING_RATIO, DiskUsage
from rmq.store.commitlog import CommitLog
from rmq.store.dispatch import Dispatcher
from rmq.store.errors import DiskFullError
from rmq.store.putmessage import PutMessageResult

log = logging.getLogger("rmq.store")

DISK_CHECK_INTERVAL_MS: Final = 1000
"""How often a put looks at the used space, and how often a refused put is let through to try."""


def _monotonic_millis() -> int:
    return time.monotonic_ns() // 1_000_000


class PutGate:
    """Whether puts are taken, for one store (see the module docstring).

    ``paths`` are the directories whose file systems are checked (commitlog, consume queues).
    """

    def __init__(
        self,
        commitlog: CommitLog,
        dispatcher: Dispatcher,
        paths: Sequence[str | os.PathLike[str]],
        disk_usage: DiskUsage,
        *,
        ratio: float = WARNING_RATIO,
        interval_ms: int = DISK_CHECK_INTERVAL_MS,
        clock: Callable[[], int] = _monotonic_millis,
    ) -> None:
        self._commitlog = commitlog
        self._dispatcher = dispatcher
        self._paths = [os.fspath(path) for path in paths]
        self._disk_usage = disk_usage
        self._ratio = ratio
        self.interval_ms = interval_ms
        self._clock = clock
        self._next_check = clock()
        self.used_ratio = 0.0
        self.reason: str | None = None
        """Why puts are refused (None while they are taken)."""
        self.refused = 0
        """Puts refused in the current episode."""
        commitlog.on_disk_full = self._commitlog_full

    @property
    def refusing(self) -> bool:
        return self.reason is not None

    def admit(self) -> bool:
        """Whether this put may go ahead; re-dispatches the records left behind first.

        Call under no lock; takes the commitlog lock for a re-dispatch.
        """
        trial = self._check_disk()
        if self.reason is not None and not trial:
            self.refused += 1
            return False
        dispatcher = self._dispatcher
        if dispatcher.retry_from >= 0:
            with self._commitlog.lock:
                resumed = dispatcher.retry(self._commitlog)
            if not resumed:
                self._dispatch_failed()
                self.refused += 1
                return False
        return True

    def settle(self, result: PutMessageResult) -> None:
        """After an append: a dispatch left behind starts (or continues) an episode, a put
        stored and dispatched ends one."""
        if self._dispatcher.retry_from >= 0:
            self._dispatch_failed()
        elif result.ok and self.reason is not None:
            self._end()

    def catch_up(self) -> None:
        """For a slave, which takes no puts, after dispatching replicated records: a record
        that could not be dispatched starts an episode, and the waiting records are
        re-dispatched once per interval until they all are."""
        dispatcher = self._dispatcher
        if dispatcher.retry_from < 0:
            return
        if self.reason is not None:
            now = self._clock()
            if now < self._next_check:
                return
            with self._commitlog.lock:
                if dispatcher.retry(self._commitlog):
                    self._end()
                    return
        self._dispatch_failed()

    def _end(self) -> None:
        log.info(
            "disk space is back (%.0f %% used): taking puts again after %d refused",
            self.used_ratio * 100,
            self.refused,
        )
        self.reason = None
        self.refused = 0

    def _check_disk(self) -> bool:
        """Look at the used space when it is time; True when a refused put may try."""
        now = self._clock()
        if now < self._next_check:
            return False
        self._next_check = now + self.interval_ms
        self.used_ratio = max(self._disk_usage(path) for path in self._paths)
        if self.used_ratio > self._ratio:
            self._refuse(
                f"the disk is {self.used_ratio * 100:.0f} % used, over {self._ratio * 100:.0f} %"
            )
            return False
        return self.reason is not None

    def _commitlog_full(self, exc: DiskFullError) -> None:
        self._refuse(str(exc))

    def _dispatch_failed(self) -> None:
        failure = self._dispatcher.failure
        self._refuse(
            f"the record at commitlog offset {self._dispatcher.retry_from} cannot be "
            f"dispatched: {failure}"
        )

    def _refuse(self, reason: str) -> None:
        self._next_check = self._clock() + self.interval_ms
        if self.reason is None:
            log.error(
                "refusing puts (SERVICE_NOT_AVAILABLE) until there is space again: %s", reason
            )
        self.reason = reason
