"""Consumer offset stores: where a consumer group's progress per queue lives.

An offset here is the queue offset of the next message to consume.  Both stores keep a table
in memory (queue -> offset) that consumption moves forward cheaply, and write it out now and
then; they differ in where "out" is:

* :class:`RemoteBrokerOffsetStore` (clustering): the broker that holds the queue.  Reading
  from the store is QUERY_CONSUMER_OFFSET; persisting is UPDATE_CONSUMER_OFFSET, oneway, as
  Java's periodic commit (every 5 s, ``persistConsumerOffsetInterval``, driven by the push
  consumer) and its commit at shutdown do.  A queue the broker has no offset for reads as -1;
  a broker that cannot be reached as -2, so the caller retries rather than picking a start
  position.
* :class:`LocalFileOffsetStore` (broadcasting: every consumer has its own progress): a JSON
  file ``<dir>/<clientId>/<group>/offsets.json``, ``<dir>`` defaulting to Java's
  ``~/.rocketmq_offsets``.  The file is what Java's ``OffsetSerializeWrapper`` writes
  (``{"offsetTable":{{"brokerName":..,"queueId":..,"topic":..}:offset}}``, fastjson's object
  keys), so the Java client reads rmq's files and the other way round.  It is written
  atomically: the new content to ``offsets.json.tmp``, fsynced, the previous file kept as
  ``offsets.json.bak``, then renamed over; an unreadable file falls back to the backup.

:meth:`OffsetStore.read_offset` takes a :class:`ReadOffsetType`: memory only (-1 when the
queue is unknown), the store only (which also refreshes memory), or memory first.
:meth:`OffsetStore.update_offset` with ``increase_only`` never moves an offset back, which is
how concurrent consumption commits.
"""

from __future__ import annotations

import enum
import logging
import os
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from rmq.client import api
from rmq.client.errors import ClientError, MQBrokerError
from rmq.remoting.bodies import Body, BodyError, MessageQueue
from rmq.remoting.client import RemotingClient
from rmq.remoting.errors import RemotingError

__all__ = [
    "LocalFileOffsetStore",
    "OffsetSerializeWrapper",
    "OffsetStore",
    "ReadOffsetType",
    "RemoteBrokerOffsetStore",
    "default_local_offset_store_dir",
]

log = logging.getLogger(__name__)


def default_local_offset_store_dir() -> Path:
    """Java's ``rocketmq.client.localOffsetStoreDir`` default, under the home directory of
    the moment (read when a store is made, not when this module is imported)."""
    return Path.home() / ".rocketmq_offsets"


NOT_FOUND = -1
"""``read_offset``: the store holds no offset for the queue."""

READ_FAILED = -2
"""``read_offset``: the store could not be asked (broker unreachable, no route)."""

_BROKER_TIMEOUT = 5.0

FindBroker = Callable[[MessageQueue], Awaitable[str]]
"""Resolves the address of the master broker holding a queue (raises ClientError when there
is none)."""


class ReadOffsetType(enum.Enum):
    READ_FROM_MEMORY = 0
    READ_FROM_STORE = 1
    MEMORY_FIRST_THEN_STORE = 2


class OffsetStore:
    """The in-memory offset table both stores share; subclasses say where it persists."""

    def __init__(self, group: str) -> None:
        self.group = group
        self._table: dict[MessageQueue, int] = {}

    def load(self) -> None:
        """Read persisted offsets into memory at start (only the local store has any)."""

    def update_offset(self, mq: MessageQueue, offset: int, increase_only: bool) -> None:
        """Set the in-memory offset of ``mq``; with ``increase_only`` never lower it."""
        current = self._table.get(mq)
        if current is None or not increase_only or offset > current:
            self._table[mq] = offset

    async def read_offset(self, mq: MessageQueue, read_type: ReadOffsetType) -> int:
        """The offset of ``mq``: >= 0, or -1 (none stored), or -2 (the store failed)."""
        if read_type is not ReadOffsetType.READ_FROM_STORE:
            offset = self._table.get(mq)
            if offset is not None:
                return offset
            if read_type is ReadOffsetType.READ_FROM_MEMORY:
                return NOT_FOUND
        offset = await self._read_from_store(mq)
        if offset >= 0:
            self._table[mq] = offset
        return offset

    async def persist(self, mq: MessageQueue, *, oneway: bool = True) -> None:
        """Write the in-memory offset of ``mq`` out (nothing when it has none).

        The remote store sends it oneway unless ``oneway`` is False; then it waits for the
        broker's answer.  A failed commit is logged, not raised (the next one repeats it).
        """
        if mq in self._table:
            await self._persist({mq: self._table[mq]}, oneway)

    async def persist_all(self, mqs: Iterable[MessageQueue], *, oneway: bool = True) -> None:
        """Write out the offsets of ``mqs`` (see :meth:`persist` for ``oneway``); the remote
        store also forgets every other queue (ones this consumer no longer owns), as Java
        does."""
        wanted = set(mqs)
        if not wanted:
            return
        offsets = {mq: offset for mq, offset in self._table.items() if mq in wanted}
        await self._persist(offsets, oneway)

    def remove_offset(self, mq: MessageQueue) -> None:
        self._table.pop(mq, None)

    def clone_offset_table(self, topic: str | None = None) -> dict[MessageQueue, int]:
        """A copy of the in-memory table, of one topic or all."""
        return {mq: offset for mq, offset in self._table.items() if not topic or mq.topic == topic}

    async def _read_from_store(self, mq: MessageQueue) -> int:
        raise NotImplementedError

    async def _persist(self, offsets: dict[MessageQueue, int], oneway: bool) -> None:
        raise NotImplementedError


