"""How `rmq produce` reads stdin and sends: the input reader thread and the sender.

`InputLines` reads stdin in a daemon thread and hands complete lines to the event loop in
chunks, so a terminal or a slow pipe delivers each line as soon as it is typed, and a fast
one delivers thousands per wake-up (a daemon thread, so a read blocked on a terminal never
holds up the exit).

`Sender` sends each parsed line as the `SendOptions` say (sync, async with a window of
sends under way, oneway, or in batches), keeps messages with one sharding key in order, and
hands each outcome to the command's `ResultWriter` in input order: `result_rows` turns a
send's result into the result rows of its lines.  A transactional run (`produce_tx.py`) gives
the Sender its own send and rows.
"""

from __future__ import annotations

import enum
import os
from collections import deque
from collections.abc import AsyncGenerator, Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO, TypeVar

if TYPE_CHECKING:
    import asyncio

    from rmq.cli.produce import Outgoing, ResultWriter
    from rmq.client.api import SendResult
    from rmq.client.producer import Producer

READ_SIZE = 1 << 16
T = TypeVar("T")

SendOne = Callable[["Outgoing"], Coroutine[Any, Any, "SendResult"]]
RowsOf = Callable[[list[int], "SendResult"], list[dict[str, Any]]]


class SendMode(enum.Enum):
    SYNC = "sync"
    ASYNC = "async"
    ONEWAY = "oneway"


@dataclass(frozen=True)
class SendOptions:
    mode: SendMode
    window: int
    batch: int


class InputLines:
    """The lines of a binary stream, read by a daemon thread and handed to the event loop in
    chunks (a daemon thread, so a read blocked on a terminal never holds up the exit)."""

    def __init__(self, stream: BinaryIO) -> None:
        import asyncio
        import threading

        self.lines_read = 0
        """How many lines `parsed` has handed out or skipped so far."""
        self._fd = stream.fileno()
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[list[bytes] | BaseException | None] = asyncio.Queue(16)
        threading.Thread(target=self._pump, name="rmq-produce-stdin", daemon=True).start()

    async def next_chunk(self) -> list[bytes] | None:
        """The next lines (without their newlines); None at the end of the input."""
        item = await self._queue.get()
        if isinstance(item, BaseException):
            raise item
        return item

    async def parsed(
        self,
        parse: Callable[[int, bytes], T | None],
        interrupted: asyncio.Future[Any],
        invalid: Callable[[int, str], None],
        chunk_read: Callable[[], None] | None = None,
    ) -> AsyncGenerator[T, None]:
        """`parse(line number, line)` of every input line that gives something (None: a
        line to skip), until the input ends or `interrupted` is done.  A line `parse`
        refuses with RecordJsonError goes to `invalid(line number, why)`; `chunk_read` runs
        after each chunk of lines."""
        import asyncio

        from rmq.common.jsonrecord import RecordJsonError

        while True:
            next_chunk = asyncio.ensure_future(self.next_chunk())
            await asyncio.wait({next_chunk, interrupted}, return_when=asyncio.FIRST_COMPLETED)
            if interrupted.done():
                next_chunk.cancel()
                return
            chunk = next_chunk.result()
            if chunk is None:
                return
            for raw in chunk:
                self.lines_read += 1
                try:
                    item = parse(self.lines_read, raw)
                except RecordJsonError as exc:
                    invalid(self.lines_read, str(exc))
                    continue
                if item is not None:
                    yield item
                if interrupted.done():
                    return
            if chunk_read is not None:
                chunk_read()

    def _pump(self) -> None:
        buffer = bytearray()
        try:
            while data := os.read(self._fd, READ_SIZE):
                buffer += data
                end = buffer.rfind(b"\n")
                if end >= 0:
                    lines = bytes(buffer[:end]).split(b"\n")
                    del buffer[: end + 1]
                    if not self._put(lines):
                        return
            if buffer and not self._put([bytes(buffer)]):
                return
            self._put(None)
        except OSError as exc:
            self._put(exc)

    def _put(self, item: list[bytes] | BaseException | None) -> bool:
        """Hand `item` to the loop, waiting while the queue is full; False once the loop
        has closed (the command is over and nobody reads any more)."""
        import asyncio
        import concurrent.futures

        try:
            asyncio.run_coroutine_threadsafe(self._queue.put(item), self._loop).result()
        except (RuntimeError, concurrent.futures.CancelledError):
            return False
        return True


@dataclass(slots=True)
class _Job:
    lines: list[int]
    task: asyncio.Task[SendResult | None]


