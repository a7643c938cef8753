"""An empty `consumerOffset.json` under Apache's broker and rmq's, differential.

With a good `.bak` beside it both read the offsets from the `.bak` (Apache's
`ConfigManager.load`).  Without one Apache starts and the group's offset is gone; rmq stops
with one line naming the file (a deliberate difference, docs/spec-notes.md).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from rmq.store.layout import CONSUMER_OFFSET_JSON
from tests.cli_forkserver import run as cli_run
from tests.conformance.java import ensure_built, start_apache_broker
from tests.offsets import commit_offset, committed_offset
from tests.procs import RmqProcess, RmqProcesses, rmq_command

GROUP, TOPIC = "MetaGroup", "MetaTopic"
OFFSET = 42


def start_apache(processes: RmqProcesses) -> RmqProcess:
    ensure_built()
    return start_apache_broker(processes, "apache-meta", namesrv_addr=None, props={})


def start_rmq(processes: RmqProcesses) -> RmqProcess:
    return processes.start_broker("rmq-meta", namesrv=None)


STARTS: dict[str, Callable[[RmqProcesses], RmqProcess]] = {
    "apache": start_apache,
    "rmq": start_rmq,
}


def stopped_with_offset(kind: str, root: Path) -> tuple[RmqProcesses, RmqProcess, Path]:
    """A broker of `kind` that committed OFFSET for GROUP, stopped (SIGTERM persists it);
    its processes, itself and its consumerOffset.json."""
    root.mkdir(parents=True, exist_ok=True)
    processes = RmqProcesses(root)
    broker = STARTS[kind](processes)
    commit_offset(broker, GROUP, TOPIC, OFFSET)
    assert broker.stop() in (0, 143)
    offsets = broker.home / "store" / "config" / CONSUMER_OFFSET_JSON
    assert f'"{TOPIC}@{GROUP}"' in offsets.read_text()
    return processes, broker, offsets


@pytest.mark.conformance
@pytest.mark.parametrize("kind", ["apache", "rmq"])
def test_an_empty_offsets_file_is_read_from_its_backup(kind: str, tmp_path: Path) -> None:
    processes, broker, offsets = stopped_with_offset(kind, tmp_path)
    try:
        shutil.copyfile(offsets, offsets.with_name(offsets.name + ".bak"))
        offsets.write_bytes(b"")

        restarted = processes.restart(broker)

        assert committed_offset(restarted, GROUP, TOPIC) == OFFSET
        restarted.stop()
    finally:
        processes.kill_all()


@pytest.mark.conformance
def test_without_a_backup_apache_starts_empty_and_rmq_stops(tmp_path: Path) -> None:
    processes, apache, offsets = stopped_with_offset("apache", tmp_path / "apache")
    try:
        offsets.with_name(offsets.name + ".bak").unlink(missing_ok=True)
        offsets.write_bytes(b"")
        restarted = processes.restart(apache)
        assert committed_offset(restarted, GROUP, TOPIC) != OFFSET
        restarted.stop()
    finally:
        processes.kill_all()

    processes, rmq, offsets = stopped_with_offset("rmq", tmp_path / "rmq")
    offsets.with_name(offsets.name + ".bak").unlink(missing_ok=True)
    offsets.write_bytes(b"")
    result = cli_run(
        rmq_command(list(rmq.args)),
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "HOME": str(rmq.home)},
        check=False,
    )
    assert result.returncode == 1
    assert f"rmq: error: cannot load config file: {offsets} is empty" in result.stderr
