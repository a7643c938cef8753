"""A classic store opened in DLedger mode (rmq.store.dledger.upgrade): the old commitlog is
closed with a BLANK where its records end, the DLedger log starts at the end of its last file,
and the old records stay readable at their offsets and queue offsets, on the first start and
on every later one."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rmq.common.recordwalk import BLANK_MAGIC
from rmq.store.dledger.ledger import Ledger, node_dir
from rmq.store.dledger.upgrade import JoinedFileQueue, first_file_offset
from rmq.store.errors import StoreError
from rmq.store.store import GetMessageStatus, MessageStore
from tests.unit.store.test_store import message, put_ok, small_config

FILE_SIZE = 4096
COUNT = 25


def dledger_store(root: Path) -> tuple[MessageStore, Ledger]:
    store = MessageStore(small_config(root, mapped_file_size_commit_log=FILE_SIZE))
    ledger = Ledger(node_dir(str(root), "n0"), data_file_size=FILE_SIZE, index_file_size=32 * 64)
    store.use_dledger_data(ledger.data)
    store.start()
    return store, ledger


def test_the_old_records_stay_readable_below_the_dledger_log(tmp_path: Path) -> None:
    classic = MessageStore(small_config(tmp_path, mapped_file_size_commit_log=FILE_SIZE))
    classic.start()
    offsets = [
        put_ok(classic, message(n, body=b"x" * (n * 37 % 300))).physical_offset
        for n in range(COUNT)
    ]
    end = classic.commitlog.max_offset()
    classic.shutdown()
    old_files = sorted(os.listdir(tmp_path / "commitlog"))
    assert len(old_files) > 1

    for start in ("first", "again"):
        store, ledger = dledger_store(tmp_path)
        try:
            divided = int(old_files[-1]) + FILE_SIZE
            assert store.dledger_divided == divided, start
            assert first_file_offset(ledger.data.store_path) == divided
            assert isinstance(store.commitlog.queue, JoinedFileQueue)
            assert store.commitlog.max_offset() == divided
            for n, offset in enumerate(offsets):
                record = store.look_message_by_offset(offset)
                assert record is not None and record.keys == [f"key{n}"]
            result = store.get_messages("TopicTest", 0, 0, 32)
            assert result.status is GetMessageStatus.FOUND
            assert result.message_count == COUNT
            assert store.get_max_offset_in_queue("TopicTest", 0) == COUNT
            with pytest.raises(StoreError):
                store.commitlog.queue.create_next_file(divided)
        finally:
            store.shutdown()
            ledger.close()

    last = (tmp_path / "commitlog" / old_files[-1]).read_bytes()
    at = end - int(old_files[-1])
    assert int.from_bytes(last[at : at + 4], "big") == FILE_SIZE - at
    assert int.from_bytes(last[at + 4 : at + 8], "big") == BLANK_MAGIC
    assert sorted(os.listdir(tmp_path / "commitlog")) == old_files
