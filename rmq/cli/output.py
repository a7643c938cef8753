"""The one renderer behind every `-o/--output table|wide|json|ndjson|yaml` in the command line.

Commands build plain data, a list of rows or one object (mappings with string keys), and hand
it to `render` together with the column keys a person wants to see.  The five formats:

    table   the `columns`, aligned, upper-case headers (rich); one object prints as
            label/value lines.  On a terminal rich wraps to its width and may colour the
            header; when stdout is not a terminal there is no colour, no wrapping and no
            trailing blanks, so `grep` and `awk` see one row per line.
    wide    the same with `wide_columns` added.
    json    the whole data, every key, pretty-printed with two-space indents.
    ndjson  one compact JSON object per line, flushed line by line (streams from iterators).
    yaml    the whole data as YAML (PyYAML safe_dump, unicode kept, keys not sorted).

Keys keep the order in which the command built each mapping: the documented schema order.
Values are normalised once for every format by `plain`: bytes become standard padded base64
strings, enums their values, tuples lists, and anything that is not a JSON type its `str`.
Only the data goes to stdout: titles are shown in tables only, never in json/ndjson/yaml.

When `-o` is not given the format comes from `$RMQ_OUTPUT`, else `table`, on a terminal or
not: what a command prints never changes with where stdout goes, and scripts ask for
`-o json` or `-o ndjson` explicitly.  rich, orjson and yaml are imported only when a format
needs them so that `--help` stays fast.
"""

from __future__ import annotations

import base64
import io
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from enum import Enum, StrEnum
from typing import Annotated, Any, TextIO

import typer

from rmq.cli.errors import EXIT_USAGE, RmqError
from rmq.cli.settings import OUTPUT_ENV, Resolved, resolve

Record = Mapping[str, Any]

_UNBOUNDED_WIDTH = 1 << 20
_WORD_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|_")


class OutputFormat(StrEnum):
    TABLE = "table"
    WIDE = "wide"
    JSON = "json"
    NDJSON = "ndjson"
    YAML = "yaml"


OutputOption = Annotated[
    OutputFormat | None,
    typer.Option(
        "--output",
        "-o",
        case_sensitive=False,
        show_default=False,
        help=f"Output format. Default: ${OUTPUT_ENV}, else table.",
    ),
]


def output_setting(flag: OutputFormat | None = None) -> Resolved:
    """The output format to use, validated, and where it came from."""
    setting = resolve(
        flag.value if flag is not None else None,
        flag="--output",
        envs=(OUTPUT_ENV,),
        key=None,
        default=OutputFormat.TABLE.value,
    )
    try:
        fmt = OutputFormat(setting.value.strip().lower())
    except ValueError:
        raise RmqError(
            f"invalid output format {setting.value!r} from {setting.source}",
            f"use one of {', '.join(OutputFormat)}",
            EXIT_USAGE,
        ) from None
    return Resolved(fmt.value, setting.source)


def resolve_output(flag: OutputFormat | None) -> OutputFormat:
    """The format a command renders with: the `-o` value, else $RMQ_OUTPUT, else table."""
    return OutputFormat(output_setting(flag).value)


def render(
    data: Record | Iterable[Record],
    *,
    columns: Sequence[str],
    wide_columns: Sequence[str] = (),
    output: OutputFormat | None = None,
    title: str | None = None,
    file: TextIO | None = None,
) -> None:
    """Print rows (an iterable of mappings) or one object (a mapping) in the chosen format."""
    fmt = resolve_output(output)
    out = file if file is not None else sys.stdout
    if fmt is OutputFormat.NDJSON:
        import orjson

        for row in [data] if isinstance(data, Mapping) else data:
            out.write(orjson.dumps(plain(row)).decode() + "\n")
            out.flush()
        return
    obj = plain(data) if isinstance(data, Mapping) else [plain(row) for row in data]
    if fmt is OutputFormat.JSON:
        import orjson

        out.write(orjson.dumps(obj, option=orjson.OPT_INDENT_2).decode() + "\n")
    elif fmt is OutputFormat.YAML:
        import yaml

        out.write(yaml.safe_dump(obj, allow_unicode=True, sort_keys=False))
    else:
        shown = [*columns, *wide_columns] if fmt is OutputFormat.WIDE else list(columns)
        _render_table(obj, shown, title, out)
    out.flush()


