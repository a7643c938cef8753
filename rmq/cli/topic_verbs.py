"""`rmq topic describe`, `rmq topic perm`, `rmq topic allocate` and `rmq topic stats`: the
topic verbs on the admin operations of `rmq.client.adminops` (mqadmin updateTopicPerm,
allocateMQ and statsAll), and `describe` (what `rpk topic describe` is: the route and the
queues' offsets of `topic route` and `topic status` together).

    rmq topic describe TOPIC
    rmq topic perm TOPIC PERM [--broker ADDR | --cluster NAME] [--dry-run]
    rmq topic allocate TOPIC --ip 10.0.0.1,10.0.0.2
    rmq topic stats [TOPIC]

Their app's commands join `rmq topic` (`rmq.cli.main.VERBS`); they use `rmq.cli.topic`'s
helpers: `run_admin` for the one-line errors, `show` / `render` for `-o`, `pick_topic` for
TOPIC or -t/--topic and `only_cluster` for the default of `--cluster`.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Annotated, Any

import click
import typer

from rmq.cli.errors import RmqError
from rmq.cli.main import command_app
from rmq.cli.output import OutputOption, render
from rmq.cli.settings import NamesrvOption, resolve_namesrv
from rmq.cli.topic import (
    BrokerTargetOption,
    ClusterTargetOption,
    DryRunOption,
    OptionalTopicArgument,
    TopicOption,
    only_cluster,
    parse_perm_value,
    pick_topic,
    record,
    run_admin,
    show,
    show_plan,
)

if TYPE_CHECKING:
    from rmq.client.admin import AdminClient
    from rmq.client.adminops.export import TopicTraffic
    from rmq.client.adminops.topic import PermUpdate

log = logging.getLogger(__name__)

app = command_app()


@app.command("describe")
def describe(
    topic_argument: OptionalTopicArgument = None,
    topic_option: TopicOption = None,
    namesrv: NamesrvOption = None,
    output: OutputOption = None,
) -> None:
    """Show a topic's route and the offsets of its queues together (`topic route` and
    `topic status` in one).

    A summary (clusters, brokers, queue counts, permission, messages held), then the
    brokers of the route and, per queue, the min and max offset and the store time of its
    last message.  json/yaml give one object: `route` as `topic route` prints it, `queues`
    as `topic status` does.
    """
    from rmq.cli.output import OutputFormat, resolve_output
    from rmq.cli.topic import (
        ROUTE_COLUMNS,
        STATUS_COLUMNS,
        STATUS_WIDE,
        route_view,
        status_view,
    )
    from rmq.client.admin import clusters_of_route

    topic = pick_topic(topic_argument, topic_option)

    async def collect(admin: AdminClient) -> Any:
        route = await admin.topic_route(topic)
        return (
            route,
            clusters_of_route(route, await admin.cluster_info()),
            await admin.topic_status(topic),
        )

    route, clusters, queues = run_admin(resolve_namesrv(namesrv), collect)
    document, broker_rows = route_view(topic, route)
    data, queue_rows = status_view(queues)
    perms = sorted({queue.perm for queue in route.queue_datas})
    summary = {
        "topic": topic,
        "clusters": clusters,
        "brokers": len(route.broker_datas),
        "readQueueNums": sum(queue.read_queue_nums for queue in route.queue_datas),
        "writeQueueNums": sum(queue.write_queue_nums for queue in route.queue_datas),
        "perm": perms[0] if len(perms) == 1 else perms,
        "order": bool(route.order_topic_conf),
        "messages": sum(row["messages"] for row in queue_rows),
    }
    fmt = resolve_output(output)
    if fmt not in (OutputFormat.TABLE, OutputFormat.WIDE):
        render({**summary, "route": document, "queues": data}, columns=list(summary), output=fmt)
        return
    render({**summary, "clusters": ",".join(clusters)}, columns=list(summary), output=fmt)
    typer.echo()
    render(broker_rows, columns=ROUTE_COLUMNS, output=fmt, title="BROKERS")
    typer.echo()
    render(queue_rows, columns=STATUS_COLUMNS, wide_columns=STATUS_WIDE, output=fmt, title="QUEUES")


@app.command("perm")
def perm(
    topic: Annotated[str, typer.Argument(metavar="TOPIC", help="Topic name.")],
    perm_value: Annotated[
        str, typer.Argument(metavar="PERM", help="Permission: RW, R, W or the number (6, 4, 2).")
    ],
    broker: BrokerTargetOption = None,
    cluster: ClusterTargetOption = None,
    dry_run: DryRunOption = False,
    namesrv: NamesrvOption = None,
    output: OutputOption = None,
) -> None:
    """Change a topic's permission, keeping its queue counts.

    The queue counts and sysflag come from the topic's route; the new perm goes to the
    master --broker (a master of the route) or to every master of --cluster (default: the
    only cluster).  A dry run asks the name server for the route and sends nothing else.
    """
    from rmq.client.admin import plan_topic_update
    from rmq.client.adminops.topic import update_topic_perm
    from rmq.remoting.bodies import TopicConfig

    name = pick_topic(topic, None)
    value = parse_perm_value(perm_value)
    if broker is not None and cluster is not None:
        raise click.UsageError("give at most one of --broker and --cluster")
    addrs = resolve_namesrv(namesrv)
    if dry_run:

        async def plan(admin: AdminClient) -> tuple[TopicConfig, str | None]:
            queues = (await admin.topic_route(name)).queue_datas
            if not queues:
                raise RmqError(f"topic {name!r} has no queue data in its route")
            first = queues[0]
            config = TopicConfig(
                topic_name=name,
                read_queue_nums=first.read_queue_nums,
                write_queue_nums=first.write_queue_nums,
                perm=value,
                topic_sys_flag=first.topic_sys_flag,
            )
            target = cluster if broker is not None or cluster else await only_cluster(admin)
            return config, target

        config, target = run_admin(addrs, plan)
        show_plan(
            plan_topic_update(
                config,
                addrs.split(";"),
                broker_addr=broker,
                cluster=None if broker is not None else target,
            ),
            output,
        )
        return

    async def change(admin: AdminClient) -> PermUpdate:
        target = cluster if broker is not None or cluster else await only_cluster(admin)
        return await update_topic_perm(admin, name, value, broker_addr=broker, cluster=target)

    done = run_admin(addrs, change)
    data = {
        "topic": name,
        "perm": value,
        "oldPerm": done.old_perm,
        "readQueueNums": done.config.read_queue_nums,
        "writeQueueNums": done.config.write_queue_nums,
        "brokerAddrs": sorted(done.broker_addrs),
        "unchanged": done.unchanged,
    }
    render(data, columns=list(data), output=output)


@app.command("allocate")
def allocate(
    topic_argument: OptionalTopicArgument = None,
    topic_option: TopicOption = None,
    ips: Annotated[
        str,
        typer.Option(
            "--ip",
            "-i",
            metavar="IP[,IP...]",
            help="The consumers' client ids (IPs), comma-separated, in their order.",
        ),
    ] = "",
    namesrv: NamesrvOption = None,
    output: OutputOption = None,
) -> None:
    """Show how a group of consumers would share a topic's readable queues.

    RocketMQ's default strategy (AllocateMessageQueueAveragely), as mqadmin allocateMQ
    computes it: one row per client with its queues.
    """
    from rmq.client.adminops.topic import allocate_queues

    topic = pick_topic(topic_argument, topic_option)
    clients = [ip for ip in ips.split(",") if ip]
    if not clients:
        raise click.UsageError("give the consumers with --ip IP[,IP...]")
    shares = run_admin(
        resolve_namesrv(namesrv), lambda admin: allocate_queues(admin, topic, clients)
    )
    data = [
        {"client": client, "queues": [record(mq) for mq in shares[client]]} for client in clients
    ]
    rows = [
        {"client": client, "queues": [f"{mq.broker_name}:{mq.queue_id}" for mq in shares[client]]}
        for client in clients
    ]
    show(data, table_rows=rows, columns=("client", "queues"), output=output)


STATS_COLUMNS = ("topic", "group", "accumulation", "inTps", "outTps", "inMsg24Hour", "outMsg24Hour")


@app.command("stats")
def stats(
    topic_argument: OptionalTopicArgument = None,
    topic_option: TopicOption = None,
    namesrv: NamesrvOption = None,
    output: OutputOption = None,
) -> None:
    """Show put and get rates and backlogs of one topic, or of every topic.

    One row per topic and consumer group (a topic no group consumes has one row with an
    empty group): the group's accumulation (messages not consumed yet), the topic's put TPS,
    the group's get TPS and the messages put and got in the last 24 hours.  Without a topic,
    every topic but the retry and dead-letter ones; a topic that cannot be read is left out
    with a warning.
    """
    from rmq.client.adminops.consumer import all_topic_names
    from rmq.client.adminops.export import stats_topics, topic_traffic

    chosen = None
    if topic_argument is not None or topic_option is not None:
        chosen = pick_topic(topic_argument, topic_option)

    async def traffic(admin: AdminClient) -> list[TopicTraffic]:
        if chosen is not None:
            return [await topic_traffic(admin, chosen)]
        found = []
        for topic in stats_topics(await all_topic_names(admin), None):
            try:
                found.append(await topic_traffic(admin, topic))
            except Exception as exc:
                log.warning("topic %s left out: %s", topic, exc)
        return found

    found = run_admin(resolve_namesrv(namesrv), traffic)
    data = [row for topic in found for row in _stats_rows(topic)]
    table = [{**row, "inTps": f"{row['inTps']:.2f}"} for row in data]
    for row, shown in zip(data, table, strict=True):
        shown["outTps"] = "" if row["outTps"] is None else f"{row['outTps']:.2f}"
    show(data, table_rows=table, columns=STATS_COLUMNS, output=output)


def _stats_rows(traffic: TopicTraffic) -> list[dict[str, Any]]:
    if not traffic.groups:
        return [
            dict(
                zip(
                    STATS_COLUMNS,
                    (traffic.topic, None, 0, traffic.in_tps, None, traffic.in_day, None),
                    strict=True,
                )
            )
        ]
    return [
        {
            "topic": traffic.topic,
            "group": group.group,
            "accumulation": group.accumulation,
            "inTps": traffic.in_tps,
            "outTps": group.out_tps,
            "inMsg24Hour": traffic.in_day,
            "outMsg24Hour": group.out_day,
        }
        for group in traffic.groups
    ]
