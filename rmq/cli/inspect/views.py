"""How `rmq inspect` shows store data: rows for `rmq.cli.output.render`, body previews, hex
dumps, times, paths, sizes, and the progress bar of long scans.

Rows are built once per format: json, ndjson and yaml get the data as the store returns it
(camelCase keys, times in ms, message records in the schema of `rmq consume`), while table
and wide also get what a person reads more easily: every `...Timestamp` field gets a
`...Time` twin in local time, record bodies get a one-line `bodyPreview`, tag histograms
become `TagA=3,TagB=1`, byte counts become `1.5 MiB`.  Nothing here imports rich until a
progress bar is drawn.

The progress bar is the command line's shared one (`rmq.cli.progress`): on stderr, only on a
terminal, only for scans of at least `PROGRESS_MIN_BYTES`, and gone when the scan ends, so
pipes and small stores never see it.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from rmq.cli.output import OutputFormat
from rmq.cli.progress import Progress

if TYPE_CHECKING:
    from rmq.common.message import MessageRecord

PROGRESS_MIN_BYTES: Final = 64 << 20
PREVIEW_CHARS: Final = 48
HEX_ROW: Final = 16
RECORD_COLUMNS: Final = (
    "commitLogOffset",
    "topic",
    "queueId",
    "queueOffset",
    "storeTime",
    "tags",
    "keys",
    "bodyPreview",
)
RECORD_WIDE_COLUMNS: Final = (
    "msgId",
    "offsetMsgId",
    "flag",
    "sysFlag",
    "bodyCrc",
    "bornHost",
    "storeHost",
    "bornTime",
    "reconsumeTimes",
)
_WORD: Final = re.compile(r"_([a-z])")
_CONTROLS: Final = {code: f"\\x{code:02x}" for code in (*range(0x20), 0x7F)} | {
    0x0A: "\\n",
    0x0D: "\\r",
    0x09: "\\t",
}


def for_people(fmt: OutputFormat) -> bool:
    return fmt in (OutputFormat.TABLE, OutputFormat.WIDE)


def camel(name: str) -> str:
    """`queue_offset` -> `queueOffset`."""
    return _WORD.sub(lambda match: match[1].upper(), name)


def plain_data(value: Any) -> Any:
    """Dataclasses as dicts with camelCase keys, recursively; enums as their values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            camel(item.name): plain_data(getattr(value, item.name))
            for item in dataclasses.fields(value)
        }
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, Mapping):
        return {str(key): plain_data(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain_data(item) for item in value]
    if isinstance(value, Path):
        return str(value)
    return value


def format_time(millis: int | None) -> str | None:
    """Local time with milliseconds, `2024-05-01 12:00:00.123`; None for None or 0."""
    if not millis:
        return None
    try:
        moment = datetime.datetime.fromtimestamp(millis / 1000)
    except (OverflowError, OSError, ValueError):
        return None
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{millis % 1000:03d}"


SIZE_FIELDS: Final = frozenset(
    {
        "size",
        "backupSize",
        "bytes",
        "storedBytes",
        "bytesScanned",
        "commitlogBytes",
        "consumeQueueBytes",
        "indexBytes",
    }
)
"""Byte counts that tables show in binary units (json, ndjson and yaml keep the bytes)."""
_SIZE_UNITS: Final = ("KiB", "MiB", "GiB", "TiB", "PiB")


def human_size(size: int) -> str:
    """``size`` bytes for a person: `512 B`, `1.5 KiB`, `1.0 GiB`."""
    if size < 1024:
        return f"{size} B"
    value = float(size)
    for unit in _SIZE_UNITS:
        value /= 1024
        if round(value, 1) < 1024 or unit == _SIZE_UNITS[-1]:
            break
    return f"{value:.1f} {unit}"


def human_sizes(row: Mapping[str, Any]) -> dict[str, Any]:
    """The row with each byte count of `SIZE_FIELDS` in binary units."""
    return {
        name: human_size(value) if name in SIZE_FIELDS and type(value) is int else value
        for name, value in row.items()
    }


def with_times(row: Mapping[str, Any]) -> dict[str, Any]:
    """`row` with a `...Time` field after every int `...Timestamp` field (for tables)."""
    result: dict[str, Any] = {}
    for key, value in row.items():
        result[key] = value
        if key.endswith("Timestamp") and isinstance(value, int) and not isinstance(value, bool):
            result[key.removesuffix("stamp")] = format_time(value)
    return result


def display_path(path: str | os.PathLike[str], root: Path) -> str:
    """`path` relative to the store root when it is inside it."""
    target = Path(path)
    try:
        return str(target.relative_to(root))
    except ValueError:
        return str(target)


def escape_text(text: str) -> str:
    """Control characters as escapes, so a value stays on one table line."""
    return text.translate(_CONTROLS)


def shorten(text: str, limit: int = PREVIEW_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def tag_histogram(tags: Mapping[str, int]) -> str:
    """`TagA=3,TagB=1`, most frequent first."""
    ordered = sorted(tags.items(), key=lambda item: (-item[1], item[0]))
    return ",".join(f"{tag}={count}" for tag, count in ordered)


def hex_dump(data: bytes, limit: int) -> str:
    """`offset  hex bytes  |ascii|` lines for the first `limit` bytes of `data`."""
    lines = []
    for start in range(0, min(len(data), limit), HEX_ROW):
        chunk = data[start : min(start + HEX_ROW, limit)]
        hex_part = " ".join(f"{byte:02x}" for byte in chunk)
        text = "".join(chr(byte) if 0x20 <= byte < 0x7F else "." for byte in chunk)
        lines.append(f"{start:08x}  {hex_part:<{HEX_ROW * 3 - 1}}  |{text}|")
    if len(data) > limit:
        lines.append(f"... {len(data) - limit} more bytes")
    return "\n".join(lines)


def body_text(body: bytes, charset: str, limit: int) -> str:
    """The first `limit` bytes of `body` decoded with `charset` (undecodable bytes become
    U+FFFD), control characters escaped."""
    text = escape_text(body[:limit].decode(charset, "replace"))
    return text if len(body) <= limit else f"{text}… ({len(body) - limit} more bytes)"


def record_preview(row: Mapping[str, Any]) -> str:
    """One line for a message record's body: its text, or the size of a binary body."""
    body = row.get("body")
    if body is None:
        return f"<{row['bodyError']}>" if row.get("bodyError") else ""
    if row.get("bodyEncoding") == "base64":
        return f"<binary, {len(body) * 3 // 4 - body[-2:].count('=')} bytes>"
    return shorten(escape_text(body))


def record_dict(record: MessageRecord, broker_name: str | None = None) -> dict[str, Any]:
    """The message record of `rmq consume` (`to_record_dict`); a body that cannot be
    decompressed is null, with `bodyError` saying why."""
    from rmq.common.compression import CompressionError
    from rmq.common.jsonrecord import to_record_dict

    try:
        return to_record_dict(record, broker_name)
    except CompressionError as exc:
        data = to_record_dict(record._replace(body=None), broker_name)
        data["bodyError"] = str(exc)
        return data


def record_rows(records: Iterable[MessageRecord], fmt: OutputFormat) -> Iterator[dict[str, Any]]:
    """Message records in the schema of `rmq consume`; for tables with times and a preview."""
    for record in records:
        row = record_dict(record)
        if for_people(fmt):
            row = with_times(row)
            row["bodyPreview"] = record_preview(row)
        yield row


def scan_progress(description: str, *, when: bool = True) -> Progress:
    """The shared progress bar (`rmq.cli.progress`) for a scan of the store: bytes, on a
    terminal stderr only, and only for scans of at least `PROGRESS_MIN_BYTES`."""
    return Progress(description, unit="bytes", min_total=PROGRESS_MIN_BYTES, when=when)
