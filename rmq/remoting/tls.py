"""TLS as Apache RocketMQ 4.9 offers it: the `tls.*` settings, the SSL contexts built from
them, and the process-wide choices a server or client makes with them.

Apache keeps TLS in JVM system properties (`TlsSystemConfig`), read once per process:

    tls.server.mode              disabled | permissive | enforcing (how a server treats TLS)
    tls.enable                   a client's default for useTLS
    tls.config.file              a .properties file whose tls.* keys override the others
                                 (not tls.server.mode, tls.enable or itself); default
                                 /etc/rocketmq/tls.properties, skipped when absent
    tls.test.mode.enable         true: the server makes a self-signed certificate and ignores
                                 the configured one; the client trusts any server
    tls.server.need.client.auth  none | optional | require
    tls.server.certPath / keyPath / keyPassword / authClient / trustCertPath
    tls.client.certPath / keyPath / keyPassword / authServer / trustCertPath

`TlsSettings.from_properties` reads those keys from a mapping (rmq's servers take them as
`-D key=value` options or in their config file, `rmq.cli.tlsoptions`) and
`with_config_file` applies `tls.config.file` as `TlsHelper.buildSslContext` does.
`server_context` / `client_context` build the `ssl.SSLContext` of each side.

Process-wide, as Apache's static config is: `configure_server(settings)` is what every
`RemotingServer` of the process then listens with (`rmq.remoting.tlsserver`), and
`use_client_tls(context)` what every `RemotingClient` created afterwards connects with.
Nothing is configured by default: servers are plain (rmq's default mode is disabled, Apache's
permissive) and clients are plain.
"""

from __future__ import annotations

import enum
import logging
import os
import shutil
import ssl
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path

from rmq.common.configfields import ConfigError

log = logging.getLogger("rmq.remoting")

SERVER_MODE = "tls.server.mode"
ENABLE = "tls.enable"
CONFIG_FILE = "tls.config.file"
DEFAULT_CONFIG_FILE = "/etc/rocketmq/tls.properties"

HANDSHAKE_BYTE = 0x16
"""The first byte of a TLS ClientHello (a record of type handshake); a remoting frame starts
with its length, whose first byte is 0 for every frame shorter than 16 MiB."""


class TlsMode(enum.Enum):
    """How a server treats TLS (Apache's `TlsMode`)."""

    DISABLED = "disabled"
    """Plain only: a TLS client is refused."""
    PERMISSIVE = "permissive"
    """Both, told apart by the first byte a client sends."""
    ENFORCING = "enforcing"
    """TLS only: a plain client is refused."""


class ClientAuth(enum.Enum):
    """Whether a server asks a client for a certificate (`tls.server.need.client.auth`)."""

    NONE = "none"
    OPTIONAL = "optional"
    REQUIRE = "require"


# Property name -> TlsSettings field, for every key but tls.server.mode.
_KEYS: dict[str, str] = {
    ENABLE: "enable",
    CONFIG_FILE: "config_file",
    "tls.test.mode.enable": "test_mode",
    "tls.server.need.client.auth": "need_client_auth",
    "tls.server.certPath": "server_cert_path",
    "tls.server.keyPath": "server_key_path",
    "tls.server.keyPassword": "server_key_password",
    "tls.server.authClient": "server_auth_client",
    "tls.server.trustCertPath": "server_trust_cert_path",
    "tls.client.certPath": "client_cert_path",
    "tls.client.keyPath": "client_key_path",
    "tls.client.keyPassword": "client_key_password",
    "tls.client.authServer": "client_auth_server",
    "tls.client.trustCertPath": "client_trust_cert_path",
}
KEYS: tuple[str, ...] = (SERVER_MODE, *_KEYS)
"""Every tls.* key rmq reads (Apache's TlsSystemConfig names)."""

# The keys tls.config.file may set (TlsHelper.extractTlsConfigFromFile).
_FILE_KEYS = tuple(key for key in _KEYS if key not in (ENABLE, CONFIG_FILE))


