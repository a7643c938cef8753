"""Durable ``config/*.json`` files (topics, offsets, subscription groups, delay offsets).

The broker keeps its metadata as fastjson text in pretty format, and rewrites a file whole on
every change.  :func:`persist_config_text` does that so a crash at any moment leaves either
the old or the new content under the file's name, never a mix:

1. make ``<file>.bak`` the current ``<file>`` (if any): a hard link to it, put in place by
   ``os.replace`` (the content is not written again: it was synced when it was written as
   ``<file>``); on a file system without hard links, a synced copy;
2. write the new text to ``<file>.tmp`` and ``fsync`` it;
3. ``os.replace`` the temporary file over ``<file>`` (atomic on POSIX) and ``fsync`` the
   directory so both renames are durable.

Apache writes the same three files (``MixAll.string2File``) but deletes the old file before
renaming, which leaves a window with no ``<file>``; the loader covers that window by falling
back to ``<file>.bak``, and so do we.

:func:`load_config_file` reads ``<file>``, and when it is missing, empty, unreadable or does
not decode, ``<file>.bak`` (Apache's ``ConfigManager.load``); the result says which one was
used.  Loading never writes anything, so the offline
:class:`~rmq.store.offline.reader.StoreReader` uses it too.  A file that is missing with no
backup is a first start: None.  A file that is damaged (empty, unreadable, undecodable) with
no usable backup raises :class:`ConfigFileError`, one line naming the file, rather than
silently starting from empty metadata (Apache would start empty and lose every consumer
offset) -- unless the caller says ``start_empty_on_damage`` (the broker's rmq-only
``startWithEmptyMetadataOnDamage``): then the damage is logged at ERROR and None returned.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from rmq.common import fastjson
from rmq.store.errors import StoreError

log = logging.getLogger("rmq.store")

T = TypeVar("T")

TMP_SUFFIX = ".tmp"
BAK_SUFFIX = ".bak"


class ConfigFileError(StoreError):
    """A config file exists but neither it nor its ``.bak`` can be read and decoded."""


@dataclass(frozen=True, slots=True)
class LoadedConfig(Generic[T]):
    """A decoded config file and the file it actually came from."""

    value: T
    path: Path
    from_backup: bool


def backup_path(path: Path) -> Path:
    return path.with_name(path.name + BAK_SUFFIX)


def persist_config_text(path: str | os.PathLike[str], text: str) -> None:
    """Replace the content of ``path`` with ``text`` atomically, keeping the old one as .bak."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + TMP_SUFFIX)
    _keep_backup(target)
    _write_synced(tmp, text.encode("utf-8"))
    os.replace(tmp, target)
    _fsync_directory(target.parent)


def _keep_backup(target: Path) -> None:
    """Make ``<target>.bak`` the current content of ``target`` (nothing when it is missing)."""
    backup = backup_path(target)
    link = backup.with_name(backup.name + TMP_SUFFIX)
    with contextlib.suppress(FileNotFoundError):
        link.unlink()
    try:
        os.link(target, link)
    except FileNotFoundError:
        return
    except OSError:  # no hard links here: copy
        try:
            previous = target.read_bytes()
        except FileNotFoundError:
            return
        _write_synced(backup, previous)
        return
    os.replace(link, backup)


def persist_config(path: str | os.PathLike[str], value: Any) -> None:
    """Persist ``value`` as fastjson pretty-format text (see :func:`persist_config_text`)."""
    persist_config_text(path, fastjson.dumps(value, pretty=True))


def load_config_file(
    path: str | os.PathLike[str],
    decode: Callable[[str], T],
    *,
    start_empty_on_damage: bool = False,
) -> LoadedConfig[T] | None:
    """Decode ``path``, falling back to ``path.bak``; None when neither file exists (or,
    with ``start_empty_on_damage``, when neither is usable).

    ``decode`` turns the text into a value and raises (any exception) on bad content.
    """
    target = Path(path)
    failures: list[str] = []
    for candidate, from_backup in ((target, False), (backup_path(target), True)):
        try:
            text = candidate.read_text(encoding="utf-8")
        except FileNotFoundError:
            continue
        except (OSError, UnicodeDecodeError) as exc:
            failures.append(f"{candidate} is unreadable ({exc})")
            continue
        if not text.strip():
            failures.append(f"{candidate} is empty")
            continue
        try:
            value = decode(text)
        except Exception as exc:
            failures.append(f"{candidate} does not decode ({exc})")
            continue
        if failures:
            log.warning("%s; loaded its backup %s instead", failures[0], candidate)
        return LoadedConfig(value, candidate, from_backup)
    if not failures or failures == [f"{backup_path(target)} is empty"]:
        return None
    reason = "; ".join(failures)
    if start_empty_on_damage:
        log.error("%s, and no usable backup: starting without it", reason)
        return None
    raise ConfigFileError(f"cannot load config file: {reason}; no usable backup")


def load_config(path: str | os.PathLike[str]) -> LoadedConfig[Any] | None:
    """:func:`load_config_file` with the fastjson decoder."""
    return load_config_file(path, fastjson.loads)


def _write_synced(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
