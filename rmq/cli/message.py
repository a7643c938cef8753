"""`rmq message`: look messages up, send one again, have a consumer consume one, probe a
broker's sends.

    rmq message get ID [-t TOPIC]                       queryMsgById / queryMsgByUniqueKey
    rmq message by-key TOPIC KEY                        queryMsgByKey
    rmq message by-unique-key TOPIC MSGID               queryMsgByUniqueKey
    rmq message by-offset TOPIC --broker NAME --queue N --offset N   queryMsgByOffset
    rmq message resend MSGID [--dry-run]                queryMsgById -s true
    rmq message consume-directly MSGID -g GROUP [--client-id ID] [-t TOPIC]   queryMsgById -g -d
    rmq message send-status BROKER_NAME [--size N] [--count N]               sendMsgStatus
    rmq message trace MSGID [--trace-topic TOPIC]       queryMsgTraceById

The lookups print the message record of docs/cli.md (`rmq.common.jsonrecord`, the object
`rmq consume` prints): one object for `get`, `by-unique-key` and `by-offset`, a list for
`by-key`.  `get` takes either id a send prints, the unique key (`msgId`) or the offset id
(`offsetMsgId`), and tells them apart as `rmq inspect by-id` does (rmq.common.msglookup).
`MSGID` of `resend` and `consume-directly` is the offset message id; `consume-directly -t
TOPIC` takes the unique key instead.  The topic
may be given with -t/--topic instead of as the first argument.  The operations are
rmq/client/adminops/message.py's and message_friendly.py's, the ones `rmq mqadmin` runs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import click
import typer

from rmq.cli.errors import RmqError
from rmq.cli.main import command_app
from rmq.cli.output import OutputFormat, OutputOption, render
from rmq.cli.settings import NamesrvOption, resolve_namesrv
from rmq.cli.topic import (
    DryRunOption,
    OptionalTopicArgument,
    TopicOption,
    pick_topic,
    run_admin,
    show,
    show_plan,
)

if TYPE_CHECKING:
    from rmq.client.admin import AdminClient
    from rmq.common.message import MessageRecord

T = TypeVar("T")

app = command_app(help="Look messages up, resend them, probe sends.")

MsgIdArgument = Annotated[
    str, typer.Argument(metavar="MSGID", help="Offset message id (offsetMsgId).")
]
RECORD_COLUMNS = ("brokerName", "queueId", "queueOffset", "msgId", "tags", "keys", "body")
RECORD_WIDE_COLUMNS = ("offsetMsgId", "storeTimestamp", "bornHost", "storeHost")
SEND_COLUMNS = ("rtMs", "sendStatus", "msgId", "offsetMsgId", "brokerName", "queueId")


@app.callback()
def message() -> None:
    """Look messages up, resend them, probe sends."""


def _run(
    namesrv: str | None,
    operation: Callable[[AdminClient], Awaitable[T]],
    what: str,
    *,
    group: str | None = None,
) -> T:
    """run_admin, with the client's 'no message' (NO_MESSAGE) as a line naming `what` and,
    for `group`, a group without running members as a line naming it."""
    from rmq.client.adminops.consumer import GroupOffline
    from rmq.client.errors import MQClientError, RouteNotFound
    from rmq.common.naming import retry_topic
    from rmq.remoting.codes import ResponseCode

    try:
        return run_admin(resolve_namesrv(namesrv), operation)
    except RmqError as exc:
        cause = exc.__cause__
        if isinstance(cause, MQClientError) and cause.code == ResponseCode.NO_MESSAGE:
            raise RmqError(f"{what} not found", "check the id, key or topic") from cause
        if isinstance(cause, RouteNotFound) and group and cause.topic == retry_topic(group):
            raise RmqError(
                f"consumer group {group!r} not found: no broker knows it",
                "check the name with 'rmq group list'",
            ) from cause
        if isinstance(cause, GroupOffline):
            raise RmqError(
                f"consumer group {group!r} has no running member",
                "start a consumer of the group, or check the name",
            ) from cause
        raise


def _topic_and(
    first: str | None, second: str | None, topic: str | None, what: str
) -> tuple[str, str]:
    """(TOPIC, `what`) from `TOPIC WHAT` or `-t TOPIC WHAT`."""
    if topic is not None:
        if first is None or second is not None:
            raise click.UsageError(f"with -t/--topic give only {what}")
        return topic, first
    if first is None or second is None:
        raise click.UsageError(f"give TOPIC and {what}")
    return first, second


async def _with_broker(admin: AdminClient, record: MessageRecord) -> dict[str, Any]:
    from rmq.client.adminops.message_friendly import stored_by
    from rmq.common.jsonrecord import to_record_dict

    return to_record_dict(record, await stored_by(admin, record))


def _show_record(data: dict[str, Any], output: OutputFormat | None) -> None:
    render(data, columns=list(data), output=output)


@app.command("get")
def get(
    msg_id: Annotated[
        str,
        typer.Argument(
            metavar="ID", help="Message id: the unique key (msgId) or the offset id (offsetMsgId)."
        ),
    ],
    topic: Annotated[
        str | None,
        typer.Option(
            "--topic",
            "-t",
            metavar="TOPIC",
            help="Look a unique key up in TOPIC only. Default: every topic.",
            show_default=False,
        ),
    ] = None,
    namesrv: NamesrvOption = None,
    output: OutputOption = None,
) -> None:
    """Print the message an id names: either id a send prints.

    An id that decodes to a broker the name server lists is an offset id, read there
    (VIEW_MESSAGE_BY_ID); any other id is a unique key, looked up in TOPIC or in every
    topic of the cluster, and the earliest message with it is printed (a retried or delayed
    message keeps its unique key: copies in retry and system topics come after the
    original).  The address in an id is never connected to unless the name server lists it.
    """
    from rmq.client.adminops.message import message_by_id

    async def lookup(admin: AdminClient) -> dict[str, Any]:
        return await _with_broker(admin, await message_by_id(admin, msg_id, topic))

    where = f" in topic {topic!r}" if topic is not None else ""
    _show_record(_run(namesrv, lookup, f"message {msg_id!r}{where}"), output)


@app.command("by-key")
def by_key(
    first: Annotated[str | None, typer.Argument(metavar="TOPIC", show_default=False)] = None,
    second: Annotated[str | None, typer.Argument(metavar="KEY", show_default=False)] = None,
    topic: TopicOption = None,
    namesrv: NamesrvOption = None,
    output: OutputOption = None,
) -> None:
    """Print the messages of TOPIC with KEY among their keys (QUERY_MESSAGE, at most 64 per
    broker).  -o wide adds the offset id, store time and hosts."""
    from rmq.client.adminops.message import query_messages

    topic_name, key = _topic_and(first, second, topic, "KEY")

    async def lookup(admin: AdminClient) -> list[dict[str, Any]]:
        records = await query_messages(admin, topic_name, key)
        return [await _with_broker(admin, record) for record in records]

    show(
        _run(namesrv, lookup, f"message with key {key!r} in topic {topic_name!r}"),
        columns=RECORD_COLUMNS,
        wide_columns=RECORD_WIDE_COLUMNS,
        output=output,
    )


@app.command("by-unique-key")
def by_unique_key(
    first: Annotated[str | None, typer.Argument(metavar="TOPIC", show_default=False)] = None,
    second: Annotated[str | None, typer.Argument(metavar="MSGID", show_default=False)] = None,
    topic: TopicOption = None,
    namesrv: NamesrvOption = None,
    output: OutputOption = None,
) -> None:
    """Print the message of TOPIC with this unique key (msgId; the earliest stored)."""
    from rmq.client.adminops.message import UNIQUE_KEY_QUERY_MAX, query_messages

    topic_name, unique_key = _topic_and(first, second, topic, "MSGID")

    async def lookup(admin: AdminClient) -> dict[str, Any]:
        records = await query_messages(
            admin, topic_name, unique_key, unique=True, max_num=UNIQUE_KEY_QUERY_MAX
        )
        return await _with_broker(admin, records[0])

    what = f"message with unique key {unique_key!r} in topic {topic_name!r}"
    _show_record(_run(namesrv, lookup, what), output)


@app.command("by-offset")
def by_offset(
    first: OptionalTopicArgument = None,
    broker: Annotated[
        str, typer.Option("--broker", metavar="NAME", help="Broker name (e.g. broker-a).")
    ] = "",
    queue: Annotated[int, typer.Option("--queue", "-q", min=0, help="Queue id.")] = 0,
    offset: Annotated[int, typer.Option("--offset", min=0, help="Queue offset.")] = 0,
    topic: TopicOption = None,
    namesrv: NamesrvOption = None,
    output: OutputOption = None,
) -> None:
    """Print the message at one offset of one queue of TOPIC (pulled as TOOLS_CONSUMER)."""
    from rmq.client.adminops.message_friendly import message_at
    from rmq.common.jsonrecord import to_record_dict

    topic_name = pick_topic(first, topic)
    if not broker:
        raise click.UsageError("give the broker name with --broker NAME")

    async def lookup(admin: AdminClient) -> MessageRecord | None:
        return await message_at(admin, topic_name, broker, queue, offset)

    found = _run(namesrv, lookup, "message")
    if found is None:
        raise RmqError(
            f"no message at offset {offset} of queue {queue} of topic {topic_name!r} on {broker}",
            "see 'rmq topic status' for the queues' offsets",
        )
    _show_record(to_record_dict(found, broker), output)


@app.command("resend")
def resend(
    msg_id: MsgIdArgument,
    dry_run: DryRunOption = False,
    namesrv: NamesrvOption = None,
    output: OutputOption = None,
) -> None:
    """Send a stored message again (producer group ReSendMsgById).

    The copy keeps the topic, tags, keys, flag, body and user properties and gets a new
    unique key.  --dry-run looks the message up and prints the copy without sending it.
    """
    from rmq.client.adminops.message import view_message
    from rmq.client.adminops.message_friendly import resend as send_again
    from rmq.client.adminops.message_friendly import resend_copy

    async def run(admin: AdminClient) -> dict[str, Any]:
        record = await view_message(admin, msg_id)
        if dry_run:
            copy = resend_copy(record)
            return {
                "originalMsgId": msg_id,
                "topic": copy.topic,
                "tags": copy.tags,
                "keys": copy.keys,
                "flag": copy.flag,
                "properties": dict(copy.properties),
                "bodySize": len(copy.body),
            }
        return {"originalMsgId": msg_id, **_sent(await send_again(admin, record))}

    data = _run(namesrv, run, f"message {msg_id!r}")
    render(data, columns=list(data), output=output)
    if dry_run:
        typer.echo("dry run: nothing was sent", err=True)


def _sent(result: Any) -> dict[str, Any]:
    return {
        "sendStatus": result.status.name,
        "msgId": result.msg_id,
        "offsetMsgId": result.offset_msg_id,
        "topic": result.message_queue.topic,
        "brokerName": result.message_queue.broker_name,
        "queueId": result.message_queue.queue_id,
        "queueOffset": result.queue_offset,
    }


@app.command("consume-directly")
def consume_directly(
    msg_id: Annotated[
        str,
        typer.Argument(
            metavar="MSGID", help="Offset message id; with -t/--topic the unique key (msgId)."
        ),
    ],
    group: Annotated[str, typer.Option("--group", "-g", metavar="GROUP", help="Consumer group.")],
    client_id: Annotated[
        str | None,
        typer.Option(
            "--client-id",
            metavar="ID",
            help="The member that consumes it. Default: the group's first member.",
            show_default=False,
        ),
    ] = None,
    topic: TopicOption = None,
    dry_run: DryRunOption = False,
    namesrv: NamesrvOption = None,
    output: OutputOption = None,
) -> None:
    """Have a running member of GROUP consume one stored message now
    (CONSUME_MESSAGE_DIRECTLY through the broker that stored it) and print its verdict."""
    from rmq.client.admin import PlannedRequest
    from rmq.remoting.codes import RequestCode

    if dry_run:
        fields = {"consumerGroup": group, "clientId": client_id or "", "msgId": msg_id}
        target = "the broker that stored the message"
        show_plan([PlannedRequest(RequestCode.CONSUME_MESSAGE_DIRECTLY, target, fields)], output)
        return

    async def run(admin: AdminClient) -> dict[str, Any]:
        from rmq.client.adminops import message as ops

        if topic is None:
            record = await ops.view_message(admin, msg_id)
        else:
            (record,) = await ops.query_messages(admin, topic, msg_id, unique=True)
        member, result = await ops.consume_directly_by_group(admin, group, record, client_id)
        return {
            "msgId": record.msg_id,
            "offsetMsgId": record.offset_msg_id,
            "group": group,
            "clientId": member,
            "consumeResult": result.consume_result.name if result.consume_result else None,
            "order": result.order,
            "autoCommit": result.auto_commit,
            "remark": result.remark,
            "spentTimeMillis": result.spent_time_mills,
        }

    data = _run(namesrv, run, f"message {msg_id!r}", group=group)
    render(data, columns=list(data), output=output)


@app.command("send-status")
def send_status(
    broker: Annotated[
        str, typer.Argument(metavar="BROKER_NAME", help="Broker name (e.g. broker-a).")
    ],
    size: Annotated[int, typer.Option("--size", min=1, help="Message size in bytes.")] = 128,
    count: Annotated[int, typer.Option("--count", min=1, help="Timed sends.")] = 50,
    namesrv: NamesrvOption = None,
    output: OutputOption = None,
) -> None:
    """Send test messages to a broker's own topic and print each send's time and result.

    One untimed warm-up send, then --count sends of --size bytes (producer group PID_SMSC).
    """
    from rmq.client.adminops.message_friendly import TimedSend
    from rmq.client.adminops.message_friendly import send_status as timed_sends

    async def probe(admin: AdminClient) -> list[TimedSend]:
        if broker not in (await admin.cluster_info()).broker_addr_table:
            raise RmqError(
                f"broker {broker!r} not found: the name server has no broker of that name",
                "see 'rmq cluster list'",
            )
        return await timed_sends(admin, broker, size, count)

    sends = _run(namesrv, probe, "broker")
    show(
        [{"rtMs": send.rt_ms, **_sent(send.result)} for send in sends],
        columns=SEND_COLUMNS,
        wide_columns=("topic", "queueOffset"),
        output=output,
    )


@app.command("trace")
def trace(
    msg_id: Annotated[str, typer.Argument(metavar="MSGID", help="Message id (msgId).")],
    trace_topic: Annotated[
        str | None,
        typer.Option(
            "--trace-topic",
            metavar="TOPIC",
            help="Trace topic. Default: RMQ_SYS_TRACE_TOPIC.",
            show_default=False,
        ),
    ] = None,
    namesrv: NamesrvOption = None,
    output: OutputOption = None,
) -> None:
    """Print the trace of message MSGID: its Pub, SubBefore and SubAfter records.

    The records are those traced clients (`rmq produce --trace`, `rmq consume --trace`,
    Apache's clients with message trace on) wrote to the trace topic.  -o wide adds the
    topic, tags, keys, store host and offset id.
    """
    from rmq.cli.topic import human_time
    from rmq.client.adminops.trace import query_trace
    from rmq.common.naming import RMQ_SYS_TRACE_TOPIC

    topic_name = trace_topic or RMQ_SYS_TRACE_TOPIC

    async def lookup(admin: AdminClient) -> list[Any]:
        return await query_trace(admin, msg_id, topic_name)

    views = _run(namesrv, lookup, f"trace of message {msg_id!r} in topic {topic_name!r}")
    rows = [
        {
            "type": view.msg_type,
            "msgId": view.msg_id,
            "group": view.group,
            "clientHost": view.client_host,
            "timestamp": view.timestamp,
            "costTimeMs": view.cost_time,
            "status": view.status,
            "topic": view.topic,
            "tags": view.tags,
            "keys": view.keys,
            "storeHost": view.store_host,
            "offsetMsgId": view.offset_msg_id,
        }
        for view in views
    ]
    show(
        rows,
        columns=("type", "group", "clientHost", "time", "costTimeMs", "status"),
        wide_columns=("topic", "tags", "keys", "storeHost", "offsetMsgId"),
        table_rows=[{**row, "time": human_time(row["timestamp"])} for row in rows],
        output=output,
    )
