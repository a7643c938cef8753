"""The root command: global options, registry, lazy loading and the import budget of --help."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import textwrap

import click

from rmq import __version__
from rmq.cli.main import COMMANDS, SUMMARIES, VERBS, root_command
from tests.unit.cli.conftest import RunRmq

# Modules that must never be imported just to print help or answer a completion request.
HEAVY_MODULES = (
    "rmq.server",
    "rmq.store",
    "rmq.remoting",
    "rmq.client",
    "rmq.spark",
    "asyncio",
    "pyspark",
    "rich",
    "yaml",
    "orjson",
)


def _python(script: str, env: dict[str, str]) -> str:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return result.stdout


def test_help_version_and_completion_import_no_heavy_module(cli_env: dict[str, str]) -> None:
    script = """
        import contextlib, io, json, os, sys
        from rmq.cli.main import COMMANDS, run
        with contextlib.redirect_stdout(io.StringIO()):
            codes = [run(["--help"]), run(["--version"])]
            codes += [run([name, "--help"]) for name in COMMANDS]
            os.environ.update(_RMQ_COMPLETE="bash_complete", COMP_WORDS="rmq pro", COMP_CWORD="1")
            codes.append(run([]))
        print(json.dumps({"codes": codes, "modules": sorted(sys.modules)}))
    """
    report = json.loads(_python(script, cli_env))
    assert report["codes"] == [0] * (3 + len(COMMANDS))
    heavy = [
        name
        for name in report["modules"]
        if any(name == h or name.startswith(h + ".") for h in HEAVY_MODULES)
    ]
    assert heavy == []


def test_mqadmin_help_and_usage_import_no_client(cli_env: dict[str, str]) -> None:
    """`rmq mqadmin` with no command, `help <cmd>`, `<cmd> -h` and a parse error only print
    text: the command modules import the client inside the commands, and none of it loads."""
    script = """
        import contextlib, io, json, sys
        from rmq.cli.mqadmin.dispatch import main
        with contextlib.redirect_stdout(io.StringIO()):
            codes = [main([]), main(["help", "topicList"]), main(["consumerProgress", "-h"])]
            codes.append(main(["resetOffsetByTime", "--noSuchOption"]))
        heavy = ("rmq.client", "rmq.remoting", "rmq.store", "asyncio")
        loaded = [m for m in sys.modules if m.partition(".")[0] in heavy or m.startswith(heavy)]
        print(json.dumps({"codes": codes, "loaded": loaded}))
    """
    report = json.loads(_python(script, cli_env))
    assert report == {"codes": [0, 0, 0, 1], "loaded": []}


def test_a_cluster_command_imports_its_client_without_server_config_or_rich(
    cli_env: dict[str, str],
) -> None:
    """A command that talks to a cluster loads the client, not the servers' config objects
    (a few hundred settings made into dataclasses) nor rich (a table off a terminal is laid
    out without it)."""
    script = """
        import contextlib, io, json, sys
        from rmq.cli.main import run
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            with contextlib.suppress(SystemExit):
                run(["topic", "list", "-n", "127.0.0.1:1", "-o", "table"])
        unwanted = ("rmq.common.configobjects", "rmq.common.configstore", "rich")
        print(json.dumps({"client": "rmq.client.admin" in sys.modules,
                          "unwanted": [m for m in unwanted if m in sys.modules]}))
    """
    assert json.loads(_python(script, cli_env)) == {"client": True, "unwanted": []}


def test_command_modules_are_imported_only_when_used(cli_env: dict[str, str]) -> None:
    script = """
        import contextlib, io, sys
        from rmq.cli.main import run
        with contextlib.redirect_stdout(io.StringIO()):
            run(["completion", "bash"])
        print("rmq.cli.profile" in sys.modules, "rmq.cli.completion" in sys.modules)
    """
    assert _python(script, cli_env).split() == ["False", "True"]


def test_root_help_imports_no_command_module(cli_env: dict[str, str]) -> None:
    script = """
        import contextlib, io, json, sys
        from rmq.cli.main import COMMANDS, run
        with contextlib.redirect_stdout(io.StringIO()):
            run(["--help"])
        modules = [target.partition(":")[0] for target in COMMANDS.values()]
        print(json.dumps(sorted(m for m in modules if m in sys.modules)))
    """
    assert json.loads(_python(script, cli_env)) == []


def test_completing_command_names_imports_no_command_module(cli_env: dict[str, str]) -> None:
    """TAB after `rmq` answers from COMMANDS and SUMMARIES (docs/benchmarks.md has its
    cost): no command module is imported, for any prefix or shell."""
    script = """
        import contextlib, io, json, os, sys
        from rmq.cli.main import COMMANDS, run
        answers = []
        for shell, words, cword in [
            ("bash", "rmq ", "1"), ("zsh", "rmq pro", "1"), ("fish", "rmq --debug t", "t")
        ]:
            out = io.StringIO()
            os.environ.update(_RMQ_COMPLETE=f"{shell}_complete", COMP_WORDS=words, COMP_CWORD=cword)
            with contextlib.redirect_stdout(out):
                answers.append(run([]))
            answers.append(out.getvalue())
        modules = [target.partition(":")[0] for target in COMMANDS.values()]
        loaded = sorted(m for m in modules if m in sys.modules)
        print(json.dumps({"answers": answers, "loaded": loaded}))
    """
    report = json.loads(_python(script, cli_env))
    assert report["loaded"] == ["rmq.cli.completion"]  # what answers the request
    bash, every, zsh, profile, fish, starting_with_t = report["answers"]
    assert (bash, zsh, fish) == (0, 0, 0)
    assert every.split() == [f"plain,{name}" for name in COMMANDS]
    lines = profile.split("\n")
    triples = [tuple(lines[i : i + 3]) for i in range(0, len(lines) - 1, 3)]
    assert triples == [("plain", name, SUMMARIES[name]) for name in COMMANDS if name[:3] == "pro"]
    assert [line.split("\t")[0] for line in starting_with_t.splitlines()] == ["plain,topic"]


def test_a_group_module_does_not_import_its_verbs_modules(cli_env: dict[str, str]) -> None:
    """The verbs join their group in rmq.cli.main (VERBS), not by an import in the group's
    module: importing the group's module alone loads none of them."""
    script = """
        import importlib, json, sys
        from rmq.cli.main import COMMANDS, VERBS
        loaded = {}
        for name, targets in VERBS.items():
            importlib.import_module(COMMANDS[name].partition(":")[0])
            modules = [target.partition(":")[0] for target in targets]
            loaded[name] = [module for module in modules if module in sys.modules]
        print(json.dumps(loaded))
    """
    assert json.loads(_python(script, cli_env)) == {name: [] for name in VERBS}


