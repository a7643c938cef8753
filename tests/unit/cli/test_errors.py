"""The error policy: one line on stderr, exit 1/2/130, tracebacks only with --debug."""

from __future__ import annotations

import io
import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import click
import pytest

from rmq.cli.errors import RmqError, as_rmq_error, report, require_confirmation
from tests.unit.cli.conftest import RunRmq


def _report(exc: BaseException, *, debug: bool = False) -> tuple[int, str]:
    err = io.StringIO()
    return report(exc, debug=debug, stderr=err), err.getvalue()


def test_rmq_error_is_one_line_with_hint_and_its_exit_code() -> None:
    code, text = _report(RmqError("cannot reach broker-a", "check -n", exit_code=1))
    assert (code, text) == (1, "rmq: error: cannot reach broker-a; check -n\n")
    code, text = _report(RmqError("bad value", exit_code=2))
    assert (code, text) == (2, "rmq: error: bad value\n")


def test_unexpected_exception_points_at_debug() -> None:
    code, text = _report(ValueError("boom"))
    assert code == 1
    assert (
        text == "rmq: error: unexpected error: ValueError: boom; run with --debug for a traceback\n"
    )


def test_debug_prints_traceback_before_the_line() -> None:
    def fail() -> None:
        raise ValueError("boom")

    try:
        fail()
    except ValueError as exc:
        code, text = _report(exc, debug=True)
    assert code == 1
    assert text.startswith("Traceback (most recent call last):")
    assert "in fail" in text
    assert text.splitlines()[-1] == "rmq: error: unexpected error: ValueError: boom"


def test_os_errors_are_described_with_what_to_do() -> None:
    refused = ConnectionRefusedError(111, "Connection refused")
    assert as_rmq_error(refused).line() == (
        "rmq: error: connection failed: Connection refused; check that the server is running "
        "and that the address (-n/--namesrv) is right"
    )
    missing = FileNotFoundError(2, "No such file or directory", "/nope/broker.conf")
    assert as_rmq_error(missing).line() == (
        "rmq: error: No such file or directory: /nope/broker.conf; check the path"
    )
    assert as_rmq_error(TimeoutError()).message == "connection failed: TimeoutError"
    assert all(as_rmq_error(e).exit_code == 1 for e in (refused, missing, OSError(5, "EIO")))


def test_click_usage_errors_keep_exit_2_and_ctrl_c_is_130() -> None:
    ctx = click.Context(click.Command("list"), info_name="rmq topic list")
    code, text = _report(click.BadParameter("not a number", ctx=ctx, param_hint="'-c'"))
    assert code == 2
    assert text == (
        "rmq: error: Invalid value for '-c': not a number; see 'rmq topic list --help'\n"
    )
    assert _report(KeyboardInterrupt()) == (130, "")
    assert _report(click.exceptions.Exit(3)) == (3, "")


def test_failed_operation_exits_1_without_traceback(rmq: RunRmq, tmp_path: Path) -> None:
    # A directory where the profile file should be makes reading it fail with an OSError.
    env = {"RMQ_CONFIG": str(tmp_path)}
    result = rmq("profile", "list", env=env)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == f"rmq: error: Is a directory: {tmp_path}\n"


@pytest.mark.parametrize("how", ["--debug", "RMQ_DEBUG=1"])
def test_debug_shows_the_traceback(rmq: RunRmq, tmp_path: Path, how: str) -> None:
    env = {"RMQ_CONFIG": str(tmp_path)}
    if how == "--debug":
        result = rmq("--debug", "profile", "list", env=env)
    else:
        result = rmq("profile", "list", env={**env, "RMQ_DEBUG": "1"})
    assert result.returncode == 1
    assert "Traceback (most recent call last):" in result.stderr
    assert "IsADirectoryError" in result.stderr
    assert result.stderr.splitlines()[-1] == f"rmq: error: Is a directory: {tmp_path}"


def test_bad_usage_exits_2(rmq: RunRmq) -> None:
    result = rmq("profile", "list", "-o", "xml")
    assert result.returncode == 2
    assert result.stderr.startswith("rmq: error: Invalid value for '--output' / '-o': 'xml'")
    assert result.stderr.endswith("; see 'rmq profile list --help'\n")
    assert result.stderr.count("\n") == 1


def test_confirmation_without_terminal_needs_yes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))
    with pytest.raises(RmqError) as raised:
        require_confirmation("delete topic 'orders'", yes=False)
    assert raised.value.line() == (
        "rmq: error: refusing to delete topic 'orders' without confirmation; pass --yes"
    )
    assert raised.value.exit_code == 2
    require_confirmation("delete topic 'orders'", yes=True)


class _Terminal:
    """`rmq ARGS` with stdin on a pseudo-terminal, so that it prompts."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.master, slave = pty.openpty()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "rmq", *args],
            stdin=slave,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        os.close(slave)

    def wait_for_prompt(self) -> bytes:
        assert self.process.stderr is not None
        seen = b""
        deadline = time.monotonic() + 30
        while b"[y/N]" not in seen:
            assert time.monotonic() < deadline, seen
            ready, _, _ = select.select([self.process.stderr], [], [], 1)
            if ready:
                chunk = os.read(self.process.stderr.fileno(), 4096)
                assert chunk, seen
                seen += chunk
        return seen

    def finish(self) -> tuple[int, str]:
        _, err = self.process.communicate(timeout=30)
        os.close(self.master)
        return self.process.returncode, err.decode()


@pytest.fixture
def two_profiles(rmq: RunRmq) -> None:
    for name in ("a", "b"):
        assert rmq("profile", "set", name, "-n", "127.0.0.1:9876").returncode == 0


@pytest.mark.usefixtures("two_profiles")
@pytest.mark.parametrize(
    ("answer", "code", "remaining"), [(b"y\n", 0, ["a"]), (b"n\n", 1, ["a", "b"])]
)
def test_terminal_confirmation(
    rmq: RunRmq, cli_env: dict[str, str], answer: bytes, code: int, remaining: list[str]
) -> None:
    terminal = _Terminal(["profile", "delete", "b"], cli_env)
    assert b"Delete profile 'b' from " in terminal.wait_for_prompt()
    os.write(terminal.master, answer)
    returncode, stderr = terminal.finish()
    assert returncode == code
    if code:
        assert stderr.endswith("rmq: error: cancelled; nothing was changed\n")
    lines = rmq("profile", "list", "-o", "ndjson").stdout.splitlines()
    assert [json.loads(line)["name"] for line in lines] == remaining


@pytest.mark.usefixtures("two_profiles")
def test_ctrl_c_exits_130(rmq: RunRmq, cli_env: dict[str, str]) -> None:
    terminal = _Terminal(["profile", "delete", "b"], cli_env)
    terminal.wait_for_prompt()
    terminal.process.send_signal(signal.SIGINT)
    returncode, stderr = terminal.finish()
    assert returncode == 130
    assert "Traceback" not in stderr
    assert len(rmq("profile", "list", "-o", "ndjson").stdout.splitlines()) == 2
