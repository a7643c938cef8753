"""Damaged derived files at start, Apache's broker and rmq's (matrix section "Stores").

The store rmq's broker wrote for test_damaged_store.py (60 messages with keys, 4 KiB
commitlog files, consume queue files of 8 entries, one index file of 200 entries); a copy of
it is damaged for each broker, Apache's first:

* the first consume queue file of a queue overwritten with random bytes of its size: Apache's
  broker starts, its consume queue recovery ends the queue at the first entry it does not take
  (a negative offset or size) and deletes the queue's later files, so none of that queue's
  messages is readable although the commitlog holds them (the queue is one whose last record
  is not the commitlog's last: see `damaged_queue`); rmq's moves the file to
  ``<store>/recovery/<time>/`` and rebuilds the queue from the commitlog;
* that file cut short (70 bytes), or an empty commitlog file after the last one: Apache's
  broker does not start (MappedFileQueue.load: "length not matched"); rmq's sets the file
  aside (and rebuilds the queue);
* the index file cut to half its size: Apache's broker starts (the file is mapped at its full
  size again, the cut part zeros) and does not find the keys whose entries were cut; rmq's sets
  it aside and indexes every key again from the commitlog.

rmq serves every message in each case and lists the file in `rmq inspect recovery` (deliberate
differences, docs/spec-notes.md).
"""

from __future__ import annotations

import os
import random
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from rmq.store.consumequeue import ENTRY
from tests.brokercalls import query_by_key
from tests.conformance import store_runs as runs
from tests.conformance.test_damaged_store import (
    MESSAGES,
    TOPIC,
    commitlog_files,
    processes_in,
    rmq,
    row,
    write_store,
)
from tests.procs import RemotingSession, RmqProcess, RmqProcesses

EVERYTHING = [f"message {n:03d} {'y' * 60}" for n in range(MESSAGES)]


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_store(tmp_path_factory.mktemp("damaged-files"))


