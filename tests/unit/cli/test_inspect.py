"""`rmq inspect STORE_DIR <command>` on stores built byte by byte from the spec layouts.

The stores come from `tests.specstore` (records, consume queues, index, checkpoint packed
with `struct`; config files written as fastjson text by hand), so what the commands print is
checked against the format, not against rmq's writer.  Commands run in-process through
`rmq.cli.main.run`, exactly as the console script runs them; the subprocess, broker and
terminal tests are in tests/integration/test_inspect.py.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import struct
import subprocess
import sys
import textwrap
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from rmq.cli.main import run
from rmq.common.message import MessageRecord, decode_record
from rmq.common.recordwalk import Frame, iter_frames
from rmq.store.offline import reader as offline_reader
from rmq.store.offline import scan as offline_scan
from tests.specstore import (
    CQ_ENTRY,
    STORE_HOST,
    T0,
    SpecStore,
    build,
    flip,
    index_hash,
)

# The message record of docs/cli.md, in its documented order.
RECORD_KEYS = [
    "topic",
    "brokerName",
    "queueId",
    "queueOffset",
    "commitLogOffset",
    "msgId",
    "offsetMsgId",
    "tags",
    "keys",
    "properties",
    "body",
    "bodyCrc",
    "flag",
    "sysFlag",
    "bornTimestamp",
    "storeTimestamp",
    "bornHost",
    "storeHost",
    "reconsumeTimes",
    "preparedTransactionOffset",
]


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


Inspect = Callable[..., Result]


@pytest.fixture
def inspect(cli_env: dict[str, str], capsys: pytest.CaptureFixture[str]) -> Inspect:
    """Run `rmq inspect STORE ARGS...` in this process."""

    def run_inspect(store: Path, *args: str) -> Result:
        code = run(["inspect", str(store), *args])
        out, err = capsys.readouterr()
        return Result(code, out, err)

    return run_inspect


@pytest.fixture
def store(tmp_path: Path) -> SpecStore:
    return build(tmp_path)


def offset_msg_id(physical_offset: int) -> str:
    return (STORE_HOST + struct.pack(">q", physical_offset)).hex().upper()


def snapshot(root: Path) -> dict[Path, tuple[bytes, int]]:
    return {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


# -- overview, files, checkpoint -----------------------------------------------------------


def test_overview_counts_ranges_and_shutdown_state(inspect: Inspect, store: SpecStore) -> None:
    result = inspect(store.root, "overview", "-o", "json")
    assert (result.code, result.err) == (0, "")
    data = result.json()
    assert data["commitlogFiles"] == 3
    assert (data["minPhysicalOffset"], data["maxPhysicalOffset"]) == (0, len(store.log))
    assert (data["firstStoreTimestamp"], data["lastStoreTimestamp"]) == (T0, T0 + 12_000)
    assert (data["topics"], data["queues"], data["messages"]) == (2, 4, 12)
    assert data["indexEntries"] == len(store.index)
    assert (data["lockHeld"], data["abortFile"], data["shutdown"]) == (False, False, "clean")
    assert data["physicMsgTimestamp"] == T0 + 3000
    assert data["topicSummaries"] == [
        {"topic": "Orders", "queues": 2, "messages": 4},
        {"topic": "TopicTest", "queues": 2, "messages": 8},
    ]

    (store.root / "abort").write_bytes(b"")
    table = inspect(store.root, "overview").out
    assert "unclean: the abort file is present" in table
    assert "not running: the lock is free" in table


def test_overview_sees_a_lock_held_by_another_process(inspect: Inspect, store: SpecStore) -> None:
    lock = store.root / "lock"
    lock.write_bytes(b"lock")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import fcntl, os, sys
                fd = os.open({str(lock)!r}, os.O_RDWR)
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)
                print("locked", flush=True)
                sys.stdin.read()
                """
            ),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        (store.root / "abort").write_bytes(b"")
        before = snapshot(store.root)
        data = inspect(store.root, "overview", "-o", "json").json()
        assert (data["lockHeld"], data["lockHolderPid"], data["shutdown"]) == (
            True,
            holder.pid,
            "running",
        )
        assert f"the lock is held by pid {holder.pid}" in inspect(store.root, "overview").out
        assert snapshot(store.root) == before
    finally:
        holder.communicate("", timeout=10)
    assert inspect(store.root, "overview", "-o", "json").json()["shutdown"] == "unclean"


