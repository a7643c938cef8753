"""`rmq inspect` as a person runs it, through `python -m rmq` subprocesses: what is refused
as not a store, and how mistakes in a command read (no such queue, an offset that is not a
record boundary, an export that would overwrite a file or flood the terminal).

Stores come from `tests.specstore` (built byte by byte from the spec layouts).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from rmq.cli.inspect.views import human_size
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


def test_queue_that_the_store_does_not_have(rmq: RunRmq, store: SpecStore) -> None:
    result = rmq("inspect", str(store.root), "queue", "TopicTest", "9")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (
        "rmq: error: topic TopicTest has no queue 9 in this store; its queues are 0, 1; "
        "e.g. 'queue TopicTest 0'\n"
    )
    result = rmq("inspect", str(store.root), "queue", "Nope", "0")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (
        "rmq: error: no topic Nope in this store (no consume queue); "
        "its topics are Orders, TopicTest\n"
    )
    # in the shell too, and the shell carries on (exit 1 for the script)
    result = rmq("inspect", str(store.root), input="queue TopicTest 9\nqueue TopicTest 1 -o json\n")
    assert result.returncode == 1
    assert "has no queue 9" in result.stderr
    assert len(json.loads(result.stdout)) == sum(
        1 for r in store.records if (r.topic, r.queue_id) == ("TopicTest", 1)
    )


def test_dump_inside_a_record_names_the_boundaries(rmq: RunRmq, store: SpecStore) -> None:
    first, second = store.records[1], store.records[2]
    assert first.physical_offset + first.size == second.physical_offset
    inside = first.physical_offset + 5
    result = rmq("inspect", str(store.root), "dump", str(inside))
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (
        f"rmq: error: commitlog offset {inside} (commitlog/00000000000000000000@{inside}) is "
        f"not a record boundary: it is inside the record at {first.physical_offset} "
        f"({first.size} bytes, up to {second.physical_offset}); the nearest records start at "
        f"{first.physical_offset} and {second.physical_offset}; "
        f"'dump {first.physical_offset}' shows that record\n"
    )
    ok = rmq("inspect", str(store.root), "dump", str(first.physical_offset), "-o", "json")
    assert json.loads(ok.stdout)[0]["commitLogOffset"] == first.physical_offset


def test_dump_at_a_damaged_boundary_still_reports_the_damage(rmq: RunRmq, store: SpecStore) -> None:
    damaged = store.records[2]
    path, position = store.commitlog_path(damaged.physical_offset)
    data = bytearray(path.read_bytes())
    data[position + 4] ^= 0xFF  # the magic code
    path.write_bytes(bytes(data))
    result = rmq("inspect", str(store.root), "dump", str(damaged.physical_offset))
    assert result.returncode == 1
    assert result.stderr.startswith(
        f"rmq: error: no message at commitlog offset {damaged.physical_offset} "
    )
    assert "bad magic" in result.stderr and "not a record boundary" not in result.stderr


def test_export_never_overwrites_a_file_without_force(
    rmq: RunRmq, store: SpecStore, tmp_path: Path
) -> None:
    out = tmp_path / "out.ndjson"
    out.write_text("keep me\n")
    result = rmq("inspect", str(store.root), "export", "--out", str(out))
    assert (result.returncode, result.stderr) == (
        1,
        f"rmq: error: {out} already exists; pass --force to replace it\n",
    )
    assert out.read_text() == "keep me\n"
    result = rmq("inspect", str(store.root), "export", "--out", str(out), "--force")
    assert result.returncode == 0, result.stderr
    exported = [json.loads(line)["commitLogOffset"] for line in out.read_text().splitlines()]
    assert exported == [record.physical_offset for record in store.records]


def test_tables_show_sizes_in_binary_units_and_json_keeps_bytes(
    rmq: RunRmq, store: SpecStore
) -> None:
    table = rmq("inspect", str(store.root), "overview").stdout
    assert re.search(r"^COMMITLOG BYTES +3\.0 KiB *$", table, re.MULTILINE), table
    assert re.search(r"^CONSUME QUEUE BYTES +400 B *$", table, re.MULTILINE), table
    data = json.loads(rmq("inspect", str(store.root), "overview", "-o", "json").stdout)
    assert (data["commitlogBytes"], data["consumeQueueBytes"]) == (3072, 400)
    files = rmq("inspect", str(store.root), "files").stdout.splitlines()
    assert [line.split()[3:5] for line in files[1:]] == [["1.0", "KiB"]] * 3
    scanned = rmq("inspect", str(store.root), "verify").stdout
    assert re.search(r"^BYTES SCANNED +3\.0 KiB *$", scanned, re.MULTILINE), scanned
    assert (
        json.loads(rmq("inspect", str(store.root), "verify", "-o", "json").stdout)["bytesScanned"]
        == 3072
    )


@pytest.mark.parametrize(
    ("size", "shown"),
    [
        (0, "0 B"),
        (1023, "1023 B"),
        (1024, "1.0 KiB"),
        (1536, "1.5 KiB"),
        (31390, "30.7 KiB"),
        ((1 << 20) - 1, "1.0 MiB"),
        (1 << 30, "1.0 GiB"),
        (5 << 50, "5.0 PiB"),
    ],
)
def test_human_size(size: int, shown: str) -> None:
    assert human_size(size) == shown
