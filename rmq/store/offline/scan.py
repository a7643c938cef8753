"""Walking the commitlog offline: the mapped commitlog files and the one loop every scan
goes through.

:class:`MappedCommitlog` maps the commitlog files read-only and walks them in order.  A walk
frames each record with the common walker (:func:`rmq.common.recordwalk.iter_frames`),
checks optionally its body CRC (``zlib.crc32`` on a memoryview slice) and yields a
:class:`RecordFrame`: header fields, topic and the raw property string, without decoding
hosts, body or properties.  Where the framing stops, the header there says what follows: a
BLANK record sends the walk to the next file; the walk of a file ends at a zero header or
an unknown magic in the last file; a damaged record is reported in the common decoder's
words and skipped when its TOTALSIZE leads to another record.  :meth:`MappedCommitlog.records`
is the same walk decoding each record once instead of framing it.
:func:`property_value` reads one property from the raw string without building the map.
Long walks report their progress through a callback.
"""

from __future__ import annotations

import bisect
import struct
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final, NamedTuple

from rmq.common.message import DispatchInfo, MessageRecord, decode_record, read_dispatch_info
from rmq.common.msgconst import (
    KEY_SEPARATOR,
    PROPERTY_KEYS,
    PROPERTY_TAGS,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
)
from rmq.common.properties import decode_properties_bytes
from rmq.common.recordwalk import (
    BLANK_MAGIC,
    CRC_MASK,
    MESSAGE_MAGIC,
    RecordError,
    iter_frames,
    peek_size_magic,
)
from rmq.store.errors import StoreError
from rmq.store.layout import list_offset_files
from rmq.store.offline.files import ReadOnlyFile, check_data_end
from rmq.store.offline.problems import ProblemKind, Report

PROGRESS_STEP: Final = 8 << 20
"""Scans report progress at least every this many bytes (and at every file boundary)."""
_HEADER_SIZE: Final = 8
_LONG: Final = struct.Struct(">q")


class RecordFrame(NamedTuple):
    """A record as a scan sees it (see :meth:`StoreReader.scan`): header fields, topic and
    the raw UTF-8 property string, without hosts, body or decoded properties.

    ``physical_offset`` is where the record sits (a record whose PHYSICALOFFSET field says
    otherwise is reported by the scan); ``body_crc_ok`` is True when the CRC was not checked.
    """

    physical_offset: int
    total_size: int
    queue_id: int
    queue_offset: int
    sys_flag: int
    store_timestamp: int
    topic: str
    raw_properties: bytes
    body_crc_ok: bool

    @property
    def tags(self) -> str | None:
        return property_value(self.raw_properties, PROPERTY_TAGS)

    @property
    def keys(self) -> list[str]:
        """KEYS split on spaces, empty tokens dropped (as :attr:`MessageRecord.keys`)."""
        keys = property_value(self.raw_properties, PROPERTY_KEYS)
        return [key for key in keys.split(KEY_SEPARATOR) if key] if keys else []

    @property
    def uniq_key(self) -> str | None:
        return property_value(self.raw_properties, PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)


Progress = Callable[[int, int], None]
"""``progress(bytes done, bytes in total)`` of a scan."""
_new_frame: Final = tuple.__new__


def property_value(raw: bytes, name: str) -> str | None:
    """The value of property ``name`` in a raw property string, by Java's rules (the last
    segment ``name 0x01 value`` with a non-empty value wins), without decoding the others.

    The last segment of that name is found with one ``rfind``; only when its value is empty
    (an earlier one may then count) is the whole string decoded.
    """
    needles = _NEEDLES.get(name)
    if needles is None:
        head = name.encode() + b"\x01"
        needles = _NEEDLES[name] = (b"\x02" + head, head)
    needle, head = needles
    found = raw.rfind(needle)
    if found >= 0:
        start = found + len(needle)
    elif raw.startswith(head):
        start = len(head)
    else:
        return None
    end = raw.find(b"\x02", start)
    if end < 0:
        end = len(raw)
    if end > start:
        return raw[start:end].decode("utf-8", "replace")
    return decode_properties_bytes(raw).get(name)


_NEEDLES: dict[str, tuple[bytes, bytes]] = {}


def _resume_position(mapped: ReadOnlyFile, pos: int, size: int) -> int | None:
    """Where the walk can go on after a damaged record at ``pos``: its TOTALSIZE, if that
    leads to the header of another record or a BLANK, else None."""
    resume = pos + size
    if size <= _HEADER_SIZE or resume + _HEADER_SIZE > mapped.size:
        return None
    _, magic = peek_size_magic(mapped.buf, resume)
    return resume if magic in (MESSAGE_MAGIC, BLANK_MAGIC) else None


def _record_error(buf: Any, pos: int) -> str:
    """Why the record at ``pos`` is not valid, in the common decoder's words."""
    try:
        read_dispatch_info(buf, pos, check_crc=True)
    except RecordError as exc:
        return str(exc)
    return f"record at offset {pos} is malformed"


