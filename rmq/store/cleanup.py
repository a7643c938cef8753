"""Expiry: deleting old commitlog files, then the consume queue and index files behind them.

The broker calls :meth:`CleanupService.run` on a timer (``cleanResourceInterval``).  A run
deletes commitlog files, oldest first, when one of these holds, as Apache's store does:

* it is time: the current local hour is one of ``deleteWhen`` (``"04"``, or ``"04;16"``);
* the disk is filling up: the commitlog's or the consume queues' file system is more than
  ``diskMaxUsedSpaceRatio`` percent used (checked every run, whatever the hour);
* an administrator asked (``deleteExpiredCommitLog``): the next 20 runs.

Only files last modified more than ``fileReservedTime`` hours ago go, except when a file
system is more than 85 % used and ``cleanFileForciblyEnable`` is on: then files go whatever
their age.  At most 10 files go per run, the file being written never does, and deletion
stops at the first file to keep.  Above 90 % the store also refuses new messages
(SERVICE_NOT_AVAILABLE) until space is back under it.

When the commitlog minimum offset has moved, consume queue files whose last entry points
below it and index files whose newest entry does are deleted too.

A run that deleted files for space (the disk over ``diskMaxUsedSpaceRatio``, or forced) counts
the messages it took that were not consumed yet, comparing each queue's deleted entries with
the consumer groups' offsets (:attr:`~rmq.store.store.MessageStore.group_offsets`, set by the
broker), and logs them at WARN, one line per topic: how many no group had consumed, and how
many each group had not (:attr:`CleanupResult.unconsumed`).

Used space is Apache's ``UtilAll.getDiskPartitionSpaceUsedPercent``: used blocks (``blocks -
free blocks``) over used plus available-to-us blocks (``bavail``, so the blocks reserved for
root count as neither), rounded up to a whole percent (``0.15``); tests inject their own
``disk_usage``.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from rmq.store.consumequeue import ConsumeQueue

if TYPE_CHECKING:
    from rmq.store.store import MessageStore

log = logging.getLogger("rmq.store")

DELETE_FILES_BATCH_MAX: Final = 10
MAX_MANUAL_DELETE_FILE_TIMES: Final = 20
CLEAN_FORCIBLY_RATIO: Final = 0.85
WARNING_RATIO: Final = 0.90

DiskUsage = Callable[[str], float]
"""Used fraction (0..1) of the file system holding a path."""

GroupOffsets = Callable[[], Mapping[str, Mapping[str, Mapping[int, int]]]]
"""topic -> consumer group -> queue id -> the group's consume offset (its next message)."""

NO_GROUP: Final = ""
"""The :attr:`CleanupResult.unconsumed` key of the messages no group had consumed."""


def disk_used_ratio(path: str) -> float:
    """Used fraction of the file system holding ``path`` as Apache computes it: ``used /
    (used + available)`` rounded up to hundredths, ``used = blocks - free blocks`` (-1 on
    error)."""
    try:
        stat = os.statvfs(path)
    except OSError:
        return -1.0
    if stat.f_blocks == 0:
        return -1.0
    return used_percent(stat.f_blocks - stat.f_bfree, stat.f_bavail) / 100


