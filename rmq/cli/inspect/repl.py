"""The `rmq inspect STORE_DIR` shell: a prompt_toolkit loop over the `rmq inspect` commands.

Each line is split like a shell line (`shlex.split`) and dispatched into the real command
tree as `rmq inspect STORE_DIR <line>` with `root_command().main(..., standalone_mode=False)`,
so a command behaves exactly as it does one-shot; a failure is reported as the usual one
line (`rmq.cli.errors.report`) and the shell carries on.  Built in: `help` (the commands
with their summaries; `help COMMAND` for one command's options), `exit`/`quit` (or Ctrl-D);
Ctrl-C clears the line or interrupts a running command.  See docs/decisions.md for why this
is our own dispatcher and not click-repl.

Completion (TAB) comes from two places: the command tree (command names, options, choices
such as `-o` formats or `files` kinds) and the open store, listed afresh at every TAB:
topics and queue ids from `consumequeue/`, commitlog file names (which are offsets, so they
complete `dump OFFSET` too), and paths for options that take one.  History is kept in
`$XDG_STATE_HOME/rmq/inspect_history` (`~/.local/state/rmq/inspect_history`), never in the
store.

When stdin is not a terminal the shell reads commands line by line without a prompt (a
script of commands), and exits 1 if any of them failed.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final, TextIO

import click
from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.shortcuts import CompleteStyle

from rmq.cli.errors import EXIT_FAILURE, EXIT_OK, PROG_NAME, debug_from_env, report
from rmq.store.layout import StoreLayout, list_consume_queues, list_offset_files

if TYPE_CHECKING:
    from rmq.cli.inspect.group import StoreTarget

COMMAND_NAME: Final = "inspect"
HISTORY_FILE: Final = "inspect_history"
EXIT_WORDS: Final = ("exit", "quit")
HELP_WORD: Final = "help"
CHARSETS: Final = ("utf-8", "gbk", "gb18030", "big5", "shift_jis", "latin-1", "utf-16", "ascii")


def history_path() -> Path:
    """`$XDG_STATE_HOME/rmq/inspect_history`, or `~/.local/state/rmq/inspect_history`."""
    state = os.environ.get("XDG_STATE_HOME", "")
    base = Path(state) if os.path.isabs(state) else Path.home() / ".local" / "state"
    return base / PROG_NAME / HISTORY_FILE


def inspect_group() -> click.Group:
    """The `rmq inspect` click group, as registered in the root command."""
    from rmq.cli.main import root_command

    root = root_command()
    group = root.get_command(click.Context(root, info_name=PROG_NAME), COMMAND_NAME)
    assert isinstance(group, click.Group), "rmq inspect is a group"
    return group


class Shell:
    """Runs lines against one store directory; see the module docstring."""

    def __init__(self, target: StoreTarget, *, debug: bool = False) -> None:
        self.target = target
        self.debug = debug
        self.group = inspect_group()
        self.failed = False

    def prefix(self) -> list[str]:
        """The command line before a shell line: `inspect STORE_DIR [--commitlog-dir DIR]`."""
        args = [COMMAND_NAME, str(self.target.root)]
        if self.target.commitlog_dir is not None:
            args += ["--commitlog-dir", str(self.target.commitlog_dir)]
        return args

    def run_line(self, line: str, err: TextIO | None = None) -> bool:
        """Run one line; False when it asks to leave the shell."""
        stream = err if err is not None else sys.stderr
        try:
            words = shlex.split(line)
        except ValueError as exc:
            print(f"{PROG_NAME}: error: {exc}; check the quotes", file=stream)
            self.failed = True
            return True
        if not words:
            return True
        if words[0] in EXIT_WORDS:
            return False
        if words[0] == HELP_WORD:
            if len(words) > 1:
                words = [*words[1:], "--help"]
            else:
                sys.stdout.write(self.help_text())
                return True
        self.failed |= self.dispatch(words, stream) != EXIT_OK
        return True

    def dispatch(self, words: Sequence[str], err: TextIO) -> int:
        from rmq.cli.main import CliState, root_command

        try:
            result = root_command().main(
                [*self.prefix(), *words],
                prog_name=PROG_NAME,
                standalone_mode=False,
                obj=CliState(debug=self.debug),
            )
        except click.Abort:
            print(f"{PROG_NAME}: interrupted", file=err)
            return EXIT_FAILURE
        except (Exception, KeyboardInterrupt) as exc:
            return report(exc, debug=self.debug, stderr=err)
        finally:
            sys.stdout.flush()
        return result if type(result) is int else EXIT_OK

    def help_text(self) -> str:
        ctx = click.Context(self.group, info_name=COMMAND_NAME)
        rows = [
            (name, command.get_short_help_str(limit=70))
            for name in self.group.list_commands(ctx)
            if (command := self.group.get_command(ctx, name)) is not None
        ]
        rows += [
            (HELP_WORD, "This list; 'help COMMAND' shows a command's options."),
            ("exit, quit", "Leave the shell (or press Ctrl-D)."),
        ]
        width = max(len(name) for name, _ in rows)
        lines = [f"Commands on {self.target.root} (read-only):", ""]
        lines += [f"  {name:<{width}}  {text}" for name, text in rows]
        lines += ["", "Every command takes -o table|wide|json|ndjson|yaml; TAB completes."]
        return "\n".join(lines) + "\n"


def run_shell(target: StoreTarget) -> int:
    """The interactive shell on a terminal, else the commands read from stdin."""
    shell = Shell(target, debug=debug_from_env() or _debug_flag())
    if not sys.stdin.isatty():
        for line in sys.stdin:
            if not shell.run_line(line):
                break
        return EXIT_FAILURE if shell.failed else EXIT_OK
    return _interactive(shell)


def _debug_flag() -> bool:
    from rmq.cli.main import CliState

    ctx = click.get_current_context(silent=True)
    state = ctx.find_object(CliState) if ctx is not None else None
    return state is not None and state.debug


def _interactive(shell: Shell) -> int:
    path = history_path()
    history: History
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        history = FileHistory(str(path))
    except OSError as exc:
        print(f"{PROG_NAME}: warning: no history file ({exc})", file=sys.stderr)
        history = InMemoryHistory()
    session: PromptSession[str] = PromptSession(
        history=history,
        completer=StoreCompleter(shell),
        complete_style=CompleteStyle.READLINE_LIKE,
    )
    print(
        f"{PROG_NAME} inspect: {shell.target.root} (read-only). 'help' lists the commands, "
        "TAB completes, Ctrl-D leaves.",
        file=sys.stderr,
    )
    prompt = f"inspect {shell.target.root.resolve().name}> "
    while True:
        try:
            line = session.prompt(prompt)
        except KeyboardInterrupt:
            continue
        except EOFError:
            break
        if not shell.run_line(line):
            break
    return EXIT_OK


# -- completion ----------------------------------------------------------------------------


class StoreNames:
    """Names in the store directory, listed afresh on every call (the store may change)."""

    def __init__(self, target: StoreTarget) -> None:
        self.layout = StoreLayout.of(target.root, target.commitlog_dir or "")

    def topics(self) -> list[str]:
        return sorted(
            {topic for topic, _, _ in list_consume_queues(self.layout.consume_queue_root)}
        )

    def queue_ids(self, topic: str | None) -> list[str]:
        ids = {
            queue_id
            for name, queue_id, _ in list_consume_queues(self.layout.consume_queue_root)
            if topic is None or name == topic
        }
        return [str(queue_id) for queue_id in sorted(ids)]

    def commitlog_files(self) -> list[str]:
        return [path.name for _, path in list_offset_files(self.layout.commitlog)]


def candidates(text: str, group: click.Group, names: StoreNames) -> tuple[str, list[str]]:
    """The word being completed at the end of `text` and what may replace it."""
    try:
        words = shlex.split(text)
    except ValueError:
        words = text.split()
    current = "" if not text or text[-1].isspace() else (words.pop() if words else "")
    if not words:
        ctx = click.Context(group, info_name=COMMAND_NAME)
        commands = [*group.list_commands(ctx), HELP_WORD, *EXIT_WORDS]
        return current, _starting(commands, current)
    if words[0] == HELP_WORD:
        ctx = click.Context(group, info_name=COMMAND_NAME)
        return current, _starting(group.list_commands(ctx), current) if len(words) == 1 else []
    command = group.commands.get(words[0])
    if command is None:
        return current, []
    param, given = _expected_param(command, words[1:])
    if current.startswith("-") and not isinstance(param, click.Option):
        options = [opt for p in command.params if isinstance(p, click.Option) for opt in p.opts]
        return current, _starting(options, current)
    if param is None:
        return current, []
    return current, _starting(_values(param, given, names, current), current)


def _starting(words: Iterable[str], prefix: str) -> list[str]:
    return sorted({word for word in words if word.startswith(prefix)})


def _expected_param(
    command: click.Command, words: Sequence[str]
) -> tuple[click.Parameter | None, dict[str, str]]:
    """Which parameter the next word fills after `words`, and the values given so far."""
    options = {
        opt: param
        for param in command.params
        if isinstance(param, click.Option)
        for opt in param.opts
    }
    arguments = [param for param in command.params if isinstance(param, click.Argument)]
    given: dict[str, str] = {}
    pending: click.Option | None = None
    position = 0
    for word in words:
        if pending is not None:
            given[pending.name or ""] = word
            pending = None
        elif word in options:
            option = options[word]
            if not option.is_flag:
                pending = option
        elif not word.startswith("-") and position < len(arguments):
            given[arguments[position].name or ""] = word
            if arguments[position].nargs == 1:
                position += 1
    if pending is not None:
        return pending, given
    return (arguments[position] if position < len(arguments) else None), given


def _values(
    param: click.Parameter, given: dict[str, str], names: StoreNames, current: str
) -> list[str]:
    if isinstance(param.type, click.Choice):
        return [str(choice) for choice in param.type.choices]
    if isinstance(param.type, click.Path):
        return _paths(current)
    name = param.name or ""
    if name == "topic":
        return names.topics()
    if name in ("queue", "queue_id"):
        return names.queue_ids(given.get("topic"))
    if name in ("file", "offset"):
        return names.commitlog_files()
    if name == "charset":
        return list(CHARSETS)
    return []


def _paths(current: str) -> list[str]:
    """Entries of the directory `current` points into, directories with a trailing `/`."""
    directory, _, _ = current.rpartition("/")
    base = Path(directory or ".").expanduser()
    try:
        entries = list(os.scandir(base))
    except OSError:
        return []
    prefix = f"{directory}/" if directory or current.startswith("/") else ""
    return [prefix + entry.name + ("/" if entry.is_dir() else "") for entry in entries]


class StoreCompleter(Completer):
    """prompt_toolkit completer over :func:`candidates`."""

    def __init__(self, shell: Shell) -> None:
        self.shell = shell
        self.names = StoreNames(shell.target)

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterator[Completion]:
        current, found = candidates(document.text_before_cursor, self.shell.group, self.names)
        for word in found:
            yield Completion(word, start_position=-len(current))
