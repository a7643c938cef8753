"""The shared progress bar (rmq/cli/progress.py): drawn on a terminal stderr, silent on a pipe."""

from __future__ import annotations

import os
import subprocess
import sys

from rmq.cli.progress import Progress
from tests.terminal import Terminal

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


def run_on_terminal(script: str) -> str:
    """Everything the script shows on a pseudo-terminal (stdout and stderr both)."""
    env = {**os.environ}
    env.pop("NO_COLOR", None)
    terminal = Terminal([sys.executable, "-c", script], env)
    code, shown = terminal.finish()
    assert code == 0, shown
    return shown


def test_a_bar_is_drawn_on_a_terminal() -> None:
    screen = run_on_terminal(SCRIPT)
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
    screen = run_on_terminal(script)
    assert "DONE" in screen and "tiny work" not in screen
