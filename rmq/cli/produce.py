"""`rmq produce TOPIC`: lines on stdin become messages of TOPIC, one result line per message.

    rmq produce TOPIC [-n NS] [-f auto|json|lines] [--sync | --async [--in-flight N] | --oneway]
                      [--batch N] [--sharding-key-field FIELD] [--tags T] [-k KEYS] [-H k=v]...
                      [-o ndjson|json|table|wide|yaml] [--summary]

Input.  Every line of stdin is one message.  With `-f json` a line is a JSON object in the
message record schema of docs/cli.md: `body` (text, or base64 with `"bodyEncoding":"base64"`;
any other JSON value is sent as its compact JSON text), `tags`, `keys` (an array, or one
string of space-separated keys), `properties` (string values; numbers and booleans are sent
as their JSON text), and optional `queueId`, `shardingKey`, `delayLevel` and `flag`.  Every
other field is ignored, and so are system properties (UNIQ_KEY, TAGS, KEYS, MIN_OFFSET, ...),
so the output of `rmq consume` can be fed back in as it is.  With `-f lines` the line itself,
without its newline, is the body, byte for byte.  `-f auto` (the default) reads a line whose
first non-blank character is `{` as a record and any other line as a plain body; a `{` line
that is not a valid record is an error, not a body (send such lines with `-f lines`).  Blank
lines are skipped in the json and auto formats; in the lines format they are empty bodies,
which RocketMQ refuses.

`--tags`, `-k/--keys` and `-H k=v` are defaults for every message: a record's own `tags` and
`keys` win, and its `properties` are laid over the `-H` ones.  Ordered sends: a record's
`shardingKey`, or with `--sharding-key-field FIELD` the value of FIELD (a field of the record,
else one of its properties; for a plain line, a field of the line read as a JSON object),
picks the queue by hash, so messages with one key keep their order.

Sending.  `--sync` (the default) sends one message at a time and waits for the broker;
`--async` keeps up to `--in-flight` sends under way (messages with one sharding key still
go one after the other); `--oneway` writes each message without waiting for an answer.
`--batch N` sends messages in batches of N (one SEND_BATCH_MESSAGE each); batched messages
cannot carry a sharding key, a queue id or a delay level.

Output.  One result per message, in input order, on stdout: `line` (its line number),
`msgId`, `offsetMsgId`, `brokerName`, `queueId`, `queueOffset`, `status`; NDJSON by default,
or any `-o` format (json, table, wide and yaml print once all input is read).  `--oneway`
learns nothing about its messages and prints no results.  `--summary` prints only one
summary object: `topic`, `sent`, `failed`, `seconds`, `messagesPerSecond`.

Failures.  A line that is not a valid message is reported on stderr (`line N: why`) and
skipped; the rest is still sent.  A send that fails (no route, broker down, refused) is
reported the same way and stops the command: no further input is read, the sends under way
finish.  Either way the command ends with one line naming the failed lines and exits 1.
Ctrl-C stops reading, waits for the sends under way and exits 130.  A topic the name server
does not know (and no broker auto-creates) or an unreachable name server fails before any
input is read.

Transactions.  `--transaction --exec CMD [--check CMD]` sends every message in a transaction
that CMD decides from the message's record on its stdin (exit 0 commits, 1 rolls back, other
statuses leave it unknown for the broker's check-back, which the `--check` CMD answers);
`rmq.cli.produce_tx` runs them and waits for the check-backs after the input.

The record schema is parsed by `rmq.common.jsonrecord`; stdin is read, and messages sent,
by `rmq.cli.produce_send` (a daemon thread hands complete lines to the event loop in chunks).
"""

from __future__ import annotations

import enum
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, BinaryIO

import click
import typer

from rmq.cli.errors import EXIT_FAILURE, PROG_NAME, RmqError
from rmq.cli.main import command_app
from rmq.cli.output import OutputFormat
from rmq.cli.produce_send import InputLines, Sender, SendMode, SendOptions
from rmq.cli.settings import NamesrvOption, resolve_namesrv
from rmq.cli.tracing import TraceOption, TraceTopicOption, trace_topic
from rmq.common.jsonrecord import (
    MessageFields,
    RecordDefaults,
    RecordJsonError,
    json_object,
    line_fields,
    record_fields,
)

