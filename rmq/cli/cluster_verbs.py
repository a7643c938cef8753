"""`rmq cluster` verbs about brokers: runtime status, send RT, consume stats, write
permission and store maintenance, on the admin operations of `rmq.client.adminops`.

    rmq cluster broker-status [--broker ADDR | --cluster NAME]     mqadmin brokerStatus
    rmq cluster rt [--cluster NAME] [--amount 100] [--size 128]    clusterRT, one round
    rmq cluster consume-stats [--broker ADDR | --cluster NAME]     brokerConsumeStats
    rmq cluster write-perm wipe|add BROKER_NAME                    wipe/addWritePerm
    rmq cluster clean-expired-cq | clean-unused-topic | delete-expired-commitlog
                                  [--broker ADDR | --cluster NAME] cleanExpiredCQ, ...

`--cluster` defaults to the only cluster the name server knows.  `write-perm wipe` and the
three clean-ups are destructive: they ask on a terminal and need `--yes` elsewhere; every
state change takes `--dry-run`, which prints the requests and sends nothing.  This module's
app's commands join `rmq cluster` (`rmq.cli.main.VERBS`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import click
import typer

from rmq.cli.errors import RmqError, YesOption, require_confirmation
from rmq.cli.main import command_app
from rmq.cli.output import OutputOption, render
from rmq.cli.settings import NamesrvOption, resolve_namesrv
from rmq.cli.topic import DryRunOption, human_time, only_cluster, run_admin, show, show_plan

if TYPE_CHECKING:
    from rmq.client.admin import AdminClient, PlannedRequest
    from rmq.client.adminops.topic import Maintenance
    from rmq.remoting.bodies import ConsumeStatsList

app = command_app()

BrokerOption = Annotated[
    str | None,
    typer.Option("--broker", metavar="HOST:PORT", help="This broker only.", show_default=False),
]
ClusterOption = Annotated[
    str | None,
    typer.Option(
        "--cluster",
        metavar="NAME",
        help="Every broker of this cluster. Default: the only cluster.",
        show_default=False,
    ),
]


def _one_target(broker: str | None, cluster: str | None) -> None:
    if broker is not None and cluster is not None:
        raise click.UsageError("give at most one of --broker and --cluster")


async def _cluster_brokers(admin: AdminClient, cluster: str | None, *, masters: bool) -> list[str]:
    """The masters (or every broker) of `cluster`, default the only one; RmqError when the
    name server does not know it."""
    from rmq.client.adminops.cluster import cluster_addrs, master_addrs

    name = cluster or await only_cluster(admin)
    info = await admin.cluster_info()
    addrs = (master_addrs if masters else cluster_addrs)(info, name)
    if addrs is None:
        known = ", ".join(sorted(info.cluster_addr_table))
        raise RmqError(
            f"cluster {name!r} is not known to the name server (known: {known})",
            "see 'rmq cluster list'",
        )
    return sorted(addrs)


@app.command("broker-status")
def broker_status(
    broker: BrokerOption = None,
    cluster: ClusterOption = None,
    namesrv: NamesrvOption = None,
    output: OutputOption = None,
) -> None:
    """Show the runtime figures of brokers (GET_BROKER_RUNTIME_INFO).

    One row per broker and key, keys sorted: --broker's, else those of every broker
    (masters and slaves) of --cluster (default: the only cluster).
    """
    _one_target(broker, cluster)

    async def tables(admin: AdminClient) -> list[tuple[str, dict[str, str]]]:
        addrs = [broker] if broker else await _cluster_brokers(admin, cluster, masters=False)
        return [(addr, await admin.broker_runtime_info(addr)) for addr in addrs]

    found = run_admin(resolve_namesrv(namesrv), tables)
    data = [
        {"brokerAddr": addr, "key": key, "value": table[key]}
        for addr, table in found
        for key in sorted(table)
    ]
    render(data, columns=("brokerAddr", "key", "value"), output=output)


@app.command("rt")
def rt(
    cluster: ClusterOption = None,
    amount: Annotated[
        int, typer.Option("--amount", min=1, help="Messages sent to each broker.")
    ] = 100,
    size: Annotated[int, typer.Option("--size", min=0, help="Message body size (bytes).")] = 128,
    namesrv: NamesrvOption = None,
    output: OutputOption = None,
) -> None:
    """Measure the send RT of every broker of a cluster (one round of mqadmin clusterRT).

    Sends --amount messages of --size bytes, one after the other, to each broker's own
    topic (its broker name) and reports the average RT (ms, the first send left out), the
    sends that succeeded and those that failed.
    """
    import time

    from rmq.client.adminops.cluster import measure_send_rt
    from rmq.client.producer import Producer

    async def measure(admin: AdminClient) -> list[dict[str, Any]]:
        name = cluster or await only_cluster(admin)
        names = (await admin.cluster_info()).cluster_addr_table.get(name)
        if names is None:
            await _cluster_brokers(admin, name, masters=True)  # the unknown cluster's error
            return []
        rows = []
        group = f"rmq-cluster-rt-{time.time_ns()}"
        async with Producer(group, ";".join(admin.namesrv_addrs)) as producer:
            for broker_name in sorted(names):
                sent = await measure_send_rt(producer, broker_name, b"a" * size, amount)
                rows.append(
                    {
                        "cluster": name,
                        "brokerName": broker_name,
                        "rtMs": sent.elapsed_ms / (amount - 1) if amount > 1 else None,
                        "successCount": sent.success,
                        "failCount": sent.failed,
                    }
                )
        return rows

    data = run_admin(resolve_namesrv(namesrv), measure)
    table = [{**row, "rtMs": "" if row["rtMs"] is None else f"{row['rtMs']:.2f}"} for row in data]
    show(data, table_rows=table, columns=list(table[0]) if table else (), output=output)


@app.command("consume-stats")
def consume_stats(
    broker: BrokerOption = None,
    cluster: ClusterOption = None,
    order: Annotated[bool, typer.Option("--order", help="Ordered topics only.")] = False,
    namesrv: NamesrvOption = None,
    output: OutputOption = None,
) -> None:
    """Show every group's progress on brokers (GET_BROKER_CONSUME_STATS).

    One row per broker, group and queue: the broker and consumer offsets, the lag and the
    last consume time; --broker's, else those of every master of --cluster (default: the
    only cluster).
    """
    from rmq.client.adminops.consumer import broker_consume_stats

    _one_target(broker, cluster)

    async def fetch(admin: AdminClient) -> list[tuple[str, ConsumeStatsList]]:
        addrs = [broker] if broker else await _cluster_brokers(admin, cluster, masters=True)
        timeout = 50.0  # mqadmin brokerConsumeStats' default
        return [(addr, await broker_consume_stats(admin, addr, order, timeout)) for addr in addrs]

    data: list[dict[str, Any]] = [
        {
            "brokerAddr": addr,
            "topic": mq.topic,
            "group": group,
            "brokerName": mq.broker_name,
            "queueId": mq.queue_id,
            "brokerOffset": wrapper.broker_offset,
            "consumerOffset": wrapper.consumer_offset,
            "lag": wrapper.broker_offset - wrapper.consumer_offset,
            "lastTimestamp": wrapper.last_timestamp,
        }
        for addr, stats_list in run_admin(resolve_namesrv(namesrv), fetch)
        for by_group in stats_list.consume_stats_list
        for group, stats_of_group in by_group.items()
        for stats in stats_of_group
        for mq, wrapper in sorted(
            stats.offset_table.items(), key=lambda item: (item[0].topic, item[0].queue_id)
        )
    ]
    table = [{**row, "lastTime": human_time(row["lastTimestamp"])} for row in data]
    columns = ("topic", "group", "brokerName", "queueId", "brokerOffset", "consumerOffset")
    show(data, table_rows=table, columns=(*columns, "lag", "lastTime"), output=output)


# -- write permission -------------------------------------------------------------------------

write_perm = command_app(help="Wipe or restore a broker's write permission on the name servers.")
app.add_typer(write_perm, name="write-perm")

BrokerNameArgument = Annotated[str, typer.Argument(metavar="BROKER_NAME", help="Broker name.")]


def _change_write_perm(
    broker_name: str, *, add: bool, dry_run: bool, namesrv: str | None, output: Any
) -> None:
    from rmq.client.admin import PlannedRequest
    from rmq.client.adminops.cluster import add_write_perm, wipe_write_perm
    from rmq.remoting.codes import RequestCode

    addrs = resolve_namesrv(namesrv)
    if dry_run:
        code = (
            RequestCode.ADD_WRITE_PERM_OF_BROKER if add else RequestCode.WIPE_WRITE_PERM_OF_BROKER
        )
        plan = [
            PlannedRequest(code, f"name server {addr}", {"brokerName": broker_name})
            for addr in addrs.split(";")
        ]
        show_plan(plan, output)
        return
    change = add_write_perm if add else wipe_write_perm
    changes = run_admin(addrs, lambda admin: change(admin, broker_name))
    data = [
        {
            "namesrvAddr": done.namesrv_addr,
            "brokerName": broker_name,
            "topicCount": done.topic_count,
            "error": None if done.error is None else str(done.error),
        }
        for done in changes
    ]
    render(data, columns=("namesrvAddr", "brokerName", "topicCount", "error"), output=output)
    failed = [row for row in data if row["error"] is not None]
    if failed:
        detail = "; ".join(f"{row['namesrvAddr']}: {row['error']}" for row in failed)
        verb = "add" if add else "wipe"
        raise RmqError(f"failed to {verb} the write perm of {broker_name!r} on {detail}")


@write_perm.command("wipe")
def wipe(
    broker_name: BrokerNameArgument,
    yes: YesOption = False,
    dry_run: DryRunOption = False,
    namesrv: NamesrvOption = None,
    output: OutputOption = None,
) -> None:
    """Take the write permission of a broker's topics away on every name server.

    Producers stop sending to the broker (routes show its queues read-only) while it keeps
    serving consumers.  One row per name server with the topics it changed.  Asks for
    confirmation on a terminal; elsewhere --yes is required.
    """
    if not dry_run:
        require_confirmation(f"wipe the write permission of broker {broker_name!r}", yes=yes)
    _change_write_perm(broker_name, add=False, dry_run=dry_run, namesrv=namesrv, output=output)


@write_perm.command("add")
def add(
    broker_name: BrokerNameArgument,
    dry_run: DryRunOption = False,
    namesrv: NamesrvOption = None,
    output: OutputOption = None,
) -> None:
    """Give a broker's topics their write permission back on every name server."""
    _change_write_perm(broker_name, add=True, dry_run=dry_run, namesrv=namesrv, output=output)


