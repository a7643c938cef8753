"""What offline validation and scans report: :class:`ProblemKind`, :class:`Problem`, the
:data:`Report` callback every walk takes, and :class:`ProblemLog`, the collector that caps
problems of one kind in one file at :data:`PROBLEMS_PER_FILE_AND_KIND` and sums up the rest.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

PROBLEMS_PER_FILE_AND_KIND: Final = 20


class ProblemKind(enum.StrEnum):
    """What is wrong; the value is what reports print."""

    UNREADABLE_FILE = "unreadable-file"
    WRONG_FILE_SIZE = "wrong-file-size"
    MISSING_FILE = "missing-file"
    BAD_MAGIC = "bad-magic"
    SIZE_MISMATCH = "size-mismatch"
    CRC_MISMATCH = "crc-mismatch"
    TRUNCATED_RECORD = "truncated-record"
    PHYSICAL_OFFSET_MISMATCH = "physical-offset-mismatch"
    MISSING_BLANK = "missing-blank"
    TORN_TAIL = "torn-tail"
    CQ_HOLE = "cq-hole"
    CQ_ENTRY_NOT_A_RECORD = "cq-entry-not-a-record"
    CQ_SIZE_MISMATCH = "cq-size-mismatch"
    CQ_WRONG_QUEUE = "cq-wrong-queue"
    CQ_QUEUE_OFFSET_MISMATCH = "cq-queue-offset-mismatch"
    CQ_MISSING_ENTRY = "cq-missing-entry"
    INDEX_BAD_HEADER = "index-bad-header"
    INDEX_ENTRY_NOT_A_RECORD = "index-entry-not-a-record"
    INDEX_KEY_MISMATCH = "index-key-mismatch"
    INDEX_MISSING_ENTRY = "index-missing-entry"
    BAD_CONFIG = "bad-config"


@dataclass(frozen=True, slots=True)
class Problem:
    """One problem: which file, where in it (byte offset), and what."""

    kind: ProblemKind
    path: Path
    offset: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}@{self.offset}: {self.kind}: {self.message}"


Report = Callable[[ProblemKind, Path, int, str], None]
"""``report(kind, file, byte offset in that file, message)``: where walks send damage."""


def ignore_problem(kind: ProblemKind, path: Path, offset: int, message: str) -> None:
    """A :data:`Report` for reads that only want the good records."""


class ProblemLog:
    """Collects problems, at most :data:`PROBLEMS_PER_FILE_AND_KIND` per (file, kind)."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []
        self._counts: Counter[tuple[Path, ProblemKind]] = Counter()
        self._first_dropped: dict[tuple[Path, ProblemKind], int] = {}

    def __call__(self, kind: ProblemKind, path: Path, offset: int, message: str) -> None:
        key = (path, kind)
        self._counts[key] += 1
        if self._counts[key] <= PROBLEMS_PER_FILE_AND_KIND:
            self.problems.append(Problem(kind, path, offset, message))
        else:
            self._first_dropped.setdefault(key, offset)

    def finish(self) -> list[Problem]:
        for (path, kind), offset in self._first_dropped.items():
            more = self._counts[path, kind] - PROBLEMS_PER_FILE_AND_KIND
            self.problems.append(
                Problem(kind, path, offset, f"{more} more problems of this kind from here on")
            )
        return self.problems
