"""Damaged consume queue, index and commitlog files under a real `rmq broker`.

3,000 messages are sent through `rmq produce` to a broker (256 KiB commitlog files, a topic
of four queues), the broker is stopped, one store file is damaged, and the broker is started
again.  Whatever the damage, the start succeeds, `rmq consume --from first -e` reads all 3,000
messages, the damaged file is found under ``<store>/recovery/`` and in `rmq inspect recovery`,
the broker log names it in one WARN line, and after a clean stop `rmq inspect verify` finds
nothing wrong (no consume queue or index entry missing):

* a consume queue file overwritten with random bytes (the queue's only file, or the middle
  one of three): the start check finds it and the queue is rebuilt from the commitlog;
* an empty commitlog file after the last one, a consume queue file cut short, an index file
  cut short (each used to stop the start): set aside, the queue or the index rebuilt.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Mapping
from pathlib import Path

import pytest

from tests.cli_forkserver import run as cli_run
from tests.integration.test_damaged_commitlog import (
    BODY_PAD,
    FILE_SIZE,
    MESSAGES,
    PROPS,
    TOPIC,
    commitlog_files,
    consume_bodies,
    produce,
    reports,
    run,
)
from tests.procs import RmqProcess, RmqProcesses, rmq_command

SMALL_QUEUE_FILES = {"mappedFileSizeConsumeQueue": 300 * 20}  # 750 entries: three files
SMALL_INDEX = {"maxHashSlotNum": 1000, "maxIndexNum": 4000}


def fill_and_stop(
    rmq_processes: RmqProcesses, props: Mapping[str, object]
) -> tuple[RmqProcess, RmqProcess, Path]:
    namesrv = rmq_processes.start_namesrv()
    broker = rmq_processes.start_broker(namesrv=namesrv, props={**PROPS, **props})
    produce(namesrv, 0, MESSAGES)
    assert broker.stop() == 0
    return namesrv, broker, broker.home / "store"


def queue_files(store: Path, queue_id: int = 1) -> list[Path]:
    return sorted((store / "consumequeue" / TOPIC / str(queue_id)).iterdir())


def check_everything_readable(
    rmq_processes: RmqProcesses, namesrv: RmqProcess, broker: RmqProcess, damaged: Path
) -> dict[str, object]:
    """Restart, read every message, find the damaged file reported once; returns the report."""
    store = broker.home / "store"
    relative = str(damaged.relative_to(store))
    broker = rmq_processes.restart_broker(broker, namesrv)
    bodies = consume_bodies(namesrv)
    assert sorted(bodies) == [f"message {n:05d} {BODY_PAD}" for n in range(MESSAGES)]
    warnings = [
        line
        for line in broker.log_text().splitlines()
        if " WARNING " in line and damaged.name in line
    ]
    assert len(warnings) == 1, warnings
    [report] = reports(store)
    [moved] = report["setAside"]
    assert moved["file"] == relative
    assert (store / moved["movedTo"]).is_file()
    shown = json.loads(run(["inspect", str(store), "recovery", "-o", "json"]))
    assert [m["file"] for r in shown for m in r["setAside"]] == [relative]
    assert broker.stop() == 0
    verify = cli_run(
        rmq_command(["inspect", str(store), "verify", "-o", "json"]),
        capture_output=True,
        timeout=120,
    )
    assert verify.returncode == 0, verify.stdout.decode()
    assert json.loads(verify.stdout)["ok"] is True
    return report


@pytest.mark.parametrize("layout", ["one-file", "three-files"])
def test_a_consume_queue_file_overwritten_with_random_bytes_is_rebuilt_at_start(
    rmq_processes: RmqProcesses, layout: str
) -> None:
    props: Mapping[str, object] = SMALL_QUEUE_FILES if layout == "three-files" else {}
    namesrv, broker, store = fill_and_stop(rmq_processes, props)
    files = queue_files(store)
    assert len(files) == (3 if layout == "three-files" else 1)
    damaged = files[len(files) // 2]
    damaged.write_bytes(random.Random(6).randbytes(damaged.stat().st_size))
    report = check_everything_readable(rmq_processes, namesrv, broker, damaged)
    assert list(report["rebuiltQueues"]) == [f"{TOPIC}/1"]  # type: ignore[call-overload]


def test_an_empty_commitlog_file_after_the_last_one_is_set_aside(
    rmq_processes: RmqProcesses,
) -> None:
    namesrv, broker, store = fill_and_stop(rmq_processes, {})
    last = commitlog_files(store)[-1]
    extra = last.with_name(f"{int(last.name) + FILE_SIZE:020d}")
    extra.touch()
    check_everything_readable(rmq_processes, namesrv, broker, extra)


def test_a_consume_queue_file_cut_short_is_set_aside_and_the_queue_rebuilt(
    rmq_processes: RmqProcesses,
) -> None:
    namesrv, broker, store = fill_and_stop(rmq_processes, SMALL_QUEUE_FILES)
    damaged = queue_files(store)[0]
    os.truncate(damaged, 1234)
    report = check_everything_readable(rmq_processes, namesrv, broker, damaged)
    assert list(report["rebuiltQueues"]) == [f"{TOPIC}/1"]  # type: ignore[call-overload]


def test_an_index_file_cut_short_is_set_aside_and_its_keys_indexed_again(
    rmq_processes: RmqProcesses,
) -> None:
    namesrv, broker, store = fill_and_stop(rmq_processes, SMALL_INDEX)
    [damaged] = sorted((store / "index").iterdir())
    os.truncate(damaged, damaged.stat().st_size // 2)
    report = check_everything_readable(rmq_processes, namesrv, broker, damaged)
    assert report["reindexedFrom"] == 0
