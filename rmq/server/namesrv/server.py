"""The name server process: settings, remoting server, broker expiry, KV config, lifecycle.

`NamesrvController` wires the parts together the way Apache's `NamesrvController` does:

* the KV config is loaded from `kvConfigPath` before the port opens (a corrupt file with no
  usable backup stops the start with an error instead of silently dropping settings);
* one `RemotingServer` on `bindAddress:listenPort` serves the handlers of
  `NamesrvProcessor`; a connection that closes drops the broker registered over it at once;
* a scan task drops brokers that have not registered for `brokerChannelExpiredTime` ms,
  every `scanNotActiveBrokerInterval` ms (Apache hard-codes 120 s and 10 s; both are
  rmq-only keys so tests and small set-ups can shorten them, and UPDATE_NAMESRV_CONFIG
  changes take effect at the next scan);
* `stop` stops the scan, closes the server and every connection, and writes the KV config
  if a write failed since the last change (every change is written at once).  The
  connections it closes no longer update the route table, which nothing reads any more, so
  a stop does not pay for dropping every broker.

`run_namesrv` is the whole life of a name server process: start, wait for SIGTERM or
Ctrl-C, stop, and return the exit code.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping

from rmq.common.config import NamesrvConfigs
from rmq.remoting.connection import Connection
from rmq.remoting.limits import flow_limits
from rmq.remoting.server import RemotingServer
from rmq.runtime import run_until_signal
from rmq.server.namesrv.kvconfig import KVConfigManager
from rmq.server.namesrv.processor import NamesrvProcessor
from rmq.server.namesrv.routeinfo import RouteInfoManager

log = logging.getLogger("rmq.namesrv")


class NamesrvController:
    """One name server: route table, KV config, remoting server and the expiry scan."""

    def __init__(
        self, configs: NamesrvConfigs, file_properties: Mapping[str, str] | None = None
    ) -> None:
        self.configs = configs
        self.routes = RouteInfoManager()
        self.kv = KVConfigManager(configs.namesrv.kv_config_path)
        self.processor = NamesrvProcessor(self.routes, self.kv, configs, file_properties)
        self.server = RemotingServer(
            configs.server.bind_address,
            configs.server.listen_port,
            idle_timeout=float(configs.server.server_channel_max_idle_time_seconds),
            limits=flow_limits(configs.server),
        )
        self.processor.register(self.server)
        self.server.on_connection_closed(self._connection_closed)
        self._scan_task: asyncio.Task[None] | None = None
        self._stopping = False

    @property
    def port(self) -> int:
        return self.server.port

    async def start(self) -> None:
        self.kv.load()
        await self.server.start()
        self._scan_task = asyncio.get_running_loop().create_task(self._scan_forever())
        log.info(
            "The Name Server boot success. serializeType=JSON, listening on %s:%d",
            self.configs.server.bind_address,
            self.port,
        )

    async def stop(self) -> None:
        self._stopping = True
        if self._scan_task is not None:
            self._scan_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._scan_task
            self._scan_task = None
        await self.server.close()
        self.kv.flush()
        log.info("the name server stopped")

    def scan_not_active_brokers(self) -> int:
        """Drop expired brokers and close their connections; returns how many were dropped."""
        expired_millis = self.configs.namesrv.broker_channel_expired_time
        expired = self.routes.scan_not_active_brokers(expired_millis)
        for broker_addr, connection in expired:
            log.warning("The broker channel expired, %s %dms", broker_addr, expired_millis)
            if isinstance(connection, Connection):
                connection.close()
        return len(expired)

    async def _scan_forever(self) -> None:
        while True:
            await asyncio.sleep(self.configs.namesrv.scan_not_active_broker_interval / 1000)
            self.scan_not_active_brokers()

    def _connection_closed(self, connection: Connection) -> None:
        if self._stopping:
            return
        broker_addr = self.routes.on_connection_closed(connection.remote_addr, connection)
        if broker_addr is not None:
            log.info(
                "the broker's channel destroyed, %s, clean its data structure at once", broker_addr
            )


async def run_namesrv(
    configs: NamesrvConfigs, file_properties: Mapping[str, str] | None = None
) -> int:
    """Run a name server until SIGTERM or Ctrl-C; returns the process exit code."""
    return await run_until_signal(NamesrvController(configs, file_properties), log)
