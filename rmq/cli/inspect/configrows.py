"""The rows of `rmq inspect STORE config` and `config-diff`: ``config/*.json`` as tables.

:func:`config_rows` turns a config file into rows: topics, subscription groups, consumer
offsets with their queue's range and lag, delay offsets with what is still pending in
``SCHEDULE_TOPIC_XXXX``, SQL92 filters; :func:`config_diff` compares each file with its
``.bak`` or with the same file of another store directory, leaf by leaf.  Rows are dicts in
the shape of the file's own JSON; damaged files never raise here beyond
:class:`~rmq.store.configfile.ConfigFileError`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from rmq.common import fastjson
from rmq.common.delay import DEFAULT_MESSAGE_DELAY_LEVEL
from rmq.common.naming import RMQ_SYS_SCHEDULE_TOPIC
from rmq.common.perm import perm_to_string
from rmq.store.configfile import ConfigFileError, backup_path
from rmq.store.layout import (
    CONSUMER_FILTER_JSON,
    CONSUMER_OFFSET_JSON,
    DELAY_OFFSET_JSON,
    SUBSCRIPTION_GROUP_JSON,
    TOPICS_JSON,
    StoreLayout,
    list_offset_files,
)
from rmq.store.offline.files import CONFIG_FILES
from rmq.store.offline.queues import QueueRange
from rmq.store.offline.reader import StoreReader
from rmq.store.offline.summary import QueueSummary, queue_summaries

TOPIC_GROUP_SEPARATOR: Final = "@"
DELAY_LABELS: Final = tuple(DEFAULT_MESSAGE_DELAY_LEVEL.split())
"""Labels of the default delay levels; a store does not record the broker's own list."""


@dataclass(frozen=True, slots=True)
class ConfigChange:
    """One leaf of a config file that differs from the baseline (``path`` joins the keys
    with ``/``); ``old`` is None for an added leaf, ``new`` for a removed one."""

    file: str
    path: str
    change: str
    old: Any
    new: Any


@dataclass(frozen=True, slots=True)
class ConfigDiff:
    """A config file against its baseline; ``baseline`` is None when there is none."""

    file: Path
    baseline: Path | None
    changes: list[ConfigChange]


class ConfigView(enum.StrEnum):
    """The views of ``config/*.json``; :data:`CONFIG_VIEW_FILES` names their files."""

    TOPICS = "topics"
    GROUPS = "groups"
    OFFSETS = "offsets"
    DELAY = "delay"
    FILTERS = "filters"


CONFIG_VIEW_FILES: Final = {
    ConfigView.TOPICS: TOPICS_JSON,
    ConfigView.GROUPS: SUBSCRIPTION_GROUP_JSON,
    ConfigView.OFFSETS: CONSUMER_OFFSET_JSON,
    ConfigView.DELAY: DELAY_OFFSET_JSON,
    ConfigView.FILTERS: CONSUMER_FILTER_JSON,
}


def config_rows(reader: StoreReader, view: ConfigView) -> tuple[Path | None, list[dict[str, Any]]]:
    """The rows of one view and the file they came from (the ``.bak`` when the broker would
    load that one; None when neither exists).  Raises :class:`ConfigFileError` when the file
    exists but cannot be decoded."""
    loaded = reader.load_config(CONFIG_VIEW_FILES[view])
    if loaded is None:
        return None, _delay_rows(reader, {}) if view is ConfigView.DELAY else []
    value = _mapping(loaded.value)
    if view is ConfigView.TOPICS:
        rows = _topic_rows(reader, value)
    elif view is ConfigView.GROUPS:
        rows = [
            _first(_mapping(group), "groupName", name)
            for name, group in sorted(
                _mapping(value.get("subscriptionGroupTable")).items(), key=_by_key
            )
        ]
    elif view is ConfigView.OFFSETS:
        rows = _offset_rows(reader, value)
    elif view is ConfigView.DELAY:
        rows = _delay_rows(reader, value)
    else:
        rows = _filter_rows(value)
    return loaded.path, rows


def _mapping(value: Any) -> Mapping[Any, Any]:
    """``value`` if it is a JSON object, else an empty one (damaged files never raise)."""
    return value if isinstance(value, Mapping) else {}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _by_key(item: tuple[Any, Any]) -> str:
    return str(item[0])


def _first(fields: Mapping[Any, Any], name: str, default: Any) -> dict[str, Any]:
    """``fields`` with ``name`` first (``default`` when missing), keys as strings."""
    row = {name: fields.get(name, default)}
    row.update((str(key), value) for key, value in fields.items() if key != name)
    return row


def _topic_rows(reader: StoreReader, value: Mapping[Any, Any]) -> list[dict[str, Any]]:
    stored: dict[str, list[QueueSummary]] = {}
    for summary in queue_summaries(reader):
        stored.setdefault(summary.topic, []).append(summary)
    rows = []
    for name, config in sorted(_mapping(value.get("topicConfigTable")).items(), key=_by_key):
        row = _first(_mapping(config), "topicName", name)
        perm = _int(row.get("perm"))
        row["permString"] = None if perm is None else perm_to_string(perm)
        queues = stored.get(str(name), [])
        row["storedQueues"] = len(queues)
        row["messages"] = sum(q.messages for q in queues)
        rows.append(row)
    return rows


def _queue_range(reader: StoreReader, topic: str, queue_id: int) -> QueueRange | None:
    if not list_offset_files(reader.layout.consume_queue_dir(topic, queue_id)):
        return None
    return reader.queue_range(topic, queue_id)


