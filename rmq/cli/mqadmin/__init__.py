"""`rmq mqadmin`: Apache RocketMQ 4.9.8's mqadmin commands, names, options and output.

This module is what `rmq --help` loads: the click command only.  It hands every argument,
untouched, to `rmq.cli.mqadmin.dispatch`, which imports the command modules when it runs;
only `rmq mqadmin --help` (which mqadmin itself does not know) is answered here, by click.
"""

from __future__ import annotations

import click


@click.command(
    "mqadmin",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    add_help_option=False,
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def command(ctx: click.Context, args: tuple[str, ...]) -> int:
    """Apache mqadmin 4.9.8's commands, options and output: 'rmq mqadmin' lists the commands,
    'rmq mqadmin help CMD' or 'rmq mqadmin CMD -h' shows a command's options, and
    'rmq mqadmin CMD -n NAMESRV ...' runs it as 'sh mqadmin CMD ...' would (NAMESRV_ADDR when
    -n is not given).  Unlike mqadmin, a failed or unknown command exits 1.
    """
    if list(args) == ["--help"]:
        click.echo(ctx.get_help())
        return 0
    from rmq.cli.mqadmin.dispatch import main

    return main(list(args))
