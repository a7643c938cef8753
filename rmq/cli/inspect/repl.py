"""The `rmq inspect STORE_DIR` shell: click-repl over the inspect group, plus small hooks.

click-repl reads the lines (a prompt_toolkit session with history and completion on a
terminal; line by line from a pipe), splits them and invokes the inspect group's context
with each, so a command behaves exactly as it does one-shot.  Its `ClickCompleter` walks the
click tree for command names, options and choices, and calls the parameters' completion
callbacks (`rmq.cli.inspect.completions`) with the line's context, whose ``meta`` holds the
open store: topics, queue ids of the topic typed, commitlog file names; paths for options
that take one.  History is kept in `$XDG_STATE_HOME/rmq/inspect_history`
(`~/.local/state/rmq/inspect_history`), never in the store.

What click-repl leaves to us, as hooks on `InspectGroup` (the inspect group's class):

- a failed line is reported as the usual one line (`rmq.cli.errors.report`; a mistyped
  command gets typer's did-you-mean), Ctrl-C interrupts a running command, and the shell
  carries on either way;
- the words `help` (the commands; `help COMMAND` for one command's options), `exit` and
  `quit` exist only in the shell (click-repl's own are `:help`, `:quit`);
- from a pipe, blank lines are skipped (click-repl stops at the first) and the shell exits 1
  if any line failed.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Final, TextIO

import click
from typer.core import TyperGroup

from rmq.cli.errors import EXIT_FAILURE, EXIT_OK, PROG_NAME, debug_from_env, report

SHELL_KEY: Final = "rmq.inspect.shell"
HISTORY_FILE: Final = "inspect_history"
EXIT_WORDS: Final = ("exit", "quit")
HELP_WORD: Final = "help"


def history_path() -> Path:
    """`$XDG_STATE_HOME/rmq/inspect_history`, or `~/.local/state/rmq/inspect_history`."""
    state = os.environ.get("XDG_STATE_HOME", "")
    base = Path(state) if os.path.isabs(state) else Path.home() / ".local" / "state"
    return base / PROG_NAME / HISTORY_FILE


class Shell:
    """What the shell keeps between lines: whether to show tracebacks, whether one failed."""

    def __init__(self, debug: bool) -> None:
        self.debug = debug
        self.failed = False


def shell_of(ctx: click.Context) -> Shell | None:
    shell = ctx.meta.get(SHELL_KEY)
    return shell if isinstance(shell, Shell) else None


class InspectGroup(TyperGroup):
    """The inspect group; in the shell it adds the shell's words and reports each line's
    failure instead of ending the shell (see the module docstring)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        names = super().list_commands(ctx)
        return [*names, *SHELL_COMMANDS] if shell_of(ctx) is not None else names

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is None and shell_of(ctx) is not None:
            return SHELL_COMMANDS.get(cmd_name)
        return command

    def invoke(self, ctx: click.Context) -> Any:
        shell = shell_of(ctx)
        if shell is None:
            return super().invoke(ctx)
        from click_repl.exceptions import ExitReplException

        try:
            result = super().invoke(ctx)
        except ExitReplException:
            raise
        except KeyboardInterrupt:
            print(f"{PROG_NAME}: interrupted", file=sys.stderr)
            code = EXIT_FAILURE
        except Exception as exc:
            code = report(exc, debug=shell.debug)
        else:
            code = result if type(result) is int else EXIT_OK
        finally:
            sys.stdout.flush()
        shell.failed |= code != EXIT_OK
        return None


def _command_names(ctx: click.Context, incomplete: str) -> list[str]:
    group = ctx.find_root().command
    names = group.list_commands(ctx) if isinstance(group, click.Group) else []
    return [name for name in names if name.startswith(incomplete) and name not in SHELL_COMMANDS]


@click.command(HELP_WORD, help="The commands; 'help COMMAND' shows a command's options.")
@click.argument(
    "command",
    required=False,
    shell_complete=lambda ctx, param, incomplete: _command_names(ctx, incomplete),
)
@click.pass_context
def _help(ctx: click.Context, command: str | None) -> None:
    group_ctx = ctx.parent
    assert group_ctx is not None and isinstance(group_ctx.command, click.Group)
    group = group_ctx.command
    if command is None:
        click.echo(help_text(group, group_ctx))
        return
    _, found, _ = group.resolve_command(group_ctx, [command])  # did-you-mean when mistyped
    assert found is not None
    found.make_context(command, ["--help"], parent=group_ctx)  # prints the help, exits 0


