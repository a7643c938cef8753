"""KVConfigManager: the (namespace, key) -> value table and its kvConfig.json file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rmq.server.namesrv.kvconfig import KVConfigManager
from rmq.store.configfile import ConfigFileError


def test_put_get_delete_and_namespace_listing(tmp_path: Path) -> None:
    kv = KVConfigManager(tmp_path / "kvConfig.json")
    assert kv.get("ns", "k") is None
    assert kv.get_namespace("ns") is None

    kv.put("ns", "k", "v1")
    kv.put("ns", "k", "v2")
    kv.put("ns", "other", "x")
    assert kv.get("ns", "k") == "v2"
    assert kv.get_namespace("ns") == {"k": "v2", "other": "x"}

    listing = kv.get_namespace("ns")
    assert listing is not None
    listing["k"] = "changed"
    assert kv.get("ns", "k") == "v2"

    kv.delete("ns", "k")
    kv.delete("ns", "missing")
    kv.delete("missing-ns", "k")
    assert kv.get("ns", "k") is None
    assert kv.get_namespace("ns") == {"other": "x"}


def test_file_is_compact_fastjson_after_every_change(tmp_path: Path) -> None:
    path = tmp_path / "namesrv" / "kvConfig.json"
    kv = KVConfigManager(path)
    kv.put("ORDER_TOPIC_CONFIG", "T1", "broker-a:4;broker-b:4")
    assert path.read_text(encoding="utf-8") == (
        '{"configTable":{"ORDER_TOPIC_CONFIG":{"T1":"broker-a:4;broker-b:4"}}}'
    )
    kv.delete("ORDER_TOPIC_CONFIG", "T1")
    assert json.loads(path.read_text(encoding="utf-8")) == {
        "configTable": {"ORDER_TOPIC_CONFIG": {}}
    }


def test_reload_sees_every_value_including_non_ascii(tmp_path: Path) -> None:
    path = tmp_path / "kvConfig.json"
    kv = KVConfigManager(path)
    kv.put("ns1", "a", "1")
    kv.put("ns2", "clé", 'värde "quoted"')
    kv.put("ns2", "b", "2")
    kv.delete("ns2", "b")

    reloaded = KVConfigManager(path)
    reloaded.load()
    assert reloaded.get_namespace("ns1") == {"a": "1"}
    assert reloaded.get_namespace("ns2") == {"clé": 'värde "quoted"'}
    assert "värde" in path.read_text(encoding="utf-8")


def test_missing_file_is_an_empty_table(tmp_path: Path) -> None:
    kv = KVConfigManager(tmp_path / "absent" / "kvConfig.json")
    kv.load()
    assert kv.get_namespace("ORDER_TOPIC_CONFIG") is None
    assert not (tmp_path / "absent").exists()


def test_file_written_by_apache_loads(tmp_path: Path) -> None:
    path = tmp_path / "kvConfig.json"
    path.write_text(
        '{"configTable":{"ns":{"k2":"v2","k1":"v1"},"ORDER_TOPIC_CONFIG":{"T":"b:8"}}}',
        encoding="utf-8",
    )
    kv = KVConfigManager(path)
    kv.load()
    assert kv.get("ns", "k1") == "v1"
    assert kv.get("ORDER_TOPIC_CONFIG", "T") == "b:8"


def test_previous_content_is_kept_as_bak_and_used_when_the_file_is_corrupt(
    tmp_path: Path,
) -> None:
    path = tmp_path / "kvConfig.json"
    kv = KVConfigManager(path)
    kv.put("ns", "k", "old")
    kv.put("ns", "k", "new")
    assert json.loads((tmp_path / "kvConfig.json.bak").read_text(encoding="utf-8")) == {
        "configTable": {"ns": {"k": "old"}}
    }

    path.write_text('{"configTable":{"ns":', encoding="utf-8")
    recovered = KVConfigManager(path)
    recovered.load()
    assert recovered.get("ns", "k") == "old"


def test_corrupt_file_and_backup_refuse_to_load(tmp_path: Path) -> None:
    path = tmp_path / "kvConfig.json"
    path.write_text("not json", encoding="utf-8")
    (tmp_path / "kvConfig.json.bak").write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(ConfigFileError):
        KVConfigManager(path).load()


def is_dirty(kv: KVConfigManager) -> bool:
    """Read the flag afresh (an ``assert kv.dirty`` would narrow it for the type checker)."""
    return kv.dirty


def test_a_failed_write_is_retried_by_flush(tmp_path: Path) -> None:
    blocker = tmp_path / "namesrv"
    blocker.write_text("a file where the directory should be", encoding="utf-8")
    kv = KVConfigManager(blocker / "kvConfig.json")
    kv.put("ns", "k", "v")
    assert kv.get("ns", "k") == "v"
    assert is_dirty(kv)

    blocker.unlink()
    kv.flush()
    assert not is_dirty(kv)
    reloaded = KVConfigManager(blocker / "kvConfig.json")
    reloaded.load()
    assert reloaded.get("ns", "k") == "v"


def test_flush_without_changes_writes_nothing(tmp_path: Path) -> None:
    kv = KVConfigManager(tmp_path / "kvConfig.json")
    kv.load()
    kv.flush()
    assert not (tmp_path / "kvConfig.json").exists()
