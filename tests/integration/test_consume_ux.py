"""`rmq consume` as a person uses it, against a real `rmq standalone`: relative start times
(`--from @-1h`), the `--format` size field and printf widths, `-o`, and the progress bar of a
bounded read on a terminal stderr (`rmq group reset-offsets --to @-<duration>` shares the
time grammar)."""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.test_produce_consume import Cli, cli_for, ndjson, to_ndjson
from tests.procs import RmqProcesses, StandaloneProcess
from tests.terminal import Terminal

TOPIC = "UxOrders"
BODIES = ["héllo wörld", "ab", "x" * 30]


@pytest.fixture(scope="module")
def standalone(module_processes: RmqProcesses) -> Iterator[StandaloneProcess]:
    process = module_processes.start_standalone("consume-ux")
    yield process
    process.stop_cleanly()


@pytest.fixture(scope="module")
def cli(standalone: StandaloneProcess, tmp_path_factory: pytest.TempPathFactory) -> Cli:
    cli = cli_for(standalone.namesrv_addr, tmp_path_factory.mktemp("ux-home"))
    records = [{"body": body, "tags": f"T{n}", "keys": [f"k{n}"]} for n, body in enumerate(BODIES)]
    cli.ok("produce", TOPIC, input=to_ndjson(records))
    return cli


def test_relative_start_times(cli: Cli) -> None:
    everything = cli.consume(TOPIC, "-e")
    assert sorted(record["body"] for record in everything) == sorted(BODIES)
    assert cli.consume(TOPIC, "-e", "--from", "@-1h") == everything
    assert cli.consume(TOPIC, "-e", "--from", "@-2d") == everything
    # Everything was stored before now: nothing is stored at or after "zero seconds ago".
    assert cli.consume(TOPIC, "-e", "--from", "@-0s") == []
    # An absolute time just after the newest message agrees.
    newest = max(record["storeTimestamp"] for record in everything)
    assert cli.consume(TOPIC, "-e", "--from", f"@{newest + 1}") == []


def test_relative_time_without_its_at_is_a_usage_error(cli: Cli) -> None:
    result = cli.run("consume", TOPIC, "-e", "--from", "-1h")
    assert result.returncode == 2
    assert b"@-<duration> (@-1h: an hour ago" in result.stderr


def test_size_field_and_widths(cli: Cli) -> None:
    out = cli.ok("consume", TOPIC, "-e", "-f", "%-3g|%4S|%.5v|%6.2v|\\n").decode()
    assert sorted(out.splitlines()) == sorted(
        ["T0 |  13|héllo|    hé|", "T1 |   2|ab|    ab|", "T2 |  30|xxxxx|    xx|"]
    )


def test_output_ndjson_is_the_record_and_json_is_refused(cli: Cli) -> None:
    assert ndjson(cli.ok("consume", TOPIC, "-e", "-o", "ndjson")) == cli.consume(TOPIC, "-e")
    refused = cli.run("consume", TOPIC, "-e", "-o", "json")
    assert refused.returncode == 2 and refused.stdout == b""
    assert b"prints NDJSON message records" in refused.stderr
    assert b"--format" in refused.stderr


def test_reset_offsets_takes_a_relative_time(cli: Cli) -> None:
    before = int(time.time() * 1000)
    plan = json.loads(
        cli.ok(
            "group",
            "reset-offsets",
            "UxGroup",
            "-t",
            TOPIC,
            "--to",
            "@-1h",
            "--dry-run",
            "-o",
            "json",
        )
    )
    after = int(time.time() * 1000)
    stamp = int(plan[0]["extFields"]["timestamp"])
    assert before - 3_600_000 <= stamp <= after - 3_600_000


def run_with_stderr_on_a_terminal(cli: Cli, tmp_path: Path, *args: str) -> tuple[str, bytes]:
    """`rmq consume ARGS` with stdout to a file and stderr on a terminal: (screen, stdout)."""
    out = tmp_path / "out.ndjson"
    command = f"{shlex.join(cli.argv('consume', TOPIC, *args))} > {shlex.quote(str(out))}"
    terminal = Terminal(["sh", "-c", command], cli.env)
    code, shown = terminal.finish()
    assert code == 0, shown
    return shown, out.read_bytes()


def test_a_bounded_read_shows_a_progress_bar_on_a_terminal(cli: Cli, tmp_path: Path) -> None:
    screen, out = run_with_stderr_on_a_terminal(cli, tmp_path, "-e")
    assert f"consuming {TOPIC}" in screen and "/3 records" in screen
    assert len(ndjson(out)) == 3
    screen, out = run_with_stderr_on_a_terminal(cli, tmp_path, "-c", "2")
    assert f"consuming {TOPIC}" in screen and "/2 records" in screen
    assert len(ndjson(out)) == 2


def test_no_progress_bar_when_stderr_is_not_a_terminal(cli: Cli) -> None:
    result = cli.run("consume", TOPIC, "-e")
    assert result.returncode == 0
    assert result.stderr == b""
    assert len(ndjson(result.stdout)) == 3


def test_no_progress_bar_while_stdout_is_the_terminal(cli: Cli) -> None:
    terminal = Terminal(cli.argv("consume", TOPIC, "-e"), cli.env)
    code, shown = terminal.finish()
    assert code == 0, shown
    assert shown.count('"topic":') == 3 and "consuming" not in shown
