"""tests/cli_forkserver.py: a forked `rmq` run gives what `subprocess.run` of `python -m rmq`
gives (exit code, stdout, stderr, stdin, environment, directory), ends at its time-out, and
starts afresh where the server's imports could differ."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.cli_forkserver import _START_ENV, SERVER, run

RMQ = [sys.executable, "-m", "rmq"]


def both(args: list[str], **options: Any) -> tuple[subprocess.CompletedProcess[str], ...]:
    forked_cpu = SERVER.cpu
    forked = run([*RMQ, *args], capture_output=True, text=True, timeout=60, **options)
    assert SERVER.cpu > forked_cpu, "the run was not forked"
    fresh = subprocess.run([*RMQ, *args], capture_output=True, text=True, timeout=60, **options)
    return forked, fresh


def same(args: list[str], **options: Any) -> subprocess.CompletedProcess[str]:
    forked, fresh = both(args, **options)
    assert (forked.returncode, forked.stdout, forked.stderr) == (
        fresh.returncode,
        fresh.stdout,
        fresh.stderr,
    )
    return forked


def test_exit_codes_and_outputs_are_those_of_a_fresh_interpreter() -> None:
    assert same(["--version"]).returncode == 0
    assert same(["topic", "list", "-n", "127.0.0.1:1"]).returncode == 1
    assert same(["no-such-command"]).returncode == 2


def test_stdin_environment_and_directory_are_the_runs_own(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {**_START_ENV, "HOME": str(home), "RMQ_OUTPUT": "json"}
    created, again = both(["profile", "set", "local", "--namesrv", "127.0.0.1:9876"], env=env)
    assert (created.returncode, again.returncode) == (0, 0)
    assert (home / ".config" / "rmq" / "rmq.toml").is_file()
    assert '"local"' in same(["profile", "list"], env=env).stdout
    assert same(["produce", "T", "-n", "127.0.0.1:1"], input="a\nb\n", env=env).returncode == 1
    (tmp_path / "store").mkdir()
    here = same(["inspect", "store", "overview"], env=env, cwd=tmp_path)
    assert "not a RocketMQ store" in here.stderr
    elsewhere = same(["inspect", "store", "overview"], env=env, cwd=home)
    assert "not a directory" in elsewhere.stderr


def test_a_run_past_its_time_out_is_killed() -> None:
    with socket.create_server(("127.0.0.1", 0)) as silent:  # accepts, never answers
        port = silent.getsockname()[1]
        started = time.monotonic()
        with pytest.raises(subprocess.TimeoutExpired):
            run(
                [*RMQ, "topic", "list", "-n", f"127.0.0.1:{port}"],
                capture_output=True,
                timeout=1,
            )
        assert time.monotonic() - started < 5
    pid = SERVER.last_pid
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{pid}").exists(), "the timed-out run is still there"


def test_what_the_imports_could_see_differently_starts_afresh() -> None:
    assert SERVER.serves(_START_ENV)
    pure = "0" if os.environ.get("RMQ_PURE_PYTHON", "") not in ("", "0") else "1"
    assert not SERVER.serves({**_START_ENV, "RMQ_PURE_PYTHON": pure})
    assert not SERVER.serves({**_START_ENV, "PYTHONHASHSEED": "7"})
    assert not SERVER.serves({**_START_ENV, "_RMQ_COMPLETE": "bash_complete"})
    forked_cpu = SERVER.cpu
    done = run([*RMQ, "--version"], capture_output=True, env={**_START_ENV, "PYTHONHASHSEED": "7"})
    assert done.returncode == 0
    assert SERVER.cpu == forked_cpu, "a run that must start afresh was forked"
