"""The name server process: settings, remoting server, broker expiry, KV config, lifecycle.

`NamesrvController` wires the parts together the way Apache's `NamesrvController` does:

* the KV config is loaded from `kvConfigPath` before the port opens (a corrupt file with no
  usable backup stops the start with an error instead of silently dropping settings);
* one `RemotingServer` on `bindAddress:listenPort` serves the handlers of
  `NamesrvProcessor`; a connection that closes drops the broker registered over it at once
  (queued for a clean-up task that drops one broker per turn of the event loop, so that
  hundreds of brokers disconnecting together do not hold up the requests meanwhile);
* a scan task drops brokers that have not registered for `brokerChannelExpiredTime` ms,
  every `scanNotActiveBrokerInterval` ms (Apache hard-codes 120 s and 10 s; both are
  rmq-only keys so tests and small set-ups can shorten them, and UPDATE_NAMESRV_CONFIG
  changes take effect at the next scan), also one broker per turn of the loop;
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
from collections import deque
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
        self._cleanup_task: asyncio.Task[None] | None = None
        self._closed_connections: deque[Connection] = deque()
        self._connections_to_clean = asyncio.Event()
        self._stopping = False

    @property
    def port(self) -> int:
        return self.server.port

    async def start(self) -> None:
        self.kv.load()
        await self.server.start()
        loop = asyncio.get_running_loop()
        self._scan_task = loop.create_task(self._scan_forever())
        self._cleanup_task = loop.create_task(self._clean_up_forever())
        log.info(
            "The Name Server boot success. serializeType=JSON, listening on %s:%d",
            self.configs.server.bind_address,
            self.port,
        )

    async def stop(self) -> None:
        self._stopping = True
        for task in (self._scan_task, self._cleanup_task):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._scan_task = self._cleanup_task = None
        await self.server.close()
        self.kv.flush()
        log.info("the name server stopped")

    async def scan_not_active_brokers(self) -> int:
        """Drop expired brokers, one per turn of the event loop, and close their
        connections; returns how many were dropped."""
        expired_millis = self.configs.namesrv.broker_channel_expired_time
        dropped = 0
        for broker_addr in self.routes.expired_broker_addrs(expired_millis):
            live = self.routes.drop_expired_broker(broker_addr, expired_millis)
            if live is None:
                continue
            log.warning("The broker channel expired, %s %dms", broker_addr, expired_millis)
            if isinstance(live.connection, Connection):
                live.connection.close()
            dropped += 1
            await asyncio.sleep(0)
        return dropped

    async def _scan_forever(self) -> None:
        while True:
            await asyncio.sleep(self.configs.namesrv.scan_not_active_broker_interval / 1000)
            await self.scan_not_active_brokers()

    def _connection_closed(self, connection: Connection) -> None:
        if not self._stopping:
            self._closed_connections.append(connection)
            self._connections_to_clean.set()

    async def _clean_up_forever(self) -> None:
        """Drop the broker of each closed connection, one per turn of the event loop."""
        while True:
            await self._connections_to_clean.wait()
            self._connections_to_clean.clear()
            while self._closed_connections:
                connection = self._closed_connections.popleft()
                broker_addr = self.routes.on_connection_closed(connection.remote_addr, connection)
                if broker_addr is not None:
                    log.info(
                        "the broker's channel destroyed, %s, clean its data structure at once",
                        broker_addr,
                    )
                await asyncio.sleep(0)


async def run_namesrv(
    configs: NamesrvConfigs, file_properties: Mapping[str, str] | None = None
) -> int:
    """Run a name server until SIGTERM or Ctrl-C; returns the process exit code."""
    return await run_until_signal(NamesrvController(configs, file_properties), log)
