"""`rmq mqadmin`: Apache RocketMQ 4.9.8's mqadmin commands, names, options and output.

This module is what `rmq --help` loads: the click command only.  It hands every argument,
untouched, to `rmq.cli.mqadmin.dispatch`, which imports the command modules when it runs.
"""

from __future__ import annotations

import click


@click.command(
    "mqadmin",
    context_settings={
        "ignore_unknown_options": True,
        "allow_extra_args": True,
        "help_option_names": [],
    },
    add_help_option=False,
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def command(args: tuple[str, ...]) -> int:
    """Apache mqadmin 4.9.8's commands: 'rmq mqadmin' lists them, 'rmq mqadmin help CMD'."""
    from rmq.cli.mqadmin.dispatch import main

    return main(list(args))
