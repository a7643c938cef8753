"""The one progress bar of the command line: long work shows it on stderr, and only on a terminal.

`Progress` is a context manager around a rich progress bar drawn on stderr (or `stream`).  When
that stream is not a terminal it does nothing at all: output to pipes, files and tests never
changes, and rich is never imported (it is imported when a bar is first drawn, so importing this
module costs nothing).  The bar is transient: it is erased when the work ends, leaving the
terminal as the command's own output left it.

    with Progress("exporting", total=size, unit="bytes") as bar:
        for chunk in chunks:
            ...
            bar.advance(len(chunk))

    with Progress("consuming", total=count) as bar:        # records (the default unit)
        for record in records:
            bar.advance()

    with Progress("running Spark job") as bar:             # no total: a spinner, a count, a clock
        ...
        bar.update(files_done)

`total` may be given later (`update(done, total=...)`, `set_total`); with `min_total` a bar is
only drawn once the total is known to be at least that large (short work stays quiet), and
`when=False` turns it off (say, while stdout is on the same terminal and being written to).  An
instance is also a ``progress(done, total)`` callback, the shape of the offline store's scan
reports (`rmq.store.offline.scan.Progress`).  Counting is cheap: `advance` only adds to a number
and hands it to rich at most ten times a second.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Literal, TextIO

Unit = Literal["records", "bytes", "files", "tasks"]

REFRESH_SECONDS = 0.1
"""Counts reach the bar at most this often (and always when the work ends)."""


def terminal(stream: TextIO) -> bool:
    """Whether `stream` is a terminal a bar may be drawn on."""
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # closed or a stand-in without isatty
        return False


class Progress:
    """A transient rich progress bar on a terminal stderr; a no-op anywhere else."""

    def __init__(
        self,
        description: str,
        total: int | None = None,
        *,
        unit: Unit = "records",
        stream: TextIO | None = None,
        min_total: int = 0,
        when: bool = True,
    ) -> None:
        self.description = description
        self.total = total
        self.unit: Unit = unit
        self.min_total = min_total
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = when and terminal(self.stream)
        self.completed = 0
        self._bar: Any = None
        self._task: Any = None
        self._pushed = 0.0
        self._closed = False

    # -- the context manager ----------------------------------------------------------------
    def __enter__(self) -> Progress:
        self._maybe_start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Erase the bar (if one was drawn); later reports are ignored."""
        self._closed = True
        if self._bar is not None:
            self._push()
            self._bar.stop()
            self._bar = None

    # -- reports ------------------------------------------------------------------------------
    def advance(self, amount: int = 1) -> None:
        """`amount` more units done."""
        self.completed += amount
        if self._bar is not None and time.monotonic() - self._pushed >= REFRESH_SECONDS:
            self._push()

    def update(self, completed: int, total: int | None = None) -> None:
        """`completed` units done in all (of `total`, when given)."""
        self.completed = completed
        if total is not None:
            self.set_total(total)
        elif self._bar is not None and time.monotonic() - self._pushed >= REFRESH_SECONDS:
            self._push()

    def __call__(self, done: int, total: int) -> None:
        """The ``progress(done, total)`` callback of offline store scans."""
        self.update(done, total)

    def set_total(self, total: int | None) -> None:
        """Give (or change) the total; None makes the bar indeterminate."""
        self.total = total
        if self._bar is None:
            self._maybe_start()
        else:
            self._push()

    def describe(self, description: str) -> None:
        """Change the text in front of the bar, drawn at once (not at the next refresh)."""
        self.description = description
        if self._bar is not None:
            self._bar.update(self._task, description=description, refresh=True)

    # -- drawing ------------------------------------------------------------------------------
    def _maybe_start(self) -> None:
        if not self.enabled or self._closed or self._bar is not None:
            return
        if self.min_total and (self.total is None or self.total < self.min_total):
            return
        self._bar = self._new_bar()
        self._bar.start()
        self._task = self._bar.add_task(
            self.description, total=self.total, completed=self.completed
        )
        self._pushed = time.monotonic()

    def _push(self) -> None:
        self._bar.update(self._task, completed=self.completed, total=self.total)
        self._pushed = time.monotonic()

    def _new_bar(self) -> Any:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            MofNCompleteColumn,
            ProgressColumn,
            SpinnerColumn,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )
        from rich.progress import (
            Progress as RichProgress,
        )

        columns: list[ProgressColumn | str] = [
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
        ]
        if self.unit == "bytes":
            columns += [DownloadColumn(), TransferSpeedColumn()]
        else:
            columns += [
                MofNCompleteColumn(),
                TextColumn(self.unit),
                TaskProgressColumn(show_speed=True),
            ]
        columns += [TimeElapsedColumn(), TimeRemainingColumn()]
        return RichProgress(
            *columns,
            console=Console(file=self.stream, stderr=self.stream is sys.stderr),
            transient=True,
            refresh_per_second=8,
        )
