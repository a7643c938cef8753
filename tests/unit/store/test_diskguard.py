"""A full disk: puts refused at once, one ERROR per episode, dispatch resumed where it failed."""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from rmq.store.errors import DiskFullError
from rmq.store.mappedfile import Allocate, MappedFile
from rmq.store.putmessage import PutMessageStatus
from rmq.store.store import MessageStore
from tests.unit.store.test_store import message, put_ok, small_config


class ConsumeQueueDisk:
    """Makes consume queue files impossible to create while ``full`` is set."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.full = False
        self.under = ""
        """Only the stores whose directory ends with this fail."""
        real = MappedFile.create.__func__  # type: ignore[attr-defined]

        def create(cls: type[MappedFile], path: str, file_size: int, *args: Allocate) -> MappedFile:
            if self.full and f"{self.under}{os.sep}consumequeue" in path:
                raise DiskFullError(f"disk full: cannot create {path} ({file_size} bytes)")
            created: MappedFile = real(cls, path, file_size, *args)
            return created

        monkeypatch.setattr(MappedFile, "create", classmethod(create))


@pytest.fixture
def cq_disk(monkeypatch: pytest.MonkeyPatch) -> ConsumeQueueDisk:
    return ConsumeQueueDisk(monkeypatch)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MessageStore]:
    # 10-entry consume queue files: a new file every 10 messages of a queue
    running = MessageStore(small_config(tmp_path, mapped_file_size_consume_queue=10 * 20))
    running.start()
    running.put_gate.interval_ms = 0  # every refused put may try again
    yield running
    running.shutdown()


def errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


def test_a_record_that_cannot_be_dispatched_refuses_puts_until_it_is(
    store: MessageStore, cq_disk: ConsumeQueueDisk, caplog: pytest.LogCaptureFixture
) -> None:
    acked = [put_ok(store, message(n)) for n in range(10)]
    cq_disk.full = True
    with caplog.at_level(logging.INFO, logger="rmq.store"):
        # stored in the commitlog, so answered as stored; its entry waits
        acked.append(put_ok(store, message(10)))
        assert store.get_max_offset_in_queue("TopicTest", 0) == 10
        attempts = store._dispatcher.attempts
        for n in range(200):
            refused = store.put_message(message(11 + n))
            assert refused.status is PutMessageStatus.SERVICE_NOT_AVAILABLE
        # each refused put tried the one waiting record once: flat, not quadratic
        assert store._dispatcher.attempts - attempts == 200
        assert len(errors(caplog)) == 1
        assert "cannot be dispatched" in errors(caplog)[0]
        assert "disk full: cannot create" in errors(caplog)[0]
        cq_disk.full = False
        acked.append(put_ok(store, message(99)))
    assert len(errors(caplog)) == 1
    assert "taking puts again after 200 refused" in caplog.text
    assert store.get_max_offset_in_queue("TopicTest", 0) == 12
    assert [store.get_commitlog_offset_in_queue("TopicTest", 0, n) for n in range(12)] == [
        r.physical_offset for r in acked
    ]
    assert [r.queue_offset for r in acked] == list(range(12))


def test_a_commitlog_file_that_cannot_be_created_refuses_at_once(tmp_path: Path) -> None:
    full = False

    def allocate(fd: int, offset: int, length: int) -> None:
        if full:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        os.posix_fallocate(fd, offset, length)

    store = MessageStore(
        small_config(tmp_path, mapped_file_size_commit_log=4096), allocate=allocate
    )
    store.start()
    try:
        while store.max_physical_offset() + 400 < 4096:
            put_ok(store, message(0, body=bytes(300)))
        full = True
        assert store.put_message(message(1, body=bytes(300))).status is (
            PutMessageStatus.SERVICE_NOT_AVAILABLE
        )
        # the next put is refused without trying: the disk is checked again an interval later
        assert store.put_gate.refusing
        assert store.put_message(message(2)).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
        assert store.put_gate.refused == 1
    finally:
        store.shutdown()


def test_a_disk_over_the_limit_refuses_puts_at_put_time(tmp_path: Path) -> None:
    used = [0.5]
    store = MessageStore(small_config(tmp_path), disk_usage=lambda path: used[0])
    store.start()
    store.put_gate.interval_ms = 0
    try:
        put_ok(store, message(0))
        used[0] = 0.95
        assert store.put_message(message(1)).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
        assert store.put_messages(message(2)).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
        used[0] = 0.6
        put_ok(store, message(3))
        assert not store.put_gate.refusing
    finally:
        store.shutdown()


def test_the_disk_is_looked_at_once_per_interval(tmp_path: Path) -> None:
    looked: list[str] = []

    def usage(path: str) -> float:
        looked.append(path)
        return 0.1

    store = MessageStore(small_config(tmp_path), disk_usage=usage)
    store.start()
    store.put_gate.interval_ms = 60_000
    try:
        for n in range(50):
            put_ok(store, message(n))
        assert len(looked) == 2  # commitlog and consume queue directories, once
    finally:
        store.shutdown()


def test_a_slave_dispatches_what_waited_once_space_is_back(
    tmp_path: Path, cq_disk: ConsumeQueueDisk, caplog: pytest.LogCaptureFixture
) -> None:
    config = {"mapped_file_size_consume_queue": 10 * 20}
    master = MessageStore(small_config(tmp_path / "master", **config))
    slave = MessageStore(small_config(tmp_path / "slave", **config))
    master.start()
    slave.start()
    slave.put_gate.interval_ms = 0

    def replicate() -> None:
        offset = slave.max_physical_offset()
        while offset < master.max_physical_offset():
            data = master.get_commitlog_data(offset)
            assert data is not None and slave.append_to_commitlog(offset, data)
            offset += len(data)

    try:
        cq_disk.under = "slave"
        results = [put_ok(master, message(n)) for n in range(10)]
        replicate()
        cq_disk.full = True
        with caplog.at_level(logging.INFO, logger="rmq.store"):
            for n in range(10, 30):
                results.append(put_ok(master, message(n)))
                replicate()
            assert slave.get_max_offset_in_queue("TopicTest", 0) == 10
            cq_disk.full = False
            put_ok(master, message(30))
            replicate()
        assert slave.get_max_offset_in_queue("TopicTest", 0) == 31
        assert [slave.get_commitlog_offset_in_queue("TopicTest", 0, n) for n in range(30)] == [
            r.physical_offset for r in results
        ]
        assert len(errors(caplog)) == 1 and "taking puts again" in caplog.text
    finally:
        master.shutdown()
        slave.shutdown()
