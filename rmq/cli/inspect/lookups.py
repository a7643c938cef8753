"""`rmq inspect STORE by-id`, `by-key`, `by-unique-key`, `search` and `export`: messages
found by id, by key through the index (or one scan), by a filter over a time window, and
exported as NDJSON in the schema of `rmq consume`."""

from __future__ import annotations

import sys
import typing
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import click
import typer

from rmq.cli.errors import EXIT_USAGE, RmqError, option_value
from rmq.cli.inspect.group import (
    DEFAULT_LIST_COUNT,
    DEFAULT_MAX_KEYS,
    BeginOption,
    BrokerNameOption,
    Damage,
    EndOption,
    KeyOption,
    ListCountOption,
    QueueOption,
    TagOption,
    TopicOption,
    app,
    opened,
    record_filter,
    render_records,
    target_of,
)
from rmq.cli.inspect.views import record_dict, scan_progress
from rmq.cli.output import OutputOption
from rmq.common.timeutil import parse_time

if TYPE_CHECKING:
    from rmq.common.message import MessageRecord
    from rmq.store.offline.reader import StoreReader


@app.command("by-id")
def by_id(
    ctx: typer.Context,
    msg_id: Annotated[str, typer.Argument(metavar="MSG_ID", show_default=False)],
    output: OutputOption = None,
) -> None:
    """Look a message up by id: an offset message id (store host + commitlog offset) of a
    record of this store, else a unique key (UNIQ_KEY) through the index of every topic."""
    from rmq.common.msglookup import offset_id_of, unique_key_matches
    from rmq.store.errors import StoreError

    with opened(ctx) as reader:
        try:
            record = reader.message_by_offset_id(msg_id)
            why = f"the record at its offset was stored by {record.store_host}"
        except StoreError as exc:
            record, why = None, str(exc)
        if record is not None and offset_id_of(msg_id, {record.store_host}) is not None:
            records = [record]
        else:
            found = _by_key(
                reader, msg_id, None, DEFAULT_MAX_KEYS, None, None, unique=True, scan=False
            )
            records = unique_key_matches(found, msg_id)
            if not records:
                raise RmqError(
                    f"no message with id {msg_id}: not an offset id of a stored message ({why}) "
                    "and no message has this unique key",
                    "check the id, or search with 'by-key' or 'search'",
                )
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
    from rmq.store.offline.search import RecordFilter, find_records

    if scan:
        with scan_progress("scanning") as bar:
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
        with scan_progress("scanning the tail the index does not cover") as bar:
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
    from rmq.store.offline.search import find_records

    wanted = record_filter(topic, queue, begin, end, tag, key)
    with opened(ctx) as reader, scan_progress("searching") as bar:
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
            "--out",
            metavar="FILE",
            help="Write to FILE instead of stdout (not inside the store; an existing file "
            "only with --force).",
        ),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace FILE if it exists.")] = False,
    broker_name: BrokerNameOption = None,
) -> int:
    """Export the matching records as NDJSON, one message record per line: the schema of
    'rmq consume', so 'rmq produce' can send them again.  On a terminal (no --out, stdout
    not redirected) the lines go through the pager ($PAGER, else less)."""
    import orjson

    from rmq.store.offline.search import find_records

    wanted = record_filter(topic, queue, begin, end, tag, key)
    target = target_of(ctx)
    if out is not None and out.resolve().is_relative_to(target.root.resolve()):
        raise RmqError(
            f"{out} is inside the store directory", "write the export somewhere else", EXIT_USAGE
        )
    if out is not None and out.is_file() and not force:
        raise RmqError(f"{out} already exists", "pass --force to replace it")
    paged = out is None and sys.stdout.isatty()
    with opened(ctx) as reader, scan_progress("exporting", when=not paged) as bar:
        damage = Damage(reader.layout.root)
        lines = (
            orjson.dumps(record_dict(record, broker_name)) + b"\n"
            for record in find_records(reader, wanted, limit=count, report=damage, progress=bar)
        )
        if paged:  # the pager adds the last newline
            click.echo_via_pager(
                ("" if number == 0 else "\n") + line[:-1].decode()
                for number, line in enumerate(lines)
            )
            return damage.exit_code
        if out is None:
            sys.stdout.buffer.writelines(lines)
            sys.stdout.buffer.flush()
        else:
            with out.open("wb", buffering=0) as sink:
                _write_in_chunks(sink, lines)
    return damage.exit_code


_CHUNK = 256 * 1024


def _write_in_chunks(sink: typing.BinaryIO, lines: Iterable[bytes]) -> None:
    """Write `lines` in chunks of about `_CHUNK` bytes through an unbuffered file: nothing
    is held back, so a Ctrl-C while a reader (a FIFO, a pipe) has stopped reading leaves at
    once instead of blocking again in a buffered file's flush at close."""
    pending: list[bytes] = []
    size = 0
    for line in lines:
        pending.append(line)
        size += len(line)
        if size >= _CHUNK:
            _write_all(sink, b"".join(pending))
            pending, size = [], 0
    if pending:
        _write_all(sink, b"".join(pending))


def _write_all(sink: typing.BinaryIO, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = sink.write(view)
        view = view[written or 0 :]
