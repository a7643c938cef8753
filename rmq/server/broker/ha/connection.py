"""The master's side of one slave's HA connection (Apache's ``HAConnection``).

Reading: every 8-byte report is the slave's max physical offset.  The first one is where
streaming starts (:func:`~.frames.transfer_start`); each is an acknowledgement the service
takes (:meth:`~.service.HAService.notify_transfer_some`).  A report past the master's max
offset, or ``haHousekeepingInterval`` ms without one, closes the connection.

Writing: from the start offset on, the commitlog bytes the store has
(:meth:`~rmq.store.store.MessageStore.get_commitlog_data`, one file at a time) go out as
transfers of at most ``haTransferBatchSize`` bytes; with nothing to send, an empty transfer
(the heartbeat) every ``haSendHeartbeatInterval`` ms.  The writer waits for new data on the
service's wake-up (a SYNC_MASTER send wakes it) or 100 ms, as Apache's does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import TYPE_CHECKING

from rmq.server.broker.ha.frames import (
    REPORT,
    batch_size,
    pack_transfer_header,
    transfer_start,
)

if TYPE_CHECKING:
    from rmq.server.broker.ha.service import HAService

log = logging.getLogger("rmq.broker.ha")

IDLE_WAIT_S = 0.1
"""How long the writer waits for new data before looking again (Apache's 100 ms)."""


class HAConnection:
    """One slave's connection to this master (see the module docstring)."""

    def __init__(
        self, service: HAService, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.service = service
        self.reader = reader
        self.writer = writer
        peer = writer.get_extra_info("peername")
        self.client_addr = f"{peer[0]}:{peer[1]}" if peer else "?"
        self.slave_request_offset = -1
        self.slave_ack_offset = -1
        self.next_transfer_offset = -1
        self._requested = asyncio.Event()

    async def run(self) -> None:
        """Serve the slave until either direction fails; then close the socket."""
        loop = asyncio.get_running_loop()
        tasks = {loop.create_task(self._read()), loop.create_task(self._write())}
        try:
            done, _pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                if not task.cancelled() and task.exception() is not None:
                    log.info("HA connection %s closed: %s", self.client_addr, task.exception())
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self.writer.close()
            with contextlib.suppress(OSError):
                await self.writer.wait_closed()

    async def _read(self) -> None:
        store = self.service.store
        housekeeping = self.service.config.ha_housekeeping_interval / 1000
        while True:
            try:
                async with asyncio.timeout(housekeeping):
                    data = await self.reader.readexactly(REPORT.size)
            except TimeoutError:
                log.warning(
                    "HA connection %s: no report for %.0f s", self.client_addr, housekeeping
                )
                return
            (offset,) = REPORT.unpack(data)
            self.slave_ack_offset = offset
            if self.slave_request_offset < 0:
                self.slave_request_offset = offset
                self._requested.set()
                log.info("slave %s requests offset %d", self.client_addr, offset)
            elif offset > store.max_physical_offset():
                log.warning(
                    "slave %s acknowledged %d, past this master's max offset %d",
                    self.client_addr,
                    offset,
                    store.max_physical_offset(),
                )
                return
            self.service.notify_transfer_some(offset)

    async def _write(self) -> None:
        service, writer = self.service, self.writer
        config, store = service.config, service.store
        await self._requested.wait()
        offset = transfer_start(
            self.slave_request_offset,
            store.max_physical_offset(),
            config.mapped_file_size_commit_log,
        )
        self.next_transfer_offset = offset
        heartbeat = config.ha_send_heartbeat_interval / 1000
        last_write = time.monotonic()
        while True:
            data = store.get_commitlog_data(offset)
            if data is not None and len(data) > 0:
                size = batch_size(len(data), config.ha_transfer_batch_size)
                writer.write(pack_transfer_header(offset, size))
                writer.write(data[:size])
                offset += size
                self.next_transfer_offset = offset
                await writer.drain()
                last_write = time.monotonic()
                continue
            if time.monotonic() - last_write > heartbeat:
                writer.write(pack_transfer_header(offset, 0))
                await writer.drain()
                last_write = time.monotonic()
            await service.wait_for_data(IDLE_WAIT_S)
