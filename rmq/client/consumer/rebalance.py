"""Rebalance: which queues this push consumer owns, and where it starts reading each one.

Every 20 s, and at once when a broker sends NOTIFY_CONSUMER_IDS_CHANGED, the push consumer
runs :meth:`Rebalance.do_rebalance`; per subscribed topic:

1. the topic's read queues (the cached route, :meth:`ClientInstance.subscribe_queues`) and,
   in clustering mode, the group's client ids (GET_CONSUMER_LIST_BY_GROUP to some broker of
   the topic; when that broker does not list this client yet, a heartbeat goes out and it is
   asked again), both sorted, go through the allocation strategy; broadcasting takes every
   queue;
2. the result is diffed against the owned :class:`ProcessQueue` table.  A queue no longer
   assigned is dropped (its pull loop and consume tasks stop at their next step), its
   offset committed and forgotten, and, for orderly consumption, its broker lock released
   once no listener call is running on it (:meth:`_remove_unnecessary`); a queue whose
   pull loop has been silent for 120 s is rebuilt the same way;
3. a newly assigned queue gets a process queue, for orderly consumption only once
   LOCK_BATCH_MQ granted it to this client, and a start offset
   (:meth:`compute_pull_from_where`), and then a pull loop (the ``dispatch_pull`` callback);
4. when the assignment changed, the subscription's version becomes "now" and a heartbeat
   carries it to the brokers before the new pull loops start, so no pull is refused as
   "subscription not latest" (Java sends that heartbeat after starting them).

Start offsets (Java's ``RebalancePushImpl.computePullFromWhere``): the committed offset
when the store has one.  Otherwise (-1) by ``consume_from_where``: LAST_OFFSET (and the
deprecated MIN/MAX/LAST..._WHEN_BOOT_FIRST, which Java treats the same) starts at the
queue's max offset, except 0 for the group's retry topic; FIRST_OFFSET at 0; TIMESTAMP at
the offset SEARCH_OFFSET_BY_TIMESTAMP gives for ``consume_timestamp`` (the broker picks the
message stored nearest to that time; the retry topic starts at its max offset).  A store
that failed (-2) or a lookup that failed leaves the queue for the next rebalance.  Note
that a broker answers a group with no committed offset on a queue whose first message is
still stored (min offset 0, in memory) with offset 0, so in clustering mode LAST_OFFSET and
TIMESTAMP apply only to queues that have lost old messages, as in RocketMQ; a broadcasting
consumer's local store has no such answer.

Orderly consumption in clustering mode holds a broker lock per queue: :meth:`lock_all`
renews every owned queue's lock (the push consumer calls it every 20 s), marking a queue
unlocked when the broker gives the lock to someone else; the lock is trusted for 30 s.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from rmq.client import api
from rmq.client.consumer.allocate import AllocateStrategy
from rmq.client.consumer.offsetstore import OffsetStore, ReadOffsetType
from rmq.client.consumer.processqueue import ProcessQueue
from rmq.client.errors import ClientError, ClientErrorCode, MQBrokerError, MQClientError
from rmq.client.instance import ClientInstance
from rmq.common.naming import RETRY_GROUP_TOPIC_PREFIX
from rmq.common.timeutil import now_millis
from rmq.remoting.bodies import ConsumeFromWhere, MessageModel, MessageQueue, SubscriptionData
from rmq.remoting.errors import RemotingError

__all__ = ["PullRequest", "Rebalance"]

log = logging.getLogger(__name__)

LOCK_TIMEOUT = 1.0  # LOCK_BATCH_MQ / UNLOCK_BATCH_MQ answer timeout
UNLOCK_DELAY = 20.0  # rocketmq.client.unlockDelayTimeMills: unlock a queue with messages left
REMOVE_LOCK_WAIT = 1.0  # how long removing an orderly queue waits for a running listener

_LAST_OFFSET_LIKE = frozenset(
    {
        ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
        ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST,
        ConsumeFromWhere.CONSUME_FROM_MIN_OFFSET,
        ConsumeFromWhere.CONSUME_FROM_MAX_OFFSET,
    }
)


@dataclass(slots=True)
class PullRequest:
    """One owned queue's pull position, handed to the pull loop."""

    mq: MessageQueue
    pq: ProcessQueue
    next_offset: int
    previously_locked: bool = False


