"""The ``index/`` directory of a running store: its index files as one index.

One file's format, writes, repair and lookups are :mod:`rmq.store.indexfile`'s.
:class:`IndexService` owns the ``index/`` directory of a running store: it adds the keys of
each dispatched message to the newest file, starts a new file (named by its local creation
time ``yyyyMMddHHmmssSSS``, header seeded with the previous file's end offset and time) when
the newest one is full, answers queries newest file first, cuts entries past the valid end of
the commitlog during recovery, and deletes files that only point below the commitlog minimum.
Recovery truncates entries in place, newest first (each removed entry was the head of its
chain, so its slot goes back to the entry's predecessor); Apache instead deletes whole index
files newer than the checkpoint and loses their keys.  Re-dispatching a message (recovery
replays the commitlog tail) adds nothing for a message below the newest indexed one and, for
the newest one, only the keys whose hash is not indexed at its offset yet: a kill between two
keys of a message leaves the rest to be added then.  A key listed twice in KEYS gets two
entries on the first dispatch, as in Apache, but one when completed after a crash;
``MessageStore.query_message`` returns each offset once either way.  Flushing ``msync``s
outside the service lock, so a slow disk never holds up dispatch.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from rmq.common.javahash import index_key_hash
from rmq.store.errors import StoreError
from rmq.store.indexfile import IndexFile, index_key, query_index_files
from rmq.store.layout import index_file_name, index_file_time, list_index_files
from rmq.store.mappedfile import remove_stale_temp_files

log = logging.getLogger(__name__)


class IndexService:
    """The index files of one store's ``index/`` directory.

    Thread-safe: the dispatcher adds keys, pull/query threads look keys up, the flush thread
    flushes, and the cleanup timer deletes old files, all under one lock, except that the
    flush ``msync``s outside it.
    """

    def __init__(self, directory: str | os.PathLike[str], hash_slot_num: int, index_num: int):
        if hash_slot_num <= 0 or index_num <= 1:
            raise ValueError(
                f"index needs at least one hash slot and two entries, got "
                f"{hash_slot_num} slots and {index_num} entries"
            )
        self.directory = Path(directory)
        self.hash_slot_num = hash_slot_num
        self.index_num = index_num
        self._files: list[IndexFile] = []
        self._lock = threading.Lock()

    def load(self, set_aside: Callable[[Path, str], None] | None = None) -> int:
        """Map every index file of the directory (created when missing), oldest first,
        repairing what a crash left half written; leftovers of an interrupted file creation
        are deleted.

        A file that cannot be opened (cut short, empty: no geometry fits its size) raises
        :class:`StoreError`, unless ``set_aside(path, reason)`` is given: then that file is
        handed to it (it moves the file away), the newer files are deleted (the index only
        grows at its newest file), and the return value is the commitlog offset from which
        the keys must be indexed again (the end of the last file kept, 0 when none is);
        -1 when every file opened.
        """
        self.directory.mkdir(parents=True, exist_ok=True)
        for leftover in remove_stale_temp_files(self.directory):
            log.warning("deleted %s, left by an interrupted index file creation", leftover)
        files: list[IndexFile] = []
        reindex_from = -1
        paths = list_index_files(self.directory)
        try:
            for number, path in enumerate(paths):
                try:
                    index_file = IndexFile.open(path, self.hash_slot_num, self.index_num)
                except StoreError as exc:
                    if set_aside is None:
                        raise
                    reindex_from = files[-1].end_phy_offset if files else 0
                    set_aside(path, str(exc).removeprefix(f"{path}: "))
                    for newer in paths[number + 1 :]:
                        newer.unlink(missing_ok=True)
                        log.warning("deleted %s, newer than a damaged index file", newer)
                    break
                files.append(index_file)
                repaired = index_file.repair()
                if repaired:
                    log.warning(
                        "index file %s: undid or completed %d writes a crash interrupted",
                        path,
                        repaired,
                    )
        except StoreError:
            for index_file in files:
                index_file.close()
            raise
        with self._lock:
            self._files = files
        return reindex_from

    @property
    def files(self) -> Sequence[IndexFile]:
        """A snapshot of the index files, oldest first."""
        return tuple(self._files)

    @property
    def last_update_timestamp(self) -> int:
        """End store time of the newest file (QUERY_MESSAGE's ``indexLastUpdateTimestamp``)."""
        files = self._files
        return files[-1].end_timestamp if files else 0

    @property
    def last_update_phy_offset(self) -> int:
        """End commitlog offset of the newest file (``indexLastUpdatePhyoffset``)."""
        files = self._files
        return files[-1].end_phy_offset if files else 0

    def indexed_up_to(self) -> int:
        """Commitlog offset of the newest indexed message, -1 when nothing is indexed."""
        for index_file in reversed(self._files):
            if index_file.index_count > 1:
                return index_file.end_phy_offset
        return -1

    def put_keys(
        self,
        topic: str,
        keys: Iterable[str],
        uniq_key: str | None,
        physical_offset: int,
        store_timestamp: int,
    ) -> None:
        """Index a dispatched message under its unique key and each non-empty key.

        ``keys`` are the tokens of the KEYS property (``keys_property.split(" ")`` may be passed
        as is; empty tokens are skipped).  Whether a message is indexed at all (ROLLBACK
        records are not) is the caller's decision.  Re-dispatching is harmless: a message
        below the newest indexed one is skipped, and the newest one gets only the keys whose
        hash is not indexed at its offset yet.  Raises :class:`StoreError` when a new index
        file is needed but cannot be created (the keys written so far stay; dispatching the
        message again adds the rest).
        """
        key_hashes = [index_key_hash(index_key(topic, uniq_key))] if uniq_key else []
        for key in keys:
            if key:
                key_hashes.append(index_key_hash(index_key(topic, key)))
        with self._lock:
            newest = self.indexed_up_to()
            if physical_offset <= newest:
                if physical_offset < newest:
                    return
                indexed = self._hashes_at(physical_offset)
                key_hashes = [key_hash for key_hash in key_hashes if key_hash not in indexed]
            if not key_hashes:
                return
            if not self._files:
                self._roll()
            while True:
                written = self._files[-1].put_hashes(key_hashes, physical_offset, store_timestamp)
                if written == len(key_hashes):
                    return
                key_hashes = key_hashes[written:]
                self._roll()

    def _hashes_at(self, physical_offset: int) -> set[int]:
        """Key hashes of the newest entries, those pointing at ``physical_offset``."""
        found: set[int] = set()
        for index_file in reversed(self._files):
            for number in range(index_file.index_count - 1, 0, -1):
                entry = index_file.entry(number)
                if entry.physical_offset != physical_offset:
                    return found
                found.add(entry.key_hash)
        return found

    def _roll(self) -> None:
        previous = self._files[-1] if self._files else None
        created_ms = time.time_ns() // 1_000_000
        if previous is not None and index_file_name(created_ms) <= previous.path.name:
            # Same millisecond, or the clock went back: names must keep sorting by age.
            created_ms = index_file_time(previous.path.name) + 1
        path = self.directory / index_file_name(created_ms)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._files.append(
            IndexFile.create(
                path,
                self.hash_slot_num,
                self.index_num,
                previous.end_phy_offset if previous else 0,
                previous.end_timestamp if previous else 0,
            )
        )
        log.info("created index file %s", path)

    def query(self, topic: str, key: str, max_num: int, begin: int, end: int) -> list[int]:
        """Commitlog offsets of messages indexed under ``key`` in ``topic`` stored within
        ``[begin, end]`` (ms), newest first, at most ``max_num``; callers re-check the keys."""
        with self._lock:
            return query_index_files(self._files, index_key(topic, key), max_num, begin, end)

    def truncate_dirty(self, max_physical_offset: int) -> int:
        """Recovery: remove every entry pointing at or past ``max_physical_offset`` (the
        valid end of the commitlog); files left without entries are deleted.  Returns how
        many entries were removed."""
        total = 0
        with self._lock:
            while self._files:
                newest = self._files[-1]
                removed = newest.truncate(max_physical_offset)
                total += removed
                if newest.index_count > 1:
                    break
                if removed == 0 and len(self._files) == 1:
                    break
                self._files.pop()
                newest.destroy()
                log.info("recovery deleted index file %s", newest.path)
        return total

    def flush(self) -> int:
        """``msync`` the index files changed since the last flush; returns the store time of
        the newest indexed message, now on disk (the checkpoint's ``indexMsgTimestamp``; a
        file rolled but still empty carries its predecessor's), 0 when nothing is indexed.

        Only noting what to flush takes the lock; the ``msync`` runs outside it, so dispatch
        goes on meanwhile (what it writes then is flushed next time).
        """
        with self._lock:
            changed = [index_file for index_file in self._files if index_file.begin_flush()]
            timestamp = self._files[-1].end_timestamp if self._files else 0
        for index_file in changed:
            index_file.sync()
        return timestamp

    def delete_expired(self, min_commitlog_offset: int) -> int:
        """Delete the oldest files whose newest entry points below ``min_commitlog_offset``
        (never the newest file); returns how many were deleted."""
        with self._lock:
            expired = 0
            while expired < len(self._files) - 1:
                if self._files[expired].end_phy_offset >= min_commitlog_offset:
                    break
                expired += 1
            doomed, self._files = self._files[:expired], self._files[expired:]
        for index_file in doomed:
            index_file.destroy()
            log.info("deleted expired index file %s", index_file.path)
        return len(doomed)

    def close(self) -> None:
        """Flush and unmap every file."""
        self.flush()
        with self._lock:
            for index_file in self._files:
                index_file.close()
            self._files = []
