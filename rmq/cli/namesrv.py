"""`rmq namesrv`: run a name server in the foreground, as Apache's `mqnamesrv` does.

Options mirror mqnamesrv: `-c/--configFile FILE` reads a `.properties` file with
NamesrvConfig and NettyServerConfig keys (`listenPort`, `kvConfigPath`,
`orderMessageEnable`, ... and the rmq-only `scanNotActiveBrokerInterval`,
`brokerChannelExpiredTime`, `bindAddress`); `-p/--printConfigItem` prints the effective
configuration as `key=value` lines on stdout and exits.  `--port` and `--host` override
`listenPort` and `bindAddress` without a file.  Unknown keys in the file are reported as
warnings; a value that does not parse stops the start (exit 2).

Logs go to stderr (INFO, or DEBUG with `rmq --debug`, which also logs every request and
response).  SIGTERM stops the server cleanly with exit code 0, Ctrl-C with 130.  The server
itself (asyncio, the remoting layer) is imported only when the command runs.
"""

from __future__ import annotations

from typing import Annotated

import typer

from rmq.cli.errors import EXIT_USAGE, RmqError
from rmq.cli.main import command_app
from rmq.cli.serve import ConfigFileOption
from rmq.cli.tlsoptions import DefineOption

app = command_app()


@app.command()
def namesrv(
    ctx: typer.Context,
    config_file: ConfigFileOption = None,
    print_config: Annotated[
        bool,
        typer.Option(
            "-p", "--printConfigItem", "--print-config", help="Print all config items and exit."
        ),
    ] = False,
    port: Annotated[
        int | None,
        typer.Option("--port", min=0, max=65535, help="Listen port (overrides listenPort)."),
    ] = None,
    host: Annotated[
        str | None,
        typer.Option("--host", help="Address to bind (overrides bindAddress)."),
    ] = None,
    define: DefineOption = None,
) -> int:
    """Start a name server (default port 9876); stop it with Ctrl-C or SIGTERM."""
    from rmq.common.config import (
        ConfigError,
        build_namesrv_configs,
        load_properties_file,
        to_properties,
    )

    props: dict[str, str] = {}
    source = str(config_file) if config_file is not None else None
    try:
        if config_file is not None:
            props = load_properties_file(config_file)
        configs, unknown = build_namesrv_configs(props, config_file=source)
    except ConfigError as exc:
        raise RmqError(str(exc), "fix the config file", EXIT_USAGE) from None
    if port is not None:
        configs.server.listen_port = port
    if host is not None:
        configs.server.bind_address = host

    if print_config:
        for key, value in to_properties(*configs.all()).items():
            typer.echo(f"{key}={value}")
        return 0

    from rmq.cli.serve import run_foreground
    from rmq.cli.tlsoptions import setup_server_tls
    from rmq.server.namesrv.server import run_namesrv

    unknown = setup_server_tls(define, props, unknown, source)

    return run_foreground(
        ctx,
        run_namesrv(configs, props),
        logger="rmq.namesrv",
        unknown=unknown,
        source=source,
        config_file_hint="repair or remove the file (kvConfigPath)",
        port_option=lambda _: "--port or listenPort",
    )
