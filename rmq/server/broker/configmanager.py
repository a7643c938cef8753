"""Loading and persisting the broker's metadata files (``config/*.json``).

The topic table (``topics.json``), the subscription groups (``subscriptionGroup.json``) and
the consumer offsets (``consumerOffset.json``) are each one protocol body written whole as
fastjson pretty text.  :class:`ConfigManager` is what their managers share:

* :meth:`ConfigManager.load` decodes the file, or its ``.bak`` when the file is missing, empty
  or does not decode (:func:`rmq.store.configfile.load_config_file`), and hands the body to the
  manager's :meth:`~ConfigManager._apply`.  A missing file leaves the manager as constructed;
  a damaged file (empty, unreadable, undecodable) without a usable backup raises
  :class:`~rmq.store.configfile.ConfigFileError` rather than starting from empty metadata,
  unless ``start_empty_on_damage`` (``startWithEmptyMetadataOnDamage``) says to.
* :meth:`ConfigManager.persist` writes the manager's snapshot (the body its ``snapshot``
  callable returns, the same one the admin requests answer with) atomically, keeping the
  previous content as ``.bak``.  A failed write is logged, not raised: the change stays in
  memory, as in Apache.

:class:`VersionedConfigManager` adds the :class:`DataVersion` of the topic and group tables
and writes them by group commit:

* a change calls :meth:`~VersionedConfigManager.next_data_version`, which bumps the version
  (counter + 1, stamped now) and numbers the change (:attr:`~VersionedConfigManager.changes`).
  If no write is running, one starts; changes made while a write runs are all covered by the
  single write after it.  A write takes a copy of the table on the event loop, then
  assembles the file's text and replaces the file (temporary file, fsync, rename, fsync of
  the directory) in a worker thread, so the loop never waits for the disk;
* :meth:`~VersionedConfigManager.wait_written` returns once the write covering a change has
  completed, and :func:`commit_before_answer` wraps a request handler so that its answer
  waits for the changes it made.  A request that creates a topic or group is therefore
  answered only once the change is on disk, as when every change was written in place: an
  acknowledged change survives a crash (kill -9, power loss after the fsync), while N
  changes arriving together cost far fewer than N writes;
* the file text and the compact body of GET_ALL_* are assembled from per-entry texts cached
  until the entry changes (entries are values: a change stores a new object), so a change
  costs the encoding of one entry plus a string join, done on the worker thread from a copy
  of the table taken on the loop; the compact body is kept until the next change.

Without a running event loop (offline tools, tests) a change is written at once.  The name
servers compare the topic table's version to decide whether a registration carries news.
"""

from __future__ import annotations

import asyncio
import logging
import os
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from rmq.common import fastjson
from rmq.remoting.bodies import Body, DataVersion
from rmq.store.configfile import load_config_file, persist_config_text

log = logging.getLogger("rmq.broker")

B = TypeVar("B", bound=Body)
V = TypeVar("V")
C = TypeVar("C")
R = TypeVar("R")
A = TypeVar("A")


class ConfigManager(ABC, Generic[B]):
    """A manager whose state is persisted in ``path`` as the body ``snapshot()`` returns."""

    content: ClassVar[str]
    """What the file holds, for log lines ("topics", "subscription groups", ...)."""

    def __init__(
        self, path: str | os.PathLike[str], body_type: type[B], snapshot: Callable[[], B]
    ) -> None:
        self.path = Path(path)
        self._body_type = body_type
        self._snapshot = snapshot

    @abstractmethod
    def _apply(self, body: B) -> int:
        """Take over a loaded body; return how many entries it held (for the log)."""

    def load(self, *, start_empty_on_damage: bool = False) -> None:
        """Read the file (or its ``.bak``) into the manager (see the module docstring)."""
        body_type = self._body_type
        loaded = load_config_file(
            self.path,
            lambda text: body_type.from_json(fastjson.loads(text)),
            start_empty_on_damage=start_empty_on_damage,
        )
        if loaded is None:
            return
        count = self._apply(loaded.value)
        log.info("loaded %d %s from %s", count, self.content, loaded.path)

    def render_file(self) -> str:
        """The file's text: the snapshot in fastjson's pretty format."""
        return fastjson.dumps(self._snapshot().to_json(), pretty=True)

    def persist(self) -> None:
        """Write the file now; a failure is logged, not raised."""
        try:
            persist_config_text(self.path, self.render_file())
        except OSError as exc:
            log.error("cannot persist the %s to %s: %s", self.content, self.path, exc)


