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

:class:`VersionedConfigManager` adds the :class:`DataVersion` of the topic and group tables:
a change calls :meth:`~VersionedConfigManager.next_data_version`, which bumps the version
(counter + 1, stamped now) and persists.  The name servers compare the topic table's version
to decide whether a registration carries news.
"""

from __future__ import annotations

import logging
import os
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar, Generic, TypeVar

from rmq.common import fastjson
from rmq.remoting.bodies import Body, DataVersion
from rmq.store.configfile import load_config_file, persist_config

log = logging.getLogger("rmq.broker")

B = TypeVar("B", bound=Body)
V = TypeVar("V")


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

    def persist(self) -> None:
        """Write the file; a failure is logged, not raised."""
        try:
            persist_config(self.path, self._snapshot().to_json())
        except OSError as exc:
            log.error("cannot persist the %s to %s: %s", self.content, self.path, exc)


class VersionedConfigManager(ConfigManager[B]):
    """A :class:`ConfigManager` whose state carries a :class:`DataVersion` (a subclass's
    :meth:`_apply` takes over the loaded body's version)."""

    def __init__(
        self, path: str | os.PathLike[str], body_type: type[B], snapshot: Callable[[], B]
    ) -> None:
        super().__init__(path, body_type, snapshot)
        self._data_version = DataVersion()

    @property
    def data_version(self) -> DataVersion:
        return self._data_version

    def next_data_version(self) -> None:
        """Record a change: bump the data version and persist."""
        self._data_version = self._data_version.next_version()
        self.persist()

    def take_over(self, body: B) -> None:
        """Replace the whole table and its data version by ``body``'s and persist: a slave
        copying its master's (Apache's SlaveSynchronize clears the table, puts the master's
        entries and assigns the master's version)."""
        self._clear()
        self._apply(body)
        self.persist()

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
