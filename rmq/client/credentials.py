"""ACL session credentials and the hook that signs a client's requests with them.

Apache's client signs when it is given an `AclClientRPCHook(new SessionCredentials(ak, sk))`:
every request it sends carries `AccessKey`, `SecurityToken` when the credentials have one, and
the `Signature` over the request (`rmq.remoting.aclsign`).  rmq's client does the same through
the `rpc_hook` of its `RemotingClient`: `remoting_client(credentials)` is the one place a
client-side connection pool is made, for the client instance and the admin client alike, and
a client without credentials has no hook at all, so unsigned clients pay nothing.

Credentials come from the caller (`ClientInstance(..., credentials=...)`,
`AdminClient(..., credentials=...)`) or, when it gives none, from the process default
(`use_default_credentials`): the command line resolves `--access-key` / `--secret-key` once
per command and sets it, so every producer, consumer and admin client the command creates
signs.  The secret key never appears in `repr` (logs, tracebacks of `--debug`).

`use_tls(enabled, ca_file)` is the client side of `rmq.remoting.tls` for callers that do not
import the remoting layer (the Spark data source): clients created afterwards connect over
TLS, or in plain.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from rmq.remoting import tls
from rmq.remoting.aclsign import sign_request
from rmq.remoting.client import RemotingClient
from rmq.remoting.command import RemotingCommand

MASK = "********"
"""What is shown instead of a secret."""


@dataclass(frozen=True, slots=True)
class SessionCredentials:
    """Apache's `SessionCredentials`: access key, secret key, optional security token."""

    access_key: str
    secret_key: str = field(repr=False)
    security_token: str | None = field(default=None, repr=False)

    def sign(self, request: RemotingCommand) -> None:
        """Add AccessKey (SecurityToken) and Signature to `request` (the RPC hook)."""
        sign_request(request, self.access_key, self.secret_key, self.security_token)


_default: SessionCredentials | None = None


def use_default_credentials(credentials: SessionCredentials | None) -> None:
    """Make `credentials` what clients created without any sign with (None: none)."""
    global _default
    _default = credentials


def default_credentials() -> SessionCredentials | None:
    """The process default set by `use_default_credentials`."""
    return _default


def rpc_hook(
    credentials: SessionCredentials | None,
) -> Callable[[RemotingCommand], None] | None:
    """The hook signing with `credentials`, else with the default ones; None without either."""
    chosen = credentials if credentials is not None else _default
    return None if chosen is None else chosen.sign


def remoting_client(credentials: SessionCredentials | None = None) -> RemotingClient:
    """A `RemotingClient` whose requests are signed with `credentials` (or the default)."""
    return RemotingClient(rpc_hook=rpc_hook(credentials))


def use_tls(enabled: bool, ca_file: str | None = None) -> None:
    """Make clients created from now on connect over TLS when `enabled` or given `ca_file`
    (then only to servers whose chain that PEM file vouches for; else to any, as Apache's
    client does without `tls.client.authServer`), else in plain."""
    if ca_file:
        tls.use_client_tls(tls.verifying_client_context(ca_file))
    elif enabled:
        tls.use_client_tls(tls.client_context(tls.TlsSettings()))
    else:
        tls.use_client_tls(None)
