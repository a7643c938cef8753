"""RocketMQ records inside DLedger entries: offsets = entry pos + 48, queue offsets, and
dispatch of committed entries only."""

from __future__ import annotations

import struct
from pathlib import Path

from rmq.common.message import DispatchInfo, decode_record
from rmq.common.msgid import offset_msg_id, pack_host
from rmq.common.sysflag import TRANSACTION_PREPARED_TYPE
from rmq.store.dledger.ledger import Ledger
from rmq.store.dledger.messagelog import MessageLog
from rmq.store.putmessage import InnerMessage

STORE_HOST = pack_host("192.168.1.10", 30911)
BORN_HOST = pack_host("10.0.0.5", 51234)


def open_log(base: Path, data_file_size: int = 1 << 16) -> MessageLog:
    ledger = Ledger(str(base), data_file_size=data_file_size, index_file_size=32 * 1024)
    ledger.recover()
    return MessageLog(ledger, STORE_HOST, clock=lambda: 1_700_000_000_123)


def message(topic: str = "T", queue_id: int = 0, body: bytes = b"m", **kw: object) -> InnerMessage:
    return InnerMessage(
        topic,
        queue_id,
        body,
        b"TAGS\x01a\x02",
        born_timestamp=1_700_000_000_000,
        born_host=BORN_HOST,
        **kw,  # type: ignore[arg-type]
    )


def test_the_record_in_an_entry_holds_its_own_offset_pos_plus_48(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    first = log.append(1, message(body=b"one"))
    second = log.append(1, message(body=b"two"))
    assert (first.entry.pos, first.physical_offset) == (0, 48)
    assert second.physical_offset == second.entry.pos + 48 == first.entry.size + 48
    log.ledger.flush()
    data = (tmp_path / "data" / f"{0:020d}").read_bytes()
    record = decode_record(data, second.physical_offset)
    assert record.physical_offset == second.physical_offset
    assert (record.topic, record.queue_offset, record.body) == ("T", 1, b"two")
    assert record.offset_msg_id == offset_msg_id(STORE_HOST, second.entry.pos + 48)
    assert struct.unpack_from(">i", data, second.entry.pos + 44)[0] == record.total_size
    assert (
        log.ledger.get(1).body
        == data[second.physical_offset : second.entry.pos + second.entry.size]
    )


def test_queue_offsets_count_per_queue_and_prepared_records_take_none(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    offsets = [log.append(1, message(queue_id=q)).queue_offset for q in (0, 1, 0, 0, 1)]
    assert offsets == [0, 0, 1, 2, 1]
    prepared = log.append(1, message(sys_flag=TRANSACTION_PREPARED_TYPE))
    assert prepared.queue_offset == 0
    assert log.append(1, message()).queue_offset == 3


def test_only_committed_entries_are_dispatched(tmp_path: Path) -> None:
    log = open_log(tmp_path, data_file_size=400)
    appended = [log.append(1, message(body=bytes(40 + n))) for n in range(6)]
    seen: list[DispatchInfo] = []
    assert log.dispatch_committed(seen.append) == 0
    log.ledger.update_committed_index(2)
    assert log.dispatch_committed(seen.append) == 3
    assert [d.physical_offset for d in seen] == [a.physical_offset for a in appended[:3]]
    assert log.record_at(appended[3].physical_offset) is None
    assert log.record_at(appended[2].physical_offset) is not None
    log.ledger.update_committed_index(5)
    assert log.dispatch_committed(seen.append) == 3
    assert [d.queue_offset for d in seen] == list(range(6))
    assert len(log.ledger.data.files) > 1  # the walk crossed a blank into the next file


def test_after_recovery_the_uncommitted_tail_is_kept_but_not_dispatched(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    for n in range(5):
        log.append(1, message(body=b"%d" % n))
    log.ledger.update_committed_index(1)
    log.ledger.close()
    again = open_log(tmp_path)
    assert (again.ledger.end_index, again.ledger.committed_index) == (4, 1)
    seen: list[DispatchInfo] = []
    assert again.dispatch_committed(seen.append) == 2
