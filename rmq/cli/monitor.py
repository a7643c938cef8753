"""`rmq monitor`: every consumer group's lag and members, round after round.

    rmq monitor [--interval SECONDS] [--rounds N] [-o table|wide|json|ndjson|yaml]

mqadmin startMonitoring's rounds (`rmq.client.adminops.consumer.monitor_round`, the one
operation both call) printed to stdout as rows: one per group and topic it consumes, with the
summed lag, the largest lag of one queue, the delay between the newest message and the last
consumption, and the number of members that reported their running info.  Unlike
startMonitoring (`monitor_round(offline=True)`), the rounds also cover groups that only have
committed offsets, and give the lag of groups with no member online; a group without stats
gets one row without a topic.  The first round starts at once, the
next `--interval` seconds after the previous one started (mqadmin: every minute).  Each round
is rendered on its own: a table with its time as title, a JSON array, a YAML document, or
NDJSON lines (the round number and time in every row).  The command stops after `--rounds`
rounds, on SIGTERM (exit 0) or on Ctrl-C (exit 130).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from rmq.cli.main import command_app
from rmq.cli.output import OutputOption, render, resolve_output
from rmq.cli.settings import NamesrvOption, resolve_namesrv
from rmq.cli.topic import human_time, run_admin

if TYPE_CHECKING:
    from rmq.client.admin import AdminClient
    from rmq.client.adminops.consumer import GroupReport

app = command_app(help="Watch every consumer group's lag and members (mqadmin startMonitoring).")

COLUMNS = ("group", "topic", "lag", "singleQueueMaxLag", "delayMs", "members")
WIDE_COLUMNS = ("round", "timestamp")
DEFAULT_INTERVAL = 60.0


def round_rows(number: int, timestamp: int, reports: list[GroupReport]) -> list[dict[str, Any]]:
    """The rows of one round: one per group and topic, one per group without lag figures."""
    rows: list[dict[str, Any]] = []
    for report in reports:
        base = {"round": number, "timestamp": timestamp, "group": report.group}
        members = len(report.running_infos)
        if not report.undone:
            rows.append(
                {
                    **base,
                    "topic": None,
                    "lag": None,
                    "singleQueueMaxLag": None,
                    "delayMs": None,
                    "members": members,
                }
            )
        for undone in report.undone:
            rows.append(
                {
                    **base,
                    "topic": undone.topic,
                    "lag": undone.total,
                    "singleQueueMaxLag": undone.single_mq_max,
                    "delayMs": undone.delay_ms,
                    "members": members,
                }
            )
    return rows


@app.command("monitor")
def monitor(
    interval: Annotated[
        float,
        typer.Option("--interval", min=0, metavar="SECONDS", help="Seconds between rounds."),
    ] = DEFAULT_INTERVAL,
    rounds: Annotated[
        int | None,
        typer.Option("--rounds", min=1, metavar="N", help="Stop after N rounds. Default: never."),
    ] = None,
    namesrv: NamesrvOption = None,
    output: OutputOption = None,
) -> None:
    """Print every consumer group's lag and members, round after round.

    Each round lists every group the name server knows a retry topic of, then every other
    group with committed offsets (one whose offsets were cloned): per topic it consumes,
    the summed lag, the largest lag of one queue, the delay (ms) between the newest message
    and the last consumption, and the members that reported their running info.  Groups
    with no member online get their lag too.  Stops after --rounds rounds, on SIGTERM or
    Ctrl-C.
    """
    fmt = resolve_output(output)

    async def watch(admin: AdminClient) -> None:
        import asyncio
        import signal
        import time

        from rmq.client.adminops.consumer import monitor_round

        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        stopped = asyncio.create_task(stop.wait())
        try:
            number = 0
            while rounds is None or number < rounds:
                number += 1
                started = time.monotonic()
                timestamp = int(time.time() * 1000)
                work = asyncio.create_task(monitor_round(admin, offline=True))
                await asyncio.wait({work, stopped}, return_when=asyncio.FIRST_COMPLETED)
                if stop.is_set():
                    work.cancel()
                    return
                rows = round_rows(number, timestamp, work.result())
                title = f"round {number} at {human_time(timestamp)}"
                render(rows, columns=COLUMNS, wide_columns=WIDE_COLUMNS, output=fmt, title=title)
                if rounds is not None and number >= rounds:
                    return
                wait = max(0.0, interval - (time.monotonic() - started))
                try:
                    await asyncio.wait_for(stop.wait(), wait)
                except TimeoutError:
                    continue
                return
        finally:
            stopped.cancel()
            loop.remove_signal_handler(signal.SIGTERM)

    run_admin(resolve_namesrv(namesrv), watch)