if TYPE_CHECKING:
    import asyncio

    from rmq.cli.produce_tx import TransactionOptions
    from rmq.client.message import Message
    from rmq.client.producer import Producer

DEFAULT_GROUP = "rmq-produce"
DEFAULT_IN_FLIGHT = 128
SHOWN_FAILED_LINES = 10

RESULT_COLUMNS = ("line", "msgId", "brokerName", "queueId", "queueOffset", "status")
WIDE_COLUMNS = ("offsetMsgId",)
SUMMARY_COLUMNS = ("topic", "sent", "failed", "seconds", "messagesPerSecond")

app = command_app()


class InputFormat(enum.StrEnum):
    AUTO = "auto"
    JSON = "json"
    LINES = "lines"


@dataclass(slots=True)
class Outgoing:
    """One input line as a message to send."""

    line: int
    message: Message
    sharding_key: str | None


# --- parsing ---------------------------------------------------------------------------------


def parse_line(
    topic: str, line_no: int, raw: bytes, fmt: InputFormat, defaults: RecordDefaults
) -> Outgoing | None:
    """The message of one input line (None for a blank line the format skips); raises
    RecordJsonError when the line is not a valid message."""
    if fmt is InputFormat.LINES:
        return _outgoing(topic, line_no, line_fields(raw, defaults))
    stripped = raw.strip()
    if not stripped:
        return None
    if fmt is InputFormat.JSON or stripped[:1] == b"{":
        try:
            document = json_object(stripped)
        except RecordJsonError as exc:
            if stripped[:1] == b"{":
                raise
            raise RecordJsonError(f"{exc}; -f lines sends each line as it is") from None
        return _outgoing(topic, line_no, record_fields(document, defaults))
    return _outgoing(topic, line_no, line_fields(raw, defaults))


def _outgoing(topic: str, line_no: int, fields: MessageFields) -> Outgoing:
    from rmq.client.errors import MQClientError
    from rmq.client.message import Message

    message = Message(
        topic,
        fields.body,
        tags=fields.tags,
        keys=fields.keys,
        properties=fields.properties,
        queue_id=fields.queue_id,
        delay_level=fields.delay_level,
        flag=fields.flag,
    )
    try:
        message.validate()
    except MQClientError as exc:
        from rmq.cli.sendlimits import limit_note

        note = limit_note(exc, len(fields.body))
        raise RecordJsonError(f"{exc.remark} ({note})" if note else exc.remark) from None
    return Outgoing(line_no, message, fields.sharding_key)


def parse_header(value: str) -> tuple[str, str]:
    """`-H name=value` as a pair (click's BadParameter when it is not one)."""
    name, sep, text = value.partition("=")
    if not sep or not name:
        raise click.BadParameter(f"{value!r} is not name=value", param_hint="'-H' / '--header'")
    return name, text


# --- the command -----------------------------------------------------------------------------

InputFormatOption = Annotated[
    InputFormat,
    typer.Option(
        "--format",
        "-f",
        case_sensitive=False,
        help="Input: json records, plain lines, or auto (json for lines starting with '{').",
    ),
]
TagsOption = Annotated[
    str | None,
    typer.Option(
        "--tags", metavar="TAG", help="Tag of messages that set none.", show_default=False
    ),
]
KeysOption = Annotated[
    str | None,
    typer.Option(
        "--keys",
        "-k",
        metavar="KEYS",
        help="Space-separated keys of messages that set none.",
        show_default=False,
    ),
]
HeadersOption = Annotated[
    list[str] | None,
    typer.Option(
        "--header",
        "-H",
        metavar="NAME=VALUE",
        help="User property of every message (repeatable).",
        show_default=False,
    ),
]
"""The message options `rmq request` shares."""


