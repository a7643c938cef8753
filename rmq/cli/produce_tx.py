"""`rmq produce --transaction`: every message is sent in a transaction decided by a command.

    rmq produce TOPIC --transaction --exec CMD [--check CMD] [--check-timeout SECONDS]

Each message is sent as a half message (`rmq.client.transaction`); once the broker stored it,
CMD runs through the shell with the message's record (NDJSON: one line, the message record of
docs/cli.md as far as it is known: line, topic, brokerName, queueId, queueOffset, msgId,
offsetMsgId, tags, keys, user properties, body) on its stdin.  Its exit status decides: 0
commits, 1 rolls back, anything else (a command that cannot run included) leaves the
transaction unknown, for the broker to check back.  A check-back runs the `--check` CMD the
same way with the record of the half message the broker holds (the record `rmq consume`
prints, plus `line` for a message of this run).  The commands' stdout goes to stderr, so
stdout stays the results: each result row gets `transaction` (COMMIT_MESSAGE,
ROLLBACK_MESSAGE or UNKNOW, Java's names for what the command decided).

When stdin ends with transactions left unknown and `--check` given, the command stays
connected (the broker asks only a connected producer of the group) until a check-back decided
each of them, `--check-timeout` passed or Ctrl-C; it says on stderr what it waits for and
each decision a check-back made.  Transactions still unknown then are counted on stderr
(naming their lines) and make the exit status 1: the broker goes on checking them with any
producer of the group (`-g`) until its transactionCheckMax, then discards them.
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from rmq.cli.errors import PROG_NAME
from rmq.cli.produce import RESULT_COLUMNS, describe_lines
from rmq.cli.produce_send import result_rows
from rmq.common.jsonrecord import body_fields

if TYPE_CHECKING:
    from rmq.cli.produce import Outgoing, ResultWriter
    from rmq.client.api import SendResult
    from rmq.client.message import Message
    from rmq.client.messageext import MessageExt
    from rmq.client.transaction import LocalTransactionState, TransactionProducer

DEFAULT_CHECK_TIMEOUT = 90.0
EXIT_COMMIT = 0
EXIT_ROLLBACK = 1


@dataclass(frozen=True)
class TransactionOptions:
    exec_cmd: str
    check_cmd: str | None
    check_timeout: float


def transaction_options(
    transaction: bool,
    exec_cmd: str | None,
    check_cmd: str | None,
    check_timeout: float | None,
    *,
    batch: int,
    oneway: bool,
) -> TransactionOptions | None:
    """The options of a transactional run (None without `--transaction`); click's
    UsageError for a combination that makes no sense."""
    if not transaction:
        if exec_cmd is not None or check_cmd is not None or check_timeout is not None:
            raise click.UsageError("--exec, --check and --check-timeout need --transaction")
        return None
    if batch > 1 or oneway:
        raise click.UsageError("--transaction cannot be combined with --batch or --oneway")
    if exec_cmd is None:
        raise click.UsageError("--transaction needs --exec CMD (exit 0 commits, 1 rolls back)")
    if check_timeout is not None and check_cmd is None:
        raise click.UsageError("--check-timeout applies to --check only")
    timeout = DEFAULT_CHECK_TIMEOUT if check_timeout is None else check_timeout
    return TransactionOptions(exec_cmd, check_cmd, timeout)


async def run_command(command: str, record: dict[str, Any]) -> LocalTransactionState:
    """Run `command` through the shell with `record` as one NDJSON line on its stdin (its
    stdout goes to stderr); exit 0 commits, 1 rolls back, anything else is UNKNOW."""
    import orjson

    from rmq.client.transaction import LocalTransactionState

    process = await asyncio.create_subprocess_shell(
        command, stdin=asyncio.subprocess.PIPE, stdout=sys.stderr.fileno()
    )
    assert process.stdin is not None
    try:
        process.stdin.write(orjson.dumps(record) + b"\n")
        await process.stdin.drain()
        process.stdin.close()
    except (BrokenPipeError, ConnectionResetError):
        pass  # the command did not read its input: its exit status still decides
    status = await process.wait()
    if status == EXIT_COMMIT:
        return LocalTransactionState.COMMIT_MESSAGE
    if status == EXIT_ROLLBACK:
        return LocalTransactionState.ROLLBACK_MESSAGE
    return LocalTransactionState.UNKNOW


def sent_record(line: int, msg: Message, result: SendResult) -> dict[str, Any]:
    """What `--exec` reads: the record of a half message the broker just stored."""
    queue = result.message_queue
    return {
        "line": line,
        "topic": msg.topic,
        "brokerName": queue.broker_name,
        "queueId": queue.queue_id,
        "queueOffset": result.queue_offset,
        "msgId": result.msg_id,
        "offsetMsgId": result.offset_msg_id,
        "tags": msg.tags,
        "keys": msg.keys_text.split() if msg.keys_text else [],
        "properties": dict(msg.properties),
        **body_fields(msg.body),
        "flag": msg.flag,
    }


class TransactionRun:
    """The transactions of one `rmq produce --transaction`: sends them, runs the commands
    and keeps the ones left unknown (by msgId, the transaction id) with their lines."""

    def __init__(self, options: TransactionOptions, results: ResultWriter) -> None:
        self.options = options
        self.results = results
        self.unknown: dict[str, int] = {}
        self._lines: dict[str, int] = {}
        self._decided_by_check: set[str] = set()
        self._none_unknown = asyncio.Event()
        self.producer: TransactionProducer | None = None
        results.columns = (*RESULT_COLUMNS, "transaction")

    def start_producer(self, group: str, namesrv_addrs: str) -> TransactionProducer:
        from rmq.client.transaction import TransactionProducer

        check = self._check if self.options.check_cmd is not None else None
        self.producer = TransactionProducer(group, namesrv_addrs, check=check)
        return self.producer

    async def send(self, item: Outgoing) -> SendResult:
        """Send one message in a transaction that `--exec` decides."""
        from rmq.client.transaction import LocalTransactionState

        assert self.producer is not None

        async def execute(msg: Message, result: SendResult) -> LocalTransactionState:
            self._lines[result.msg_id] = item.line
            return await run_command(self.options.exec_cmd, sent_record(item.line, msg, result))

        result = await self.producer.send_in_transaction(
            item.message, execute, sharding_key=item.sharding_key
        )
        state = result.local_transaction_state
        if state is LocalTransactionState.UNKNOW and result.msg_id not in self._decided_by_check:
            self.unknown[result.msg_id] = item.line
            self._none_unknown.clear()
        return result

    @staticmethod
    def rows(lines: list[int], result: SendResult) -> list[dict[str, Any]]:
        """The result rows, with the transaction state the command decided."""
        from rmq.client.transaction import TransactionSendResult

        assert isinstance(result, TransactionSendResult)
        rows = result_rows(lines, result)
        for row in rows:
            row["transaction"] = result.local_transaction_state.name
        return rows

    async def _check(self, msg: MessageExt) -> LocalTransactionState:
        """A check-back: `--check` decides, and a decided transaction of this run is no
        longer unknown."""
        from rmq.client.transaction import LocalTransactionState

        assert self.options.check_cmd is not None
        record = msg.to_record_dict()
        line = self._lines.get(msg.msg_id)
        if line is not None:
            record = {"line": line, **record}
        state = await run_command(self.options.check_cmd, record)
        if state is not LocalTransactionState.UNKNOW:
            self._decided_by_check.add(msg.msg_id)
            where = f"line {line}" if line is not None else "an earlier run"
            print(
                f"{PROG_NAME}: {where}: a check-back decided transaction {msg.msg_id}: "
                f"{state.name}",
                file=sys.stderr,
                flush=True,
            )
            if self.unknown.pop(msg.msg_id, None) is not None and not self.unknown:
                self._none_unknown.set()
        return state

    async def settle(self, interrupted: asyncio.Future[Any]) -> None:
        """After the input: wait for check-backs to decide the unknown transactions (only
        with `--check`), until none is left, `--check-timeout` passes or a signal comes."""
        if not self.unknown or self.options.check_cmd is None or interrupted.done():
            return
        print(
            f"{PROG_NAME}: waiting up to {self.options.check_timeout:g} s for the broker to "
            f"check back {len(self.unknown)} unknown transaction(s)",
            file=sys.stderr,
            flush=True,
        )
        decided = asyncio.ensure_future(self._none_unknown.wait())
        await asyncio.wait(
            {decided, interrupted},
            timeout=self.options.check_timeout,
            return_when=asyncio.FIRST_COMPLETED,
        )
        decided.cancel()

    def report(self) -> bool:
        """Say on stderr how many transactions were left unknown; True if any was."""
        if not self.unknown:
            return False
        lines = sorted(self.unknown.values())
        count = len(lines)
        print(
            f"{PROG_NAME}: error: {count} transaction{'s' if count > 1 else ''} left unknown "
            f"({describe_lines(lines)}): the broker checks them back with producer group "
            f"{self.producer.group if self.producer else '?'} until its transactionCheckMax",
            file=sys.stderr,
            flush=True,
        )
        return True
