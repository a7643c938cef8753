"""Which broker of a broker name a consumer reads a queue from, and where its offsets go:
Apache's ``PullAPIWrapper.pullFromWhichNodeTable`` and ``MQClientInstance.
findBrokerAddressInSubscribe``.

* :func:`find_in_subscribe` picks an address from a broker name's id -> address table: the
  wanted id; for a slave id missing, the next id; else, unless ``only_this_broker``, the
  first entry (the lowest id, as Java's HashMap of small Long keys iterates).  The result
  says whether it is a slave's.
* :class:`PullNodes` remembers, per queue, the ``suggestWhichBrokerId`` of the last pull
  answer (a master with ``slaveReadEnable`` points a lagging consumer at a slave, a slave
  points it back) and :meth:`PullNodes.broker_for_pull` finds the broker the next pull of
  that queue goes to: the suggested id (master 0 until there is a suggestion) or any broker
  of the name when that id is gone from the route, after fetching the route once more.  So
  a consumer reads from a slave whenever the master is gone from the route; a pull sent to
  a slave carries no commit offset (a slave stores none).
* :func:`offset_broker` is where offsets are committed and read
  (``RemoteBrokerOffsetStore``): the master; when the cached route has none, the route is
  fetched again and then any broker of the name, so a consumer whose master died commits to
  the slave it reads from, and its offsets in memory go to the master once it is back.  The
  pull consumer asks the queue bounds (min / max offset, search by time) there too, where
  Java's MQAdminImpl insists on the master: so ``rmq consume`` reads a slave whose master
  died.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from rmq.client.errors import ClientError, ClientErrorCode, MQClientError
from rmq.client.instance import ClientInstance
from rmq.remoting.bodies import MASTER_ID, MessageQueue
from rmq.remoting.errors import RemotingError

__all__ = ["FoundBroker", "PullNodes", "find_in_subscribe", "offset_broker"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class FoundBroker:
    addr: str
    slave: bool


def find_in_subscribe(
    addrs: Mapping[int, str], broker_id: int, only_this_broker: bool
) -> FoundBroker | None:
    """``findBrokerAddressInSubscribe`` over one broker name's addresses (see the module
    docstring); None when nothing fits."""
    if not addrs:
        return None
    addr = addrs.get(broker_id)
    slave = broker_id != MASTER_ID
    if addr is None and slave:
        addr = addrs.get(broker_id + 1)
    if addr is not None:
        return FoundBroker(addr, slave)
    if only_this_broker:
        return None
    first = min(addrs)
    return FoundBroker(addrs[first], first != MASTER_ID)


async def _find(
    instance: ClientInstance, mq: MessageQueue, broker_id: int, only_this_broker: bool
) -> FoundBroker:
    """Find in the cached routes; else fetch the topic's route and look again, any broker
    allowed.  MQClientError BROKER_NOT_EXIST_EXCEPTION when there is still none."""
    found = find_in_subscribe(
        instance.broker_addr_table(mq.broker_name), broker_id, only_this_broker
    )
    if found is not None:
        return found
    try:
        await instance.get_route(mq.topic, refresh=True)
    except (ClientError, RemotingError, OSError) as exc:
        log.warning("cannot fetch the route of %s: %s", mq.topic, exc)
    found = find_in_subscribe(instance.broker_addr_table(mq.broker_name), broker_id, False)
    if found is None:
        raise MQClientError(
            ClientErrorCode.BROKER_NOT_EXIST_EXCEPTION, f"The broker[{mq.broker_name}] not exist"
        )
    return found


async def offset_broker(instance: ClientInstance, mq: MessageQueue) -> str:
    """Where `mq`'s offsets are committed and read (see the module docstring)."""
    return (await _find(instance, mq, MASTER_ID, True)).addr


class PullNodes:
    """The broker id each queue's next pull goes to (see the module docstring)."""

    def __init__(self) -> None:
        self._suggested: dict[MessageQueue, int] = {}

    def suggest(self, mq: MessageQueue, broker_id: int) -> None:
        """Take a pull answer's ``suggestWhichBrokerId`` for `mq`."""
        self._suggested[mq] = broker_id

    def broker_id(self, mq: MessageQueue) -> int:
        """``recalculatePullFromWhichNode``: the last suggestion, the master before one."""
        return self._suggested.get(mq, MASTER_ID)

    async def broker_for_pull(self, instance: ClientInstance, mq: MessageQueue) -> FoundBroker:
        return await _find(instance, mq, self.broker_id(mq), False)
