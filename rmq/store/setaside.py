"""Damaged store files moved out of the way at start, under ``<store>/recovery/``.

A file that would stop the store from starting, or that fails the start check of its consume
queue (:mod:`rmq.store.queuecheck`), is not repaired in place: :meth:`SetAsideDir.move`
moves it to ``<store>/recovery/<UTC time of the start>/<its path under the store>`` (kept for
whoever wants to look at it; nothing reads it again), and the caller rebuilds what the file
held from the commitlog.  Each move is a :class:`SetAside`, which the recovery report lists
(``setAside``; ``rmq inspect recovery`` shows it).  A file that cannot be moved (the commitlog
on another file system and no room to copy it) is deleted instead, and the report says so.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from rmq.store.layout import list_offset_files
from rmq.store.recoveryreport import REPORT_DIR

log = logging.getLogger("rmq.store")


@dataclass(frozen=True, slots=True)
class SetAside:
    """One damaged file moved out of the way: its path and where it went (both relative to
    the store root when under it; ``moved_to`` is empty when the file had to be deleted), and
    why."""

    file: str
    moved_to: str
    reason: str


@dataclass(slots=True)
class SetAsideDir:
    """Where one start moves damaged files: ``<root>/recovery/<UTC time>/``, created on the
    first move.  :attr:`moved` lists every move, in order."""

    root: Path
    moved: list[SetAside] = field(default_factory=list)
    _stamp: str = ""

    def move(self, path: Path, reason: str) -> SetAside:
        """Move ``path`` under the set-aside directory, keeping its path under the store."""
        if not self._stamp:
            now = time.time()
            self._stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now)) + (
                f".{int(now * 1000) % 1000:03d}Z"
            )
        try:
            relative = path.relative_to(self.root)
            name = str(relative)
        except ValueError:  # a commitlog kept elsewhere (storePathCommitLog)
            relative = Path(*path.parts[1:])
            name = str(path)
        target = self.root / REPORT_DIR / self._stamp / relative
        moved_to = str(target.relative_to(self.root))
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.rename(path, target)
            except OSError:
                shutil.move(path, target)
        except OSError as exc:
            log.error("cannot move %s to %s (%s): deleting it", path, target, exc.strerror)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            moved_to = ""
        entry = SetAside(name, moved_to, reason)
        self.moved.append(entry)
        return entry


def set_aside_empty_tail(directory: Path, set_aside: SetAsideDir) -> list[SetAside]:
    """Move aside the empty files after the last file holding anything in a commitlog
    ``directory`` (a file created but never given its size, which no run wrote to); one
    WARN each."""
    moved = []
    for _, path in reversed(list_offset_files(directory)):
        try:
            if path.stat().st_size:
                break
        except FileNotFoundError:
            continue
        entry = set_aside.move(path, "empty commitlog file after the last one")
        log.warning(
            "commitlog file %s is empty: %s",
            path,
            f"moved to {entry.moved_to}" if entry.moved_to else "deleted",
        )
        moved.append(entry)
    return moved
