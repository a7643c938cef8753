"""A damaged commitlog under a real `rmq broker`: recovery keeps every intact record.

3,000 messages are sent through `rmq produce` to a broker with 256 KiB commitlog files (four
files), the broker is stopped (SIGTERM: normal recovery; kill -9: abnormal recovery), one bit
of one message body in the second file is flipped, and the broker is started again.
`rmq consume --from first -e` then reads 2,999 messages (all but the damaged one, in place),
the recovery report under the store lists the damaged record, the broker log says so at
ERROR, and `rmq inspect recovery` shows it.

Also: a last commitlog file cut short at the acked end is grown back to its mapped size, so
the files written after it keep aligned names and `rmq inspect verify` finds nothing wrong.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from rmq.common.recordwalk import iter_frames
from tests.cli_forkserver import run as cli_run
from tests.procs import RmqProcess, RmqProcesses, rmq_command

TOPIC = "DamagedTopic"
FILE_SIZE = 256 * 1024
MESSAGES = 3000
BODY_PAD = "x" * 120
PROPS = {"mappedFileSizeCommitLog": FILE_SIZE}


def run(args: list[str], *, input: bytes = b"", timeout: float = 120) -> str:
    result = cli_run(rmq_command(args), input=input, capture_output=True, timeout=timeout)
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout.decode()


def produce(namesrv: RmqProcess, first: int, count: int) -> None:
    lines = "".join(f"message {n:05d} {BODY_PAD}\n" for n in range(first, first + count))
    summary = run(
        ["produce", TOPIC, "--async", "--summary", "-n", namesrv.addr], input=lines.encode()
    )
    result = json.loads(summary)
    assert (result["sent"], result["failed"]) == (count, 0), summary


def consume_bodies(namesrv: RmqProcess) -> list[str]:
    out = run(["consume", TOPIC, "--from", "first", "-e", "-f", "%v\\n", "-n", namesrv.addr])
    return out.splitlines()


def commitlog_files(store: Path) -> list[Path]:
    return sorted((store / "commitlog").iterdir())


def flip_a_body_bit(path: Path) -> str:
    """Flip one bit in the body of a record in the middle of ``path``; returns its body."""
    data = bytearray(path.read_bytes())
    frames = list(iter_frames(data, 0, len(data)))
    assert len(frames) > 100
    _, _, _, _, body_pos, body_end, _ = frames[len(frames) // 2]
    body = bytes(data[body_pos:body_end]).decode()
    with open(path, "r+b") as file:
        file.seek(body_pos + 3)
        file.write(bytes([data[body_pos + 3] ^ 0x04]))
    return body


def reports(store: Path) -> list[dict[str, Any]]:
    directory = store / "recovery"
    if not directory.is_dir():
        return []
    return [json.loads(p.read_text()) for p in sorted(directory.glob("*.json"))]


@pytest.mark.parametrize("stop", ["sigterm", "kill"])
def test_a_flipped_bit_in_the_second_of_four_files_loses_only_that_message(
    rmq_processes: RmqProcesses, stop: str
) -> None:
    namesrv = rmq_processes.start_namesrv()
    broker = rmq_processes.start_broker(namesrv=namesrv, props=PROPS)
    store = broker.home / "store"
    produce(namesrv, 0, MESSAGES)
    if stop == "kill":
        broker.kill()
    else:
        assert broker.stop() == 0
    files = commitlog_files(store)
    assert len(files) == 4, [f.name for f in files]
    damaged_body = flip_a_body_bit(files[1])
    broker = rmq_processes.restart_broker(broker, namesrv)
    bodies = consume_bodies(namesrv)
    expected = {f"message {n:05d} {BODY_PAD}" for n in range(MESSAGES)} - {damaged_body}
    assert len(bodies) == MESSAGES - 1
    assert set(bodies) == expected
    [report] = reports(store)
    assert report["mode"] == ("abnormal" if stop == "kill" else "normal")
    [span] = report["skipped"]
    assert (span["file"], span["reason"], span["topic"]) == (files[1].name, "body-crc", TOPIC)
    log = broker.log_text()
    assert "ERROR" in log and "recovery skipped damaged commitlog bytes" in log
    shown = json.loads(run(["inspect", str(store), "recovery", "-o", "json"]))
    assert [s["offset"] for r in shown for s in r["skipped"]] == [span["offset"]]


def test_a_last_file_cut_short_is_grown_back_and_verify_stays_clean(
    rmq_processes: RmqProcesses,
) -> None:
    namesrv = rmq_processes.start_namesrv()
    broker = rmq_processes.start_broker(namesrv=namesrv, props=PROPS)
    store = broker.home / "store"
    produce(namesrv, 0, 1000)
    assert broker.stop() == 0
    last = commitlog_files(store)[-1]
    data = last.read_bytes()
    end = max(frame[1] for frame in iter_frames(data, 0, len(data)))
    os.truncate(last, end)
    broker = rmq_processes.restart_broker(broker, namesrv)
    assert last.stat().st_size == FILE_SIZE
    produce(namesrv, 1000, 1500)  # more than a file's worth
    assert broker.stop() == 0
    names = [f.name for f in commitlog_files(store)]
    assert all(int(name) % FILE_SIZE == 0 for name in names), names
    verify = cli_run(
        rmq_command(["inspect", str(store), "verify", "-o", "json"]),
        capture_output=True,
        timeout=120,
    )
    assert verify.returncode == 0, verify.stdout.decode()
    assert json.loads(verify.stdout)["ok"] is True
    [report] = reports(store)
    assert report["restoredFiles"] == [{"file": last.name, "size": end}]