class MappedCommitlog:
    """The commitlog files of a directory, mapped read-only, and the walks over them.

    A file that cannot be opened is left out and listed in :attr:`errors`.
    """

    def __init__(self, directory: Path) -> None:
        self.files: list[ReadOnlyFile] = []
        self.errors: list[tuple[Path, str]] = []
        for start, path in list_offset_files(directory):
            try:
                self.files.append(ReadOnlyFile(path, start))
            except OSError as exc:
                self.errors.append((path, exc.strerror or str(exc)))
        self._starts = [f.start for f in self.files]
        self._topic_names: dict[bytes, str] = {}

    def close(self) -> None:
        for mapped in self.files:
            mapped.close()
        self.files = []
        self._starts = []

    @property
    def min_offset(self) -> int:
        """First commitlog offset still stored (0 for an empty store)."""
        return self.files[0].start if self.files else 0

    def locate(self, physical_offset: int) -> tuple[ReadOnlyFile, int]:
        """The file holding ``physical_offset`` and the position in it; StoreError when no
        file does."""
        index = bisect.bisect_right(self._starts, physical_offset) - 1
        if index < 0 or physical_offset >= self.files[index].end:
            raise StoreError(
                f"commitlog offset {physical_offset} is outside the stored range "
                f"{self.min_offset}..{self.files[-1].end if self.files else 0}"
            )
        mapped = self.files[index]
        return mapped, physical_offset - mapped.start

    def dispatch_info_at(self, physical_offset: int) -> DispatchInfo:
        """The dispatch fields of the record starting at ``physical_offset`` (a direct check
        of a consume queue or index entry); StoreError saying why not."""
        mapped, pos = self.locate(physical_offset)
        try:
            info = read_dispatch_info(mapped.buf, pos)
        except RecordError as exc:
            raise StoreError(f"{mapped.path.name}: {exc}") from None
        if info.physical_offset != physical_offset:
            raise StoreError(
                f"the record at {mapped.path.name} offset {pos} says it is at "
                f"{info.physical_offset}"
            )
        return info

    def walk(
        self,
        start: int,
        report: Report,
        check_crc: bool,
        progress: Progress | None,
    ) -> Iterator[RecordFrame]:
        """Frames of the records from ``start`` on, file after file (see the module
        docstring)."""
        files = self.files
        if not files:
            return
        first = max(bisect.bisect_right(self._starts, start) - 1, 0)
        origin = max(start, files[first].start)
        total = files[-1].end - origin
        tick = None
        if progress is not None:
            reporter = progress

            def tick(physical_offset: int) -> None:
                reporter(physical_offset - origin, total)

        for index in range(first, len(files)):
            mapped = files[index]
            pos = max(start - mapped.start, 0)
            if tick is not None:
                tick(mapped.start + pos)
            last = index == len(files) - 1
            yield from self.walk_file(mapped, pos, last, report, check_crc, tick)
        if progress is not None:
            progress(total, total)

    def walk_file(
        self,
        mapped: ReadOnlyFile,
        pos: int,
        last: bool,
        report: Report,
        check_crc: bool,
        tick: Callable[[int], None] | None,
    ) -> Iterator[RecordFrame]:
        """The records of one file from ``pos``: the hot loop of every scan.

        Records are framed by :func:`rmq.common.recordwalk.iter_frames`; where it stops,
        :meth:`_framing_stopped` says what follows.
        """
        buf = mapped.buf
        limit = mapped.size
        base = mapped.start
        path = mapped.path
        topics = self._topic_names
        view = memoryview(buf) if check_crc else None
        unpack_long = _LONG.unpack_from
        next_tick = pos + PROGRESS_STEP
        try:
            while pos + _HEADER_SIZE <= limit:
                for at, end, prefix, layout, body_pos, body_end, topic_end in iter_frames(
                    buf, pos, limit
                ):
                    if at >= next_tick and tick is not None:
                        tick(base + at)
                        next_tick = at + PROGRESS_STEP
                    crc_ok = True
                    if (
                        view is not None
                        and zlib.crc32(view[body_pos:body_end]) & CRC_MASK != prefix[2]
                    ):
                        crc_ok = False
                        report(ProblemKind.CRC_MISMATCH, path, at, _record_error(buf, at))
                    if prefix[6] != base + at:
                        report_wrong_offset(report, path, base + at, prefix[6], at)
                    topic_bytes = buf[body_end + 1 : topic_end]
                    topic = topics.get(topic_bytes)
                    if topic is None:
                        topic = topics[topic_bytes] = str(topic_bytes, "utf-8", "replace")
                    yield _new_frame(
                        RecordFrame,
                        (
                            base + at,
                            end - at,
                            prefix[3],
                            prefix[5],
                            prefix[7],
                            unpack_long(buf, at + layout.store_timestamp_pos)[0],
                            topic,
                            buf[topic_end + 2 : end],
                            crc_ok,
                        ),
                    )
                    pos = end
                if pos + _HEADER_SIZE > limit:
                    break
                resume = self._framing_stopped(mapped, pos, last, report)
                if resume is None:
                    return
                pos = resume
            self._file_ends(mapped, pos, last, report)
        finally:
            if view is not None:
                view.release()

    def records(
        self, start: int, report: Report, stop: int | None = None
    ) -> Iterator[tuple[int, MessageRecord]]:
        """``(physical offset, record)`` of the records from ``start`` on, up to the file
        that starts at or after ``stop``: the walk of :meth:`walk`, each record decoded
        once by the common codec instead of framed."""
        files = self.files
        first = max(bisect.bisect_right(self._starts, start) - 1, 0)
        for index in range(first, len(files)):
            mapped = files[index]
            if stop is not None and mapped.start >= stop:
                return
            pos = max(start - mapped.start, 0)
            yield from self._decode_file(mapped, pos, index == len(files) - 1, report)

    def _decode_file(
        self, mapped: ReadOnlyFile, pos: int, last: bool, report: Report
    ) -> Iterator[tuple[int, MessageRecord]]:
        buf = mapped.buf
        base = mapped.start
        while pos + _HEADER_SIZE <= mapped.size:
            try:
                record = decode_record(buf, pos)
            except RecordError:
                resume = self._framing_stopped(mapped, pos, last, report)
                if resume is None:
                    return
                pos = resume
                continue
            if record.physical_offset != base + pos:
                report_wrong_offset(report, mapped.path, base + pos, record.physical_offset, pos)
            yield base + pos, record
            pos += record.total_size
        self._file_ends(mapped, pos, last, report)

    def _framing_stopped(
        self, mapped: ReadOnlyFile, pos: int, last: bool, report: Report
    ) -> int | None:
        """No valid record starts at ``pos``: report what is there (a damaged record, a
        BLANK of the wrong size, zeros, an unknown magic) and return where the walk goes on
        in this file, or None when the file is done."""
        path = mapped.path
        limit = mapped.size
        size, magic = peek_size_magic(mapped.buf, pos)
        if magic == MESSAGE_MAGIC:
            return self._bad_record(mapped, pos, size, report)
        if magic == BLANK_MAGIC:
            if size != limit - pos:
                report(
                    ProblemKind.SIZE_MISMATCH,
                    path,
                    pos,
                    f"BLANK record claims {size} bytes but {limit - pos} remain in the file",
                )
            return None
        if size == 0 and magic == 0:
            self._check_tail(mapped, pos, last, report)
            return None
        resume = _resume_position(mapped, pos, size)
        if resume is None and last:
            self._check_tail(mapped, pos, last, report)
            return None
        report(
            ProblemKind.BAD_MAGIC,
            path,
            pos,
            f"unknown magic 0x{magic:08X}"
            + ("" if resume else f"; the rest of the file ({limit - pos} bytes) is not checked"),
        )
        return resume

    def _file_ends(self, mapped: ReadOnlyFile, pos: int, last: bool, report: Report) -> None:
        """The walk of a file reached ``pos`` with no room for another header."""
        if pos < mapped.size:
            self._check_tail(mapped, pos, last, report)
        elif not last:
            report(ProblemKind.MISSING_BLANK, mapped.path, pos, "file ends without a BLANK record")

    @staticmethod
    def _check_tail(mapped: ReadOnlyFile, pos: int, last: bool, report: Report) -> None:
        """The records of ``mapped`` end at ``pos``: only the last file may end without a
        BLANK record, and everything after must be zero."""
        check_data_end(
            mapped,
            pos,
            last,
            ProblemKind.MISSING_BLANK,
            f"data ends {mapped.size - pos} bytes before the end of the file without a "
            "BLANK record",
            report,
        )

    @staticmethod
    def _bad_record(mapped: ReadOnlyFile, pos: int, size: int, report: Report) -> int | None:
        """After a record failed its checks: the position to resume at (its TOTALSIZE leads
        to another record), or None (the rest of the file cannot be walked)."""
        if size <= _HEADER_SIZE or pos + size > mapped.size:
            report(
                ProblemKind.TRUNCATED_RECORD,
                mapped.path,
                pos,
                f"record claims {size} bytes, {mapped.size - pos} remain in the file; the "
                "rest of the file is not checked",
            )
            return None
        report(ProblemKind.SIZE_MISMATCH, mapped.path, pos, _record_error(mapped.buf, pos))
        return _resume_position(mapped, pos, size)


def report_wrong_offset(
    report: Report, path: Path, physical_offset: int, says: int, pos: int
) -> None:
    """Report a record at ``pos`` of ``path`` whose PHYSICALOFFSET field says ``says``."""
    report(
        ProblemKind.PHYSICAL_OFFSET_MISMATCH,
        path,
        pos,
        f"record stored at commitlog offset {physical_offset} says it is at {says}",
    )