def damaged_queue(store: Path) -> int:
    """The queue whose last record comes first in the commitlog.  (Apache's broker dispatches
    again the records after the end of the queue reaching furthest: had the damaged queue
    been that one, the other queues' later records would come back into it, at other queue
    offsets.)"""
    ends = {}
    for folder in (store / "consumequeue" / TOPIC).iterdir():
        data = b"".join(path.read_bytes() for path in sorted(folder.iterdir()))
        ends[int(folder.name)] = max(
            offset for offset, _, _ in ENTRY.iter_unpack(data[: len(data) // 20 * 20])
        )
    return min(ends, key=lambda queue: ends[queue])


def first_queue_file(store: Path) -> Path:
    folder = store / "consumequeue" / TOPIC / str(damaged_queue(store))
    return sorted(folder.iterdir())[0]


def damaged_copy(written: Path, store: Path, damage: Callable[[Path], Path]) -> str:
    """A copy of ``written`` at ``store`` damaged by ``damage``; the damaged file's path
    relative to the store."""
    shutil.copytree(written, store)
    return str(damage(store).relative_to(store))


def serve(processes: RmqProcesses, store: Path, apache: bool) -> tuple[str, RmqProcess]:
    """A name server and the broker on ``store``: the name server's address and the broker."""
    namesrv = processes.start_namesrv("namesrv")
    start = runs.start_apache_on if apache else runs.start_rmq_on
    broker = start(processes, "apache" if apache else "rmq", namesrv.addr, store)
    return namesrv.addr, broker


def consumed(namesrv_addr: str) -> list[tuple[int, str]]:
    """(queue id, body) of every message `rmq consume --from first` reads."""
    out = rmq("consume", TOPIC, "--from", "first", "-e", "-f", "%p %v\\n", "-n", namesrv_addr)
    return [(int(q), body) for q, body in (line.split(" ", 1) for line in out.splitlines())]


def keys_found(broker: RmqProcess) -> list[int]:
    with RemotingSession(timeout=10) as session:
        return [
            n
            for n in range(MESSAGES)
            if query_by_key(session, broker, TOPIC, f"key-{n:03d}") == [EVERYTHING[n].encode()]
        ]


def apache_refuses(written: Path, root: Path, damage: Callable[[Path], Path]) -> None:
    """Apache's broker on a damaged copy exits at start, naming the file: length not matched."""
    relative = damaged_copy(written, root / "apache-store", damage)
    processes = processes_in(root / "apache")
    try:
        with pytest.raises(AssertionError, match="exited with"):
            serve(processes, root / "apache-store", apache=True)
    finally:
        processes.kill_all()
    logs = "".join(
        p.read_text(errors="replace") for p in (root / "apache").rglob("*.log") if p.is_file()
    )
    assert f"{relative}\t" in logs
    assert "length not matched message store config value" in logs


def served(
    written: Path, root: Path, damage: Callable[[Path], Path], apache: bool
) -> tuple[str, list[tuple[int, str]], list[int]]:
    """What a broker started on a damaged copy serves: the damaged file (relative to the
    store), (queue id, body) of every message consumed from the first offsets, and the
    numbers of the messages found by their keys."""
    name = "apache" if apache else "rmq"
    relative = damaged_copy(written, root / f"{name}-store", damage)
    processes = processes_in(root / name)
    try:
        namesrv_addr, broker = serve(processes, root / f"{name}-store", apache)
        return relative, consumed(namesrv_addr), keys_found(broker)
    finally:
        processes.kill_all()


def rmq_repairs(written: Path, root: Path, damage: Callable[[Path], Path]) -> list[tuple[int, str]]:
    """rmq's broker on a damaged copy serves every message, finds every key and reports the
    file set aside (`rmq inspect recovery`); returns (queue id, body) of every message."""
    relative, messages, keys = served(written, root, damage, apache=False)
    assert sorted(body for _, body in messages) == EVERYTHING
    store = root / "rmq-store"
    [report] = runs.inspect_json(store, "recovery")
    [moved] = report["setAside"]
    assert moved["file"] == relative
    assert (store / moved["movedTo"]).is_file()
    assert keys == list(range(MESSAGES))
    return messages


def random_bytes(store: Path) -> Path:
    path = first_queue_file(store)
    path.write_bytes(random.Random(6).randbytes(path.stat().st_size))
    return path


def short_queue_file(store: Path) -> Path:
    path = first_queue_file(store)
    os.truncate(path, 70)
    return path


def half_index_file(store: Path) -> Path:
    [path] = sorted((store / "index").iterdir())
    os.truncate(path, path.stat().st_size // 2)
    return path


def empty_commitlog_file(store: Path) -> Path:
    last = commitlog_files(store)[-1]
    path = last.with_name(f"{int(last.name) + last.stat().st_size:020d}")
    path.touch()
    return path


@row(
    "a consume queue file overwritten with random bytes: Apache's broker ends the queue at the "
    "first entry it rejects and none of its messages is readable, rmq's rebuilds the queue "
    "from the commitlog and serves every message",
    passed="different (deliberate)",
)
def test_random_consume_queue_file(written: Path, tmp_path: Path) -> None:
    _, apache, _ = served(written, tmp_path, random_bytes, apache=True)
    messages = rmq_repairs(written, tmp_path, random_bytes)
    elsewhere = sorted(body for queue, body in messages if queue != damaged_queue(written))
    assert len(elsewhere) < MESSAGES
    assert sorted(body for _, body in apache) == elsewhere


@row(
    "a consume queue file cut short: Apache's broker does not start (length not matched), "
    "rmq's sets it aside, rebuilds the queue and serves every message",
    passed="different (deliberate)",
)
def test_short_consume_queue_file(written: Path, tmp_path: Path) -> None:
    apache_refuses(written, tmp_path, short_queue_file)
    rmq_repairs(written, tmp_path, short_queue_file)


@row(
    "an index file cut to half its size: Apache's broker starts and does not find the keys "
    "past the cut, rmq's sets it aside and finds every key",
    passed="different (deliberate)",
)
def test_short_index_file(written: Path, tmp_path: Path) -> None:
    _, messages, found = served(written, tmp_path, half_index_file, apache=True)
    assert sorted(body for _, body in messages) == EVERYTHING
    assert 0 < len(found) < MESSAGES
    rmq_repairs(written, tmp_path, half_index_file)


@row(
    "an empty commitlog file after the last one: Apache's broker does not start (length not "
    "matched), rmq's sets it aside and serves every message",
    passed="different (deliberate)",
)
def test_empty_commitlog_file(written: Path, tmp_path: Path) -> None:
    apache_refuses(written, tmp_path, empty_commitlog_file)
    rmq_repairs(written, tmp_path, empty_commitlog_file)
