"""`rmq group reset-offsets` and `rmq group clone-offsets`: a group's committed offsets.

    rmq group reset-offsets GROUP --topic T --to first|last|@<time> [--no-force] [--yes]
    rmq group clone-offsets SRC DST --topic T

The offset verbs of `rmq group` (this module's app joins the group: `rmq.cli.main.VERBS`), on
the admin operations of mqadmin resetOffsetByTime / skipAccumulatedMessage and
cloneGroupOffset in `rmq.client.adminops.consumer`.  `reset-offsets` tells the group's online
members to move (INVOKE_BROKER_TO_RESET_OFFSET) and commits the offsets directly when no
member is online, as mqadmin does; it asks on a terminal and needs `--yes` elsewhere.  Both
take `--dry-run`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import click
import typer

from rmq.cli.errors import YesOption, require_confirmation
from rmq.cli.group import (
    GroupArgument,
    GroupOption,
    TopicOption,
    group_name,
    not_found,
    plan_request,
    queue_key,
)
from rmq.cli.main import command_app
from rmq.cli.output import OutputOption, render
from rmq.cli.settings import NamesrvOption, resolve_namesrv
from rmq.cli.topic import DryRunOption, run_admin, show_plan

if TYPE_CHECKING:
    from rmq.client.admin import AdminClient
    from rmq.remoting.bodies import MessageQueue

app = command_app()


def _reset_target(text: str) -> int:
    """--to: `first` (0: the offsets at the oldest time), `last` (-1: the end) or `@<time>`
    (ms since the epoch, an ISO time or -<duration> before now: `rmq.common.timeutil`)."""
    from rmq.common.timeutil import parse_time

    if text == "first":
        return 0
    if text == "last":
        return -1
    if text.startswith("@"):
        try:
            return parse_time(text)
        except ValueError:
            pass
    raise click.BadParameter(
        f"{text!r}: use first, last, @<ms since the epoch>, @<ISO time> or @-<duration> "
        "(@-1h: an hour ago)",
        param_hint="'--to'",
    )


@app.command("reset-offsets")
def reset_offsets(
    group: GroupArgument = None,
    group_option: GroupOption = None,
    topic: TopicOption = "",
    to: Annotated[
        str,
        typer.Option(
            "--to",
            metavar="first|last|@TIME",
            help="Where the offsets go: first, last, @<epoch ms>, @<ISO time> or "
            "@-<duration> (@-1h: an hour ago; units ms s m h d w).",
        ),
    ] = "",
    force: Annotated[
        bool,
        typer.Option("--force/--no-force", help="Also move offsets forward (not only back)."),
    ] = True,
    yes: YesOption = False,
    dry_run: DryRunOption = False,
    namesrv: NamesrvOption = None,
    output: OutputOption = None,
) -> None:
    """Move a group's committed offsets on a topic (mqadmin resetOffsetByTime).

    --to first moves them to the oldest messages, last to the end (skipAccumulatedMessage),
    @TIME to the first message stored at or after TIME.  Online members are told to move
    (the broker asks them); a group without members gets its offsets committed directly.
    Asks for confirmation on a terminal; elsewhere --yes is required.
    """
    from rmq.client.adminops.offsetreset import GroupNotFound, reset_group_offsets
    from rmq.remoting.codes import RequestCode

    name = group_name(group, group_option)
    if not topic:
        raise click.UsageError("missing --topic")
    if not to:
        raise click.UsageError("missing --to")
    timestamp = _reset_target(to)
    if dry_run:
        plan = plan_request(
            RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
            f"every broker of topic {topic}",
            topic=topic,
            group=name,
            timestamp=timestamp,
            isForce=str(force).lower(),
        )
        show_plan([plan], output)
        return
    require_confirmation(f"reset the offsets of group {name!r} on topic {topic!r} to {to}", yes=yes)

    async def change(admin: AdminClient) -> list[dict[str, Any]]:
        try:
            reset = await reset_group_offsets(admin, name, topic, timestamp, force=force)
        except GroupNotFound:
            raise not_found(name) from None
        return [
            {
                "topic": row.topic,
                "brokerName": row.broker_name,
                "queueId": row.queue_id,
                "offset": row.offset,
                "online": row.online,
            }
            for row in reset
        ]

    rows = run_admin(resolve_namesrv(namesrv), change)
    render(rows, columns=("topic", "brokerName", "queueId", "offset", "online"), output=output)


def _queue_row(mq: MessageQueue) -> dict[str, Any]:
    return {"topic": mq.topic, "brokerName": mq.broker_name, "queueId": mq.queue_id}


@app.command("clone-offsets")
def clone_offsets(
    source: Annotated[str, typer.Argument(metavar="SRC", help="Group to copy from.")],
    destination: Annotated[str, typer.Argument(metavar="DST", help="Group to copy to.")],
    topic: TopicOption = "",
    dry_run: DryRunOption = False,
    namesrv: NamesrvOption = None,
    output: OutputOption = None,
) -> None:
    """Copy one group's committed offsets to another (mqadmin cloneGroupOffset).

    Every queue SRC has an offset for is committed for DST on the queue's broker in the
    route of --topic.
    """
    from rmq.client.adminops import consumer as ops
    from rmq.client.errors import RouteNotFound
    from rmq.remoting.codes import RequestCode

    if not topic:
        raise click.UsageError("missing --topic")
    if dry_run:
        plan = plan_request(
            RequestCode.UPDATE_CONSUMER_OFFSET,
            f"the broker of each queue of {source!r} in topic {topic}",
            consumerGroup=destination,
            topic=topic,
        )
        show_plan([plan], output)
        return

    async def change(admin: AdminClient) -> list[dict[str, Any]]:
        try:
            await admin.topic_route(ops.retry_topic(source))
        except RouteNotFound:
            raise not_found(source) from None
        written = await ops.clone_group_offset(admin, source, destination, topic)
        return [
            {**_queue_row(mq), "source": source, "destination": destination, "offset": offset}
            for mq, offset in sorted(written.items(), key=lambda item: queue_key(item[0]))
        ]

    rows = run_admin(resolve_namesrv(namesrv), change)
    render(rows, columns=("topic", "brokerName", "queueId", "offset"), output=output)
