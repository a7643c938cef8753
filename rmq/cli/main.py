"""The `rmq` entry point: root command, global options, command registry and error wrapper.

`rmq` is one typer app whose commands live in their own modules under `rmq/cli/`.  The root
knows them only by name through `COMMANDS`, which maps a command name to "module:attribute";
a module is imported the first time its command is looked up, so `rmq profile list` never
imports the broker and `rmq --help` imports no command module (its list comes from
`SUMMARIES`).

Adding a command module
-----------------------
1. Write `rmq/cli/<name>.py` with a module-level `app = command_app(help="...")` and its
   commands.  A module with exactly one command and no callback becomes that command
   (`rmq namesrv -c namesrv.conf`); one with several becomes a group (`rmq topic list`).
   Import only typer, click and light `rmq.cli` helpers at module level; servers, clients,
   the store, asyncio, pyspark, rich, orjson and yaml are imported inside the command
   functions (a test renders every command's `--help` and fails if they were loaded).
   Reuse `rmq.cli.settings.NamesrvOption` / `resolve_namesrv` and
   `rmq.cli.output.OutputOption` / `render`, and raise `rmq.cli.errors.RmqError`.
   A command that ends normally exits 0, or with the int it returns (a server's exit
   code); `ctx.find_object(CliState).debug` tells whether `--debug` is on.
2. Register it with one line in `COMMANDS`, in the order it should appear in `rmq --help`:

       "namesrv": "rmq.cli.namesrv:app",

   and its help's first sentence in `SUMMARIES` (a test says when it differs).  A group
   whose commands are too many for one module keeps the rest in modules of their own, each
   with its own `app = command_app()`, listed under the group's name in `VERBS`: their
   commands join the group's, in that order, when the group is loaded.  A command module
   never imports another to register it.
3. Run `python -m rmq.cli.docgen` to regenerate completions/ and man/ (a test fails while
   they are stale).

Global options, taken before the command: `--debug` (or RMQ_DEBUG=1), `--profile NAME`,
`--version`, `-h/--help`.  Help is rendered by click without rich: rich's help renderer
costs about 0.1 s of imports and `rmq --help` must stay under 0.2 s.  `command_app` gives
every app the same settings (plain help, no typer-specific completion options, help when
called without a command).

`run` executes one command line and returns the exit code: it answers shell completion
requests (`_RMQ_COMPLETE`, see `rmq.cli.completion`) before anything else, runs the root
command with `standalone_mode=False` and hands whatever escapes to `rmq.cli.errors.report`.
`main`, the console script, exits with that code.  `root_command()` is the click group
itself, for tools that walk or dispatch into the tree (docgen, the inspect REPL).
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import click
import typer

from rmq import __version__
from rmq.cli.errors import (
    EXIT_FAILURE,
    EXIT_OK,
    PROG_NAME,
    configure_logging,
    debug_from_env,
    report,
)

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem

COMPLETE_VAR = "_RMQ_COMPLETE"

COMMANDS: dict[str, str] = {
    "namesrv": "rmq.cli.namesrv:app",
    "broker": "rmq.cli.broker:app",
    "standalone": "rmq.cli.standalone:app",
    "produce": "rmq.cli.produce:app",
    "consume": "rmq.cli.consume:app",
    "request": "rmq.cli.request:app",
    "reply": "rmq.cli.reply:app",
    "bench": "rmq.cli.bench:app",
    "topic": "rmq.cli.topic:app",
    "cluster": "rmq.cli.cluster:app",
    "group": "rmq.cli.group:app",
    "producer": "rmq.cli.producer:app",
    "monitor": "rmq.cli.monitor:app",
    "exporter": "rmq.cli.exporter:app",
    "console": "rmq.cli.console:app",
    "message": "rmq.cli.message:app",
    "broker-config": "rmq.cli.config_cmds:broker_config_app",
    "namesrv-config": "rmq.cli.config_cmds:namesrv_config_app",
    "kv": "rmq.cli.config_cmds:kv_app",
    "acl": "rmq.cli.acl:app",
    "mqadmin": "rmq.cli.mqadmin:command",
    "inspect": "rmq.cli.inspect.commands:app",
    "spark-export": "rmq.cli.spark_export:app",
    "profile": "rmq.cli.profile:app",
    "completion": "rmq.cli.completion:app",
}

VERBS: dict[str, tuple[str, ...]] = {
    "topic": ("rmq.cli.topic_verbs:app",),
    "cluster": (
        "rmq.cli.cluster_up:app",
        "rmq.cli.cluster_verbs:app",
        "rmq.cli.cluster_leader:app",
    ),
    "group": ("rmq.cli.group_offsets:app",),
}
"""The groups whose commands are spread over more modules: the commands of these apps join
the group's own, in this order."""

