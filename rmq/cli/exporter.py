"""`rmq exporter`: the cluster's metrics for Prometheus, in rocketmq-exporter's names.

    rmq exporter [-n NAMESRV] [--host 127.0.0.1] [--port 5557] [--interval 60s]
                 [--expire-after 60s]

Runs `rmq.console.exporter.Exporter`: a collection round at once and then every
`--interval`, `/metrics` served from the last rounds over HTTP on `--host:--port`, each
series dropped `--expire-after` after the last round that reported it.  When the server
listens it prints one line to stderr with its URL (the port it got with `--port 0`).  Stops
on SIGTERM (exit 0) or Ctrl-C (exit 130); a port it cannot bind is an error (exit 1).
"""

from __future__ import annotations

from typing import Annotated

import typer

from rmq.cli.errors import EXIT_USAGE, RmqError
from rmq.cli.main import command_app
from rmq.cli.settings import NamesrvOption, resolve_namesrv

app = command_app(
    help="Serve the cluster's metrics to Prometheus with the RocketMQ exporter's names and labels."
)

DEFAULT_PORT = 5557


def _seconds(text: str, option: str) -> float:
    from rmq.common.timeutil import parse_duration

    try:
        millis = parse_duration(text)
    except ValueError as exc:
        raise RmqError(f"{option}: {exc}", exit_code=EXIT_USAGE) from exc
    if millis <= 0:
        raise RmqError(f"{option} must be more than 0", exit_code=EXIT_USAGE)
    return millis / 1000


@app.command("exporter")
def exporter(
    namesrv: NamesrvOption = None,
    host: Annotated[
        str, typer.Option("--host", metavar="ADDRESS", help="Address to listen on.")
    ] = "127.0.0.1",
    port: Annotated[
        int,
        typer.Option("--port", min=0, max=65535, metavar="PORT", help="Port (0: any free)."),
    ] = DEFAULT_PORT,
    interval: Annotated[
        str,
        typer.Option(
            "--interval", metavar="DURATION", help="Time between collection rounds (10s, 1m)."
        ),
    ] = "60s",
    expire_after: Annotated[
        str,
        typer.Option(
            "--expire-after",
            metavar="DURATION",
            help="Drop a series this long after the last round that reported it.",
        ),
    ] = "60s",
) -> int:
    """Serve the cluster's metrics to Prometheus with the RocketMQ exporter's names and
    labels.

    GET /metrics answers Prometheus text with rocketmq-exporter's metric names and labels
    (rocketmq_broker_tps, rocketmq_group_diff, rocketmq_brokeruntime_* and the rest), all
    gauges, from the requests that exporter sends: collected at start and then every
    --interval, kept until --expire-after passes without a round reporting them.  A scrape
    answers from the last rounds and never waits for the cluster; a broker that is down
    costs only its own series.  /metrics is read-only and holds no secret.  Stops on SIGTERM
    or Ctrl-C.
    """
    import asyncio
    import signal
    import sys

    from rmq.console.exporter import Exporter

    every = _seconds(interval, "--interval")
    expire = _seconds(expire_after, "--expire-after")
    served = Exporter(
        resolve_namesrv(namesrv), host=host, port=port, interval=every, expire_after=expire
    )
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

    print(f"rmq exporter: serving http://{bound_host}:{bound_port}/metrics", file=sys.stderr)
    sys.stderr.flush()
    try:
        asyncio.run(main())
    finally:
        served.close()
    return 0
