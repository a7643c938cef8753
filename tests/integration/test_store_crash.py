"""Crash tests: a child process appends under load and is killed with SIGKILL at random.

Each cycle starts :mod:`tests.integration.store_crash_child` on the same store directory
(alternating ASYNC_FLUSH and SYNC_FLUSH), kills it at a random moment, sometimes writes
garbage after the last valid record (a torn tail), then recovers the store in this process
and checks what a user relies on:

* every message acknowledged in the cycle (and a sample of earlier ones) is readable at its
  physical offset with the same body, queue id, queue offset and key, and is found through
  its consume queue, its key and its unique key; every message ever acknowledged is still
  queued;
* queue offsets are dense: entry ``i`` of every consume queue is a record with queue offset
  ``i`` in that queue, and the consume queues hold exactly the records of the commitlog, each
  message once;
* a torn tail is cut and reported;
* the offline validator finds no problem in the recovered store.

5 kills in a normal run; 50 with ``RMQ_STRESS=1`` (``make stress``, marker ``stress``).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import NamedTuple

import pytest

from rmq.common.config import FlushDiskType
from rmq.common.message import DispatchInfo, decode_record
from rmq.store.offline.reader import StoreReader
from rmq.store.store import MessageStore
from tests.integration.store_crash_child import QUEUES, TOPIC, body_for, crash_config

REPO = Path(__file__).resolve().parents[2]
NUMBERS_PER_CYCLE = 10_000_000
READY_TIMEOUT_S = 60
EARLIER_SAMPLE = 300


class Ack(NamedTuple):
    queue_id: int
    queue_offset: int
    physical_offset: int


def run_child(root: Path, flush: FlushDiskType, first: int, rng: random.Random) -> dict[int, Ack]:
    """Start the driver, let it append for a random while, SIGKILL it; return its acks."""
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.integration.store_crash_child",
            str(root),
            flush.value,
            str(first),
            str(rng.randrange(1 << 30)),
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdout is not None and child.stderr is not None
    ready = threading.Event()
    chunks: list[bytes] = []

    def read_acks() -> None:
        assert child.stdout is not None
        first_line = child.stdout.readline()
        if first_line == b"ready\n":
            ready.set()
        chunks.extend(iter(lambda: child.stdout.read(65536), b""))  # type: ignore[union-attr]

    reader = threading.Thread(target=read_acks, daemon=True)
    reader.start()
    try:
        if not ready.wait(READY_TIMEOUT_S):
            child.kill()
            pytest.fail(f"crash child did not start: {child.stderr.read().decode()}")
        time.sleep(rng.uniform(0.05, 0.35))
        assert child.poll() is None, child.stderr.read().decode()
        child.send_signal(signal.SIGKILL)
        child.wait(30)
        reader.join(30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stderr.close()
        child.stdout.close()
    acks = {}
    for line in b"".join(chunks).decode().splitlines(keepends=True):
        if line.endswith("\n"):
            n, queue_id, queue_offset, physical_offset = map(int, line.split())
            acks[n] = Ack(queue_id, queue_offset, physical_offset)
    return acks


def tear_tail(root: Path, rng: random.Random) -> tuple[Path, int] | None:
    """Write garbage just after the last valid record; returns (file, position) or None."""
    with StoreReader(root) as reader:
        end = reader.max_physical_offset()
        files = reader.commitlog_files()
    last = files[-1]
    position = end - last.start
    if position + 64 > last.size:
        return None
    with open(last.path, "r+b") as file:
        file.seek(position)
        file.write(bytes(rng.randrange(1, 256) for _ in range(64)))
    return Path(last.path), position


def verify(store: MessageStore, acks: dict[int, Ack], all_acked: dict[int, Ack]) -> None:
    """``acks`` are readable and findable; every acked message is queued; queues are dense
    and hold exactly the commitlog's records."""
    for n, ack in acks.items():
        record = store.look_message_by_offset(ack.physical_offset)
        assert record is not None, f"acked message {n} lost at {ack.physical_offset}"
        assert (record.topic, record.queue_id, record.queue_offset, record.keys) == (
            TOPIC,
            ack.queue_id,
            ack.queue_offset,
            [f"k{n}"],
        ), n
        assert record.body == body_for(n), n
        assert store.get_commitlog_offset_in_queue(TOPIC, ack.queue_id, ack.queue_offset) == (
            ack.physical_offset
        )
        for key in (f"k{n}", f"U{n}"):
            found = store.query_message(TOPIC, key, 32, 0, 2**62).physical_offsets
            assert found == [ack.physical_offset], (n, key)

    in_commitlog: dict[int, int] = {}

    def note(info: DispatchInfo) -> None:
        assert info.keys is not None
        n = int(info.keys[1:])
        assert n not in in_commitlog, f"message {n} stored twice"
        in_commitlog[n] = info.physical_offset

    end = store.commitlog.scan(max(store.min_physical_offset(), 0), check_crc=True, on_record=note)
    assert end == store.max_physical_offset()
    in_queues: dict[int, int] = {}
    for queue_id in range(QUEUES):
        queue = store.get_consume_queue(TOPIC, queue_id)
        if queue is None:
            continue
        for queue_offset in range(queue.max_offset):
            entry = queue.entry_at(queue_offset)
            assert entry is not None, (queue_id, queue_offset)
            view = store.select_one_message_by_offset(entry.physical_offset, entry.size)
            assert view is not None, (queue_id, queue_offset)
            record = decode_record(view, with_body=False)
            assert (record.queue_id, record.queue_offset) == (queue_id, queue_offset)
            n = int(record.keys[0][1:])
            assert n not in in_queues, f"message {n} queued twice"
            in_queues[n] = entry.physical_offset
    assert in_queues == in_commitlog
    assert all(in_queues.get(n) == ack.physical_offset for n, ack in all_acked.items())