def test_files_of_each_kind(inspect: Inspect, store: SpecStore) -> None:
    commitlog = inspect(store.root, "files", "-o", "json").json()
    assert [(r["name"], r["start"], r["end"], r["size"]) for r in commitlog] == [
        (f"{start:020d}", start, start + 1024, 1024) for start in (0, 1024, 2048)
    ]
    queues = inspect(
        store.root, "files", "consumequeue", "-t", "TopicTest", "-q", "0", "-o", "json"
    )
    expected = store.queues["TopicTest", 0]
    assert [(r["firstQueueOffset"], r["entries"], r["capacity"]) for r in queues.json()] == [
        (0, len(expected), 5)
    ]
    assert queues.json()[0]["maxCommitlogOffset"] == expected[-1][0]
    (index,) = inspect(store.root, "files", "index", "-o", "json").json()
    assert (index["name"], index["entries"], index["hashSlots"], index["capacity"]) == (
        store.index_path.name,
        len(store.index),
        16,
        64,
    )
    config = inspect(store.root, "files", "config", "-o", "json").json()
    assert {r["name"]: r["size"] for r in config}["topics.json"] == len(
        (store.root / "config" / "topics.json").read_bytes()
    )
    assert "queue ID" not in inspect(store.root, "files", "consumequeue").out


def test_checkpoint(inspect: Inspect, store: SpecStore) -> None:
    data = inspect(store.root, "checkpoint", "-o", "json").json()
    assert data == {
        "path": str(store.root / "checkpoint"),
        "physicMsgTimestamp": T0 + 3000,
        "logicsMsgTimestamp": T0 + 2000,
        "indexMsgTimestamp": T0 + 1000,
        "recoveryTimestamp": T0 - 1000,
        "recoveryWithIndexTimestamp": T0 - 1000,
    }
    (store.root / "checkpoint").unlink()
    result = inspect(store.root, "checkpoint")
    assert result.code == 1
    assert result.err.startswith("rmq: error: ") and "checkpoint is missing" in result.err


# -- records -------------------------------------------------------------------------------


def test_dump_from_an_offset_and_of_a_file(inspect: Inspect, store: SpecStore) -> None:
    fifth = store.records[5]
    (record,) = inspect(store.root, "dump", str(fifth.physical_offset), "-o", "json").json()
    assert list(record) == RECORD_KEYS
    assert (record["topic"], record["queueId"], record["queueOffset"]) == (
        "TopicTest",
        1,
        fifth.queue_offset,
    )
    assert (record["body"], record["msgId"], record["keys"], record["tags"]) == (
        fifth.body.decode(),
        "UNIQ0005",
        ["key5", "shared"],
        "TagA",
    )
    assert record["offsetMsgId"] == offset_msg_id(fifth.physical_offset)

    two = inspect(store.root, "dump", str(fifth.physical_offset), "-c", "2", "-o", "ndjson")
    assert [json.loads(line)["commitLogOffset"] for line in two.out.splitlines()] == [
        r.physical_offset for r in store.records[5:7]
    ]
    whole = inspect(store.root, "dump", "--file", "00000000000000001024", "-o", "json").json()
    assert [r["commitLogOffset"] for r in whole] == [
        r.physical_offset for r in store.records if 1024 <= r.physical_offset < 2048
    ]

    table = inspect(store.root, "dump", str(fifth.physical_offset), "--hex", "--preview", "8")
    assert "00000000  62 6f 64 79 2d 35 62 6f" in table.out
    assert f"commitlog/00000000000000000000@{fifth.physical_offset}" in table.out
    assert "UNIQ_KEY=UNIQ0005" in table.out and "matches the body" in table.out


