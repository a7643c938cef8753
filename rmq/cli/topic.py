"""`rmq topic`: create, update, delete, list and inspect topics.

    rmq topic create TOPIC [--broker ADDR | --cluster NAME] [-r 8] [-w 8] [-p RW] [--order]
    rmq topic update TOPIC [--broker ADDR | --cluster NAME] [-r 8] [-w 8] [-p RW] [--order]
    rmq topic delete TOPIC [--cluster NAME] [--yes]
    rmq topic list [--cluster NAME]
    rmq topic route TOPIC
    rmq topic status TOPIC
    rmq topic clusters TOPIC
    rmq topic describe|perm|allocate|stats ... (rmq.cli.topic_verbs)

A command about one topic takes it as the argument TOPIC or as `-t/--topic` (`pick_topic`);
`--cluster` defaults to the only cluster the name server knows (`only_cluster`; an error
listing them when it knows several).  `create` fails when the topic has a route already,
`update` creates or updates.

Each command makes one call to the admin API (`rmq.client.admin.AdminClient`) against the
name servers of `-n/--namesrv` and renders the dataclasses it returns with `-o/--output`.
The JSON field names are part of rmq's interface and documented in docs/admin.md.  `update`
and `delete` take `--dry-run`, which prints the requests they would send (request, code,
target, header fields) and sends nothing, not even a lookup; `delete` asks for confirmation
on a terminal and needs `--yes` elsewhere.

mqadmin's option letters (`-b`, `-c`, `-o` for order) are not used here: they live under
`rmq mqadmin`.  Here the broker and the cluster are `--broker` / `--cluster`, and `-o` is the
output format as everywhere in rmq.

The helpers at the end are shared with `rmq.cli.cluster` and the verb modules: `run_admin`
runs one admin operation and turns client failures into one-line `RmqError`s (exit 1),
`record` turns a result dataclass into a JSON object with camelCase keys, and `show`
renders data for the machine formats and, when given, different rows for people
(formatted times and figures).
Only typer and light rmq.cli helpers are imported at module level; asyncio and the client
are imported when a command runs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import click
import typer

from rmq.cli.errors import EXIT_USAGE, RmqError, YesOption, require_confirmation
from rmq.cli.main import command_app
from rmq.cli.output import OutputFormat, OutputOption, render, resolve_output
from rmq.cli.settings import NamesrvOption, namesrv_origin, resolve_namesrv

if TYPE_CHECKING:
    from rmq.client.admin import AdminClient, PlannedRequest, QueueStatus, TopicUpdate
    from rmq.remoting.bodies import TopicRouteData

T = TypeVar("T")

DEFAULT_QUEUE_NUMS = 8
"""mqadmin updateTopic's default read and write queue counts."""

app = command_app(help="Create, update, delete, list and inspect topics.")

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


def parse_perm_value(value: str | int) -> int:
    """A perm given as letters (RW, R, W) or as the number; bad usage otherwise."""
    from rmq.common.perm import PERM_INHERIT, PERM_READ, PERM_WRITE, parse_perm

    try:
        perm = parse_perm(str(value))
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    if perm & ~(PERM_READ | PERM_WRITE | PERM_INHERIT):
        raise typer.BadParameter(f"invalid perm {value!r}: use 2 (W), 4 (R), 6 (RW) or letters")
    return perm


