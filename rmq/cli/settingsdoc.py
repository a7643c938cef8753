"""docs/settings.md: every key of the name server and the broker, rendered from the config
classes (rmq.common.configobjects, rmq.common.configstore), where each key is declared once.

One table per config class: the key (with its aliases; rmq-only keys marked), its default,
the values it allows, and what happens when UPDATE_*_CONFIG changes it on a running server.
`rmq.cli.docgen` writes the page with the completions and man pages, and its check fails when
the committed page is stale.
"""

from __future__ import annotations

import dataclasses

from rmq.common.config import (
    Applies,
    BrokerConfig,
    ConfigObject,
    MessageStoreConfig,
    NamesrvConfig,
    NettyClientConfig,
    NettyServerConfig,
    Option,
    options_of,
)
from rmq.common.configfields import value_text

PAGE = "docs/settings.md"

_INTRO = """\
# Settings: every key of `rmq namesrv` and `rmq broker`

Generated from the config classes by `python -m rmq.cli.docgen` (do not edit by hand).  The
keys are Apache RocketMQ 4.9's (`NamesrvConfig`, `NettyServerConfig`, `NettyClientConfig`,
`BrokerConfig`, `MessageStoreConfig`) plus a few rmq-only ones.  The name server reads
`NamesrvConfig` and `NettyServerConfig` from its `-c` file; the broker reads the other four
(`NettyServerConfig` too) from its own.

- **Allowed.**  A value outside this column stops `rmq namesrv`, `rmq broker` and
  `rmq standalone` at start: exit 2 and one line naming the file, the key, the value and what
  is allowed.  Apache's servers accept most of these values (a value Java cannot parse is
  ignored, `autoCreateTopicEnable=maybe` reads as false, numbers are not checked at all);
  docs/spec-notes.md lists the differences.  Keys no config has are reported with a warning
  and kept (GET_*_CONFIG shows them), as Apache keeps them.
- **A change at run time** (UPDATE_BROKER_CONFIG, UPDATE_NAMESRV_CONFIG: `rmq broker-config
  set`, `rmq namesrv-config set`, mqadmin `updateBrokerConfig` / `updateNamesrvConfig`): a
  value outside the allowed ones, or a key no config has, is refused (code 1, a remark naming
  the key) and nothing changes; keys of `configBlackList` get NO_PERMISSION.  Otherwise the
  change is written to the config file and GET_*_CONFIG shows it; *at once* means the running
  server uses it from then on, *after a restart* that the running server keeps the value it
  started with, *not used* that rmq keeps the key for Apache's tools but nothing reads it.  The
  answer's remark has one line for each key that does not apply at once.
- **Checks across keys**, at start and on every change: a broker's `listenPort` must be
  3..65534 (it also listens on `listenPort - 2`, and `haListenPort` is `listenPort + 1`); a
  `SLAVE`'s `brokerId` must be > 0; `writeBufferLowWaterMark` may not exceed
  `writeBufferHighWaterMark` when both are set; an index file (`40 + 4 * maxHashSlotNum +
  20 * maxIndexNum` bytes) must fit a Java int.
"""

_SECTIONS: tuple[tuple[str, type[ConfigObject], str], ...] = (
    ("Name server (`NamesrvConfig`)", NamesrvConfig, "the name server's `-c` file"),
    (
        "Remoting server (`NettyServerConfig`)",
        NettyServerConfig,
        "both the name server's and the broker's `-c` file (each for its own server)",
    ),
    ("Broker (`BrokerConfig`)", BrokerConfig, "the broker's `-c` file"),
    (
        "Broker's remoting client (`NettyClientConfig`)",
        NettyClientConfig,
        "the broker's `-c` file (its connections to the name servers)",
    ),
    ("Message store (`MessageStoreConfig`)", MessageStoreConfig, "the broker's `-c` file"),
)

_APPLIES = {
    Applies.LIVE: "at once",
    Applies.RESTART: "after a restart",
    Applies.UNUSED: "not used",
}


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _default(option: Option, cls: type[ConfigObject]) -> str:
    if option.shown is not None:
        return option.shown
    fields = {item.name: item for item in dataclasses.fields(cls)}  # type: ignore[arg-type]
    value = fields[option.attr].default
    if value is None:
        return "(unset)"
    text = value_text(value)
    return f"`{text}`" if text else "(empty)"


def _change(option: Option) -> str:
    """When a change applies; a key with its own line says that line instead."""
    return option.note if option.note is not None else _APPLIES[option.applies]


def _row(option: Option, cls: type[ConfigObject]) -> str:
    key = f"`{option.key}`"
    if option.aliases:
        key += " (also " + ", ".join(f"`{alias}`" for alias in option.aliases) + ")"
    if option.rmq_only:
        key += " rmq-only"
    cells = (key, _default(option, cls), option.allowed, _change(option))
    return "| " + " | ".join(_cell(cell) for cell in cells) + " |"


def render() -> str:
    """The text of docs/settings.md."""
    lines = [_INTRO.rstrip("\n")]
    for title, cls, read_from in _SECTIONS:
        options = [option for name, option in options_of(cls).items() if name == option.key]
        lines += ["", f"## {title}", "", f"Read from {read_from}.", ""]
        lines += ["| key | default | allowed | a change at run time |", "|---|---|---|---|"]
        lines += [_row(option, cls) for option in options]
    return "\n".join(lines) + "\n"
