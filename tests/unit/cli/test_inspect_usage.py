"""`rmq inspect` as a person runs it, through `python -m rmq` subprocesses: what is refused
as not a store, and how mistakes in a command read (no such queue, an offset that is not a
record boundary, an export that would overwrite a file or flood the terminal).

Stores come from `tests.specstore` (built byte by byte from the spec layouts).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.specstore import SpecStore, build
from tests.unit.cli.conftest import RunRmq

HINT = "give the broker's store directory (storePathRootDir)"


@pytest.fixture
def store(tmp_path: Path) -> SpecStore:
    return build(tmp_path)


def _refusal(root: Path) -> str:
    return (
        f"rmq: error: {root} is not a RocketMQ store: no commitlog/, consumequeue/, index/, "
        f"checkpoint or config/topics.json in it; {HINT}\n"
    )


@pytest.mark.parametrize(
    "args",
    [["verify"], ["overview"], ["stats"], ["files"], ["config"], ["export"], []],
    ids=["verify", "overview", "stats", "files", "config", "export", "shell"],
)
def test_a_directory_that_is_not_a_store_is_refused(
    rmq: RunRmq, tmp_path: Path, args: list[str]
) -> None:
    other = tmp_path / "project"
    (other / "src").mkdir(parents=True)
    (other / "notes.txt").write_text("not a store\n")
    (other / "lock").write_text("")  # a file named like a store's lock proves nothing
    for root in (tmp_path / "empty", other):
        root.mkdir(exist_ok=True)
        result = rmq("inspect", str(root), *args, input="overview\n")
        assert (result.returncode, result.stdout) == (2, "")
        assert result.stderr == _refusal(root)


def test_spark_export_refuses_a_directory_that_is_not_a_store(rmq: RunRmq, tmp_path: Path) -> None:
    result = rmq("spark-export", str(tmp_path), "--out", str(tmp_path / "out"))
    assert result.returncode == 2
    assert result.stderr == (
        f"rmq: error: {tmp_path} is not a RocketMQ store: no commitlog/, consumequeue/, "
        "index/, checkpoint or config/topics.json in it; give a broker's storePathRootDir\n"
    )


def test_what_a_never_used_broker_leaves_is_a_store(rmq: RunRmq, tmp_path: Path) -> None:
    # A broker creates commitlog/ and consumequeue/ when it first opens the store.
    root = tmp_path / "store"
    (root / "commitlog").mkdir(parents=True)
    (root / "consumequeue").mkdir()
    result = rmq("inspect", str(root), "verify", "-o", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["ok"] is True
    # A copy of only the config files is a store too (config views work on it).
    config_only = tmp_path / "config-copy"
    (config_only / "config").mkdir(parents=True)
    (config_only / "config" / "consumerOffset.json.bak").write_text('{"offsetTable":{}}')
    result = rmq("inspect", str(config_only), "config", "offsets", "-o", "json")
    assert (result.returncode, json.loads(result.stdout)) == (0, []), result.stderr


def test_a_separate_commitlog_directory_counts(
    rmq: RunRmq, store: SpecStore, tmp_path: Path
) -> None:
    moved = tmp_path / "elsewhere"
    os.rename(store.root / "commitlog", moved)
    for name in ("consumequeue", "index", "config", "checkpoint"):
        path = store.root / name
        if path.is_dir():
            for child in sorted(path.rglob("*"), reverse=True):
                child.unlink() if child.is_file() else child.rmdir()
            path.rmdir()
        else:
            path.unlink()
    assert rmq("inspect", str(store.root), "verify").returncode == 2
    result = rmq("inspect", "--commitlog-dir", str(moved), str(store.root), "stats", "-o", "json")
    assert result.returncode == 0, result.stderr
    assert sum(row["messages"] for row in json.loads(result.stdout)) == len(store.records)
