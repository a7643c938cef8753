"""`rmq inspect STORE dump` and `queue`: records read from a commitlog offset or file, and
a queue read through its consume queue, with every damaged entry located."""

from __future__ import annotations

import codecs
import itertools
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import click
import typer

from rmq.cli.errors import RmqError
from rmq.cli.inspect import completions
from rmq.cli.inspect.group import (
    DEFAULT_LIST_COUNT,
    DEFAULT_PREVIEW_BYTES,
    Damage,
    ListCountOption,
    app,
    opened,
)
from rmq.cli.inspect.views import (
    RECORD_WIDE_COLUMNS,
    body_text,
    display_path,
    for_people,
    format_time,
    hex_dump,
    record_rows,
)
from rmq.cli.output import OutputOption, render, resolve_output

if TYPE_CHECKING:
    from rmq.common.message import MessageRecord
    from rmq.store.offline.reader import StoreReader


@app.command()
def dump(
    ctx: typer.Context,
    offset: Annotated[
        int | None,
        typer.Argument(
            metavar="[OFFSET]", show_default=False, autocompletion=completions.commitlog_files
        ),
    ] = None,
    file: Annotated[
        str | None,
        typer.Option(
            "--file",
            "-f",
            metavar="NAME",
            help="Every record of this commitlog file.",
            autocompletion=completions.commitlog_files,
        ),
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
        str,
        typer.Option(
            "--charset",
            metavar="CHARSET",
            help="Decode bodies with CHARSET.",
            autocompletion=completions.charsets,
        ),
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
    from rmq.store.errors import StoreError

    fmt = resolve_output(output)
    with opened(ctx) as reader:
        damage = Damage(reader.layout.root)
        if file is None:
            assert offset is not None
            walk = reader.records_from(offset, report=damage)
            limit: int | None = count or 1
        else:
            start, stop = _file_range(reader, file)
            walk = reader.iter_records(start, stop=stop, report=damage)
            limit = count
        try:
            records = [record for _, record in itertools.islice(walk, limit)]
        except StoreError:
            if offset is not None and (inside := _inside_record(reader, offset)) is not None:
                raise inside from None
            raise
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


def _inside_record(reader: StoreReader, offset: int) -> RmqError | None:
    """The error for an `offset` that falls inside an intact record (not a record boundary),
    naming the boundaries around it; None when no intact record covers it (damage)."""
    from rmq.store.offline.problems import ignore_problem

    commitlog = reader.commitlog
    mapped, pos = commitlog.locate(offset)
    before = after = None
    last = mapped is commitlog.files[-1]
    for frame in commitlog.walk_file(mapped, 0, last, ignore_problem, False, None):
        if frame.physical_offset >= offset:
            after = frame.physical_offset
            break
        before = frame
    if before is None or before.physical_offset + before.total_size <= offset or after == offset:
        return None
    start, end = before.physical_offset, before.physical_offset + before.total_size
    nearest = f"{start} and {after}" if after is not None else f"{start} (the last in its file)"
    return RmqError(
        f"commitlog offset {offset} ({display_path(mapped.path, reader.layout.root)}@{pos}) "
        f"is not a record boundary: it is inside the record at "
        f"{start} ({before.total_size} bytes, up to {end}); the nearest records start at "
        f"{nearest}",
        f"'dump {start}' shows that record",
    )


def _file_range(reader: StoreReader, file: str) -> tuple[int, int]:
    """Where the commitlog file named ``file`` starts and ends; an error when there is none."""
    name = Path(file).name
    for store_file in reader.commitlog_files():
        if store_file.path.name == name:
            return store_file.start, store_file.start + store_file.size
    raise RmqError(
        f"no commitlog file {name} in {reader.layout.commitlog}", "run 'files' to list them"
    )


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
    topic: Annotated[
        str,
        typer.Argument(metavar="TOPIC", show_default=False, autocompletion=completions.topics),
    ],
    queue_id: Annotated[
        int,
        typer.Argument(
            metavar="QUEUE_ID", show_default=False, autocompletion=completions.queue_ids
        ),
    ],
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
    from rmq.store.offline.summary import queue_entry_location, queue_gaps

    fmt = resolve_output(output)
    with opened(ctx) as reader:
        _check_queue(reader, topic, queue_id)
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


LISTED_TOPICS = 10
"""How many topics an error about an unknown topic names."""


def _check_queue(reader: StoreReader, topic: str, queue_id: int) -> None:
    """An error naming the topic's queues (or the store's topics) when the queue has no
    consume queue in the store."""
    queues = reader.consume_queues()
    ids = sorted(number for name, number in queues if name == topic)
    if queue_id in ids:
        return
    if ids:
        raise RmqError(
            f"topic {topic} has no queue {queue_id} in this store; its queues are "
            + ", ".join(map(str, ids)),
            f"e.g. 'queue {topic} {ids[0]}'",
        )
    topics = sorted({name for name, _ in queues})
    listed = ", ".join(topics[:LISTED_TOPICS]) + (", ..." if len(topics) > LISTED_TOPICS else "")
    raise RmqError(
        f"no topic {topic} in this store (no consume queue)",
        f"its topics are {listed}" if topics else "the store has no consume queues",
    )
