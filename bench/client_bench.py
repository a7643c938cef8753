"""Client throughput against one broker, next to the raw loopback throughput of the same bytes.

    .venv/bin/python bench/client_bench.py [--seconds 5] [--size 1024]

Starts a throwaway `rmq standalone` (free loopback ports, a temporary store with Apache's
default file sizes), creates topic ClientBench with 8 queues, and measures with rmq's client
(`rmq.client.bench`, the code behind `rmq bench`), each case for `--seconds`:

* sync send of 1 KiB messages, 1 and 16 sends in flight;
* batched send, 32 messages per SEND_BATCH_MESSAGE, 1 batch in flight;
* consume of everything the send cases stored, from the first offset, with a push consumer
  as RocketMQ configures one by default (20 consume tasks, one message per listener call),
  and with a plain pull loop (a `PullConsumer` pulling the 8 queues, 32 messages a pull), which
  shows what the push consumer's machinery costs.

Next to each figure is the raw loopback throughput of the same traffic: a plain asyncio
client and server (the server in a process of its own, like the broker) exchanging
length-prefixed frames of the sizes the case really wrote and read per request (measured
from /proc/self/io), with the same number of requests in flight.  `ratio` is the client's
figure over the raw one.  Runs on uvloop, as the rmq commands do.  Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import multiprocessing
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import uvloop

from rmq.client.admin import AdminClient
from rmq.client.bench import (
    ConsumerBenchConfig,
    ProducerBenchConfig,
    run_consumer_bench,
    run_producer_bench,
)
from rmq.client.consumer import PullConsumer, PullStatus
from rmq.client.errors import RouteNotFound
from rmq.client.instance import ClientInstance
from rmq.client.producer import Producer
from rmq.remoting.bodies import TopicConfig

ROOT = Path(__file__).resolve().parent.parent
TOPIC = "ClientBench"
QUEUES = 8
BATCH = 32
PULL_BATCH = 32
LOOPBACK = "127.0.0.1"
_FRAME = struct.Struct(">ii")


# --- a throwaway broker ----------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def standalone() -> Iterator[tuple[str, str]]:
    """`rmq standalone` on free ports with a temporary store; yields (name server, broker)."""
    with tempfile.TemporaryDirectory(prefix="rmq-client-bench-") as tmp:
        namesrv_port, broker_port = free_port(), free_port()
        conf = Path(tmp) / "broker.conf"
        conf.write_text(f"brokerIP1={LOOPBACK}\nbindAddress={LOOPBACK}\n")
        log = Path(tmp) / "standalone.log"
        with log.open("wb") as err:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "rmq",
                    "standalone",
                    "-c",
                    str(conf),
                    "--store",
                    str(Path(tmp) / "store"),
                    "--namesrv-port",
                    str(namesrv_port),
                    "--broker-port",
                    str(broker_port),
                ],
                cwd=ROOT,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
                env={**os.environ, "HOME": tmp},
            )
        try:
            deadline = time.monotonic() + 30
            while b"is ready" not in log.read_bytes():
                if process.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"rmq standalone did not start:\n{log.read_text()}")
                time.sleep(0.1)
            yield f"{LOOPBACK}:{namesrv_port}", f"{LOOPBACK}:{broker_port}"
        finally:
            process.terminate()
            process.wait(30)


async def create_topic(namesrv: str, broker: str) -> None:
    async with AdminClient(namesrv) as admin:
        config = TopicConfig(topic_name=TOPIC, read_queue_nums=QUEUES, write_queue_nums=QUEUES)
        await admin.create_or_update_topic(config, broker_addr=broker)
        while True:
            with contextlib.suppress(RouteNotFound):
                if (await admin.topic_route(TOPIC)).queue_datas:
                    return
            await asyncio.sleep(0.1)


# --- traffic accounting ----------------------------------------------------------------------


@dataclass
class Traffic:
    """Bytes this process wrote and read on sockets during a case (/proc/self/io)."""

    written: int = 0
    read: int = 0


def io_counters() -> tuple[int, int]:
    fields = dict(line.split(": ") for line in Path("/proc/self/io").read_text().splitlines())
    return int(fields["wchar"]), int(fields["rchar"])


async def measured(case: Awaitable[Any]) -> tuple[Any, Traffic]:
    written, read = io_counters()
    result = await case
    written_after, read_after = io_counters()
    return result, Traffic(written_after - written, read_after - read)


# --- raw loopback ----------------------------------------------------------------------------


def raw_server(ready: Connection) -> None:
    """A sink that answers each length-prefixed frame with as many bytes as it asks for."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        replies: dict[int, bytes] = {}
        try:
            while True:
                length, wanted = _FRAME.unpack(await reader.readexactly(_FRAME.size))
                await reader.readexactly(length - 4)
                reply = replies.get(wanted)
                if reply is None:
                    reply = replies[wanted] = struct.pack(">i", wanted) + bytes(wanted)
                writer.write(reply)
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    async def serve() -> None:
        server = await asyncio.start_server(handle, LOOPBACK, 0)
        ready.send(server.sockets[0].getsockname()[1])
        await server.serve_forever()

    uvloop.run(serve())


async def raw_rate(
    port: int, request_size: int, response_size: int, in_flight: int, seconds: float
) -> float:
    """Requests per second of `in_flight` concurrent exchanges on one connection."""
    reader, writer = await asyncio.open_connection(LOOPBACK, port)
    request = _FRAME.pack(max(request_size - 4, 4), response_size) + bytes(
        max(request_size - _FRAME.size, 0)
    )
    waiting: deque[asyncio.Future[None]] = deque()
    loop = asyncio.get_running_loop()

    async def responses() -> None:
        while True:
            (length,) = struct.unpack(">i", await reader.readexactly(4))
            await reader.readexactly(length)
            waiting.popleft().set_result(None)

    count = 0
    deadline = time.perf_counter() + seconds

    async def requester() -> None:
        nonlocal count
        while time.perf_counter() < deadline:
            done = loop.create_future()
            waiting.append(done)
            writer.write(request)
            await done
            count += 1

    receiver = loop.create_task(responses())
    started = time.perf_counter()
    await asyncio.gather(*(requester() for _ in range(in_flight)))
    elapsed = time.perf_counter() - started
    receiver.cancel()
    writer.close()
    return count / elapsed


