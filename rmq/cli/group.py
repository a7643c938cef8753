"""`rmq group`: consumer groups, their members, lag and offsets.

    rmq group list [--cluster NAME]                         every group: members and lag
    rmq group describe GROUP                                state, members, per-queue progress
    rmq group connections GROUP                             the members' connections
    rmq group update GROUP [--cluster NAME | --broker ADDR] [--retry-max-times N] ...
    rmq group delete GROUP [--cluster NAME | --broker ADDR] [--remove-offset] [--yes]
    rmq group reset-offsets GROUP --topic T --to first|last|@<time> [--yes]
    rmq group clone-offsets SRC DST --topic T

The friendly face of mqadmin's consumerProgress, consumerConnection, updateSubGroup,
deleteSubGroup, resetOffsetByTime / skipAccumulatedMessage and cloneGroupOffset: every verb
calls the admin operations of `rmq.client.adminops` that `rmq mqadmin` calls.  The offset
verbs (reset-offsets, clone-offsets) live in rmq.cli.group_offsets, registered on this app.
The group is a positional argument (`-g/--group` is accepted too); `--cluster` defaults to the
only cluster the name server knows.  `describe` is what `rpk group describe` is: the group's
state (`Stable` with members online, `Empty` with committed offsets but no member) and
members, then per queue the committed offset, the end offset, the lag, the client holding the
queue and the last consume time.  State changes take `--dry-run` (the requests are printed,
nothing is sent); `delete` and `reset-offsets` ask on a terminal and need `--yes` elsewhere.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import click
import typer

from rmq.cli.errors import RmqError, YesOption, require_confirmation
from rmq.cli.main import command_app
from rmq.cli.output import OutputFormat, OutputOption, render, resolve_output
from rmq.cli.settings import NamesrvOption, resolve_namesrv
from rmq.cli.topic import DryRunOption, human_time, only_cluster, run_admin, show, show_plan

if TYPE_CHECKING:
    from rmq.client.admin import AdminClient, PlannedRequest
    from rmq.remoting.bodies import ConsumerConnection, MessageQueue
    from rmq.remoting.codes import RequestCode

app = command_app(help="Consumer groups: members, lag and offsets.")

GroupArgument = Annotated[
    str | None, typer.Argument(metavar="GROUP", help="Consumer group.", show_default=False)
]
GroupOption = Annotated[
    str | None,
    typer.Option("--group", "-g", metavar="GROUP", help="The group (instead of the argument)."),
]
ClusterOption = Annotated[
    str | None,
    typer.Option(
        "--cluster",
        metavar="NAME",
        help="Cluster. Default: the only cluster of the name server.",
        show_default=False,
    ),
]
BrokerOption = Annotated[
    str | None,
    typer.Option(
        "--broker",
        metavar="HOST:PORT",
        help="Only this broker (instead of --cluster).",
        show_default=False,
    ),
]
TopicOption = Annotated[str, typer.Option("--topic", "-t", metavar="TOPIC", help="Topic.")]

QUEUE_COLUMNS = (
    "topic",
    "brokerName",
    "queueId",
    "committedOffset",
    "endOffset",
    "lag",
    "clientId",
    "lastConsumed",
)
MEMBER_COLUMNS = ("clientId", "clientAddr", "language", "version")


def group_name(argument: str | None, option: str | None, what: str = "GROUP") -> str:
    """The group given as the argument or with -g/--group (exactly one of them)."""
    if argument is not None and option is not None and argument != option:
        raise click.UsageError(f"give {what} as the argument or with -g/--group, not both")
    name = argument if argument is not None else option
    if not name:
        raise click.UsageError(f"missing {what}")
    return name


async def default_cluster(admin: AdminClient, cluster: str | None) -> str:
    """`cluster` when the name server knows it (AdminError otherwise), else the only cluster
    it knows (`rmq.cli.topic.only_cluster`)."""
    from rmq.client.admin import AdminError

    if cluster is None:
        return await only_cluster(admin)
    names = sorted((await admin.cluster_info()).cluster_addr_table)
    if cluster not in names:
        raise AdminError(f"cluster {cluster!r} not found (clusters: {', '.join(names)})")
    return cluster


def not_found(group: str) -> RmqError:
    return RmqError(
        f"consumer group {group!r} not found: no broker knows it (no route for its retry topic)",
        "check the name with 'rmq group list'",
    )


def unknown_group(group: str) -> RmqError:
    return RmqError(
        f"consumer group {group!r} not found: no broker has a retry topic or an offset of it",
        "check the name with 'rmq group list'",
    )


def _offline(group: str, exc: Exception) -> RmqError:
    return RmqError(f"consumer group {group!r}: {exc}", "check the name with 'rmq group list'")


def _member(conn: Any) -> dict[str, Any]:
    from rmq.remoting.codes import version_desc

    return {
        "clientId": conn.client_id,
        "clientAddr": conn.client_addr,
        "language": conn.language.name,
        "version": version_desc(conn.version),
    }


def queue_key(mq: MessageQueue) -> tuple[str, str, int]:
    return (mq.topic, mq.broker_name, mq.queue_id)


async def _online_members(admin: AdminClient, group: str) -> ConsumerConnection | None:
    """The group's consumer connection, None when no member is online (a group without a
    retry topic has none: a member's heartbeat creates it)."""
    from rmq.client.adminops import consumer as ops
    from rmq.client.errors import MQBrokerError, RouteNotFound
    from rmq.remoting.codes import ResponseCode

    try:
        return await ops.consumer_connection(admin, group)
    except (ops.GroupOffline, RouteNotFound):
        return None
    except MQBrokerError as exc:
        if exc.code == ResponseCode.CONSUMER_NOT_ONLINE:
            return None
        raise


