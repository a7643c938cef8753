"""`rmq completion bash|zsh|fish`: shell completion scripts, and the answers behind them.

The scripts are click's: small static shell functions that call `rmq` back with
`_RMQ_COMPLETE=<shell>_complete` and the words typed so far in the environment.
`rmq.cli.main.run` hands such a call to `complete` before anything else happens; click then
walks the command tree with resilient parsing, importing only the command modules on the
path to the word being completed, and prints the candidates.  A TAB therefore costs about
what `rmq --help` costs; completion callbacks (such as profile names) must stay as light.

Paths.  A parameter typed as a path (`pathlib.Path` in a typer signature, `click.Path`)
completes as a path: the answer is click's `file` (or `dir`, for a directory-only path) type,
on which the bash script turns on readline's filename completion (`compopt -o default` /
`-o dirnames`), zsh calls `_path_files` and fish `__fish_complete_path`.  typer's own path type
answers nothing at all, so `get_completions` below asks click's path type instead.  The shell
does the file system walk itself; rmq's answer costs no more than any other.

The shell classes are named here explicitly rather than looked up in click's registry,
which typer replaces with its own classes once any app is built with completion enabled.
docgen writes the same scripts to completions/rmq.{bash,zsh,fish}.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import click
import typer
from click.shell_completion import (
    BashComplete,
    CompletionItem,
    FishComplete,
    ShellComplete,
    ZshComplete,
    _resolve_context,
    _resolve_incomplete,
)

from rmq.cli.errors import EXIT_FAILURE, EXIT_OK, PROG_NAME
from rmq.cli.main import COMPLETE_VAR, command_app


class Shell(StrEnum):
    BASH = "bash"
    ZSH = "zsh"
    FISH = "fish"


def path_aware_completions(
    shell: ShellComplete, args: list[str], incomplete: str
) -> list[CompletionItem]:
    """What click completes for `incomplete` after `args`, with path parameters answering
    click's `file`/`dir` completion (typer's path type answers nothing)."""
    ctx = _resolve_context(shell.cli, shell.ctx_args, shell.prog_name, args)
    obj, incomplete = _resolve_incomplete(ctx, args, incomplete)
    if (
        isinstance(obj, click.Parameter)
        and isinstance(obj.type, click.Path)
        and getattr(obj, "_custom_shell_complete", None) is None
    ):
        return click.Path.shell_complete(obj.type, ctx, obj, incomplete)
    return obj.shell_complete(ctx, incomplete)


class _Bash(BashComplete):
    def get_completions(self, args: list[str], incomplete: str) -> list[CompletionItem]:
        return path_aware_completions(self, args, incomplete)


class _Zsh(ZshComplete):
    def get_completions(self, args: list[str], incomplete: str) -> list[CompletionItem]:
        return path_aware_completions(self, args, incomplete)


class _Fish(FishComplete):
    def get_completions(self, args: list[str], incomplete: str) -> list[CompletionItem]:
        return path_aware_completions(self, args, incomplete)


_SHELL_CLASSES: dict[str, type[ShellComplete]] = {
    Shell.BASH: _Bash,
    Shell.ZSH: _Zsh,
    Shell.FISH: _Fish,
}

app = command_app()


def _shell_completion(shell: str, command: click.Command) -> ShellComplete | None:
    cls = _SHELL_CLASSES.get(shell)
    return cls(command, {}, PROG_NAME, COMPLETE_VAR) if cls is not None else None


def completion_script(shell: Shell, command: click.Command) -> str:
    """The completion script for `shell`; `command` is the root `rmq` command."""
    completion = _shell_completion(shell, command)
    assert completion is not None, "every Shell member has a completion class"
    return completion.source()


def complete(command: click.Command, instruction: str) -> int:
    """Answer a `_RMQ_COMPLETE=<shell>_<source|complete>` call from a completion script."""
    shell, _, action = instruction.partition("_")
    completion = _shell_completion(shell, command)
    if completion is None or action not in ("source", "complete"):
        return EXIT_FAILURE
    click.echo(completion.source() if action == "source" else completion.complete())
    return EXIT_OK


@app.command()
def completion(
    ctx: typer.Context,
    shell: Annotated[Shell, typer.Argument(metavar="SHELL", show_default=False)],
) -> None:
    """Print the completion script for SHELL: bash, zsh or fish.

    \b
    bash:  rmq completion bash > ~/.local/share/bash-completion/completions/rmq
    zsh:   rmq completion zsh > "${fpath[1]}/_rmq"
    fish:  rmq completion fish > ~/.config/fish/completions/rmq.fish

    Or load it into the running shell: source <(rmq completion bash).
    The same scripts are shipped in completions/.
    """
    typer.echo(completion_script(shell, ctx.find_root().command), nl=False)
