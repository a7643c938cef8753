"""Load generators behind `rmq bench produce|consume` and bench/client_bench.py.

What they measure follows RocketMQ's own benchmark tools (`benchmark/producer.sh`,
`consumer.sh`) so that figures can be compared column for column:

* **producer**: `threads` sender tasks, each keeping `in_flight` sends outstanding (so
  `threads * in_flight` requests are under way at once), sending synchronously through one
  `Producer`: single messages, or with `batch_size` > 1 batches of that many (one
  SEND_BATCH_MESSAGE each).  The body is `message_size` random alphanumeric bytes and, as in
  the Java tool, is never compressed.  Columns: Send TPS (messages acknowledged per second),
  Max RT and Average RT (ms per request, from the call to the broker's answer), Send Failed
  (requests that failed in the client: connection, timeout, no route), Response Failed
  (requests the broker refused), plus p50, p99 and p99.9 of the request times.  A failed
  request makes its task pause for a second, as the Java tool does, so a dead broker is not
  hammered.  With `rate` the senders follow a `RateSchedule` (rmq.client.benchstats) of that
  many messages per second instead of sending as fast as answers come back, and a request's
  time is measured from when its send was due, so queueing behind a slow answer counts.
* **consumer**: a `PushConsumer` of `group` with `threads` consume tasks, counting what its
  listener receives.  Columns: Consume TPS, FAIL (always 0: the listener never fails),
  AVG/MAX(B2C) RT (now minus the born timestamp) and AVG/MAX(S2C) RT (now minus the store
  timestamp: store-to-consume latency), plus p50, p99 and p99.9 of S2C.  With `pull` a
  `PullConsumer` reads every queue of the topic instead, `PULL_BATCH` messages a pull, one
  task per queue, with the same columns.

Both run until `count` messages are done, `duration` seconds have passed, or `stop` is set,
and call `on_report` every `interval` seconds (and `on_progress` with the running count after
each acknowledged send or received message) with the figures of that interval (max RT of
the producer is the run's so far, like Java's; the consumer's maxima are the interval's).
They return the report of the whole run, marked `complete`.  Latencies are kept per sample
in a flat `array('d')`, so percentiles are exact.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import string
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rmq.client.benchstats import Latencies, RateSchedule
from rmq.client.consumer import (
    ConsumeFromWhere,
    ConsumeStatus,
    MessageExt,
    PullConsumer,
    PullStatus,
    PushConsumer,
)
from rmq.client.errors import ClientError, MQBrokerError
from rmq.client.message import Message
from rmq.client.producer import Producer
from rmq.common.timeutil import now_millis
from rmq.remoting.bodies import MessageQueue
from rmq.remoting.errors import RemotingError

__all__ = [
    "ConsumerBenchConfig",
    "ConsumerReport",
    "ProducerBenchConfig",
    "ProducerReport",
    "run_consumer_bench",
    "run_producer_bench",
]

DEFAULT_TOPIC = "BenchmarkTest"
FAILURE_PAUSE = 1.0
_NEVER_COMPRESS = 1 << 62


def _clock_text(epoch_seconds: float) -> str:
    """Java's `yyyy-MM-dd HH:mm:ss,SSS` in local time."""
    moment = time.localtime(epoch_seconds)
    millis = int(epoch_seconds * 1000) % 1000
    return f"{time.strftime('%Y-%m-%d %H:%M:%S', moment)},{millis:03d}"