TopicOption = Annotated[
    str | None,
    typer.Option(
        "--topic", "-t", metavar="TOPIC", help="Topic name (instead of the argument).",
        show_default=False,
    ),
]  # fmt: skip
OptionalTopicArgument = Annotated[
    str | None,
    typer.Argument(metavar="TOPIC", help="Topic name (or -t/--topic).", show_default=False),
]
BrokerTargetOption = Annotated[
    str | None,
    typer.Option(
        "--broker",
        metavar="HOST:PORT",
        help="Send to this broker only.",
        show_default=False,
    ),
]
ClusterTargetOption = Annotated[
    str | None,
    typer.Option(
        "--cluster",
        metavar="NAME",
        help="Send to every master of this cluster. Default: the only cluster.",
        show_default=False,
    ),
]
ReadQueuesOption = Annotated[
    int, typer.Option("--read-queues", "-r", min=1, help="Read queue count (1 or more).")
]
WriteQueuesOption = Annotated[
    int, typer.Option("--write-queues", "-w", min=1, help="Write queue count (1 or more).")
]
PermOption = Annotated[
    int,
    typer.Option(
        "--perm", "-p", metavar="PERM", parser=parse_perm_value,
        help="Permission: RW, R, W or the number (6, 4, 2).",
    ),
]  # fmt: skip
OrderOption = Annotated[
    bool,
    typer.Option(
        "--order",
        help="Ordered topic: also write its order conf (brokerName:writeQueues) to the "
        "name servers.",
    ),
]


def pick_topic(argument: str | None, option: str | None) -> str:
    """The topic of a command that takes it as TOPIC or -t/--topic (one of the two, or the
    same name twice), its name checked."""
    if argument is not None and option is not None and argument != option:
        raise click.UsageError(f"two topics given: {argument!r} and -t {option!r}")
    topic = argument if argument is not None else option
    if topic is None:
        raise click.UsageError("missing topic: give TOPIC or -t/--topic")
    return _topic_name(topic)


def _put_command(name: str, *, must_be_new: bool, doc: str) -> None:
    """Register `rmq topic <name>`: `update` (create or update) or `create` (new only)."""

    def command(
        topic_argument: OptionalTopicArgument = None,
        topic_option: TopicOption = None,
        broker: BrokerTargetOption = None,
        cluster: ClusterTargetOption = None,
        read_queues: ReadQueuesOption = DEFAULT_QUEUE_NUMS,
        write_queues: WriteQueuesOption = DEFAULT_QUEUE_NUMS,
        perm: PermOption = 6,
        order: OrderOption = False,
        dry_run: DryRunOption = False,
        namesrv: NamesrvOption = None,
        output: OutputOption = None,
    ) -> None:
        put_topic(
            pick_topic(topic_argument, topic_option),
            broker, cluster, read_queues, write_queues, perm, order, dry_run, namesrv, output,
            must_be_new=must_be_new,
        )  # fmt: skip

    command.__doc__ = doc
    app.command(name)(command)


_put_command(
    "update",
    must_be_new=False,
    doc="""Create or update a topic.

    The topic is created (or its queue counts and perm replaced) on the broker given by
    --broker or on every master of the cluster given by --cluster (at most one of the two;
    without either, the only cluster the name server knows).
    """,
)
_put_command(
    "create",
    must_be_new=True,
    doc="""Create a topic; fails when it exists (use 'rmq topic update' to change one).

    The topic is created on the broker given by --broker or on every master of the cluster
    given by --cluster (at most one of the two; without either, the only cluster the name
    server knows).  A dry run does not check whether the topic exists.
    """,
)


def put_topic(
    topic: str,
    broker: str | None,
    cluster: str | None,
    read_queues: int,
    write_queues: int,
    perm: int,
    order: bool,
    dry_run: bool,
    namesrv: str | None,
    output: OutputFormat | None,
    *,
    must_be_new: bool,
) -> None:
    """`update` and `create`: one UPDATE_AND_CREATE_TOPIC per target (and the order conf)."""
    from rmq.client.admin import plan_topic_update
    from rmq.remoting.bodies import TopicConfig

    if broker is not None and cluster is not None:
        raise click.UsageError("give at most one of --broker and --cluster")
    config = TopicConfig(
        topic_name=topic,
        read_queue_nums=read_queues,
        write_queue_nums=write_queues,
        perm=perm,
        order=order,
    )
    addrs = resolve_namesrv(namesrv)
    if broker is None and cluster is None:
        cluster = run_admin(addrs, only_cluster)
    if dry_run:
        show_plan(
            plan_topic_update(config, addrs.split(";"), broker_addr=broker, cluster=cluster),
            output,
        )
        return

    async def put(admin: AdminClient) -> TopicUpdate:
        if must_be_new:
            await require_no_topic(admin, topic)
        return await admin.create_or_update_topic(config, broker_addr=broker, cluster=cluster)

    result = run_admin(addrs, put)
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


