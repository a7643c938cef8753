"""The name server's KV config: (namespace, key) -> value, kept in `kvConfig.json`.

Operators and brokers store small settings here; the one RocketMQ itself reads is namespace
`ORDER_TOPIC_CONFIG` (topic -> "brokerName:queueNums;..."), which goes back to brokers in every
registration answer and into route answers when `orderMessageEnable` is on.

The table lives in memory and is written whole after every change (a failed write is
retried by the next change and when the name server stops), in the compact fastjson
form Apache writes (`{"configTable":{"<namespace>":{"<key>":"<value>"}}}`) so that an Apache
name server can take over the file.  The write is atomic and keeps the previous content as
`kvConfig.json.bak` (`rmq.store.configfile`); loading falls back to the backup when the main
file is missing or unreadable, and refuses to start from an empty table when both are corrupt.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from rmq.common import fastjson
from rmq.store.configfile import load_config_file, persist_config_text

log = logging.getLogger("rmq.namesrv")

NAMESPACE_ORDER_TOPIC_CONFIG = "ORDER_TOPIC_CONFIG"


class KVConfigManager:
    """Namespaced key/value settings persisted to one JSON file."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._table: dict[str, dict[str, str]] = {}
        self._dirty = False

    def load(self) -> None:
        """Read the file if it exists (a missing file means an empty table)."""
        loaded = load_config_file(self.path, _decode_config_table)
        if loaded is None:
            return
        self._table = loaded.value
        log.info("load KV config table OK from %s (%d namespaces)", loaded.path, len(self._table))

    @property
    def dirty(self) -> bool:
        """True while the file is behind the table (the last write failed)."""
        return self._dirty

    def flush(self) -> None:
        """Write the table to the file if it changed since the last successful write.

        A failed write is logged and retried by the next change or flush (the name server
        flushes once more when it stops); the request that made the change still succeeds,
        as in Apache.
        """
        if not self._dirty:
            return
        try:
            persist_config_text(self.path, fastjson.dumps({"configTable": self._table}))
        except OSError as exc:
            log.error("cannot persist the KV config to %s: %s", self.path, exc)
            return
        self._dirty = False

    def _changed(self) -> None:
        self._dirty = True
        self.flush()

    def put(self, namespace: str, key: str, value: str) -> None:
        self._table.setdefault(namespace, {})[key] = value
        log.info("putKVConfig Namespace: %s Key: %s Value: %s", namespace, key, value)
        self._changed()

    def get(self, namespace: str, key: str) -> str | None:
        return self._table.get(namespace, {}).get(key)

    def delete(self, namespace: str, key: str) -> None:
        table = self._table.get(namespace)
        if table is None or key not in table:
            return
        value = table.pop(key)
        log.info("deleteKVConfig Namespace: %s Key: %s Value: %s", namespace, key, value)
        self._changed()

    def get_namespace(self, namespace: str) -> dict[str, str] | None:
        """A copy of one namespace's table, or None when the namespace does not exist."""
        table = self._table.get(namespace)
        return dict(table) if table is not None else None


def _decode_config_table(text: str) -> dict[str, dict[str, str]]:
    document: Any = fastjson.loads(text)
    if not isinstance(document, dict):
        raise ValueError("kvConfig.json is not a JSON object")
    config_table = document.get("configTable") or {}
    if not isinstance(config_table, dict):
        raise ValueError("configTable is not a JSON object")
    return {
        str(namespace): {str(k): str(v) for k, v in (entries or {}).items() if v is not None}
        for namespace, entries in config_table.items()
    }