def test_dump_parses_each_record_once(
    inspect: Inspect, store: SpecStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every dumped record is decoded exactly once, the first one included, and no framing
    pass runs ahead of the decoding."""
    decoded: Counter[int] = Counter()
    framed: list[int] = []

    def counting_decode(buf: Any, pos: int = 0, *, with_body: bool = True) -> MessageRecord:
        record = decode_record(buf, pos, with_body=with_body)
        decoded[record.physical_offset] += 1
        return record

    def counting_frames(buf: Any, pos: int, limit: int) -> Iterator[Frame]:
        for frame in iter_frames(buf, pos, limit):
            framed.append(frame[0])
            yield frame

    monkeypatch.setattr(offline_reader, "decode_record", counting_decode)
    monkeypatch.setattr(offline_scan, "decode_record", counting_decode)
    monkeypatch.setattr(offline_scan, "iter_frames", counting_frames)

    fifth = store.records[5]
    three = inspect(store.root, "dump", str(fifth.physical_offset), "-c", "3", "-o", "ndjson")
    assert three.code == 0
    dumped = [json.loads(line)["commitLogOffset"] for line in three.out.splitlines()]
    assert dumped == [r.physical_offset for r in store.records[5:8]]
    assert decoded == Counter(dumped) and framed == []

    decoded.clear()
    whole = inspect(store.root, "dump", "--file", "00000000000000001024", "-o", "json")
    dumped = [r["commitLogOffset"] for r in whole.json()]
    assert dumped == [r.physical_offset for r in store.records if 1024 <= r.physical_offset < 2048]
    assert decoded == Counter(dumped) and framed == []


def test_dump_decodes_bodies_with_a_charset(inspect: Inspect, tmp_path: Path) -> None:
    store = SpecStore(tmp_path / "store", commitlog_file_size=4096)
    stored = store.append("T", 0, "订单已支付".encode("gbk"))
    store.write()
    gbk = inspect(store.root, "dump", str(stored.physical_offset), "--charset", "gbk")
    assert "订单已支付" in gbk.out
    (record,) = inspect(store.root, "dump", str(stored.physical_offset), "-o", "json").json()
    assert record["bodyEncoding"] == "base64"
    bad = inspect(store.root, "dump", "0", "--charset", "no-such-charset")
    assert bad.code == 2 and "unknown charset" in bad.err


def test_dump_where_no_record_starts_names_the_file_and_position(
    inspect: Inspect, store: SpecStore
) -> None:
    target = store.records[2].physical_offset + 3
    result = inspect(store.root, "dump", str(target))
    assert result.code == 1
    assert result.err.count("\n") == 1 and result.err.startswith("rmq: error: ")
    assert f"commitlog/00000000000000000000@{target}" in result.err
    assert inspect(store.root, "dump").code == 2


def test_queue_reads_through_the_consume_queue(inspect: Inspect, store: SpecStore) -> None:
    expected = [r for r in store.records if (r.topic, r.queue_id) == ("TopicTest", 1)]
    rows = inspect(store.root, "queue", "TopicTest", "1", "-o", "json").json()
    assert [(r["queueOffset"], r["body"]) for r in rows] == [
        (r.queue_offset, r.body.decode()) for r in expected
    ]
    window = inspect(
        store.root, "queue", "TopicTest", "1", "--from", "1", "--to", "3", "-o", "json"
    )
    assert [r["queueOffset"] for r in window.json()] == [1, 2]
    assert len(inspect(store.root, "queue", "TopicTest", "1", "-c", "1", "-o", "json").json()) == 1


def test_queue_reports_a_missing_file_and_a_bad_entry(inspect: Inspect, tmp_path: Path) -> None:
    store = SpecStore(tmp_path / "store", commitlog_file_size=4096)
    for n in range(12):
        store.append("T", 0, b"m%d" % n)
    store.write()
    middle, _ = store.cq_path("T", 0, 5)
    middle.unlink()
    path, pos = store.cq_path("T", 0, 11)
    data = bytearray(path.read_bytes())
    CQ_ENTRY.pack_into(data, pos, 8192, 100, 0)
    path.write_bytes(bytes(data))

    result = inspect(store.root, "queue", "T", "0", "-o", "json")
    assert result.code == 1
    assert [r["queueOffset"] for r in result.json()] == [0, 1, 2, 3, 4, 10]
    warnings = result.err.splitlines()
    assert warnings[0] == (
        "rmq: warning: consumequeue/T/0: queue offsets 5..9 are missing: no consume queue "
        "file holds them (the next file is 00000000000000000200)"
    )
    assert warnings[1].startswith(
        "rmq: warning: consumequeue/T/0/00000000000000000200@20: queue offset 11 points at "
        "commitlog offset 8192"
    )
    table = inspect(store.root, "queue", "T", "0")
    assert "queue offset 11 points at commitlog offset 8192" in table.out


def test_lookups_by_id_key_and_unique_key(inspect: Inspect, store: SpecStore) -> None:
    seventh = store.records[7]
    by_offset = inspect(store.root, "by-id", offset_msg_id(seventh.physical_offset), "-o", "json")
    assert [r["commitLogOffset"] for r in by_offset.json()] == [seventh.physical_offset]
    by_uniq = inspect(store.root, "by-id", "UNIQ0007", "-o", "json").json()
    assert [r["commitLogOffset"] for r in by_uniq] == [seventh.physical_offset]
    missing = inspect(store.root, "by-id", offset_msg_id(seventh.physical_offset + 1))
    assert missing.code == 1 and missing.err.startswith("rmq: error: no message with id")
    # the right offset, another broker's host: not this store's message
    elsewhere = (STORE_HOST[:4] + struct.pack(">i", 10921)).hex().upper()
    other_id = elsewhere + offset_msg_id(seventh.physical_offset)[16:]
    other_host = inspect(store.root, "by-id", other_id)
    assert other_host.code == 1
    assert "the record at its offset was stored by 192.168.1.10:10911" in other_host.err

    shared = [r.physical_offset for n, r in enumerate(store.records[:12]) if n % 4]
    in_topic = [
        r.physical_offset
        for n, r in enumerate(store.records[:12])
        if n % 4 and r.topic == "TopicTest"
    ]
    for extra in ([], ["--scan"]):
        rows = inspect(store.root, "by-key", "shared", "-t", "TopicTest", *extra, "-o", "json")
        assert [r["commitLogOffset"] for r in rows.json()] == in_topic
        everywhere = inspect(store.root, "by-key", "shared", *extra, "-o", "json").json()
        assert [r["commitLogOffset"] for r in everywhere] == shared
    window = inspect(
        store.root,
        "by-key",
        "shared",
        "--begin",
        str(T0 + 4000),
        "--end",
        str(T0 + 8000),
        "-o",
        "json",
    )
    assert [r["storeTimestamp"] for r in window.json()] == [T0 + 5000, T0 + 6000, T0 + 7000]
    unique = inspect(store.root, "by-unique-key", "UNIQ0003", "-o", "json").json()
    assert [r["msgId"] for r in unique] == ["UNIQ0003"]
    assert inspect(store.root, "by-unique-key", "key3", "-o", "json").json() == []


def test_search_by_time_and_filters(inspect: Inspect, store: SpecStore) -> None:
    begin = "2023-11-14T22:13:23+00:00"  # T0 + 3 s
    rows = inspect(store.root, "search", "--begin", begin, "--end", str(T0 + 6000), "-o", "json")
    assert [r["storeTimestamp"] for r in rows.json()] == [T0 + n * 1000 for n in range(3, 7)]
    tagged = inspect(store.root, "search", "-t", "TopicTest", "--tag", "TagB", "-o", "json").json()
    assert [r["commitLogOffset"] for r in tagged] == [
        r.physical_offset
        for n, r in enumerate(store.records[:12])
        if r.topic == "TopicTest" and n % 2 == 0
    ]
    assert len(inspect(store.root, "search", "-c", "2", "-o", "json").json()) == 2
    bad = inspect(store.root, "search", "--begin", "yesterday")
    assert bad.code == 2 and "'--begin'" in bad.err


def test_export_writes_message_records(inspect: Inspect, store: SpecStore, tmp_path: Path) -> None:
    out = tmp_path / "orders.ndjson"
    result = inspect(store.root, "export", "-t", "Orders", "--broker-name", "b1", "--out", str(out))
    assert (result.code, result.out, result.err) == (0, "", "")
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    orders = [r for r in store.records if r.topic == "Orders"]
    assert [list(line) for line in lines] == [RECORD_KEYS] * len(orders)
    assert [(r["brokerName"], r["commitLogOffset"], r["body"]) for r in lines] == [
        ("b1", r.physical_offset, r.body.decode()) for r in orders
    ]
    stdout = inspect(store.root, "export", "--key", "key6")
    assert [json.loads(line)["msgId"] for line in stdout.out.splitlines()] == ["UNIQ0006"]
    inside = inspect(store.root, "export", "--out", str(store.root / "config" / "x.ndjson"))
    assert inside.code == 2 and "inside the store directory" in inside.err
    assert not (store.root / "config" / "x.ndjson").exists()


def test_stats_per_queue_and_per_topic(inspect: Inspect, store: SpecStore) -> None:
    rows = inspect(store.root, "stats", "-o", "json").json()
    expected: dict[tuple[str, int], Counter[str]] = {}
    for n, r in enumerate(store.records):
        tags = expected.setdefault((r.topic, r.queue_id), Counter())
        if n < 12:
            tags["TagA" if n % 2 else "TagB"] += 1
    assert [(r["topic"], r["queueId"], r["tags"]) for r in rows] == [
        (topic, queue_id, dict(tags)) for (topic, queue_id), tags in sorted(expected.items())
    ]
    assert sum(r["messages"] for r in rows) == 13
    assert sum(r["bytes"] for r in rows) == sum(r.size for r in store.records)
    by_topic = inspect(store.root, "stats", "--by", "topic", "-o", "json").json()
    assert [(r["topic"], r["messages"]) for r in by_topic] == [("Orders", 4), ("TopicTest", 9)]
    table = inspect(store.root, "stats", "-t", "TopicTest", "--by", "topic").out
    assert "TagA=4,TagB=4" in table
    assert table.split()[:4] == ["TOPIC", "MESSAGES", "STORED", "BYTES"]


# -- verify and damage ---------------------------------------------------------------------


def test_verify_a_clean_store(inspect: Inspect, store: SpecStore) -> None:
    result = inspect(store.root, "verify", "-o", "json")
    data = result.json()
    assert (result.code, data["ok"], data["problems"], data["records"]) == (0, True, [], 13)
    assert data["indexEntries"] == len(store.index)
    assert "clean" in inspect(store.root, "verify").out


def _flip_body(store: SpecStore) -> tuple[str, str, int]:
    path, pos = store.commitlog_path(store.records[4].physical_offset)
    flip(path, pos + 84 + 4 + 2)
    return "crc-mismatch", f"commitlog/{path.name}", pos


def _truncate(store: SpecStore) -> tuple[str, str, int]:
    path, pos = store.commitlog_path(store.records[-2].physical_offset)
    path.write_bytes(path.read_bytes()[: pos + 40])
    return "truncated-record", f"commitlog/{path.name}", pos


def _drop_queue_file(store: SpecStore) -> tuple[str, str, int]:
    path, _ = store.cq_path("TopicTest", 0, 5)
    path.unlink()
    return "cq-missing-entry", "consumequeue/TopicTest/0", 0


def _index_past_the_end(store: SpecStore) -> tuple[str, str, int]:
    store.index.append((index_hash("TopicTest#ghost"), len(store.log) + 4096, T0 + 99_000))
    store.write_index()
    return (
        "index-entry-not-a-record",
        "index/" + store.index_path.name,
        store.index_entry_position(len(store.index)),
    )


@pytest.mark.parametrize("damage", [_flip_body, _truncate, _drop_queue_file, _index_past_the_end])
def test_verify_names_file_and_offset_of_damage(
    inspect: Inspect, tmp_path: Path, damage: Callable[[SpecStore], tuple[str, str, int]]
) -> None:
    store = SpecStore(tmp_path / "store")
    for n in range(30):
        store.append("TopicTest", n % 2, b"payload-%d" % n, keys=f"k{n}", uniq=f"U{n:04d}")
    store.write()
    kind, file, offset = damage(store)
    result = inspect(store.root, "verify", "-o", "json")
    assert result.code == 1
    found = [(p["kind"], p["file"], p["offset"]) for p in result.json()["problems"]]
    assert (kind, file, offset) in found
    table = inspect(store.root, "verify")
    assert table.code == 1 and file in table.out
    assert re.search(r"RESULT +[1-9][0-9]* problems? found", table.out)


COMMANDS: list[list[str]] = [
    ["overview", "-o", "json"],
    ["overview"],
    ["files", "consumequeue", "-o", "json"],
    ["files", "index"],
    ["checkpoint"],
    ["stats", "-o", "json"],
    ["verify", "-o", "json"],
    ["queue", "TopicTest", "0", "-o", "json"],
    ["queue", "Orders", "1"],
    ["by-key", "shared", "-o", "json"],
    ["by-id", "UNIQ0005"],
    ["search", "--begin", str(T0 + 2000), "-o", "json"],
    ["export"],
    ["dump", "--file", "00000000000000001024"],
    ["dump", "0", "-c", "20", "-o", "json"],
    ["config", "offsets"],
    ["config-diff"],
]


def test_random_damage_is_diagnosed_never_a_crash(inspect: Inspect, tmp_path: Path) -> None:
    rng = random.Random(20240601)
    pristine = build(tmp_path / "pristine")
    files = [p for p in pristine.root.rglob("*") if p.is_file()]
    resized = 0
    diagnosed = 0
    for attempt in range(12):
        root = tmp_path / f"damaged{attempt}"
        shutil.copytree(pristine.root, root)
        victim = root / rng.choice(files).relative_to(pristine.root)
        data = bytearray(victim.read_bytes())
        if data and rng.random() < 0.7:
            for _ in range(rng.randint(1, 6)):
                data[rng.randrange(len(data))] = rng.randrange(256)
        else:
            del data[rng.randrange(len(data) + 1) :]
        size_changed = len(data) != victim.stat().st_size
        victim.write_bytes(bytes(data))
        warned = []
        for command in COMMANDS:
            result = inspect(root, *command)
            if command[0] not in ("verify", "config-diff") and "rmq: warning: " in result.err:
                warned.append(command)
            assert result.code in (0, 1), (victim, command, result)
            assert "unexpected error" not in result.err and "Traceback" not in result.err
            assert all(
                line.startswith(("rmq: error: ", "rmq: warning: "))
                for line in result.err.splitlines()
            ), (victim, command, result.err)
            if result.code == 1 and command[0] != "verify":
                assert result.err, (victim, command, result)
        verdict = inspect(root, "verify", "-o", "json")
        report = verdict.json()
        assert verdict.code == (0 if report["ok"] else 1), (victim, verdict)
        # Damage any command warned about while reading (config-diff's warnings are about
        # missing backups, not damage) is damage verify diagnoses.
        assert not warned or verdict.code == 1, (victim, warned, report["problems"])
        diagnosed += verdict.code
        if size_changed:
            resized += 1
            named = {root / p["file"] for p in report["problems"]}
            assert verdict.code == 1 and victim in named, (victim, report["problems"])
    assert resized > 0 and diagnosed > resized


def test_nothing_is_written_and_no_lock_is_taken(
    inspect: Inspect, store: SpecStore, tmp_path: Path
) -> None:
    store.write_config("consumerOffset.json", '{"offsetTable":{"TopicTest@g":{0:1}}}', backup="{}")
    before = snapshot(store.root)
    for command in COMMANDS:
        inspect(store.root, *command)
    inspect(store.root, "export", "--out", str(tmp_path / "out.ndjson"))
    assert snapshot(store.root) == before
    assert not (store.root / "lock").exists()


def test_not_a_directory(inspect: Inspect, tmp_path: Path) -> None:
    result = inspect(tmp_path / "nope", "overview")
    assert result.code == 2
    assert result.err == (
        f"rmq: error: {tmp_path / 'nope'} is not a directory; "
        "give the broker's store directory (storePathRootDir)\n"
    )


# -- config --------------------------------------------------------------------------------

TOPICS_JSON = """{
\t"dataVersion":{
\t\t"counter":3,
\t\t"timestamp":1700000000000
\t},
\t"topicConfigTable":{
\t\t"TopicTest":{
\t\t\t"order":false,
\t\t\t"perm":6,
\t\t\t"readQueueNums":2,
\t\t\t"topicFilterType":"SINGLE_TAG",
\t\t\t"topicName":"TopicTest",
\t\t\t"topicSysFlag":0,
\t\t\t"writeQueueNums":2
\t\t},
\t\t"Orders":{
\t\t\t"order":false,
\t\t\t"perm":4,
\t\t\t"readQueueNums":2,
\t\t\t"topicFilterType":"SINGLE_TAG",
\t\t\t"topicName":"Orders",
\t\t\t"topicSysFlag":0,
\t\t\t"writeQueueNums":2
\t\t}
\t}
}"""
OFFSETS_JSON = """{
\t"offsetTable":{
\t\t"TopicTest@orders-app":{0:1,1:4
\t\t},
\t\t"Orders@orders-app":{0:2
\t\t}
\t}
}"""
OLD_OFFSETS_JSON = '{"offsetTable":{"TopicTest@orders-app":{0:1,1:1}}}'
DELAY_JSON = '{"offsetTable":{1:1,2:0}}'
GROUPS_JSON = """{
\t"subscriptionGroupTable":{
\t\t"orders-app":{
\t\t\t"brokerId":0,
\t\t\t"consumeBroadcastEnable":false,
\t\t\t"consumeEnable":true,
\t\t\t"groupName":"orders-app",
\t\t\t"retryMaxTimes":16,
\t\t\t"retryQueueNums":1
\t\t}
\t}
}"""


def config_store(tmp_path: Path) -> SpecStore:
    store = SpecStore(tmp_path / "store")
    for n in range(6):
        store.append("TopicTest", n % 2, b"m%d" % n)
    store.append("Orders", 0, b"o")
    for n in range(3):
        store.append("SCHEDULE_TOPIC_XXXX", 0, b"d%d" % n)
    store.write()
    store.write_config("topics.json", TOPICS_JSON)
    store.write_config("consumerOffset.json", OFFSETS_JSON, backup=OLD_OFFSETS_JSON)
    store.write_config("delayOffset.json", DELAY_JSON)
    store.write_config("subscriptionGroup.json", GROUPS_JSON)
    return store


def test_config_views(inspect: Inspect, tmp_path: Path) -> None:
    store = config_store(tmp_path)
    topics = inspect(store.root, "config", "topics", "-o", "json").json()
    assert [
        (t["topicName"], t["permString"], t["storedQueues"], t["messages"]) for t in topics
    ] == [
        ("Orders", "R--", 1, 1),
        ("TopicTest", "RW-", 2, 6),
    ]
    offsets = inspect(store.root, "config", "offsets", "-o", "json").json()
    assert [(o["topic"], o["queueId"], o["offset"], o["maxOffset"], o["lag"]) for o in offsets] == [
        ("Orders", 0, 2, 1, 0),
        ("TopicTest", 0, 1, 3, 2),
        ("TopicTest", 1, 4, 3, 0),
    ]
    assert {o["group"] for o in offsets} == {"orders-app"}
    delay = inspect(store.root, "config", "delay", "-o", "json").json()
    assert delay == [
        {"level": 1, "delay": "1s", "queueId": 0, "offset": 1, "maxOffset": 3, "pending": 2},
        {"level": 2, "delay": "5s", "queueId": 1, "offset": 0, "maxOffset": None, "pending": None},
    ]
    (group,) = inspect(store.root, "config", "groups", "-o", "json").json()
    assert (group["groupName"], group["retryMaxTimes"]) == ("orders-app", 16)
    assert inspect(store.root, "config", "filters", "-o", "json").json() == []
    assert "LAG" in inspect(store.root, "config", "offsets").out


def test_config_falls_back_to_the_backup_and_reports_garbage(
    inspect: Inspect, tmp_path: Path
) -> None:
    store = config_store(tmp_path)
    (store.root / "config" / "consumerOffset.json").write_text("")
    result = inspect(store.root, "config", "offsets", "-o", "json")
    assert [(o["queueId"], o["offset"]) for o in result.json()] == [(0, 1), (1, 1)]
    assert "config/consumerOffset.json.bak: the main file is missing" in result.err
    (store.root / "config" / "topics.json").write_text("{garbage")
    broken = inspect(store.root, "config", "topics")
    assert broken.code == 1
    assert (
        broken.err.startswith("rmq: error: cannot load config file") and broken.err.count("\n") == 1
    )


def test_config_diff_against_backup_and_another_store(inspect: Inspect, tmp_path: Path) -> None:
    store = config_store(tmp_path)
    changes = inspect(store.root, "config-diff", "offsets", "-o", "json").json()
    assert changes == [
        {
            "file": "consumerOffset.json",
            "path": "offsetTable/Orders@orders-app/0",
            "change": "added",
            "old": None,
            "new": 2,
        },
        {
            "file": "consumerOffset.json",
            "path": "offsetTable/TopicTest@orders-app/1",
            "change": "changed",
            "old": 1,
            "new": 4,
        },
    ]
    missing = inspect(store.root, "config-diff", "topics")
    assert (missing.code, missing.err) == (
        0,
        "rmq: warning: config/topics.json: no .bak to compare with\n",
    )
    other = SpecStore(tmp_path / "other")
    other.write()
    other.write_config("delayOffset.json", '{"offsetTable":{1:0,2:0}}')
    against = inspect(
        store.root, "config-diff", "delay", "--against", str(other.root), "-o", "json"
    )
    assert [(c["path"], c["old"], c["new"]) for c in against.json()] == [("offsetTable/1", 0, 1)]