async def require_topic_to_delete(admin: AdminClient, topic: str) -> None:
    """RmqError (exit 1) when the name server has no route for `topic`."""
    from rmq.client.errors import RouteNotFound

    try:
        await admin.topic_route(topic)
    except RouteNotFound:
        raise RmqError(
            f"topic {topic!r} not found: the name server has no route for it; nothing was deleted",
            "check the name with 'rmq topic list --all'",
        ) from None


async def require_no_topic(admin: AdminClient, topic: str) -> None:
    """RmqError (exit 1) when the name server has a route for `topic`."""
    from rmq.client.errors import RouteNotFound

    try:
        await admin.topic_route(topic)
    except RouteNotFound:
        return
    raise RmqError(f"topic {topic!r} already exists", "change it with 'rmq topic update'")


@app.command("delete")
def delete(
    topic_argument: OptionalTopicArgument = None,
    topic_option: TopicOption = None,
    cluster: Annotated[
        str | None,
        typer.Option(
            "--cluster",
            metavar="NAME",
            help="Delete the topic from every master of this cluster. Default: the only cluster.",
            show_default=False,
        ),
    ] = None,
    yes: YesOption = False,
    dry_run: DryRunOption = False,
    namesrv: NamesrvOption = None,
    output: OutputOption = None,
) -> None:
    """Delete a topic from a cluster and the name servers.

    The topic is deleted from every master of --cluster (default: the only cluster the
    name server knows), then from every name server.  Asks for confirmation on a terminal;
    elsewhere --yes is required.
    """
    from rmq.client.admin import plan_topic_deletion

    topic = pick_topic(topic_argument, topic_option)
    addrs = resolve_namesrv(namesrv)
    if cluster is None:
        cluster = run_admin(addrs, only_cluster)
    name = cluster
    if dry_run:
        show_plan(plan_topic_deletion(topic, name, addrs.split(";")), output)
        return
    run_admin(addrs, lambda admin: require_topic_to_delete(admin, topic))
    require_confirmation(
        f"delete topic {topic!r} from cluster {name!r} and the name servers", yes=yes
    )
    result = run_admin(addrs, lambda admin: admin.delete_topic(topic, name))
    data = record(result)
    render(data, columns=list(data), output=output)


@app.command("list")
def list_topics(
    cluster: ClusterOption = None,
    show_all: Annotated[
        bool,
        typer.Option(
            "--all", "-a", help="Include system topics and the groups' %RETRY% and %DLQ% topics."
        ),
    ] = False,
    namesrv: NamesrvOption = None,
    output: OutputOption = None,
) -> None:
    """List topics and the clusters serving them.

    Every topic the name server knows, or only those of --cluster; without --all, not the
    topics the brokers make for themselves (system topics such as TBW102 and
    SCHEDULE_TOPIC_XXXX, each cluster's and broker's own topic, %RETRY% and %DLQ% topics).
    """
    from rmq.common.naming import is_internal_topic, reply_topic

    async def listing(admin: AdminClient) -> list[dict[str, Any]]:
        entries = await admin.list_topics(cluster)
        if show_all:
            return [record(entry) for entry in entries]
        own: set[str] = set()
        for name, brokers in (await admin.cluster_info()).cluster_addr_table.items():
            own.update((name, reply_topic(name), *brokers))
        return [record(entry) for entry in entries if not is_internal_topic(entry.topic, own)]

    rows = run_admin(resolve_namesrv(namesrv), listing)
    render(rows, columns=("topic", "clusters"), output=output)


