"""The `rmq inspect` group: `rmq inspect STORE_DIR [COMMAND [ARGS]]`.

Without a command the group opens the interactive shell (`rmq.cli.inspect.repl`), which
dispatches each line back into this group; with one it runs it once.  Every command opens a
fresh `StoreReader` on the directory (read-only: nothing is ever written, locked or
repaired), asks `rmq.store.inspect` or the reader, and renders with `rmq.cli.output.render`
(`-o table|wide|json|ndjson|yaml`; records in the message-record schema of `rmq consume`).

Failures of the store (a file that cannot be read, no record at an offset) are `RmqError`s,
exit 1; damage met while scanning is reported as `rmq: warning: FILE@OFFSET: ...` lines on
stderr and turns the exit code to 1 as well; `verify` exits 1 when it finds any problem.
Long scans draw a progress bar on stderr when it is a terminal.

The group callback only checks the directory and stores it in `ctx.meta`; the store and
everything heavy are imported inside the commands, so `rmq inspect --help` stays fast.
"""

from __future__ import annotations

import codecs
import contextlib
import enum
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final

import click
import typer

from rmq.cli.errors import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, PROG_NAME, RmqError, option_value
from rmq.cli.inspect.views import (
    RECORD_COLUMNS,
    RECORD_WIDE_COLUMNS,
    ProgressBar,
    body_text,
    display_path,
    for_people,
    format_time,
    hex_dump,
    plain_data,
    record_rows,
    tag_histogram,
    with_times,
)
from rmq.cli.main import command_app
from rmq.cli.output import OutputFormat, OutputOption, render, resolve_output
from rmq.common.timeutil import parse_time

if TYPE_CHECKING:
    from rmq.common.message import MessageRecord
    from rmq.store.inspect import RecordFilter
    from rmq.store.reader import ProblemKind, StoreReader

TARGET_KEY: Final = "rmq.inspect.target"
DEFAULT_LIST_COUNT: Final = 100
DEFAULT_PREVIEW_BYTES: Final = 256
DEFAULT_MAX_KEYS: Final = 64

app = command_app(
    help="Inspect a broker's store directory offline, read-only.\n\n"
    "STORE_DIR is the broker's storePathRootDir (commitlog/, consumequeue/, index/, "
    "config/, checkpoint).  Without a command, an interactive shell opens (history, TAB "
    "completion, 'help'); with one, it runs once and exits.  Nothing in the directory is "
    "ever written, locked or repaired, so it is safe next to a running broker.",
    invoke_without_command=True,
)


@dataclass(frozen=True)
class StoreTarget:
    """The store directory of this invocation (and a separate commitlog directory)."""

    root: Path
    commitlog_dir: Path | None


@app.callback()
def inspect(
    ctx: typer.Context,
    store_dir: Annotated[Path, typer.Argument(metavar="STORE_DIR", show_default=False)],
    commitlog_dir: Annotated[
        Path | None,
        typer.Option(
            "--commitlog-dir",
            metavar="DIR",
            help="The commitlog directory when it is not STORE_DIR/commitlog "
            "(the broker's storePathCommitLog).",
        ),
    ] = None,
) -> None:
    """Open STORE_DIR read-only: a shell without COMMAND, else run COMMAND and exit."""
    if not store_dir.is_dir():
        raise RmqError(
            f"{store_dir} is not a directory",
            "give the broker's store directory (storePathRootDir)",
            EXIT_USAGE,
        )
    target = StoreTarget(store_dir, commitlog_dir)
    ctx.meta[TARGET_KEY] = target
    if ctx.invoked_subcommand is None:
        from rmq.cli.inspect.repl import run_shell

        raise typer.Exit(run_shell(target))


# -- shared options ------------------------------------------------------------------------

