"""A slave's copy of its master's metadata (Apache's ``SlaveSynchronize``).

:class:`SlaveSynchronizer` runs on a ``brokerRole=SLAVE`` broker.  Its master is the
``masterAddr`` of the broker's last name-server registration result
(:attr:`BrokerContext.master_addr <rmq.server.broker.context.BrokerContext.master_addr>`); with
none known, or when it is the broker's own address, nothing is copied.  One round
(:meth:`SlaveSynchronizer.sync_all`) asks the master, in Apache's order, and each step on its
own (a failure is logged and the next step still runs):

==================================  =====================================================
request (3 s timeout each)          what the slave does with the answer
==================================  =====================================================
GET_ALL_TOPIC_CONFIG (to the        when the master's topic DataVersion differs from the
master's fast port, listenPort -    slave's: the table is cleared and replaced by the
2, as Apache's ``brokerVIPChannel   master's, the version becomes the master's,
(true, ...)``)                      ``topics.json`` is written
GET_ALL_CONSUMER_OFFSET             every ``topic@group`` entry of the master replaces the
                                    slave's (entries only the slave has are kept);
                                    ``consumerOffset.json`` is written
GET_ALL_DELAY_OFFSET                the answer's text is written to ``delayOffset.json`` as
                                    it came (the slave runs no delivery)
GET_ALL_SUBSCRIPTIONGROUP_CONFIG    as for topics: replaced on a different DataVersion,
                                    ``subscriptionGroup.json`` written
==================================  =====================================================

Rounds run 3 s after the start and then every 10 s (Apache's schedule), and at once when a
registration result names a new master, so a slave that starts (or whose master comes back)
does not wait for the timer.  Rounds never overlap.  The server layer may not use the client
package: the requests go out over a :class:`~rmq.remoting.client.RemotingClient` of its own.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from rmq.common.config import FAST_PORT_OFFSET
from rmq.remoting.bodies import (
    ConsumerOffsetSerializeWrapper,
    SubscriptionGroupWrapper,
    TopicConfigSerializeWrapper,
)
from rmq.remoting.client import RemotingClient, split_address
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, create_request
from rmq.server.broker.context import BrokerContext
from rmq.store.configfile import persist_config_text

log = logging.getLogger("rmq.broker")

FIRST_SYNC_DELAY_S = 3.0
SYNC_INTERVAL_S = 10.0
MASTER_TIMEOUT_S = 3.0
"""Apache's BrokerOuterAPI waits 3 s for each of the four answers."""


class Requester(Protocol):
    """What the synchronizer needs of a :class:`RemotingClient`."""

    async def invoke(
        self, addr: str, request: RemotingCommand, timeout: float
    ) -> RemotingCommand: ...

    async def close(self) -> None: ...


class MasterRefused(Exception):
    """The master answered a sync request with an error code."""


def fast_port_addr(addr: str) -> str:
    """``host:(port - 2)``: the broker's fast (VIP) port."""
    host, port = split_address(addr)
    return f"{host}:{port - FAST_PORT_OFFSET}"


class SlaveSynchronizer:
    """Copies the master's topics, offsets, delay offsets and groups to this slave."""

    def __init__(self, context: BrokerContext, client: Requester | None = None) -> None:
        self.context = context
        self.client: Requester = client if client is not None else RemotingClient()
        self._lock = asyncio.Lock()
        self._pending: set[asyncio.Task[None]] = set()

    def master_changed(self) -> None:
        """The context's master listener: a new master known means a round now."""
        if self._master() is None:
            return
        task = asyncio.get_running_loop().create_task(self.sync_all())
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def run_periodically(self) -> None:
        """Rounds 3 s after the start, then every 10 s (until cancelled)."""
        await asyncio.sleep(FIRST_SYNC_DELAY_S)
        while True:
            await self.sync_all()
            await asyncio.sleep(SYNC_INTERVAL_S)

    async def close(self) -> None:
        for task in list(self._pending):
            task.cancel()
        await asyncio.gather(*self._pending, return_exceptions=True)
        await self.client.close()

    def _master(self) -> str | None:
        master = self.context.master_addr
        if master is None or master == self.context.broker_addr:
            return None
        return master

    async def sync_all(self) -> None:
        """One round (see the module docstring); never raises for a master's failure."""
        async with self._lock:
            master = self._master()
            if master is None:
                return
            for step in (
                self._sync_topics,
                self._sync_consumer_offsets,
                self._sync_delay_offsets,
                self._sync_subscription_groups,
            ):
                try:
                    await step(master)
                except Exception as exc:  # logged; the next step still runs
                    log.error("%s from the master %s failed: %s", step.__name__[1:], master, exc)

    async def _ask(self, addr: str, code: int) -> bytes:
        response = await self.client.invoke(addr, create_request(code), MASTER_TIMEOUT_S)
        if response.code != ResponseCode.SUCCESS:
            raise MasterRefused(f"code {response.code}: {response.remark}")
        return bytes(response.body or b"")

    async def _sync_topics(self, master: str) -> None:
        body = await self._ask(fast_port_addr(master), RequestCode.GET_ALL_TOPIC_CONFIG)
        wrapper = TopicConfigSerializeWrapper.decode(body)
        manager = self.context.topic_config_manager
        if manager.data_version != wrapper.data_version:
            manager.take_over(wrapper)
            await manager.wait_written()
            log.info("updated the slave's topic config from the master %s", master)

    async def _sync_consumer_offsets(self, master: str) -> None:
        body = await self._ask(master, RequestCode.GET_ALL_CONSUMER_OFFSET)
        wrapper = ConsumerOffsetSerializeWrapper.decode(body)
        self.context.consumer_offset_manager.put_all(wrapper.offset_table)
        log.info("updated the slave's consumer offsets from the master %s", master)

    async def _sync_delay_offsets(self, master: str) -> None:
        body = await self._ask(master, RequestCode.GET_ALL_DELAY_OFFSET)
        path = self.context.schedule_service.path
        try:
            persist_config_text(path, body.decode())
        except OSError as exc:
            log.error("cannot write the delay offsets to %s: %s", path, exc)
        log.info("updated the slave's delay offsets from the master %s", master)

    async def _sync_subscription_groups(self, master: str) -> None:
        body = await self._ask(master, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        wrapper = SubscriptionGroupWrapper.decode(body)
        manager = self.context.subscription_group_manager
        if manager.data_version != wrapper.data_version:
            manager.take_over(wrapper)
            await manager.wait_written()
            log.info("updated the slave's subscription groups from the master %s", master)
