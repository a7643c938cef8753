"""The shared progress bar (rmq/cli/progress.py): drawn on a terminal stderr, silent on a pipe."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time

from rmq.cli.progress import Progress

# Counts to 400 records in 20 steps over about a second (so a refresh certainly happens), then
# prints DONE on stdout.
SCRIPT = """
import sys, time
from rmq.cli.progress import Progress
with Progress("counting things", total=400) as bar:
    for _ in range(20):
        time.sleep(0.05)
        bar.advance(20)
print("DONE")
"""


def run_on_terminal(script: str) -> bytes:
    """Everything the script writes to a pseudo-terminal (stdout and stderr both)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    env = {**os.environ, "TERM": "xterm"}
    env.pop("NO_COLOR", None)
    process = subprocess.Popen(
        [sys.executable, "-c", script], stdin=slave, stdout=slave, stderr=slave, env=env
    )
    os.close(slave)
    screen = b""
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # the terminal closed: the process is gone
                    break
                if not chunk:
                    break
                screen += chunk
            elif process.poll() is not None:
                break
        assert process.wait(30) == 0, screen.decode(errors="replace")
    finally:
        os.close(master)
    return screen


def test_a_bar_is_drawn_on_a_terminal() -> None:
    screen = run_on_terminal(SCRIPT).decode(errors="replace")
    assert "counting things" in screen
    assert "/400" in screen and "records" in screen
    assert "DONE" in screen


def test_nothing_is_written_to_a_pipe() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout == "DONE\n"
    assert done.stderr == ""


def test_counts_without_a_terminal() -> None:
    with Progress("x", total=None) as bar:
        bar.advance(3)
        bar.update(7, total=10)
        bar(9, 10)
        assert not bar.enabled
    assert (bar.completed, bar.total) == (9, 10)


def test_a_small_total_under_min_total_draws_nothing_even_on_a_terminal() -> None:
    script = """
from rmq.cli.progress import Progress
with Progress("tiny work", total=5, min_total=1000) as bar:
    bar.advance(5)
print("DONE")
"""
    screen = run_on_terminal(script).decode(errors="replace")
    assert "DONE" in screen and "tiny work" not in screen
