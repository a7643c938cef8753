"""`rmq topic`: create, update, delete, list and inspect topics.

    rmq topic update -t TOPIC (--broker ADDR | --cluster NAME) [-r 8] [-w 8] [-p RW] [--order]
    rmq topic delete TOPIC --cluster NAME [--yes]
    rmq topic list [--cluster NAME]
    rmq topic route TOPIC
    rmq topic status TOPIC
    rmq topic clusters TOPIC

Each command makes one call to the admin API (`rmq.client.admin.AdminClient`) against the
name servers of `-n/--namesrv` and renders the dataclasses it returns with `-o/--output`.
The JSON field names are part of rmq's interface and documented in docs/admin.md.  `update`
and `delete` take `--dry-run`, which prints the requests they would send (request, code,
target, header fields) and sends nothing, not even a lookup; `delete` asks for confirmation
on a terminal and needs `--yes` elsewhere.

mqadmin's option letters (`-b`, `-c`, `-o` for order) are not used here: they live under
`rmq mqadmin`.  Here the broker and the cluster are `--broker` / `--cluster`, and `-o` is the
output format as everywhere in rmq.

The helpers at the end are shared with `rmq.cli.cluster`: `run_admin` runs one admin
operation and turns client failures into one-line `RmqError`s (exit 1), `record` turns a
result dataclass into a JSON object with camelCase keys, and `show` renders data for the
machine formats and, when given, different rows for people (formatted times and figures).
Only typer and light rmq.cli helpers are imported at module level; asyncio and the client
are imported when a command runs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import click
import typer

from rmq.cli.errors import RmqError, YesOption, require_confirmation
from rmq.cli.main import command_app
from rmq.cli.output import OutputFormat, OutputOption, render, resolve_output
from rmq.cli.settings import NamesrvOption, resolve_namesrv

if TYPE_CHECKING:
    from rmq.client.admin import AdminClient, PlannedRequest

T = TypeVar("T")

DEFAULT_QUEUE_NUMS = 8
"""mqadmin updateTopic's default read and write queue counts."""

app = command_app(help="Create, update, delete, list and inspect topics.")

TopicArgument = Annotated[str, typer.Argument(metavar="TOPIC", help="Topic name.")]
ClusterOption = Annotated[
    str | None,
    typer.Option("--cluster", metavar="NAME", help="Cluster name.", show_default=False),
]
DryRunOption = Annotated[
    bool,
    typer.Option("--dry-run", help="Print the requests that would be sent and send nothing."),
]


def _topic_name(value: str) -> str:
    from rmq.common.naming import client_topic_error

    error = client_topic_error(value)
    if error is not None:
        raise typer.BadParameter(error)
    return value


def _perm(value: str | int) -> int:
    from rmq.common.perm import PERM_INHERIT, PERM_READ, PERM_WRITE, parse_perm

    try:
        perm = parse_perm(str(value))
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    if perm & ~(PERM_READ | PERM_WRITE | PERM_INHERIT):
        raise typer.BadParameter(f"invalid perm {value!r}: use 2 (W), 4 (R), 6 (RW) or letters")
    return perm


@app.command("update")
def update(
    topic: Annotated[
        str,
        typer.Option("--topic", "-t", help="Topic name.", callback=_topic_name),
    ],
    broker: Annotated[
        str | None,
        typer.Option(
            "--broker",
            metavar="HOST:PORT",
            help="Create or update the topic on this broker.",
            show_default=False,
        ),
    ] = None,
    cluster: Annotated[
        str | None,
        typer.Option(
            "--cluster",
            metavar="NAME",
            help="Create or update the topic on every master of this cluster.",
            show_default=False,
        ),
    ] = None,
    read_queues: Annotated[
        int, typer.Option("--read-queues", "-r", min=0, help="Read queue count.")
    ] = DEFAULT_QUEUE_NUMS,
    write_queues: Annotated[
        int, typer.Option("--write-queues", "-w", min=0, help="Write queue count.")
    ] = DEFAULT_QUEUE_NUMS,
    perm: Annotated[
        int,
        typer.Option(
            "--perm",
            "-p",
            metavar="PERM",
            parser=_perm,
            help="Permission: RW, R, W or the number (6, 4, 2).",
        ),
    ] = 6,
    order: Annotated[
        bool,
        typer.Option(
            "--order",
            help="Ordered topic: also write its order conf (brokerName:writeQueues) to the "
            "name servers.",
        ),
    ] = False,
    dry_run: DryRunOption = False,
    namesrv: NamesrvOption = None,
    output: OutputOption = None,
) -> None:
    """Create or update a topic.

    The topic is created (or its queue counts and perm replaced) on the broker given by
    --broker or on every master of the cluster given by --cluster: exactly one of the two.
    """
    from rmq.client.admin import plan_topic_update
    from rmq.remoting.bodies import TopicConfig

    if (broker is None) == (cluster is None):
        raise click.UsageError("give exactly one of --broker and --cluster")
    config = TopicConfig(
        topic_name=topic,
        read_queue_nums=read_queues,
        write_queue_nums=write_queues,
        perm=perm,
        order=order,
    )
    addrs = resolve_namesrv(namesrv)
    if dry_run:
        show_plan(
            plan_topic_update(config, addrs.split(";"), broker_addr=broker, cluster=cluster),
            output,
        )
        return
    result = run_admin(
        addrs,
        lambda admin: admin.create_or_update_topic(config, broker_addr=broker, cluster=cluster),
    )
    data = {
        "topic": config.topic_name,
        "readQueueNums": config.read_queue_nums,
        "writeQueueNums": config.write_queue_nums,
        "perm": config.perm,
        "topicFilterType": config.topic_filter_type.name,
        "topicSysFlag": config.topic_sys_flag,
        "order": config.order,
        "brokerAddrs": result.broker_addrs,
        "orderConf": result.order_conf,
    }
    render(data, columns=list(data), output=output)


