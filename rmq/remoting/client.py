"""The remoting client: a pool of connections, one per "host:port", and request/response.

    async with RemotingClient() as client:
        response = await client.invoke("127.0.0.1:9876", request, timeout=3.0)

Connections are opened on first use (within `connect_timeout`), shared by every request to
the same address, and dropped from the pool when they close, so the next request to that
address connects again.  `invoke` waits for the response matched by opaque and raises
`RemotingTimeoutError` after `timeout` seconds (connecting included) or
`RemotingConnectError` when connecting fails or the connection closes first;
`invoke_oneway` only writes.  Requests the server sends to the client (a broker asking a
consumer for its running info, NOTIFY_CONSUMER_IDS_CHANGED, CHECK_TRANSACTION_STATE) are
served by the handlers registered with `register`, exactly as the server serves its own.
Timeouts are in seconds.

`rpc_hook`, when given, is called with every request this client sends (`invoke`,
`invoke_oneway`, and `before_request` for a request written on a connection directly) just
before it is written: Java's `RPCHook.doBeforeRequest`, where a client with ACL credentials
signs (`rmq.client.credentials`).  Without one nothing is done.  `ssl_context` makes every
connection TLS (Apache's useTLS); by default it is the process's (`rmq.remoting.tls`).
"""

from __future__ import annotations

import asyncio
import functools
import ssl
from collections.abc import Callable
from typing import Literal

from rmq.common.timeutil import format_seconds
from rmq.remoting.command import RemotingCommand
from rmq.remoting.connection import Connection, RemotingEndpoint
from rmq.remoting.errors import RemotingConnectError, RemotingTimeoutError
from rmq.remoting.frame import DEFAULT_MAX_FRAME_SIZE
from rmq.remoting.tls import default_client_context, tls_failure_text

# Java's NettyClientConfig.connectTimeoutMillis.
DEFAULT_CONNECT_TIMEOUT = 3.0


def split_address(addr: str) -> tuple[str, int]:
    """("host", port) of "host:port" (IPv6 hosts may be bracketed)."""
    host, _, port = addr.rpartition(":")
    if not host or not port.isdigit():
        raise RemotingConnectError(f"bad address {addr!r}, expected host:port")
    return host.strip("[]"), int(port)


class RemotingClient(RemotingEndpoint):
    """Sends requests to remoting servers over pooled connections."""

    def __init__(
        self,
        *,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        idle_timeout: float | None = None,
        close_grace: float = 1.0,
        rpc_hook: Callable[[RemotingCommand], None] | None = None,
        ssl_context: ssl.SSLContext | Literal["default"] | None = "default",
    ) -> None:
        super().__init__(max_frame_size=max_frame_size, idle_timeout=idle_timeout)
        self.connect_timeout = connect_timeout
        self.rpc_hook = rpc_hook
        self.ssl_context = default_client_context() if ssl_context == "default" else ssl_context
        self._close_grace = close_grace
        self._connections: dict[str, Connection] = {}
        self._connecting: dict[str, asyncio.Task[Connection]] = {}

    async def invoke(self, addr: str, request: RemotingCommand, timeout: float) -> RemotingCommand:
        """Send `request` to `addr` and return the response."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        connection = await self.connection(addr)
        remaining = deadline - loop.time()
        if remaining <= 0:
            raise RemotingTimeoutError(
                f"connecting to {addr} used up the {format_seconds(timeout)} timeout"
            )
        if self.rpc_hook is not None:
            self.rpc_hook(request)
        return await connection.send_request(request, remaining)

    async def invoke_oneway(self, addr: str, request: RemotingCommand) -> None:
        """Send `request` to `addr` as a oneway request."""
        connection = await self.connection(addr)
        if self.rpc_hook is not None:
            self.rpc_hook(request)
        await connection.send_oneway(request)

    def before_request(self, request: RemotingCommand) -> RemotingCommand:
        """`request` after the `rpc_hook`, for a request sent on a connection directly."""
        if self.rpc_hook is not None:
            self.rpc_hook(request)
        return request

    async def connection(self, addr: str) -> Connection:
        """The open connection to `addr`, connecting first if there is none."""
        connection = self._connections.get(addr)
        if connection is not None and not connection.closed:
            return connection
        task = self._connecting.get(addr)
        if task is None:
            task = asyncio.get_running_loop().create_task(self._connect(addr))
            self._connecting[addr] = task
            task.add_done_callback(functools.partial(self._connect_done, addr))
        return await asyncio.shield(task)

    async def close(self) -> None:
        """Close every connection and cancel the handlers still serving server requests."""
        for task in self._connecting.values():
            task.cancel()
        connections = list(self._connections.values())
        self._connections.clear()
        await self._shut_down(connections, self._close_grace)

    async def __aenter__(self) -> RemotingClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def _connect(self, addr: str) -> Connection:
        host, port = split_address(addr)
        loop = asyncio.get_running_loop()
        try:
            _, connection = await asyncio.wait_for(
                loop.create_connection(lambda: Connection(self), host, port, ssl=self.ssl_context),
                self.connect_timeout,
            )
        except (ssl.SSLError, ConnectionResetError) as exc:
            if self.ssl_context is None:
                raise RemotingConnectError(f"connect to {addr} failed: {exc}") from None
            raise RemotingConnectError(tls_failure_text(addr, exc)) from None
        except TimeoutError:
            raise RemotingConnectError(
                f"connect to {addr} timed out after {format_seconds(self.connect_timeout)}"
            ) from None
        except OSError as exc:
            raise RemotingConnectError(f"connect to {addr} failed: {exc}") from None
        self._connections[addr] = connection
        return connection

    def _connect_done(self, addr: str, task: asyncio.Task[Connection]) -> None:
        del self._connecting[addr]
        if not task.cancelled():
            task.exception()  # waiters see it; this keeps asyncio from reporting it again

    def _connection_closed(self, connection: Connection) -> None:
        for addr, pooled in list(self._connections.items()):
            if pooled is connection:
                del self._connections[addr]
