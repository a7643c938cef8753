"""`rmq standalone`: a name server and a broker in one process, the embedded default.

`rmq standalone` is what `make run` starts: a name server on `--namesrv-port` (9876) and a
broker on `--broker-port` (10911, its fast port 10909 and HA port 10912) in one process and
one event loop, the broker registered with that name server.  Both bind `--host` (default
127.0.0.1, so a standalone is reachable from this machine only, and routes name 127.0.0.1);
`--host 0.0.0.0` binds every address and advertises the machine's outward one, as `rmq broker`
does; any other address is bound and advertised.  The store is `$HOME/store` unless
`--store DIR` (or `storePathRootDir` in the `-c` file) says otherwise.  `-c broker.conf`
takes the same keys as `rmq broker -c`; its `namesrvAddr` is replaced by the embedded name
server, its `bindAddress`/`brokerIP1` apply when `--host` is not given.

Once both listen, one line on stderr gives their addresses.  A port in use stops the start
with one line naming that port and the option that moves it (`--namesrv-port` or
`--broker-port`).  SIGTERM stops the broker (it unregisters and flushes its store) and then
the name server, exit code 0; Ctrl-C exits 130.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from rmq.cli.errors import EXIT_USAGE, RmqError
from rmq.cli.main import command_app
from rmq.cli.serve import ConfigFileOption
from rmq.cli.tlsoptions import DefineOption

if TYPE_CHECKING:
    from rmq.remoting.errors import ListenError

app = command_app()


def port_option(namesrv_port: int) -> Callable[[ListenError], str]:
    """The `port_option` of `serve`: which option moves the port a ListenError names."""

    def option(exc: ListenError) -> str:
        port = exc.address.rpartition(":")[2]
        return "--namesrv-port" if port == str(namesrv_port) else "--broker-port"

    return option


@app.command()
def standalone(
    ctx: typer.Context,
    store: Annotated[
        Path | None,
        typer.Option(
            "--store",
            metavar="DIR",
            help="Store directory (default $HOME/store; overrides storePathRootDir).",
            file_okay=False,
        ),
    ] = None,
    host: Annotated[
        str | None,
        typer.Option(
            "--host",
            metavar="ADDR",
            help="Address both servers bind and the broker advertises (default 127.0.0.1: "
            "this machine only); 0.0.0.0 binds all and advertises the outward address.",
        ),
    ] = None,
    namesrv_port: Annotated[
        int,
        typer.Option("--namesrv-port", min=1, max=65535, help="Name server port."),
    ] = 9876,
    broker_port: Annotated[
        int | None,
        typer.Option(
            "--broker-port",
            min=3,
            max=65534,
            help="Broker port (default: listenPort of the -c file, else 10911); "
            "its fast port is PORT - 2, its HA port PORT + 1.",
        ),
    ] = None,
    config_file: ConfigFileOption = None,
    define: DefineOption = None,
) -> int:
    """Start a name server and a broker in one process; stop them with Ctrl-C or SIGTERM."""
    from rmq.cli.broker import load_broker_configs, serve

    overrides = {}
    if broker_port is not None:
        overrides["listenPort"] = str(broker_port)
    if store is not None:
        overrides["storePathRootDir"] = str(store)
    configs, file_props, unknown = load_broker_configs(config_file, overrides)
    listen_port = configs.server.listen_port
    if listen_port - 2 <= namesrv_port <= listen_port + 1:
        raise RmqError(
            f"--namesrv-port {namesrv_port} is one of the broker's ports "
            f"({listen_port - 2}, {listen_port}, {listen_port + 1})",
            "choose another --namesrv-port or --broker-port",
            EXIT_USAGE,
        )

    from rmq.cli.tlsoptions import setup_server_tls
    from rmq.server.standalone import run_standalone, standalone_configs

    namesrv_configs = standalone_configs(configs, namesrv_port, file_props, host)
    source = str(config_file) if config_file is not None else None
    unknown = setup_server_tls(define, file_props, unknown, source)
    main = run_standalone(namesrv_configs, configs, config_file=source, file_properties=file_props)
    return serve(ctx, main, configs, unknown, source, port_option(namesrv_port))
