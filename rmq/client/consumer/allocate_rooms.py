"""The allocation strategies that take parameters: a fixed list, machine rooms, nearby rooms.

These are RocketMQ 4.9's other three strategies, with its names and its results for the same
inputs (the conformance suite runs Apache's Java classes beside these):

* :class:`AllocateMessageQueueByConfig` ("CONFIG"): every consumer takes the fixed list of
  queues it was configured with, whatever the group and the topic look like.  Nothing is
  checked: the configuration is the allocation.
* :class:`AllocateMessageQueueByMachineRoom` ("MACHINE_ROOM"): only queues of brokers named
  ``"<room>@<brokerName>"`` whose room is one of ``consumer_idcs`` are shared out.  Each
  client takes the block ``[index * mod, index * mod + mod)`` (``mod`` = queues // clients)
  and the first ``queues % clients`` clients one more from the tail, so with 5 queues and 2
  clients the shares are [q0 q1 q4] and [q2 q3] (not averagely's [q0 q1 q2] [q3 q4]).  A
  broker name is split at ``@`` as Java's ``String.split`` does (trailing empty parts
  dropped) and must give exactly two parts.
* :class:`AllocateMachineRoomNearby` ("MACHINE_ROOM_NEARBY-<inner name>"): a
  :class:`MachineRoomResolver` says which room each broker's queue and each client is in.
  The queues of the client's own room go through the inner strategy among that room's
  clients; the queues of a room where no client of the group runs go through the inner
  strategy among all clients.  Rooms are visited in sorted order, and a queue or a client
  the resolver puts in no room (an empty string) is a ``ValueError``.

The argument checks and the "client not in the list" case are those of every strategy
(:func:`rmq.client.consumer.allocate.index_of`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from rmq.client.consumer.allocate import AllocateStrategy, ShareByIndex, index_of
from rmq.remoting.bodies import MessageQueue

__all__ = [
    "AllocateMachineRoomNearby",
    "AllocateMessageQueueByConfig",
    "AllocateMessageQueueByMachineRoom",
    "MachineRoomResolver",
]


class AllocateMessageQueueByConfig:
    """A fixed list of queues, the same for every rebalance."""

    name = "CONFIG"

    def __init__(self, message_queues: Iterable[MessageQueue]) -> None:
        self.message_queues = list(message_queues)

    def allocate(
        self,
        consumer_group: str,
        current_cid: str,
        mq_all: Sequence[MessageQueue],
        cid_all: Sequence[str],
    ) -> list[MessageQueue]:
        return list(self.message_queues)


def _machine_room(broker_name: str) -> str | None:
    """The room of a ``"<room>@<brokerName>"`` broker name; None when the name does not split
    into exactly two parts (Java's ``split("@")``, which drops trailing empty parts)."""
    parts = broker_name.split("@")
    while parts and not parts[-1]:
        parts.pop()
    return parts[0] if len(parts) == 2 else None


class AllocateMessageQueueByMachineRoom(ShareByIndex):
    """The queues of the brokers in the consumer's machine rooms (``consumer_idcs``)."""

    name = "MACHINE_ROOM"

    def __init__(self, consumer_idcs: Iterable[str]) -> None:
        self.consumer_idcs = frozenset(consumer_idcs)

    def _share(
        self, index: int, mq_all: Sequence[MessageQueue], clients: int
    ) -> list[MessageQueue]:
        in_rooms = [mq for mq in mq_all if _machine_room(mq.broker_name) in self.consumer_idcs]
        mod, rem = divmod(len(in_rooms), clients)
        result = in_rooms[index * mod : index * mod + mod]
        if rem > index:
            result.append(in_rooms[index + mod * clients])
        return result


class MachineRoomResolver(Protocol):
    """Which machine room a broker (by one of its queues) and a client are deployed in."""

    def broker_deploy_in(self, message_queue: MessageQueue) -> str: ...

    def consumer_deploy_in(self, client_id: str) -> str: ...


class AllocateMachineRoomNearby:
    """An inner strategy applied room by room: a room's queues go to that room's clients,
    and to every client when the room has none."""

    def __init__(self, strategy: AllocateStrategy, resolver: MachineRoomResolver) -> None:
        self.strategy = strategy
        self.resolver = resolver

    @property
    def name(self) -> str:
        return f"MACHINE_ROOM_NEARBY-{self.strategy.name}"

    def allocate(
        self,
        consumer_group: str,
        current_cid: str,
        mq_all: Sequence[MessageQueue],
        cid_all: Sequence[str],
    ) -> list[MessageQueue]:
        if index_of(current_cid, mq_all, cid_all) < 0:
            return []
        queues_by_room: dict[str, list[MessageQueue]] = {}
        for mq in mq_all:
            room = self.resolver.broker_deploy_in(mq)
            if not room:
                raise ValueError(f"Machine room is null for mq {mq.java_text()}")
            queues_by_room.setdefault(room, []).append(mq)
        clients_by_room: dict[str, list[str]] = {}
        for cid in cid_all:
            room = self.resolver.consumer_deploy_in(cid)
            if not room:
                raise ValueError(f"Machine room is null for consumer id {cid}")
            clients_by_room.setdefault(room, []).append(cid)

        own_room = self.resolver.consumer_deploy_in(current_cid)
        result: list[MessageQueue] = []
        own_queues = queues_by_room.pop(own_room, [])
        if own_queues:
            result += self.strategy.allocate(
                consumer_group, current_cid, own_queues, clients_by_room[own_room]
            )
        for room in sorted(queues_by_room):
            if room not in clients_by_room:
                result += self.strategy.allocate(
                    consumer_group, current_cid, queues_by_room[room], cid_all
                )
        return result
