"""Exceptions of the remoting layer.

`RemotingProtocolError` means the bytes on a connection are not a valid frame: the
connection that carried them is closed.  `HeaderError` means a well-formed request carries a
custom header rmq cannot use (a required field missing, a number that does not parse): the
server answers that request with SYSTEM_ERROR and the header error's text as remark, and the
connection stays open.  The client-side errors say why an invocation produced no response;
`PlainConnectionRefused` is the connection error of a plain connection the peer ended without
ever answering (a server in TLS enforcing mode, to a plain client).
`ListenError` means a server could not bind its address; its text names the address and,
for a broker's second server, which port that is.
"""

from __future__ import annotations

import os
import socket


class RemotingError(Exception):
    """Base class of every error raised by rmq.remoting."""


class RemotingProtocolError(RemotingError):
    """A frame that cannot be decoded; the connection it came from is unusable."""


class HeaderError(RemotingError):
    """A request's extFields do not fit the custom header its processor needs."""


class RemotingConnectError(RemotingError):
    """Connecting failed, or the connection closed before the response arrived."""


class PlainConnectionRefused(RemotingConnectError):
    """A plain (not TLS) connection the peer ended without an answer, with requests still
    waiting for theirs: it closed before sending a single byte, or (`tls_record`) its first
    bytes were a TLS record, which no remoting frame starts with.  A server in TLS enforcing
    mode does the one (rmq's and Apache's close a plain client's connection after its first
    bytes) or the other.  ``addr`` is the peer."""

    def __init__(self, message: str, addr: str, *, tls_record: bool = False) -> None:
        super().__init__(message)
        self.addr = addr
        self.tls_record = tls_record


class RemotingTimeoutError(RemotingError):
    """No response arrived within the invocation's timeout."""


class ListenError(RemotingError, OSError):
    """A server could not listen on its address: the port is taken, the address is not one of
    this host's, the port needs privileges.  ``str()`` is one line naming the address."""

    def __init__(self, address: str, reason: str, errno: int | None, role: str | None) -> None:
        OSError.__init__(self, errno, reason)
        self.address = address
        self.reason = reason
        self.role = role

    @classmethod
    def of_bind_failure(cls, address: str, exc: OSError, role: str | None) -> ListenError:
        """The error of a failed bind: the system's words for why ("Address already in use"),
        without the address the event loop wraps around them."""
        if isinstance(exc, socket.gaierror) or not exc.errno or exc.errno < 0:
            reason = exc.strerror or str(exc)
        else:
            reason = os.strerror(exc.errno)
        return cls(address, reason, exc.errno, role)

    def __str__(self) -> str:
        where = self.address if self.role is None else f"{self.address}, {self.role}"
        return f"cannot listen on {where}: {self.reason}"