def _offset_rows(reader: StoreReader, value: Mapping[Any, Any]) -> list[dict[str, Any]]:
    rows = []
    for key, table in _mapping(value.get("offsetTable")).items():
        topic, _, group = str(key).partition(TOPIC_GROUP_SEPARATOR)
        for queue_id, offset in _mapping(table).items():
            queue = _int(queue_id)
            committed = _int(offset)
            queue_range = None if queue is None else _queue_range(reader, topic, queue)
            rows.append(
                {
                    "group": group,
                    "topic": topic,
                    "queueId": queue if queue is not None else queue_id,
                    "offset": offset,
                    "minOffset": None if queue_range is None else queue_range.min_offset,
                    "maxOffset": None if queue_range is None else queue_range.max_offset,
                    "lag": (
                        None
                        if queue_range is None or committed is None
                        else max(queue_range.max_offset - committed, 0)
                    ),
                }
            )
    rows.sort(key=lambda row: (row["group"], row["topic"], str(row["queueId"]).zfill(12)))
    return rows


def _delay_rows(reader: StoreReader, value: Mapping[Any, Any]) -> list[dict[str, Any]]:
    """One row per level in the offset table, and one per schedule queue whose level the
    table lacks (a broker has not persisted an offset for it yet, and starts it at the
    queue's minimum offset): offset null, everything stored there pending."""
    rows = []
    for level_key, offset in sorted(_mapping(value.get("offsetTable")).items(), key=_by_key):
        level = _int(level_key)
        committed = _int(offset)
        queue_range = (
            None if level is None else _queue_range(reader, RMQ_SYS_SCHEDULE_TOPIC, level - 1)
        )
        pending = (
            None
            if queue_range is None or committed is None
            else max(queue_range.max_offset - committed, 0)
        )
        rows.append(
            _delay_row(level if level is not None else level_key, offset, queue_range, pending)
        )
    listed = {row["level"] for row in rows}
    for topic, queue_id in reader.consume_queues():
        if topic == RMQ_SYS_SCHEDULE_TOPIC and queue_id + 1 not in listed:
            queue_range = _queue_range(reader, topic, queue_id)
            pending = (
                None if queue_range is None else queue_range.max_offset - queue_range.min_offset
            )
            rows.append(_delay_row(queue_id + 1, None, queue_range, pending))
    rows.sort(key=lambda row: str(row["level"]).zfill(12))
    return rows


def _delay_row(
    level: Any, offset: Any, queue_range: QueueRange | None, pending: int | None
) -> dict[str, Any]:
    number = _int(level)
    return {
        "level": level,
        "delay": DELAY_LABELS[number - 1] if number and number <= len(DELAY_LABELS) else None,
        "queueId": None if number is None else number - 1,
        "offset": offset,
        "maxOffset": None if queue_range is None else queue_range.max_offset,
        "pending": pending,
    }


def _filter_rows(value: Mapping[Any, Any]) -> list[dict[str, Any]]:
    rows = []
    for topic, data in sorted(_mapping(value.get("filterDataByTopic")).items(), key=_by_key):
        for group, fields in sorted(
            _mapping(_mapping(data).get("groupFilterData")).items(), key=_by_key
        ):
            row: dict[str, Any] = {"topic": str(topic), "group": str(group)}
            row.update(
                (str(key), item)
                for key, item in _mapping(fields).items()
                if key not in ("topic", "consumerGroup")
            )
            rows.append(row)
    return rows


def config_diff(
    reader: StoreReader, names: Sequence[str] = CONFIG_FILES, against: StoreLayout | None = None
) -> list[ConfigDiff]:
    """Each config file ``names`` against its ``.bak`` or, with ``against``, the same file
    of another store (a file missing there counts as empty).  A file without a ``.bak`` has
    no baseline (None, no changes); files missing on both sides are left out."""
    diffs = []
    for name in names:
        path = reader.layout.config_file(name)
        baseline = against.config_file(name) if against is not None else backup_path(path)
        current = _read_config(path)
        base = _read_config(baseline)
        if base is None and (against is None or current is None):
            if current is not None:
                diffs.append(ConfigDiff(path, None, []))
            continue
        changes = []
        old = _flatten(base)
        new = _flatten(current)
        for leaf in sorted(old.keys() | new.keys()):
            if leaf not in old:
                changes.append(ConfigChange(name, leaf, "added", None, new[leaf]))
            elif leaf not in new:
                changes.append(ConfigChange(name, leaf, "removed", old[leaf], None))
            elif old[leaf] != new[leaf]:
                changes.append(ConfigChange(name, leaf, "changed", old[leaf], new[leaf]))
        diffs.append(ConfigDiff(path, baseline, changes))
    return diffs


def _read_config(path: Path) -> Any:
    """A config file decoded, None when it does not exist or is empty."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigFileError(f"cannot read {path}: {exc}") from None
    if not text:
        return None
    try:
        return fastjson.loads(text)
    except Exception as exc:
        raise ConfigFileError(f"cannot decode {path}: {exc}") from None


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Leaves of a decoded JSON value by path (``offsetTable/Topic@group/0``)."""
    if isinstance(value, Mapping):
        leaves: dict[str, Any] = {}
        for key, item in value.items():
            leaves.update(_flatten(item, f"{prefix}/{key}" if prefix else str(key)))
        return leaves
    if isinstance(value, list | tuple):
        leaves = {}
        for index, item in enumerate(value):
            leaves.update(_flatten(item, f"{prefix}/{index}" if prefix else str(index)))
        return leaves
    return {} if value is None and not prefix else {prefix: value}
