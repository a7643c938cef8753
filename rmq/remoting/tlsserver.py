"""The listening socket of a server in TLS permissive or enforcing mode.

Apache's `HandshakeHandler` looks at the first byte a client sends: 0x16 (a TLS handshake
record) starts TLS, anything else is a plain remoting frame.  Permissive mode takes both;
enforcing mode closes a plain connection (and disabled mode, which never gets here, a TLS one:
its first frame is far beyond the maximum frame size).

`SniffingServer` does the same without reading a byte it would have to give back: it accepts
each connection itself, waits until the socket is readable, peeks at the first byte
(`MSG_PEEK`) and only then hands the socket to asyncio (`connect_accepted_socket`), with the
SSL context for a TLS client or without for a plain one.  After that moment the connection is
an ordinary asyncio transport: the plain path costs one peek per connection and nothing per
message.  A server in disabled mode does not use this class at all.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable

from rmq.remoting.tls import HANDSHAKE_BYTE, ServerTls, TlsMode

log = logging.getLogger("rmq.remoting")

# How long a new connection may stay silent before its first byte; then the TLS handshake's
# own limit (asyncio's default is 60 s).
_FIRST_BYTE_TIMEOUT = 120.0
_HANDSHAKE_TIMEOUT = 30.0


class SniffingServer:
    """Listens on one socket and serves each connection in plain or TLS after its first byte.

    It has the part of `asyncio.Server` a `RemotingServer` uses: `sockets`, `close()`,
    `wait_closed()`."""

    def __init__(
        self,
        sock: socket.socket,
        protocol_factory: Callable[[], asyncio.Protocol],
        tls: ServerTls,
    ) -> None:
        self._sock = sock
        self._factory = protocol_factory
        self._mode = tls.mode
        self._tls = tls
        self._loop = asyncio.get_running_loop()
        self._tasks: set[asyncio.Task[None]] = set()
        self._accepting = self._loop.create_task(self._accept_forever())

    @property
    def sockets(self) -> tuple[socket.socket, ...]:
        return (self._sock,)

    def close(self) -> None:
        """Stop accepting and drop the connections whose first byte has not come yet."""
        self._accepting.cancel()
        for task in self._tasks:
            task.cancel()
        self._sock.close()

    async def wait_closed(self) -> None:
        await asyncio.gather(self._accepting, *self._tasks, return_exceptions=True)

    async def _accept_forever(self) -> None:
        while True:
            try:
                conn, peer = await self._loop.sock_accept(self._sock)
            except OSError as exc:  # out of file descriptors, ...: keep serving the others
                log.warning("accept failed: %s", exc)
                await asyncio.sleep(0.1)
                continue
            conn.setblocking(False)
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            task = self._loop.create_task(self._serve(conn, peer))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _serve(self, conn: socket.socket, peer: object) -> None:
        try:
            first = await asyncio.wait_for(_first_byte_of(self._loop, conn), _FIRST_BYTE_TIMEOUT)
        except (OSError, TimeoutError):
            conn.close()
            return
        except asyncio.CancelledError:
            conn.close()
            raise
        if not first:  # closed before sending anything
            conn.close()
            return
        if first[0] != HANDSHAKE_BYTE:
            if self._mode is TlsMode.ENFORCING:
                log.warning(
                    "closing the plain connection of %s: this server runs in TLS enforcing mode",
                    _peer_text(peer),
                )
                _drain_and_close(conn)
                return
            try:
                await self._loop.connect_accepted_socket(self._factory, conn)
            except OSError as exc:
                log.warning("cannot serve %s: %s", _peer_text(peer), exc)
                conn.close()
            return
        await self._start_tls(conn, peer)

    async def _start_tls(self, conn: socket.socket, peer: object) -> None:
        created: list[asyncio.Protocol] = []

        def factory() -> asyncio.Protocol:
            protocol = self._factory()
            created.append(protocol)
            return protocol

        try:
            await self._loop.connect_accepted_socket(
                factory,
                conn,
                ssl=self._tls.current_context(),
                ssl_handshake_timeout=_HANDSHAKE_TIMEOUT,
            )
        except (OSError, TimeoutError, ConnectionError) as exc:
            log.warning("TLS handshake with %s failed: %s", _peer_text(peer), exc)
            conn.close()
            # The protocol was made but never connected: let it know it is finished.
            for protocol in created:
                protocol.connection_lost(exc)


async def _first_byte_of(loop: asyncio.AbstractEventLoop, conn: socket.socket) -> bytes:
    ready: asyncio.Future[bytes] = loop.create_future()
    fd = conn.fileno()

    def readable() -> None:
        if ready.done():
            return
        try:
            ready.set_result(conn.recv(1, socket.MSG_PEEK))
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            ready.set_exception(exc)

    loop.add_reader(fd, readable)
    try:
        return await ready
    finally:
        loop.remove_reader(fd)


def _drain_and_close(conn: socket.socket) -> None:
    """Close after reading what the peer sent, as Netty does: a socket closed with unread
    data resets the connection, which a Java client takes for a failed write rather than a
    request left unanswered."""
    try:
        while conn.recv(65536):
            pass
    except OSError:  # nothing more to read now (BlockingIOError), or already reset
        pass
    conn.close()


def _peer_text(peer: object) -> str:
    if isinstance(peer, tuple) and len(peer) >= 2:
        host, port = peer[0], peer[1]
        return f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"
    return str(peer)


async def start_sniffing_server(
    protocol_factory: Callable[[], asyncio.Protocol],
    host: str,
    port: int,
    *,
    tls: ServerTls,
    backlog: int,
) -> SniffingServer:
    """Bind `host`:`port` (OSError when it cannot) and serve it as `tls` says."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(
        host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )
    if not infos:
        raise OSError(f"cannot resolve {host!r}")
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(backlog)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return SniffingServer(sock, protocol_factory, tls)
