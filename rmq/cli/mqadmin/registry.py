"""The mqadmin sub-command registry: what each command accepts and the code that runs it.

A command module (`cmd_cluster`, `cmd_topic`, `cmd_consumer`, `cmd_message`) declares each
command with `subcommand`, giving its number in mqadmin 4.9.8's registration order (the
reference spec's §6.2), its name, its description and its options as Apache spells them:

    @subcommand(7, "topicRoute", "Examine topic route info",
                Opt("t", "topic", True, True, "topic name"))
    async def topic_route(inv: Invocation) -> None:
        async with inv.admin() as admin:
            ...
        jprintf(inv.out, "%s%n", text)

`Opt.group` names a required one-of group (Commons-CLI `OptionGroup` with `setRequired`):
the options sharing a group name form it.  The global options `-h/--help` and
`-n/--namesrvAddr` are added to every command by the dispatcher.  A command reports a failure
by raising `MqadminFailure` (`with failing("TopicRouteSubCommand"):` turns any error of a
block into one); the dispatcher prints it and exits 1.  A failure may carry the whole text
mqadmin prints for it (`printed`: its exception lines, without the stack frames), built with
`broker_exception` for a broker's refusal.

The command modules import the client, the remoting bodies and asyncio inside the commands
(and for annotations under TYPE_CHECKING): the command list, `help <cmd>`, `<cmd> -h` and a
parse error import none of them (`rmq mqadmin topicList -h`: 0.17 s of CPU instead of 0.67 s).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from rmq.client.admin import AdminClient
    from rmq.client.errors import MQBrokerError

SUB_COMMAND_EXCEPTION = "org.apache.rocketmq.tools.command.SubCommandException"
MQ_BROKER_EXCEPTION = "org.apache.rocketmq.client.exception.MQBrokerException"


class MqadminFailure(Exception):
    """A command failed: `message` is what mqadmin's SubCommandException says; `printed`,
    when given, is everything mqadmin prints for the failure instead."""

    def __init__(self, message: str, *, printed: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.printed = printed


def broker_exception(error: MQBrokerError) -> str:
    """The lines Java's client prints for a broker's refusal (`MQBrokerException`)."""
    from rmq.common.faq import attach_default_url

    broker = f" BROKER: {error.addr}" if error.addr is not None else ""
    message = f"CODE: {error.code}  DESC: {error.remark}{broker}"
    return f"{MQ_BROKER_EXCEPTION}: {attach_default_url(message)}\n"


class OutputClosed(Exception):
    """Whoever read the output went away (`rmq mqadmin ... | head`): the command stops
    quietly (`failing` lets it through)."""


@contextmanager
def failing(command_class: str, suffix: str = " command failed") -> Iterator[None]:
    """Any error of the block becomes mqadmin's `SubCommandException`: `<Class> command
    failed: <cause>` (`suffix` for the one command spelling it differently)."""
    try:
        yield
    except (MqadminFailure, OutputClosed):
        raise
    except Exception as exc:
        raise MqadminFailure(f"{command_class}{suffix}: {exc}") from exc


@dataclass(frozen=True)
class Opt:
    """One Commons-CLI option: short name, long name (as Apache spells it), whether it takes
    an argument, whether it is required, its description, and its required one-of group."""

    short: str
    long: str
    has_arg: bool
    required: bool
    description: str
    group: str | None = None


JAVA_BLANKS = "".join(chr(code) for code in range(33))
"""What Java's String.trim() removes: every character up to the space."""

Runner = Callable[["Invocation"], Awaitable[None]]

UNUSED_NAMESRV = "127.0.0.1:9876"
"""The name server list of a command that asks brokers only and was given none."""


@dataclass(frozen=True)
class Command:
    """A registered sub-command."""

    order: int
    name: str
    description: str
    options: tuple[Opt, ...]
    run: Runner
    alias: str | None = None


COMMANDS: dict[str, Command] = {}
"""Registered commands by name (see `commands()` for the registration order)."""


def subcommand(
    order: int, name: str, description: str, *options: Opt, alias: str | None = None
) -> Callable[[Runner], Runner]:
    """Register the decorated `async def run(inv)` as the mqadmin command `name`."""

    def register(run: Runner) -> Runner:
        if name in COMMANDS:
            raise ValueError(f"mqadmin command {name} registered twice")
        COMMANDS[name] = Command(order, name, description, tuple(options), run, alias)
        return run

    return register


def commands() -> list[Command]:
    """The registered commands in mqadmin's registration order."""
    return sorted(COMMANDS.values(), key=lambda command: command.order)


@dataclass
class Invocation:
    """One parsed command line: option values by short name, the name servers, the output."""

    values: dict[str, str | None]
    """Short name -> value (None for an option without argument) of every option given."""
    out: TextIO
    namesrv: str | None = None
    usage: str = ""
    """The command's Commons-CLI usage text (what `print_usage` prints)."""
    _admin: AdminClient | None = field(default=None, repr=False)

    def print_usage(self) -> None:
        """ServerUtil.printCommandLineHelp: what a command prints when its options say
        nothing to do."""
        self.out.write(self.usage)

    def value(self, short: str) -> str | None:
        """The option's value trimmed as the Java commands trim() it, or None when absent."""
        value = self.values.get(short)
        return None if value is None else value.strip(JAVA_BLANKS)

    def has(self, short: str) -> bool:
        """Whether the option was given."""
        return short in self.values

    @asynccontextmanager
    async def admin(self, *, namesrv_needed: bool = True) -> AsyncIterator[AdminClient]:
        """The AdminClient on the name servers (-n, else NAMESRV_ADDR), shared by the calls
        of one invocation and closed when the command ends.  A command that only asks
        brokers by address (`namesrv_needed=False`) runs without a name server, as mqadmin
        does: its client's list then holds `UNUSED_NAMESRV`, which no request goes to."""
        from rmq.client.admin import AdminClient

        if self._admin is None:
            addrs = self.namesrv or os.environ.get("NAMESRV_ADDR")
            if not addrs and namesrv_needed:
                raise MqadminFailure("No name server address, please set it")
            self._admin = AdminClient(addrs or UNUSED_NAMESRV)
        yield self._admin

    async def close(self) -> None:
        """Close the shared AdminClient, if one was opened."""
        if self._admin is not None:
            await self._admin.close()
            self._admin = None
