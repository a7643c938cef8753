"""An index file that cannot be created, Apache's broker and rmq's (matrix section "Stores").

Each broker has its store on its own small tmpfs whose inodes run out: a message is sent and
indexed (the first index file exists), every inode left is taken by empty files, and messages
with keys are sent past the first index file's 99 entries, so the next index file cannot be
created (ENOSPC from open).  Then the empty files are deleted.

* Apache's broker takes every send, but its dispatch thread stops at the record that needs
  the new file: 4.9.8's IndexService.getAndCreateLastIndexFile unlocks, in a `finally`, a
  write lock it never took when the file cannot be opened, and the IllegalMonitorStateException
  skips retryGetAndCreateIndexFile's three tries a second apart and its WRITE_INDEX_FILE_ERROR
  flag (which would refuse later puts).  ReputMessageService logs it and dispatches the same
  record again at once, without pause (three stack traces a time), so only the messages up to
  that record are readable.  Once the inodes are back the file is created and every message is
  dispatched and indexed.
* rmq's takes every send, serves every message, and indexes the waiting keys once a file can
  be created (a deliberate difference, docs/spec-notes.md).

Why inodes and not bytes: Apache's MappedFile extends a new file through FileChannel.map,
which on JDK 17 sets the size without reserving blocks, so an index file larger than the free
space is created all the same (a 40,000,040-byte file on a tmpfs with 24 MiB free was); only a
file that cannot be opened at all fails.  rmq reserves the blocks (posix_fallocate) and also
finds a file too large for the free space (tests/integration/test_full_disk.py).  Needs root to
mount the tmpfs (skipped with the reason otherwise).
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import pytest

from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand
from tests.brokercalls import pull_bodies, query_by_key
from tests.conformance.clusters import BROKER_PROPS
from tests.conformance.java import ensure_built, start_apache_broker
from tests.procs import RemotingSession, RmqProcess, RmqProcesses, send_header
from tests.tmpfs import mounted_tmpfs, use_up_inodes

SECTION = "Stores"
TOPIC = "IndexDiskTopic"
MIB = 1024 * 1024
SENDS = 250
"""Messages sent while no file can be created: two and a half index files' worth."""
INDEX_ENTRIES = 99
"""Keys an index file of ``maxIndexNum`` 100 takes (its entry 0 is never used)."""
STUCK = "java.lang.IllegalMonitorStateException"
"""What Apache's dispatch thread logs each time it fails to create an index file (4.9.8's
getAndCreateLastIndexFile unlocks a lock it never took when the file cannot be created)."""


def props(disk: Path) -> dict[str, object]:
    return {
        **BROKER_PROPS,
        "storePathRootDir": disk / "store",
        "storePathCommitLog": disk / "store" / "commitlog",
        "mappedFileSizeCommitLog": MIB,
        "maxHashSlotNum": 64,
        "maxIndexNum": 100,
    }


def send(session: RemotingSession, broker: RmqProcess, n: int) -> RemotingCommand:
    header = send_header(TOPIC, {"WAIT": "true", "KEYS": f"key-{n}"}, producer_group="IndexDisk")
    return session.invoke(
        broker.addr, RequestCode.SEND_MESSAGE_V2, header, body=b"body %d" % n, timeout=15
    )


def wait_for(what: str, condition: object, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {timeout} s")
        time.sleep(0.1)


def start_indexed(
    processes: RmqProcesses, session: RemotingSession, disk: Path, apache: bool
) -> RmqProcess:
    """The broker on ``disk`` with message 0 sent and found by its key."""
    if apache:
        broker = start_apache_broker(processes, "apache", namesrv_addr=None, props=props(disk))
    else:
        broker = processes.start_broker("rmq", namesrv=None, props=props(disk))
    assert send(session, broker, 0).code == ResponseCode.SUCCESS
    wait_for("key-0 indexed", lambda: query_by_key(session, broker, TOPIC, "key-0") == [b"body 0"])
    return broker


def processes_in(root: Path) -> RmqProcesses:
    root.mkdir()
    return RmqProcesses(root)


def logs(root: Path) -> str:
    return "".join(p.read_text(errors="replace") for p in root.rglob("*.log") if p.is_file())


def take_sends_without_inodes(
    session: RemotingSession, broker: RmqProcess, disk: Path
) -> tuple[list[bytes], list[Path]]:
    """Every inode of ``disk`` used up, SENDS more messages sent (each must be taken); returns
    the bodies of every message sent and the files holding the inodes."""
    inodes = use_up_inodes(disk)
    for n in range(1, SENDS + 1):
        answer = send(session, broker, n)
        assert answer.code == ResponseCode.SUCCESS, (n, answer.code, answer.remark)
    return [b"body %d" % n for n in range(SENDS + 1)], inodes


def every_key_found(session: RemotingSession, broker: RmqProcess) -> bool:
    return all(
        query_by_key(session, broker, TOPIC, f"key-{n}") == [b"body %d" % n]
        for n in range(SENDS + 1)
    )


@pytest.mark.matrix(
    SECTION,
    "an index file that cannot be created (no inode left): Apache's dispatch thread retries "
    "that record without pause and no later message is readable until a file can be created, "
    "rmq's serves every message at once and indexes the keys once a file can be created",
    "result",
    passed="different (deliberate)",
)
def test_an_index_file_that_cannot_be_created(tmp_path: Path) -> None:
    ensure_built()
    with contextlib.ExitStack() as stack:
        session = stack.enter_context(RemotingSession(timeout=15))
        disks = {
            kind: stack.enter_context(mounted_tmpfs(tmp_path / f"{kind}-disk", 64, inodes=2000))
            for kind in ("apache", "rmq")
        }
        processes = processes_in(tmp_path / "apache")
        stack.callback(processes.kill_all)
        apache = start_indexed(processes, session, disks["apache"], apache=True)
        everything, inodes = take_sends_without_inodes(session, apache, disks["apache"])
        wait_for(
            "Apache's dispatch thread stuck on the record needing a new index file",
            lambda: logs(tmp_path / "apache").count(STUCK) >= 100,
        )
        served = pull_bodies(session, apache, TOPIC)
        assert INDEX_ENTRIES <= len(served) < len(everything)
        assert served == everything[: len(served)]
        assert query_by_key(session, apache, TOPIC, f"key-{SENDS}") == []
        for path in inodes:
            path.unlink()
        wait_for(
            "Apache serves every message once an index file can be created",
            lambda: pull_bodies(session, apache, TOPIC) == everything,
        )
        assert every_key_found(session, apache)
        processes.kill_all()

        processes = processes_in(tmp_path / "rmq")
        stack.callback(processes.kill_all)
        broker = start_indexed(processes, session, disks["rmq"], apache=False)
        everything, inodes = take_sends_without_inodes(session, broker, disks["rmq"])
        assert pull_bodies(session, broker, TOPIC) == everything
        assert query_by_key(session, broker, TOPIC, f"key-{SENDS}") == []
        for path in inodes:
            path.unlink()
        wait_for("rmq indexes the waiting keys", lambda: every_key_found(session, broker))
        assert send(session, broker, SENDS + 1).code == ResponseCode.SUCCESS
        errors = [line for line in broker.log_text().splitlines() if " ERROR " in line]
        assert len([line for line in errors if "cannot write index entries" in line]) == 1, errors
