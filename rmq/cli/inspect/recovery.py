"""`rmq inspect STORE recovery`: what the broker's recoveries skipped, cut and removed, from
the report files under ``<store>/recovery/``."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from rmq.cli.errors import RmqError
from rmq.cli.inspect.group import app, target_of
from rmq.cli.inspect.views import for_people
from rmq.cli.output import OutputOption, render, resolve_output

_SPAN_COLUMNS = (
    "report",
    "file",
    "position",
    "offset",
    "length",
    "reason",
    "topic",
    "queueId",
    "queueOffset",
    "detail",
)
_REPORT_COLUMNS = (
    "report",
    "mode",
    "endOffset",
    "skipped",
    "bytesCut",
    "droppedRecords",
    "consumeQueueEntriesRemoved",
    "indexEntriesRemoved",
    "restoredFiles",
    "setAside",
    "rebuiltQueues",
    "reindexedFrom",
)
_SET_ASIDE_COLUMNS = ("report", "file", "movedTo", "reason")


@app.command()
def recovery(
    ctx: typer.Context,
    show_bytes: Annotated[
        int,
        typer.Option(
            "--bytes",
            min=0,
            metavar="N",
            help="Also show the first N bytes of each skipped span (hex), read from the "
            "commitlog where they were left.",
        ),
    ] = 0,
    output: OutputOption = None,
) -> None:
    """What each recovery of the broker skipped (damaged commitlog records and framing, left
    in place), cut and removed (consume queue and index entries), set aside (damaged files,
    moved under <store>/recovery/) and rebuilt (consume queues, index keys), oldest first;
    nothing when every start was clean."""
    from rmq.store.errors import StoreError
    from rmq.store.offline.recoveries import load_reports, span_bytes

    fmt = resolve_output(output)
    target = target_of(ctx)
    commitlog_dir = target.commitlog_dir or target.root / "commitlog"
    try:
        reports = load_reports(target.root)
        if show_bytes:
            for report in reports:
                for span in report.get("skipped", []):
                    span["hex"] = span_bytes(commitlog_dir, span, show_bytes).hex()
    except StoreError as exc:
        raise RmqError(str(exc)) from None
    if not for_people(fmt):
        render(reports, columns=(), output=fmt)
        return
    rows: list[dict[str, Any]] = [
        {
            **{key: report.get(key) for key in _REPORT_COLUMNS},
            "skipped": len(report.get("skipped", [])),
            "bytesCut": sum(cut["length"] for cut in report.get("truncated", [])),
            "consumeQueueEntriesRemoved": sum(
                report.get("consumeQueueEntriesRemoved", {}).values()
            ),
            "restoredFiles": ", ".join(f["file"] for f in report.get("restoredFiles", [])),
            "setAside": len(report.get("setAside", [])),
            "rebuiltQueues": ", ".join(report.get("rebuiltQueues", {})),
            "reindexedFrom": (
                "" if report.get("reindexedFrom", -1) < 0 else report.get("reindexedFrom")
            ),
        }
        for report in reports
    ]
    render(rows, columns=_REPORT_COLUMNS, output=fmt, title="Recoveries")
    spans = [
        {"report": report["report"], **span}
        for report in reports
        for span in report.get("skipped", [])
    ]
    if spans:
        columns = (*_SPAN_COLUMNS, "hex") if show_bytes else _SPAN_COLUMNS
        render(spans, columns=columns, output=fmt, title="Skipped spans (left in place)")
    moved = [
        {"report": report["report"], **entry}
        for report in reports
        for entry in report.get("setAside", [])
    ]
    if moved:
        render(moved, columns=_SET_ASIDE_COLUMNS, output=fmt, title="Damaged files set aside")