@app.command("route")
def route(
    topic_argument: OptionalTopicArgument = None,
    topic_option: TopicOption = None,
    namesrv: NamesrvOption = None,
    output: OutputOption = None,
) -> None:
    """Show a topic's route: its brokers and queues."""
    topic = pick_topic(topic_argument, topic_option)
    data = run_admin(resolve_namesrv(namesrv), lambda admin: admin.topic_route(topic))
    document, rows = route_view(topic, data)
    show(document, table_rows=rows, columns=ROUTE_COLUMNS, output=output)


ROUTE_COLUMNS = ("cluster", "brokerName", "brokerAddrs", "readQueueNums", "writeQueueNums", "perm")


def route_view(topic: str, data: TopicRouteData) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A route as the JSON document of `topic route` and as its table's rows (one per
    broker)."""
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
    return document, rows


@app.command("status")
def status(
    topic_argument: OptionalTopicArgument = None,
    topic_option: TopicOption = None,
    namesrv: NamesrvOption = None,
    output: OutputOption = None,
) -> None:
    """Show the offsets of a topic's queues.

    For each queue: the min and max offset and the store time of its last message; -o wide
    adds the messages it holds, the broker that answered and the store time in ms.
    """
    topic = pick_topic(topic_argument, topic_option)
    queues = run_admin(resolve_namesrv(namesrv), lambda admin: admin.topic_status(topic))
    data, rows = status_view(queues)
    show(data, table_rows=rows, columns=STATUS_COLUMNS, wide_columns=STATUS_WIDE, output=output)


STATUS_COLUMNS = ("brokerName", "queueId", "minOffset", "maxOffset", "lastUpdated")
STATUS_WIDE = ("messages", "brokerAddr", "lastUpdateTimestamp")


def status_view(queues: Iterable[QueueStatus]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Queue offsets as the JSON rows of `topic status` and as its table's rows."""
    data = [record(queue) for queue in queues]
    rows = [
        {
            **row,
            "lastUpdated": human_time(row["lastUpdateTimestamp"]),
            "messages": row["maxOffset"] - row["minOffset"],
        }
        for row in data
    ]
    return data, rows


@app.command("clusters")
def clusters(
    topic_argument: OptionalTopicArgument = None,
    topic_option: TopicOption = None,
    namesrv: NamesrvOption = None,
    output: OutputOption = None,
) -> None:
    """List the clusters serving a topic."""
    topic = pick_topic(topic_argument, topic_option)
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


async def only_cluster(admin: AdminClient) -> str:
    """The name of the one cluster the name server knows (the default of `--cluster`); an
    RmqError when it knows none or several."""
    names = sorted((await admin.cluster_info()).cluster_addr_table)
    if len(names) == 1:
        return names[0]
    if not names:
        raise RmqError("the name server knows no cluster", "start a broker, or check -n/--namesrv")
    raise RmqError(
        f"the name server knows {len(names)} clusters ({', '.join(names)})",
        "pick one with --cluster",
        EXIT_USAGE,
    )


def admin_error(exc: Exception, namesrv_addrs: str) -> RmqError:
    """The one-line error for a failed admin operation, with what to do about it."""
    from rmq.cli.refusals import refusal
    from rmq.client.admin import AdminError
    from rmq.client.errors import NotANameServer, RouteNotFound
    from rmq.remoting.errors import RemotingConnectError, RemotingTimeoutError

    if isinstance(exc, RouteNotFound):
        return RmqError(
            f"topic {exc.topic!r} not found: the name server has no route for it",
            "check the name with 'rmq topic list', or create it with 'rmq topic update'",
        )
    if isinstance(exc, NotANameServer):
        return RmqError(
            f"{namesrv_origin(exc.addr)} is not a name server (it answered {exc.answer})",
            "point -n/--namesrv at a name server (port 9876 unless set otherwise)",
        )
    refused = refusal(exc)
    if refused is not None:
        return refused
    if isinstance(exc, RemotingConnectError | RemotingTimeoutError):
        return RmqError(
            f"cannot reach the server: {exc}",
            f"check that the name server(s) {namesrv_origin(namesrv_addrs)} and the brokers "
            "are running, and -n/--namesrv",
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
