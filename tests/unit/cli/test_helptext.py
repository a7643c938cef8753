"""Command lists in `--help` show each command's whole first sentence (rmq.cli.helptext)."""

from __future__ import annotations

import re

import pytest

from rmq.cli.helptext import first_sentence
from rmq.cli.main import COMMANDS
from tests.unit.cli.conftest import RunRmq


def listed(help_text: str) -> dict[str, str]:
    """The Commands section of a help text: name -> description, wrapped lines joined."""
    section = help_text.split("\nCommands:\n", 1)[1]
    rows: dict[str, str] = {}
    name = ""
    for line in section.splitlines():
        found = re.match(r"^  (\S+)\s+(.*)$", line)
        if found:
            name = found.group(1)
            rows[name] = found.group(2)
        elif line.strip() and name:
            rows[name] += " " + line.strip()
    return rows


def test_the_root_help_lists_every_command_with_its_whole_first_sentence(rmq: RunRmq) -> None:
    from rmq.cli.main import root_command

    result = rmq("--help", env={"COLUMNS": "80"})
    assert result.returncode == 0, result.stderr
    rows = listed(result.stdout)
    assert list(rows) == list(COMMANDS)
    group = root_command()
    for name, text in rows.items():
        assert not text.endswith("..."), (name, text)
        command = group.commands[name]
        assert command.help is not None
        assert text == first_sentence(command.help), name
    assert rows["namesrv"].endswith("stop it with Ctrl-C or SIGTERM.")


def test_subcommand_lists_are_whole_too(rmq: RunRmq) -> None:
    rows = listed(rmq("topic", "--help", env={"COLUMNS": "80"}).stdout)
    assert (
        rows["create"]
        == "Create a topic; fails when it exists (use 'rmq topic update' to change one)."
    )
    assert not [text for text in rows.values() if text.endswith("...")]


@pytest.mark.parametrize(
    ("text", "sentence"),
    [
        ("Start it (port 9876); stop it.\n\nMore.", "Start it (port 9876); stop it."),
        ("Two lines\nof one sentence. And another.", "Two lines of one sentence."),
        ("Version 4.9.8 is kept. Next.", "Version 4.9.8 is kept."),
        ("No full stop", "No full stop"),
        ("\b\nplain block. x", "plain block."),
    ],
)
def test_first_sentence(text: str, sentence: str) -> None:
    assert first_sentence(text) == sentence