@app.command()
def produce(
    topic: Annotated[str, typer.Argument(metavar="TOPIC", help="Topic to send to.")],
    input_format: InputFormatOption = InputFormat.AUTO,
    sync: Annotated[
        bool, typer.Option("--sync", help="Send one message at a time (the default).")
    ] = False,
    async_: Annotated[
        bool, typer.Option("--async", help="Keep up to --in-flight sends under way.")
    ] = False,
    oneway: Annotated[
        bool, typer.Option("--oneway", help="Send without waiting for answers (no results).")
    ] = False,
    in_flight: Annotated[
        int | None,
        typer.Option(
            "--in-flight",
            min=1,
            metavar="N",
            help=f"Sends under way at once with --async. Default: {DEFAULT_IN_FLIGHT}.",
            show_default=False,
        ),
    ] = None,
    batch: Annotated[
        int,
        typer.Option("--batch", min=1, metavar="N", help="Send batches of N messages."),
    ] = 1,
    sharding_key_field: Annotated[
        str | None,
        typer.Option(
            "--sharding-key-field",
            metavar="FIELD",
            help="Ordered sends: the field (or property) holding each message's sharding key.",
            show_default=False,
        ),
    ] = None,
    tags: TagsOption = None,
    keys: KeysOption = None,
    headers: HeadersOption = None,
    group: Annotated[str, typer.Option("--group", "-g", help="Producer group.")] = DEFAULT_GROUP,
    summary: Annotated[
        bool, typer.Option("--summary", help="Print only a summary, not a result per message.")
    ] = False,
    trace: TraceOption = False,
    trace_topic_name: TraceTopicOption = None,
    transaction: Annotated[
        bool,
        typer.Option(
            "--transaction",
            help="Send each message in a transaction that the --exec command decides.",
        ),
    ] = False,
    exec_cmd: Annotated[
        str | None,
        typer.Option(
            "--exec",
            metavar="CMD",
            help="With --transaction: shell command run per message, its record on stdin; "
            "exit 0 commits, 1 rolls back, other statuses leave it unknown.",
            show_default=False,
        ),
    ] = None,
    check_cmd: Annotated[
        str | None,
        typer.Option(
            "--check",
            metavar="CMD",
            help="With --transaction: answers the broker's check-backs of unknown "
            "transactions as --exec decides.",
            show_default=False,
        ),
    ] = None,
    check_timeout: Annotated[
        float | None,
        typer.Option(
            "--check-timeout",
            min=0,
            metavar="SECONDS",
            help="With --check: how long to wait after the input for check-backs to decide "
            "the unknown transactions. Default: 90.",
            show_default=False,
        ),
    ] = None,
    namesrv: NamesrvOption = None,
    output: Annotated[
        OutputFormat,
        typer.Option("--output", "-o", case_sensitive=False, help="Output format."),
    ] = OutputFormat.NDJSON,
) -> int:
    """Send the lines of stdin to TOPIC: NDJSON message records or plain lines.

    Prints a result per message (line, msgId, offsetMsgId, brokerName, queueId,
    queueOffset, status), or with --summary only a summary.  Lines that are not valid
    messages and failed sends are reported on stderr by line number and make the exit
    code 1; a failed send also stops reading.  Ctrl-C stops reading, waits for the sends
    under way and exits 130.

    With --transaction every message is a transaction: --exec CMD decides it (exit 0
    commit, 1 rollback, else unknown), --check CMD answers the broker's check-backs, and
    transactions still unknown at the end make the exit code 1.
    """
    from rmq.cli.produce_tx import transaction_options
    from rmq.common.naming import client_topic_error, group_error
    from rmq.runtime import run_main

    error = client_topic_error(topic)
    if error is not None:
        raise click.BadParameter(error, param_hint="TOPIC")
    error = group_error(group)
    if error is not None:
        raise click.BadParameter(error, param_hint="'-g' / '--group'")
    if sync + async_ + oneway > 1:
        raise click.UsageError("give at most one of --sync, --async and --oneway")
    if in_flight is not None and not async_:
        raise click.UsageError("--in-flight applies to --async only")
    if batch > 1 and (oneway or sharding_key_field is not None):
        raise click.UsageError("--batch cannot be combined with --oneway or --sharding-key-field")
    in_transaction = transaction_options(
        transaction, exec_cmd, check_cmd, check_timeout, batch=batch, oneway=oneway
    )
    defaults = RecordDefaults(
        tags=tags or None,
        keys=tuple(keys.split()) if keys else (),
        properties=dict(parse_header(item) for item in headers or ()),
        sharding_key_field=sharding_key_field,
    )
    options = SendOptions(
        mode=SendMode.ASYNC if async_ else SendMode.ONEWAY if oneway else SendMode.SYNC,
        window=(in_flight or DEFAULT_IN_FLIGHT) if async_ else 1,
        batch=batch,
    )
    results = ResultWriter(sys.stdout.buffer, output, summary, per_message=not oneway)
    addrs = resolve_namesrv(namesrv)
    traced = trace_topic(trace, trace_topic_name)
    return run_main(
        _produce(
            topic,
            addrs,
            group,
            input_format,
            defaults,
            options,
            results,
            sys.stdin.buffer,
            traced,
            in_transaction,
        )
    )


