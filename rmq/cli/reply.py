"""`rmq reply TOPIC --exec CMD`: answer the requests of TOPIC with a command's output.

    rmq reply TOPIC --exec CMD [-g GROUP] [--filter 'TagA || TagB'] [-c N | -e] [-n NS]

A consumer of group GROUP (default ``rmq-reply``) takes the requests sent to TOPIC (by
``rmq request``, ``Producer.request`` or Java's ``DefaultMQProducer.request``) one at a time.
For each, CMD runs through the shell (``/bin/sh -c CMD``) with the request's message record
(the NDJSON line ``rmq consume`` prints, newline included) on its stdin; when it exits 0,
its stdout, byte for byte, is the reply's body, sent as Java's
``MessageUtil.createReplyMessage`` builds it (``<cluster>_REPLY_TOPIC``, the request's
``CORRELATION_ID``, ``REPLY_TO_CLIENT`` and ``TTL``) with SEND_REPLY_MESSAGE_V2.  CMD's stderr
is the command's.  Each reply sent prints one NDJSON line on stdout: ``msgId`` (the
request's), ``correlationId``, ``replyTo`` (the requester's client id) and ``replyMsgId``.

No reply is sent, and a line on stderr says why, when CMD exits with another status, when it
prints nothing (RocketMQ refuses empty bodies), when the message is not a request (no
``REPLY_TO_CLIENT``), when the request's ``TTL`` has passed since it was born (its requester
stopped waiting), or when the broker refuses the reply (the requester is gone: ``channel of
<id> not found``).  Either way the request is consumed: it is not redelivered.

Without ``-e``, a push consumer of the group (rebalanced with the group's other repliers)
runs until Ctrl-C or, with ``-c N``, until N requests were handled.  With ``-e`` every queue
of TOPIC is read by the command itself from the group's committed offset up to the queue's
end at start, and the offsets reached are committed to the group: meant for answering a
backlog while no other replier of the group runs.  Exit 1 when any request got no reply
(after the others were handled), 130 after Ctrl-C.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any

import click
import typer

from rmq.cli.errors import PROG_NAME, RmqError
from rmq.cli.main import command_app
from rmq.cli.request import check_names
from rmq.cli.settings import NamesrvOption, resolve_namesrv

if TYPE_CHECKING:
    import asyncio

    from rmq.client.consumer import MessageExt
    from rmq.client.producer import Producer

DEFAULT_GROUP = "rmq-reply"
PULL_BATCH = 32

app = command_app()


@app.command()
def reply(
    topic: Annotated[str, typer.Argument(metavar="TOPIC", help="Topic the requests come to.")],
    command: Annotated[
        str,
        typer.Option(
            "--exec",
            metavar="CMD",
            help="Shell command run per request: the request record on stdin, the reply "
            "body on stdout (exit 0), no reply otherwise.",
            show_default=False,
        ),
    ],
    group: Annotated[
        str, typer.Option("--group", "-g", help="Consumer (and producer) group.")
    ] = DEFAULT_GROUP,
    tag_filter: Annotated[
        str | None,
        typer.Option(
            "--filter",
            metavar="TAGS",
            help="Tag expression of the requests to answer ('TagA || TagB').",
            show_default=False,
        ),
    ] = None,
    count: Annotated[
        int | None,
        typer.Option(
            "--count",
            "-c",
            min=1,
            metavar="N",
            help="Exit after N requests.",
            show_default=False,
        ),
    ] = None,
    exit_at_end: Annotated[
        bool,
        typer.Option(
            "--exit-at-end",
            "-e",
            help="Answer the requests stored when it started, then exit.",
        ),
    ] = False,
    namesrv: NamesrvOption = None,
) -> int:
    """Answer each request of TOPIC with CMD's stdout (CMD gets the request record on stdin).

    Runs a consumer of GROUP until Ctrl-C, -c N requests, or with -e the end of every queue
    as it was at start.  A CMD that fails sends no reply and says so on stderr; exit 1 when
    any request got no reply.
    """
    from rmq.runtime import run_main

    check_names(topic, group)
    if not command.strip():
        raise click.BadParameter("the command is empty", param_hint="'--exec'")
    options = (topic, group, tag_filter or "*", count, exit_at_end)
    return run_main(_reply(resolve_namesrv(namesrv), command, *options))


class Replier:
    """Answers requests with the command's output, counting what it handled."""

    def __init__(
        self, producer: Producer, topic: str, expression: str, command: str, limit: int | None
    ) -> None:
        import asyncio

        self.producer = producer
        self.group = producer.group
        self.topic = topic
        self.expression = expression
        self.command = command
        self.limit = limit
        self.handled = 0
        self.unanswered = 0
        self.done = asyncio.Event()

    async def answer(self, msg: MessageExt) -> None:
        """Run the command for request ``msg`` and send its reply (or say why not)."""
        why_not = await self._answer(msg)
        self.handled += 1
        if why_not is not None:
            self.unanswered += 1
            print(
                f"{PROG_NAME}: error: request {msg.msg_id}: {why_not}: no reply sent",
                file=sys.stderr,
                flush=True,
            )
        if self.limit is not None and self.handled >= self.limit:
            self.done.set()

    async def _answer(self, msg: MessageExt) -> str | None:
        import asyncio
        import tempfile

        import orjson

        from rmq.client.errors import ClientError
        from rmq.client.requestreply import create_reply_message
        from rmq.common.msgconst import (
            PROPERTY_CORRELATION_ID,
            PROPERTY_MESSAGE_REPLY_TO_CLIENT,
            PROPERTY_MESSAGE_TTL,
        )
        from rmq.common.timeutil import now_millis
        from rmq.remoting.errors import RemotingError

        properties = msg.properties
        reply_to = properties.get(PROPERTY_MESSAGE_REPLY_TO_CLIENT)
        if reply_to is None:
            return f"not a request (no {PROPERTY_MESSAGE_REPLY_TO_CLIENT} property)"
        ttl = properties.get(PROPERTY_MESSAGE_TTL, "")
        if ttl.isdigit() and msg.born_timestamp + int(ttl) < now_millis():
            return f"expired (its requester waited {ttl} ms for a reply)"
        with tempfile.TemporaryFile() as record:
            # A file, not a pipe: a command that exits without reading its stdin is no error.
            record.write(orjson.dumps(msg.to_record_dict()) + b"\n")
            record.seek(0)
            try:
                process = await asyncio.create_subprocess_shell(
                    self.command, stdin=record, stdout=asyncio.subprocess.PIPE
                )
                body, _ = await process.communicate()
            except OSError as exc:
                return f"'{self.command}' could not run: {exc}"
        if process.returncode != 0:
            return f"'{self.command}' exited with status {process.returncode}"
        if not body:
            return f"'{self.command}' printed nothing"
        try:
            result = await self.producer.send(create_reply_message(msg, body))
        except (ClientError, RemotingError) as exc:
            return f"the reply was refused: {exc}"
        row = {
            "msgId": msg.msg_id,
            "correlationId": properties.get(PROPERTY_CORRELATION_ID),
            "replyTo": reply_to,
            "replyMsgId": result.msg_id,
        }
        sys.stdout.buffer.write(orjson.dumps(row) + b"\n")
        sys.stdout.buffer.flush()
        return None


