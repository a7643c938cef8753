"""One broker's replication service (Apache's ``HAService`` and its ``GroupTransferService``).

:class:`HAService` listens on ``haListenPort`` (``listenPort + 1``, on every broker as in
Apache, which binds it whatever the role) and serves each slave that connects with an
:class:`~.connection.HAConnection`; a SLAVE also runs an :class:`~.client.HAClient` towards
its master.

The highest offset any slave acknowledged is :attr:`HAService.push2slave_max_offset`.  A
SYNC_MASTER send whose producer waits calls :meth:`HAService.wait_replica`: with no slave
connected, or the slaves more than ``haSlaveFallbehindMax`` bytes behind the message's end
(Apache's ``isSlaveOK``), it is SLAVE_NOT_AVAILABLE at once; otherwise PUT_OK as soon as a slave
acknowledged the message's end, FLUSH_SLAVE_TIMEOUT after ``slaveTimeout`` ms.  Waiters are
futures in a heap ordered by offset, settled when acknowledgements arrive; nothing blocks the
loop.

:meth:`HAService.runtime_info` adds what GET_BROKER_RUNTIME_INFO shows of replication while a
slave is connected (an rmq addition: Apache 4.9.8 only logs the lag every minute).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import logging
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from rmq.common.config import BrokerRole
from rmq.remoting.errors import ListenError
from rmq.server.broker.ha.client import HAClient
from rmq.server.broker.ha.connection import HAConnection
from rmq.store.putmessage import PutMessageStatus

if TYPE_CHECKING:
    from rmq.server.broker.context import BrokerContext

log = logging.getLogger("rmq.broker.ha")

HA_PORT_ROLE = "the broker's HA port (haListenPort = listenPort + 1)"


class HAService:
    """Replication of one broker (see the module docstring)."""

    def __init__(self, context: BrokerContext) -> None:
        self.context = context
        self.store = context.store
        self.config = context.store_config
        self.push2slave_max_offset = 0
        self.connections: set[HAConnection] = set()
        self.client: HAClient | None = None
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._waiters: list[tuple[int, int, asyncio.Future[bool]]] = []
        self._order = itertools.count()
        self._data = asyncio.Event()

    # -- lifecycle -----------------------------------------------------------------------

    async def start(self) -> None:
        """Listen on ``haListenPort`` and, on a slave, start replicating from the master.
        Raises :class:`~rmq.remoting.errors.ListenError` when the port cannot be bound."""
        host = self.context.netty_config.bind_address
        port = self.config.ha_listen_port
        try:
            self._server = await asyncio.start_server(self._accept, host, port, reuse_address=True)
        except OSError as exc:
            raise ListenError.of_bind_failure(f"{host}:{port}", exc, HA_PORT_ROLE) from exc
        log.info("HA service listening on %s:%d", host, port)
        if self.config.broker_role is BrokerRole.SLAVE:
            self.client = HAClient(self)
            self._spawn(self.client.run())

    async def stop(self) -> None:
        """Stop listening, close every connection and the client; pending waiters time out
        as they would."""
        if self._server is not None:
            self._server.close()
            self._server = None
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connection = HAConnection(self, reader, writer)
        log.info("slave %s connected", connection.client_addr)
        self.connections.add(connection)

        async def serve() -> None:
            try:
                await connection.run()
            finally:
                self.connections.discard(connection)
                log.info("slave %s disconnected", connection.client_addr)

        self._spawn(serve())

    # -- data and acknowledgements -------------------------------------------------------

    async def wait_for_data(self, timeout: float) -> None:
        """Wait until :meth:`wake_writers` or ``timeout`` seconds."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._data.wait()

    def wake_writers(self) -> None:
        """Wake the connections' writers waiting for new commitlog data."""
        self._data.set()
        self._data = asyncio.Event()

    def notify_transfer_some(self, offset: int) -> None:
        """A slave acknowledged ``offset``: raise the high-water mark, settle the waiters it
        covers."""
        if offset <= self.push2slave_max_offset:
            return
        self.push2slave_max_offset = offset
        waiters = self._waiters
        while waiters and waiters[0][0] <= offset:
            _, _, future = heapq.heappop(waiters)
            if not future.done():
                future.set_result(True)

    def is_slave_ok(self, master_put_where: int) -> bool:
        """Apache's ``isSlaveOK``: a slave is connected and at most ``haSlaveFallbehindMax``
        bytes behind ``master_put_where``."""
        return bool(self.connections) and (
            master_put_where - self.push2slave_max_offset < self.config.ha_slave_fallbehind_max
        )

    async def wait_replica(self, next_offset: int) -> PutMessageStatus:
        """SYNC_MASTER: the status of a stored message ending at ``next_offset`` once a slave
        holds it (see the module docstring)."""
        if not self.is_slave_ok(next_offset):
            return PutMessageStatus.SLAVE_NOT_AVAILABLE
        if self.push2slave_max_offset >= next_offset:
            return PutMessageStatus.PUT_OK
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (next_offset, next(self._order), future))
        self.wake_writers()
        try:
            async with asyncio.timeout(self.config.slave_timeout / 1000):
                await future
        except TimeoutError:
            return PutMessageStatus.FLUSH_SLAVE_TIMEOUT
        return PutMessageStatus.PUT_OK

    def slave_fall_behind(self) -> int:
        """Bytes the master holds that no slave acknowledged (Apache's
        ``slaveFallBehindMuch``)."""
        return self.store.max_physical_offset() - self.push2slave_max_offset

    def runtime_info(self) -> dict[str, str]:
        """Replication entries of GET_BROKER_RUNTIME_INFO: none without a connected slave."""
        if not self.connections:
            return {}
        return {
            "haConnectionCount": str(len(self.connections)),
            "haPush2SlaveMaxOffset": str(self.push2slave_max_offset),
            "haSlaveFallBehindBytes": str(self.slave_fall_behind()),
        }
