"""Queue locks of orderly consumers (LOCK_BATCH_MQ / UNLOCK_BATCH_MQ).

An orderly consumer only consumes a message queue while it holds the broker's lock on it, so
that two members of a group never work on one queue at the same time, even while a rebalance
moves the queue from one to the other.  :class:`RebalanceLockManager` keeps, per consumer
group, the table message queue -> (client id, time of the last lock).  Rules (Apache's
``RebalanceLockManager``):

* locking a queue succeeds when nobody holds it, when the requesting client already holds
  it, or when the holder's lock has expired: it was last taken or renewed more than
  ``lock_max_live_ms`` (60 s, Apache's ``rocketmq.broker.rebalance.lockMaxLiveTime``) ago.
  Every success (re)stamps the lock with the current time; consumers renew their locks every
  20 s, so a live consumer keeps its queues and a dead one loses them after a minute;
* a batch lock answers the queues now held by the requesting client (the rest are held by
  other live clients);
* unlocking releases only the requesting client's own locks, expired or not.

Time comes from an injectable millisecond clock.  Everything runs on the broker's event loop,
so there are no locks around the tables.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from rmq.common.timeutil import now_millis
from rmq.remoting.bodies import MessageQueue

log = logging.getLogger("rmq.broker")

LOCK_MAX_LIVE_MS = 60_000
"""A queue lock not renewed for this long may be taken by another client."""


@dataclass(slots=True)
class _LockEntry:
    client_id: str
    last_update_timestamp: int


class RebalanceLockManager:
    """The queue locks of every consumer group on one broker."""

    def __init__(
        self,
        *,
        lock_max_live_ms: int = LOCK_MAX_LIVE_MS,
        clock: Callable[[], int] = now_millis,
    ) -> None:
        self.lock_max_live_ms = lock_max_live_ms
        self._clock = clock
        self._groups: dict[str, dict[MessageQueue, _LockEntry]] = {}

    def try_lock_batch(
        self, group: str, mqs: Iterable[MessageQueue], client_id: str
    ) -> list[MessageQueue]:
        """Lock (or renew) ``mqs`` for ``client_id``; the queues it now holds, in request
        order."""
        now = self._clock()
        locks = self._groups.setdefault(group, {})
        locked = []
        for mq in dict.fromkeys(mqs):
            entry = locks.get(mq)
            if entry is None:
                log.info(
                    "lock %s of group %s for %s: it was not locked",
                    mq.java_text(),
                    group,
                    client_id,
                )
            elif entry.client_id != client_id:
                if now - entry.last_update_timestamp <= self.lock_max_live_ms:
                    log.warning(
                        "lock %s of group %s for %s refused: locked by %s",
                        mq.java_text(),
                        group,
                        client_id,
                        entry.client_id,
                    )
                    continue
                log.warning(
                    "lock %s of group %s for %s: the lock of %s expired",
                    mq.java_text(),
                    group,
                    client_id,
                    entry.client_id,
                )
            locks[mq] = _LockEntry(client_id, now)
            locked.append(mq)
        if not locks:
            del self._groups[group]
        return locked

    def unlock_batch(self, group: str, mqs: Iterable[MessageQueue], client_id: str) -> None:
        """Release the locks ``client_id`` holds on ``mqs``; other clients' locks stay."""
        locks = self._groups.get(group)
        if locks is None:
            log.warning("unlock for %s: group %s holds no lock", client_id, group)
            return
        for mq in mqs:
            entry = locks.get(mq)
            if entry is None:
                log.warning(
                    "unlock %s of group %s for %s: not locked", mq.java_text(), group, client_id
                )
            elif entry.client_id != client_id:
                log.warning(
                    "unlock %s of group %s for %s refused: locked by %s",
                    mq.java_text(),
                    group,
                    client_id,
                    entry.client_id,
                )
            else:
                del locks[mq]
                log.info("unlock %s of group %s for %s", mq.java_text(), group, client_id)
        if not locks:
            del self._groups[group]
