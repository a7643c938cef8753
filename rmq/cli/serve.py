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
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from rmq.cli.errors import RmqError
from rmq.cli.main import CliState

if TYPE_CHECKING:
    from rmq.remoting.errors import ListenError

__all__ = ["ConfigFileOption", "run_foreground"]

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
