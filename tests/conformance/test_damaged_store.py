"""A damaged store opened by Apache's broker and by rmq's (matrix section "Stores").

rmq's broker writes 60 messages (each with a key) on 4 KiB commitlog files (four or more
files) and stops cleanly.  Copies of the store are then damaged and each broker starts on its
own copy with its own name server (test_damaged_store_files.py damages the derived files):

* one bit flipped in a message body in the third-last commitlog file (the first one normal
  recovery walks): Apache's recovery cuts the log at that record and deletes the later files;
  rmq's skips that record alone (a deliberate difference, docs/spec-notes.md);
* the last commitlog file cut short at its last record: Apache's broker does not start
  (`MappedFileQueue.load`: "length not matched"); rmq's grows the file back and serves every
  message.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from rmq.common.recordwalk import iter_frames
from tests.cli_forkserver import run as cli_run
from tests.conformance import store_runs as runs
from tests.conformance.java import ensure_built
from tests.procs import RmqProcesses, rmq_command

SECTION = "Stores"
TOPIC = "DamagedStore"
MESSAGES = 60


def row(name: str, passed: str = "pass") -> pytest.MarkDecorator:
    return pytest.mark.matrix(SECTION, name, "result", passed=passed)


def rmq(*args: str, input: bytes = b"") -> str:
    result = cli_run(rmq_command(args), input=input, capture_output=True, timeout=120)
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout.decode()


def bodies(namesrv_addr: str) -> list[str]:
    out = rmq("consume", TOPIC, "--from", "first", "-e", "-f", "%v\\n", "-n", namesrv_addr)
    return out.splitlines()


def commitlog_files(store: Path) -> list[Path]:
    return sorted((store / "commitlog").iterdir())


def write_store(root: Path) -> Path:
    """A clean rmq store under ``root`` holding MESSAGES messages of TOPIC (message n has the
    key ``key-<n>``) on four or more commitlog files."""
    ensure_built()
    store = root / "written"
    processes = RmqProcesses(root)
    try:
        namesrv = processes.start_namesrv("writer-namesrv")
        broker = runs.start_rmq_on(processes, "writer", namesrv.addr, store)
        lines = "".join(
            json.dumps({"body": f"message {n:03d} {'y' * 60}", "keys": [f"key-{n:03d}"]}) + "\n"
            for n in range(MESSAGES)
        )
        rmq("produce", TOPIC, "--summary", "-n", namesrv.addr, input=lines.encode())
        broker.stop_cleanly(timeout=30)
    finally:
        processes.kill_all()
    assert len(commitlog_files(store)) >= 4
    return store


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_store(tmp_path_factory.mktemp("damaged-store"))


def processes_in(root: Path) -> RmqProcesses:
    root.mkdir(parents=True, exist_ok=True)
    return RmqProcesses(root)


def serve(processes: RmqProcesses, store: Path, apache: bool) -> str:
    """A name server and the broker on ``store``; returns the name server's address."""
    namesrv = processes.start_namesrv("namesrv")
    start = runs.start_apache_on if apache else runs.start_rmq_on
    start(processes, "apache" if apache else "rmq", namesrv.addr, store)
    return namesrv.addr


@row(
    "a flipped body bit mid-commitlog: Apache's broker cuts the log there, rmq's loses that "
    "message alone",
    passed="different (deliberate)",
)
def test_flipped_bit(written: Path, tmp_path: Path) -> None:
    counts: dict[str, list[str]] = {}
    damaged = ""
    for apache in (True, False):
        name = "apache" if apache else "rmq"
        store = tmp_path / f"{name}-store"
        shutil.copytree(written, store)
        path = commitlog_files(store)[-3]
        data = path.read_bytes()
        frames = list(iter_frames(data, 0, len(data)))
        _, _, _, _, body_pos, body_end, _ = frames[len(frames) // 2]
        damaged = data[body_pos:body_end].decode()
        with path.open("r+b") as file:
            file.seek(body_pos + 2)
            file.write(bytes([data[body_pos + 2] ^ 0x10]))
        processes = processes_in(tmp_path / name)
        try:
            counts[name] = bodies(serve(processes, store, apache))
        finally:
            processes.kill_all()
    everything = [f"message {n:03d} {'y' * 60}" for n in range(MESSAGES)]
    assert sorted(counts["rmq"]) == [b for b in everything if b != damaged]
    assert len(counts["apache"]) < everything.index(damaged) + 1
    assert set(counts["apache"]) < set(counts["rmq"])


@row(
    "the last commitlog file cut short at its last record: Apache's broker does not start, "
    "rmq's grows the file back and serves every message",
    passed="different (deliberate)",
)
def test_short_last_file(written: Path, tmp_path: Path) -> None:
    stores = {}
    for name in ("apache", "rmq"):
        store = tmp_path / f"{name}-store"
        shutil.copytree(written, store)
        last = commitlog_files(store)[-1]
        data = last.read_bytes()
        os.truncate(last, max(frame[1] for frame in iter_frames(data, 0, len(data))))
        stores[name] = store
    processes = processes_in(tmp_path / "apache")
    try:
        with pytest.raises(AssertionError, match="exited with"):
            serve(processes, stores["apache"], apache=True)
    finally:
        processes.kill_all()
    logs = "".join(
        p.read_text(errors="replace") for p in (tmp_path / "apache").rglob("*.log") if p.is_file()
    )
    assert "length not matched message store config value" in logs
    processes = processes_in(tmp_path / "rmq")
    try:
        assert len(bodies(serve(processes, stores["rmq"], apache=False))) == MESSAGES
    finally:
        processes.kill_all()