TopicOption = Annotated[
    str | None, typer.Option("--topic", "-t", metavar="TOPIC", help="Only this topic.")
]
QueueOption = Annotated[
    int | None, typer.Option("--queue", "-q", metavar="QUEUE_ID", help="Only this queue id.")
]
BeginOption = Annotated[
    str | None,
    typer.Option(
        "--begin",
        metavar="TIME",
        help="Stored at or after TIME: epoch milliseconds or ISO 8601 (local time when no "
        "zone is given).",
    ),
]
EndOption = Annotated[
    str | None,
    typer.Option("--end", metavar="TIME", help="Stored at or before TIME (as --begin)."),
]
TagOption = Annotated[
    list[str] | None,
    typer.Option("--tag", metavar="TAG", help="Only records with this TAGS value (repeatable)."),
]
KeyOption = Annotated[
    str | None,
    typer.Option(
        "--key", "-k", metavar="KEY", help="Only records with this KEYS token or UNIQ_KEY."
    ),
]
ListCountOption = Annotated[
    int,
    typer.Option(
        "--count",
        "-c",
        min=1,
        metavar="N",
        help=f"At most N records (default {DEFAULT_LIST_COUNT}).",
    ),
]


def record_filter(
    topic: str | None,
    queue: int | None,
    begin: str | None,
    end: str | None,
    tags: list[str] | None,
    key: str | None,
) -> RecordFilter:
    from rmq.store.inspect import RecordFilter

    return RecordFilter(
        topic=topic,
        queue_id=queue,
        begin=option_value(parse_time, begin, "--begin"),
        end=option_value(parse_time, end, "--end"),
        tags=frozenset(tags or ()),
        key=key,
    )


# -- opening the store and reporting damage ------------------------------------------------


def target_of(ctx: click.Context) -> StoreTarget:
    """The store directory the group callback stored for its commands."""
    target: StoreTarget = ctx.meta[TARGET_KEY]
    return target


@contextlib.contextmanager
def opened(ctx: click.Context) -> Iterator[StoreReader]:
    """A `StoreReader` on the target; store failures become one-line errors (exit 1)."""
    from rmq.store.errors import StoreError
    from rmq.store.reader import StoreReader

    target = target_of(ctx)
    try:
        with StoreReader(target.root, commitlog_dir=target.commitlog_dir or "") as reader:
            yield reader
    except StoreError as exc:
        raise RmqError(str(exc), "run 'verify' for a full diagnosis of the store") from None


def warn(line: str) -> None:
    """One `rmq: warning: ...` line on stderr."""
    print(f"{PROG_NAME}: warning: {line}", file=sys.stderr)


