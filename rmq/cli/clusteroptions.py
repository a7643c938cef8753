"""Options every cluster command takes without declaring them.

A command talks to a cluster when it takes the shared `-n/--namesrv` option
(`rmq.cli.settings.NamesrvOption`, recognised by its help text).  `add_to_cluster_commands`
gives each such command, and each sub-command of a group, more options and wraps its callback
so that they are applied before it runs: the ACL credentials (`rmq.cli.credentials`) and TLS
(`rmq.cli.tlsoptions`) are added this way by `rmq.cli.main.load_command`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import click

from rmq.cli.settings import NAMESRV_HELP

Callback = Callable[..., Any]


def add_to_cluster_commands(
    command: click.Command,
    names: Sequence[str],
    options: Callable[[], list[click.Option]],
    wrap: Callable[[Callback], Callback],
) -> None:
    """Give `command` (every sub-command of a group, and a group whose own callback takes
    -n, as `rmq console` does) the `options()`, whose parameter
    `names` it must not have already, and make its callback `wrap(callback)`, when it takes
    the shared -n/--namesrv option."""
    if isinstance(command, click.Group):  # its commands, and its own callback's options
        for sub in command.commands.values():
            add_to_cluster_commands(sub, names, options, wrap)
    taken = {param.name for param in command.params}
    takes_namesrv = any(
        isinstance(param, click.Option) and param.help == NAMESRV_HELP for param in command.params
    )
    if not takes_namesrv or taken.intersection(names) or command.callback is None:
        return
    command.params.extend(options())
    command.callback = wrap(command.callback)