# -- reads ----------------------------------------------------------------------------------


@app.command("list")
def list_groups(
    cluster: ClusterOption = None, namesrv: NamesrvOption = None, output: OutputOption = None
) -> None:
    """List every consumer group of the cluster with its member count and lag.

    The groups of every master's group table and the groups with committed offsets there
    (system groups left out): a group whose offsets were cloned is listed with its lag
    although it has no subscription group.  -o wide adds the group's retry settings and
    whether it may consume (empty for a group without a subscription group).
    """
    from rmq.client.adminops import consumer as ops
    from rmq.client.adminops.cluster import master_addrs
    from rmq.client.adminops.topic import user_groups
    from rmq.client.errors import ClientError
    from rmq.remoting.errors import RemotingError

    async def groups(admin: AdminClient) -> list[dict[str, Any]]:
        name = await default_cluster(admin, cluster)
        configs: dict[str, Any] = {}
        masters = master_addrs(await admin.cluster_info(), name) or []
        for addr in masters:
            configs.update((await user_groups(admin, addr)).subscription_group_table)
        rows = []
        for group in sorted(configs.keys() | await ops.offset_groups(admin, masters)):
            try:
                connection = await _online_members(admin, group)
            except (ClientError, RemotingError):
                connection = None
            members = len(connection.connection_set) if connection else 0
            try:
                stats = await ops.consume_stats(admin, group, everywhere=True)
                lag: int | None = sum(
                    max(0, o.broker_offset - o.consumer_offset) for o in stats.offset_table.values()
                )
            except (ClientError, RemotingError):
                lag = None
            config = configs.get(group)
            rows.append(
                {
                    "group": group,
                    "cluster": name,
                    "members": members,
                    "lag": lag,
                    "consumeEnable": config.consume_enable if config else None,
                    "consumeBroadcastEnable": config.consume_broadcast_enable if config else None,
                    "retryQueueNums": config.retry_queue_nums if config else None,
                    "retryMaxTimes": config.retry_max_times if config else None,
                }
            )
        return rows

    rows = run_admin(resolve_namesrv(namesrv), groups)
    render(
        rows,
        columns=("group", "members", "lag"),
        wide_columns=("consumeEnable", "consumeBroadcastEnable", "retryQueueNums", "retryMaxTimes"),
        output=output,
    )