class Damage:
    """Counts damage met while reading and prints each as one warning line on stderr; a
    `rmq.store.reader.Report` for scans."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.count = 0

    def __call__(self, kind: ProblemKind, path: Path, offset: int, message: str) -> None:
        self.warn(f"{display_path(path, self.root)}@{offset}: {kind}: {message}")

    def warn(self, line: str) -> None:
        self.count += 1
        warn(line)

    @property
    def exit_code(self) -> int:
        return EXIT_FAILURE if self.count else EXIT_OK


def render_records(records: Iterable[MessageRecord], output: OutputFormat | None) -> None:
    fmt = resolve_output(output)
    render(
        record_rows(records, fmt),
        columns=RECORD_COLUMNS,
        wide_columns=RECORD_WIDE_COLUMNS,
        output=fmt,
    )


# -- overview, files, checkpoint -----------------------------------------------------------

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
    from rmq.store.inspect import overview as store_overview

    fmt = resolve_output(output)
    with opened(ctx) as reader:
        data = plain_data(store_overview(reader))
    if not for_people(fmt):
        render(data, columns=(), output=fmt)
        return
    summary = with_times(data)
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
    from rmq.store import inspect as store_inspect

    fmt = resolve_output(output)
    with opened(ctx) as reader:
        rows: list[Any]
        if kind is FileKind.COMMITLOG:
            rows = store_inspect.commitlog_file_rows(reader)
        elif kind is FileKind.CONSUMEQUEUE:
            rows = store_inspect.consume_queue_file_rows(reader, topic, queue)
        elif kind is FileKind.INDEX:
            rows = store_inspect.index_file_rows(reader)
        else:
            rows = store_inspect.config_file_rows(reader)
    data = plain_data(rows)
    columns, wide = _FILE_COLUMNS[kind]
    render(
        [with_times(row) for row in data] if for_people(fmt) else data,
        columns=columns,
        wide_columns=wide,
        output=fmt,
    )


@app.command()
def checkpoint(ctx: typer.Context, output: OutputOption = None) -> None:
    """Decode the checkpoint file: the store times of the last commitlog, consume queue and
    index flushes, and where abnormal recovery would start looking."""
    from rmq.store.inspect import checkpoint_info

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


# -- records -------------------------------------------------------------------------------


@app.command()
def dump(
    ctx: typer.Context,
    offset: Annotated[int | None, typer.Argument(metavar="[OFFSET]", show_default=False)] = None,
    file: Annotated[
        str | None,
        typer.Option("--file", "-f", metavar="NAME", help="Every record of this commitlog file."),
    ] = None,
    count: Annotated[
        int | None,
        typer.Option(
            "--count",
            "-c",
            min=1,
            metavar="N",
            help="At most N records (default 1 from OFFSET, all of a --file).",
        ),
    ] = None,
    charset: Annotated[
        str, typer.Option("--charset", metavar="CHARSET", help="Decode bodies with CHARSET.")
    ] = "utf-8",
    hex_mode: Annotated[bool, typer.Option("--hex", help="Show bodies as a hex dump.")] = False,
    preview: Annotated[
        int, typer.Option("--preview", min=0, metavar="BYTES", help="Show this much of each body.")
    ] = DEFAULT_PREVIEW_BYTES,
    output: OutputOption = None,
) -> int:
    """Dump records from commitlog OFFSET (a physical offset, or a file name: names are the
    offset of their first byte) or of one --file: header fields, properties and the body."""
    try:
        codecs.lookup(charset)
    except LookupError:
        raise click.BadParameter(f"unknown charset {charset!r}", param_hint="'--charset'") from None
    if (offset is None) == (file is None):
        raise click.UsageError("give either OFFSET or --file NAME")
    fmt = resolve_output(output)
    with opened(ctx) as reader:
        damage = Damage(reader.layout.root)
        start, stop = _dump_range(reader, offset, file)
        limit = count if count is not None else (1 if file is None else None)
        records = []
        for frame in reader.scan(start, report=damage):
            if stop is not None and frame.physical_offset >= stop:
                break
            records.append(reader.message_at(frame.physical_offset))
            if limit is not None and len(records) >= limit:
                break
        if not for_people(fmt):
            render(record_rows(records, fmt), columns=(), output=fmt)
            return damage.exit_code
        for record in records:
            row = _dump_row(reader, record, charset, hex_mode, preview)
            render(
                row,
                columns=list(row),
                output=fmt,
                title=f"Record at commitlog offset {record.physical_offset}",
            )
    return damage.exit_code


def _dump_range(
    reader: StoreReader, offset: int | None, file: str | None
) -> tuple[int, int | None]:
    """Where a dump starts and (for --file) stops; an error when no record starts at OFFSET."""
    if file is not None:
        name = Path(file).name
        for store_file in reader.commitlog_files():
            if store_file.path.name == name:
                return store_file.start, store_file.start + store_file.size
        raise RmqError(
            f"no commitlog file {name} in {reader.layout.commitlog}", "run 'files' to list them"
        )
    assert offset is not None
    reader.message_at(offset)
    return offset, None


def _dump_row(
    reader: StoreReader, record: MessageRecord, charset: str, hex_mode: bool, preview: int
) -> dict[str, Any]:
    from rmq.common.compression import CompressionError
    from rmq.common.sysflag import COMPRESSED_FLAG

    location = next(
        (
            f"{display_path(f.path, reader.layout.root)}@{record.physical_offset - f.start}"
            for f in reader.commitlog_files()
            if f.start <= record.physical_offset < f.start + f.size
        ),
        None,
    )
    stored = record.body or b""
    note = f"{len(stored)} bytes"
    try:
        body = record.decompressed_body() or b""
    except CompressionError as exc:
        body = stored
        note += f", cannot be decompressed ({exc}); stored bytes shown"
    else:
        if record.sys_flag & COMPRESSED_FLAG:
            note += f" compressed, {len(body)} bytes decompressed"
    crc = "matches the body" if record.body_crc_matches() else "DOES NOT match the body"
    return {
        "commitLogOffset": record.physical_offset,
        "file": location,
        "totalSize": record.total_size,
        "magic": f"0x{record.magic:08X}",
        "bodyCrc": f"{record.body_crc} ({crc})",
        "topic": record.topic,
        "queueId": record.queue_id,
        "queueOffset": record.queue_offset,
        "flag": record.flag,
        "sysFlag": f"{record.sys_flag} (0x{record.sys_flag:X})",
        "bornTime": _time_and_millis(record.born_timestamp),
        "bornHost": record.born_host,
        "storeTime": _time_and_millis(record.store_timestamp),
        "storeHost": record.store_host,
        "reconsumeTimes": record.reconsume_times,
        "preparedTransactionOffset": record.prepared_transaction_offset,
        "msgId": record.msg_id,
        "offsetMsgId": record.offset_msg_id,
        "tags": record.tags,
        "keys": record.keys,
        "properties": "\n".join(f"{name}={value}" for name, value in record.properties.items()),
        "body": note,
        "bodyPreview": hex_dump(body, preview) if hex_mode else body_text(body, charset, preview),
    }


def _time_and_millis(millis: int) -> str:
    text = format_time(millis)
    return f"{text} ({millis})" if text else str(millis)


@app.command()
def queue(
    ctx: typer.Context,
    topic: Annotated[str, typer.Argument(metavar="TOPIC", show_default=False)],
    queue_id: Annotated[int, typer.Argument(metavar="QUEUE_ID", show_default=False)],
    start: Annotated[
        int | None,
        typer.Option(
            "--from", metavar="OFFSET", help="First queue offset (default: the queue's min)."
        ),
    ] = None,
    end: Annotated[
        int | None,
        typer.Option(
            "--to", metavar="OFFSET", help="Stop before this queue offset (default: its max)."
        ),
    ] = None,
    count: ListCountOption = DEFAULT_LIST_COUNT,
    output: OutputOption = None,
) -> int:
    """Read queue QUEUE_ID of TOPIC through its consume queue: entries and their records.

    An entry that does not lead to a record is reported with its consume queue file and
    offset (a row with 'error' in tables, a warning on stderr otherwise) and exits 1.
    """
    from rmq.store.inspect import queue_entry_location, queue_gaps

    fmt = resolve_output(output)
    with opened(ctx) as reader:
        damage = Damage(reader.layout.root)
        low, high = reader.queue_offsets(topic, queue_id)
        first = low if start is None else start
        last = high if end is None else end
        for gap in queue_gaps(reader, topic, queue_id):
            if gap.first < last and gap.end > first:
                damage.warn(
                    f"{display_path(gap.next_file.parent, reader.layout.root)}: queue offsets "
                    f"{gap.first}..{gap.end - 1} are missing: no consume queue file holds them "
                    f"(the next file is {gap.next_file.name})"
                )
        rows = []
        for message in reader.read_queue(topic, queue_id, first, last):
            if message.record is None:
                located = queue_entry_location(reader, topic, queue_id, message.queue_offset)
                where = (
                    ""
                    if located is None
                    else f"{display_path(located[0], reader.layout.root)}@{located[1]}"
                )
                error = (
                    f"queue offset {message.queue_offset} points at commitlog offset "
                    f"{message.entry.physical_offset} ({message.entry.size} bytes): {message.error}"
                )
                damage.warn(f"{where}: {error}" if where else error)
                if for_people(fmt):
                    rows.append(
                        {
                            "queueOffset": message.queue_offset,
                            "commitLogOffset": message.entry.physical_offset,
                            "error": error,
                        }
                    )
            else:
                rows.extend(record_rows([message.record], fmt))
            if len(rows) >= count:
                break
    columns = ["queueOffset", "commitLogOffset", "storeTime", "tags", "keys", "bodyPreview"]
    if damage.count:
        columns.append("error")
    render(rows, columns=columns, wide_columns=RECORD_WIDE_COLUMNS, output=fmt)
    return damage.exit_code


@app.command("by-id")
def by_id(
    ctx: typer.Context,
    msg_id: Annotated[str, typer.Argument(metavar="MSG_ID", show_default=False)],
    output: OutputOption = None,
) -> None:
    """Look a message up by id: an offset message id (store host + commitlog offset), else
    a unique key (UNIQ_KEY) through the index of every topic."""
    from rmq.store.errors import StoreError

    with opened(ctx) as reader:
        try:
            records = [reader.message_by_offset_id(msg_id)]
        except StoreError as exc:
            records = _by_key(
                reader, msg_id, None, DEFAULT_MAX_KEYS, None, None, unique=True, scan=False
            )
            if not records:
                raise RmqError(
                    f"no message with id {msg_id}: not an offset id of a stored message ({exc}) "
                    "and no message has this unique key",
                    "check the id, or search with 'by-key' or 'search'",
                ) from None
    render_records(records, output)


def _topics(reader: StoreReader) -> list[str]:
    return sorted({topic for topic, _ in reader.consume_queues()})


def _by_key(
    reader: StoreReader,
    key: str,
    topic: str | None,
    count: int,
    begin: int | None,
    end: int | None,
    *,
    unique: bool,
    scan: bool,
) -> list[MessageRecord]:
    """Messages with ``key`` (a KEYS token or the UNIQ_KEY; only the UNIQ_KEY with
    ``unique``) through the index, or by one scan of the commitlog."""
    from rmq.store.inspect import RecordFilter, find_records

    if scan:
        with ProgressBar("scanning") as bar:
            found = list(
                find_records(
                    reader,
                    RecordFilter(topic=topic, begin=begin, end=end, key=key),
                    limit=None,
                    progress=bar,
                )
            )
    else:
        found = []
        with ProgressBar("scanning the tail the index does not cover") as bar:
            for name in [topic] if topic is not None else _topics(reader):
                found += reader.query_by_key(
                    name,
                    key,
                    count,
                    begin or 0,
                    end if end is not None else (1 << 63) - 1,
                    progress=bar,
                )
        found.sort(key=lambda record: record.physical_offset)
    if unique:
        found = [record for record in found if record.uniq_key == key]
    return found[-count:]


@app.command("by-key")
def by_key(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(metavar="KEY", show_default=False)],
    topic: TopicOption = None,
    begin: BeginOption = None,
    end: EndOption = None,
    count: Annotated[
        int,
        typer.Option("--count", "-c", min=1, metavar="N", help="At most N messages, the newest."),
    ] = DEFAULT_MAX_KEYS,
    scan: Annotated[
        bool, typer.Option("--scan", help="Scan the whole commitlog instead of using the index.")
    ] = False,
    output: OutputOption = None,
) -> None:
    """Messages whose KEYS hold KEY (or whose UNIQ_KEY is KEY), through the index files of
    TOPIC (of every topic without -t) plus a scan of what the index does not cover yet."""
    with opened(ctx) as reader:
        records = _by_key(
            reader,
            key,
            topic,
            count,
            option_value(parse_time, begin, "--begin"),
            option_value(parse_time, end, "--end"),
            unique=False,
            scan=scan,
        )
    render_records(records, output)


@app.command("by-unique-key")
def by_unique_key(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(metavar="UNIQ_KEY", show_default=False)],
    topic: TopicOption = None,
    scan: Annotated[
        bool, typer.Option("--scan", help="Scan the whole commitlog instead of using the index.")
    ] = False,
    output: OutputOption = None,
) -> None:
    """The message(s) with this unique key (UNIQ_KEY, the msgId clients print)."""
    with opened(ctx) as reader:
        records = _by_key(reader, key, topic, DEFAULT_MAX_KEYS, None, None, unique=True, scan=scan)
    render_records(records, output)


@app.command()
def search(
    ctx: typer.Context,
    begin: BeginOption = None,
    end: EndOption = None,
    topic: TopicOption = None,
    queue: QueueOption = None,
    tag: TagOption = None,
    key: KeyOption = None,
    count: ListCountOption = DEFAULT_LIST_COUNT,
    output: OutputOption = None,
) -> int:
    """Records stored between --begin and --end (and matching the other filters), in
    commitlog order; only the commitlog files that can hold the window are read."""
    from rmq.store.inspect import find_records

    wanted = record_filter(topic, queue, begin, end, tag, key)
    with opened(ctx) as reader, ProgressBar("searching") as bar:
        damage = Damage(reader.layout.root)
        records = list(find_records(reader, wanted, limit=count, report=damage, progress=bar))
    render_records(records, output)
    return damage.exit_code


@app.command()
def export(
    ctx: typer.Context,
    topic: TopicOption = None,
    queue: QueueOption = None,
    begin: BeginOption = None,
    end: EndOption = None,
    tag: TagOption = None,
    key: KeyOption = None,
    count: Annotated[
        int | None, typer.Option("--count", "-c", min=1, metavar="N", help="At most N records.")
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", metavar="FILE", help="Write to FILE instead of stdout (not inside the store)."
        ),
    ] = None,
    broker_name: Annotated[
        str | None,
        typer.Option(
            "--broker-name",
            metavar="NAME",
            help="The brokerName of the records (a store does not record it; default null).",
        ),
    ] = None,
) -> int:
    """Export the matching records as NDJSON, one message record per line: the schema of
    'rmq consume', so 'rmq produce' can send them again."""
    import orjson

    from rmq.store.inspect import find_records, record_dict

    wanted = record_filter(topic, queue, begin, end, tag, key)
    target = target_of(ctx)
    if out is not None and out.resolve().is_relative_to(target.root.resolve()):
        raise RmqError(
            f"{out} is inside the store directory", "write the export somewhere else", EXIT_USAGE
        )
    with opened(ctx) as reader, ProgressBar("exporting") as bar:
        damage = Damage(reader.layout.root)
        with contextlib.ExitStack() as stack:
            sink = stack.enter_context(out.open("wb")) if out is not None else sys.stdout.buffer
            for record in find_records(reader, wanted, limit=count, report=damage, progress=bar):
                sink.write(orjson.dumps(record_dict(record, broker_name)) + b"\n")
            sink.flush()
    return damage.exit_code


# -- statistics and verification -----------------------------------------------------------


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
    from rmq.store.inspect import queue_stats, topic_stats

    fmt = resolve_output(output)
    with opened(ctx) as reader, ProgressBar("scanning") as bar:
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
    columns = [
        "topic",
        "queueId",
        "messages",
        "bytes",
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
    with opened(ctx) as reader, ProgressBar("verifying") as bar:
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
            {"result": result, **summary},
            columns=["result", *summary],
            output=fmt,
            title="Verification",
        )
    else:
        render({**summary, "problems": problems}, columns=(), output=fmt)
    return EXIT_OK if report.ok else EXIT_FAILURE


# -- config --------------------------------------------------------------------------------


class ConfigName(enum.StrEnum):
    TOPICS = "topics"
    GROUPS = "groups"
    OFFSETS = "offsets"
    DELAY = "delay"
    FILTERS = "filters"


_CONFIG_COLUMNS: Final[dict[ConfigName, tuple[tuple[str, ...], tuple[str, ...]]]] = {
    ConfigName.TOPICS: (
        ("topicName", "readQueueNums", "writeQueueNums", "permString", "storedQueues", "messages"),
        ("topicFilterType", "topicSysFlag", "order"),
    ),
    ConfigName.GROUPS: (
        ("groupName", "consumeEnable", "consumeBroadcastEnable", "retryQueueNums", "retryMaxTimes"),
        (
            "brokerId",
            "whichBrokerWhenConsumeSlowly",
            "consumeFromMinEnable",
            "notifyConsumerIdsChangedEnable",
        ),
    ),
    ConfigName.OFFSETS: (
        ("group", "topic", "queueId", "offset", "minOffset", "maxOffset", "lag"),
        (),
    ),
    ConfigName.DELAY: (("level", "delay", "queueId", "offset", "maxOffset", "pending"), ()),
    ConfigName.FILTERS: (
        ("topic", "group", "expressionType", "expression"),
        ("clientVersion", "bornTime", "deadTime", "dead"),
    ),
}


@app.command()
def config(
    ctx: typer.Context,
    name: Annotated[
        ConfigName,
        typer.Argument(metavar="[topics|groups|offsets|delay|filters]", show_default=False),
    ] = ConfigName.TOPICS,
    output: OutputOption = None,
) -> None:
    """Show a config/*.json file: topics (with stored queues and messages), subscription
    groups, consumer offsets (with each queue's range and the lag), delay offsets (with the
    messages still pending per level) or SQL92 filters."""
    from rmq.store.inspect import ConfigView, config_rows

    fmt = resolve_output(output)
    with opened(ctx) as reader:
        path, rows = config_rows(reader, ConfigView(name.value))
        if path is not None and path.name.endswith(".bak"):
            warn(
                f"{display_path(path, reader.layout.root)}: the main file is missing, empty or "
                "unreadable; showing its backup, which the broker would load"
            )
    columns, wide = _CONFIG_COLUMNS[name]
    render(
        [with_times(row) for row in rows] if for_people(fmt) else rows,
        columns=columns,
        wide_columns=wide,
        output=fmt,
    )


@app.command("config-diff")
def config_diff(
    ctx: typer.Context,
    names: Annotated[
        list[ConfigName] | None, typer.Argument(metavar="[NAME]...", show_default=False)
    ] = None,
    against: Annotated[
        Path | None,
        typer.Option(
            "--against",
            metavar="STORE_DIR",
            help="Compare with this store's config files instead of the .bak files.",
        ),
    ] = None,
    output: OutputOption = None,
) -> None:
    """Compare config files (all, or NAME: topics, groups, offsets, delay, filters) with
    their .bak (the previous version the broker kept) or with another store directory,
    leaf by leaf: what was added, removed or changed."""
    from rmq.store.inspect import CONFIG_VIEW_FILES, ConfigView
    from rmq.store.inspect import config_diff as store_config_diff
    from rmq.store.layout import StoreLayout

    if against is not None and not against.is_dir():
        raise RmqError(f"{against} is not a directory", "give another store directory", EXIT_USAGE)
    selected = [CONFIG_VIEW_FILES[ConfigView(n.value)] for n in (names or list(ConfigName))]
    with opened(ctx) as reader:
        diffs = store_config_diff(reader, selected, StoreLayout.of(against) if against else None)
        for diff in diffs:
            if diff.baseline is None:
                warn(f"{display_path(diff.file, reader.layout.root)}: no .bak to compare with")
    rows = [plain_data(change) for diff in diffs for change in diff.changes]
    render(rows, columns=("file", "path", "change", "old", "new"), output=output)
