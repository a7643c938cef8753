"""`rmq standalone`: a name server and a broker in one process, the embedded default.

`rmq standalone` is what `make run` starts: a name server on `--namesrv-port` (9876) and a
broker on `--broker-port` (10911, and its fast port 10909) in one process and one event
loop, the broker registered with that name server.  The store is `$HOME/store` unless
`--store DIR` (or `storePathRootDir` in the `-c` file) says otherwise.  `-c broker.conf`
takes the same keys as `rmq broker -c`; its `namesrvAddr` is replaced by the embedded name
server.  The name server binds the broker's `bindAddress`.

Once both listen, one line on stderr gives their addresses.  SIGTERM stops the broker (it
unregisters and flushes its store) and then the name server, exit code 0; Ctrl-C exits 130.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rmq.cli.main import command_app
from rmq.cli.serve import ConfigFileOption

app = command_app()


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
            "its fast port is PORT - 2.",
        ),
    ] = None,
    config_file: ConfigFileOption = None,
) -> int:
    """Start a name server and a broker in one process; stop them with Ctrl-C or SIGTERM."""
    from rmq.cli.broker import load_broker_configs, serve

    overrides = {}
    if broker_port is not None:
        overrides["listenPort"] = str(broker_port)
    if store is not None:
        overrides["storePathRootDir"] = str(store)
    configs, file_props, unknown = load_broker_configs(config_file, overrides)

    from rmq.server.standalone import run_standalone, standalone_configs

    namesrv_configs = standalone_configs(configs, namesrv_port, file_props)
    source = str(config_file) if config_file is not None else None
    main = run_standalone(namesrv_configs, configs, config_file=source, file_properties=file_props)
    return serve(ctx, main, configs, unknown, source)