def crash_cycles(root: Path, kills: int, seed: int) -> None:
    rng = random.Random(seed)
    acked: dict[int, Ack] = {}
    tears = 0
    for cycle in range(kills):
        flush = FlushDiskType.ASYNC_FLUSH if cycle % 2 == 0 else FlushDiskType.SYNC_FLUSH
        acks = run_child(root, flush, cycle * NUMBERS_PER_CYCLE, rng)
        assert acks, f"cycle {cycle}: the child acknowledged nothing"
        earlier = rng.sample(sorted(acked), min(len(acked), EARLIER_SAMPLE))
        acked.update(acks)
        torn = tear_tail(root, rng) if cycle % 2 == 1 else None
        store = MessageStore(crash_config(root, flush))
        recovery = store.start()
        try:
            assert recovery.abnormal
            if torn is not None:
                tears += 1
                path, position = torn
                assert any(
                    Path(cut.path) == path and cut.position == position and cut.length >= 64
                    for cut in recovery.truncated
                ), recovery.truncated
            verify(store, {**acks, **{n: acked[n] for n in earlier}}, acked)
        finally:
            store.shutdown()
        with StoreReader(root) as reader:
            report = reader.validate()
        assert report.ok, [str(problem) for problem in report.problems]
    assert tears > 0 or kills < 2


def test_acknowledged_messages_survive_sigkill(tmp_path: Path) -> None:
    crash_cycles(tmp_path / "store", kills=5, seed=int(os.environ.get("RMQ_CRASH_SEED", "1")))


@pytest.mark.stress
@pytest.mark.timeout(3600)
@pytest.mark.skipif(os.environ.get("RMQ_STRESS") != "1", reason="set RMQ_STRESS=1 (make stress)")
def test_acknowledged_messages_survive_fifty_sigkills(tmp_path: Path) -> None:
    crash_cycles(tmp_path / "store", kills=50, seed=random.randrange(1 << 30))
