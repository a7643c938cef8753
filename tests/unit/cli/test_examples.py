"""The man pages' EXAMPLES (rmq.cli.examples): every command has some, and every one is a
command line the live command tree accepts."""

from __future__ import annotations

import shlex

import click
import pytest

from rmq.cli.docgen import CommandPath, Subcommand, _walk, man_page
from rmq.cli.examples import EXAMPLES
from rmq.cli.main import root_command

SHELL_OPERATORS = {"|", "||", "&&", ";", ">", ">>", "<", "<("}


Page = tuple[CommandPath, click.Command, click.Context, list[Subcommand]]


def pages() -> dict[str, Page]:
    return {
        "-".join(path): (path, command, ctx, children)
        for path, command, ctx, children in _walk(root_command(), ("rmq",), None)
        if path[:2] != ("rmq", "mqadmin") or len(path) == 2
    }


def rmq_commands(line: str) -> list[list[str]]:
    """The `rmq ...` command lines in a shell line (split at pipes and redirections)."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    commands: list[list[str]] = [[]]
    for token in lexer:
        if token in SHELL_OPERATORS:
            commands.append([])
        else:
            commands[-1].append(token)
    return [words for words in commands if words[:1] == ["rmq"]]


def parse(words: list[str]) -> click.Context:
    """Parse a command line down to its leaf command without running anything."""
    ctx = root_command().make_context("rmq", words[1:])
    while isinstance(ctx.command, click.Group):
        rest = [*ctx._protected_args, *ctx.args]
        if not rest:
            break
        name, command, rest = ctx.command.resolve_command(ctx, rest)
        assert command is not None and name is not None
        ctx = command.make_context(name, rest, parent=ctx)
    return ctx


def test_every_command_has_examples() -> None:
    missing = sorted(set(pages()) - set(EXAMPLES))
    assert not missing, f"add examples to rmq/cli/examples.py for: {', '.join(missing)}"


@pytest.mark.parametrize(
    ("page", "line"),
    [(page, line) for page, examples in EXAMPLES.items() for line, _ in examples],
)
def test_every_example_is_a_valid_command_line(page: str, line: str) -> None:
    tree = pages()
    if page not in tree:
        pytest.skip(f"{page} is not registered")
    commands = rmq_commands(line)
    assert commands, f"{line!r} runs no rmq command"
    paths = []
    for words in commands:
        try:
            ctx = parse(words)
        except click.BadParameter as exc:
            # A path that must exist (a config file, a store) is fine in an example.
            assert "does not exist" in exc.format_message(), exc.format_message()
            continue
        names = []
        node: click.Context | None = ctx
        while node is not None:
            names.append(node.info_name or "")
            node = node.parent
        paths.append("-".join(reversed(names)))
    # the example runs the page's command, or one under it
    assert not paths or any(path == page or path.startswith(f"{page}-") for path in paths), (
        line,
        paths,
    )


def test_pages_render_their_examples() -> None:
    path, command, ctx, children = pages()["rmq-consume"]
    page = man_page(path, command, ctx, children)
    section = page.split(".SH EXAMPLES\n", 1)[1].split(".SH ", 1)[0]
    assert "\\fBrmq consume Orders \\-\\-from @\\-1h \\-e\\fR" in section
    assert "What was stored in the last hour." in section
    assert page.index(".SH EXAMPLES") < page.index(".SH SEE ALSO")