def used_percent(used: int, available: int) -> int:
    """``ceil(100 * used / (used + available))`` in integers, as ``UtilAll`` does."""
    entire = used + available
    if entire <= 0:
        return 0
    return -(-used * 100 // entire)


def delete_hours(delete_when: str) -> frozenset[int]:
    """The hours of ``deleteWhen`` (``"04;16"`` -> {4, 16}); entries that are not numbers
    are ignored."""
    return frozenset(int(part) for part in delete_when.split(";") if part.strip().isdigit())


@dataclass(slots=True)
class CleanupResult:
    """What one run did: why it deleted, which commitlog files, how many others."""

    time_up: bool = False
    space_full: bool = False
    manual: bool = False
    forced: bool = False
    disk_used_ratio: float = 0.0
    commitlog_files: list[str] = field(default_factory=list)
    consume_queue_files: int = 0
    index_files: int = 0
    unconsumed: dict[str, dict[str, int]] = field(default_factory=dict)
    """For a run that deleted for space: topic -> group (:data:`NO_GROUP`: no group at all)
    -> messages deleted before that group consumed them (only counts above zero)."""


class CleanupService:
    """Expiry for one :class:`~rmq.store.store.MessageStore` (see the module docstring)."""

    def __init__(self, store: MessageStore, disk_usage: DiskUsage = disk_used_ratio) -> None:
        self._store = store
        self._disk_usage = disk_usage
        self._manual_runs = 0
        self._last_min_offset = 0

    def delete_manually(self) -> None:
        """Delete expired files on the next runs whatever the hour (``deleteExpiredCommitLog``)."""
        self._manual_runs = MAX_MANUAL_DELETE_FILE_TIMES

    def run(self, now: float | None = None) -> CleanupResult:
        """One cleanup pass at ``now`` (seconds since the epoch; default: the clock)."""
        store = self._store
        config = store.config
        at = time.time() if now is None else now
        result = CleanupResult()
        result.time_up = time.localtime(at).tm_hour in delete_hours(config.delete_when)
        used = max(
            self._disk_usage(os.fspath(store.layout.commitlog)),
            self._disk_usage(os.fspath(store.layout.consume_queue_root)),
        )
        result.disk_used_ratio = used
        store.disk_full = used > WARNING_RATIO
        result.space_full = used < 0 or used > config.disk_max_used_space_ratio / 100
        result.manual = self._manual_runs > 0
        if result.time_up or result.space_full or result.manual:
            if result.manual:
                self._manual_runs -= 1
            result.forced = config.clean_file_forcibly_enable and used > CLEAN_FORCIBLY_RATIO
            expired_before = at - config.file_reserved_time * 3600
            deleted = store.commitlog.delete_expired_files(
                expired_before, result.forced, DELETE_FILES_BATCH_MAX
            )
            result.commitlog_files = [mapped.path for mapped in deleted]
            for path in result.commitlog_files:
                log.info("deleted expired commitlog file %s", path)
            if not deleted and result.space_full:
                log.warning(
                    "disk is %.0f %% used but no commitlog file could be deleted", used * 100
                )
            if deleted and (result.space_full or result.forced):
                self._report_unconsumed(result)
        self._expire_logics(result)
        return result

    def _report_unconsumed(self, result: CleanupResult) -> None:
        store = self._store
        offsets = store.group_offsets() if store.group_offsets is not None else {}
        result.unconsumed = count_unconsumed(
            store.consume_queues, store.commitlog.min_offset(), offsets
        )
        for topic, counts in sorted(result.unconsumed.items()):
            groups = ", ".join(
                f"{group} {count}" for group, count in sorted(counts.items()) if group != NO_GROUP
            )
            log.warning(
                "cleanup for disk space deleted messages of topic %s not consumed yet: "
                "%d by no group%s",
                topic,
                counts.get(NO_GROUP, 0),
                f"; not consumed by group: {groups}" if groups else "",
            )

    def _expire_logics(self, result: CleanupResult) -> None:
        store = self._store
        min_offset = store.commitlog.min_offset()
        if min_offset <= self._last_min_offset:
            return
        self._last_min_offset = min_offset
        result.consume_queue_files = store.consume_queues.delete_expired(min_offset)
        if store.index is not None:
            result.index_files = store.index.delete_expired(min_offset)


def count_unconsumed(
    queues: Iterable[ConsumeQueue],
    min_commitlog_offset: int,
    offsets: Mapping[str, Mapping[str, Mapping[int, int]]],
) -> dict[str, dict[str, int]]:
    """Messages of ``queues`` stored below ``min_commitlog_offset`` (just deleted) that were
    not consumed: per topic, per group of ``offsets`` and for no group at all
    (:data:`NO_GROUP`); only counts above zero."""
    unconsumed: dict[str, dict[str, int]] = {}
    for queue in queues:
        first = queue.min_offset
        kept = queue.first_offset_from(min_commitlog_offset)
        if kept <= first:
            continue
        counts = unconsumed.setdefault(queue.topic, {})
        consumed_by_any = first
        for group, by_queue in offsets.get(queue.topic, {}).items():
            consumed = max(by_queue.get(queue.queue_id, first), first)
            consumed_by_any = max(consumed_by_any, consumed)
            if consumed < kept:
                counts[group] = counts.get(group, 0) + kept - consumed
        if consumed_by_any < kept:
            counts[NO_GROUP] = counts.get(NO_GROUP, 0) + kept - consumed_by_any
        if not counts:
            del unconsumed[queue.topic]
    return unconsumed
