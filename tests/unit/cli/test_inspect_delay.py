"""`rmq inspect ... config delay` lists every delay level with parked messages, also one that
delayOffset.json does not name yet (Apache writes a level's offset only once its delivery task
has moved on, and a store may have no delayOffset.json at all)."""

from __future__ import annotations

from pathlib import Path

from rmq.cli.inspect.configrows import ConfigView, config_rows
from rmq.store.offline.reader import StoreReader
from tests.specstore import SpecStore

DELAY_JSON = '{\n\t"offsetTable":{2:1\n\t}\n}'


def delay_rows(store: SpecStore) -> list[tuple[object, ...]]:
    with StoreReader(store.root) as reader:
        _, rows = config_rows(reader, ConfigView.DELAY)
    return [(r["level"], r["queueId"], r["offset"], r["maxOffset"], r["pending"]) for r in rows]


def parked(tmp_path: Path) -> SpecStore:
    store = SpecStore(tmp_path / "store")
    store.append("SCHEDULE_TOPIC_XXXX", 1, b"level 2")
    store.append("SCHEDULE_TOPIC_XXXX", 3, b"level 4, first")
    store.append("SCHEDULE_TOPIC_XXXX", 3, b"level 4, second")
    store.write()
    return store


def test_a_level_missing_from_the_offset_table_is_all_pending(tmp_path: Path) -> None:
    store = parked(tmp_path)
    store.write_config("delayOffset.json", DELAY_JSON)
    assert delay_rows(store) == [(2, 1, 1, 1, 0), (4, 3, None, 2, 2)]


def test_without_delay_offset_json_every_parked_message_is_pending(tmp_path: Path) -> None:
    assert delay_rows(parked(tmp_path)) == [(2, 1, None, 1, 1), (4, 3, None, 2, 2)]
