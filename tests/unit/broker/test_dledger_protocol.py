"""The DLedger RPC bodies byte for byte, and the vote and heartbeat rules answered by one node
fed crafted requests (no network)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rmq.server.broker.dledger.config import DLedgerConfig, PeersError, broker_id_of, parse_peers
from rmq.server.broker.dledger.elector import Elector
from rmq.server.broker.dledger.member import MemberState, Role
from rmq.server.broker.dledger.protocol import (
    Code,
    DLedgerRequestCode,
    PushType,
    base,
    decode_body,
    encode_body,
    entry_from_json,
    push_request,
    push_response,
    request_command,
    response_command,
)
from rmq.store.dledger import statefiles
from rmq.store.dledger.entry import Entry
from rmq.store.dledger.ledger import Ledger

PEERS = "n0-127.0.0.1:40911;n1-127.0.0.1:40912;n2-127.0.0.1:40913"


def test_peers_split_at_the_first_dash_and_broker_ids_follow_the_self_id() -> None:
    assert parse_peers(PEERS + ";") == {
        "n0": "127.0.0.1:40911",
        "n1": "127.0.0.1:40912",
        "n2": "127.0.0.1:40913",
    }
    assert parse_peers("a-b-host:1") == {"a": "b-host:1"}
    with pytest.raises(PeersError):
        parse_peers("n0:127.0.0.1:1")
    assert [broker_id_of(i) for i in ("n0", "n1", "n30")] == [1, 2, 31]
    with pytest.raises(PeersError):
        DLedgerConfig("g", "n7", parse_peers(PEERS), "/tmp")


def test_a_push_of_hello_is_the_json_dledger_writes() -> None:
    head = base("g", "n0", "n1", leader_id="n0", term=3)
    body = push_request(head, PushType.APPEND, 4, Entry(5, 3, 265, b"hello"))
    assert encode_body(body) == (
        b'{"batch":false,"batchEntry":[],"code":200,"commitIndex":4,"count":1,'
        b'"entry":{"body":"aGVsbG8=","bodyCrc":0,"chainCrc":0,"channel":0,"index":5,'
        b'"magic":1,"pos":265,"size":53,"term":3},"firstEntryIndex":5,"group":"g",'
        b'"lastEntryIndex":5,"leaderId":"n0","localId":"n0","remoteId":"n1","term":3,'
        b'"totalSize":0,"type":"APPEND"}'
    )
    commit = push_request(head, PushType.COMMIT, 4)
    assert b'"count":0' in encode_body(commit) and b'"firstEntryIndex":-1' in encode_body(commit)
    assert b'"entry"' not in encode_body(commit)
    assert entry_from_json(decode_body(encode_body(body))["entry"]) == Entry(5, 3, 265, b"hello")


def test_a_push_answer_has_the_followers_range_and_no_index_for_a_commit() -> None:
    head = base("g", "n0", "n1", leader_id="n0", term=3)
    append = push_request(head, PushType.APPEND, 4, Entry(5, 3, 265, b"hello"))
    assert encode_body(push_response(append, Code.SUCCESS, 0, 5)) == (
        b'{"beginIndex":0,"code":200,"count":1,"endIndex":5,"group":"g","index":5,"term":3}'
    )
    commit = push_request(head, PushType.COMMIT, 4)
    assert encode_body(push_response(commit, Code.SUCCESS, 0, 5)) == (
        b'{"beginIndex":0,"code":200,"count":0,"endIndex":5,"group":"g","term":3}'
    )


def test_frames_carry_no_header_and_answers_are_remoting_code_200() -> None:
    request = request_command(DLedgerRequestCode.VOTE, {"group": "g"})
    assert (request.code, request.ext_fields, bytes(request.body or b"")) == (
        51001,
        None,
        b'{"group":"g"}',
    )
    response = response_command(base(None, None, None, term=4, code=Code.EXPIRED_TERM))
    assert response.code == 200 and response.body == b'{"code":403,"term":4}'


Scenario = Callable[[Elector, MemberState, Ledger], None]


def with_node(
    tmp_path: Path, scenario: Scenario, *, term: int = 5, vote: str | None = None
) -> None:
    config = DLedgerConfig("g", "n1", parse_peers(PEERS), str(tmp_path))
    statefiles.write_term(str(tmp_path / "dledger-n1"), statefiles.TermState(term, vote))

    async def run() -> None:
        ledger = Ledger(str(tmp_path / "dledger-n1"), data_file_size=4096, index_file_size=32 * 64)
        ledger.recover()
        member = MemberState(config)
        sent: list[Any] = []

        async def send(peer: str, kind: str, body: dict[str, Any]) -> dict[str, Any]:
            sent.append((peer, kind))
            raise ConnectionError

        scenario(Elector(member, ledger, send), member, ledger)
        ledger.close()

    asyncio.run(run())


def vote(term: int, end_term: int = -1, end_index: int = -1, leader: str = "n0") -> dict[str, Any]:
    body = base("g", leader, "n1", leader_id=leader, term=term)
    body.update(ledgerEndIndex=end_index, ledgerEndTerm=end_term)
    return body


def test_vote_rules_in_dledgers_order(tmp_path: Path) -> None:
    def scenario(elector: Elector, member: MemberState, ledger: Ledger) -> None:
        for _ in range(3):
            ledger.append_as_leader(4, b"x")  # my log ends at index 2, term 4

        def result(request: dict[str, Any]) -> tuple[str, int]:
            answer = elector.handle_vote(request, False)
            return answer["voteResult"], answer["term"]

        assert result(vote(5, 4, 2, leader="n9")) == ("REJECT_UNKNOWN_LEADER", 5)
        assert result(vote(5, 4, 2, leader="n1")) == ("REJECT_UNEXPECTED_LEADER", 5)
        assert result(vote(9, 3, 50)) == ("REJECT_EXPIRED_LEDGER_TERM", 5)
        assert result(vote(9, 4, 1)) == ("REJECT_SMALL_LEDGER_END_INDEX", 5)
        assert result(vote(4, 4, 2)) == ("REJECT_EXPIRED_VOTE_TERM", 5)
        assert result(vote(5, 4, 2)) == ("ACCEPT", 5)
        assert statefiles.read_term(member.base_dir) == statefiles.TermState(5, "n0")
        assert result(vote(5, 4, 2, leader="n2")) == ("REJECT_ALREADY_VOTED", 5)
        member.leader_id = "n0"
        assert result(vote(5, 4, 2, leader="n2")) == ("REJECT_ALREADY_HAS_LEADER", 5)
        assert result(vote(7, 4, 2, leader="n2")) == ("REJECT_TERM_NOT_READY", 5)
        assert member.role is Role.CANDIDATE and elector.need_increase_term
        assert member.known_max_term == 7

    with_node(tmp_path, scenario)


def test_a_vote_for_a_term_below_the_ledgers_is_rejected_with_the_ledger_term(
    tmp_path: Path,
) -> None:
    def scenario(elector: Elector, member: MemberState, ledger: Ledger) -> None:
        ledger.append_as_leader(8, b"x")
        answer = elector.handle_vote(vote(5, 8, 0), False)
        assert (answer["voteResult"], answer["term"]) == ("REJECT_TERM_SMALL_THAN_LEDGER", 8)

    with_node(tmp_path, scenario)


def test_heartbeat_rules(tmp_path: Path) -> None:
    def scenario(elector: Elector, member: MemberState, ledger: Ledger) -> None:
        def beat(term: int, leader: str = "n0") -> tuple[int, int]:
            answer = elector.handle_heartbeat(base("g", leader, "n1", leader_id=leader, term=term))
            return answer["code"], answer["term"]

        assert beat(5, "n9") == (Code.UNKNOWN_MEMBER, 5)
        assert beat(5, "n1") == (Code.UNEXPECTED_MEMBER, 5)
        assert beat(4) == (Code.EXPIRED_TERM, 5)
        assert beat(5) == (Code.SUCCESS, -1)
        assert (member.role, member.leader_id) == (Role.FOLLOWER, "n0")
        assert beat(5) == (Code.SUCCESS, -1)
        assert beat(5, "n2") == (Code.INCONSISTENT_LEADER, -1)
        assert beat(6, "n2") == (Code.TERM_NOT_READY, -1)
        assert member.role is Role.CANDIDATE and member.term == 5

    with_node(tmp_path, scenario)