def render_rows(
    rows: Sequence[Record], *, empty_columns: Sequence[str], output: OutputFormat | None
) -> None:
    """`rows` of one shape, their columns the first row's keys (`empty_columns` when none)."""
    render(rows, columns=list(rows[0]) if rows else empty_columns, output=output)


def plain(value: Any) -> Any:
    """`value` as JSON-ready data: bytes as base64, enums as values, tuples as lists."""
    if isinstance(value, Enum):
        return plain(value.value)
    if value is None or isinstance(value, str | int | float):
        return value
    if isinstance(value, Mapping):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(value).decode("ascii")
    return str(value)


def column_header(key: str) -> str:
    """Table header for a key: `queueOffset` and `queue_offset` both become `QUEUE OFFSET`."""
    return _WORD_BOUNDARY.sub(" ", key).upper()


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(_cell(item) for item in value)
    if isinstance(value, dict):
        import orjson

        return orjson.dumps(value).decode()
    return str(value)


def _render_table(
    obj: dict[str, Any] | list[dict[str, Any]], columns: list[str], title: str | None, out: TextIO
) -> None:
    if not out.isatty():
        if isinstance(obj, dict):
            grid = [[column_header(key), _cell(obj.get(key))] for key in columns]
        else:
            grid = [[column_header(key) for key in columns]]
            grid += [[_cell(row.get(key)) for key in columns] for row in obj]
        lines = plain_table(grid, title, header=not isinstance(obj, dict))
        if lines is not None:
            out.writelines(line + "\n" for line in lines)
            return
    rich_table(obj, columns, title, out)


def rich_table(
    obj: dict[str, Any] | list[dict[str, Any]], columns: list[str], title: str | None, out: TextIO
) -> None:
    """The table drawn by rich: on a terminal, or whatever `plain_table` leaves to it."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    single = isinstance(obj, dict)
    table = Table(
        box=None,
        pad_edge=False,
        show_header=not single,
        header_style="bold",
        title=Text(title) if title else None,
        title_justify="left",
        title_style="bold",
    )
    if isinstance(obj, dict):
        table.add_column()
        table.add_column()
        for key in columns:
            table.add_row(Text(column_header(key), style="bold"), Text(_cell(obj.get(key))))
    else:
        for key in columns:
            table.add_column(column_header(key))
        for row in obj:
            table.add_row(*(Text(_cell(row.get(key))) for key in columns))
    if out.isatty():
        Console(file=out, highlight=False).print(table)
        return
    buffer = io.StringIO()
    Console(file=buffer, width=_UNBOUNDED_WIDTH, color_system=None, highlight=False).print(table)
    out.writelines(line.rstrip() + "\n" for line in buffer.getvalue().splitlines())


_PLAIN_CELL = re.compile(r"[ -~]*")
"""Printable ASCII: one character, one column, nothing rich would treat specially."""


def plain_table(
    grid: Sequence[Sequence[str]], title: str | None, *, header: bool
) -> list[str] | None:
    """The lines rich prints for a table of `grid` (its first row the header when `header`)
    when stdout is not a terminal: columns as wide as their widest cell, two spaces apart,
    the title on a line of its own, no trailing blanks.  None for what only rich lays out
    exactly (a character outside printable ASCII, a title wider than the table, a header
    rich would read as markup), so that rich is imported only then: it costs a command
    50 ms to start."""
    if not grid or not grid[0]:
        return None
    if not all(_PLAIN_CELL.fullmatch(cell) for row in grid for cell in row):
        return None
    if header and any("[" in cell for cell in grid[0]):
        return None
    widths = [max(len(row[i]) for row in grid) for i in range(len(grid[0]))]
    if title and (
        not _PLAIN_CELL.fullmatch(title) or len(title) > sum(widths) + 2 * (len(widths) - 1)
    ):
        return None
    lines = [title] if title else []
    for row in grid:
        lines.append("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
    return [line.rstrip() for line in lines]