class RemoteBrokerOffsetStore(OffsetStore):
    """Clustering: offsets committed to the broker that holds each queue."""

    def __init__(self, remoting: RemotingClient, group: str, find_broker: FindBroker) -> None:
        super().__init__(group)
        self._remoting = remoting
        self._find_broker = find_broker

    async def persist_all(self, mqs: Iterable[MessageQueue], *, oneway: bool = True) -> None:
        wanted = set(mqs)
        if not wanted:
            return
        for mq in [mq for mq in self._table if mq not in wanted]:
            del self._table[mq]
        await super().persist_all(wanted, oneway=oneway)

    async def _read_from_store(self, mq: MessageQueue) -> int:
        try:
            addr = await self._find_broker(mq)
            offset = await api.query_consumer_offset(
                self._remoting, addr, self.group, mq, _BROKER_TIMEOUT
            )
        except MQBrokerError as exc:
            log.info("no offset of group %s for %s on the broker: %s", self.group, mq, exc)
            return NOT_FOUND
        except (ClientError, RemotingError, OSError) as exc:
            log.warning("cannot read the offset of group %s for %s: %s", self.group, mq, exc)
            return READ_FAILED
        return NOT_FOUND if offset is None else offset

    async def _persist(self, offsets: dict[MessageQueue, int], oneway: bool) -> None:
        for mq, offset in offsets.items():
            try:
                addr = await self._find_broker(mq)
                if oneway:
                    await api.update_consumer_offset_oneway(
                        self._remoting, addr, self.group, mq, offset
                    )
                else:
                    await api.update_consumer_offset(
                        self._remoting, addr, self.group, mq, offset, _BROKER_TIMEOUT
                    )
            except (ClientError, RemotingError, OSError) as exc:
                log.warning(
                    "cannot commit offset %d of group %s for %s: %s", offset, self.group, mq, exc
                )


@dataclass(slots=True, kw_only=True)
class OffsetSerializeWrapper(Body):
    """The local offset file: queue -> offset."""

    offset_table: dict[MessageQueue, int] = field(default_factory=dict)


class LocalFileOffsetStore(OffsetStore):
    """Broadcasting: offsets in a JSON file of this client and group."""

    def __init__(self, client_id: str, group: str, store_dir: Path | None = None) -> None:
        super().__init__(group)
        base = store_dir if store_dir is not None else default_local_offset_store_dir()
        self.path = base / client_id / group / "offsets.json"

    def load(self) -> None:
        self._table.update(self._read_file())

    async def _read_from_store(self, mq: MessageQueue) -> int:
        return self._read_file().get(mq, NOT_FOUND)

    async def _persist(self, offsets: dict[MessageQueue, int], oneway: bool) -> None:
        if not offsets:
            return
        table = self._read_file()
        table.update(offsets)
        try:
            self._write_file(OffsetSerializeWrapper(offset_table=table).encode(pretty=True))
        except OSError as exc:
            log.warning(
                "cannot write the offsets of group %s to %s: %s", self.group, self.path, exc
            )

    def _read_file(self) -> dict[MessageQueue, int]:
        """The persisted table: the file, else its backup, else empty."""
        for path in (self.path, self.path.with_name(self.path.name + ".bak")):
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                continue
            except OSError as exc:
                log.warning("cannot read %s: %s", path, exc)
                continue
            if not data.strip():
                continue
            try:
                return OffsetSerializeWrapper.decode(data).offset_table
            except BodyError as exc:
                log.warning("ignoring unreadable offsets file %s: %s", path, exc)
        return {}

    def _write_file(self, content: bytes) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "wb") as file:
            file.write(content)
            file.flush()
            os.fsync(file.fileno())
        if self.path.exists():
            os.replace(self.path, self.path.with_name(self.path.name + ".bak"))
        os.replace(tmp, self.path)
