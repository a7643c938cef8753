"""Generate the shell completion scripts and man pages kept in the repository.

    python -m rmq.cli.docgen           rewrite completions/ and man/ in the source tree
    python -m rmq.cli.docgen --check   exit 1, naming the stale files, if they are out of date

Everything is derived from the live click command tree (`rmq.cli.main.root_command`), so
the files change exactly when a command, an option or a help text changes:

    completions/rmq.bash, rmq.zsh, rmq.fish   the scripts `rmq completion SHELL` prints
    man/rmq.1                                 the root page, with ENVIRONMENT, FILES and
                                              EXIT STATUS taken from rmq.cli.settings/errors
    man/rmq-<command>[-<subcommand>].1        one page per visible command and subcommand:
                                              NAME, SYNOPSIS, DESCRIPTION, OPTIONS,
                                              COMMANDS (for groups), EXAMPLES (from
                                              rmq.cli.examples), SEE ALSO
    docs/settings.md                          every setting of the name server and the
                                              broker (rmq.cli.settingsdoc)

Pages are plain roff (man(7) macros) without a date, so regenerating an unchanged tree
gives identical bytes.  Writing also removes pages of commands that no longer exist.
The check compares freshly rendered text with the files on disk, so it holds whatever set
of command modules is registered at the time it runs.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import click

from rmq import __version__
from rmq.cli.completion import Shell, completion_script
from rmq.cli.errors import EXIT_FAILURE, EXIT_OK, EXIT_STATUSES, PROG_NAME
from rmq.cli.examples import EXAMPLES
from rmq.cli.main import root_command
from rmq.cli.settings import ENVIRONMENT
from rmq.cli.settingsdoc import PAGE as SETTINGS_PAGE
from rmq.cli.settingsdoc import render as render_settings

SOURCE_ROOT = Path(__file__).resolve().parents[2]
COMPLETIONS_DIR = "completions"
MAN_DIR = "man"
REGENERATE = "run python -m rmq.cli.docgen"

CommandPath = tuple[str, ...]
Subcommand = tuple[CommandPath, click.Command]


def generate(root: click.Command | None = None) -> dict[str, str]:
    """Every generated file: relative path -> text."""
    root = root if root is not None else root_command()
    files = {
        f"{COMPLETIONS_DIR}/{PROG_NAME}.{shell}": completion_script(shell, root) for shell in Shell
    }
    for path, command, ctx, children in _walk(root, (PROG_NAME,), None):
        files[f"{MAN_DIR}/{_page_name(path)}.1"] = man_page(path, command, ctx, children)
    files[SETTINGS_PAGE] = render_settings()
    return files


def stale_files(files: dict[str, str], base: Path) -> list[str]:
    """Paths under `base` that differ from `files`, are missing, or are left over."""
    stale = [
        name
        for name, text in files.items()
        if not (base / name).is_file() or (base / name).read_text(encoding="utf-8") != text
    ]
    return sorted(stale + [name for name in _existing(base) if name not in files])


def write(files: dict[str, str], base: Path) -> None:
    """Write `files` under `base` and delete generated files that are no longer produced."""
    for name in _existing(base):
        if name not in files:
            (base / name).unlink()
    for name, text in files.items():
        target = base / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def man_page(
    path: CommandPath, command: click.Command, ctx: click.Context, children: Sequence[Subcommand]
) -> str:
    """The roff man page of the command at `path`."""
    page = _page_name(path)
    lines = [
        f'.TH "{_roff(page.upper())}" "1" "" "{PROG_NAME} {__version__}" "{PROG_NAME} manual"',
        ".SH NAME",
        f"{_roff(page)} \\- {_roff(command.get_short_help_str(limit=1000))}",
        ".SH SYNOPSIS",
        f".B {_roff(' '.join(path))}",
        _roff(" ".join(command.collect_usage_pieces(ctx))),
    ]
    if command.help:
        lines.append(".SH DESCRIPTION")
        lines += _paragraphs(command.help)
    options = [
        record
        for param in command.get_params(ctx)
        if isinstance(param, click.Option) and (record := param.get_help_record(ctx))
    ]
    if options:
        lines.append(".SH OPTIONS")
        for declaration, help_text in options:
            lines += [".TP", f"\\fB{_roff(declaration)}\\fR", _roff(help_text)]
    if children:
        lines.append(".SH COMMANDS")
        for child_path, child in children:
            short = child.get_short_help_str(limit=1000)
            lines += [".TP", f"\\fB{_roff(_page_name(child_path))}\\fR(1)", _roff(short)]
    if len(path) == 1:
        lines += _root_sections()
    examples = EXAMPLES.get(page, ())
    if examples:
        lines.append(".SH EXAMPLES")
        for command_line, meaning in examples:
            lines += [".TP", f"\\fB{_roff(command_line)}\\fR", _roff(meaning)]
    see_also = [_page_name(path[:-1])] if len(path) > 1 else []
    see_also += [_page_name(child_path) for child_path, _ in children]
    if see_also:
        lines += [".SH SEE ALSO", ",\n".join(f".BR {_roff(name)} (1)" for name in see_also)]
    return "\n".join(lines) + "\n"


def _walk(
    command: click.Command, path: CommandPath, parent: click.Context | None
) -> Iterator[tuple[CommandPath, click.Command, click.Context, list[Subcommand]]]:
    ctx = click.Context(command, info_name=path[-1], parent=parent, **command.context_settings)
    subcommands: list[Subcommand] = []
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                subcommands.append(((*path, name), sub))
    yield path, command, ctx, subcommands
    for sub_path, sub in subcommands:
        yield from _walk(sub, sub_path, ctx)


def _root_sections() -> list[str]:
    lines = [".SH ENVIRONMENT"]
    for name, meaning in ENVIRONMENT:
        lines += [".TP", f"\\fB{_roff(name)}\\fR", _roff(meaning)]
    lines += [
        ".SH FILES",
        ".TP",
        "\\fI$XDG_CONFIG_HOME/rmq/rmq.toml\\fR, \\fI~/.config/rmq/rmq.toml\\fR",
        _roff("The profile file (see rmq-profile(1)); RMQ_CONFIG overrides its path."),
        ".SH EXIT STATUS",
    ]
    for code, meaning in EXIT_STATUSES:
        lines += [".TP", f"\\fB{code}\\fR", _roff(meaning)]
    return lines


def _paragraphs(help_text: str) -> list[str]:
    """Help text as roff paragraphs; click's \\b marks a paragraph that must not be refilled."""
    lines: list[str] = []
    for paragraph in help_text.partition("\f")[0].strip().split("\n\n"):
        if paragraph.startswith("\b\n"):
            lines += [".PP", ".nf", *(_roff(line) for line in paragraph[2:].splitlines()), ".fi"]
        else:
            lines += [".PP", _roff(" ".join(line.strip() for line in paragraph.splitlines()))]
    return lines


def _roff(text: str) -> str:
    escaped = text.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + escaped if escaped.startswith((".", "'")) else escaped


def _page_name(path: CommandPath) -> str:
    return "-".join(path)


def _existing(base: Path) -> list[str]:
    """Generated-looking files on disk: completions/rmq.* and man/rmq*.1."""
    found = list((base / COMPLETIONS_DIR).glob(f"{PROG_NAME}.*"))
    found += (base / MAN_DIR).glob(f"{PROG_NAME}*.1")
    return sorted(str(file.relative_to(base)) for file in found)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rmq.cli.docgen", description="Generate completions/ and man/."
    )
    parser.add_argument("--check", action="store_true", help="only report stale files")
    parser.add_argument(
        "--out", type=Path, default=SOURCE_ROOT, help="directory holding completions/ and man/"
    )
    args = parser.parse_args(argv)
    files = generate()
    if args.check:
        stale = stale_files(files, args.out)
        if stale:
            print(f"stale generated files: {', '.join(stale)}; {REGENERATE}", file=sys.stderr)
            return EXIT_FAILURE
        return EXIT_OK
    write(files, args.out)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
