"""TLS on the command line: the servers' `-D tls.*=...` and the cluster commands' `--tls`.

Servers (`rmq namesrv`, `rmq broker`, `rmq standalone`) take Apache's TLS system properties
(`rmq.remoting.tls`) the way a JVM does, as `-D KEY=VALUE` (repeatable; `-Dtls.server.mode=
enforcing` works too), or as the same keys in their `-c` config file; `-D` wins over the file,
and the `tls.config.file` properties file (default /etc/rocketmq/tls.properties, read only
when TLS is used) over both, for the keys Apache lets it set.  `setup_server_tls` applies them
before the server starts: the mode every listening port of the process uses (the broker's
main and fast ports; its HA port stays plain, as Apache's does) and, when `tls.enable` is true
or the mode is enforcing, TLS for the broker's own requests (registration, a slave's sync).

Cluster commands (every command taking `-n/--namesrv`) get `--tls` and `--tls-ca FILE`
through `add_tls_options`, called by `rmq.cli.main.load_command`:

    1. the flags, 2. `RMQ_TLS` (1/true/yes) and `RMQ_TLS_CA`, 3. the profile's `tls` / `tls_ca`

`--tls` connects to the name server and the brokers over TLS and, like Apache's client in its
default test mode, accepts any server certificate; `--tls-ca FILE` (which implies `--tls`)
accepts only servers whose certificate chain FILE vouches for.  A command without TLS whose
server closed a connection without answering (`PlainConnectionRefused`: what a server in TLS
enforcing mode does to a plain client) ends with `plain_refused`'s one line suggesting --tls.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any

import click
import typer

from rmq.cli.clusteroptions import add_to_cluster_commands
from rmq.cli.errors import EXIT_USAGE, RmqError, exception_chain
from rmq.cli.settings import Resolved, resolve

TLS_ENV = "RMQ_TLS"
TLS_CA_ENV = "RMQ_TLS_CA"

DefineOption = Annotated[
    list[str] | None,
    typer.Option(
        "-D",
        "--define",
        metavar="KEY=VALUE",
        help="A TLS system property as Java's -D takes it (repeatable), e.g. "
        "-D tls.server.mode=enforcing; the same keys may be in the -c file.",
        show_default=False,
    ),
]


def setup_server_tls(
    defines: Sequence[str] | None,
    file_props: Mapping[str, str],
    unknown: Sequence[str],
    source: str | None,
) -> list[str]:
    """Apply the tls.* settings of `defines` over those of `file_props` (the -c file
    `source`) to this process's servers and own client; `unknown` without the tls.* keys."""
    from rmq.common.configfields import ConfigError
    from rmq.remoting import tls

    properties = {key: value for key, value in file_props.items() if key.startswith("tls.")}
    properties.update(_parse_defines(defines or ()))
    try:
        settings = tls.TlsSettings.from_properties(properties, source)
        if settings.mode is not tls.TlsMode.DISABLED or settings.client_enabled:
            settings = settings.with_config_file()
        tls.configure_server(settings)
        if settings.client_enabled:
            tls.use_client_tls(tls.client_context(settings))
    except ConfigError as exc:
        raise RmqError(str(exc), "fix the tls.* setting", EXIT_USAGE) from None
    return [key for key in unknown if key not in tls.KEYS]


def _parse_defines(defines: Sequence[str]) -> dict[str, str]:
    from rmq.remoting.tls import KEYS

    parsed = {}
    for define in defines:
        key, equals, value = define.partition("=")
        key = key.strip()
        if not equals or key not in KEYS:
            raise RmqError(
                f"-D {define!r} is not KEY=VALUE with a tls.* key",
                f"keys: {', '.join(KEYS)}",
                EXIT_USAGE,
            )
        parsed[key] = value
    return parsed


# --- the cluster commands' --tls ------------------------------------------------------------

_PARAMS = ("tls", "tls_ca")


def _options() -> list[click.Option]:
    return [
        click.Option(
            ["--tls"],
            is_flag=True,
            default=None,
            help=f"Connect over TLS, accepting any server certificate (as Apache's client in "
            f"test mode). Default: ${TLS_ENV}, then the active profile's tls.",
        ),
        click.Option(
            ["--tls-ca"],
            metavar="FILE",
            help="Connect over TLS and accept only servers whose certificate chain this PEM "
            f"file vouches for. Default: ${TLS_CA_ENV}, then the active profile's tls_ca.",
        ),
    ]


def add_tls_options(command: click.Command) -> None:
    """Give `command`, and every sub-command of a group, that takes the shared -n/--namesrv
    option the --tls options, applied before the command runs."""
    add_to_cluster_commands(command, _PARAMS, _options, _applying_tls)


def _applying_tls(callback: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(callback)
    def run(*args: Any, tls: bool | None = None, tls_ca: str | None = None, **kw: Any) -> Any:
        apply_client_tls(tls, tls_ca)
        return callback(*args, **kw)

    return run


def client_tls_settings(tls_flag: bool | None, ca_flag: str | None) -> tuple[bool, Resolved]:
    """Resolve --tls / --tls-ca (flags, environment, profile): whether to connect over TLS
    and the CA file to verify servers with (its value "" for none), with its source."""
    ca = resolve(ca_flag, flag="--tls-ca", envs=(TLS_CA_ENV,), key="tls_ca", default="")
    enabled = resolve(
        None if tls_flag is None else str(tls_flag).lower(),
        flag="--tls",
        envs=(TLS_ENV,),
        key="tls",
        default="false",
    )
    wanted = enabled.value.strip().lower()
    if wanted not in ("1", "true", "yes", "on", "0", "false", "no", "off", ""):
        raise RmqError(
            f"{enabled.source} gives tls={enabled.value!r}", "use true or false", EXIT_USAGE
        )
    return bool(ca.value) or wanted in ("1", "true", "yes", "on"), ca


def apply_client_tls(tls_flag: bool | None, ca_flag: str | None) -> None:
    """Resolve --tls / --tls-ca and make the clients the command creates use TLS if asked."""
    enabled, ca = client_tls_settings(tls_flag, ca_flag)
    if not enabled:
        return
    from rmq.common.configfields import ConfigError
    from rmq.remoting import tls

    try:
        context = (
            tls.verifying_client_context(ca.value)
            if ca.value
            else tls.client_context(tls.TlsSettings())
        )
    except ConfigError as exc:
        raise RmqError(str(exc), f"check {ca.source}", EXIT_USAGE) from None
    tls.use_client_tls(context)


def plain_refused(exc: BaseException) -> RmqError | None:
    """The one-line error of a command without TLS whose server closed a connection without
    answering, as a server in TLS enforcing mode does (found in `exc` or its causes); None
    when there is none or the command uses TLS."""
    from rmq.remoting.errors import PlainConnectionRefused
    from rmq.remoting.tls import default_client_context

    if default_client_context() is not None:
        return None
    for _, error in exception_chain(exc):
        if isinstance(error, PlainConnectionRefused):
            what = (
                "answered in TLS" if error.tls_record else "closed the connection without an answer"
            )
            return RmqError(
                f"{error.addr} {what}, as a server in TLS enforcing mode does to a plain client",
                f"add --tls (or set {TLS_ENV}=1)",
            )
    return None
