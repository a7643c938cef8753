"""config/*.json persistence: atomic replace, .bak copies, fallback on a broken main file."""

from __future__ import annotations

from pathlib import Path

import pytest

from rmq.common import fastjson
from rmq.store.configfile import (
    ConfigFileError,
    load_config,
    load_config_file,
    persist_config,
    persist_config_text,
)

OFFSETS_V1 = {"offsetTable": {"TopicTest@group": {0: 12, 1: 7}}}
OFFSETS_V2 = {"offsetTable": {"TopicTest@group": {0: 13, 1: 9}}}


def test_first_write_creates_the_file_in_pretty_format_without_backup(tmp_path: Path) -> None:
    path = tmp_path / "config" / "consumerOffset.json"
    persist_config(path, OFFSETS_V1)
    # fastjson pretty format: TAB indents, "k":v, integer keys bare on the same line.
    assert (
        path.read_text() == '{\n\t"offsetTable":{\n\t\t"TopicTest@group":{0:12,1:7\n\t\t}\n\t}\n}'
    )
    assert sorted(p.name for p in path.parent.iterdir()) == ["consumerOffset.json"]


def test_rewrite_keeps_the_previous_content_as_bak(tmp_path: Path) -> None:
    path = tmp_path / "topics.json"
    persist_config_text(path, "first")
    persist_config_text(path, "second")
    persist_config_text(path, "third")
    assert path.read_text() == "third"
    assert (tmp_path / "topics.json.bak").read_text() == "second"
    assert not (tmp_path / "topics.json.tmp").exists()


def test_load_prefers_the_main_file(tmp_path: Path) -> None:
    path = tmp_path / "consumerOffset.json"
    persist_config(path, OFFSETS_V1)
    persist_config(path, OFFSETS_V2)
    loaded = load_config(path)
    assert loaded is not None
    assert loaded.value == OFFSETS_V2
    assert (loaded.path, loaded.from_backup) == (path, False)


@pytest.mark.parametrize("damage", ["corrupt", "empty", "missing"])
def test_load_falls_back_to_bak_when_the_main_file_is_unusable(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "consumerOffset.json"
    persist_config(path, OFFSETS_V1)
    persist_config(path, OFFSETS_V2)
    if damage == "corrupt":
        path.write_text('{"offsetTable":{"TopicTest@gr')
    elif damage == "empty":
        path.write_text("")
    else:
        path.unlink()
    before = sorted((p.name, p.read_bytes()) for p in tmp_path.iterdir())
    loaded = load_config(path)
    assert loaded is not None
    assert loaded.value == OFFSETS_V1
    assert (loaded.path, loaded.from_backup) == (tmp_path / "consumerOffset.json.bak", True)
    assert sorted((p.name, p.read_bytes()) for p in tmp_path.iterdir()) == before


def test_no_file_at_all_loads_nothing(tmp_path: Path) -> None:
    assert load_config(tmp_path / "delayOffset.json") is None


def test_corrupt_file_without_usable_backup_is_an_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "topics.json"
    path.write_text("{not json")
    with pytest.raises(ConfigFileError, match=r"topics\.json"):
        load_config(path)


def test_custom_decoder_rejection_triggers_the_fallback(tmp_path: Path) -> None:
    path = tmp_path / "delayOffset.json"
    persist_config_text(path, '{"offsetTable":{1:0}}')
    persist_config_text(path, '{"unexpected":true}')

    def decode(text: str) -> dict[int, int]:
        table: dict[int, int] = fastjson.loads(text)["offsetTable"]
        return table

    loaded = load_config_file(path, decode)
    assert loaded is not None
    assert loaded.value == {1: 0}
    assert loaded.from_backup
