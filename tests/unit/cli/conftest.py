"""Fixtures for the command-line tests: a private HOME and a way to run `python -m rmq`."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli_forkserver import run as cli_run

RunRmq = Callable[..., subprocess.CompletedProcess[str]]

_CLEARED = ("NAMESRV_ADDR", "XDG_CONFIG_HOME", "NO_COLOR", "_RMQ_COMPLETE")


@pytest.fixture
def cli_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A HOME of its own and no RMQ_*/RocketMQ variables, in this process and for children."""
    home = tmp_path / "home"
    home.mkdir()
    for name in list(os.environ):
        if name.startswith("RMQ_") or name in _CLEARED:
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(home))
    return dict(os.environ)


@pytest.fixture
def profile_file(cli_env: dict[str, str]) -> Path:
    """Where the profile file lives for `cli_env`."""
    return Path(cli_env["HOME"]) / ".config" / "rmq" / "rmq.toml"


@pytest.fixture
def rmq(cli_env: dict[str, str]) -> RunRmq:
    """Run `python -m rmq ARGS...` with `cli_env` plus `env` overrides; returns the result."""

    def run(
        *args: str, env: dict[str, str] | None = None, input: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        return cli_run(
            [sys.executable, "-m", "rmq", *args],
            env={**cli_env, **(env or {})},
            input=input if input is not None else "",
            capture_output=True,
            text=True,
            timeout=60,
        )

    return run
