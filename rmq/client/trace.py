"""Message trace in rmq's client, as Apache 4.9's client writes it (see rmq/common/trace.py
for the records): a :class:`TraceDispatcher` batches trace records and sends them to the
trace topic in the background; its :meth:`TraceDispatcher.trace_producer` and
:meth:`TraceDispatcher.trace_consumer` hook a producer's sends (Pub records) and a push
consumer's listener calls (SubBefore / SubAfter records) into it, through the hooks of
:mod:`rmq.client.tracehooks` (exported here too).

    async with TraceDispatcher("127.0.0.1:9876", "my-group", "PRODUCE") as traces:
        async with Producer("my-group", "127.0.0.1:9876") as producer:
            traces.trace_producer(producer)
            await producer.send(Message("TopicA", b"hello"))

The dispatcher: trace contexts in, batched trace messages out, never in the way.  It is
Apache's AsyncTraceDispatcher, on the event loop.  :meth:`TraceDispatcher.append` puts a
context into a bounded queue (1024) and returns at once; when the queue is full the context
is dropped and counted (`dropped`), so a slow or unreachable trace topic costs neither
memory nor the user's sends.  A background task encodes the contexts and sends their records
in one trace message once they reach the batch size (the trace producer's 128,000-byte
message limit less 10,000) or the oldest of them has waited `flush_after` (0.5 s), as
Apache's dispatcher does.  Sends are asynchronous, at most `max_in_flight` (20) at once
(more batches are dropped and counted); a failed send is logged and counted (`failed`).

The trace producer is a producer of its own, group `_INNER_TRACE_PRODUCER-<group>-<kind>-<n>`
on a client instance named `PID_CLIENT_INNER_TRACE_PRODUCER_<name servers>`, with a 5 s send
timeout, as Java names and configures it.  A trace message's keys are the traced message ids
and keys, in the order of the Java HashSet Apache's dispatcher collects them in, so a key query
for a message id finds its traces; its queue is picked round-robin over the trace topic's
route (the brokers whose `traceTopicEnable` created it), or the default topic's when the trace
topic has no route yet.

`shutdown` sends what is queued and waits up to `flush_timeout` (5 s) for the sends.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from typing import Self

from rmq.client.consumer.push import PushConsumer
from rmq.client.message import Message
from rmq.client.producer import Producer
from rmq.client.tracehooks import ConsumeTraceHook, SendTraceHook
from rmq.common.javahash import java_hash_order
from rmq.common.naming import RMQ_SYS_TRACE_TOPIC
from rmq.common.trace import (
    TRACE_INSTANCE_NAME,
    TRACE_PRODUCER_GROUP_PREFIX,
    TraceContext,
    encode_context,
)

__all__ = ["ConsumeTraceHook", "SendTraceHook", "TraceDispatcher"]

log = logging.getLogger("rmq.client.trace")

TRACE_MAX_MESSAGE_SIZE = 128_000
TRACE_SEND_TIMEOUT = 5.0
_COUNTER = itertools.count(1)


class TraceDispatcher:
    """Sends the trace records of `group`'s producer or consumer (`kind` PRODUCE or
    CONSUME) to `trace_topic` (see the module docstring)."""

    def __init__(
        self,
        namesrv_addrs: str,
        group: str,
        kind: str,
        trace_topic: str | None = None,
        *,
        queue_size: int = 1024,
        max_in_flight: int = 20,
        flush_after: float = 0.5,
        flush_timeout: float = 5.0,
    ) -> None:
        self.trace_topic = trace_topic or RMQ_SYS_TRACE_TOPIC
        self.dropped = 0
        self.failed = 0
        self.sent = 0
        self._queue: asyncio.Queue[TraceContext] = asyncio.Queue(queue_size)
        self._max_in_flight = max_in_flight
        self._flush_after = flush_after
        self._flush_timeout = flush_timeout
        self._batch_bytes = TRACE_MAX_MESSAGE_SIZE - 10_000
        self._records: list[tuple[str, list[str]]] = []
        self._size = 0
        self._first_at = 0.0
        self._in_flight: set[asyncio.Task[object]] = set()
        self._worker: asyncio.Task[None] | None = None
        self._stopping = False
        self.producer = Producer(
            f"{TRACE_PRODUCER_GROUP_PREFIX}-{group}-{kind}-{next(_COUNTER)}",
            namesrv_addrs,
            instance_name=f"{TRACE_INSTANCE_NAME}_{namesrv_addrs}",
            send_timeout=TRACE_SEND_TIMEOUT,
            max_message_size=TRACE_MAX_MESSAGE_SIZE,
        )

    # --- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> None:
        await self.producer.start()
        self._worker = asyncio.get_running_loop().create_task(self._run())

    async def shutdown(self) -> None:
        """Send everything queued, wait for the sends (up to `flush_timeout`), stop."""
        if self._worker is None:
            return
        # The flag, not only the cancel: when the cancel meets a context arriving, Python
        # 3.11's wait_for returns the context and drops the cancellation.
        self._stopping = True
        self._worker.cancel()
        await asyncio.gather(self._worker, return_exceptions=True)
        self._worker = None
        while not self._queue.empty():
            self._add(self._queue.get_nowait())
        self._send_records()
        if self._in_flight:
            await asyncio.wait(self._in_flight, timeout=self._flush_timeout)
        await self.producer.shutdown()
        if self.dropped or self.failed:
            log.warning(
                "message trace to %s: %d trace record(s) dropped, %d trace message(s) failed",
                self.trace_topic,
                self.dropped,
                self.failed,
            )

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.shutdown()

    # --- hooking members in ---------------------------------------------------------------------

    def trace_producer(self, producer: Producer) -> SendTraceHook:
        """Trace `producer`'s sends (a Pub record per successful send)."""
        hook = SendTraceHook(self, producer.group)
        producer.send_trace = hook
        return hook

    def trace_consumer(self, consumer: PushConsumer) -> ConsumeTraceHook:
        """Trace `consumer`'s listener calls (SubBefore and SubAfter records)."""
        hook = ConsumeTraceHook(self, consumer.group)
        consumer.consume_trace = hook
        return hook

    # --- the queue ----------------------------------------------------------------------------

    def append(self, ctx: TraceContext) -> bool:
        """Queue `ctx` for sending; False (and counted) when the queue is full."""
        try:
            self._queue.put_nowait(ctx)
        except asyncio.QueueFull:
            self.dropped += 1
            return False
        return True

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while not self._stopping:
            timeout = None
            if self._records:
                timeout = max(0.0, self._first_at + self._flush_after - loop.time())
            try:
                ctx = await asyncio.wait_for(self._queue.get(), timeout)
            except TimeoutError:
                self._send_records()
                continue
            self._add(ctx)
            if self._size >= self._batch_bytes or (
                loop.time() - self._first_at >= self._flush_after
            ):
                self._send_records()

    def _add(self, ctx: TraceContext) -> None:
        if not ctx.beans:
            return
        data, keys = encode_context(ctx)
        if not self._records:
            self._first_at = asyncio.get_running_loop().time()
        self._records.append((data, keys))
        self._size += len(data)

    def _send_records(self) -> None:
        """One trace message of the records gathered so far."""
        records, self._records, self._size = self._records, [], 0
        if not records:
            return
        if len(self._in_flight) >= self._max_in_flight:
            self.dropped += len(records)
            return
        keys = java_hash_order(key for _, record_keys in records for key in record_keys)
        body = "".join(data for data, _ in records).encode()
        message = Message(self.trace_topic, body, keys=keys)
        started = time.monotonic()
        task = self.producer.send_async(
            message, self._sent, lambda exc: self._send_failed(exc, started)
        )
        self._in_flight.add(task)
        task.add_done_callback(self._in_flight.discard)

    def _sent(self, _: object) -> None:
        self.sent += 1

    def _send_failed(self, exc: BaseException, started: float) -> None:
        self.failed += 1
        log.warning(
            "sending a trace message to %s failed after %.0f ms: %s",
            self.trace_topic,
            (time.monotonic() - started) * 1000,
            exc,
        )
