"""`rmq mqadmin ARGS...`: mqadmin 4.9.8's `MQAdminStartup.main0`, command for command.

* no arguments: the command list (`The most commonly used mqadmin commands are:`), only
  the commands rmq registers, in mqadmin's registration order;
* `help <cmd>`: Commons-CLI's usage of the command; an unknown name prints
  `The sub command <x> not exist.`;
* `<cmd> ARGS...` (name or alias, any case): parse ARGS as PosixParser does (a parse error
  prints the usage and exits 1; `-h` prints it and exits 0), then run the command.

Requests are signed with the ACL keys of `$ROCKETMQ_HOME/conf/tools.yml` when it has them
(`toolsacl`).  The one deliberate difference from mqadmin: an unknown command and a failed
command exit 1 (mqadmin exits 0 after printing `The sub command ... not exist.` or a stack
trace).  A failed command prints, on stderr, the first line of the trace mqadmin prints:
`org.apache.rocketmq.tools.command.SubCommandException: <message>`, or, where rmq knows it
(a broker refusing updateBrokerConfig), mqadmin's exception lines without the stack frames.  A
closed output (`| head`) ends the command quietly with exit 1, as every rmq command.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Sequence
from importlib import import_module
from typing import TextIO, cast

from rmq.cli.mqadmin import commonscli
from rmq.cli.mqadmin.javafmt import jprintf
from rmq.cli.mqadmin.registry import (
    SUB_COMMAND_EXCEPTION,
    Command,
    Invocation,
    MqadminFailure,
    OutputClosed,
    commands,
)
from rmq.cli.mqadmin.toolsacl import apply_mqadmin_credentials
from rmq.cli.tlsoptions import apply_client_tls

MODULES = (
    "cmd_cluster",
    "cmd_topic",
    "cmd_export",
    "cmd_consumer",
    "cmd_offset",
    "cmd_message",
    "cmd_message_send",
    "cmd_trace",
    "cmd_acl",
)
"""The modules whose commands `load` registers (each command carries its place in mqadmin's
list, so this order is only the import order)."""


def load() -> list[Command]:
    """Import the command modules (registering their commands); the registered commands."""
    for name in MODULES:
        import_module(f"rmq.cli.mqadmin.{name}")
    return commands()


def find(name: str) -> Command | None:
    """MQAdminStartup.findSubCommand: name or alias, case-insensitively, first match."""
    wanted = name.lower()
    for command in load():
        if command.name.lower() == wanted or (command.alias or "").lower() == wanted:
            return command
    return None


def listing(out: TextIO) -> None:
    jprintf(out, "The most commonly used mqadmin commands are:%n")
    for command in load():
        jprintf(out, "   %-20s %s%n", command.name, command.description)
    jprintf(out, "%nSee 'mqadmin help <command>' for more information on a specific command.%n")


def usage(command: Command) -> str:
    return commonscli.usage(f"mqadmin {command.name}", commonscli.Options.of(command.options))


class _Output(io.TextIOBase):
    """The command's output: a write to a closed pipe raises OutputClosed, which no
    command's `failing` turns into a failure."""

    def __init__(self, target: TextIO) -> None:
        super().__init__()
        self.target = target

    def write(self, text: str) -> int:
        try:
            return self.target.write(text)
        except BrokenPipeError:
            raise OutputClosed from None

    def flush(self) -> None:
        try:
            self.target.flush()
        except BrokenPipeError:
            raise OutputClosed from None


def main(args: Sequence[str], out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run one mqadmin command line; the exit code.  When the reader of the output goes
    away the command stops quietly and exits 1, as `rmq consume | head` does."""
    guarded = cast(TextIO, _Output(out if out is not None else sys.stdout))
    try:
        return _main(args, guarded, err if err is not None else sys.stderr)
    except OutputClosed:
        if out is None:  # nothing more reaches the closed pipe, the final flush included
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def _main(args: Sequence[str], out: TextIO, err: TextIO) -> int:
    if not args:
        listing(out)
        return 0
    if len(args) == 2 and args[0] == "help":
        command = find(args[1])
        if command is None:
            jprintf(out, "The sub command %s not exist.%n", args[1])
            return 1
        out.write(usage(command))
        return 0
    command = find(args[0])
    if command is None:
        jprintf(out, "The sub command %s not exist.%n", args[0])
        return 1
    options = commonscli.Options.of(command.options)
    try:
        values = commonscli.parse(options, args[1:])
    except commonscli.ParseError:
        out.write(usage(command))
        return 1
    if "h" in values:
        out.write(usage(command))
        return 0
    apply_mqadmin_credentials()  # $ROCKETMQ_HOME/conf/tools.yml, as MQAdminStartup reads it
    apply_client_tls(None, None)  # RMQ_TLS / RMQ_TLS_CA / profile (mqadmin: -Dtls.enable)
    import asyncio  # the texts above stay quick: no event loop, no client imported

    inv = Invocation(values=values, out=out, namesrv=values.get("n"), usage=usage(command))
    try:
        asyncio.run(_execute(command, inv))
    except MqadminFailure as failure:
        out.flush()
        printed = failure.printed
        err.write(
            printed if printed is not None else f"{SUB_COMMAND_EXCEPTION}: {failure.message}\n"
        )
        return 1
    return 0


async def _execute(command: Command, inv: Invocation) -> None:
    try:
        await command.run(inv)
    finally:
        await inv.close()
