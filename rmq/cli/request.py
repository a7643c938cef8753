"""`rmq request TOPIC [BODY]`: send requests to TOPIC and print each reply (request-reply).

    rmq request TOPIC [BODY] [-n NS] [-f auto|json|lines] [--tags T] [-k KEYS] [-H k=v]...
                             [--timeout SECONDS] [-g GROUP]

Each request is a message of TOPIC sent by rmq's producer as ``Producer.request`` sends it
(``CORRELATION_ID``, ``REPLY_TO_CLIENT`` and ``TTL`` added, see
:mod:`rmq.client.requestreply`); the command then waits up to ``--timeout`` seconds (3) for
the reply the broker pushes back, and prints the reply as ``rmq consume`` prints a message:
one NDJSON message record per line (docs/cli.md).

Input.  With BODY, one request with that text as its body.  Without it, every line of stdin
is one request, in the formats of ``rmq produce`` (``-f auto|json|lines``: a ``{`` line is a
message record, any other line a plain body; ``--tags``, ``-k`` and ``-H`` are defaults), sent
one after the other, each waiting for its reply before the next is sent.

Failures.  A request nobody replies to within the timeout stops the command with one line
naming it (``no reply to line N within S s``) and exit 1; so does a request that could not be
sent; a line that is not a valid message is reported and skipped (exit 1 at the end).
Ctrl-C stops at once (exit 130).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, BinaryIO

import click
import typer

from rmq.cli.errors import PROG_NAME, RmqError
from rmq.cli.main import command_app
from rmq.cli.produce import (
    HeadersOption,
    InputFormat,
    InputFormatOption,
    KeysOption,
    Outgoing,
    TagsOption,
    parse_header,
    parse_line,
)
from rmq.cli.settings import NamesrvOption, resolve_namesrv
from rmq.common.jsonrecord import RecordDefaults, RecordJsonError

if TYPE_CHECKING:
    import asyncio

    from rmq.cli.produce_send import InputLines
    from rmq.client.producer import Producer

DEFAULT_GROUP = "rmq-request"
DEFAULT_TIMEOUT = 3.0
"""Seconds a request waits for its reply (Java's examples use 3000 ms)."""

app = command_app()


@dataclass(slots=True)
class RequestOutcome:
    """What the requests of one run came to."""

    replies: int = 0
    invalid_lines: int = 0


def check_names(topic: str, group: str) -> None:
    """Usage errors (click's BadParameter) for an invalid topic or group name."""
    from rmq.common.naming import client_topic_error, group_error

    error = client_topic_error(topic)
    if error is not None:
        raise click.BadParameter(error, param_hint="TOPIC")
    error = group_error(group)
    if error is not None:
        raise click.BadParameter(error, param_hint="'-g' / '--group'")


@app.command()
def request(
    topic: Annotated[str, typer.Argument(metavar="TOPIC", help="Topic to send the requests to.")],
    body: Annotated[
        str | None,
        typer.Argument(
            metavar="[BODY]", help="Body of one request; without it, stdin lines are requests."
        ),
    ] = None,
    input_format: InputFormatOption = InputFormat.AUTO,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            min=0.001,
            metavar="SECONDS",
            help="How long each request waits for its reply.",
        ),
    ] = DEFAULT_TIMEOUT,
    tags: TagsOption = None,
    keys: KeysOption = None,
    headers: HeadersOption = None,
    group: Annotated[str, typer.Option("--group", "-g", help="Producer group.")] = DEFAULT_GROUP,
    namesrv: NamesrvOption = None,
) -> int:
    """Send requests to TOPIC and print each reply as a message record (NDJSON).

    BODY is one request; without it every stdin line is one (a message record or a plain
    body, as rmq produce reads them), each waiting for its reply before the next is sent.
    No reply within --timeout exits 1 with a line saying so.
    """
    from rmq.runtime import run_main

    check_names(topic, group)
    defaults = RecordDefaults(
        tags=tags or None,
        keys=tuple(keys.split()) if keys else (),
        properties=dict(parse_header(item) for item in headers or ()),
    )
    first: Outgoing | None = None
    if body is not None:
        try:
            first = parse_line(topic, 1, body.encode(), InputFormat.LINES, defaults)
        except RecordJsonError as exc:
            raise click.BadParameter(str(exc), param_hint="BODY") from None
    addrs = resolve_namesrv(namesrv)
    stdin = sys.stdin.buffer if first is None else None
    return run_main(
        _request(topic, addrs, group, timeout, first, stdin, input_format, defaults, sys.stdout)
    )


