"""A process appending to a DLedger log killed with SIGKILL: the log reopens consistent, with
every entry it reported written and its committed index from the last checkpoint."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from rmq.store.dledger.ledger import Ledger

WRITER = textwrap.dedent(
    """
    import sys
    from rmq.store.dledger.ledger import Ledger
    ledger = Ledger(sys.argv[1], data_file_size=1 << 16, index_file_size=32 * 1024)
    ledger.recover()
    n = 0
    while True:
        entry = ledger.append_as_leader(1, b"entry %d " % n * (1 + n % 7))
        if n % 50 == 49:
            ledger.update_committed_index(n - 10)
            ledger.persist_checkpoint()
            print(n, flush=True)
        n += 1
    """
)


def test_a_log_killed_mid_append_reopens_consistent(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(tmp_path)], stdout=subprocess.PIPE, env=env, text=True
    )
    assert writer.stdout is not None
    reported = -1
    for line in writer.stdout:
        reported = int(line)
        if reported >= 999:
            break
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    assert reported >= 999
    ledger = Ledger(str(tmp_path), data_file_size=1 << 16, index_file_size=32 * 1024)
    found = ledger.recover()
    assert found.end_index >= reported
    assert reported - 10 <= found.committed_index <= found.end_index
    for index in range(found.end_index + 1):
        entry = ledger.get(index)
        assert entry.body.startswith(b"entry %d " % index)
        assert entry.body == b"entry %d " % index * (1 + index % 7)
    end = ledger.data.max_offset()
    last = ledger.data.files[-1]
    assert bytes(last.view[end - last.file_from_offset :]) == bytes(
        last.file_size - (end - last.file_from_offset)
    )
    following = ledger.append_as_leader(2, b"after the kill")
    assert following.index == found.end_index + 1
    assert following.pos in (end, last.file_tail_offset)  # here, or the next file
    ledger.close()
