"""How the ``rocketmq`` source and sink reach a cluster that wants more than a plain
connection: ACL credentials and TLS, from the options of the read or write.

Options (all optional):

* ``accessKey``, ``secretKey`` (both or neither), ``securityToken``: requests are signed as
  Apache's ``AclClientRPCHook`` signs them (:mod:`rmq.client.credentials`);
* ``tls`` (``true`` / ``false``): connect over TLS, accepting any broker certificate;
* ``tlsCa`` (a PEM file readable where the code runs, driver and executors): connect over
  TLS, only to brokers whose certificate chain it vouches for.

The secret stays out of sight: the option names ``secretKey`` and ``securityToken`` match
Spark's default ``spark.redaction.regex`` (``(?i)secret|password|token``), so Spark redacts
their values wherever it shows options (query plans, the SQL tab of its UI); rmq never logs
them and :class:`ClientAccess` leaves them out of its ``repr``.

:meth:`ClientAccess.apply` makes them the defaults of the clients the process creates next
(:func:`rmq.client.credentials.use_default_credentials` and
:func:`~rmq.client.credentials.use_tls`).  Every entry point of the source and the sink calls
it first: Spark runs them in Python workers of their own, one task or planning call at a
time, which may be reused by another query with other options.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from rmq.client.credentials import SessionCredentials, use_default_credentials, use_tls
from rmq.spark.options import parse_bool

ACCESS_OPTIONS = ("accessKey", "secretKey", "securityToken", "tls", "tlsCa")


@dataclass(frozen=True)
class ClientAccess:
    """Credentials and TLS of one read or write (see the module docstring)."""

    access_key: str | None = None
    secret_key: str | None = field(default=None, repr=False)
    security_token: str | None = field(default=None, repr=False)
    tls: bool = False
    tls_ca: str | None = None

    @classmethod
    def of(cls, options: Mapping[str, str]) -> ClientAccess:
        access, secret = options.get("accessKey") or None, options.get("secretKey") or None
        if (access is None) != (secret is None):
            raise ValueError("give both accessKey and secretKey, or neither")
        return cls(
            access,
            secret,
            options.get("securityToken") or None,
            parse_bool(options.get("tls"), "tls", default=False),
            options.get("tlsCa") or None,
        )

    def apply(self) -> None:
        """Make these the defaults of the clients created from now on."""
        credentials = None
        if self.access_key is not None and self.secret_key is not None:
            credentials = SessionCredentials(self.access_key, self.secret_key, self.security_token)
        use_default_credentials(credentials)
        use_tls(self.tls, self.tls_ca)

    def to_options(self) -> dict[str, str]:
        """The options that give these (for a job that builds its reader's options)."""
        options = {
            "accessKey": self.access_key,
            "secretKey": self.secret_key,
            "securityToken": self.security_token,
            "tls": "true" if self.tls else None,
            "tlsCa": self.tls_ca,
        }
        return {key: value for key, value in options.items() if value}
