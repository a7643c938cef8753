"""Running a server in the foreground: the start-up and failure handling that `rmq namesrv`,
`rmq broker` and `rmq standalone` share.

`run_foreground` sets up logging (DEBUG with `rmq --debug`), warns about config keys it did
not know, runs the server until it stops and turns the start failures a user can fix into an
`RmqError` with a hint: a config file under the store that does not parse, and a port that
cannot be bound (the error names it: a broker listens on `listenPort` and `listenPort - 2`;
the hint names the one option that moves the port that failed, which the caller's
`port_option` picks).
Other failures (a broker's store errors) pass through to the caller.  The server modules are
imported only when it runs, so the CLI starts fast.  `ConfigFileOption` is the `-c` option
the three commands take, as Apache's `mqnamesrv` and `mqbroker` do.

`serve_http` is what `rmq exporter` and `rmq console` share: bind (a port that cannot be
bound is an `RmqError`), print the one line with the URL, run until SIGTERM or Ctrl-C, close;
`duration_seconds` reads their `--interval`-style options.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Protocol

import typer

from rmq.cli.errors import EXIT_USAGE, RmqError
from rmq.cli.main import CliState

if TYPE_CHECKING:
    from rmq.remoting.errors import ListenError

__all__ = ["ConfigFileOption", "duration_seconds", "run_foreground", "serve_http"]

ConfigFileOption = Annotated[
    Path | None,
    typer.Option(
        "-c",
        "--configFile",
        "--config-file",
        metavar="FILE",
        help="Settings file (.properties), as Apache's -c takes.",
        dir_okay=False,
    ),
]


def run_foreground(
    ctx: typer.Context,
    main: Coroutine[Any, Any, int],
    *,
    logger: str,
    unknown: list[str],
    source: str | None,
    config_file_hint: str,
    port_option: Callable[[ListenError], str],
) -> int:
    """Run `main` to its exit code; warn on logger `logger` about the `unknown` keys of the
    file `source`.  `config_file_hint` says what to do about a config file that does not
    parse; `port_option` names the option that moves the port a ListenError is about."""
    import logging

    from rmq.remoting.errors import ListenError
    from rmq.runtime import run_main, setup_logging
    from rmq.store.configfile import ConfigFileError

    state = ctx.find_object(CliState)
    setup_logging(debug=state is not None and state.debug)
    if unknown:
        logging.getLogger(logger).warning(
            "ignoring unknown keys in %s: %s", source, ", ".join(unknown)
        )
    try:
        return run_main(main)
    except ConfigFileError as exc:
        raise RmqError(str(exc), config_file_hint) from None
    except ListenError as exc:
        raise RmqError(
            str(exc),
            f"is another server using the port? choose another with {port_option(exc)}",
        ) from None


class HttpService(Protocol):
    """A console-layer HTTP server: `serve` binds and returns (host, port), `run` collects
    until `stop` is set, `close` stops serving."""

    def serve(self) -> tuple[str, int]: ...

    async def run(self, stop: Any) -> None: ...

    def close(self) -> None: ...


def duration_seconds(text: str, option: str) -> float:
    """A duration option (`10s`, `1m`) in seconds; a usage error when it is not one or not
    more than 0."""
    from rmq.common.timeutil import parse_duration

    try:
        millis = parse_duration(text)
    except ValueError as exc:
        raise RmqError(f"{option}: {exc}", exit_code=EXIT_USAGE) from exc
    if millis <= 0:
        raise RmqError(f"{option} must be more than 0", exit_code=EXIT_USAGE)
    return millis / 1000


def serve_http(served: HttpService, name: str, host: str, port: int, path: str) -> int:
    """Bind `served`, print `rmq NAME: serving http://HOST:PORT/PATH` to stderr and run it
    until SIGTERM (exit 0; Ctrl-C is the CLI's 130)."""
    import asyncio
    import signal
    import sys

    try:
        bound_host, bound_port = served.serve()
    except OSError as exc:
        raise RmqError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}",
            "pick another --port, or stop what holds it",
        ) from exc

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        try:
            await served.run(stop)
        finally:
            loop.remove_signal_handler(signal.SIGTERM)

    print(f"rmq {name}: serving http://{bound_host}:{bound_port}{path}", file=sys.stderr)
    sys.stderr.flush()
    try:
        asyncio.run(main())
    finally:
        served.close()
    return 0