@dataclass(frozen=True)
class TlsSettings:
    """The tls.* settings of one process, with Apache's defaults but for `mode`."""

    mode: TlsMode = TlsMode.DISABLED
    enable: bool | None = None
    """tls.enable; None: not given (a broker then uses TLS for its own requests when `mode`
    is enforcing, as BrokerStartup does)."""
    config_file: str = DEFAULT_CONFIG_FILE
    test_mode: bool = True
    need_client_auth: ClientAuth = ClientAuth.NONE
    server_cert_path: str | None = None
    server_key_path: str | None = None
    server_key_password: str | None = None
    server_auth_client: bool = False
    server_trust_cert_path: str | None = None
    client_cert_path: str | None = None
    client_key_path: str | None = None
    client_key_password: str | None = None
    client_auth_server: bool = False
    client_trust_cert_path: str | None = None

    @classmethod
    def from_properties(
        cls, properties: Mapping[str, str], source: str | None = None
    ) -> TlsSettings:
        """The settings the tls.* keys of `properties` give (other keys are ignored); a
        `ConfigError` naming `source` for a value that does not parse."""
        settings = cls()
        if SERVER_MODE in properties:
            settings = replace(settings, mode=parse_mode(properties[SERVER_MODE], source))
        return settings._updated(properties, _KEYS, source)

    def with_config_file(self) -> TlsSettings:
        """These settings with the keys of `tls.config.file` applied over them, when that file
        exists (Apache skips a missing one silently)."""
        path = Path(self.config_file)
        if not path.is_file() or not os.access(path, os.R_OK):
            log.info("TLS config file %s does not exist, skipping it", path)
            return self
        # here, not at the top: every client imports this module, few have a tls.config.file
        from rmq.common.config import load_properties_file

        return self._updated(load_properties_file(path), _FILE_KEYS, str(path))

    @property
    def client_enabled(self) -> bool:
        """Whether this process's own requests go over TLS (BrokerStartup: tls.enable, by
        default true in enforcing mode)."""
        return self.enable if self.enable is not None else self.mode is TlsMode.ENFORCING

    def __repr__(self) -> str:
        shown = []
        for item in fields(self):
            value = getattr(self, item.name)
            secret = "password" in item.name and value is not None
            shown.append(f"{item.name}={'****' if secret else repr(value)}")
        return f"TlsSettings({', '.join(shown)})"

    def _updated(
        self,
        properties: Mapping[str, str],
        keys: Mapping[str, str] | tuple[str, ...],
        source: str | None,
    ) -> TlsSettings:
        changes: dict[str, object] = {}
        for key in keys:
            if key not in properties:
                continue
            name = _KEYS[key]
            value = properties[key].strip()
            default = getattr(TlsSettings, name, None)
            if name == "need_client_auth":
                changes[name] = _parse_client_auth(value, source)
            elif isinstance(default, bool) or name == "enable":
                changes[name] = _parse_bool(key, value, source)
            elif name == "config_file":
                changes[name] = value or DEFAULT_CONFIG_FILE
            else:
                changes[name] = value or None
        return replace(self, **changes)  # type: ignore[arg-type]


def parse_mode(value: str, source: str | None = None) -> TlsMode:
    """The mode `value` names; a `ConfigError` for any other (Apache falls back to
    permissive)."""
    try:
        return TlsMode(value.strip().lower())
    except ValueError:
        raise ConfigError(
            f"{SERVER_MODE}={value!r} is not disabled, permissive or enforcing",
            source=source,
            key=SERVER_MODE,
            value=value,
        ) from None


def _parse_bool(key: str, value: str, source: str | None) -> bool:
    lowered = value.lower()
    if lowered not in ("true", "false"):
        raise ConfigError(
            f"{key}={value!r} is not true or false", source=source, key=key, value=value
        )
    return lowered == "true"