async def _request(
    topic: str,
    namesrv_addrs: str,
    group: str,
    timeout: float,
    first: Outgoing | None,
    stdin: BinaryIO | None,
    input_format: InputFormat,
    defaults: RecordDefaults,
    out: Any,
) -> int:
    from rmq.cli.produce import check_topic
    from rmq.cli.produce_send import InputLines
    from rmq.client.producer import Producer
    from rmq.runtime import exit_code_for, shutdown_signals

    outcome = RequestOutcome()
    with shutdown_signals() as interrupted:
        producer = Producer(group, namesrv_addrs)
        await producer.start()
        try:
            await check_topic(producer, topic, namesrv_addrs)
            if first is not None:
                await _one(producer, first, timeout, interrupted, out, outcome)
            else:
                assert stdin is not None
                reader = InputLines(stdin)
                await _each_line(
                    producer, reader, topic, input_format, defaults, timeout, interrupted, out
                )
        finally:
            await producer.shutdown()
    if interrupted.done():
        return exit_code_for(interrupted.result())
    return 0


async def _each_line(
    producer: Producer,
    reader: InputLines,
    topic: str,
    input_format: InputFormat,
    defaults: RecordDefaults,
    timeout: float,
    interrupted: asyncio.Future[Any],
    out: Any,
) -> None:
    """One request per input line, one at a time, until the input ends or one fails."""
    from contextlib import aclosing

    outcome = RequestOutcome()

    def parse(line_no: int, raw: bytes) -> Outgoing | None:
        return parse_line(topic, line_no, raw, input_format, defaults)

    def invalid(line_no: int, why: str) -> None:
        outcome.invalid_lines += 1
        print(f"{PROG_NAME}: error: line {line_no}: {why}", file=sys.stderr, flush=True)

    items = reader.parsed(parse, interrupted, invalid)
    async with aclosing(items):
        async for item in items:
            await _one(producer, item, timeout, interrupted, out, outcome)
    if outcome.invalid_lines:
        raise RmqError(
            f"{outcome.invalid_lines} line(s) were not valid messages and were not sent",
            "see the errors above",
        )


async def _one(
    producer: Producer,
    item: Outgoing,
    timeout: float,
    interrupted: asyncio.Future[Any],
    out: Any,
    outcome: RequestOutcome,
) -> None:
    """Send one request and print its reply; RmqError when none comes or it cannot go."""
    import asyncio

    import orjson

    from rmq.client.errors import ClientError
    from rmq.client.requestreply import RequestTimeoutError
    from rmq.remoting.errors import RemotingError

    task = asyncio.ensure_future(producer.request(item.message, timeout))
    await asyncio.wait({task, interrupted}, return_when=asyncio.FIRST_COMPLETED)
    if not task.done():
        task.cancel()
        return
    try:
        reply = task.result()
    except RequestTimeoutError:
        raise RmqError(
            f"no reply to line {item.line} within {timeout:g} s "
            f"(the request to {item.message.topic} was sent)",
            "check that a replier (rmq reply, or a consumer answering with "
            "createReplyMessage) consumes the topic, or raise --timeout",
        ) from None
    except (ClientError, RemotingError) as exc:
        cause = f" ({exc.__cause__})" if exc.__cause__ is not None else ""
        raise RmqError(f"the request of line {item.line} failed: {exc}{cause}") from exc
    outcome.replies += 1
    out.buffer.write(orjson.dumps(reply.to_record_dict()) + b"\n")
    out.buffer.flush()