class Rebalance:
    """The owned queues of one push consumer and the rebalance that keeps them right."""

    def __init__(
        self,
        instance: ClientInstance,
        group: str,
        message_model: MessageModel,
        strategy: AllocateStrategy,
        offset_store: OffsetStore,
        *,
        consume_from_where: ConsumeFromWhere,
        consume_timestamp: int,
        orderly: bool,
        dispatch_pull: Callable[[PullRequest], None],
    ) -> None:
        self.instance = instance
        self.group = group
        self.message_model = message_model
        self.strategy = strategy
        self.offset_store = offset_store
        self.consume_from_where = consume_from_where
        self.consume_timestamp = consume_timestamp
        self.orderly = orderly
        self._dispatch_pull = dispatch_pull
        self.subscriptions: dict[str, SubscriptionData] = {}
        self.process_queue_table: dict[MessageQueue, ProcessQueue] = {}
        self._delayed_unlocks: dict[MessageQueue, asyncio.Task[None]] = {}

    @property
    def _clustering(self) -> bool:
        return self.message_model is MessageModel.CLUSTERING

    # --- rebalancing ----------------------------------------------------------------------

    async def do_rebalance(self) -> None:
        """Rebalance every subscribed topic, then drop queues of topics no longer subscribed."""
        for topic in list(self.subscriptions):
            try:
                await self._rebalance_topic(topic)
            except (ClientError, RemotingError, ValueError) as exc:
                if not topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                    log.warning(
                        "rebalance of group %s, topic %s failed: %s", self.group, topic, exc
                    )
        for mq in [mq for mq in self.process_queue_table if mq.topic not in self.subscriptions]:
            self.process_queue_table.pop(mq).dropped = True
            log.info("group %s: dropped %s, its topic is no longer subscribed", self.group, mq)

    async def _rebalance_topic(self, topic: str) -> None:
        mq_all = await self.instance.subscribe_queues(topic)
        if not mq_all:
            log.warning("group %s: topic %s has no readable queue", self.group, topic)
            return
        if self._clustering:
            cid_all = sorted(await self._group_members(topic))
            assigned = self.strategy.allocate(self.group, self.instance.client_id, mq_all, cid_all)
        else:
            assigned = mq_all
        await self.update_process_queue_table(topic, set(assigned))

    async def _group_members(self, topic: str) -> list[str]:
        """The group's client ids; when the broker does not list this client yet (it has
        not had a heartbeat from it, e.g. the topic's broker was unknown until now), a
        heartbeat goes out first and the broker is asked again."""
        try:
            cid_all = await self.consumer_id_list(topic)
        except MQBrokerError:
            cid_all = []
        if self.instance.client_id not in cid_all:
            await self.instance.send_heartbeat_to_all_brokers()
            cid_all = await self.consumer_id_list(topic)
        return cid_all

    async def consumer_id_list(self, topic: str) -> list[str]:
        """The client ids of the group's consumers, asked of some broker of ``topic``."""
        addr = self.instance.find_broker_addr_by_topic(topic)
        if addr is None:
            await self.instance.get_route(topic, refresh=True)
            addr = self.instance.find_broker_addr_by_topic(topic)
        if addr is None:
            raise MQClientError(
                ClientErrorCode.BROKER_NOT_EXIST_EXCEPTION, f"no broker serves topic {topic}"
            )
        return await api.get_consumer_id_list(
            self.instance.remoting, addr, self.group, self.instance.api_timeout
        )

    async def update_process_queue_table(self, topic: str, assigned: set[MessageQueue]) -> bool:
        """Make the owned queues of ``topic`` equal ``assigned``; True when that changed them."""
        changed = False
        for mq, pq in list(self.process_queue_table.items()):
            if mq.topic != topic:
                continue
            if mq not in assigned:
                reason = "no longer assigned"
            elif pq.is_pull_expired():
                reason = "its pull loop stalled"
            else:
                continue
            pq.dropped = True
            if await self._remove_unnecessary(mq, pq):
                del self.process_queue_table[mq]
                changed = True
                log.info("group %s: removed %s (%s)", self.group, mq, reason)
        new_requests = []
        for mq in sorted(assigned - self.process_queue_table.keys()):
            if self.orderly and self._clustering and not await self.lock(mq):
                log.warning("group %s: not adding %s, its lock is held elsewhere", self.group, mq)
                continue
            self.offset_store.remove_offset(mq)
            try:
                next_offset = await self.compute_pull_from_where(mq)
            except (ClientError, RemotingError) as exc:
                log.info("group %s: cannot compute the start of %s: %s", self.group, mq, exc)
                continue
            if next_offset < 0:
                log.warning("group %s: no start offset for %s yet", self.group, mq)
                continue
            pq = self.process_queue_table.setdefault(mq, ProcessQueue())
            pq.locked = True
            new_requests.append(PullRequest(mq, pq, next_offset))
            changed = True
            log.info("group %s: added %s from offset %d", self.group, mq, next_offset)
        if changed:
            await self._announce_change(topic)
        for request in new_requests:
            self._dispatch_pull(request)
        return changed

    async def _announce_change(self, topic: str) -> None:
        """A new subscription version, carried to the brokers by a heartbeat."""
        subscription = self.subscriptions.get(topic)
        if subscription is not None:
            subscription.sub_version = now_millis()
        await self.instance.send_heartbeat_to_all_brokers()

    async def compute_pull_from_where(self, mq: MessageQueue) -> int:
        """Where a newly owned queue starts (see the module docstring): an offset >= 0, or
        -1 when it cannot be known now; lookups that fail raise."""
        last_offset = await self.offset_store.read_offset(mq, ReadOffsetType.READ_FROM_STORE)
        if last_offset >= 0:
            return last_offset
        if last_offset != -1:
            return -1
        is_retry = mq.topic.startswith(RETRY_GROUP_TOPIC_PREFIX)
        where = self.consume_from_where
        if where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET:
            return 0
        if where is ConsumeFromWhere.CONSUME_FROM_TIMESTAMP and not is_retry:
            addr = await self.instance.broker_address(mq)
            return await api.search_offset(
                self.instance.remoting, addr, mq, self.consume_timestamp, self.instance.api_timeout
            )
        if where in _LAST_OFFSET_LIKE and is_retry:
            return 0
        addr = await self.instance.broker_address(mq)
        return await api.get_max_offset(self.instance.remoting, addr, mq, self.instance.api_timeout)

    async def remove_process_queue(self, mq: MessageQueue) -> None:
        """Drop ``mq`` now (its offset was found illegal); the next rebalance re-adds it."""
        pq = self.process_queue_table.pop(mq, None)
        if pq is not None:
            pq.dropped = True
            await self._remove_unnecessary(mq, pq)
            log.info("group %s: removed %s to correct its offset", self.group, mq)

    async def _remove_unnecessary(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        """Commit and forget the offset of a dropped queue and, when consuming orderly,
        release its broker lock; False when a listener call is still running on it."""
        await self.offset_store.persist(mq)
        self.offset_store.remove_offset(mq)
        if not (self.orderly and self._clustering):
            return True
        try:
            async with asyncio.timeout(REMOVE_LOCK_WAIT):  # wait_for can lose a cancellation
                await pq.consume_lock.acquire()
        except TimeoutError:
            pq.try_unlock_times += 1
            log.warning("group %s: %s is consuming, unlocking it later", self.group, mq)
            return False
        try:
            if pq.has_temp_message():
                if mq not in self._delayed_unlocks:
                    task = asyncio.get_running_loop().create_task(self._unlock_later(mq))
                    self._delayed_unlocks[mq] = task
            else:
                await self.unlock([mq], oneway=True)
        finally:
            pq.consume_lock.release()
        return True

    async def _unlock_later(self, mq: MessageQueue) -> None:
        """Unlock a removed queue after UNLOCK_DELAY, giving its last messages time to be
        consumed."""
        try:
            await asyncio.sleep(UNLOCK_DELAY)
            await self.unlock([mq], oneway=True)
        finally:
            del self._delayed_unlocks[mq]

    # --- broker locks (orderly, clustering) --------------------------------------------------

    async def lock(self, mq: MessageQueue) -> bool:
        """LOCK_BATCH_MQ for one queue; True when this client now holds it."""
        try:
            locked = await self._lock_batch([mq])
        except (ClientError, RemotingError) as exc:
            log.warning("group %s: locking %s failed: %s", self.group, mq, exc)
            return False
        return mq in locked

    async def lock_all(self) -> None:
        """Renew the locks of every owned queue, broker by broker."""
        for broker_mqs in self._owned_by_broker().values():
            try:
                locked = await self._lock_batch(broker_mqs)
            except (ClientError, RemotingError) as exc:
                log.warning(
                    "group %s: renewing locks on %s failed: %s", self.group, broker_mqs[0], exc
                )
                continue
            for lost in set(broker_mqs) - set(locked):
                pq = self.process_queue_table.get(lost)
                if pq is not None:
                    pq.locked = False
                    log.warning("group %s: lost the lock of %s", self.group, lost)

    async def unlock(self, mqs: Iterable[MessageQueue], *, oneway: bool) -> None:
        """UNLOCK_BATCH_MQ for ``mqs`` (all on one broker)."""
        mqs = list(mqs)
        try:
            addr = await self.instance.broker_address(mqs[0])
            await api.unlock_batch_mq(
                self.instance.remoting,
                addr,
                self.group,
                self.instance.client_id,
                mqs,
                LOCK_TIMEOUT,
                oneway=oneway,
            )
        except (ClientError, RemotingError) as exc:
            log.warning("group %s: unlocking %s failed: %s", self.group, mqs, exc)

    async def unlock_all(self) -> None:
        """Release every owned queue's lock (at shutdown)."""
        for broker_mqs in self._owned_by_broker().values():
            await self.unlock(broker_mqs, oneway=False)
            for mq in broker_mqs:
                pq = self.process_queue_table.get(mq)
                if pq is not None:
                    pq.locked = False

    async def _lock_batch(self, mqs: list[MessageQueue]) -> list[MessageQueue]:
        """LOCK_BATCH_MQ for ``mqs`` (all on one broker): the queues this client now holds,
        marked locked now."""
        addr = await self.instance.broker_address(mqs[0])
        locked = await api.lock_batch_mq(
            self.instance.remoting, addr, self.group, self.instance.client_id, mqs, LOCK_TIMEOUT
        )
        now = now_millis()
        for mq in locked:
            pq = self.process_queue_table.get(mq)
            if pq is not None:
                pq.locked = True
                pq.last_lock_timestamp = now
        return locked

    def _owned_by_broker(self) -> dict[str, list[MessageQueue]]:
        by_broker: dict[str, list[MessageQueue]] = {}
        for mq in sorted(self.process_queue_table):
            by_broker.setdefault(mq.broker_name, []).append(mq)
        return by_broker

    async def destroy(self) -> None:
        """Drop every owned queue; delayed unlocks happen now (at shutdown)."""
        for pq in self.process_queue_table.values():
            pq.dropped = True
        self.process_queue_table.clear()
        waiting = list(self._delayed_unlocks.items())
        for _, task in waiting:
            task.cancel()
        await asyncio.gather(*(task for _, task in waiting), return_exceptions=True)
        for mq, _ in waiting:
            await self.unlock([mq], oneway=True)