# The first sentence of each command's help, as `rmq --help` lists it: the root's help shows
# these without importing the 23 command modules (that import alone costs about 0.1 s).  A
# test holds each to the sentence the loaded command gives (rmq.cli.helptext).
SUMMARIES: dict[str, str] = {
    "namesrv": "Start a name server (default port 9876); stop it with Ctrl-C or SIGTERM.",
    "broker": "Start a broker (default port 10911); stop it with Ctrl-C or SIGTERM.",
    "standalone": "Start a name server and a broker in one process; stop them with Ctrl-C or "
    "SIGTERM.",
    "produce": "Send the lines of stdin to TOPIC: NDJSON message records or plain lines.",
    "consume": "Print the messages of TOPIC: NDJSON message records or a --format template.",
    "request": "Send requests to TOPIC and print each reply as a message record (NDJSON).",
    "reply": "Answer each request of TOPIC with CMD's stdout (CMD gets the request record on "
    "stdin).",
    "bench": "Load generators with RocketMQ's benchmark columns.",
    "topic": "Create, update, delete, list and inspect topics.",
    "cluster": "Inspect clusters and their brokers.",
    "group": "Consumer groups: members, lag and offsets.",
    "producer": "The producers connected to the brokers.",
    "monitor": "Print every consumer group's lag and members, round after round.",
    "exporter": "Serve the cluster's metrics to Prometheus with the RocketMQ exporter's names "
    "and labels.",
    "console": "Serve a web console to look at the cluster: brokers, topics, groups, messages.",
    "message": "Look messages up, resend them, probe sends.",
    "broker-config": "Read and change broker configuration.",
    "namesrv-config": "Read and change name server configuration.",
    "kv": "List, set and delete the name servers' KV config.",
    "acl": "Manage the brokers' plain ACL: accounts and white addresses.",
    "mqadmin": "Apache mqadmin 4.9.8's commands, options and output: 'rmq mqadmin' lists the "
    "commands, 'rmq mqadmin help CMD' or 'rmq mqadmin CMD -h' shows a command's options, and "
    "'rmq mqadmin CMD -n NAMESRV ...' runs it as 'sh mqadmin CMD ...' would (NAMESRV_ADDR when "
    "-n is not given).",
    "inspect": "Inspect a broker's store directory offline, read-only.",
    "spark-export": "Export messages to Parquet, JSON, CSV or ORC files with Spark.",
    "profile": "Manage profiles: named connection settings in the profile file.",
    "completion": "Print the completion script for SHELL: bash, zsh or fish.",
}


def command_app(**settings: Any) -> typer.Typer:
    """A typer app configured like every other `rmq` app; `settings` go to `typer.Typer`."""
    defaults: dict[str, Any] = {
        "rich_markup_mode": None,
        "add_completion": False,
        "pretty_exceptions_enable": False,
        "no_args_is_help": True,
    }
    return typer.Typer(**{**defaults, **settings})


@dataclass
class CliState:
    """State of one command line, shared between `run` and the root callback."""

    debug: bool = False


app = command_app(
    name=PROG_NAME,
    help="Apache RocketMQ 4.x as one command: name server, broker, clients, admin and "
    "store tools.\n\nRun 'rmq COMMAND --help' for the options of a command.",
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"{PROG_NAME} {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    debug: Annotated[
        bool,
        typer.Option("--debug", help="Print tracebacks and DEBUG logs on stderr (RMQ_DEBUG=1)."),
    ] = False,
    profile: Annotated[
        str | None,
        typer.Option(
            "--profile",
            metavar="NAME",
            help="Profile to use from the profile file. Default: $RMQ_PROFILE, else 'current'.",
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Apply the global options; `--profile` is read from this context by rmq.cli.settings."""
    state = ctx.ensure_object(CliState)
    state.debug = state.debug or debug or debug_from_env()
    configure_logging(state.debug)


class _LazyCommands(MutableMapping[str, click.Command]):
    """The root group's commands: registered modules are imported on first lookup."""

    def __init__(self, registry: Mapping[str, str]) -> None:
        self._registry = dict(registry)
        self._loaded: dict[str, click.Command] = {}

    def __getitem__(self, name: str) -> click.Command:
        if name not in self._loaded:
            self._loaded[name] = load_command(name, self._registry[name])
        return self._loaded[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        if name not in self:
            raise KeyError(name)
        self._registry.pop(name, None)
        self._loaded.pop(name, None)

    def __contains__(self, name: object) -> bool:
        return name in self._registry or name in self._loaded

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*self._registry, *self._loaded]))

    def __len__(self) -> int:
        return len(dict.fromkeys([*self._registry, *self._loaded]))