class VersionedConfigManager(ConfigManager[B]):
    """A :class:`ConfigManager` whose state carries a :class:`DataVersion` and is written by
    group commit (see the module docstring).  A subclass's :meth:`_apply` takes over the
    loaded body's version; :attr:`table_key` and :meth:`_entries` say how its body is laid
    out, so the file and the compact body can be assembled from per-entry fragments."""

    table_key: ClassVar[str]
    """The body's key of the name -> entry table ("topicConfigTable", ...)."""

    def __init__(
        self, path: str | os.PathLike[str], body_type: type[B], snapshot: Callable[[], B]
    ) -> None:
        super().__init__(path, body_type, snapshot)
        self._data_version = DataVersion()
        self._changes = 0
        self._written = 0
        self._writer: asyncio.Task[None] | None = None
        self._waiters: deque[tuple[int, asyncio.Future[None]]] = deque()
        self._pretty: dict[str, tuple[Body, str]] = {}
        self._compact: dict[str, tuple[Body, str]] = {}
        self._encoded: tuple[int, bytes] | None = None
        self.writes = 0
        """File writes done by group commit since start."""

    @property
    def data_version(self) -> DataVersion:
        return self._data_version

    @property
    def changes(self) -> int:
        """How many changes were made since start (a change's number is the value after it)."""
        return self._changes

    @abstractmethod
    def _entries(self) -> Mapping[str, Body]:
        """The live table, name -> entry, in file order."""

    def next_data_version(self) -> None:
        """Record a change: bump the data version and schedule the write that covers it."""
        self._data_version = self._data_version.next_version()
        self._changed()

    def take_over(self, body: B) -> None:
        """Replace the whole table and its data version by ``body``'s and write: a slave
        copying its master's (Apache's SlaveSynchronize clears the table, puts the master's
        entries and assigns the master's version)."""
        self._clear()
        self._apply(body)
        self._changed()

    @abstractmethod
    def _clear(self) -> None:
        """Empty the table (before :meth:`take_over` applies another one)."""

    def _delete(self, table: dict[str, V], name: str, what: str) -> bool:
        """Remove ``name`` from ``table`` as a change (logged as a ``what``); False when it
        was not there."""
        old = table.pop(name, None)
        if old is None:
            log.warning("delete %s failed, %s does not exist", what, name)
            return False
        log.info("delete %s OK: %s", what, old)
        self.next_data_version()
        return True

    # -- group commit --------------------------------------------------------------------

    def _changed(self) -> None:
        self._changes += 1
        self._encoded = None
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            # No event loop (offline tools, plain unit tests): write at once.
            self._write_now()
            return
        if self._writer is None or self._writer.done():
            self._writer = loop.create_task(self._write_behind())

    def _write_now(self) -> None:
        target = self._changes
        self.persist()
        self.writes += 1
        self._written = target

    async def _write_behind(self) -> None:
        """Write until the file covers every change; each write releases the waiters of the
        changes it covers.  Changes made during a write are covered by the next one."""
        loop = asyncio.get_running_loop()
        while self._written < self._changes:
            target = self._changes
            items = list(self._entries().items())
            version = self._data_version
            try:
                await loop.run_in_executor(None, self._write_file, items, version)
            except OSError as exc:
                log.error("cannot persist the %s to %s: %s", self.content, self.path, exc)
            except Exception:
                log.exception("cannot persist the %s to %s", self.content, self.path)
            self.writes += 1
            self._written = target
            waiters = self._waiters
            while waiters and waiters[0][0] <= target:
                waiter = waiters.popleft()[1]
                if not waiter.done():
                    waiter.set_result(None)

    async def wait_written(self, change: int | None = None) -> None:
        """Return once the file holds change number ``change`` (default: every change made
        so far), written atomically and fsynced."""
        target = self._changes if change is None else change
        if self._written >= target:
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append((target, waiter))
        await waiter

    async def flush(self) -> None:
        """Wait for the pending writes (before a final :meth:`persist` at shutdown)."""
        await self.wait_written()
        if self._writer is not None:
            await asyncio.shield(self._writer)

    # -- assembled texts -----------------------------------------------------------------

    def render_file(self) -> str:
        """The file's text, as ``fastjson.dumps(snapshot().to_json(), pretty=True)`` writes
        it, assembled from each entry's cached pretty text."""
        return self._render_file(list(self._entries().items()), self._data_version)

    def _write_file(self, items: list[tuple[str, Body]], version: DataVersion) -> None:
        """Render and replace the file (on a worker thread: ``items`` is a copy of the table,
        its entries are values, and only the write in progress uses the pretty cache)."""
        persist_config_text(self.path, self._render_file(items, version))

    def _render_file(self, items: list[tuple[str, Body]], version: DataVersion) -> str:
        cache = self._pretty
        parts = []
        for name, entry in items:
            cached = cache.get(name)
            if cached is None or cached[0] is not entry:
                text = fastjson.dumps(entry.to_json(), pretty=True).replace("\n", "\n\t\t")
                cached = cache[name] = (entry, "\n\t\t" + _quote(name) + ":" + text)
            parts.append(cached[1])
        if len(cache) > len(parts):
            _prune(cache, items)
        version_text = fastjson.dumps(version.to_json(), pretty=True).replace("\n", "\n\t")
        table = "{" + ",".join(parts) + "\n\t}" if parts else "{}"
        return f'{{\n\t"dataVersion":{version_text},\n\t"{self.table_key}":{table}\n}}'

    def encoded_body(self) -> bytes:
        """The snapshot body in compact fastjson (GET_ALL_*), assembled from each entry's
        cached text and kept until the next change."""
        encoded = self._encoded
        if encoded is not None and encoded[0] == self._changes:
            return encoded[1]
        changes = self._changes
        data = self._render_body(list(self._entries().items()), self._data_version)
        self._encoded = (changes, data)
        return data

    async def encoded_body_async(self) -> bytes:
        """:meth:`encoded_body`, assembled on a worker thread when it is not kept, so a
        large table does not hold up the event loop."""
        encoded = self._encoded
        if encoded is not None and encoded[0] == self._changes:
            return encoded[1]
        changes = self._changes
        items = list(self._entries().items())
        data = await asyncio.get_running_loop().run_in_executor(
            None, self._render_body, items, self._data_version
        )
        if self._changes == changes:
            self._encoded = (changes, data)
        return data

    def _render_body(self, items: list[tuple[str, Body]], version: DataVersion) -> bytes:
        cache = self._compact
        parts = []
        for name, entry in items:
            cached = cache.get(name)
            if cached is None or cached[0] is not entry:
                cached = cache[name] = (entry, _quote(name) + ":" + fastjson.dumps(entry.to_json()))
            parts.append(cached[1])
        if len(cache) > len(parts):
            _prune(cache, items)
        version_text = fastjson.dumps(version.to_json())
        text = f'{{"dataVersion":{version_text},"{self.table_key}":{{{",".join(parts)}}}}}'
        return text.encode("utf-8", "replace")


def _prune(cache: dict[str, tuple[Body, str]], items: list[tuple[str, Body]]) -> None:
    """Drop the cached texts of entries no longer in the table."""
    names = {name for name, _ in items}
    for name in [name for name in cache if name not in names]:
        cache.pop(name, None)


def _quote(name: str) -> str:
    return fastjson.dumps(name)


def commit_before_answer(
    handler: Callable[[C, R], Awaitable[A]], managers: tuple[VersionedConfigManager[Any], ...]
) -> Callable[[C, R], Awaitable[A]]:
    """``handler`` whose answer waits until every metadata change it made is on disk: a
    request that creates a topic or group is answered only after the write covering it."""

    async def run(connection: C, request: R) -> A:
        before = [manager.changes for manager in managers]
        response = await handler(connection, request)
        for manager, changes in zip(managers, before, strict=True):
            if manager.changes != changes:
                await manager.wait_written(manager.changes)
        return response

    return run