async def _reply(
    namesrv_addrs: str,
    command: str,
    topic: str,
    group: str,
    expression: str,
    count: int | None,
    exit_at_end: bool,
) -> int:
    from rmq.cli.produce import check_topic
    from rmq.cli.topic import admin_error
    from rmq.client.errors import ClientError
    from rmq.client.instance import ClientInstance
    from rmq.client.producer import Producer
    from rmq.remoting.errors import RemotingError
    from rmq.runtime import exit_code_for, shutdown_signals

    with shutdown_signals() as interrupted:
        instance = ClientInstance(namesrv_addrs)
        await instance.start()
        producer = Producer(group, instance=instance)
        try:
            await producer.start()
            await check_topic(producer, topic, namesrv_addrs)
            replier = Replier(producer, topic, expression, command, count)
            await (_drain if exit_at_end else _serve)(replier, interrupted)
        except (ClientError, RemotingError) as exc:
            raise admin_error(exc, namesrv_addrs) from exc
        finally:
            await producer.shutdown()
            await instance.shutdown()
    if interrupted.done():
        return exit_code_for(interrupted.result())
    if replier.unanswered:
        raise RmqError(
            f"{replier.unanswered} of {replier.handled} request(s) got no reply",
            "see the errors above",
        )
    return 0


async def _serve(replier: Replier, interrupted: asyncio.Future[Any]) -> None:
    """Answer as a push consumer of the group until the count or a signal."""
    import asyncio

    from rmq.client.consumer import ConsumeStatus, PushConsumer

    consumer = PushConsumer(
        replier.group,
        instance=replier.producer.instance,
        consume_concurrency=1,
        consume_message_batch_max_size=1,
    )
    consumer.subscribe(replier.topic, replier.expression)

    async def listener(messages: list[MessageExt]) -> ConsumeStatus:
        for msg in messages:
            if replier.done.is_set():
                # Beyond the count: never acknowledged, left for the group's next replier.
                await asyncio.get_running_loop().create_future()
            await replier.answer(msg)
        return ConsumeStatus.CONSUME_SUCCESS

    consumer.register_listener(listener)
    await consumer.start()
    done = asyncio.ensure_future(replier.done.wait())
    try:
        await asyncio.wait({done, interrupted}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        done.cancel()
        await consumer.shutdown()


async def _drain(replier: Replier, interrupted: asyncio.Future[Any]) -> None:
    """Answer every queue's requests from the group's offset to the queue's end at start,
    committing the offsets reached."""
    from rmq.client.consumer import PullConsumer, PullStatus

    reader = PullConsumer(replier.group, instance=replier.producer.instance)
    await reader.start()
    try:
        for mq in await reader.fetch_subscribe_message_queues(replier.topic):
            end = await reader.max_offset(mq)
            offset = max(await reader.fetch_consume_offset(mq), await reader.min_offset(mq), 0)
            start = offset
            while offset < end and not (interrupted.done() or replier.done.is_set()):
                result = await reader.pull(mq, offset, PULL_BATCH, replier.expression)
                if result.status is PullStatus.NO_NEW_MSG:
                    break
                for msg in result.messages:
                    if msg.queue_offset >= end:
                        offset = end
                        break
                    if interrupted.done() or replier.done.is_set():
                        break
                    await replier.answer(msg)
                    offset = msg.queue_offset + 1
                else:
                    offset = min(result.next_begin_offset, end)
            if offset != start:
                await reader.update_consume_offset(mq, offset)
            if interrupted.done() or replier.done.is_set():
                return
    finally:
        await reader.shutdown()
