"""A process on a pseudo-terminal, for tests of what rmq does when it talks to a person.

`Terminal(argv, env)` starts `argv` with stdin, stdout and stderr on a new pseudo-terminal
(120x40); `send` types keys, `expect(pattern)` waits (with a deadline) until the screen text,
escape sequences removed, shows `pattern` after the previous match, and `finish` waits for the
exit and returns the exit code and everything shown.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import termios
import time
from collections.abc import Sequence

ESCAPES = re.compile(rb"\x1b(\[[0-9;?]*[ -/]*[@-~]|\][^\x07]*\x07|[()][A-Z0-9]|[=>78])")


class Terminal:
    """`argv` running on a pseudo-terminal; see the module docstring."""

    def __init__(self, argv: Sequence[str], env: dict[str, str], cwd: str | None = None) -> None:
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self.process = subprocess.Popen(
            list(argv),
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env={**env, "TERM": "xterm"},
            cwd=cwd,
            close_fds=True,
            start_new_session=True,
        )
        os.close(slave)
        self.raw = b""
        self.seen = 0

    @property
    def text(self) -> str:
        """Everything shown so far, without escape sequences."""
        return ESCAPES.sub(b"", self.raw).decode(errors="replace")

    def send(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def _read(self, wait: float) -> bool:
        """Read what is there within `wait` seconds; False once the terminal closed."""
        ready, _, _ = select.select([self.master], [], [], wait)
        if not ready:
            return True
        try:
            chunk = os.read(self.master, 65536)
        except OSError:  # EIO: every process on the terminal is gone
            return False
        self.raw += chunk
        return bool(chunk)

    def expect(self, pattern: str, timeout: float = 30.0) -> str:
        """Wait until `pattern` shows after the previous match; the text up to its end."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while True:
            found = regex.search(self.text, self.seen)
            if found:
                before = self.text[self.seen : found.end()]
                self.seen = found.end()
                return before
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"{pattern!r} not shown; screen:\n{self.text}"
            if not self._read(min(remaining, 0.2)):
                assert regex.search(self.text, self.seen), f"{pattern!r} not shown:\n{self.text}"

    def finish(self, timeout: float = 60.0) -> tuple[int, str]:
        """Wait for the exit (killing the process after `timeout`); the exit code and all
        that was shown (`text`)."""
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                before = len(self.raw)
                if not self._read(0.2):
                    break
                if self.process.poll() is not None and len(self.raw) == before:
                    break
            try:
                code = self.process.wait(max(deadline - time.monotonic(), 1))
            except subprocess.TimeoutExpired:
                self.process.kill()
                code = self.process.wait()
        finally:
            os.close(self.master)
        return code, self.text
