"""`rmq bench produce|consume`: load generators with RocketMQ's benchmark columns.

    rmq bench produce [-t TOPIC] [-s SIZE] [-w THREADS] [--in-flight N] [-b BATCH]
                      [--rate MSGS] [-d SECONDS | -c COUNT] [-i SECONDS] [--json] [-n NS]
    rmq bench consume [-t TOPIC] [-g GROUP] [-w THREADS] [-b BATCH] [--filter EXPR] [--pull]
                      [--from first|last] [-d SECONDS | -c COUNT] [-i SECONDS] [--json] [-n NS]

The work is done by `rmq.client.bench`; this module parses options, prints and picks the
exit code.  Like the Java tools, the commands print one line every `-i` seconds with the
figures of that interval (by default a tenth of `-d`, between 1 and 10 seconds; 10 without
`-d`),

    Current Time: 2024-05-01 12:00:10,001 Send TPS: 9871 Max RT(ms): 12 Average RT(ms):   1.611
        Send Failed: 0 Response Failed: 0 p50 RT(ms): 1.502 p99 RT(ms): 4.217 p999 RT(ms): 9.1
    Current Time: 1714557610001 Consume TPS: 10112 FAIL: 0 AVG(B2C) RT(ms):  25.300 ...

and a `[Complete] ...` line for the whole run.  They run until `-c` messages are done, `-d`
seconds have passed, or Ctrl-C (which exits 130 after the final line).  With `--json` the
periodic lines go to stderr and stdout gets one JSON object: the settings and the whole
run's figures (documented in docs/benchmarks.md).  `-s`, `-w`, `-t` and `-g` keep the Java
tools' letters; `-n` is the name server and `-c` a count, as everywhere in rmq.  When stderr
is a terminal a progress bar (rmq.cli.progress) counts the messages as they go.
"""

from __future__ import annotations

import enum
import sys
from typing import TYPE_CHECKING, Annotated, Any, Protocol

import typer

from rmq.cli.main import command_app
from rmq.cli.settings import NamesrvOption, resolve_namesrv

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Awaitable, Callable

    from rmq.client.bench import (
        ConsumerBenchConfig,
        ConsumerReport,
        ProducerBenchConfig,
        ProducerReport,
    )

app = command_app(help="Load generators with RocketMQ's benchmark columns.")

DEFAULT_TOPIC = "BenchmarkTest"


class BenchStart(enum.StrEnum):
    FIRST = "first"
    LAST = "last"


TopicOption = Annotated[str, typer.Option("--topic", "-t", help="Topic.")]
DurationOption = Annotated[
    float | None,
    typer.Option(
        "--duration", "-d", min=0.1, metavar="SECONDS", help="Run this long.", show_default=False
    ),
]
CountOption = Annotated[
    int | None,
    typer.Option(
        "--count", "-c", min=1, metavar="N", help="Stop after N messages.", show_default=False
    ),
]
IntervalOption = Annotated[
    float | None,
    typer.Option(
        "--interval",
        "-i",
        min=0.1,
        metavar="SECONDS",
        help="Seconds between lines [default: a tenth of -d, 1 to 10; 10 without -d].",
        show_default=False,
    ),
]
JsonOption = Annotated[
    bool,
    typer.Option("--json", help="Print the final figures as one JSON object on stdout."),
]


@app.command("produce")
def produce(
    topic: TopicOption = DEFAULT_TOPIC,
    message_size: Annotated[
        int, typer.Option("--size", "-s", min=1, metavar="BYTES", help="Body size.")
    ] = 128,
    threads: Annotated[
        int, typer.Option("--threads", "-w", min=1, metavar="N", help="Sender tasks.")
    ] = 1,
    in_flight: Annotated[
        int,
        typer.Option("--in-flight", min=1, metavar="N", help="Sends each task keeps under way."),
    ] = 1,
    batch: Annotated[
        int,
        typer.Option("--batch", "-b", min=1, metavar="N", help="Messages per send (a batch)."),
    ] = 1,
    rate: Annotated[
        float | None,
        typer.Option(
            "--rate",
            min=0.001,
            metavar="MSGS",
            help="Send MSGS messages a second on a fixed schedule; RT counts from the due time.",
            show_default=False,
        ),
    ] = None,
    duration: DurationOption = None,
    count: CountOption = None,
    interval: IntervalOption = None,
    as_json: JsonOption = False,
    namesrv: NamesrvOption = None,
) -> int:
    """Send messages and report Send TPS, RT (p50, p99, p99.9) and failures.

    THREADS tasks each keep IN-FLIGHT synchronous sends under way; with --batch each send
    is a batch of that many messages.  With --rate the sends follow a schedule of MSGS
    messages a second (THREADS x IN-FLIGHT sends at most under way) and each RT is measured
    from when its send was due, so a stalled broker is charged for the sends it delayed.
    """
    from rmq.client.bench import ProducerBenchConfig

    config = ProducerBenchConfig(
        topic=topic,
        message_size=message_size,
        threads=threads,
        in_flight=in_flight,
        batch_size=batch,
        duration=duration,
        count=count,
        rate=rate,
    )
    settings = {
        "topic": topic,
        "messageSize": message_size,
        "threads": threads,
        "inFlight": in_flight,
        "batchSize": batch,
        "rate": rate,
    }
    every = report_interval(interval, duration)
    return _run(
        settings,
        as_json,
        "sending",
        count,
        lambda stop, report, progress: _produce(config, namesrv, every, stop, report, progress),
    )