@app.command("describe")
def describe(
    group: GroupArgument = None,
    group_option: GroupOption = None,
    topic: Annotated[
        str | None,
        typer.Option("--topic", "-t", metavar="TOPIC", help="Only this topic's queues."),
    ] = None,
    namesrv: NamesrvOption = None,
    output: OutputOption = None,
) -> None:
    """Show a group's state, members and, per queue, offsets, lag, holder and last consume.

    The committed offset, the end offset (the broker's max offset), the lag between them,
    the client holding the queue (from the members' running info) and the time of the last
    consumed message.
    """
    from rmq.client.adminops import consumer as ops
    from rmq.client.errors import ClientError, RouteNotFound
    from rmq.remoting.errors import RemotingError

    name = group_name(group, group_option)

    async def collect(admin: AdminClient) -> dict[str, Any]:
        try:
            stats = await ops.consume_stats(admin, name, topic, everywhere=True)
            table, tps = stats.offset_table, stats.consume_tps
        except ops.GroupOffline:
            table, tps = {}, 0.0
        except RouteNotFound:
            raise unknown_group(name) from None
        connection = await _online_members(admin, name)
        holders: dict[tuple[str, str, int], str] = {}
        for conn in connection.connection_set if connection else []:
            try:
                info = await ops.consumer_running_info(admin, name, conn.client_id)
            except (ClientError, RemotingError):
                continue
            for mq in info.mq_table if info else {}:
                holders[queue_key(mq)] = conn.client_id
        queues = [
            {
                "topic": mq.topic,
                "brokerName": mq.broker_name,
                "queueId": mq.queue_id,
                "committedOffset": offsets.consumer_offset,
                "endOffset": offsets.broker_offset,
                "lag": max(0, offsets.broker_offset - offsets.consumer_offset),
                "clientId": holders.get(queue_key(mq)),
                "lastConsumeTimestamp": offsets.last_timestamp,
            }
            for mq, offsets in sorted(table.items(), key=lambda item: queue_key(item[0]))
        ]
        if connection is None and not queues:
            raise _offline(name, ops.GroupOffline("no member online and no committed offset"))
        return {
            "group": name,
            "state": "Stable" if connection else "Empty",
            "consumeType": connection.consume_type.name
            if connection and connection.consume_type
            else None,
            "messageModel": connection.message_model.name
            if connection and connection.message_model
            else None,
            "consumeTps": tps,
            "totalLag": sum(queue["lag"] for queue in queues),
            "members": [_member(conn) for conn in connection.connection_set] if connection else [],
            "subscriptions": sorted(connection.subscription_table) if connection else [],
            "queues": queues,
        }

    data = run_admin(resolve_namesrv(namesrv), collect)
    fmt = resolve_output(output)
    if fmt not in (OutputFormat.TABLE, OutputFormat.WIDE):
        render(data, columns=list(data), output=fmt)
        return
    summary = {key: value for key, value in data.items() if key not in ("members", "queues")}
    summary["members"] = len(data["members"])
    render(summary, columns=list(summary), output=fmt)
    typer.echo()
    render(data["members"], columns=MEMBER_COLUMNS, output=fmt, title="MEMBERS")
    typer.echo()
    rows = [
        {**queue, "lastConsumed": human_time(queue["lastConsumeTimestamp"])}
        for queue in data["queues"]
    ]
    render(rows, columns=QUEUE_COLUMNS, output=fmt, title="QUEUES")


@app.command("connections")
def connections(
    group: GroupArgument = None,
    group_option: GroupOption = None,
    broker: BrokerOption = None,
    namesrv: NamesrvOption = None,
    output: OutputOption = None,
) -> None:
    """List the connections of a group's online members (mqadmin consumerConnection).

    The table lists the members; json/ndjson/yaml give the whole answer: members,
    subscriptions and the consume settings.
    """
    from rmq.client.adminops import consumer as ops
    from rmq.client.errors import MQBrokerError, RouteNotFound

    name = group_name(group, group_option)

    async def ask(admin: AdminClient) -> dict[str, Any]:
        try:
            connection = await ops.consumer_connection(admin, name, broker)
        except RouteNotFound:
            raise not_found(name) from None
        except (ops.GroupOffline, MQBrokerError) as exc:
            raise _offline(name, exc) from None
        return {
            "group": name,
            "consumeType": connection.consume_type.name if connection.consume_type else None,
            "messageModel": connection.message_model.name if connection.message_model else None,
            "consumeFromWhere": connection.consume_from_where.name
            if connection.consume_from_where
            else None,
            "connections": [_member(conn) for conn in connection.connection_set],
            "subscriptions": [
                {"topic": topic, "subString": sub.sub_string, "subVersion": sub.sub_version}
                for topic, sub in sorted(connection.subscription_table.items())
            ],
        }

    data = run_admin(resolve_namesrv(namesrv), ask)
    show(data, table_rows=data["connections"], columns=MEMBER_COLUMNS, output=output)


# -- changes --------------------------------------------------------------------------------


def plan_request(code: RequestCode, target: str, **fields: object) -> PlannedRequest:
    from rmq.client.admin import PlannedRequest

    return PlannedRequest(code, target, {key: str(value) for key, value in fields.items()})


def _where(broker: str | None, cluster: str | None) -> str:
    if broker is not None and cluster is not None:
        raise click.UsageError("give at most one of --broker and --cluster")
    if broker is not None:
        return f"broker {broker}"
    return f"every master of cluster {cluster}" if cluster else "every master of the cluster"


