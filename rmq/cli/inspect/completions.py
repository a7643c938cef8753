"""What TAB offers for the arguments of `rmq inspect` commands: names from the open store.

Each function is a typer ``autocompletion`` callback, so click calls it with the context of
the command line being completed.  The store comes from that context: the shell keeps its
`StoreTarget` in ``ctx.meta`` (set by the group callback), and a shell completion request
(`rmq inspect STORE queue <TAB>` in bash), which runs no callback, has the parsed
``store_dir`` and ``--commitlog-dir`` in the inspect group's ``ctx.params``.  Names are
listed afresh at every TAB (the store may change under a running broker): topics and queue
ids from `consumequeue/`, commitlog file names (which are offsets, so they complete
`dump OFFSET` too).  Only listings, never a read of a store file.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Final

import click

if TYPE_CHECKING:
    from rmq.store.layout import StoreLayout

TARGET_KEY: Final = "rmq.inspect.target"
"""Where the group callback keeps the `StoreTarget` of the invocation (``ctx.meta``)."""

CHARSETS: Final = ("utf-8", "gbk", "gb18030", "big5", "shift_jis", "latin-1", "utf-16", "ascii")


def _layout(ctx: click.Context) -> StoreLayout | None:
    from rmq.store.layout import StoreLayout

    target = ctx.meta.get(TARGET_KEY)
    if target is not None:
        return StoreLayout.of(target.root, target.commitlog_dir or "")
    current: click.Context | None = ctx
    while current is not None:
        root = current.params.get("store_dir")
        if root:
            return StoreLayout.of(Path(root), current.params.get("commitlog_dir") or "")
        current = current.parent
    return None


def _queues(ctx: click.Context) -> list[tuple[str, int]]:
    from rmq.store.layout import list_consume_queues

    layout = _layout(ctx)
    if layout is None:
        return []
    return [
        (topic, queue_id) for topic, queue_id, _ in list_consume_queues(layout.consume_queue_root)
    ]


def _starting(words: set[str], incomplete: str) -> list[str]:
    return sorted(word for word in words if word.startswith(incomplete))


def topics(ctx: click.Context, incomplete: str) -> list[str]:
    """The topics with a consume queue in the store."""
    return _starting({topic for topic, _ in _queues(ctx)}, incomplete)


def queue_ids(ctx: click.Context, incomplete: str) -> list[str]:
    """The queue ids of the topic already given (as TOPIC or -t); none before a topic."""
    topic = ctx.params.get("topic")
    if not topic:
        return []
    return _starting(
        {str(queue_id) for name, queue_id in _queues(ctx) if name == topic}, incomplete
    )


def commitlog_files(ctx: click.Context, incomplete: str) -> list[str]:
    """The commitlog file names (each the offset of the file's first record)."""
    from rmq.store.layout import list_offset_files

    layout = _layout(ctx)
    if layout is None:
        return []
    return _starting({path.name for _, path in list_offset_files(layout.commitlog)}, incomplete)


def charsets(incomplete: str) -> list[str]:
    """Common body charsets (any name Python's codecs know is accepted)."""
    return _starting(set(CHARSETS), incomplete)
