"""The `rmq inspect STORE_DIR` shell (click-repl): completion from the open store, and the
shell itself driven with real keystrokes on a pseudo-terminal and through a pipe.

The store is a `tests.specstore` sample (TopicTest queues 0 and 1, Orders queues 0 and 1,
three 1 KiB commitlog files).
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from prompt_toolkit.document import Document

from rmq.cli.inspect.completions import TARGET_KEY
from rmq.cli.inspect.group import StoreTarget
from rmq.cli.inspect.repl import SHELL_KEY, Shell, store_completer
from rmq.cli.main import root_command
from tests.specstore import SpecStore, build
from tests.terminal import Terminal
from tests.unit.cli.conftest import RunRmq

PROMPT = r"inspect store>"


@pytest.fixture
def store(tmp_path: Path) -> SpecStore:
    return build(tmp_path)


def _completer(store: SpecStore, *, shell: bool) -> Any:
    root = root_command()
    group = root.get_command(click.Context(root, info_name="rmq"), "inspect")
    assert isinstance(group, click.Group)
    # The root's help option names: click keeps the first help option it builds for a
    # command, so a context without them would change the command for every later user in
    # this process (the generated man pages among them).
    ctx = group.make_context(
        "inspect",
        [str(store.root)],
        resilient_parsing=True,
        help_option_names=root.context_settings["help_option_names"],
    )
    if shell:  # what the group callback and the shell put there
        ctx.meta[TARGET_KEY] = StoreTarget(store.root, None)
        ctx.meta[SHELL_KEY] = Shell(debug=False)
    return store_completer(ctx)


def _offered(completer: Any, text: str) -> list[str]:
    return sorted({c.text for c in completer.get_completions(Document(text))})


@pytest.mark.parametrize("shell", [True, False], ids=["shell", "completion-request"])
def test_completion_offers_names_from_the_open_store(store: SpecStore, shell: bool) -> None:
    completer = _completer(store, shell=shell)

    def offered(text: str) -> list[str]:
        return _offered(completer, text)

    def values(text: str) -> list[str]:  # without the options offered beside them
        return [word for word in offered(text) if not word.startswith("-")]

    assert offered("ov") == ["overview"]
    assert offered("by-") == ["by-id", "by-key", "by-unique-key"]
    assert offered("queue Top") == ["TopicTest"]
    # the topic given: its queue ids, and the options not used yet
    options = ["--count", "--from", "--output", "--to", "-c", "-o"]
    assert offered("queue Orders ") == [*options, "0", "1"]
    assert offered("stats -t O") == ["Orders"]
    assert values("search -t TopicTest -q ") == ["0", "1"]
    assert offered("search -q 0") == []  # no topic yet: no queue ids
    assert values("files ") == ["commitlog", "config", "consumequeue", "index"]
    assert offered("verify -o y") == ["yaml"]
    assert offered("dump --f") == ["--file"]
    assert values("dump --hex 0000000000000000102") == ["00000000000000001024"]
    assert offered("dump --file ") == [f"{n:020d}" for n in (0, 1024, 2048)]
    assert offered("dump --charset gb") == ["gb18030", "gbk"]
    assert [word for word in offered("") if word.startswith("-")] == []  # given at the start
    assert ("help" in offered("")) is shell
    if shell:
        assert offered("help st") == ["stats"]


def _terminal(store: SpecStore, tmp_path: Path) -> Terminal:
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "PROMPT_TOOLKIT_NO_CPR": "1",
    }
    terminal = Terminal([sys.executable, "-m", "rmq", "inspect", str(store.root)], env)
    terminal.expect(PROMPT)
    return terminal


def test_shell_on_a_terminal(tmp_path: Path) -> None:
    # Enough records that their export (~300 KiB) fills a pipe nobody reads.
    store = SpecStore(tmp_path / "store", commitlog_file_size=1 << 20, cq_file_size=20 * 200)
    for n in range(200):
        store.append("TopicTest", n % 2, b"x" * 1024, tags="TagA")
    store.write()
    terminal = _terminal(store, tmp_path)
    try:
        terminal.send("queue Top\t")  # TAB completes the topic from the store
        terminal.expect("queue TopicTest")
        terminal.send(" 1 -c 2 -o ndjson\r")
        lines = terminal.expect(r'"queueOffset":1,[^\n]*\n')
        records = [json.loads(line) for line in re.findall(r'\{"topic"[^\n]*\}', lines)]
        assert [(r["queueId"], r["queueOffset"]) for r in records] == [(1, 0), (1, 1)]
        terminal.expect(PROMPT)
        terminal.send("ovreview\r")  # a mistyped command: did you mean
        terminal.expect(r"rmq: error: No such command 'ovreview'; did you mean 'overview'\?")
        terminal.expect(PROMPT)
        terminal.send("overview\r")
        terminal.expect(r"SHUTDOWN\s+clean")
        terminal.expect(PROMPT)
        terminal.send("\x1b[A")  # up arrow: the previous line comes back
        terminal.expect(r"\s*overview")
        terminal.send("\r")
        terminal.expect(r"SHUTDOWN\s+clean")
        terminal.expect(PROMPT)
        # A command that runs until interrupted: an export into a FIFO whose reader stops
        # reading after the first bytes (so the command is running when Ctrl-C comes).
        fifo = tmp_path / "fifo"
        os.mkfifo(fifo)
        reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        try:
            terminal.send(f"export --out {fifo}\r")
            ready, _, _ = select.select([reader], [], [], 30)
            assert ready and os.read(reader, 4096).startswith(b'{"topic":"TopicTest"')
            os.killpg(terminal.process.pid, signal.SIGINT)  # what Ctrl-C on the terminal sends
            terminal.expect(r"rmq: interrupted")
            terminal.expect(PROMPT)
        finally:
            os.close(reader)
        assert terminal.process.poll() is None
        terminal.send("help\r")
        terminal.expect(r"exit, quit\s+Leave the shell")
        terminal.expect(PROMPT)
        terminal.send("\x04")  # Ctrl-D leaves
        code, _ = terminal.finish()
    finally:
        if terminal.process.poll() is None:
            terminal.process.kill()
    assert code == 0
    history = (tmp_path / "state" / "rmq" / "inspect_history").read_text()
    assert "+queue TopicTest 1 -c 2 -o ndjson\n" in history and "+ovreview\n" in history


def test_shell_reads_commands_from_a_pipe(rmq: RunRmq, store: SpecStore) -> None:
    script = "files index -o json\n\nhelp\nnosuch\nquit\nstats\n"
    result = rmq("inspect", str(store.root), input=script)
    assert result.returncode == 1  # 'nosuch' failed
    (index,) = json.loads(result.stdout.split("Commands on")[0])
    assert index["entries"] == len(store.index)
    assert "  by-unique-key  " in result.stdout and "exit, quit" in result.stdout
    assert "CRC ERRORS" not in result.stdout  # nothing after 'quit' ran
    assert result.stderr == "rmq: error: No such command 'nosuch'; see 'rmq inspect --help'\n"
    result = rmq("inspect", str(store.root), input="overview -o json\n\n\nconfig -o json\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count('"commitlog') >= 1 and result.stdout.rstrip().endswith("]")


def test_export_on_a_terminal_goes_through_the_pager(store: SpecStore, tmp_path: Path) -> None:
    paged = tmp_path / "paged.ndjson"
    env = {**os.environ, "HOME": str(tmp_path), "PAGER": f"tee {paged}"}
    argv = [sys.executable, "-m", "rmq", "inspect", str(store.root), "export", "-t", "Orders"]
    code, _ = Terminal(argv, env).finish()
    assert code == 0
    lines = paged.read_text().splitlines()
    orders = [r.physical_offset for r in store.records if r.topic == "Orders"]
    assert [json.loads(line)["commitLogOffset"] for line in lines] == orders


def test_long_scans_draw_a_progress_bar_on_a_terminal_only(rmq: RunRmq, tmp_path: Path) -> None:
    # One 64 MiB commitlog file: the size from which scans draw the bar.
    store = SpecStore(tmp_path / "store", commitlog_file_size=64 << 20)
    for _ in range(10):
        store.append("TopicTest", 0, b"x" * 100)
    store.write()
    env = {**os.environ, "HOME": str(tmp_path)}
    out = tmp_path / "out.ndjson"
    runs = [
        (["verify"], ["verify", "-o", "json"], "verifying"),
        (["export", "--out", str(out)], ["export", "--out", str(out), "--force"], "exporting"),
    ]
    for on_terminal, piped, description in runs:
        argv = [sys.executable, "-m", "rmq", "inspect", str(store.root), *on_terminal]
        code, shown = Terminal(argv, env).finish()
        assert code == 0 and description in shown, shown
        result = rmq("inspect", str(store.root), *piped)  # stderr not a terminal: no bar
        assert (result.returncode, result.stderr) == (0, "")
    assert len(out.read_text().splitlines()) == 10
