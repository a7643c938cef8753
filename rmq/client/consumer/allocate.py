"""Queue allocation strategies: which of a topic's queues one consumer of a group pulls.

In clustering mode every consumer of a group runs the same strategy over the same inputs,
the topic's queues sorted (topic, broker name, queue id) and the group's client ids sorted,
so each one computes its own share without talking to the others, and together they cover
every queue exactly once.  The strategies are RocketMQ's, with its names:

* :class:`AllocateMessageQueueAveragely` ("AVG", the default): consecutive blocks; the first
  ``len(queues) % len(clients)`` clients take one queue more.  With 8 queues and 3 clients:
  [q0 q1 q2] [q3 q4 q5] [q6 q7].
* :class:`AllocateMessageQueueAveragelyByCircle` ("AVG_BY_CIRCLE"): dealt round-robin:
  [q0 q3 q6] [q1 q4 q7] [q2 q5].
* :class:`AllocateMessageQueueConsistentHash` ("CONSISTENT_HASH"): a hash ring with
  ``virtual_nodes`` points per client (MD5 of ``"<clientId>-<i>"``, first four bytes
  big-endian); a queue belongs to the first point at or after the hash of its Java
  ``toString``, so a client joining or leaving moves only the queues next to its points.

A strategy raises ``ValueError`` for an empty client id, queue list or client list, and
returns nothing for a client id that is not in the list (the broker's view of the group is
older than this client's heartbeat), as Java does.  The three strategies that take
parameters (by config, by machine room, machine-room nearby) are in
:mod:`rmq.client.consumer.allocate_rooms`.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Sequence
from typing import Protocol

from rmq.remoting.bodies import MessageQueue

__all__ = [
    "AllocateMessageQueueAveragely",
    "AllocateMessageQueueAveragelyByCircle",
    "AllocateMessageQueueConsistentHash",
    "AllocateStrategy",
    "ShareByIndex",
    "index_of",
    "strategy_by_name",
]


class AllocateStrategy(Protocol):
    """What a rebalance needs from an allocation strategy."""

    @property
    def name(self) -> str: ...

    def allocate(
        self,
        consumer_group: str,
        current_cid: str,
        mq_all: Sequence[MessageQueue],
        cid_all: Sequence[str],
    ) -> list[MessageQueue]:
        """The queues of ``mq_all`` that ``current_cid`` consumes (both lists sorted)."""
        ...


def index_of(current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]) -> int:
    """The position of ``current_cid`` in ``cid_all`` (-1 when absent), after the argument
    checks every strategy makes."""
    if not current_cid:
        raise ValueError("currentCID is empty")
    if not mq_all:
        raise ValueError("mqAll is null or mqAll empty")
    if not cid_all:
        raise ValueError("cidAll is null or cidAll empty")
    try:
        return cid_all.index(current_cid)
    except ValueError:
        return -1


class ShareByIndex:
    """A strategy whose share depends only on the client's position in the sorted client
    list: the argument checks and the "not in the list" case are made once, here."""

    def allocate(
        self,
        consumer_group: str,
        current_cid: str,
        mq_all: Sequence[MessageQueue],
        cid_all: Sequence[str],
    ) -> list[MessageQueue]:
        index = index_of(current_cid, mq_all, cid_all)
        if index < 0:
            return []
        return self._share(index, mq_all, len(cid_all))

    def _share(
        self, index: int, mq_all: Sequence[MessageQueue], clients: int
    ) -> list[MessageQueue]:
        """The queues of the client at ``index`` among ``clients`` clients."""
        raise NotImplementedError


class AllocateMessageQueueAveragely(ShareByIndex):
    """Consecutive blocks of nearly equal size (RocketMQ's default strategy)."""

    name = "AVG"

    def _share(
        self, index: int, mq_all: Sequence[MessageQueue], clients: int
    ) -> list[MessageQueue]:
        base, extra = divmod(len(mq_all), clients)
        if index < extra:
            start, size = index * (base + 1), base + 1
        else:
            start, size = index * base + extra, base
        return list(mq_all[start : start + size])


class AllocateMessageQueueAveragelyByCircle(ShareByIndex):
    """Queues dealt to the clients one at a time, round-robin."""

    name = "AVG_BY_CIRCLE"

    def _share(
        self, index: int, mq_all: Sequence[MessageQueue], clients: int
    ) -> list[MessageQueue]:
        return list(mq_all[index::clients])


def _ring_hash(key: str) -> int:
    """The first four bytes of the key's MD5, big-endian (Java's ``ConsistentHashRouter``)."""
    return int.from_bytes(hashlib.md5(key.encode("utf-8")).digest()[:4], "big")


class AllocateMessageQueueConsistentHash:
    """A consistent-hash ring of the group's clients, ``virtual_nodes`` points each."""

    name = "CONSISTENT_HASH"

    def __init__(self, virtual_nodes: int = 10) -> None:
        if virtual_nodes < 0:
            raise ValueError(f"illegal virtualNodeCnt :{virtual_nodes}")
        self.virtual_nodes = virtual_nodes

    def allocate(
        self,
        consumer_group: str,
        current_cid: str,
        mq_all: Sequence[MessageQueue],
        cid_all: Sequence[str],
    ) -> list[MessageQueue]:
        if index_of(current_cid, mq_all, cid_all) < 0:
            return []
        ring: dict[int, str] = {}
        for cid in cid_all:
            for replica in range(self.virtual_nodes):
                ring[_ring_hash(f"{cid}-{replica}")] = cid  # a later point wins a collision
        if not ring:
            return []
        points = sorted(ring)
        result = []
        for mq in mq_all:
            at = bisect.bisect_left(points, _ring_hash(mq.java_text()))
            if ring[points[at % len(points)]] == current_cid:
                result.append(mq)
        return result


_BY_NAME: dict[str, type[AllocateStrategy]] = {
    strategy.name: strategy
    for strategy in (
        AllocateMessageQueueAveragely,
        AllocateMessageQueueAveragelyByCircle,
        AllocateMessageQueueConsistentHash,
    )
}


def strategy_by_name(name: str) -> AllocateStrategy:
    """A strategy from its RocketMQ name ("AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH")."""
    try:
        return _BY_NAME[name.upper()]()
    except KeyError:
        raise ValueError(
            f"unknown allocation strategy {name!r}; choose one of {', '.join(_BY_NAME)}"
        ) from None