def test_the_verbs_of_a_group_are_its_commands_after_its_own() -> None:
    group = root_command().commands["cluster"]
    assert isinstance(group, click.Group)
    names = list(group.commands)
    assert names[:3] == ["list", "up", "broker-status"]  # cluster.py, cluster_up, cluster_verbs
    assert names[-2:] == ["write-perm", "leader"]  # sub-groups of cluster_verbs, cluster_leader
    for name in VERBS:
        command = root_command().commands[name]
        assert isinstance(command, click.Group)
        for target in VERBS[name]:
            module, _, attribute = target.partition(":")
            verbs = importlib.import_module(module)
            verbs_app = getattr(verbs, attribute)
            verb_names = {info.name for info in verbs_app.registered_commands} | {
                info.name for info in verbs_app.registered_groups
            }
            assert verb_names and verb_names <= set(command.commands)


def test_root_summaries_are_the_commands_first_sentences() -> None:
    group = root_command()
    assert list(SUMMARIES) == list(COMMANDS)
    loaded = {name: group.commands[name].get_short_help_str(10**6) for name in COMMANDS}
    assert loaded == SUMMARIES


def test_version(rmq: RunRmq) -> None:
    result = rmq("--version")
    assert (result.returncode, result.stdout, result.stderr) == (0, f"rmq {__version__}\n", "")


def test_help_lists_registered_commands_only(rmq: RunRmq) -> None:
    for flag in ("--help", "-h"):
        result = rmq(flag)
        assert result.returncode == 0
        section = result.stdout.split("Commands:\n", 1)[1]
        names = [line.split()[0] for line in section.splitlines() if line[2:3] != " "]
        assert names == list(COMMANDS)  # long descriptions wrap onto indented lines
        for option in ("--debug", "--profile NAME", "--version", "-h, --help"):
            assert option in result.stdout


def test_every_command_has_working_help(rmq: RunRmq) -> None:
    for name in COMMANDS:
        result = rmq(name, "--help")
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith(f"Usage: rmq {name} ")


def test_no_command_prints_help_on_stderr_and_exits_2(rmq: RunRmq) -> None:
    result = rmq()
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith("Usage: rmq [OPTIONS] COMMAND")


def test_unknown_command_is_one_line_usage_error(rmq: RunRmq) -> None:
    result = rmq("nosuch")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == "rmq: error: No such command 'nosuch'; see 'rmq --help'\n"


def test_typo_gets_one_suggestion(rmq: RunRmq) -> None:
    result = rmq("profil")
    assert result.returncode == 2
    assert result.stderr == "rmq: error: No such command 'profil'; did you mean 'profile'?\n"


def test_every_app_renders_plain_help_without_typer_completion_options() -> None:
    """Command modules must build their apps with command_app(): plain, fast help."""

    def walk(command: click.Command, ctx: click.Context) -> list[click.Command]:
        found = [command]
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None
                found += walk(sub, click.Context(sub, info_name=name, parent=ctx))
        return found

    root = root_command()
    commands = walk(root, click.Context(root, info_name="rmq"))
    assert len(commands) > len(COMMANDS)
    for command in commands:
        assert getattr(command, "rich_markup_mode", None) is None, command.name
        names = {param.name for param in command.params}
        assert not names & {"install_completion", "show_completion"}, command.name