def _parse_client_auth(value: str, source: str | None) -> ClientAuth:
    try:
        return ClientAuth(value.lower() or "none")
    except ValueError:
        key = "tls.server.need.client.auth"
        raise ConfigError(
            f"{key}={value!r} is not none, optional or require", source=source, key=key, value=value
        ) from None


# --- SSL contexts --------------------------------------------------------------------------


class TlsSetupError(ConfigError):
    """A certificate, key or trust file that cannot be used; the message names it."""


def server_context(settings: TlsSettings) -> ssl.SSLContext:
    """The server side's context: a fresh self-signed certificate in test mode (client
    certificates not asked for), else `tls.server.certPath` / `keyPath` (PEM, the key
    optionally encrypted with `keyPassword`) with `need.client.auth` checked against
    `trustCertPath` (or the system's CAs)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    if settings.test_mode:
        if settings.server_cert_path:
            log.warning(
                "tls.test.mode.enable=true: serving a self-signed certificate, not %s "
                "(set tls.test.mode.enable=false to use it, as with Apache)",
                settings.server_cert_path,
            )
        with tempfile.TemporaryDirectory(prefix="rmq-tls-") as directory:
            cert, key = make_self_signed(Path(directory))
            context.load_cert_chain(cert, key)
        return context
    if not settings.server_cert_path or not settings.server_key_path:
        raise TlsSetupError(
            "TLS needs tls.server.certPath and tls.server.keyPath when tls.test.mode.enable=false"
        )
    _load_chain(
        context,
        settings.server_cert_path,
        settings.server_key_path,
        settings.server_key_password,
    )
    if settings.need_client_auth is not ClientAuth.NONE:
        context.verify_mode = (
            ssl.CERT_REQUIRED
            if settings.need_client_auth is ClientAuth.REQUIRE
            else ssl.CERT_OPTIONAL
        )
        _load_trust(context, settings.server_trust_cert_path, ssl.Purpose.CLIENT_AUTH)
    return context


def client_context(settings: TlsSettings) -> ssl.SSLContext:
    """The client side's context: any server certificate is accepted in test mode or without
    `tls.client.authServer` (Apache's InsecureTrustManager); with it the server's chain is
    checked against `tls.client.trustCertPath` (host names are not checked, as by Apache's
    client).  `tls.client.certPath` / `keyPath` are presented when the server asks."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    if settings.test_mode or not settings.client_auth_server:
        context.verify_mode = ssl.CERT_NONE
    else:
        _load_trust(context, settings.client_trust_cert_path, ssl.Purpose.SERVER_AUTH)
    if not settings.test_mode and settings.client_cert_path and settings.client_key_path:
        _load_chain(
            context,
            settings.client_cert_path,
            settings.client_key_path,
            settings.client_key_password,
        )
    return context


def verifying_client_context(ca_file: str) -> ssl.SSLContext:
    """A client context that accepts only servers whose chain `ca_file` (PEM) vouches for."""
    return client_context(
        TlsSettings(test_mode=False, client_auth_server=True, client_trust_cert_path=ca_file)
    )


def _load_chain(context: ssl.SSLContext, cert: str, key: str, password: str | None) -> None:
    try:
        context.load_cert_chain(cert, key, password)
    except (OSError, ssl.SSLError) as exc:
        raise TlsSetupError(
            f"cannot use certificate {cert} with key {key}: {_reason(exc)}"
        ) from None


def _load_trust(context: ssl.SSLContext, trust: str | None, purpose: ssl.Purpose) -> None:
    if not trust:
        context.load_default_certs(purpose)
        return
    try:
        context.load_verify_locations(cafile=trust)
    except (OSError, ssl.SSLError) as exc:
        raise TlsSetupError(f"cannot use trusted certificates {trust}: {_reason(exc)}") from None


def _reason(exc: OSError) -> str:
    if isinstance(exc, ssl.SSLError):
        return exc.reason or str(exc)
    return exc.strerror or str(exc)


def make_self_signed(directory: Path, name: str = "localhost") -> tuple[Path, Path]:
    """A new self-signed certificate for `name` and its unencrypted key: PEM files in
    `directory` (made if missing), made with the openssl command (as Netty's
    SelfSignedCertificate makes one for Apache's test mode)."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise TlsSetupError(
            "tls.test.mode.enable=true needs the openssl command to make a self-signed "
            "certificate; install openssl or give tls.server.certPath and keyPath"
        )
    directory.mkdir(parents=True, exist_ok=True)
    cert, key = directory / "cert.pem", directory / "key.pem"
    argv = [
        openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
        "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "3650", "-subj", f"/CN={name}",
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise TlsSetupError(f"openssl could not make a certificate: {done.stderr.strip()}")
    return cert, key


def tls_failure_text(addr: str, exc: OSError) -> str:
    """The one line saying why a TLS connection to `addr` could not be made."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        untrusted = f"its certificate is not trusted ({exc.verify_message})"
        return f"TLS handshake with {addr} failed: {untrusted}"
    if isinstance(exc, ssl.SSLEOFError | ConnectionResetError) or not str(exc):
        reason = "the server closed the connection"
    elif isinstance(exc, ssl.SSLError):
        reason = exc.reason or str(exc)
    else:
        reason = exc.strerror or str(exc)
    return f"TLS handshake with {addr} failed: {reason} (is its tls.server.mode disabled?)"


# --- process-wide choices --------------------------------------------------------------------


class ServerTls:
    """What this process's servers listen with: the mode and, unless disabled, the context,
    rebuilt when its certificate, key or trust file changes (Apache's servers watch them)."""

    def __init__(self, mode: TlsMode, settings: TlsSettings | None = None) -> None:
        self.mode = mode
        self._settings = settings
        self.context = server_context(settings) if settings is not None else None
        self._stamps = self._file_stamps()

    def current_context(self) -> ssl.SSLContext:
        """The context for a new TLS connection: rebuilt first when a certificate, key or
        trust file changed since it was built; the old one stays while the new files cannot
        be used (a certificate renewed before its key, ...)."""
        assert self.context is not None and self._settings is not None
        stamps = self._file_stamps()
        if stamps != self._stamps:
            self._stamps = stamps
            try:
                self.context = server_context(self._settings)
                log.info("TLS certificate files changed: reloaded")
            except ConfigError as exc:
                log.warning("TLS certificate files changed but cannot be used yet: %s", exc)
        return self.context

    def _file_stamps(self) -> tuple[tuple[int, int] | None, ...]:
        settings = self._settings
        if settings is None or settings.test_mode:
            return ()
        stamps: list[tuple[int, int] | None] = []
        for path in (
            settings.server_cert_path,
            settings.server_key_path,
            settings.server_trust_cert_path,
        ):
            try:
                status = os.stat(path) if path else None
            except OSError:
                status = None
            stamps.append(None if status is None else (status.st_mtime_ns, status.st_size))
        return tuple(stamps)


_PLAIN = ServerTls(TlsMode.DISABLED)
_server = _PLAIN
_client: ssl.SSLContext | None = None


def configure_server(settings: TlsSettings) -> ServerTls:
    """Make `settings` what the servers of this process listen with (the context is built
    now, so a bad certificate stops the start) and return it."""
    global _server
    disabled = settings.mode is TlsMode.DISABLED
    _server = _PLAIN if disabled else ServerTls(settings.mode, settings)
    log.info("servers run in TLS %s mode", settings.mode.value)
    return _server


def server_tls() -> ServerTls:
    """What this process's servers listen with (plain unless `configure_server` said else)."""
    return _server


def use_client_tls(context: ssl.SSLContext | None) -> None:
    """Make clients created from now on connect over TLS with `context` (None: plain)."""
    global _client
    _client = context


def default_client_context() -> ssl.SSLContext | None:
    """The context `use_client_tls` set, None while clients connect in plain."""
    return _client
