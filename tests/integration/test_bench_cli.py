"""`rmq bench` against a real standalone: a rate-limited run keeps its rate and reports
percentiles, the pull mode reads what was produced, a short run reports as it goes, and a
terminal (only a terminal) shows a progress bar."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.integration.test_produce_consume import Cli, cli_for, topic_name
from tests.procs import RmqProcesses, StandaloneProcess
from tests.terminal import Terminal


@pytest.fixture(scope="module")
def standalone(module_processes: RmqProcesses) -> Iterator[StandaloneProcess]:
    process = module_processes.start_standalone("bench-cli")
    yield process
    process.stop_cleanly()


@pytest.fixture(scope="module")
def cli(standalone: StandaloneProcess, tmp_path_factory: pytest.TempPathFactory) -> Cli:
    return cli_for(standalone.namesrv_addr, tmp_path_factory.mktemp("bench-home"))


def test_a_rate_limited_run_keeps_its_rate_and_reports_percentiles(cli: Cli) -> None:
    topic = topic_name("BenchRate")
    assert cli.run("topic", "create", topic).returncode == 0
    report = json.loads(
        cli.ok(
            "bench",
            "produce",
            "-t",
            topic,
            "--rate",
            "500",
            "--in-flight",
            "8",
            "-d",
            "2",
            "--json",
        )
    )
    assert report["rate"] == 500
    assert (report["sendFailed"], report["responseFailed"]) == (0, 0)
    # 2 s at 500/s: the schedule hands out ~1,000 sends, never more than it allows; a
    # machine running the suite on every core may answer 8 in flight too slowly to reach
    # them all (763 seen), so below only a floor that a stuck schedule would miss
    assert 500 <= report["sendTotal"] <= 1_010, report
    # The figure is sends over the run's seconds; those include waiting for the last sends'
    # answers, which a machine running the suite on every core can stretch: the count above
    # is what shows the schedule was kept, the rate may only fall short, never exceed it.
    assert report["sendTps"] == pytest.approx(report["sendTotal"] / report["seconds"], rel=0.01)
    assert report["sendTps"] <= 525, report
    assert 0 < report["p50RtMs"] <= report["p99RtMs"] <= report["p999RtMs"] <= report["maxRtMs"]


def test_pull_mode_reads_every_produced_message(cli: Cli) -> None:
    topic = topic_name("BenchPull")
    produced = json.loads(
        cli.ok("bench", "produce", "-t", topic, "-b", "16", "-c", "800", "--json")
    )
    assert produced["sendTotal"] == 800
    consumed = json.loads(
        cli.ok("bench", "consume", "--pull", "-t", topic, "--from", "first", "-c", "800", "--json")
    )
    assert consumed["mode"] == "pull"
    assert consumed["consumeTotal"] == 800
    assert 0 <= consumed["p50S2cRtMs"] <= consumed["p99S2cRtMs"] <= consumed["p999S2cRtMs"]


def test_a_count_stops_at_exactly_that_count(cli: Cli) -> None:
    """Pulls of 32 and push batches on several consume tasks deliver past -c: the run counts
    exactly -c messages, in both modes."""
    topic = topic_name("BenchCount")
    produced = json.loads(
        cli.ok("bench", "produce", "-t", topic, "-b", "16", "-c", "800", "--json")
    )
    assert produced["sendTotal"] == 800
    for n, mode in enumerate((["--pull"], ["-b", "8"])):
        args = ("-t", topic, "-g", f"{topic}-{n}", "--from", "first", "-c", "301", "--json")
        report = json.loads(cli.ok("bench", "consume", *mode, *args))
        assert report["consumeTotal"] == 301, (mode, report)


def test_a_short_run_reports_every_second(cli: Cli) -> None:
    topic = topic_name("BenchShort")
    assert cli.run("topic", "create", topic).returncode == 0
    lines = (
        cli.ok("bench", "produce", "-t", topic, "--rate", "200", "-d", "3.5").decode().splitlines()
    )
    interval_lines = [line for line in lines if line.startswith("Current Time: ")]
    assert len(interval_lines) >= 3, lines
    assert lines[-1].startswith("[Complete] Send Total: ")
    assert "p999 RT(ms): " in lines[-1]


def test_a_terminal_shows_a_progress_bar_and_the_lines_above_it(cli: Cli) -> None:
    topic = topic_name("BenchBar")
    assert cli.run("topic", "create", topic).returncode == 0
    terminal = Terminal(
        cli.argv("bench", "produce", "-t", topic, "--rate", "400", "-c", "1200", "-i", "1"), cli.env
    )
    terminal.expect(r"sending .*\d+/1200")  # the bar: description and count of the total
    terminal.expect(r"Current Time: ")  # a report line, printed while the bar is drawn
    code, shown = terminal.finish()
    assert code == 0, shown
    assert "[Complete] Send Total: 1200 " in shown


def test_without_a_terminal_no_bar_is_drawn(cli: Cli) -> None:
    topic = topic_name("BenchPipe")
    assert cli.run("topic", "create", topic).returncode == 0
    done = cli.run("bench", "produce", "-t", topic, "--rate", "400", "-c", "400", "--json")
    assert done.returncode == 0, done.stderr.decode()
    assert b"\x1b[" not in done.stderr
    assert b"sending" not in done.stderr
    assert json.loads(done.stdout)["sendTotal"] == 400
