"""The remoting server: accepts connections and serves requests through a processor table.

The name server and the broker are each a `RemotingServer` with handlers registered per
request code:

    server = RemotingServer("0.0.0.0", 9876)
    server.register(RequestCode.GET_ROUTEINFO_BY_TOPIC, get_route_info)
    server.on_connection_closed(drop_broker_of_channel)
    async with server:
        await stopped.wait()

A handler is `async def handler(connection, request) -> RemotingCommand | None`; what it
returns is written back as the response (None: no response).  The rules for unknown codes,
failing handlers and oneway requests, malformed frames and idle connections are those of
`connection.py`; the server only adds the listening socket, the set of open connections
and the callbacks to run when one closes.  `limits` are its flow limits (`limits.py`): a
server stops reading a connection whose peer leaves its responses unread.  Port 0 picks a
free port; `port` tells which.  A port that cannot be bound makes `start` raise
`ListenError`, whose text names the address and the server's `role` when it has one (a
broker runs a second server on its fast port).  A server listens in the process's TLS mode
(`rmq.remoting.tls.configure_server`): plain by default, else through `tlsserver.py`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from rmq.remoting.connection import Connection, RemotingEndpoint, address_text, log
from rmq.remoting.errors import ListenError
from rmq.remoting.frame import DEFAULT_MAX_FRAME_SIZE
from rmq.remoting.limits import DEFAULT_LIMITS, FlowLimits
from rmq.remoting.tls import server_tls
from rmq.remoting.tlsserver import SniffingServer, start_sniffing_server

# Netty's serverChannelMaxIdleTimeSeconds.
DEFAULT_IDLE_TIMEOUT = 120.0

ConnectionCallback = Callable[[Connection], None]


class RemotingServer(RemotingEndpoint):
    """Listens on `host`:`port` and serves every connection with the registered handlers;
    `role`, when given, says which of a process's servers this is in logs and errors."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        role: str | None = None,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
        close_grace: float = 1.0,
        limits: FlowLimits = DEFAULT_LIMITS,
    ) -> None:
        super().__init__(max_frame_size=max_frame_size, idle_timeout=idle_timeout, limits=limits)
        self.throttles_reading = True
        self.host = host
        self.role = role
        self._requested_port = port
        self._close_grace = close_grace
        self._server: asyncio.Server | SniffingServer | None = None
        self._connections: set[Connection] = set()
        self._close_callbacks: list[ConnectionCallback] = []

    @property
    def port(self) -> int:
        """The port the server listens on (the chosen one when it was created with port 0)."""
        if self._server is None:
            raise RuntimeError("the server is not started")
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    @property
    def connections(self) -> frozenset[Connection]:
        """The connections open right now."""
        return frozenset(self._connections)

    def on_connection_closed(self, callback: ConnectionCallback) -> None:
        """Run `callback(connection)` whenever a connection closes, for whatever reason."""
        self._close_callbacks.append(callback)

    async def start(self) -> None:
        """Listen; raises `ListenError` when the address cannot be bound."""
        loop = asyncio.get_running_loop()
        tls = server_tls()  # the process's TLS mode (rmq.remoting.tls); plain by default
        try:
            if tls.context is None:
                self._server = await loop.create_server(
                    self._accept, self.host, self._requested_port, reuse_address=True, backlog=1024
                )
            else:
                self._server = await start_sniffing_server(
                    self._accept,
                    self.host,
                    self._requested_port,
                    tls=tls,
                    backlog=1024,
                )
        except OSError as exc:
            address = address_text((self.host, self._requested_port))
            raise ListenError.of_bind_failure(address, exc, self.role) from exc
        role = f" ({self.role})" if self.role is not None else ""
        mode = f", TLS {tls.mode.value} mode" if tls.context is not None else ""
        log.info("remoting server%s listening on %s:%d%s", role, self.host, self.port, mode)

    async def close(self) -> None:
        """Stop listening, cancel running handlers and close every connection."""
        if self._server is None:
            return
        server, self._server = self._server, None
        server.close()
        await self._shut_down(list(self._connections), self._close_grace)
        await server.wait_closed()

    async def __aenter__(self) -> RemotingServer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def _accept(self) -> Connection:
        connection = Connection(self)
        self._connections.add(connection)
        return connection

    def _connection_closed(self, connection: Connection) -> None:
        self._connections.discard(connection)
        for callback in self._close_callbacks:
            try:
                callback(connection)
            except Exception:
                log.exception("connection-closed callback failed for %s", connection)