@app.command("delete")
def delete(
    topic: TopicArgument,
    cluster: Annotated[
        str,
        typer.Option(
            "--cluster", metavar="NAME", help="Delete the topic from every master of this cluster."
        ),
    ],
    yes: YesOption = False,
    dry_run: DryRunOption = False,
    namesrv: NamesrvOption = None,
    output: OutputOption = None,
) -> None:
    """Delete a topic from a cluster and the name servers.

    The topic is deleted from every master of --cluster, then from every name server.
    Asks for confirmation on a terminal; elsewhere --yes is required.
    """
    from rmq.client.admin import plan_topic_deletion

    addrs = resolve_namesrv(namesrv)
    if dry_run:
        show_plan(plan_topic_deletion(topic, cluster, addrs.split(";")), output)
        return
    require_confirmation(
        f"delete topic {topic!r} from cluster {cluster!r} and the name servers", yes=yes
    )
    result = run_admin(addrs, lambda admin: admin.delete_topic(topic, cluster))
    data = record(result)
    render(data, columns=list(data), output=output)


@app.command("list")
def list_topics(
    cluster: ClusterOption = None,
    namesrv: NamesrvOption = None,
    output: OutputOption = None,
) -> None:
    """List topics and the clusters serving them.

    Every topic the name server knows, or only those of --cluster.
    """
    entries = run_admin(resolve_namesrv(namesrv), lambda admin: admin.list_topics(cluster))
    render([record(entry) for entry in entries], columns=("topic", "clusters"), output=output)


@app.command("route")
def route(topic: TopicArgument, namesrv: NamesrvOption = None, output: OutputOption = None) -> None:
    """Show a topic's route: its brokers and queues."""
    data = run_admin(resolve_namesrv(namesrv), lambda admin: admin.topic_route(topic))
    brokers = sorted(data.broker_datas, key=lambda broker: broker.broker_name)
    queues = {queue.broker_name: queue for queue in data.queue_datas}
    document = {
        "topic": topic,
        "orderTopicConf": data.order_topic_conf,
        "brokerDatas": [
            {**record(broker), "brokerAddrs": dict(sorted(broker.broker_addrs.items()))}
            for broker in brokers
        ],
        "queueDatas": [record(queues[name]) for name in sorted(queues)],
        "filterServerTable": data.filter_server_table,
    }
    rows = []
    for broker in brokers:
        queue = queues.get(broker.broker_name)
        rows.append(
            {
                "cluster": broker.cluster,
                "brokerName": broker.broker_name,
                "brokerAddrs": ",".join(
                    f"{broker_id}={addr}" for broker_id, addr in sorted(broker.broker_addrs.items())
                ),
                "readQueueNums": queue.read_queue_nums if queue else None,
                "writeQueueNums": queue.write_queue_nums if queue else None,
                "perm": queue.perm if queue else None,
            }
        )
    show(
        document,
        table_rows=rows,
        columns=("cluster", "brokerName", "brokerAddrs", "readQueueNums", "writeQueueNums", "perm"),
        output=output,
    )


