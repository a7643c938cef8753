"""The `rmq inspect` command: the group of `rmq.cli.inspect.group` with every command.

Each module below registers its commands on the group's `app` when imported, in the order
`rmq inspect --help` lists them: what a store holds (`overview`), its records (`records`),
lookups and exports (`lookups`), whole-commitlog scans (`scans`) and its config files
(`config`).  The root command loads `app` from here.
"""

from __future__ import annotations

from rmq.cli.inspect import config, lookups, overview, records, scans
from rmq.cli.inspect.group import app

COMMAND_MODULES = (overview, records, lookups, scans, config)
"""The modules whose commands make up the group, in registration order."""

__all__ = ["COMMAND_MODULES", "app"]
