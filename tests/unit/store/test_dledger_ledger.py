"""The DLedger log on disk: entry and index bytes, blanks, appends, truncation, recovery,
the checkpoint and term files."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from rmq.store.dledger import statefiles
from rmq.store.dledger.entry import Entry, decode_entry
from rmq.store.dledger.ledger import Ledger, LedgerError

HEADER = struct.Struct(">iiqqqiiii")
UNIT = struct.Struct(">iqiqq")


def open_ledger(base: Path, data_file_size: int = 4096, index_file_size: int = 32 * 64) -> Ledger:
    ledger = Ledger(str(base), data_file_size=data_file_size, index_file_size=index_file_size)
    ledger.recover()
    return ledger


def data_file(base: Path, start: int = 0) -> bytes:
    return (base / "data" / f"{start:020d}").read_bytes()


def index_file(base: Path, start: int = 0) -> bytes:
    return (base / "index" / f"{start:020d}").read_bytes()


def test_entry_and_index_bytes_follow_the_reference_field_list(tmp_path: Path) -> None:
    ledger = open_ledger(tmp_path)
    first = ledger.append_as_leader(3, b"hello")
    second = ledger.append_as_leader(3, b"world!")
    ledger.flush()
    data = data_file(tmp_path)
    # magic, size, index, term, pos, channel, chainCrc, bodyCrc, body length, then the body
    assert HEADER.unpack_from(data, 0) == (1, 53, 0, 3, 0, 0, 0, 0, 5)
    assert data[48:53] == b"hello"
    assert HEADER.unpack_from(data, 53) == (1, 54, 1, 3, 53, 0, 0, 0, 6)
    assert data[53 + 48 : 53 + 54] == b"world!"
    assert data[107:111] == bytes(4)
    index = index_file(tmp_path)
    # magic, pos, size, index, term
    assert UNIT.unpack_from(index, 0) == (1, 0, 53, 0, 3)
    assert UNIT.unpack_from(index, 32) == (1, 53, 54, 1, 3)
    assert (first.pos, first.size, second.pos, second.index) == (0, 53, 53, 1)
    assert ledger.get(1) == second
    assert (ledger.begin_index, ledger.end_index, ledger.end_term) == (0, 1, 3)


def test_an_entry_that_does_not_fit_with_8_bytes_to_spare_goes_to_the_next_file(
    tmp_path: Path,
) -> None:
    ledger = open_ledger(tmp_path, data_file_size=200)
    ledger.append_as_leader(1, bytes(60))  # 108 bytes at 0
    moved = ledger.append_as_leader(1, bytes(60))  # 108 + 8 > 92 left
    assert moved.pos == 200
    first = data_file(tmp_path)
    assert struct.unpack_from(">ii", first, 108) == (-1, 92)
    assert first[116:] == bytes(84)
    assert HEADER.unpack_from(data_file(tmp_path, 200), 0)[:5] == (1, 108, 1, 1, 200)
    exact = ledger.append_as_leader(1, bytes(36))  # 84 bytes: 308 + 84 + 8 == 400 fits
    assert exact.pos == 308
    assert ledger.append_as_leader(1, b"").pos == 400  # 48 + 8 > 8 left
    assert struct.unpack_from(">ii", data_file(tmp_path, 200), 192) == (-1, 8)


def test_get_outside_the_log_is_index_out_of_range(tmp_path: Path) -> None:
    ledger = open_ledger(tmp_path)
    with pytest.raises(LedgerError) as caught:
        ledger.get(0)
    assert caught.value.code == "INDEX_OUT_OF_RANGE"
    ledger.append_as_leader(1, b"x")
    with pytest.raises(LedgerError):
        ledger.get(1)


def test_a_follower_fed_the_leaders_entries_has_the_same_files(tmp_path: Path) -> None:
    leader = open_ledger(tmp_path / "a", data_file_size=300)
    follower = open_ledger(tmp_path / "b", data_file_size=300)
    for n in range(9):
        follower.append_as_follower(leader.append_as_leader(1 + n // 4, bytes([n]) * (10 * n)))
    leader.flush()
    follower.flush()
    names = sorted(os.listdir(tmp_path / "a" / "data"))
    assert len(names) > 1 and names == sorted(os.listdir(tmp_path / "b" / "data"))
    for name in names:
        assert (tmp_path / "a" / "data" / name).read_bytes() == (
            tmp_path / "b" / "data" / name
        ).read_bytes()
    assert index_file(tmp_path / "a") == index_file(tmp_path / "b")


def test_a_follower_refuses_an_entry_out_of_order_or_at_another_position(tmp_path: Path) -> None:
    follower = open_ledger(tmp_path)
    with pytest.raises(LedgerError) as caught:
        follower.append_as_follower(Entry(1, 1, 0, b"x"))
    assert caught.value.code == "INCONSISTENT_INDEX"
    with pytest.raises(LedgerError) as caught:
        follower.append_as_follower(Entry(0, 1, 100, b"x"))
    assert caught.value.code == "DISK_ERROR"
    assert follower.end_index == -1


def test_truncate_at_an_entry_the_log_holds_keeps_it_and_drops_the_rest(tmp_path: Path) -> None:
    ledger = open_ledger(tmp_path)
    entries = [ledger.append_as_leader(1, b"e%d" % n) for n in range(5)]
    assert ledger.truncate(entries[2]) == 2
    assert (ledger.end_index, ledger.data.max_offset()) == (2, entries[3].pos)
    assert ledger.index.max_offset() == 3 * 32
    again = ledger.append_as_leader(2, b"new")
    assert (again.index, again.pos) == (3, entries[3].pos)
    ledger.flush()
    assert data_file(tmp_path)[again.pos + again.size :][:64] == bytes(64)


def test_truncate_at_an_entry_the_log_does_not_hold_writes_it(tmp_path: Path) -> None:
    ledger = open_ledger(tmp_path)
    entries = [ledger.append_as_leader(1, b"old%d" % n) for n in range(4)]
    replacement = Entry(2, 2, entries[2].pos, b"leader's")
    ledger.truncate(replacement)
    assert ledger.get(2) == replacement
    assert (ledger.end_index, ledger.end_term) == (2, 2)
    assert ledger.data.max_offset() == replacement.pos + replacement.size


def test_truncate_on_an_empty_follower_rebuilds_from_the_leaders_begin(tmp_path: Path) -> None:
    ledger = open_ledger(tmp_path, data_file_size=1000)
    first = Entry(7, 3, 1210, b"begin")
    ledger.truncate(first)
    assert (ledger.begin_index, ledger.end_index) == (7, 7)
    assert ledger.get(7) == first
    following = Entry(8, 3, 1210 + first.size, b"next")
    ledger.append_as_follower(following)
    assert ledger.get(8) == following
    assert sorted(os.listdir(tmp_path / "data")) == [f"{1000:020d}"]


def test_truncate_at_the_first_entry_on_an_empty_follower_writes_it(tmp_path: Path) -> None:
    ledger = open_ledger(tmp_path)
    first = Entry(0, 1, 0, b"first")
    assert ledger.truncate(first) == 0
    assert (ledger.begin_index, ledger.end_index, ledger.get(0)) == (0, 0, first)


def test_committed_index_moves_forward_only_and_stops_at_the_end(tmp_path: Path) -> None:
    ledger = open_ledger(tmp_path)
    entries = [ledger.append_as_leader(1, b"x" * n) for n in range(1, 4)]
    ledger.update_committed_index(1)
    assert (ledger.committed_index, ledger.committed_pos) == (1, entries[1].pos + entries[1].size)
    ledger.update_committed_index(0)
    assert ledger.committed_index == 1
    ledger.update_committed_index(10)
    assert (ledger.committed_index, ledger.committed_pos) == (2, entries[2].pos + entries[2].size)


def test_checkpoint_and_term_files_are_java_properties_text(tmp_path: Path) -> None:
    ledger = open_ledger(tmp_path)
    for n in range(5):
        ledger.append_as_leader(1, b"%d" % n)
    ledger.update_committed_index(2)
    ledger.persist_checkpoint()
    assert (tmp_path / "checkpoint").read_text() == "committedIndex=2\nendIndex=4\n"
    ledger.update_committed_index(3)
    ledger.persist_checkpoint()
    assert (tmp_path / "checkpoint.bak").read_text() == "committedIndex=2\nendIndex=4\n"
    assert statefiles.read_committed_index(str(tmp_path)) == 3
    statefiles.write_term(str(tmp_path), statefiles.TermState(3, "n1"))
    assert (tmp_path / "currterm").read_text() == "voteLeader=n1\ncurrTerm=3\n"
    statefiles.write_term(str(tmp_path), statefiles.TermState(4, None))
    assert (tmp_path / "currterm").read_text() == "voteLeader=\ncurrTerm=4\n"
    assert statefiles.read_term(str(tmp_path)) == statefiles.TermState(4, None)
    (tmp_path / "currterm").write_text("")  # torn: the .bak holds the previous state
    assert statefiles.read_term(str(tmp_path)) == statefiles.TermState(3, "n1")
    assert statefiles.read_term(str(tmp_path / "none")) == statefiles.TermState(0, None)


def test_recovery_after_a_clean_close_restores_the_positions(tmp_path: Path) -> None:
    ledger = open_ledger(tmp_path, data_file_size=300)
    entries = [ledger.append_as_leader(1 + n // 3, bytes(20 + n)) for n in range(12)]
    ledger.update_committed_index(8)
    ledger.close()
    again = Ledger(str(tmp_path), data_file_size=300, index_file_size=32 * 64)
    found = again.recover()
    assert (found.begin_index, found.end_index, found.end_term, found.committed_index) == (
        0,
        11,
        4,
        8,
    )
    assert found.cut == []
    assert again.get(11) == entries[11]
    assert again.append_as_leader(5, b"z").pos == again.data.max_offset() - 49


def test_recovery_cuts_a_torn_entry_and_the_uncommitted_tail_stays(tmp_path: Path) -> None:
    ledger = open_ledger(tmp_path)
    entries = [ledger.append_as_leader(2, b"body%d" % n) for n in range(6)]
    ledger.update_committed_index(2)
    ledger.persist_checkpoint()
    ledger.flush()
    torn = entries[5]
    # killed while writing the last entry: its body is there, its first 8 bytes not yet
    ledger.data.files[0].buffer[torn.pos : torn.pos + 8] = bytes(8)
    ledger.data.close()
    ledger.index.close()
    again = Ledger(str(tmp_path), data_file_size=4096, index_file_size=32 * 64)
    found = again.recover()
    assert (found.end_index, found.committed_index) == (4, 2)
    assert again.data.max_offset() == torn.pos
    assert again.index.max_offset() == 5 * 32
    assert data_file(tmp_path)[torn.pos : torn.pos + torn.size] == bytes(torn.size)
    assert again.append_as_leader(3, b"after").pos == torn.pos


def test_recovery_stops_at_an_entry_whose_header_disagrees(tmp_path: Path) -> None:
    ledger = open_ledger(tmp_path)
    entries = [ledger.append_as_leader(1, b"entry%d" % n) for n in range(4)]
    struct.pack_into(">q", ledger.data.files[0].buffer, entries[2].pos + 24, 999)  # wrong pos
    ledger.data.close()
    ledger.index.close()
    again = Ledger(str(tmp_path), data_file_size=4096, index_file_size=32 * 64)
    assert again.recover().end_index == 1
    assert again.data.max_offset() == entries[2].pos


def test_recovery_rewrites_index_units_that_do_not_match(tmp_path: Path) -> None:
    ledger = open_ledger(tmp_path)
    entries = [ledger.append_as_leader(1, b"entry%d" % n) for n in range(4)]
    ledger.flush()
    ledger.index.files[0].buffer[64:128] = bytes(64)  # units 2 and 3 lost
    ledger.data.close()
    ledger.index.close()
    again = Ledger(str(tmp_path), data_file_size=4096, index_file_size=32 * 64)
    assert again.recover().end_index == 3
    assert [again.get(n) for n in range(4)] == entries
    assert UNIT.unpack_from(index_file(tmp_path), 96) == (1, entries[3].pos, entries[3].size, 3, 1)


def test_recovery_with_no_index_files_rebuilds_them(tmp_path: Path) -> None:
    ledger = open_ledger(tmp_path, data_file_size=200)
    entries = [ledger.append_as_leader(1, bytes(50)) for _ in range(5)]
    ledger.close()
    for name in os.listdir(tmp_path / "index"):
        os.unlink(tmp_path / "index" / name)
    again = Ledger(str(tmp_path), data_file_size=200, index_file_size=32 * 64)
    assert again.recover().end_index == 4
    assert [again.get(n) for n in range(5)] == entries


def test_a_decoded_entry_compares_equal_to_the_one_appended(tmp_path: Path) -> None:
    ledger = open_ledger(tmp_path)
    entry = ledger.append_as_leader(9, b"payload")
    raw = data_file(tmp_path)[: entry.size]
    assert decode_entry(raw) == entry
    assert entry.same_as(decode_entry(raw))
