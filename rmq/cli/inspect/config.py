"""`rmq inspect STORE config` and `config-diff`: the `config/*.json` files as tables, and
their changes against the `.bak` or another store."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Final

import typer

from rmq.cli.errors import EXIT_USAGE, RmqError
from rmq.cli.inspect.group import (
    app,
    opened,
    render_table,
    warn,
)
from rmq.cli.inspect.views import (
    display_path,
    plain_data,
)
from rmq.cli.output import OutputOption, render, resolve_output

if TYPE_CHECKING:
    pass


class ConfigName(enum.StrEnum):
    TOPICS = "topics"
    GROUPS = "groups"
    OFFSETS = "offsets"
    DELAY = "delay"
    FILTERS = "filters"


_CONFIG_COLUMNS: Final[dict[ConfigName, tuple[tuple[str, ...], tuple[str, ...]]]] = {
    ConfigName.TOPICS: (
        ("topicName", "readQueueNums", "writeQueueNums", "permString", "storedQueues", "messages"),
        ("topicFilterType", "topicSysFlag", "order"),
    ),
    ConfigName.GROUPS: (
        ("groupName", "consumeEnable", "consumeBroadcastEnable", "retryQueueNums", "retryMaxTimes"),
        (
            "brokerId",
            "whichBrokerWhenConsumeSlowly",
            "consumeFromMinEnable",
            "notifyConsumerIdsChangedEnable",
        ),
    ),
    ConfigName.OFFSETS: (
        ("group", "topic", "queueId", "offset", "minOffset", "maxOffset", "lag"),
        (),
    ),
    ConfigName.DELAY: (("level", "delay", "queueId", "offset", "maxOffset", "pending"), ()),
    ConfigName.FILTERS: (
        ("topic", "group", "expressionType", "expression"),
        ("clientVersion", "bornTime", "deadTime", "dead"),
    ),
}


@app.command()
def config(
    ctx: typer.Context,
    name: Annotated[
        ConfigName,
        typer.Argument(metavar="[topics|groups|offsets|delay|filters]", show_default=False),
    ] = ConfigName.TOPICS,
    output: OutputOption = None,
) -> None:
    """Show a config/*.json file: topics (with stored queues and messages), subscription
    groups, consumer offsets (with each queue's range and the lag), delay offsets (with the
    messages still pending per level) or SQL92 filters."""
    from rmq.cli.inspect.configrows import ConfigView, config_rows

    fmt = resolve_output(output)
    with opened(ctx) as reader:
        path, rows = config_rows(reader, ConfigView(name.value))
        if path is not None and path.name.endswith(".bak"):
            warn(
                f"{display_path(path, reader.layout.root)}: the main file is missing, empty or "
                "unreadable; showing its backup, which the broker would load"
            )
    render_table(rows, _CONFIG_COLUMNS[name], fmt)


@app.command("config-diff")
def config_diff(
    ctx: typer.Context,
    names: Annotated[
        list[ConfigName] | None, typer.Argument(metavar="[NAME]...", show_default=False)
    ] = None,
    against: Annotated[
        Path | None,
        typer.Option(
            "--against",
            metavar="STORE_DIR",
            help="Compare with this store's config files instead of the .bak files.",
        ),
    ] = None,
    output: OutputOption = None,
) -> None:
    """Compare config files (all, or NAME: topics, groups, offsets, delay, filters) with
    their .bak (the previous version the broker kept) or with another store directory,
    leaf by leaf: what was added, removed or changed."""
    from rmq.cli.inspect.configrows import CONFIG_VIEW_FILES, ConfigView
    from rmq.cli.inspect.configrows import config_diff as store_config_diff
    from rmq.store.layout import StoreLayout

    if against is not None and not against.is_dir():
        raise RmqError(f"{against} is not a directory", "give another store directory", EXIT_USAGE)
    selected = [CONFIG_VIEW_FILES[ConfigView(n.value)] for n in (names or list(ConfigName))]
    with opened(ctx) as reader:
        diffs = store_config_diff(reader, selected, StoreLayout.of(against) if against else None)
        for diff in diffs:
            if diff.baseline is None:
                warn(f"{display_path(diff.file, reader.layout.root)}: no .bak to compare with")
    rows = [plain_data(change) for diff in diffs for change in diff.changes]
    render(rows, columns=("file", "path", "change", "old", "new"), output=output)