@app.command("status")
def status(
    topic: TopicArgument, namesrv: NamesrvOption = None, output: OutputOption = None
) -> None:
    """Show the offsets of a topic's queues.

    For each queue: the min and max offset and the store time of its last message.
    """
    queues = run_admin(resolve_namesrv(namesrv), lambda admin: admin.topic_status(topic))
    data = [record(queue) for queue in queues]
    rows = [{**row, "lastUpdated": human_time(row["lastUpdateTimestamp"])} for row in data]
    show(
        data,
        table_rows=rows,
        columns=("brokerName", "queueId", "minOffset", "maxOffset", "lastUpdated"),
        output=output,
    )


@app.command("clusters")
def clusters(
    topic: TopicArgument, namesrv: NamesrvOption = None, output: OutputOption = None
) -> None:
    """List the clusters serving a topic."""
    names = run_admin(resolve_namesrv(namesrv), lambda admin: admin.topic_clusters(topic))
    render([{"cluster": name} for name in names], columns=("cluster",), output=output)


# -- shared with rmq.cli.cluster --------------------------------------------------------------


def run_admin(namesrv_addrs: str, operation: Callable[[AdminClient], Awaitable[T]]) -> T:
    """Run `operation` with an AdminClient on `namesrv_addrs` ("host:port;host:port");
    client and connection failures become an RmqError (exit 1)."""
    import asyncio

    from rmq.client.admin import AdminClient
    from rmq.client.errors import ClientError
    from rmq.remoting.errors import RemotingError

    async def main() -> T:
        async with AdminClient(namesrv_addrs) as admin:
            return await operation(admin)

    try:
        return asyncio.run(main())
    except (ClientError, RemotingError) as exc:
        raise admin_error(exc, namesrv_addrs) from exc


def admin_error(exc: Exception, namesrv_addrs: str) -> RmqError:
    """The one-line error for a failed admin operation, with what to do about it."""
    from rmq.client.admin import AdminError
    from rmq.client.errors import RouteNotFound
    from rmq.remoting.errors import RemotingConnectError, RemotingTimeoutError

    if isinstance(exc, RouteNotFound):
        return RmqError(
            f"topic {exc.topic!r} not found: the name server has no route for it",
            "check the name with 'rmq topic list', or create it with 'rmq topic update'",
        )
    if isinstance(exc, RemotingConnectError | RemotingTimeoutError):
        return RmqError(
            f"cannot reach the server: {exc}",
            f"check that the name server(s) {namesrv_addrs} and the brokers are running, "
            "and -n/--namesrv",
        )
    if isinstance(exc, AdminError):
        return RmqError(str(exc), "see 'rmq cluster list' for the clusters and brokers")
    return RmqError(str(exc))


def record(obj: Any, *, exclude: Iterable[str] = ()) -> dict[str, Any]:
    """A result dataclass as a JSON object: camelCase keys in field order, `exclude`d
    fields (snake_case names) left out."""
    import dataclasses

    from rmq.common.javanames import camel_case

    left_out = set(exclude)
    return {
        camel_case(field.name): getattr(obj, field.name)
        for field in dataclasses.fields(obj)
        if field.name not in left_out
    }


def show(
    data: Mapping[str, Any] | Sequence[Mapping[str, Any]],
    *,
    columns: Sequence[str],
    wide_columns: Sequence[str] = (),
    table_rows: Sequence[Mapping[str, Any]] | None = None,
    output: OutputFormat | None = None,
) -> None:
    """Render `data` as json/ndjson/yaml, and `table_rows` (default: `data`) as table/wide."""
    fmt = resolve_output(output)
    if table_rows is not None and fmt in (OutputFormat.TABLE, OutputFormat.WIDE):
        data = table_rows
    render(data, columns=columns, wide_columns=wide_columns, output=fmt)


def show_plan(plan: Sequence[PlannedRequest], output: OutputFormat | None) -> None:
    """Print a dry run's requests; a note on stderr says that nothing was sent."""
    rows = [
        {
            "request": request.code.name,
            "code": int(request.code),
            "target": request.target,
            "extFields": request.ext_fields,
        }
        for request in plan
    ]
    render(rows, columns=("request", "code", "target", "extFields"), output=output)
    typer.echo("dry run: nothing was sent", err=True)


def human_time(millis: int) -> str:
    """A store timestamp (ms) as local `yyyy-MM-dd HH:mm:ss,SSS` (mqadmin's format); empty
    for 0 or less."""
    if millis <= 0:
        return ""
    import datetime

    moment = datetime.datetime.fromtimestamp(millis / 1000)
    return f"{moment:%Y-%m-%d %H:%M:%S},{millis % 1000:03d}"
