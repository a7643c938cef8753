"""Connections and request dispatch, shared by the remoting server and client.

Both ends of a RocketMQ connection do the same things: split the byte stream into frames,
complete the caller's future when a response arrives (matched by opaque), and serve
requests the peer sends (a broker asks a consumer for its running info, a client answers
CHECK_TRANSACTION_STATE).  `Connection` is that one asyncio protocol; `RemotingEndpoint`
holds what a server or a client adds around its connections: the processor table, the
running handler tasks and the connection options.

Serving a request: the handler registered for its code (or the default handler) runs as its
own task, so a slow handler (a long-polling pull) never holds up the connection, and
responses leave in whatever order handlers finish.  Rules, after Apache's
`NettyRemotingAbstract` with one deliberate difference:

* no handler for the code -> REQUEST_CODE_NOT_SUPPORTED with remark
  " request type <code> not supported", oneway or not (Apache's name server stays silent;
  rmq always answers, so a client gets an error instead of a timeout);
* the handler raises -> SYSTEM_ERROR, suppressed for oneway requests.  The remark says what
  was wrong with the request when the request was at fault (a `HeaderError`'s own text, a
  `BodyError` as `BodyError: <text>`), and is otherwise `error_remark`'s generic line naming
  the request and the exception's type: never a message, a source file or a traceback of the
  server, which go to its log (WARNING, with the traceback);
* the handler returns None, or the request was oneway -> nothing is written.

A response goes out with the request's opaque and in the request's serialize type (the C++
client reads only JSON, and sends only JSON).

A connection that closes fails the requests still waiting with `RemotingConnectError`; when
it was plain and the peer never answered, with `PlainConnectionRefused`: the peer closed it
before sending a byte (what a server in TLS enforcing mode does to a plain client), or the
first bytes it sent back were a TLS record (`_TLS_RECORD`, which no frame starts with: its
length would be over 350 MB), and then this side closes it at once.

A frame that cannot be decoded, or is longer than the maximum frame size, is logged at
WARNING with the peer and the reason, and only that connection is closed.  A connection
without traffic in either direction for `idle_timeout` seconds is closed (Netty's all-idle
rule).  Writes honour the transport's flow control: a writer waits while the peer is not
reading, and the connection stops reading new requests meanwhile.  That and the other limits
(requests in progress, incomplete frames) are `limits.py`'s.  Every request and response sent
or received is logged at DEBUG on "rmq.remoting".

The first frame written to a connection in a turn of the event loop goes out at once (the
peer starts on it while this side works on); the frames written after it in the same turn
leave together at the end of the turn (one `writelines`, one system call for many responses
or pipelined requests).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import typing
from collections.abc import Awaitable, Callable

from rmq.common.timeutil import format_seconds
from rmq.remoting.bodies.codec import BodyError
from rmq.remoting.codes import ResponseCode
from rmq.remoting.command import Buffer, RemotingCommand, create_response, not_supported_response
from rmq.remoting.errors import (
    HeaderError,
    PlainConnectionRefused,
    RemotingConnectError,
    RemotingProtocolError,
    RemotingTimeoutError,
)
from rmq.remoting.frame import (
    FrameSplitter,
    decode_frame,
    encode_header_parts,
)
from rmq.remoting.limits import DEFAULT_LIMITS, OVERLOAD_REMARK, FlowLimits, PartialFrameBudget

log = logging.getLogger("rmq.remoting")

Handler = Callable[["Connection", RemotingCommand], Awaitable[RemotingCommand | None]]

# Frames queued in one turn of the event loop are written at its end; a queue holding more
# than this many bytes is written at once.
_OUTGOING_LIMIT = 256 * 1024

_connection_ids = itertools.count(1)

# The first two bytes of a TLS alert or handshake record (content type 21 or 22, major version
# 3): a TLS server's answer to a plain client.
_TLS_RECORD = (b"\x15\x03", b"\x16\x03")


def address_text(address: tuple[str, int]) -> str:
    """`address` as "host:port" ("[host]:port" for an IPv6 host)."""
    host, port = address
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _answering(request: RemotingCommand, response: RemotingCommand) -> None:
    """Make `response` the answer to `request`: its opaque, flag and serialize type."""
    response.opaque = request.opaque
    response.mark_response()
    response.serialize_type = request.serialize_type


def error_remark(request: RemotingCommand, exc: BaseException) -> str:
    """The remark of the SYSTEM_ERROR answering `request` whose handler raised `exc`.

    A request the server cannot read (a header or body that does not decode) learns why; any
    other failure is the server's own, and its remark names only the request and the
    exception's type: the message and traceback may name the server's files, so they stay in
    its log."""
    if isinstance(exc, HeaderError):
        return str(exc)
    if isinstance(exc, BodyError):
        return f"BodyError: {exc}"
    kind = type(exc).__name__
    return f"{request.code_name} failed: internal server error ({kind}); see the server's log"


class RemotingEndpoint:
    """What a server or client keeps around its connections: the processor table that serves
    incoming requests, the handler tasks still running and the connection options."""

    def __init__(
        self,
        *,
        max_frame_size: int,
        idle_timeout: float | None,
        limits: FlowLimits = DEFAULT_LIMITS,
    ) -> None:
        self.max_frame_size = max_frame_size
        self.idle_timeout = idle_timeout
        self.limits = limits
        # A server stops reading a connection whose peer does not read its responses or has
        # too many requests in progress; a client never does (both ends waiting for the
        # other to read would be a deadlock).
        self.throttles_reading = False
        self.partial_frames = PartialFrameBudget(limits.partial_frame_memory)
        self._processors: dict[int, Handler] = {}
        self._default_processor: Handler | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def register(self, code: int, handler: Handler) -> None:
        """Serve requests with `code` by `handler` (replaces an earlier registration)."""
        self._processors[code] = handler

    def register_default(self, handler: Handler) -> None:
        """Serve every request code that has no handler of its own by `handler`."""
        self._default_processor = handler

    def _connection_closed(self, connection: Connection) -> None:
        """Called once for every connection when it closes."""

    def _dispatch(self, connection: Connection, request: RemotingCommand) -> None:
        total = self.limits.max_requests_in_progress
        if total is not None and len(self._tasks) >= total:
            connection.reject_busy(request, len(self._tasks))
            return
        connection.request_started()
        task = connection._loop.create_task(self._serve(connection, request))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(connection.request_done)

    async def _serve(self, connection: Connection, request: RemotingCommand) -> None:
        handler = self._processors.get(request.code, self._default_processor)
        if handler is None:
            log.warning("%s sent %s, which no processor serves", connection, request.code_name)
            response: RemotingCommand | None = not_supported_response(request)
        else:
            try:
                response = await handler(connection, request)
            except (HeaderError, BodyError) as exc:
                log.warning(
                    "%s sent %s that does not decode: %s", connection, request.code_name, exc
                )
                response = create_response(ResponseCode.SYSTEM_ERROR, error_remark(request, exc))
            except Exception as exc:
                log.warning(
                    "processing %s from %s failed: %s: %s",
                    request.code_name,
                    connection,
                    type(exc).__name__,
                    exc,
                    exc_info=True,
                )
                response = create_response(ResponseCode.SYSTEM_ERROR, error_remark(request, exc))
            if request.is_oneway:
                return
        if response is not None:
            await connection.send_response(request, response)

    async def _shut_down(self, connections: list[Connection], grace: float) -> None:
        """Cancel the running handlers, then close `connections`: each gets `grace` seconds
        to send what is already written before it is aborted."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for connection in connections:
            connection.close()
        waiting = asyncio.gather(*(connection.wait_closed() for connection in connections))
        try:
            await asyncio.wait_for(waiting, grace)
        except TimeoutError:
            for connection in connections:
                connection.abort()
            await asyncio.gather(*(connection.wait_closed() for connection in connections))