def _import_command(target: str) -> click.Command:
    """Import "module:attribute", a typer app or a click command, as a click command."""
    module_name, _, attribute = target.partition(":")
    obj = getattr(import_module(module_name), attribute)
    command = typer.main.get_command(obj) if isinstance(obj, typer.Typer) else obj
    if not isinstance(command, click.Command):
        raise TypeError(f"{target} is neither a typer app nor a click command")
    return command


def load_command(name: str, target: str) -> click.Command:
    """Import "module:attribute" (a typer app or a click command) as the command `name`,
    with the commands of its `VERBS` modules added when it is a group."""
    command = _import_command(target)
    for verbs in VERBS.get(name, ()):
        assert isinstance(command, click.Group), f"{target} has verbs, so it is a group"
        more = _import_command(verbs)
        for verb in more.commands.values() if isinstance(more, click.Group) else [more]:
            command.add_command(verb)
    command.name = name
    from rmq.cli.helptext import full_short_help

    full_short_help(command)  # command lists show whole first sentences, not "..."
    from rmq.cli.credentials import add_credential_options

    add_credential_options(command)  # --access-key / --secret-key beside -n/--namesrv
    from rmq.cli.tlsoptions import add_tls_options

    add_tls_options(command)  # --tls / --tls-ca beside -n/--namesrv
    return command


@functools.cache
def root_command() -> click.Group:
    """The `rmq` click group with every registered command (loaded on demand)."""
    group = typer.main.get_command(app)
    assert isinstance(group, click.Group), "the root app has a callback, so it is a group"
    group.commands = _LazyCommands(COMMANDS)
    group.format_commands = functools.partial(_format_summaries, group)  # type: ignore[method-assign]
    group.shell_complete = functools.partial(_complete_names, group)  # type: ignore[method-assign]
    return group


def _complete_names(
    group: click.Group, ctx: click.Context, incomplete: str
) -> list[CompletionItem]:
    """TAB after `rmq`: the command names with their `SUMMARIES` (click's own completion
    loads every command for its help, 0.2-0.5 s of imports), then the root's options."""
    from click.shell_completion import CompletionItem

    items = [
        CompletionItem(name, help=SUMMARIES.get(name) or group.commands[name].get_short_help_str())
        for name in group.commands  # keys only, as for --help
        if name.startswith(incomplete)
    ]
    return items + click.Command.shell_complete(group, ctx, incomplete)


def _format_summaries(
    group: click.Group, ctx: click.Context, formatter: click.HelpFormatter
) -> None:
    """The root's "Commands:" section from `SUMMARIES` (a command missing there is loaded)."""
    rows = [
        (name, SUMMARIES.get(name) or group.commands[name].get_short_help_str(10**6))
        for name in group.commands  # keys only: list_commands would load every command
    ]
    if rows:
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def run(args: Sequence[str] | None = None) -> int:
    """Run one `rmq` command line (default: sys.argv) and return its exit code."""
    command = root_command()
    instruction = os.environ.get(COMPLETE_VAR)
    if instruction:
        from rmq.cli.completion import complete

        return complete(command, instruction)
    state = CliState(debug=debug_from_env())
    argv = list(sys.argv[1:] if args is None else args)
    try:
        result = command.main(argv, PROG_NAME, standalone_mode=False, obj=state)
    except (Exception, KeyboardInterrupt) as exc:
        return report(exc, debug=state.debug)
    return result if type(result) is int else EXIT_OK


def main() -> NoReturn:
    """Console script `rmq` and `python -m rmq`."""
    code = run()
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = code or EXIT_FAILURE
    sys.exit(code)
