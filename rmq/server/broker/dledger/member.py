"""A node's role, term, vote and leader (DLedger's MemberState).

The role starts as CANDIDATE.  The term and the vote are persisted in ``currterm`` whenever the
vote is cast or a new term begins, before any answer that depends on them leaves the node.
"""

from __future__ import annotations

import enum
import os

from rmq.server.broker.dledger.config import DLedgerConfig
from rmq.store.dledger import statefiles
from rmq.store.dledger.ledger import node_dir


class Role(enum.Enum):
    CANDIDATE = "CANDIDATE"
    LEADER = "LEADER"
    FOLLOWER = "FOLLOWER"


class MemberState:
    def __init__(self, config: DLedgerConfig) -> None:
        self.config = config
        self.self_id = config.self_id
        self.group = config.group
        self.base_dir = node_dir(config.store_root, config.self_id)
        os.makedirs(self.base_dir, exist_ok=True)
        persisted = statefiles.read_term(self.base_dir)
        self.term = persisted.term
        self.vote_for = persisted.vote_for
        self.role = Role.CANDIDATE
        self.leader_id: str | None = None
        self.known_max_term = -1
        self.transferee: str | None = None
        self.term_to_take_leadership = -1
        self.peers_live: dict[str, bool] = {}

    def _persist(self) -> None:
        statefiles.write_term(self.base_dir, statefiles.TermState(self.term, self.vote_for))

    def is_peer(self, peer_id: str | None) -> bool:
        return peer_id is not None and peer_id in self.config.peers

    def set_vote_for(self, candidate: str | None) -> None:
        self.vote_for = candidate
        self._persist()

    def next_term(self) -> int:
        assert self.role is Role.CANDIDATE
        if self.known_max_term > self.term:
            self.term = self.known_max_term
        else:
            self.term += 1
        self.vote_for = None
        self._persist()
        return self.term

    def to_leader(self, term: int) -> None:
        assert term == self.term
        self.role = Role.LEADER
        self.leader_id = self.self_id
        self.peers_live.clear()

    def to_follower(self, term: int, leader_id: str) -> None:
        assert term == self.term
        self.role = Role.FOLLOWER
        self.leader_id = leader_id
        self.transferee = None

    def to_candidate(self, term: int) -> None:
        assert term >= self.term
        if term > self.known_max_term:
            self.known_max_term = term
        self.role = Role.CANDIDATE
        self.leader_id = None
        self.transferee = None