class Connection(asyncio.Protocol):
    """One TCP connection speaking the remoting protocol, on either side.

    `attributes` is free for processors (a broker keeps the client id of a channel there).
    """

    def __init__(self, endpoint: RemotingEndpoint) -> None:
        self.id = next(_connection_ids)
        self.attributes: dict[str, object] = {}
        self.remote_address: tuple[str, int] = ("", 0)
        self.local_address: tuple[str, int] = ("", 0)
        self._endpoint = endpoint
        self._loop = asyncio.get_running_loop()
        self._transport: asyncio.Transport | None = None
        self._splitter = FrameSplitter(endpoint.max_frame_size)
        self.requests_in_progress = 0
        self._busy_logged = False
        # Why this connection is not read now: "write" (unread responses), "requests" (too
        # many in progress); reading resumes when the set is empty again.
        self._read_blockers: set[str] = set()
        self._pending: dict[int, asyncio.Future[RemotingCommand]] = {}
        self._writable: asyncio.Future[None] | None = None  # set while the transport is paused
        # Frames written in this turn of the event loop after its first, sent together by
        # `_flush_outgoing` at its end; `_turn_open` once the turn's first frame is written.
        self._outgoing: list[Buffer] = []
        self._outgoing_bytes = 0
        self._turn_open = False
        self._closed: asyncio.Future[None] = self._loop.create_future()
        self._tls = False
        self._received_any = False
        self._tls_record = False  # a plain request was answered with a TLS record
        self._last_activity = self._loop.time()
        self._idle_timer: asyncio.TimerHandle | None = None

    def __repr__(self) -> str:
        return f"{self.remote_addr}#{self.id}"

    @property
    def remote_addr(self) -> str:
        """The peer as "host:port"."""
        return address_text(self.remote_address)

    @property
    def local_addr(self) -> str:
        """This end as "host:port"."""
        return address_text(self.local_address)

    @property
    def closed(self) -> bool:
        return self._closed.done()

    # --- asyncio.Protocol ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport (uvloop's do not derive from asyncio.Transport).
        self._transport = typing.cast(asyncio.Transport, transport)
        self.remote_address = transport.get_extra_info("peername")[:2]
        self.local_address = transport.get_extra_info("sockname")[:2]
        self._tls = transport.get_extra_info("sslcontext") is not None
        self._last_activity = self._loop.time()
        limits = self._endpoint.limits
        self._transport.set_write_buffer_limits(limits.write_buffer_high, limits.write_buffer_low)
        if self._endpoint.idle_timeout is not None:
            self._idle_timer = self._loop.call_later(self._endpoint.idle_timeout, self._check_idle)
        log.debug("%s connected (local %s)", self, self.local_addr)

    def data_received(self, data: bytes) -> None:
        self._last_activity = self._loop.time()
        if not (self._received_any or self._tls) and self._pending and data[:2] in _TLS_RECORD:
            log.debug("%s answered a plain request with TLS: closing", self)
            self._tls_record = True
            self.abort()
            return
        self._received_any = True
        try:
            for frame in self._splitter.feed(data):
                if self._transport is None or self._transport.is_closing():
                    return
                self._command_received(decode_frame(frame))
        except RemotingProtocolError as exc:
            log.warning("closing %s: malformed frame: %s", self, exc)
            self.close()
        self._endpoint.partial_frames.update(self, self._splitter.pending_bytes)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._idle_timer is not None:
            self._idle_timer.cancel()
        error = self._closed_error(f"connection to {self.remote_addr} closed")
        for future in self._pending.values():
            if not future.done():
                future.set_exception(error)
        self._pending.clear()
        self._splitter.discard()
        self._endpoint.partial_frames.update(self, 0)
        self.resume_writing()
        self._closed.set_result(None)
        log.debug("%s closed%s", self, f": {exc}" if exc else "")
        self._endpoint._connection_closed(self)

    def _closed_error(self, message: str) -> RemotingConnectError:
        """The error of a request this closed connection leaves unanswered."""
        if self._tls or self._received_any:
            return RemotingConnectError(message)
        return PlainConnectionRefused(message, self.remote_addr, tls_record=self._tls_record)

    def pause_writing(self) -> None:
        if self._writable is None:
            self._writable = self._loop.create_future()
        if self._endpoint.throttles_reading:
            self._block_reading("write")

    def resume_writing(self) -> None:
        if self._writable is not None:
            self._writable.set_result(None)
            self._writable = None
        self._unblock_reading("write")

    # --- flow control -------------------------------------------------------------------------

    def _block_reading(self, reason: str) -> None:
        if not self._read_blockers and self._transport is not None:
            self._transport.pause_reading()
        self._read_blockers.add(reason)

    def _unblock_reading(self, reason: str) -> None:
        if reason not in self._read_blockers:
            return
        self._read_blockers.discard(reason)
        transport = self._transport
        if not self._read_blockers and transport is not None and not transport.is_closing():
            transport.resume_reading()

    def request_started(self) -> None:
        """A request this connection sent is being served; past the limit of requests in
        progress per connection, the connection is not read until one ends."""
        self.requests_in_progress += 1
        limit = self._endpoint.limits.max_requests_per_connection
        if (
            limit is not None
            and self.requests_in_progress >= limit
            and self._endpoint.throttles_reading
        ):
            if "requests" not in self._read_blockers:
                log.debug("%s: %d requests in progress, not reading", self, limit)
            self._block_reading("requests")

    def request_done(self, _task: object = None) -> None:
        """A request this connection sent has been served (its handler task ended)."""
        self.requests_in_progress -= 1
        limit = self._endpoint.limits.max_requests_per_connection
        if limit is None or self.requests_in_progress < limit:
            self._unblock_reading("requests")
        if self.requests_in_progress == 0:
            self._busy_logged = False

    def reject_busy(self, request: RemotingCommand, in_progress: int) -> None:
        """Answer `request` SYSTEM_BUSY at once, without running its handler (oneway: drop it).

        Written even while the peer is not reading: a server reads nothing more from it until
        its write buffer drains, so these answers are bounded by one read's requests."""
        if not self._busy_logged:
            self._busy_logged = True
            log.warning(
                "%s: %d requests in progress on this server (%d from here); answering SYSTEM_BUSY",
                self,
                in_progress,
                self.requests_in_progress,
            )
        if request.is_oneway or self._transport is None or self._transport.is_closing():
            return
        response = create_response(ResponseCode.SYSTEM_BUSY, OVERLOAD_REMARK)
        _answering(request, response)
        header = encode_header_parts(response, 0)
        self._send_frame(self._transport, [header], len(header))

    def abort_for(self, reason: str) -> None:
        """Close at once because a limit was passed; `reason` is logged."""
        log.warning("closing %s: %s", self, reason)
        self._splitter.discard()
        self.abort()

    # --- sending ------------------------------------------------------------------------------

    async def send_request(self, request: RemotingCommand, timeout: float) -> RemotingCommand:
        """Send `request` and wait up to `timeout` seconds for its response.

        Raises RemotingTimeoutError, or RemotingConnectError when the connection closes first.
        """
        opaque = request.opaque
        if opaque in self._pending:
            raise ValueError(f"a request with opaque {opaque} is already waiting on {self}")
        future: asyncio.Future[RemotingCommand] = self._loop.create_future()
        self._pending[opaque] = future
        timer = self._loop.call_later(timeout, self._expire, future, request, timeout)
        try:
            await self._write(request)
            return await future
        finally:
            timer.cancel()
            if self._pending.get(opaque) is future:
                del self._pending[opaque]

    async def send_oneway(self, request: RemotingCommand) -> None:
        """Send `request` marked oneway; no response is expected."""
        request.mark_oneway()
        await self._write(request)

    def send_frame_nowait(self, frame: bytes) -> bool:
        """Write an encoded oneway request (:func:`~rmq.remoting.frame.encode_frame` of a
        command marked oneway) at once, so that one frame can go to many connections; False,
        writing nothing, while the peer leaves earlier frames unread or the connection is
        closing (the caller then uses :meth:`send_oneway`)."""
        transport = self._transport
        if self._writable is not None or transport is None or transport.is_closing():
            return False
        self._send_frame(transport, [frame], len(frame))
        return True

    async def send_response(self, request: RemotingCommand, response: RemotingCommand) -> None:
        """Answer `request`: `response` gets its opaque and serialize type.  A response for a
        connection that has closed meanwhile is dropped."""
        _answering(request, response)
        try:
            await self._write(response)
        except RemotingConnectError:
            log.debug("%s closed before the response to %s", self, request.code_name)

    def close(self) -> None:
        """Close after the data already written has been sent."""
        if self._transport is not None:
            self._flush_outgoing()
            self._transport.close()

    def abort(self) -> None:
        """Close at once, dropping unsent data."""
        if self._transport is not None:
            self._transport.abort()

    async def wait_closed(self) -> None:
        await asyncio.shield(self._closed)

    async def _write(self, command: RemotingCommand) -> None:
        while self._writable is not None:
            await asyncio.shield(self._writable)
        transport = self._transport
        if transport is None or transport.is_closing():
            raise self._closed_error(f"connection to {self.remote_addr} is closed")
        body_length = command.body_length
        header = encode_header_parts(command, body_length)
        buffers: list[Buffer] = [header]
        if command.body is not None:
            buffers.append(command.body)
        buffers += command.body_segments
        self._send_frame(transport, buffers, len(header) + body_length)
        if log.isEnabledFor(logging.DEBUG):
            self._log_command("send", "to", command)

    def _send_frame(self, transport: asyncio.Transport, buffers: list[Buffer], size: int) -> None:
        """Write one frame's buffers (`size` bytes in all): the first frame of a turn of the
        event loop at once, so that the peer starts on it, later ones at the end of the turn."""
        if self._turn_open:
            self._outgoing += buffers
            self._outgoing_bytes += size
            if self._outgoing_bytes > _OUTGOING_LIMIT:
                self._flush_outgoing()
            return
        self._turn_open = True
        self._loop.call_soon(self._end_turn)
        transport.writelines(buffers)
        self._last_activity = self._loop.time()

    def _end_turn(self) -> None:
        self._turn_open = False
        self._flush_outgoing()

    def _flush_outgoing(self) -> None:
        """Write the queued frames in one call (a no-op when nothing is queued)."""
        if not self._outgoing:
            return
        buffers = self._outgoing
        self._outgoing = []
        self._outgoing_bytes = 0
        transport = self._transport
        if transport is None or transport.is_closing():
            return
        transport.writelines(buffers)
        self._last_activity = self._loop.time()

    # --- receiving ----------------------------------------------------------------------------

    def _command_received(self, command: RemotingCommand) -> None:
        if log.isEnabledFor(logging.DEBUG):
            self._log_command("recv", "from", command)
        if not command.is_response:
            self._endpoint._dispatch(self, command)
            return
        future = self._pending.pop(command.opaque, None)
        if future is None or future.done():
            log.warning("%s sent a response nobody waits for: %s", self, command)
        else:
            future.set_result(command)

    def _expire(
        self, future: asyncio.Future[RemotingCommand], request: RemotingCommand, timeout: float
    ) -> None:
        if not future.done():
            future.set_exception(
                RemotingTimeoutError(
                    f"no response to {request.code_name} opaque={request.opaque} "
                    f"from {self.remote_addr} within {format_seconds(timeout)}"
                )
            )

    def _check_idle(self) -> None:
        assert self._endpoint.idle_timeout is not None
        idle = self._loop.time() - self._last_activity
        if idle >= self._endpoint.idle_timeout:
            log.info("closing %s: idle for %.1fs", self, idle)
            self.close()
        else:
            remaining = self._endpoint.idle_timeout - idle
            self._idle_timer = self._loop.call_later(remaining, self._check_idle)

    def _log_command(self, verb: str, preposition: str, command: RemotingCommand) -> None:
        kind = "response" if command.is_response else "request"
        log.debug(
            "%s %s %s opaque=%d flag=%d %s %s remark=%r",
            verb,
            kind,
            command.code_name,
            command.opaque,
            command.flag,
            preposition,
            self,
            command.remark,
        )