class ResultWriter:
    """Where outcomes go: result rows on stdout (NDJSON as they come, the other formats at
    the end), failures on stderr as they come, and the counts for the summary."""

    def __init__(
        self, out: BinaryIO, output: OutputFormat, summary_only: bool, per_message: bool
    ) -> None:
        self.out = out
        self.output = output
        self.summary_only = summary_only
        self.per_message = per_message and not summary_only
        self.broken_pipe = False
        self.rows: list[dict[str, Any]] = []
        self.columns: tuple[str, ...] = RESULT_COLUMNS
        self.sent = 0
        self.failed_lines: list[int] = []
        self.started = time.monotonic()

    def sent_one(self, row: dict[str, Any] | None) -> None:
        self.sent += 1
        if row is None or not self.per_message:
            return
        if self.output is OutputFormat.NDJSON:
            import orjson

            self._write(orjson.dumps(row) + b"\n")
        else:
            self.rows.append(row)

    def _write(self, data: bytes) -> None:
        """Write to stdout; once the reader went away (`| head`), note it and write no more."""
        if self.broken_pipe:
            return
        try:
            self.out.write(data)
        except BrokenPipeError:
            self.broken_pipe = True

    def failed(self, lines: list[int], reason: str) -> None:
        self.failed_lines += lines
        span = f"line {lines[0]}" if len(lines) == 1 else f"lines {lines[0]}-{lines[-1]}"
        print(f"{PROG_NAME}: error: {span}: {reason}", file=sys.stderr, flush=True)

    def flush(self) -> None:
        if not self.broken_pipe:
            try:
                self.out.flush()
            except BrokenPipeError:
                self.broken_pipe = True

    def finish(self, topic: str) -> None:
        """Print what waits for the end: the summary, or the rows of a whole-document format."""
        if self.summary_only:
            seconds = time.monotonic() - self.started
            summary = {
                "topic": topic,
                "sent": self.sent,
                "failed": len(self.failed_lines),
                "seconds": round(seconds, 3),
                "messagesPerSecond": round(self.sent / seconds) if seconds > 0 else 0,
            }
            self._render(summary, SUMMARY_COLUMNS, ())
        elif self.per_message and self.output is not OutputFormat.NDJSON:
            self._render(self.rows, self.columns, WIDE_COLUMNS)
        self.flush()

    def _render(self, data: Any, columns: tuple[str, ...], wide: tuple[str, ...]) -> None:
        import io

        from rmq.cli.output import render

        text = io.StringIO()
        render(data, columns=columns, wide_columns=wide, output=self.output, file=text)
        self._write(text.getvalue().encode())


def describe_lines(lines: list[int]) -> str:
    """ "line 4" or "lines 4, 7, 9", at most ten numbers and a count of the rest."""
    shown = ", ".join(str(line) for line in lines[:SHOWN_FAILED_LINES])
    rest = len(lines) - SHOWN_FAILED_LINES
    more = f" and {rest} more" if rest > 0 else ""
    return f"{'line' if len(lines) == 1 else 'lines'} {shown}{more}"


