"""The slave's side of replication (Apache's ``HAClient``).

The client connects to the broker context's ``ha_master_addr`` (``haMasterAddress`` or the
registration result's ``haServerAddr``) and reports the store's max physical offset at once
(Apache waits one ``haSendHeartbeatInterval`` first), then every ``haSendHeartbeatInterval``
ms and after every transfer that grew the store.  Each transfer must start at the store's max
offset (an empty store takes any start); a mismatch or a failed append closes the connection
and the client reconnects, reporting its own max offset again.  The bytes are appended and
dispatched by :meth:`~rmq.store.store.MessageStore.append_to_commitlog` (the dispatch
recovery uses).  Nothing read for ``haHousekeepingInterval`` ms (the master sends a heartbeat
every ``haSendHeartbeatInterval``) closes the connection too.  A master that cannot be
reached is tried again after :attr:`HAClient.retry_delay` seconds, or at once when the master
address changes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

from rmq.remoting.client import split_address
from rmq.remoting.errors import RemotingError
from rmq.server.broker.ha.frames import (
    TRANSFER_HEADER,
    continues,
    pack_report,
    unpack_transfer_header,
)

if TYPE_CHECKING:
    from rmq.server.broker.ha.service import HAService

log = logging.getLogger("rmq.broker.ha")

RETRY_DELAY_S = 5.0
"""Seconds before connecting again to a master that could not be reached (Apache's 5 s)."""
CONNECT_TIMEOUT_S = 3.0


class HAClient:
    """A slave's replication client (see the module docstring)."""

    def __init__(self, service: HAService) -> None:
        self.service = service
        self.retry_delay = RETRY_DELAY_S
        self.connected = False
        self._address_changed = asyncio.Event()
        service.context.master_listeners.append(self._address_changed.set)

    async def run(self) -> None:
        """Replicate from the master until cancelled."""
        while True:
            addr = self.service.context.ha_master_addr
            if addr is None:
                await self._pause()
                continue
            try:
                host, port = split_address(addr)
                async with asyncio.timeout(CONNECT_TIMEOUT_S):
                    reader, writer = await asyncio.open_connection(host, port)
            except (OSError, TimeoutError, RemotingError) as exc:
                log.info("cannot connect to the HA master %s: %s", addr, exc)
                await self._pause()
                continue
            log.info("connected to the HA master %s", addr)
            self.connected = True
            try:
                await self._session(addr, reader, writer)
            except (OSError, TimeoutError, asyncio.IncompleteReadError) as exc:
                log.info("HA connection to the master %s closed: %s", addr, exc)
            finally:
                self.connected = False
                writer.close()
                with contextlib.suppress(OSError):
                    await writer.wait_closed()

    async def _pause(self) -> None:
        self._address_changed.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.retry_delay):
                await self._address_changed.wait()

    async def _session(
        self, addr: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        service = self.service
        store, config = service.store, service.config
        housekeeping = config.ha_housekeeping_interval / 1000
        reported = store.max_physical_offset()
        writer.write(pack_report(reported))
        await writer.drain()
        heartbeat = asyncio.get_running_loop().create_task(self._heartbeat(writer))
        try:
            while addr == service.context.ha_master_addr and not heartbeat.done():
                async with asyncio.timeout(housekeeping):
                    header = await reader.readexactly(TRANSFER_HEADER.size)
                offset, size = unpack_transfer_header(header)
                slave_max = store.max_physical_offset()
                if not continues(slave_max, offset):
                    log.error(
                        "the master sent offset %d, not this slave's max offset %d",
                        offset,
                        slave_max,
                    )
                    return
                if size == 0:
                    continue
                async with asyncio.timeout(housekeeping):
                    body = await reader.readexactly(size)
                if not store.append_to_commitlog(offset, body):
                    log.error("appending %d replicated bytes at %d failed", size, offset)
                    return
                current = store.max_physical_offset()
                if current > reported:
                    reported = current
                    writer.write(pack_report(current))
        finally:
            heartbeat.cancel()
            # gather: the heartbeat's own end is returned, a cancellation of this task is not lost
            await asyncio.gather(heartbeat, return_exceptions=True)

    async def _heartbeat(self, writer: asyncio.StreamWriter) -> None:
        interval = self.service.config.ha_send_heartbeat_interval / 1000
        while True:
            await asyncio.sleep(interval)
            writer.write(pack_report(self.service.store.max_physical_offset()))
            await writer.drain()
