"""`rmq inspect STORE stats` and `verify`: the commands that read the whole commitlog, for
per-queue statistics and for a full check of the store."""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Annotated

import typer

from rmq.cli.errors import EXIT_FAILURE, EXIT_OK
from rmq.cli.inspect.group import (
    Damage,
    TopicOption,
    app,
    opened,
)
from rmq.cli.inspect.views import (
    display_path,
    for_people,
    human_sizes,
    plain_data,
    scan_progress,
    tag_histogram,
    with_times,
)
from rmq.cli.output import OutputOption, render, resolve_output

if TYPE_CHECKING:
    pass


class StatsBy(enum.StrEnum):
    QUEUE = "queue"
    TOPIC = "topic"


@app.command()
def stats(
    ctx: typer.Context,
    topic: TopicOption = None,
    by: Annotated[
        StatsBy, typer.Option("--by", help="One row per queue or per topic.")
    ] = StatsBy.QUEUE,
    output: OutputOption = None,
) -> int:
    """Per topic and queue: records, bytes, queue offsets, time range, body CRC errors and
    a histogram of tags, from one scan of the commitlog."""
    from rmq.store.offline.search import queue_stats, topic_stats

    fmt = resolve_output(output)
    with opened(ctx) as reader, scan_progress("scanning") as bar:
        damage = Damage(reader.layout.root)
        rows = queue_stats(reader, topic=topic, progress=bar)
    if by is StatsBy.TOPIC:
        rows = topic_stats(rows)
    data = plain_data(rows)
    for row in data:
        if by is StatsBy.TOPIC:
            for field_name in ("queueId", "minQueueOffset", "maxQueueOffset"):
                del row[field_name]
        if for_people(fmt):
            row.update(with_times(row), tags=tag_histogram(row["tags"]))
            row["storedBytes"] = row.pop("bytes")  # whole records as stored: bodies compressed
            row.update(human_sizes(row))
    columns = [
        "topic",
        "queueId",
        "messages",
        "storedBytes",
        "minQueueOffset",
        "maxQueueOffset",
        "crcErrors",
        "tags",
    ]
    if by is StatsBy.TOPIC:
        columns = [c for c in columns if c not in ("queueId", "minQueueOffset", "maxQueueOffset")]
    render(data, columns=columns, wide_columns=("firstStoreTime", "lastStoreTime"), output=fmt)
    return damage.exit_code


@app.command()
def verify(ctx: typer.Context, output: OutputOption = None) -> int:
    """Check the whole store: record magic, sizes and body CRCs, blank records and torn
    tails, consume queue entries against records, index entries against records, the
    checkpoint and config files.  Lists every problem with its file and byte offset and
    exits 1 if there is any, 0 for a clean store."""
    import time

    fmt = resolve_output(output)
    with opened(ctx) as reader, scan_progress("verifying") as bar:
        started = time.monotonic()
        report = reader.validate(progress=bar)
        elapsed = time.monotonic() - started
        root = reader.layout.root
    problems = [
        {
            "kind": p.kind.value,
            "file": display_path(p.path, root),
            "offset": p.offset,
            "message": p.message,
        }
        for p in report.problems
    ]
    summary = {
        "store": str(root),
        "ok": report.ok,
        "records": report.records,
        "commitlogFiles": report.commitlog_files,
        "bytesScanned": report.bytes_scanned,
        "minPhysicalOffset": report.min_physical_offset,
        "maxPhysicalOffset": report.max_physical_offset,
        "consumeQueues": report.consume_queues,
        "consumeQueueEntries": report.consume_queue_entries,
        "indexFiles": report.index_files,
        "indexEntries": report.index_entries,
        "seconds": round(elapsed, 3),
    }
    if for_people(fmt):
        if problems:
            render(
                problems,
                columns=("kind", "file", "offset", "message"),
                output=fmt,
                title="Problems",
            )
        result = (
            "clean"
            if report.ok
            else f"{len(problems)} problem{'s' if len(problems) > 1 else ''} found"
        )
        render(
            human_sizes({"result": result, **summary}),
            columns=["result", *summary],
            output=fmt,
            title="Verification",
        )
    else:
        render({**summary, "problems": problems}, columns=(), output=fmt)
    return EXIT_OK if report.ok else EXIT_FAILURE
