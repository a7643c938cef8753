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

from rmq.cli.main import command_app
from rmq.cli.serve import duration_seconds, serve_http
from rmq.cli.settings import NamesrvOption, resolve_namesrv

app = command_app(
    help="Serve the cluster's metrics to Prometheus with the RocketMQ exporter's names and labels."
)

DEFAULT_PORT = 5557


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
    from rmq.console.exporter import Exporter

    every = duration_seconds(interval, "--interval")
    expire = duration_seconds(expire_after, "--expire-after")
    served = Exporter(
        resolve_namesrv(namesrv), host=host, port=port, interval=every, expire_after=expire
    )
    return serve_http(served, "exporter", host, port, "/metrics")
