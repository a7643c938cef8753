"""`rmq inspect STORE overview`, `files` and `checkpoint`: what a store holds and in what
state, its files with their ranges, and the decoded checkpoint."""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Annotated, Any, Final

import typer

from rmq.cli.errors import RmqError
from rmq.cli.inspect.group import (
    QueueOption,
    TopicOption,
    app,
    opened,
    render_table,
)
from rmq.cli.inspect.views import (
    for_people,
    human_sizes,
    plain_data,
    with_times,
)
from rmq.cli.output import OutputOption, render, resolve_output

if TYPE_CHECKING:
    pass


OVERVIEW_COLUMNS: Final = (
    "root",
    "broker",
    "shutdown",
    "commitlogFiles",
    "commitlogBytes",
    "minPhysicalOffset",
    "maxPhysicalOffset",
    "firstStoreTime",
    "lastStoreTime",
    "topics",
    "queues",
    "messages",
    "consumeQueueFiles",
    "consumeQueueBytes",
    "indexFiles",
    "indexBytes",
    "indexEntries",
    "physicMsgTime",
    "logicsMsgTime",
    "indexMsgTime",
)


@app.command()
def overview(ctx: typer.Context, output: OutputOption = None) -> None:
    """Files, offsets, topics, queues, message counts, time range, broker and checkpoint.

    'broker' says whether a process holds the store's lock file now (a running broker, by
    pid); 'shutdown' is 'running', or 'clean'/'unclean' from the abort file.
    """
    from rmq.store.offline.summary import overview as store_overview

    fmt = resolve_output(output)
    with opened(ctx) as reader:
        data = plain_data(store_overview(reader))
    if not for_people(fmt):
        render(data, columns=(), output=fmt)
        return
    summary = human_sizes(with_times(data))
    pid = data["lockHolderPid"]
    summary["broker"] = (
        f"running: the lock is held by pid {pid if pid is not None else '?'}"
        if data["lockHeld"]
        else "not running: the lock is free"
    )
    if data["abortFile"] and not data["lockHeld"]:
        summary["shutdown"] = "unclean: the abort file is present (the tail may be torn)"
    render(summary, columns=OVERVIEW_COLUMNS, output=fmt, title="Store")
    render(
        data["topicSummaries"], columns=("topic", "queues", "messages"), output=fmt, title="Topics"
    )


class FileKind(enum.StrEnum):
    COMMITLOG = "commitlog"
    CONSUMEQUEUE = "consumequeue"
    INDEX = "index"
    CONFIG = "config"


_FILE_COLUMNS: Final[dict[FileKind, tuple[tuple[str, ...], tuple[str, ...]]]] = {
    FileKind.COMMITLOG: (("name", "start", "end", "size", "modifiedTime"), ("path",)),
    FileKind.CONSUMEQUEUE: (
        (
            "topic",
            "queueId",
            "name",
            "firstQueueOffset",
            "entries",
            "capacity",
            "minCommitlogOffset",
            "maxCommitlogOffset",
        ),
        ("preBlankEntries", "size", "modifiedTime", "path"),
    ),
    FileKind.INDEX: (
        ("name", "entries", "capacity", "usedSlots", "hashSlots", "beginTime", "endTime"),
        ("beginCommitlogOffset", "endCommitlogOffset", "size", "modifiedTime", "path"),
    ),
    FileKind.CONFIG: (
        ("name", "size", "modifiedTime", "backupSize", "backupModifiedTime"),
        ("path",),
    ),
}


@app.command()
def files(
    ctx: typer.Context,
    kind: Annotated[FileKind, typer.Argument(show_default=True)] = FileKind.COMMITLOG,
    topic: TopicOption = None,
    queue: QueueOption = None,
    output: OutputOption = None,
) -> None:
    """List the files of the commitlog, the consume queues (-t/-q to narrow), the index or
    config/, with their offset ranges and what they hold."""
    from rmq.cli.inspect import filerows

    fmt = resolve_output(output)
    with opened(ctx) as reader:
        rows: list[Any]
        if kind is FileKind.COMMITLOG:
            rows = filerows.commitlog_file_rows(reader)
        elif kind is FileKind.CONSUMEQUEUE:
            rows = filerows.consume_queue_file_rows(reader, topic, queue)
        elif kind is FileKind.INDEX:
            rows = filerows.index_file_rows(reader)
        else:
            rows = filerows.config_file_rows(reader)
    render_table(plain_data(rows), _FILE_COLUMNS[kind], fmt)


@app.command()
def checkpoint(ctx: typer.Context, output: OutputOption = None) -> None:
    """Decode the checkpoint file: the store times of the last commitlog, consume queue and
    index flushes, and where abnormal recovery would start looking."""
    from rmq.store.offline.summary import checkpoint_info

    fmt = resolve_output(output)
    with opened(ctx) as reader:
        info = checkpoint_info(reader)
        if info is None:
            raise RmqError(
                f"{reader.layout.checkpoint} is missing or shorter than 24 bytes",
                "check the store directory",
            )
    data = plain_data(info)
    columns = (
        "path",
        "physicMsgTime",
        "logicsMsgTime",
        "indexMsgTime",
        "recoveryTime",
        "recoveryWithIndexTime",
    )
    render(with_times(data) if for_people(fmt) else data, columns=columns, output=fmt)
