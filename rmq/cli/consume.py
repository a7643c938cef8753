"""`rmq consume TOPIC`: messages of TOPIC on stdout, as NDJSON records or through a template.

    rmq consume TOPIC [-n NS] [-g GROUP [--reset]] [--from POS]
                      [--filter 'TagA || TagB' | --sql "a > 14 AND region = 'eu'"]
                      [--broadcast] [--orderly] [--allocate STRATEGY] [-c N] [-e] [-f TEMPLATE]

Output.  One message record per line (the schema of docs/cli.md, `MessageExt.to_record_dict`:
the body decompressed, base64 with `"bodyEncoding":"base64"` when it is not UTF-8), or with
`-f/--format` a kcat/rpk style template (`rmq.cli.consume_format`: fields such as %t %k %v %S,
printf widths such as %-20k).  `-o ndjson` names the default; the other `-o` formats of the
read commands are usage errors that point at --format (a stream of messages is not a table).
With a bounded read (`-c N` or `-e`) and stdout not a terminal, a progress bar shows on a
terminal stderr (`rmq.cli.progress`).

Start position (`--from`): `first` (the default: each queue's min offset), `last` (its max
offset: only messages that arrive from now on), a time (`@<epoch ms>`, or ISO 8601 such as
`2024-05-01`, `2024-05-01T12:00:00Z`, with or without the `@`; a time without a zone is
local; or `@-<duration>`, that long ago: `@-1h`, `@-30m`, `@-10s`, `@-2d`, `@-1h30m`, the
grammar of `rmq.common.timeutil.parse_time`): the first message of each queue stored at or
after it, a queue offset `N` (the same
offset in every queue, kept within the queue's min and max), or `-N` (`--from=-N`: the last N
messages of each queue).

Two ways to read, picked by the options:

* Without `-g`, or with `-e`: the command reads every queue of the topic itself with a
  pull consumer (group TOOLS_CONSUMER, RocketMQ's tools group), one task per queue, each
  queue in offset order, from where `--from` says.  Nothing joins a group's rebalance, so
  every run sees every message (broadcasting and orderly are what it does anyway).  With
  `-e` it stops at each queue's max offset as read at start and exits once every queue got
  there.  With `-g GROUP` (and `-e`) the group's committed offsets are the start (see
  below) and the offsets reached are committed to the group at the end (every 5 s too):
  meant for draining a group's backlog while none of its consumers run.
* With `-g GROUP` and without `-e`: a push consumer of GROUP, rebalanced with the group's
  other consumers (`--broadcast`: every consumer gets every message, offsets in a local
  file; `--orderly`: queue locks on the brokers and per-queue order).  Messages are handed
  to the output one at a time, so what is committed is exactly what was printed.
  `--allocate averagely|circle|consistent-hash` picks the queue allocation strategy of the
  rebalance (RocketMQ's AVG, AVG_BY_CIRCLE, CONSISTENT_HASH; default averagely).

With `-g`, a queue starts at the group's committed offset; a queue the group has no offset
for (or offset 0: a broker answers 0 for a group it does not know while the queue's first
message is still stored) starts where `--from` says, and `--reset` makes `--from` apply to
every queue.  The push consumer gets those start offsets committed before it starts.

`-c N` stops after N messages, `-e` at the end; Ctrl-C (or SIGTERM) stops at once.  Either
way the offsets of what was printed are committed before the exit (with `-g`); Ctrl-C exits
130.  A message that was pulled but not printed is not committed: the next run with the
same group starts with it.  A closed stdout (`| head`) stops the command too, exit 1.  An
unknown topic or an unreachable name server fails at once with exit 1.

Stopping cancels pulls still under way; the broker may answer them a moment later, which
the remoting layer logs as a warning about a response nobody waits for.  That is expected
here, so once the command stops, such warnings are not shown (they are with --debug).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, BinaryIO

import click
import typer

from rmq.cli.consume_format import FIELD_HELP, Render, compile_template, render_record
from rmq.cli.consume_read import (
    StartPosition,
    commit,
    consume_group,
    parse_start,
    read_queues,
    start_offsets,
)
from rmq.cli.main import command_app
from rmq.cli.settings import NamesrvOption, resolve_namesrv
from rmq.cli.tracing import TraceOption, TraceTopicOption, trace_topic

if TYPE_CHECKING:
    import asyncio

    from rmq.cli.progress import Progress
    from rmq.client.consumer import MessageExt, MessageQueue, OffsetStore
    from rmq.client.instance import ClientInstance


app = command_app()

ALLOCATE_STRATEGIES = {
    "averagely": "AVG",
    "circle": "AVG_BY_CIRCLE",
    "consistent-hash": "CONSISTENT_HASH",
}
"""`--allocate` words and the RocketMQ names of their strategies (rmq.client.consumer.allocate)."""


# --- output ----------------------------------------------------------------------------------


class Printer:
    """Writes messages to stdout until `limit` were written or the reader went away; then
    `stopped` is set and nothing more is written."""

    def __init__(self, out: BinaryIO, render: Render, limit: int | None) -> None:
        import asyncio

        self.out = out
        self.render = render
        self.limit = limit
        self.printed = 0
        self.broken_pipe = False
        self.stopped = asyncio.Event()
        self.on_print: Callable[[int], None] | None = None
        """Told how many messages each write printed (a progress bar's `advance`)."""

    def stop(self) -> None:
        """Print nothing more."""
        self.stopped.set()

    def write(self, messages: Sequence[MessageExt]) -> int:
        """Print as many of `messages` as allowed, in order; return how many."""
        if self.stopped.is_set():
            return 0
        count = len(messages)
        if self.limit is not None:
            count = min(count, self.limit - self.printed)
        if count:
            render = self.render
            try:
                self.out.write(b"".join([render(msg) for msg in messages[:count]]))
                self.out.flush()
            except BrokenPipeError:
                self.broken_pipe = True
                self.stopped.set()
                return 0
            self.printed += count
            if self.on_print is not None:
                self.on_print(count)
        if self.limit is not None and self.printed >= self.limit:
            self.stopped.set()
        return count


# --- the command -----------------------------------------------------------------------------


@app.command()
def consume(
    topic: Annotated[str, typer.Argument(metavar="TOPIC", help="Topic to read.")],
    group: Annotated[
        str | None,
        typer.Option(
            "--group",
            "-g",
            metavar="GROUP",
            help="Consumer group: its offsets are used and committed. Default: none, read "
            "everything from --from without committing.",
            show_default=False,
        ),
    ] = None,
    reset: Annotated[
        bool,
        typer.Option(
            "--reset", help="With -g: start every queue at --from, not the group's offset."
        ),
    ] = False,
    start: Annotated[
        str,
        typer.Option(
            "--from",
            metavar="POS",
            help="Start: first, last, a queue offset N, -N (the last N of each queue), or a "
            "time: @<epoch ms>, @<ISO time> (@2024-05-01T12:00:00Z) or @-<duration> (@-1h: "
            "an hour ago; @-30m, @-10s, @-2d; units ms s m h d w).",
        ),
    ] = "first",
    tag_filter: Annotated[
        str | None,
        typer.Option(
            "--filter",
            metavar="EXPR",
            help="Tag expression: 'TagA || TagB' or '*'.",
            show_default=False,
        ),
    ] = None,
    sql: Annotated[
        str | None,
        typer.Option(
            "--sql",
            metavar="EXPR",
            help='SQL92 expression on the message properties, e.g. "a > 14 AND region = '
            "'eu'\" (the brokers need enablePropertyFilter=true; not with --filter).",
            show_default=False,
        ),
    ] = None,
    broadcast: Annotated[
        bool,
        typer.Option("--broadcast", help="With -g: every consumer of the group gets everything."),
    ] = False,
    orderly: Annotated[
        bool, typer.Option("--orderly", help="With -g: consume each queue in order, locked.")
    ] = False,
    allocate: Annotated[
        str,
        typer.Option(
            "--allocate",
            metavar="STRATEGY",
            click_type=click.Choice(list(ALLOCATE_STRATEGIES)),
            help="With -g: how the group's consumers share the queues: averagely (blocks), "
            "circle (round-robin) or consistent-hash.",
        ),
    ] = "averagely",
    count: Annotated[
        int | None,
        typer.Option(
            "--count", "-c", min=1, metavar="N", help="Exit after N messages.", show_default=False
        ),
    ] = None,
    exit_at_end: Annotated[
        bool,
        typer.Option(
            "--exit-at-end", "-e", help="Exit once every queue is read up to its end at start."
        ),
    ] = False,
    template: Annotated[
        str | None,
        typer.Option(
            "--format",
            "-f",
            metavar="TEMPLATE",
            help="Output template, kcat style, e.g. '%k %v\\n'. Fields: "
            + FIELD_HELP
            + ", %% a percent sign. Widths as printf: %-20k pads on the right, %10S on the "
            "left, %.40v cuts at 40 characters. Escapes \\n \\t \\r \\\\. Default: NDJSON "
            "records.",
            show_default=False,
        ),
    ] = None,
    output: Annotated[
        str | None,
        typer.Option(
            "--output",
            "-o",
            metavar="ndjson",
            help="Only ndjson, the default: one message record per line. For other layouts "
            "use --format.",
            show_default=False,
        ),
    ] = None,
    trace: TraceOption = False,
    trace_topic_name: TraceTopicOption = None,
    namesrv: NamesrvOption = None,
) -> int:
    """Print the messages of TOPIC: NDJSON message records or a --format template.

    Without -g every queue is read from --from and nothing is committed; with -g the
    group's offsets are used and what was printed is committed.  -c stops after a count,
    -e at the end of every queue; Ctrl-C commits and exits 130.
    """
    from rmq.common.naming import client_topic_error, group_error
    from rmq.runtime import run_main

    _check_output(output, template)
    error = client_topic_error(topic)
    if error is not None:
        raise click.BadParameter(error, param_hint="TOPIC")
    if group is not None:
        error = group_error(group)
        if error is not None:
            raise click.BadParameter(error, param_hint="'-g' / '--group'")
    elif reset:
        raise click.UsageError("--reset needs -g GROUP")
    elif allocate != "averagely":
        raise click.UsageError("--allocate needs -g GROUP")
    from rmq.cli.consume_sql import subscription_expression

    expression, expression_type = subscription_expression(tag_filter, sql)
    options = ConsumeOptions(
        topic=topic,
        group=group,
        reset=reset,
        start=parse_start(start),
        expression=expression,
        expression_type=expression_type,
        broadcast=broadcast,
        orderly=orderly,
        exit_at_end=exit_at_end,
        allocate=ALLOCATE_STRATEGIES[allocate],
    )
    render = compile_template(template) if template is not None else render_record
    printer_args = (sys.stdout.buffer, render, count)
    traced = trace_topic(trace, trace_topic_name)
    return run_main(_consume(resolve_namesrv(namesrv), options, printer_args, traced))


def _check_output(output: str | None, template: str | None) -> None:
    """`-o`: ndjson (the default record) or nothing; the other formats are usage errors."""
    if output is None:
        return
    if output.lower() != "ndjson":
        raise click.UsageError(
            f"rmq consume prints NDJSON message records, one per line (the default; -o ndjson "
            f"names it), not -o {output}: for another layout use a template, e.g. "
            "--format '%t %p %o %k %v\\n'"
        )
    if template not in (None, "json"):
        raise click.UsageError("-o ndjson and --format TEMPLATE exclude each other")


@dataclass(frozen=True)
class ConsumeOptions:
    topic: str
    group: str | None
    reset: bool
    start: StartPosition
    expression: str
    broadcast: bool
    orderly: bool
    exit_at_end: bool
    allocate: str = "AVG"
    expression_type: str = "TAG"


async def _consume(
    namesrv_addrs: str,
    options: ConsumeOptions,
    printer_args: tuple[BinaryIO, Render, int | None],
    trace_to: str | None = None,
) -> int:
    from rmq.cli.consume_trace import traced_printer
    from rmq.cli.errors import EXIT_FAILURE
    from rmq.cli.topic import admin_error
    from rmq.client.errors import ClientError
    from rmq.client.instance import ClientInstance
    from rmq.remoting.errors import RemotingError
    from rmq.runtime import exit_code_for, shutdown_signals

    with shutdown_signals() as interrupted, _progress(options, printer_args) as bar:
        printer, dispatcher = await traced_printer(
            namesrv_addrs, options.group, trace_to, printer_args
        )
        if not options.exit_at_end:
            printer.on_print = bar.advance
        # Broadcasting keeps offsets in a file named after the client id: a fixed instance
        # name finds them again in the next run.
        instance = ClientInstance(namesrv_addrs, "DEFAULT" if options.broadcast else None)
        await instance.start()
        try:
            await _run(instance, options, printer, interrupted, bar)
        except (ClientError, RemotingError) as exc:
            raise admin_error(exc, namesrv_addrs) from exc
        finally:
            await instance.shutdown()
            if dispatcher is not None:
                await dispatcher.shutdown()
    if interrupted.done():
        return exit_code_for(interrupted.result())
    return EXIT_FAILURE if printer.broken_pipe else 0


async def _run(
    instance: ClientInstance,
    options: ConsumeOptions,
    printer: Printer,
    interrupted: asyncio.Future[Any],
    bar: Progress,
) -> None:
    """Read the queues or run the group's push consumer, as the options say; with -e `bar`
    counts the queue offsets read towards the ends."""
    from rmq.cli.consume_sql import check_with_brokers
    from rmq.cli.errors import RmqError
    from rmq.client.consumer import PullConsumer
    from rmq.common.naming import TOOLS_CONSUMER_GROUP

    reader = PullConsumer(TOOLS_CONSUMER_GROUP, instance=instance)
    await reader.start()
    try:
        queues = await reader.fetch_subscribe_message_queues(options.topic)
        if not queues:
            raise RmqError(
                f"topic {options.topic!r} has no readable queue",
                "check its perm with 'rmq topic route'",
            )
        await check_with_brokers(
            instance,
            options.group or TOOLS_CONSUMER_GROUP,
            options.topic,
            options.expression,
            options.expression_type,
        )
        store = None if options.group is None else _offset_store(instance, options)
        starts = await start_offsets(reader, queues, options.start, store, options.reset)
        if store is None or options.exit_at_end:
            ends = None
            if options.exit_at_end:
                ends = {mq: await reader.max_offset(mq) for mq in queues}
                bar.set_total(sum(max(ends[mq] - starts[mq], 0) for mq in queues))
            await read_queues(
                reader,
                starts,
                ends,
                options.expression,
                printer,
                store,
                interrupted,
                expression_type=options.expression_type,
                advanced=bar.advance,
            )
            return
    finally:
        await reader.shutdown()
    await commit(store, starts, oneway=False)
    await consume_group(instance, options, printer, interrupted)


def _progress(
    options: ConsumeOptions, printer_args: tuple[BinaryIO, Render, int | None]
) -> Progress:
    """The bar of a bounded read (-c N: messages printed; -e: queue offsets read, its total
    known once the ends are), drawn when stderr is a terminal and stdout is not one."""
    from rmq.cli.progress import Progress

    limit = printer_args[2]
    bounded = options.exit_at_end or limit is not None
    return Progress(
        f"consuming {options.topic}",
        None if options.exit_at_end else limit,
        min_total=1,
        when=bounded and not printer_args[0].isatty(),
    )


def _offset_store(instance: ClientInstance, options: ConsumeOptions) -> OffsetStore:
    """The group's offsets: on the brokers, or in the local file of a broadcasting client."""
    from rmq.client.consumer import LocalFileOffsetStore, RemoteBrokerOffsetStore
    from rmq.client.consumer.pullnode import offset_broker

    assert options.group is not None
    if options.broadcast:
        local = LocalFileOffsetStore(instance.client_id, options.group)
        local.load()
        return local

    async def find_broker(mq: MessageQueue) -> str:
        return await offset_broker(instance, mq)

    return RemoteBrokerOffsetStore(instance.remoting, options.group, find_broker)