async def _pause(stop: asyncio.Event, seconds: float) -> None:
    """Sleep, but wake up at once when `stop` is set."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)


def random_body(size: int) -> bytes:
    """`size` random alphanumeric bytes (the Java tool's body)."""
    alphabet = string.ascii_letters + string.digits
    return "".join(random.choices(alphabet, k=size)).encode()


# --- producer --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProducerBenchConfig:
    topic: str = DEFAULT_TOPIC
    message_size: int = 128
    threads: int = 1
    in_flight: int = 1
    batch_size: int = 1
    duration: float | None = None
    count: int | None = None
    group: str = "benchmark_producer"
    rate: float | None = None


@dataclass(frozen=True)
class ProducerReport:
    """One line of the producer benchmark (an interval, or the whole run when `complete`)."""

    epoch_seconds: float
    seconds: float
    send_total: int
    send_tps: float
    max_rt_ms: float
    average_rt_ms: float
    p50_rt_ms: float
    p99_rt_ms: float
    p999_rt_ms: float
    send_failed: int
    response_failed: int
    complete: bool

    def line(self) -> str:
        """The Java tool's line, with p50, p99 and p99.9 added."""
        figures = (
            f"Send TPS: {self.send_tps:.0f} Max RT(ms): {self.max_rt_ms:.0f} "
            f"Average RT(ms): {self.average_rt_ms:7.3f} Send Failed: {self.send_failed} "
            f"Response Failed: {self.response_failed} "
            f"p50 RT(ms): {self.p50_rt_ms:.3f} p99 RT(ms): {self.p99_rt_ms:.3f} "
            f"p999 RT(ms): {self.p999_rt_ms:.3f}"
        )
        if self.complete:
            return f"[Complete] Send Total: {self.send_total} {figures}"
        return f"Current Time: {_clock_text(self.epoch_seconds)} {figures}"

    def to_json(self) -> dict[str, Any]:
        return {
            "seconds": round(self.seconds, 3),
            "sendTotal": self.send_total,
            "sendTps": round(self.send_tps, 1),
            "maxRtMs": round(self.max_rt_ms, 3),
            "averageRtMs": round(self.average_rt_ms, 3),
            "p50RtMs": round(self.p50_rt_ms, 3),
            "p99RtMs": round(self.p99_rt_ms, 3),
            "p999RtMs": round(self.p999_rt_ms, 3),
            "sendFailed": self.send_failed,
            "responseFailed": self.response_failed,
        }


class _ProducerStats:
    __slots__ = ("latencies", "max_rt", "response_failed", "send_failed", "sent")

    def __init__(self) -> None:
        self.sent = 0
        self.send_failed = 0
        self.response_failed = 0
        self.max_rt = 0.0
        self.latencies = Latencies()


class _Budget:
    """How many messages are left to send (None: no limit)."""

    __slots__ = ("left",)

    def __init__(self, count: int | None) -> None:
        self.left = count

    def take(self, wanted: int) -> int:
        if self.left is None:
            return wanted
        taken = min(wanted, self.left)
        self.left -= taken
        return taken


async def run_producer_bench(
    producer: Producer,
    config: ProducerBenchConfig,
    *,
    interval: float,
    on_report: Callable[[ProducerReport], None],
    stop: asyncio.Event | None = None,
    on_progress: Callable[[int], None] | None = None,
) -> ProducerReport:
    """Send with `producer` (started) as `config` says; see the module docstring."""
    stop = stop or asyncio.Event()
    stats = _ProducerStats()
    budget = _Budget(config.count)
    message = Message(config.topic, random_body(config.message_size))
    senders = config.threads * config.in_flight
    schedule = (
        None
        if config.rate is None
        else RateSchedule(config.rate, time.perf_counter(), config.batch_size)
    )

    async def sender() -> None:
        while not stop.is_set():
            size = budget.take(config.batch_size)
            if size == 0:
                return
            begin = time.perf_counter()
            if schedule is not None:
                begin = schedule.take()
                early = begin - time.perf_counter()
                if early > 0:
                    await _pause(stop, early)
                    if stop.is_set():
                        return
            try:
                if config.batch_size > 1:
                    await producer.send_batch([message] * size)
                else:
                    await producer.send(message)
            except MQBrokerError:
                stats.response_failed += 1
                await _pause(stop, FAILURE_PAUSE)
                continue
            except (ClientError, RemotingError):
                stats.send_failed += 1
                await _pause(stop, FAILURE_PAUSE)
                continue
            rt = (time.perf_counter() - begin) * 1000
            stats.sent += size
            stats.latencies.add(rt)
            if rt > stats.max_rt:
                stats.max_rt = rt
            if on_progress is not None:
                on_progress(stats.sent)

    def report(since: float, sent_before: int, complete: bool) -> ProducerReport:
        now = time.perf_counter()
        latency = stats.latencies.total() if complete else stats.latencies.take_window()
        sent = stats.sent - sent_before
        return ProducerReport(
            time.time(),
            now - since,
            stats.sent,
            sent / (now - since) if now > since else 0.0,
            stats.max_rt,
            latency.average,
            latency.p50,
            latency.p99,
            latency.p999,
            stats.send_failed,
            stats.response_failed,
            complete,
        )

    started = time.perf_counter()
    everything = asyncio.gather(*(sender() for _ in range(senders)))
    everything.add_done_callback(lambda _: stop.set())
    await _drive(
        stop,
        config.duration,
        interval,
        lambda since, before: on_report(report(since, before, False)),
        lambda: stats.sent,
    )
    await everything
    return report(started, 0, True)


async def _drive(
    stop: asyncio.Event,
    duration: float | None,
    interval: float,
    emit: Callable[[float, int], None],
    done_count: Callable[[], int],
) -> None:
    """Call `emit(interval start, count done before it)` every `interval` seconds until
    `stop` is set or `duration` has passed; `stop` is set on the way out."""
    loop = asyncio.get_running_loop()
    deadline = None if duration is None else loop.time() + duration
    stopped = loop.create_task(stop.wait())
    since, before = time.perf_counter(), 0
    try:
        while not stopped.done():
            # the rest of this interval: a wait that ends a little early is finished next turn
            timeout = since + interval - time.perf_counter()
            if deadline is not None:
                left = deadline - loop.time()
                if left <= 0:
                    break
                timeout = min(timeout, left)
            if timeout > 0:
                await asyncio.wait({stopped}, timeout=timeout)
            if not stopped.done() and time.perf_counter() - since >= interval:
                emit(since, before)
                since, before = time.perf_counter(), done_count()
    finally:
        stop.set()
        await stopped


# --- consumer --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConsumerBenchConfig:
    topic: str = DEFAULT_TOPIC
    group: str = "benchmark_consumer"
    threads: int = 20
    batch_size: int = 1
    expression: str = "*"
    from_first: bool = False
    duration: float | None = None
    count: int | None = None
    pull: bool = False


PULL_BATCH = 32
"""Messages asked for by each pull of the pull benchmark."""

PULL_IDLE = 0.05
"""Seconds a pull task waits after finding no new message before it pulls again."""


@dataclass(frozen=True)
class ConsumerReport:
    """One line of the consumer benchmark (an interval, or the whole run when `complete`)."""

    epoch_millis: int
    seconds: float
    consume_total: int
    consume_tps: float
    failed: int
    average_b2c_ms: float
    average_s2c_ms: float
    max_b2c_ms: float
    max_s2c_ms: float
    p50_s2c_ms: float
    p99_s2c_ms: float
    p999_s2c_ms: float
    complete: bool

    def line(self) -> str:
        """The Java tool's line (TPS as "Consume TPS"), with p50, p99 and p99.9 of S2C added."""
        figures = (
            f"Consume TPS: {self.consume_tps:.0f} FAIL: {self.failed} "
            f"AVG(B2C) RT(ms): {self.average_b2c_ms:7.3f} "
            f"AVG(S2C) RT(ms): {self.average_s2c_ms:7.3f} "
            f"MAX(B2C) RT(ms): {self.max_b2c_ms:.0f} MAX(S2C) RT(ms): {self.max_s2c_ms:.0f} "
            f"p50(S2C) RT(ms): {self.p50_s2c_ms:.0f} p99(S2C) RT(ms): {self.p99_s2c_ms:.0f} "
            f"p999(S2C) RT(ms): {self.p999_s2c_ms:.0f}"
        )
        if self.complete:
            return f"[Complete] Consume Total: {self.consume_total} {figures}"
        return f"Current Time: {self.epoch_millis} {figures}"

    def to_json(self) -> dict[str, Any]:
        return {
            "seconds": round(self.seconds, 3),
            "consumeTotal": self.consume_total,
            "consumeTps": round(self.consume_tps, 1),
            "failed": self.failed,
            "averageB2cRtMs": round(self.average_b2c_ms, 3),
            "averageS2cRtMs": round(self.average_s2c_ms, 3),
            "maxB2cRtMs": self.max_b2c_ms,
            "maxS2cRtMs": self.max_s2c_ms,
            "p50S2cRtMs": self.p50_s2c_ms,
            "p99S2cRtMs": self.p99_s2c_ms,
            "p999S2cRtMs": self.p999_s2c_ms,
        }


class _ConsumeTally:
    """What a consumer benchmark received: counts, B2C and S2C latencies, first and last
    arrival; sets `stop` once `count` messages arrived, and counts no more after them."""

    def __init__(
        self,
        count: int | None,
        stop: asyncio.Event,
        on_progress: Callable[[int], None] | None,
    ) -> None:
        self.count = count
        self.stop = stop
        self.on_progress = on_progress
        self.b2c = Latencies()
        self.s2c = Latencies()
        self.received = 0
        self.first_at = self.last_at = 0.0

    def add(self, messages: list[MessageExt]) -> None:
        """Count `messages`, only as many as `count` still wants: batches and consume tasks
        still running deliver more after the last one wanted, which the run leaves out."""
        if self.count is not None:
            messages = messages[: max(0, self.count - self.received)]
            if not messages:
                return
        now = now_millis()
        for msg in messages:
            self.b2c.add(now - msg.born_timestamp)
            self.s2c.add(now - msg.store_timestamp)
        self.last_at = time.perf_counter()
        if not self.received:
            self.first_at = self.last_at
        self.received += len(messages)
        if self.on_progress is not None:
            self.on_progress(self.received)
        if self.count is not None and self.received >= self.count:
            self.stop.set()

    def report(self, since: float, before: int, complete: bool) -> ConsumerReport:
        """An interval's report (from `since`, `before` messages received then), or with
        `complete` the whole run's, timed from the first message to the last."""
        now = time.perf_counter()
        if complete and self.received > 1:
            since, now = self.first_at, self.last_at
        born = self.b2c.total() if complete else self.b2c.take_window()
        stored = self.s2c.total() if complete else self.s2c.take_window()
        return ConsumerReport(
            now_millis(),
            now - since,
            self.received,
            (self.received - before) / (now - since) if now > since else 0.0,
            0,
            born.average,
            stored.average,
            born.maximum,
            stored.maximum,
            stored.p50,
            stored.p99,
            stored.p999,
            complete,
        )


async def run_consumer_bench(
    namesrv_addrs: str,
    config: ConsumerBenchConfig,
    *,
    interval: float,
    on_report: Callable[[ConsumerReport], None],
    stop: asyncio.Event | None = None,
    on_progress: Callable[[int], None] | None = None,
) -> ConsumerReport:
    """Consume as `config` says (push, or with `config.pull` a pull loop); see the module
    docstring."""
    stop = stop or asyncio.Event()
    tally = _ConsumeTally(config.count, stop, on_progress)
    if config.pull:
        return await _pull_bench(namesrv_addrs, config, interval, on_report, stop, tally)

    async def listener(messages: list[MessageExt]) -> ConsumeStatus:
        tally.add(messages)
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer(
        config.group,
        namesrv_addrs,
        consume_from_where=(
            ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
            if config.from_first
            else ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
        ),
        consume_concurrency=config.threads,
        consume_message_batch_max_size=config.batch_size,
    )
    consumer.subscribe(config.topic, config.expression)
    consumer.register_listener(listener)
    await consumer.start()
    try:
        return await _report_consumption(stop, config, interval, on_report, tally)
    finally:
        await consumer.shutdown()


async def _report_consumption(
    stop: asyncio.Event,
    config: ConsumerBenchConfig,
    interval: float,
    on_report: Callable[[ConsumerReport], None],
    tally: _ConsumeTally,
) -> ConsumerReport:
    """Report every `interval` until the run ends; the whole run's report."""
    started = time.perf_counter()
    await _drive(
        stop,
        config.duration,
        interval,
        lambda since, before: on_report(tally.report(since, before, False)),
        lambda: tally.received,
    )
    return tally.report(started, 0, True)


async def _pull_bench(
    namesrv_addrs: str,
    config: ConsumerBenchConfig,
    interval: float,
    on_report: Callable[[ConsumerReport], None],
    stop: asyncio.Event,
    tally: _ConsumeTally,
) -> ConsumerReport:
    """One task per queue pulling `PULL_BATCH` messages at a time from the queue's first
    offset (`from_first`) or its last at the start, until `stop`."""
    consumer = PullConsumer(config.group, namesrv_addrs)
    await consumer.start()
    try:
        queues = await consumer.fetch_subscribe_message_queues(config.topic)

        async def read(mq: MessageQueue) -> None:
            offset = await (consumer.min_offset if config.from_first else consumer.max_offset)(mq)
            while not stop.is_set():
                result = await consumer.pull(mq, offset, PULL_BATCH, config.expression)
                offset = result.next_begin_offset
                if result.status is PullStatus.FOUND:
                    tally.add(result.messages)
                else:
                    await _pause(stop, PULL_IDLE)

        readers = asyncio.gather(*(read(mq) for mq in queues))
        try:
            return await _report_consumption(stop, config, interval, on_report, tally)
        finally:
            await readers
    finally:
        await consumer.shutdown()