class Sender:
    """Sends parsed messages as the options say and hands each outcome to the result writer,
    in input order (see the module docstring)."""

    def __init__(
        self,
        producer: Producer,
        options: SendOptions,
        results: ResultWriter,
        *,
        send: SendOne | None = None,
        rows: RowsOf | None = None,
    ) -> None:
        self.producer = producer
        self.options = options
        self.results = results
        self._send_one = send or self._send
        self._rows = rows or result_rows
        self.failed_send_line: int | None = None
        self._pending: deque[_Job] = deque()
        self._batch: list[Outgoing] = []
        self._last_of_key: dict[str, asyncio.Task[SendResult | None]] = {}

    async def add(self, item: Outgoing) -> None:
        """Send `item` (or keep it for the batch being filled)."""
        if self.options.batch > 1:
            message = item.message
            if item.sharding_key is not None or message.queue_id is not None or message.delay_level:
                self.results.failed(
                    [item.line], "a batched message cannot have shardingKey, queueId or delayLevel"
                )
                return
            self._batch.append(item)
            if len(self._batch) >= self.options.batch:
                await self._send_batch()
            return
        key = item.sharding_key if self.options.window > 1 else None
        send: Coroutine[Any, Any, SendResult | None]
        if self.options.mode is SendMode.ONEWAY:
            send = self._oneway(item)
        elif key is not None:
            send = self._after(self._last_of_key.get(key), item)
        else:
            send = self._send_one(item)
        task = self._start([item.line], send)
        if key is not None:
            self._last_of_key[key] = task
            task.add_done_callback(lambda done: self._forget_key(key, done))
        await self._drain()

    async def finish(self) -> None:
        """Send what is left of a batch and wait for every send under way."""
        if self._batch:
            await self._send_batch()
        while self._pending:
            await self._emit(self._pending.popleft())

    async def _send_batch(self) -> None:
        items, self._batch = self._batch, []
        send = self.producer.send_batch([item.message for item in items])
        self._start([item.line for item in items], send)
        await self._drain()

    async def _oneway(self, item: Outgoing) -> None:
        await self.producer.send_oneway(item.message, sharding_key=item.sharding_key)

    async def _after(
        self, previous: asyncio.Task[SendResult | None] | None, item: Outgoing
    ) -> SendResult | None:
        """An ordered send: after the previous send with the same key, whatever its fate."""
        import asyncio

        if previous is not None:
            await asyncio.wait([previous])
        return await self._send_one(item)

    def _send(self, item: Outgoing) -> Coroutine[Any, Any, SendResult]:
        return self.producer.send(item.message, sharding_key=item.sharding_key)

    def _forget_key(self, key: str, task: asyncio.Task[SendResult | None]) -> None:
        if self._last_of_key.get(key) is task:
            del self._last_of_key[key]

    def _start(
        self, lines: list[int], send: Coroutine[Any, Any, SendResult | None]
    ) -> asyncio.Task[SendResult | None]:
        import asyncio

        task = asyncio.get_running_loop().create_task(send)
        self._pending.append(_Job(lines, task))
        return task

    def _stop_on_refusal(self, exc: Exception) -> None:
        """A refusal (a broker's ACL, a TLS-only server) ends the run with one error saying
        what is missing (every other send would be refused alike): the sends under way are
        cancelled."""
        from rmq.cli.refusals import refusal

        refused = refusal(exc, topic_perm="PUB")
        if refused is None:
            return
        for job in self._pending:
            if not job.task.done():
                job.task.cancel()
            elif not job.task.cancelled():
                job.task.exception()  # retrieved: asyncio must not report it
        raise refused from exc

    async def _drain(self) -> None:
        """Emit finished sends from the head; wait for the head while the window is full."""
        pending = self._pending
        while pending and (len(pending) >= self.options.window or pending[0].task.done()):
            await self._emit(pending.popleft())

    async def _emit(self, job: _Job) -> None:
        try:
            result = await job.task
        except Exception as exc:
            self._stop_on_refusal(exc)
            from rmq.cli.sendlimits import explain

            self.results.failed(job.lines, explain(exc))
            if self.failed_send_line is None:
                self.failed_send_line = job.lines[0]
            return
        if result is None:
            for _ in job.lines:
                self.results.sent_one(None)
            return
        for row in self._rows(job.lines, result):
            self.results.sent_one(row)


def result_rows(lines: list[int], result: SendResult) -> list[dict[str, Any]]:
    """The result rows of one send: one message, or each message of a batch (whose ids
    come comma-joined and whose queue offsets are consecutive)."""
    msg_ids = result.msg_id.split(",")
    offset_ids = result.offset_msg_id.split(",")
    queue = result.message_queue
    return [
        {
            "line": line,
            "msgId": msg_ids[index],
            "offsetMsgId": offset_ids[index] if index < len(offset_ids) else None,
            "brokerName": queue.broker_name,
            "queueId": queue.queue_id,
            "queueOffset": result.queue_offset + index,
            "status": result.status.name,
        }
        for index, line in enumerate(lines)
    ]