# -- store maintenance ------------------------------------------------------------------------


def _maintenance(
    what: str,
    broker: str | None,
    cluster: str | None,
    yes: bool,
    dry_run: bool,
    namesrv: str | None,
    output: Any,
) -> None:
    from rmq.client.admin import PlannedRequest
    from rmq.client.adminops.topic import Maintenance, store_maintenance
    from rmq.remoting.codes import RequestCode

    _one_target(broker, cluster)
    task: Maintenance = Maintenance[what]
    addrs = resolve_namesrv(namesrv)
    target = f"broker {broker}" if broker else None
    if target is None:
        name = cluster or run_admin(addrs, only_cluster)
        target = f"every broker of cluster {name}"
        cluster = name
    if dry_run:
        plan: list[PlannedRequest] = [PlannedRequest(RequestCode[what], target, {})]
        show_plan(plan, output)
        return
    require_confirmation(f"{task.value} on {target}", yes=yes)

    async def run(admin: AdminClient) -> list[str]:
        if broker is None:
            await _cluster_brokers(admin, cluster, masters=False)  # an unknown cluster fails
        return await store_maintenance(admin, task, broker_addr=broker, cluster=cluster)

    done = run_admin(addrs, run)
    data = {"request": what, "brokerAddrs": sorted(done)}
    render(data, columns=list(data), output=output)


MAINTENANCE_HELP = (
    " on --broker, else on every broker (masters and slaves) of --cluster (default: the only"
    " cluster).  Asks for confirmation on a terminal; elsewhere --yes is required."
)


def _maintenance_command(name: str, what: str, summary: str) -> None:
    """Register `rmq cluster <name>`, sending the store maintenance request `what`."""

    def command(
        broker: BrokerOption = None,
        cluster: ClusterOption = None,
        yes: YesOption = False,
        dry_run: DryRunOption = False,
        namesrv: NamesrvOption = None,
        output: OutputOption = None,
    ) -> None:
        _maintenance(what, broker, cluster, yes, dry_run, namesrv, output)

    app.command(name, help=summary + MAINTENANCE_HELP)(command)


_maintenance_command(
    "clean-expired-cq", "CLEAN_EXPIRED_CONSUMEQUEUE", "Delete expired consume queue files"
)
_maintenance_command(
    "clean-unused-topic", "CLEAN_UNUSED_TOPIC", "Delete the stores of topics no longer served"
)
_maintenance_command(
    "delete-expired-commitlog", "DELETE_EXPIRED_COMMITLOG", "Delete expired commitlog files now"
)
