"""The recovery walk that keeps every intact record: damaged spans are skipped, not cut at.

:func:`salvage_walk` walks the commitlog from an offset as :meth:`CommitLog.scan` does, with
two differences:

* a record whose framing is intact but whose body CRC is wrong (``check_crc``) is *skipped*:
  not handed to ``on_record``, recorded as a :class:`SkippedSpan` (reason ``body-crc``), and
  the walk goes on after it;
* where the framing itself is damaged (a bad magic, lengths that do not add up, a record whose
  PHYSICALOFFSET is not its own offset, zeros before later data), the walk searches forward,
  across files if needed, for the next record that *checks out* (:func:`checks_out`) and goes
  on from there, recording the bytes in between (reason ``framing``).  When nothing further
  checks out, the damage is the end of the log (a torn tail, cut as before).

A record checks out when its magic is the message magic, its TOTALSIZE fits the file and
equals what its length fields add up to, its PHYSICALOFFSET field is the record's own global
offset and its body CRC matches: 32 + 64 + 31 bits that random bytes match with odds below
2^-120, and that a copy of a record stored elsewhere (say inside a message body) fails on its
PHYSICALOFFSET.  In the last file it must also be stored no earlier than the last record
before the damage (see :func:`_resync`).  A TOTALSIZE of 0 where the last file's data
stops is the normal end of the log and is not searched past (the tail of a preallocated
file is zeros, and a batch cut short by a crash has its first TOTALSIZE still 0).

The skipped bytes stay where they are (the commitlog stays byte-compatible with Apache's,
whose recovery would cut at them).  The caller reports the spans (:mod:`rmq.store.recovery`).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass

from rmq.common.message import DispatchInfo, dispatch_info
from rmq.common.recordwalk import (
    BLANK_MAGIC,
    CRC_MASK,
    END_FILE_MIN_BLANK_LENGTH,
    MESSAGE_MAGIC,
    Frame,
    RecordError,
    body_crc,
    frame_at,
    iter_frames,
    peek_size_magic,
    store_timestamp_at,
)
from rmq.store.commitlog import CommitLog
from rmq.store.mappedfile import MappedFile

_MAGIC_BYTES = MESSAGE_MAGIC.to_bytes(4, "big")
_SIZE_FIELD = 4  # the magic follows TOTALSIZE


@dataclass(frozen=True, slots=True)
class SkippedSpan:
    """Bytes of one commitlog file that recovery did not dispatch.

    ``offset`` is global; ``position`` is inside ``file``.  A ``body-crc`` span is one whole
    record, whose topic, queue id and queue offset are known; a ``framing`` span is bytes
    that frame no record that checks out, and ``detail`` says what its start holds.
    """

    file: str
    offset: int
    position: int
    length: int
    reason: str
    topic: str = ""
    queue_id: int = -1
    queue_offset: int = -1
    detail: str = ""


def checks_out(mapped: MappedFile, pos: int, limit: int) -> int:
    """The end position of the record at ``pos`` when it checks out (see the module
    docstring), else -1."""
    view = mapped.view
    try:
        head, body_pos, topic_pos, _, _, end = frame_at(view, pos, limit)
    except RecordError:
        return -1
    if head[6] != mapped.file_from_offset + pos:
        return -1
    if body_crc(view, body_pos, topic_pos - 1) != head[2]:
        return -1
    return end


def _find_next(mapped: MappedFile, pos: int, min_time: int) -> int:
    """The position of the first record at or after ``pos`` in ``mapped`` that checks out
    and was stored at or after ``min_time`` (-1 when none is)."""
    limit = mapped.wrote_position
    search = pos + _SIZE_FIELD
    while True:
        found = mapped.find(_MAGIC_BYTES, search, limit)
        if found < 0:
            return -1
        candidate = found - _SIZE_FIELD
        if (
            candidate >= pos
            and checks_out(mapped, candidate, limit) >= 0
            and store_timestamp_at(mapped.view, candidate) >= min_time
        ):
            return candidate
        search = found + 1


def _is_zero_end(view: memoryview, pos: int, limit: int) -> bool:
    """Whether the last file's data ends at ``pos``: no room for a record, or a TOTALSIZE of
    0.  A batch is appended with its first TOTALSIZE written last, so a write cut short by a
    crash leaves 0 there before complete-looking records nobody was answered for: they end
    the log, they are not data past damage."""
    return pos + END_FILE_MIN_BLANK_LENGTH > limit or peek_size_magic(view, pos)[0] == 0


def _what_is_at(mapped: MappedFile, pos: int) -> str:
    """Why the bytes at ``pos`` frame no record (for the report)."""
    limit = mapped.wrote_position
    if pos + END_FILE_MIN_BLANK_LENGTH > limit:
        return "the file ends without a BLANK record"
    if peek_size_magic(mapped.view, pos) == (0, 0):
        return "zeros"
    try:
        head = frame_at(mapped.view, pos, limit)[0]
    except RecordError as exc:
        return str(exc)
    if head[6] != mapped.file_from_offset + pos:
        return f"record at offset {pos} claims commitlog offset {head[6]}"
    return f"unexpected record at offset {pos}"


def _spans_between(
    files: list[MappedFile], start: tuple[int, int], stop: tuple[int, int]
) -> list[SkippedSpan]:
    """``framing`` spans from (file index, position) ``start`` to ``stop``, one per file."""
    spans: list[SkippedSpan] = []
    index, pos = start
    detail = _what_is_at(files[index], pos)
    while (index, pos) < stop:
        mapped = files[index]
        end = stop[1] if index == stop[0] else mapped.file_size
        if end > pos:
            spans.append(
                SkippedSpan(
                    mapped.file_name,
                    mapped.file_from_offset + pos,
                    pos,
                    end - pos,
                    "framing",
                    detail=detail,
                )
            )
            detail = f"continued from {files[start[0]].file_name}"
        index, pos = index + 1, 0
    return spans


def salvage_walk(
    commitlog: CommitLog,
    start_offset: int,
    *,
    check_crc: bool,
    on_record: Callable[[DispatchInfo], None] | None = None,
    select: Callable[[memoryview, Frame], bool] | None = None,
) -> tuple[int, list[SkippedSpan]]:
    """Walk the records from ``start_offset``; returns where the log ends and the spans
    skipped on the way (see the module docstring).  ``on_record`` gets every record kept
    (only those ``select(view, frame)`` takes, when given: the others are not decoded)."""
    files = list(commitlog.queue.files)
    mapped = commitlog.queue.find_mapped_file_by_offset(start_offset)
    if mapped is None:
        return start_offset, []
    index = files.index(mapped)
    pos = start_offset - mapped.file_from_offset
    skipped: list[SkippedSpan] = []
    kept: tuple[MappedFile, int] | None = None  # the file and position of the last record
    while True:
        mapped = files[index]
        limit = mapped.wrote_position
        view = mapped.view[:limit]
        base = mapped.file_from_offset
        damaged = False
        last_at = -1
        for frame in iter_frames(view, pos, limit):
            at, end, prefix, _, body_pos, body_end, topic_end = frame
            if prefix[6] != base + at:
                damaged = True
                break
            if check_crc and zlib.crc32(view[body_pos:body_end]) & CRC_MASK != prefix[2]:
                topic = bytes(view[body_end + 1 : topic_end]).decode("utf-8", "replace")
                skipped.append(
                    SkippedSpan(
                        mapped.file_name, base + at, at, end - at, "body-crc",
                        topic, prefix[3], prefix[5],
                    )
                )  # fmt: skip
            elif on_record is not None and (select is None or select(view, frame)):
                on_record(dispatch_info(view, frame))
            pos = end
            last_at = at
        if last_at >= 0:
            kept = mapped, last_at
        if not damaged and pos + END_FILE_MIN_BLANK_LENGTH <= limit:
            size, magic = peek_size_magic(view, pos)
            if magic == BLANK_MAGIC and size == mapped.file_size - pos:
                if index + 1 == len(files):
                    return mapped.file_tail_offset, skipped
                index, pos = index + 1, 0
                continue
        last = index + 1 == len(files)
        if last and not damaged and _is_zero_end(view, pos, limit):
            if skipped and skipped[-1].offset + skipped[-1].length == base + pos:
                # a bad last record before the end is a torn write: cut it, as before
                return skipped.pop().offset, skipped
            return base + pos, skipped
        min_time = 0 if kept is None else store_timestamp_at(kept[0].view, kept[1])
        found = _resync(files, index, pos + 1, min_time)
        if found is None:
            return base + pos, skipped
        skipped.extend(_spans_between(files, (index, pos), found))
        index, pos = found


def _resync(
    files: list[MappedFile], index: int, pos: int, min_time: int = 0
) -> tuple[int, int] | None:
    """(file index, position) of the next record that checks out from ``pos`` of
    ``files[index]`` on, or None.  In the last file it must also have been stored at or
    after ``min_time``: past the live end of the last file, Apache leaves the records its
    recovery cut (it does not zero them), older than the records written over them since."""
    while index < len(files):
        last = index + 1 == len(files)
        found = _find_next(files[index], pos, min_time if last else 0)
        if found >= 0:
            return index, found
        index, pos = index + 1, 0
    return None


def count_records_from(commitlog: CommitLog, offset: int) -> int:
    """How many records that check out lie from ``offset`` on, before recovery cuts there:
    the intact records a cut at ``offset`` drops."""
    files = list(commitlog.queue.files)
    mapped = commitlog.queue.find_mapped_file_by_offset(offset)
    if mapped is None:
        return 0
    count = 0
    found = _resync(files, files.index(mapped), offset - mapped.file_from_offset)
    while found is not None:
        index, pos = found
        count += 1
        found = _resync(files, index, checks_out(files[index], pos, files[index].wrote_position))
    return count


def record_intact(record: memoryview) -> bool:
    """Whether a record read back whole (an index lookup's) frames and its body CRC
    matches: the index may still point at a record recovery skipped."""
    try:
        head, body_pos, topic_pos, _, _, _ = frame_at(record, 0, len(record))
    except RecordError:
        return False
    return bool(body_crc(record, body_pos, topic_pos - 1) == head[2])
