"""`rmq spark-export` run as a person runs it, in a subprocess that starts its own Spark: no
log4j banner, no WARN lines and no JVM warnings on stderr; its phases as `rmq:` lines in a
pipe, a progress bar on a terminal.  Also the line filter behind the JVM's stderr."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from rmq.spark.quiet import filter_noise
from tests.spark.records import build_spec_store
from tests.terminal import Terminal

pytestmark = pytest.mark.spark

NOISE = ("log4j", "WARN", "Setting default log level", "setLogLevel", "incubator")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_spec_store(tmp_path_factory.mktemp("quiet") / "store", count=8).root


def export_argv(store: Path, out: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "rmq",
        "spark-export",
        str(store),
        "--out",
        str(out),
        "--format",
        "json",
        "--master",
        "local[1]",
        "-o",
        "json",
    ]


# A Spark job of its own for a local run: under make stress.  In make test, test_cluster.py's
# export (rmq spark-export in a pipe, on a standalone cluster) checks its stderr the same way.
@pytest.mark.stress
@pytest.mark.timeout(900)  # starting a JVM and a Spark job on a loaded machine
def test_in_a_pipe_stderr_holds_only_the_phases(store: Path, tmp_path: Path) -> None:
    result = subprocess.run(
        export_argv(store, tmp_path / "out"), capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["rows"] > 0
    lines = result.stderr.splitlines()
    assert lines and all(line.startswith("rmq: ") for line in lines), result.stderr
    assert lines[0] == "rmq: starting Spark (local[1])"
    assert any(line.startswith("rmq: writing json to") for line in lines)


# A second Spark job of its own, for the terminal's rendering of what the pipe test above
# checks: under make stress too, to keep .ci/run within its time.
@pytest.mark.stress
@pytest.mark.timeout(900)
def test_on_a_terminal_a_progress_bar_and_no_spark_chatter(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "summary.json"
    command = f"{shlex.join(export_argv(store, tmp_path / 'out'))} > {shlex.quote(str(out))}"
    terminal = Terminal(["sh", "-c", command], dict(os.environ))
    code, shown = terminal.finish(timeout=600)
    assert code == 0, shown
    assert json.loads(out.read_text())["rows"] > 0
    assert "starting Spark (local[1])" in shown and "tasks" in shown
    assert "writing json to" in shown
    assert not [word for word in NOISE if word in shown], shown
    assert "rmq: " not in shown  # the phases are on the bar, not printed as lines


@pytest.mark.parametrize(
    ("chunks", "passed"),
    [
        ([b"WARNING: Using incubator modules: jdk.incubator.vector\nan error\n"], b"an error\n"),
        ([b"WARNING: Using incu", b"bator modules: x\n", b"next\n"], b"next\n"),
        ([b"WARNING: something else\n"], b"WARNING: something else\n"),
        ([b"\r\x1b[2K bar 1/3", b"\r\x1b[2K bar 2/3\n"], b"\r\x1b[2K bar 1/3\r\x1b[2K bar 2/3\n"),
        ([b"text WARNING: Using incu", b"bator modules: kept\n"], None),
    ],
)
def test_the_filter_drops_only_whole_noise_lines(chunks: list[bytes], passed: bytes | None) -> None:
    out, held, at_start = b"", b"", True
    for chunk in chunks:
        part, held, at_start = filter_noise(held + chunk, at_start)
        out += part
    assert held == b""
    assert out == (b"".join(chunks) if passed is None else passed)