async def _produce(
    config: ProducerBenchConfig,
    namesrv: str | None,
    interval: float,
    stop: asyncio.Event,
    report: Callable[[ProducerReport], None],
    progress: Callable[[int], None],
) -> ProducerReport:
    from rmq.cli.produce import check_topic
    from rmq.client.bench import run_producer_bench
    from rmq.client.producer import Producer

    addrs = resolve_namesrv(namesrv)
    producer = Producer(config.group, addrs, compress_body_over=1 << 62)
    await producer.start()
    try:
        await check_topic(producer, config.topic, addrs)
        return await run_producer_bench(
            producer, config, interval=interval, on_report=report, stop=stop, on_progress=progress
        )
    finally:
        await producer.shutdown()


@app.command("consume")
def consume(
    topic: TopicOption = DEFAULT_TOPIC,
    group: Annotated[str, typer.Option("--group", "-g", help="Consumer group.")] = (
        "benchmark_consumer"
    ),
    threads: Annotated[
        int, typer.Option("--threads", "-w", min=1, metavar="N", help="Consume tasks.")
    ] = 20,
    batch: Annotated[
        int,
        typer.Option("--batch", "-b", min=1, metavar="N", help="Messages per listener call."),
    ] = 1,
    tag_filter: Annotated[
        str, typer.Option("--filter", metavar="EXPR", help="Tag expression.")
    ] = "*",
    start: Annotated[
        BenchStart,
        typer.Option("--from", case_sensitive=False, help="Where a group without offsets starts."),
    ] = BenchStart.LAST,
    pull: Annotated[
        bool,
        typer.Option(
            "--pull", help="Pull every queue in a loop (32 a pull) instead of a push consumer."
        ),
    ] = False,
    duration: DurationOption = None,
    count: CountOption = None,
    interval: IntervalOption = None,
    as_json: JsonOption = False,
    namesrv: NamesrvOption = None,
) -> int:
    """Consume messages and report Consume TPS and store-to-consume latency.

    A push consumer of GROUP with THREADS consume tasks; a group without offsets starts
    at --from.  With --pull, one task per queue pulls from the queue's first (--from first)
    or last offset, ignoring the group's offsets and THREADS.
    """
    from rmq.client.bench import ConsumerBenchConfig

    config = ConsumerBenchConfig(
        topic=topic,
        group=group,
        threads=threads,
        batch_size=batch,
        expression=tag_filter,
        from_first=start is BenchStart.FIRST,
        duration=duration,
        count=count,
        pull=pull,
    )
    settings = {
        "topic": topic,
        "group": group,
        "threads": threads,
        "batchSize": batch,
        "mode": "pull" if pull else "push",
    }
    every = report_interval(interval, duration)
    return _run(
        settings,
        as_json,
        "receiving",
        count,
        lambda stop, report, progress: _consume(config, namesrv, every, stop, report, progress),
    )


async def _consume(
    config: ConsumerBenchConfig,
    namesrv: str | None,
    interval: float,
    stop: asyncio.Event,
    report: Callable[[ConsumerReport], None],
    progress: Callable[[int], None],
) -> ConsumerReport:
    import asyncio

    from rmq.cli.consume_read import quiet_late_responses
    from rmq.cli.topic import admin_error
    from rmq.client.bench import run_consumer_bench
    from rmq.client.errors import ClientError
    from rmq.client.instance import ClientInstance
    from rmq.remoting.errors import RemotingError

    addrs = resolve_namesrv(namesrv)
    try:
        async with ClientInstance(addrs) as instance:
            await instance.get_route(config.topic)
    except (ClientError, RemotingError) as exc:
        raise admin_error(exc, addrs) from exc
    stopping = asyncio.get_running_loop().create_task(stop.wait())
    stopping.add_done_callback(lambda _: quiet_late_responses())
    try:
        return await run_consumer_bench(
            addrs, config, interval=interval, on_report=report, stop=stop, on_progress=progress
        )
    finally:
        stopping.cancel()


class Report(Protocol):
    """What both benchmarks report: a line for people, figures for JSON."""

    def line(self) -> str: ...

    def to_json(self) -> dict[str, Any]: ...


def report_interval(interval: float | None, duration: float | None) -> float:
    """Seconds between report lines: `interval` when given, else a tenth of the run's
    `duration` between 1 and 10 seconds (10 when the run has no duration)."""
    if interval is not None:
        return interval
    if duration is None:
        return 10.0
    return min(10.0, max(1.0, duration / 10))


def _run(
    settings: dict[str, Any],
    as_json: bool,
    activity: str,
    count: int | None,
    bench: Callable[
        [asyncio.Event, Callable[[Report], None], Callable[[int], None]], Awaitable[Report]
    ],
) -> int:
    """Run a benchmark: header and periodic lines (stderr with --json), the final line or
    JSON object on stdout, a progress bar of `activity` on a terminal stderr (of `count`
    messages, when given); Ctrl-C ends the run early and exits 130."""
    from rmq.cli.progress import Progress
    from rmq.runtime import exit_code_for, run_main, shutdown_signals

    lines = sys.stderr if as_json else sys.stdout
    print(
        " ".join(f"{key}: {value}" for key, value in settings.items() if value is not None),
        file=lines,
        flush=True,
    )
    bar = Progress(activity, total=count)

    def report(figures: Report) -> None:
        # with a bar drawn, rich shows what is printed to stdout and stderr above it
        print(figures.line(), file=lines, flush=True)

    async def main() -> int:
        import asyncio

        with shutdown_signals() as interrupted, bar:
            stop = asyncio.Event()
            interrupted.add_done_callback(lambda _: stop.set())
            final = await bench(stop, report, bar.update)
        if as_json:
            import orjson

            sys.stdout.buffer.write(orjson.dumps({**settings, **final.to_json()}) + b"\n")
        else:
            print(final.line(), flush=True)
        return exit_code_for(interrupted.result()) if interrupted.done() else 0

    return run_main(main())
