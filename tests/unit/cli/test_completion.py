"""`rmq completion SHELL` and the completion requests its scripts send back to rmq."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rmq.cli.docgen import SOURCE_ROOT
from rmq.cli.main import COMMANDS
from tests.terminal import Terminal
from tests.unit.cli.conftest import RunRmq


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_script_for_each_shell_matches_the_shipped_file(rmq: RunRmq, shell: str) -> None:
    result = rmq("completion", shell)
    assert result.returncode == 0
    assert "_RMQ_COMPLETE" in result.stdout
    assert f"{shell}_complete" in result.stdout
    assert result.stdout == (SOURCE_ROOT / "completions" / f"rmq.{shell}").read_text()


def test_unknown_shell_is_a_usage_error(rmq: RunRmq) -> None:
    result = rmq("completion", "tcsh")
    assert result.returncode == 2
    assert result.stderr.startswith("rmq: error: Invalid value for 'SHELL': 'tcsh'")


def complete(rmq: RunRmq, shell: str, words: str) -> list[str]:
    cword = str(len(words.split()) - (0 if words.endswith(" ") else 1))
    env = {"_RMQ_COMPLETE": f"{shell}_complete", "COMP_WORDS": words, "COMP_CWORD": cword}
    result = rmq(env=env)
    assert result.returncode == 0, result.stderr
    return result.stdout.split("\n")


def test_commands_options_and_choices_complete(rmq: RunRmq) -> None:
    assert complete(rmq, "bash", "rmq ") == [f"plain,{name}" for name in COMMANDS] + [""]
    assert complete(rmq, "bash", "rmq --ver") == ["plain,--version", ""]
    outputs = complete(rmq, "bash", "rmq profile list -o ")
    assert outputs == ["plain,table", "plain,wide", "plain,json", "plain,ndjson", "plain,yaml", ""]
    kind, value, description = complete(rmq, "zsh", "rmq prof")[:3]
    assert (kind, value) == ("plain", "profile")
    assert description.startswith("Manage profiles")


def test_unknown_completion_instruction_fails(rmq: RunRmq) -> None:
    result = rmq(env={"_RMQ_COMPLETE": "tcsh_complete"})
    assert (result.returncode, result.stdout) == (1, "")


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_bash_script_completes_in_bash(
    rmq: RunRmq, cli_env: dict[str, str], tmp_path: Path
) -> None:
    launcher = tmp_path / "bin" / "rmq"
    launcher.parent.mkdir()
    launcher.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m rmq "$@"\n')
    launcher.chmod(0o755)
    rmq("profile", "set", "prod", "-n", "h:1")
    script = rmq("completion", "bash").stdout
    session = (
        f"{script}\n"
        "COMP_WORDS=(rmq profile u); COMP_CWORD=2; _rmq_completion rmq\n"
        'printf "%s\\n" "${COMPREPLY[@]}"; COMPREPLY=()\n'
        "COMP_WORDS=(rmq profile use ''); COMP_CWORD=3; _rmq_completion rmq\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
        "complete -p rmq\n"
    )
    env = {**cli_env, "PATH": f"{launcher.parent}:{cli_env['PATH']}"}
    result = subprocess.run(
        ["bash", "--norc", "-c", session], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "use",
        "prod",
        "complete -o nosort -F _rmq_completion rmq",
    ]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_path_arguments_complete_file_names_in_an_interactive_bash(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    """TAB after `rmq inspect ./st` and `rmq broker -c ` completes names of the file system."""
    work = tmp_path / "work"
    (work / "store-a").mkdir(parents=True)
    (work / "broker.conf").write_text("brokerName=b\n")
    script = tmp_path / "rmq.bash"
    script.write_text((SOURCE_ROOT / "completions" / "rmq.bash").read_text())
    env = {
        **cli_env,
        "PATH": f"{Path(sys.executable).parent}:{cli_env['PATH']}",
        "PS1": "READY$ ",
        "INPUTRC": "/dev/null",
    }
    terminal = Terminal(["bash", "--norc", "--noprofile", "-i"], env, cwd=str(work))
    try:
        terminal.send(f"source {script}\n")
        terminal.expect(r"READY\$ ")
        terminal.send("rmq inspect ./st\t")
        terminal.expect(r"rmq inspect \./store-a/")
        terminal.send("\x15rmq broker -c bro\t")
        terminal.expect(r"rmq broker -c broker\.conf ")
        terminal.send("\x15exit\n")
    finally:
        terminal.finish()


def test_path_completion_answers_file_and_dir_types(rmq: RunRmq) -> None:
    assert complete(rmq, "bash", "rmq broker -c ") == ["file,", ""]
    assert complete(rmq, "bash", "rmq cluster up --dir ./x") == ["dir,./x", ""]
    assert complete(rmq, "zsh", "rmq spark-export --out o")[:2] == ["dir", "o"]
    # fish sends the words before the cursor and, in COMP_CWORD, the incomplete one
    env = {"_RMQ_COMPLETE": "fish_complete", "COMP_WORDS": "rmq inspect", "COMP_CWORD": "./st"}
    assert rmq(env=env).stdout == "file,./st\n"
