"""A DLedger node's configuration: the broker keys that feed it and the timings DLedger
0.3.1.2 fixes (RocketMQ 4.9.8 exposes none of them; they are fields here so tests can shorten
them, and the broker always uses the defaults)."""

from __future__ import annotations

from dataclasses import dataclass, field


class PeersError(ValueError):
    """A ``dLegerPeers`` / ``dLegerSelfId`` setting DLedger would refuse."""


def parse_peers(text: str) -> dict[str, str]:
    """``n0-127.0.0.1:40911;n1-...`` -> ``{"n0": "127.0.0.1:40911", ...}`` (id and address
    split at the first ``-``), in the order given."""
    peers: dict[str, str] = {}
    for item in text.split(";"):
        item = item.strip()
        if not item:
            continue
        peer_id, dash, address = item.partition("-")
        if not dash or not peer_id or ":" not in address:
            raise PeersError(f"dLegerPeers entry {item!r} is not <id>-<host>:<port>")
        peers[peer_id] = address
    if not peers:
        raise PeersError("dLegerPeers names no peer")
    return peers


def broker_id_of(self_id: str) -> int:
    """The brokerId a follower registers with: the number after the id's first letter, plus
    one (``n0`` -> 1), as RocketMQ's DLedgerCommitLog computes it."""
    try:
        return int(self_id[1:]) + 1
    except ValueError:
        raise PeersError(f"dLegerSelfId {self_id!r} is not a letter followed by a number") from None


@dataclass
class DLedgerConfig:
    group: str
    self_id: str
    peers: dict[str, str]
    store_root: str
    data_dir: str | None = None
    preferred_leader_ids: list[str] = field(default_factory=list)
    data_file_size: int = 1 << 30
    index_file_size: int = 32 * 5 * 1024 * 1024
    heartbeat_interval: float = 2.0
    max_heartbeat_leak: int = 3
    min_vote_interval: float = 0.3
    max_vote_interval: float = 1.0
    min_take_leadership_vote_interval: float = 0.03
    max_take_leadership_vote_interval: float = 0.1
    max_pending_requests: int = 10000
    max_wait_ack: float = 2.5
    max_push_timeout: float = 1.0
    max_leadership_transfer_wait_index: int = 1000
    leadership_transfer_wait_timeout: float = 1.0
    check_point_interval: float = 3.0
    rpc_timeout: float = 3.0

    def __post_init__(self) -> None:
        if self.self_id not in self.peers:
            raise PeersError(f"dLegerSelfId {self.self_id} is not in dLegerPeers")

    @property
    def address(self) -> str:
        return self.peers[self.self_id]

    def is_quorum(self, count: int) -> bool:
        return count >= len(self.peers) // 2 + 1