async def _produce(
    topic: str,
    namesrv_addrs: str,
    group: str,
    input_format: InputFormat,
    defaults: RecordDefaults,
    options: SendOptions,
    results: ResultWriter,
    stdin: BinaryIO,
    trace_to: str | None = None,
    transaction: TransactionOptions | None = None,
) -> int:

    from rmq.cli.produce_tx import TransactionRun
    from rmq.cli.tracing import trace_producer
    from rmq.client.producer import Producer
    from rmq.runtime import exit_code_for, shutdown_signals

    with shutdown_signals() as interrupted:
        run = TransactionRun(transaction, results) if transaction else None
        producer = (
            run.start_producer(group, namesrv_addrs) if run else Producer(group, namesrv_addrs)
        )
        await producer.start()
        dispatcher = await trace_producer(producer, namesrv_addrs, trace_to)
        try:
            await check_topic(producer, topic, namesrv_addrs)
            results.started = time.monotonic()
            sender = (
                Sender(producer, options, results, send=run.send, rows=run.rows)
                if run
                else Sender(producer, options, results)
            )
            last_line = await _feed(
                InputLines(stdin), sender, results, interrupted, topic, input_format, defaults
            )
            await sender.finish()
            if run is not None:
                await run.settle(interrupted)
        finally:
            await producer.shutdown()
            if dispatcher is not None:
                await dispatcher.shutdown()
        results.finish(topic)
    unknown_left = run is not None and run.report()
    failed = results.failed_lines
    if failed:
        plural = "s" if len(failed) > 1 else ""
        detail = (
            f"{len(failed)} message{plural} failed ({describe_lines(failed)}), {results.sent} sent"
        )
        if sender.failed_send_line is not None:
            error = RmqError(
                f"{detail}; sending stopped at the failed send of line "
                f"{sender.failed_send_line}: input after line {last_line} was not read",
                "see the errors above, fix the cause and send the rest again",
            )
        else:
            error = RmqError(detail, "see the errors above")
        if not interrupted.done():
            raise error
        print(error.line(), file=sys.stderr)
    if interrupted.done():
        return exit_code_for(interrupted.result())
    return EXIT_FAILURE if results.broken_pipe or unknown_left else 0


async def _feed(
    reader: InputLines,
    sender: Sender,
    results: ResultWriter,
    interrupted: asyncio.Future[Any],
    topic: str,
    input_format: InputFormat,
    defaults: RecordDefaults,
) -> int:
    """Parse and send input lines until the input ends, a send fails, stdout closes or a
    signal arrives; return the number of the last line read."""
    from contextlib import aclosing

    def parse(line_no: int, raw: bytes) -> Outgoing | None:
        return parse_line(topic, line_no, raw, input_format, defaults)

    def invalid(line_no: int, why: str) -> None:
        results.failed([line_no], why)

    items = reader.parsed(parse, interrupted, invalid, results.flush)
    async with aclosing(items):
        async for item in items:
            await sender.add(item)
            if sender.failed_send_line is not None or results.broken_pipe:
                break
    results.flush()
    return reader.lines_read


async def check_topic(producer: Producer, topic: str, namesrv_addrs: str) -> None:
    """Fail before reading input when the topic cannot be sent to at all."""
    from rmq.cli.topic import admin_error
    from rmq.client.errors import ClientErrorCode, MQClientError, RouteNotFound
    from rmq.remoting.errors import RemotingError

    try:
        await producer.instance.publish_info(topic)
    except RemotingError as exc:
        raise admin_error(exc, namesrv_addrs) from exc
    except MQClientError as exc:
        if exc.code == ClientErrorCode.NOT_FOUND_TOPIC_EXCEPTION and not isinstance(
            exc, RouteNotFound
        ):
            raise RmqError(
                f"topic {topic!r} not found: {exc.remark}",
                "create it with 'rmq topic update' (or enable autoCreateTopicEnable on a broker)",
            ) from exc
        raise admin_error(exc, namesrv_addrs) from exc