# --- cases -----------------------------------------------------------------------------------


def quiet(_: object) -> None:
    """Periodic reports are not needed here."""


async def produce_case(
    namesrv: str, size: int, in_flight: int, batch: int, seconds: float
) -> tuple[dict[str, Any], Traffic, int]:
    producer = Producer("client_bench", namesrv, compress_body_over=1 << 62)
    await producer.start()
    try:
        await producer.instance.publish_info(TOPIC)
        config = ProducerBenchConfig(
            topic=TOPIC,
            message_size=size,
            in_flight=in_flight,
            batch_size=batch,
            duration=seconds,
        )
        report, traffic = await measured(
            run_producer_bench(producer, config, interval=3600, on_report=quiet)
        )
    finally:
        await producer.shutdown()
    requests = max(report.send_total // batch, 1)
    figures = {
        "msgs/s": round(report.send_tps),
        "p50 ms": round(report.p50_rt_ms, 3),
        "p99 ms": round(report.p99_rt_ms, 3),
    }
    return (
        figures,
        Traffic(traffic.written // requests, traffic.read // requests),
        report.send_total,
    )


async def push_consume_case(namesrv: str, count: int) -> tuple[dict[str, Any], Traffic, int]:
    config = ConsumerBenchConfig(
        topic=TOPIC, group="client_bench_push", from_first=True, count=count
    )
    report, traffic = await measured(
        run_consumer_bench(namesrv, config, interval=3600, on_report=quiet)
    )
    total = report.consume_total
    return {"msgs/s": round(report.consume_tps)}, per_pull(traffic, total), total


async def pull_consume_case(namesrv: str, count: int) -> tuple[dict[str, Any], Traffic, int]:
    async with ClientInstance(namesrv) as instance:
        consumer = PullConsumer("client_bench_pull", instance=instance)
        await consumer.start()
        try:
            queues = await consumer.fetch_subscribe_message_queues(TOPIC)
            received = 0

            async def read(mq: Any) -> None:
                nonlocal received
                offset = 0
                while received < count:
                    result = await consumer.pull(mq, offset, PULL_BATCH)
                    if result.status is not PullStatus.FOUND:
                        return
                    received += len(result.messages)
                    offset = result.next_begin_offset

            started = time.perf_counter()
            _, traffic = await measured(asyncio.gather(*(read(mq) for mq in queues)))
            elapsed = time.perf_counter() - started
        finally:
            await consumer.shutdown()
    return {"msgs/s": round(received / elapsed)}, per_pull(traffic, received), received


def per_pull(traffic: Traffic, messages: int) -> Traffic:
    """The traffic of one full pull (PULL_BATCH messages), from a consume case's totals."""
    return Traffic(traffic.written * PULL_BATCH // messages, traffic.read * PULL_BATCH // messages)


async def run_all(namesrv: str, broker: str, raw_port: int, args: argparse.Namespace) -> Any:
    await create_topic(namesrv, broker)
    seconds, size = args.seconds, args.size
    cases: dict[str, dict[str, Any]] = {}
    stored = 0

    async def compare(
        name: str,
        case: Callable[[], Awaitable[tuple[dict[str, Any], Traffic, int]]],
        in_flight: int,
        per_request: int,
    ) -> int:
        figures, traffic, done = await case()
        raw = per_request * await raw_rate(
            raw_port, traffic.written, traffic.read, in_flight, seconds
        )
        cases[name] = {
            **figures,
            "raw loopback msgs/s": round(raw),
            "ratio": round(figures["msgs/s"] / raw, 3) if raw else None,
            "bytes out/in per request": f"{traffic.written}/{traffic.read}",
        }
        print(f"{name}: {cases[name]}", file=sys.stderr)
        return done

    for in_flight in (1, 16):
        stored += await compare(
            f"sync send, {in_flight} in flight",
            functools.partial(produce_case, namesrv, size, in_flight, 1, seconds),
            in_flight,
            1,
        )
    stored += await compare(
        f"batched send, {BATCH}/batch, 1 in flight",
        functools.partial(produce_case, namesrv, size, 1, BATCH, seconds),
        1,
        BATCH,
    )
    await compare(
        "consume, push consumer (20 tasks, 1 msg/call)",
        functools.partial(push_consume_case, namesrv, stored),
        QUEUES,
        PULL_BATCH,
    )
    await compare(
        f"consume, pull loop ({PULL_BATCH}/pull)",
        functools.partial(pull_consume_case, namesrv, stored),
        QUEUES,
        PULL_BATCH,
    )
    return {
        "message size": size,
        "seconds per send case": seconds,
        "messages consumed per consume case": stored,
        "loop": "uvloop",
        "cases": cases,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="time per send case")
    parser.add_argument("--size", type=int, default=1024, help="message body size")
    args = parser.parse_args()
    receiver, sender = multiprocessing.Pipe(duplex=False)
    server = multiprocessing.Process(target=raw_server, args=(sender,), daemon=True)
    server.start()
    raw_port = receiver.recv()
    try:
        with standalone() as (namesrv, broker):
            result = uvloop.run(run_all(namesrv, broker, raw_port, args))
    finally:
        server.terminate()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
