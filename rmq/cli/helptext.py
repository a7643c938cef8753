"""Command lists in `--help` that say in full what each command does.

click lists a group's commands with a short help cut to the width left on the line ("Start
a name server (default port 9876); stop it with..."); `full_short_help` gives every command in
a tree (that has none of its own) the whole first sentence of its help instead, which click
then wraps under the command's name.  `rmq.cli.main.load_command` applies it to each command
it loads, so `rmq --help`, `rmq topic --help` and the man pages' NAME lines and COMMANDS
sections read the same sentence.
"""

from __future__ import annotations

import re

import click

_SENTENCE_END = re.compile(r"\.(?=\s|$)")


def first_sentence(text: str) -> str:
    """The first sentence of the first paragraph of `text`, joined onto one line."""
    paragraph = text.partition("\f")[0].strip().split("\n\n")[0].removeprefix("\b\n")
    line = " ".join(paragraph.split())
    end = _SENTENCE_END.search(line)
    return line if end is None else line[: end.end()]


def full_short_help(command: click.Command) -> None:
    """Set the short help of `command` and of every command under it, where not set."""
    if command.short_help is None and command.help:
        command.short_help = first_sentence(command.help)
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            full_short_help(sub)
