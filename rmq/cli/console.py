"""`rmq console`: a web console to look at the cluster in a browser.

    rmq console [-n NAMESRV] [--host 127.0.0.1] [--port 8080] [--interval 60s]

Runs `rmq.console.web.Console`: the pages (overview with TPS charts, cluster, topics,
consumer groups, producers, messages, message trace, dead letters) and `/metrics` on `--host:--port`, the TPS history and the
metrics collected every `--interval`.  When the server listens it prints one line to stderr
with its URL (the port it got with `--port 0`).  Stops on SIGTERM (exit 0) or Ctrl-C (exit
130); a port it cannot bind is an error (exit 1).
"""

from __future__ import annotations

from typing import Annotated

import typer

from rmq.cli.main import command_app
from rmq.cli.serve import duration_seconds, serve_http
from rmq.cli.settings import NamesrvOption, resolve_namesrv

app = command_app(
    help="Serve a web console to look at the cluster: brokers, topics, groups, messages."
)

DEFAULT_PORT = 8080


@app.command("console")
def console(
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
            "--interval",
            metavar="DURATION",
            help="Time between two TPS and metrics collections (10s, 1m).",
        ),
    ] = "60s",
) -> int:
    """Serve a web console to look at the cluster: brokers, topics, groups, messages.

    Pages: an overview (each name server's status, broker and topic TPS charts collected
    every --interval while the console runs and kept under $XDG_STATE_HOME/rmq/console, so a
    restart keeps the day), the cluster (brokers, roles incl. DLedger term and committed
    index, replication, versions, TPS, runtime status and configuration), topics (kinds,
    status per queue, route, consumer groups), consumer groups (lag, clients, progress per
    queue), producers, messages (by topic and time range with paging, by key, by id; each with
    its properties, body and trace), dead letters (a group's DLQ by time range or id) and
    /metrics (the same series as rmq exporter).  The pages only read; they need no internet.  Stops on SIGTERM or Ctrl-C.
    """
    from rmq.console.web import Console

    every = duration_seconds(interval, "--interval")
    served = Console(resolve_namesrv(namesrv), host=host, port=port, interval=every)
    return serve_http(served, "console", host, port, "/")
