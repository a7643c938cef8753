"""The `rmq inspect` command: the group of `rmq.cli.inspect.group` with every command.

Each module of `COMMAND_MODULES` registers its commands on the group's `app` when imported,
and they are imported in that order, the order `rmq inspect --help` lists them: what a store
holds (`overview`), its records (`records`), lookups and exports (`lookups`),
whole-commitlog scans (`scans`), the reports of the broker's recoveries (`recovery`) and
its config files (`config`).  The root command loads
`app` from here.
"""

from __future__ import annotations

import importlib
from typing import Final

from rmq.cli.inspect.group import app

COMMAND_MODULES: Final = ("overview", "records", "lookups", "scans", "recovery", "config")
"""The modules under `rmq.cli.inspect` whose commands make up the group, in help order."""

for _module in COMMAND_MODULES:
    importlib.import_module(f"{__package__}.{_module}")

__all__ = ["COMMAND_MODULES", "app"]
