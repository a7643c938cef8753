"""Child server processes in the foreground: start them, watch them, stop them all.

`Supervisor` is what `rmq cluster up` runs its name server and brokers with.  Each child is
`python -m rmq <args>` with stdout and stderr in its own log file, in its own process group
(a Ctrl-C in the terminal reaches the supervisor only, which then stops the children in
order) and, on Linux, with SIGTERM as its parent-death signal (a supervisor killed with
SIGKILL does not leave servers behind).

While the `with Supervisor()` block runs, SIGINT and SIGTERM are recorded instead of
raising; `check()` raises `Interrupted` once one arrived and `ChildExited` when a child
ended (with `keep_going`, a child's end is only reported, until none is left), and `wait()`
polls both until one happens.  `stop(children)` sends SIGTERM to all of
them at once and waits; a second signal meanwhile (or the timeout) kills the rest with
SIGKILL.  Leaving the block stops whatever still runs and restores the signal handlers.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

from rmq.cli.errors import RmqError

POLL_SECONDS = 0.1
_PR_SET_PDEATHSIG = 1


class Interrupted(Exception):
    """SIGINT or SIGTERM arrived; `signum` says which."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class ChildExited(RmqError):
    """A child ended while it should be running (exit code 1 for the command)."""


@dataclass
class Child:
    """One child process and where its output goes."""

    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    @property
    def running(self) -> bool:
        return self.popen.poll() is None

    def last_line(self) -> str:
        """The last non-empty line of its log ("" when it wrote nothing)."""
        try:
            lines = self.log.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return ""
        return next((line.strip() for line in reversed(lines) if line.strip()), "")


@dataclass
class Supervisor:
    """Children started with `start`, stopped together; see the module docstring."""

    debug: bool = False
    keep_going: bool = False
    """A child's end is reported and the others keep running (until none is left)."""
    children: list[Child] = field(default_factory=list)
    signals: list[int] = field(default_factory=list)
    _previous: dict[int, Any] = field(default_factory=dict)
    _reported: set[int] = field(default_factory=set)

    def __enter__(self) -> Supervisor:
        for signum in (signal.SIGINT, signal.SIGTERM):
            self._previous[signum] = signal.signal(signum, self._record)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            self.stop(self.children)
        finally:
            for signum, handler in self._previous.items():
                signal.signal(signum, handler)

    def _record(self, signum: int, frame: FrameType | None) -> None:
        self.signals.append(signum)

    def start(self, name: str, args: Sequence[str], log: Path) -> Child:
        """Start `python -m rmq [--debug] args...` with its output in `log`."""
        argv = [sys.executable, "-m", "rmq", *(["--debug"] if self.debug else []), *args]
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("wb") as out:
            popen = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                preexec_fn=_child_setup(),
            )
        child = Child(name, popen, log)
        self.children.append(child)
        return child

    def check(self) -> None:
        """Raise Interrupted after a signal, ChildExited when a child has ended (with
        `keep_going`: only once none is left; each end is reported on stderr)."""
        if self.signals:
            raise Interrupted(self.signals[0])
        for child in self.children:
            code = child.popen.poll()
            if code is None or child.popen.pid in self._reported:
                continue
            said = child.last_line()
            message = f"{child.name} (pid {child.popen.pid}) exited with code {code}" + (
                f": {said}" if said else ""
            )
            if not self.keep_going:
                raise ChildExited(message, f"see {child.log}")
            self._reported.add(child.popen.pid)
            _note(f"{message}; the others keep running (see {child.log})")
        if self.children and not any(child.running for child in self.children):
            raise ChildExited("every server has exited", "see the logs")

    def wait(self) -> None:
        """Until a signal or a child's end: raises Interrupted or ChildExited."""
        while True:
            self.check()
            time.sleep(POLL_SECONDS)

    def stop(self, children: Sequence[Child], timeout: float = 30.0) -> None:
        """SIGTERM to every running one of `children`, then wait for them all; SIGKILL for
        those still running after `timeout` or after one more signal.  A child that exits
        with another code than 0 is reported on stderr."""
        running = [child for child in children if child.running]
        for child in running:
            with contextlib.suppress(ProcessLookupError):
                child.popen.send_signal(signal.SIGTERM)
        signals_before = len(self.signals)
        deadline = time.monotonic() + timeout
        while any(child.running for child in running):
            if len(self.signals) > signals_before or time.monotonic() > deadline:
                for child in running:
                    if child.running:
                        _note(f"killing {child.name} (pid {child.popen.pid})")
                        with contextlib.suppress(ProcessLookupError):
                            child.popen.kill()
                break
            time.sleep(POLL_SECONDS)
        for child in running:
            code = child.popen.wait()
            if code not in (0, -signal.SIGKILL):
                _note(f"{child.name} exited with code {code} while stopping; see {child.log}")


def _note(line: str) -> None:
    print(f"rmq: {line}", file=sys.stderr, flush=True)


def _child_setup() -> Callable[[], None]:
    """What a child runs before exec: its own process group and, on Linux, SIGTERM when
    the supervisor dies."""
    prctl: Callable[..., int] | None = None
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            prctl = ctypes.CDLL(None, use_errno=True).prctl

    def setup() -> None:
        os.setpgid(0, 0)
        if prctl is not None:
            prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)

    return setup