def help_text(group: click.Group, ctx: click.Context) -> str:
    """Every command with its summary, then the shell's own words."""
    rows = [
        (name, command.get_short_help_str(limit=70))
        for name in group.list_commands(ctx)
        if name not in SHELL_COMMANDS and (command := group.get_command(ctx, name)) is not None
    ]
    rows += [
        (HELP_WORD, "This list; 'help COMMAND' shows a command's options."),
        (", ".join(EXIT_WORDS), "Leave the shell (or press Ctrl-D)."),
    ]
    width = max(len(name) for name, _ in rows)
    store = ctx.params.get("store_dir")
    lines = [f"Commands on {store} (read-only):", ""]
    lines += [f"  {name:<{width}}  {text}" for name, text in rows]
    lines += ["", "Every command takes -o table|wide|json|ndjson|yaml; TAB completes."]
    return "\n".join(lines)


def _leave() -> None:
    from click_repl.exceptions import ExitReplException

    raise ExitReplException()


SHELL_COMMANDS: Final[dict[str, click.Command]] = {
    HELP_WORD: _help,
    **{
        word: click.Command(word, callback=_leave, help="Leave the shell (or press Ctrl-D).")
        for word in EXIT_WORDS
    },
}


class _Script:
    """stdin for click-repl when it is not a terminal: its lines without the blank ones."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def readline(self) -> str:
        for line in self.stream:
            if line.strip():
                return line
        return ""

    def isatty(self) -> bool:
        return False


def run_shell(ctx: click.Context) -> int:
    """The shell on the inspect group's context: interactive on a terminal, else the lines
    of stdin; returns the exit code."""
    from click_repl import repl

    shell = Shell(debug_from_env() or _debug_flag(ctx))
    ctx.meta[SHELL_KEY] = shell
    interactive = sys.stdin.isatty()
    stdin = sys.stdin
    if not interactive:
        sys.stdin = _Script(stdin)
    try:
        repl(
            ctx,
            prompt_kwargs=_prompt_settings(ctx) if interactive else {},
            allow_system_commands=False,
            allow_internal_commands=False,
        )
    finally:
        sys.stdin = stdin
        del ctx.meta[SHELL_KEY]
    return EXIT_FAILURE if shell.failed and not interactive else EXIT_OK


def store_completer(ctx: click.Context) -> Any:
    """click-repl's completer on the inspect group's context, offering each option once.

    Two hooks: the group's own parameters (STORE_DIR, --commitlog-dir) are not offered (they
    were given when the shell started), and a flag just typed (`dump --hex <TAB>`) is taken
    out of the words first, since click-repl takes the last option for one waiting for its
    value and offers nothing."""
    from click_repl import ClickCompleter

    class StoreCompleter(ClickCompleter):
        def _get_completion_for_cmd_args(
            self,
            ctx_command: click.Command,
            incomplete: str,
            autocomplete_ctx: click.Context,
            args: list[str],
        ) -> Any:
            if ctx_command is self.cli:  # the group's own STORE_DIR and options are given
                return []
            flags = {
                opt
                for param in ctx_command.params
                if isinstance(param, click.Option) and param.is_flag
                for opt in param.opts + param.secondary_opts
            }
            while args and args[-1] in flags:
                args = args[:-1]
            return super()._get_completion_for_cmd_args(
                ctx_command, incomplete, autocomplete_ctx, args
            )

    assert isinstance(ctx.command, click.Group)
    return StoreCompleter(ctx.command, ctx, show_only_unused=True)


def _debug_flag(ctx: click.Context) -> bool:
    from rmq.cli.main import CliState

    state = ctx.find_object(CliState)
    return state is not None and state.debug


def _prompt_settings(ctx: click.Context) -> dict[str, Any]:
    """prompt_toolkit settings: the history file, the completer on the store, the prompt."""
    from prompt_toolkit.history import FileHistory, History, InMemoryHistory
    from prompt_toolkit.shortcuts import CompleteStyle

    path = history_path()
    history: History
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        history = FileHistory(str(path))
    except OSError as exc:
        print(f"{PROG_NAME}: warning: no history file ({exc})", file=sys.stderr)
        history = InMemoryHistory()
    assert isinstance(ctx.command, click.Group)
    root = Path(ctx.params["store_dir"])
    print(
        f"{PROG_NAME} inspect: {root} (read-only). 'help' lists the commands, "
        "TAB completes, Ctrl-D leaves.",
        file=sys.stderr,
    )
    return {
        "message": f"inspect {root.resolve().name}> ",
        "history": history,
        "completer": store_completer(ctx),
        "complete_style": CompleteStyle.READLINE_LIKE,
    }