@app.command("update")
def update(
    group: GroupArgument = None,
    group_option: GroupOption = None,
    cluster: ClusterOption = None,
    broker: BrokerOption = None,
    consume_enable: Annotated[
        bool, typer.Option("--consume-enable/--consume-disable", help="Whether it may consume.")
    ] = True,
    from_min: Annotated[
        bool, typer.Option("--from-min/--no-from-min", help="Consume from the min offset.")
    ] = False,
    broadcast: Annotated[
        bool, typer.Option("--broadcast/--no-broadcast", help="Allow broadcast consumption.")
    ] = False,
    retry_queues: Annotated[int, typer.Option("--retry-queues", min=1, help="Retry queues.")] = 1,
    retry_max_times: Annotated[
        int, typer.Option("--retry-max-times", min=-1, help="Retries before the DLQ.")
    ] = 16,
    broker_id: Annotated[int, typer.Option("--broker-id", min=0, help="Consume from.")] = 0,
    slow_broker_id: Annotated[
        int, typer.Option("--slow-broker-id", min=0, help="Consume from when slow.")
    ] = 1,
    dry_run: DryRunOption = False,
    namesrv: NamesrvOption = None,
    output: OutputOption = None,
) -> None:
    """Create or update a subscription group (mqadmin updateSubGroup).

    On --broker, or on every master of --cluster (default: the only cluster).  Defaults
    are updateSubGroup's.
    """
    from rmq.client.adminops.topic import update_subscription_group
    from rmq.remoting.bodies import SubscriptionGroupConfig
    from rmq.remoting.codes import RequestCode

    name = group_name(group, group_option)
    config = SubscriptionGroupConfig(
        group_name=name,
        consume_enable=consume_enable,
        consume_from_min_enable=from_min,
        consume_broadcast_enable=broadcast,
        retry_queue_nums=retry_queues,
        retry_max_times=retry_max_times,
        broker_id=broker_id,
        which_broker_when_consume_slowly=slow_broker_id,
    )
    target = _where(broker, cluster)
    if dry_run:
        plan = plan_request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, target)
        plan.ext_fields.update({"body": config.encode().decode()})
        show_plan([plan], output)
        return

    async def change(admin: AdminClient) -> dict[str, Any]:
        where = cluster if broker else await default_cluster(admin, cluster)
        result = await update_subscription_group(
            admin, config, broker_addr=broker, cluster=None if broker else where
        )
        if result.outcome.failures:
            addr, exc = next(iter(result.outcome.failures.items()))
            raise RmqError(f"update of group {name!r} failed on {addr}: {exc}")
        return {"group": name, "brokerAddrs": result.outcome.done}

    from rmq.cli.topic import record

    data = run_admin(resolve_namesrv(namesrv), change)
    data.update(record(config, exclude=("group_name",)))
    render(data, columns=list(data), output=output)


@app.command("delete")
def delete(
    group: GroupArgument = None,
    group_option: GroupOption = None,
    cluster: ClusterOption = None,
    broker: BrokerOption = None,
    remove_offset: Annotated[
        bool, typer.Option("--remove-offset", help="Also remove its committed offsets.")
    ] = False,
    yes: YesOption = False,
    dry_run: DryRunOption = False,
    namesrv: NamesrvOption = None,
    output: OutputOption = None,
) -> None:
    """Delete a subscription group (mqadmin deleteSubGroup).

    From --broker, or from every master of --cluster (default: the only cluster) and then
    its retry and dead-letter topics.  Prints the brokers that had the group (with
    --remove-offset: or its offsets) and the topics that existed; a group found nowhere is
    an error and nothing is sent.  Asks for confirmation on a terminal; elsewhere --yes is
    required.
    """
    from rmq.client.adminops.topic import delete_subscription_group, group_footprint
    from rmq.remoting.codes import RequestCode

    name = group_name(group, group_option)
    target = _where(broker, cluster)
    if dry_run:
        plan = [
            plan_request(
                RequestCode.DELETE_SUBSCRIPTIONGROUP,
                target,
                groupName=name,
                removeOffset=str(remove_offset).lower(),
            )
        ]
        if broker is None:
            plan += [
                plan_request(RequestCode.DELETE_TOPIC_IN_BROKER, target, topic=prefix + name)
                for prefix in ("%RETRY%", "%DLQ%")
            ]
        show_plan(plan, output)
        return
    require_confirmation(f"delete consumer group {name!r} from {target}", yes=yes)

    async def change(admin: AdminClient) -> dict[str, Any]:
        where = None if broker else await default_cluster(admin, cluster)
        found = await group_footprint(
            admin, name, offsets=remove_offset, broker_addr=broker, cluster=where
        )
        if not found.broker_addrs and not found.topics:
            raise RmqError(
                f"consumer group {name!r} not found ({target}): nothing was deleted",
                "check the name with 'rmq group list'",
            )
        result = await delete_subscription_group(
            admin, name, remove_offset=remove_offset, broker_addr=broker, cluster=where
        )
        failure = result.failure or result.topic_failure
        if failure is not None:
            raise RmqError(f"deletion of group {name!r} failed: {failure}")
        return {
            "group": name,
            "brokerAddrs": [addr for addr in result.broker_addrs if addr in found.broker_addrs],
            "deletedTopics": [
                deletion.topic
                for deletion in result.topic_deletions
                if deletion.topic in found.topics
            ],
        }

    data = run_admin(resolve_namesrv(namesrv), change)
    render(data, columns=list(data), output=output)
