"""The `rmq inspect` group and what its commands share: `rmq inspect STORE_DIR [COMMAND]`.

Without a command the group opens the interactive shell (`rmq.cli.inspect.repl`), which
dispatches each line back into this group; with one it runs it once.  Every command opens a
fresh `StoreReader` on the directory with `opened` (read-only: nothing is ever written,
locked or repaired), asks `rmq.store.offline` and renders with `rmq.cli.output.render`
(`-o table|wide|json|ndjson|yaml`; records in the message-record schema of `rmq consume`).
The commands live in modules by subject and register on `app` (`rmq.cli.inspect.commands`
imports them all).

Failures of the store (a file that cannot be read, no record at an offset) are `RmqError`s,
exit 1; damage met while scanning is reported as `rmq: warning: FILE@OFFSET: ...` lines on
stderr by `Damage` and turns the exit code to 1 as well.  Long scans draw a progress bar on
stderr when it is a terminal.

The group callback only checks the directory and stores it in `ctx.meta`; the store and
everything heavy are imported inside the commands, so `rmq inspect --help` stays fast.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final

import click
import typer

from rmq.cli.errors import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, PROG_NAME, RmqError, option_value
from rmq.cli.inspect import completions
from rmq.cli.inspect.completions import TARGET_KEY
from rmq.cli.inspect.repl import InspectGroup
from rmq.cli.inspect.views import (
    RECORD_COLUMNS,
    RECORD_WIDE_COLUMNS,
    display_path,
    for_people,
    human_sizes,
    record_rows,
    with_times,
)
from rmq.cli.main import command_app
from rmq.cli.output import OutputFormat, render, resolve_output
from rmq.common.timeutil import parse_time

if TYPE_CHECKING:
    from rmq.common.message import MessageRecord
    from rmq.store.offline.problems import ProblemKind
    from rmq.store.offline.reader import StoreReader
    from rmq.store.offline.search import RecordFilter

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
    cls=InspectGroup,
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
    from rmq.store.layout import StoreLayout

    refusal = StoreLayout.of(store_dir, commitlog_dir or "").not_a_store()
    if refusal is not None:
        raise RmqError(refusal, "give the broker's store directory (storePathRootDir)", EXIT_USAGE)
    target = StoreTarget(store_dir, commitlog_dir)
    ctx.meta[TARGET_KEY] = target
    if ctx.invoked_subcommand is None:
        from rmq.cli.inspect.repl import run_shell

        raise typer.Exit(run_shell(ctx))


# -- shared options ------------------------------------------------------------------------

TopicOption = Annotated[
    str | None,
    typer.Option(
        "--topic",
        "-t",
        metavar="TOPIC",
        help="Only this topic.",
        autocompletion=completions.topics,
    ),
]
QueueOption = Annotated[
    int | None,
    typer.Option(
        "--queue",
        "-q",
        metavar="QUEUE_ID",
        help="Only this queue id.",
        autocompletion=completions.queue_ids,
    ),
]
BeginOption = Annotated[
    str | None,
    typer.Option(
        "--begin",
        metavar="TIME",
        help="Stored at or after TIME: epoch milliseconds, ISO 8601 (local time when no "
        "zone is given) or -DURATION before now (-1h, -30m, -2d).",
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


BrokerNameOption = Annotated[
    str | None,
    typer.Option(
        "--broker-name",
        metavar="NAME",
        help="The brokerName of records read from a store (a store does not record it; "
        "default null).",
        show_default=False,
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
    from rmq.store.offline.search import RecordFilter

    return RecordFilter(
        topic=topic,
        queue_id=queue,
        begin=option_value(parse_time, begin, "--begin"),
        end=option_value(parse_time, end, "--end"),
        tags=frozenset(tags or ()),
        key=key,
    )


def render_table(
    rows: list[dict[str, Any]],
    columns: tuple[tuple[str, ...], tuple[str, ...]],
    fmt: OutputFormat,
) -> None:
    """Rows with their columns and wide-only columns; for people every `...Timestamp` gets
    its `...Time` twin and byte counts are in binary units."""
    table, wide = columns
    render(
        [human_sizes(with_times(row)) for row in rows] if for_people(fmt) else rows,
        columns=table,
        wide_columns=wide,
        output=fmt,
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
    from rmq.store.offline.reader import StoreReader

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
    `rmq.store.offline.problems.Report` for scans."""

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
