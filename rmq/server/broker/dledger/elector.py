"""Leader election by DLedger 0.3.1.2's rules (its DLedgerLeaderElector).

A maintainer task runs every 10 ms.  A LEADER sends HEART_BEAT to every peer each heartbeat
interval (2 s) and waits up to that long; with no quorum of successes for more than
``max_heartbeat_leak`` intervals (6 s), or an answer with a larger term or another leader, it
becomes a CANDIDATE.  A FOLLOWER that has heard no heartbeat for 6 s becomes a CANDIDATE.  A
CANDIDATE votes at a random time 300-1000 ms ahead (30-100 ms while taking leadership in a
transfer): it asks every peer, itself included, and waits up to 2 s plus up to 1 s for a
quorum; the outcome rules are in :meth:`Elector._parse`.  Vote and heartbeat handling are
:meth:`Elector.handle_vote` and :meth:`Elector.handle_heartbeat`; their checks run in
DLedger's order.

Everything runs on the node's event loop; nothing here blocks it.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import random
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from rmq.server.broker.dledger.member import MemberState, Role
from rmq.server.broker.dledger.protocol import Body, Code, VoteResult, base, reply_to

if TYPE_CHECKING:
    from rmq.store.dledger.ledger import Ledger

log = logging.getLogger("rmq.broker.dledger")

SendRpc = Callable[[str, str, Body], Awaitable[Body]]
"""``send(peer_id, kind, body)``: the peer's answer; raises on a network failure."""
RoleHandler = Callable[[int, Role], None]


def _beat_answer(term: int, code: int) -> Body:
    """A response built fresh (``new XResponse().term(t).code(c)``): only code and term."""
    return base(None, None, None, term=term, code=code)


class Parse(enum.Enum):
    WAIT_TO_REVOTE = 0
    REVOTE_IMMEDIATELY = 1
    PASSED = 2
    WAIT_TO_VOTE_NEXT = 3


class Elector:
    def __init__(self, member: MemberState, ledger: Ledger, send: SendRpc) -> None:
        self.member = member
        self.config = member.config
        self.ledger = ledger
        self.send = send
        self.role_handlers: list[RoleHandler] = []
        loop_time = asyncio.get_running_loop().time
        self._now = loop_time
        self.last_leader_heartbeat = loop_time()
        self.last_send_heartbeat = -1.0
        self.last_success_heartbeat = -1.0
        self.next_time_to_vote = -1.0
        self.need_increase_term = False
        self.last_parse = Parse.WAIT_TO_REVOTE
        self._take_leadership: tuple[Body, asyncio.Future[Body]] | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def _spawn(self, coro: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- role changes --------------------------------------------------------------------

    def _role_changed(self, term: int, role: Role) -> None:
        log.info("[%s] %s at term %d", self.member.self_id, role.value, term)
        self._check_take_leadership(term, role)
        for handler in self.role_handlers:
            try:
                handler(term, role)
            except Exception:
                log.exception("role change handler failed")

    def to_leader(self, term: int) -> None:
        if self.member.term == term:
            self.member.to_leader(term)
            self.last_send_heartbeat = -1.0
            self._role_changed(term, Role.LEADER)

    def to_candidate(self, term: int) -> None:
        if term >= self.member.term:
            self.member.to_candidate(term)
            self._role_changed(term, Role.CANDIDATE)

    def to_follower(self, term: int, leader_id: str) -> None:
        self.last_parse = Parse.WAIT_TO_REVOTE
        self.member.to_follower(term, leader_id)
        self.last_leader_heartbeat = self._now()
        self._role_changed(term, Role.FOLLOWER)

    # -- handling ------------------------------------------------------------------------

    def handle_heartbeat(self, request: Body) -> Body:
        member = self.member
        leader_id = request.get("leaderId")
        term = int(request.get("term", -1))
        if not member.is_peer(leader_id):
            return _beat_answer(member.term, Code.UNKNOWN_MEMBER)
        if leader_id == member.self_id:
            return _beat_answer(member.term, Code.UNEXPECTED_MEMBER)
        if term < member.term:
            return _beat_answer(member.term, Code.EXPIRED_TERM)
        if term == member.term:
            if member.leader_id is None:
                assert isinstance(leader_id, str)
                self.to_follower(term, leader_id)
                return _beat_answer(-1, Code.SUCCESS)
            if leader_id == member.leader_id:
                self.last_leader_heartbeat = self._now()
                return _beat_answer(-1, Code.SUCCESS)
            return _beat_answer(-1, Code.INCONSISTENT_LEADER)
        self.to_candidate(term)
        self.need_increase_term = True
        return _beat_answer(-1, Code.TERM_NOT_READY)

    def _taking_leadership(self) -> bool:
        member = self.member
        return (
            bool(self.config.preferred_leader_ids)
            and member.term_to_take_leadership == member.term
            and member.self_id in self.config.preferred_leader_ids
        )

    def handle_vote(self, request: Body, local: bool) -> Body:
        member = self.member
        candidate = request.get("leaderId")
        term = int(request.get("term", -1))
        end_term = int(request.get("ledgerEndTerm", -1))
        end_index = int(request.get("ledgerEndIndex", -1))
        ledger = self.ledger

        def answer(result: VoteResult, at_term: int | None = None) -> Body:
            return reply_to(
                request, term=member.term if at_term is None else at_term, voteResult=result.value
            )

        if not member.is_peer(candidate):
            return answer(VoteResult.REJECT_UNKNOWN_LEADER)
        if not local and candidate == member.self_id:
            return answer(VoteResult.REJECT_UNEXPECTED_LEADER)
        if end_term < ledger.end_term:
            return answer(VoteResult.REJECT_EXPIRED_LEDGER_TERM)
        if end_term == ledger.end_term and end_index < ledger.end_index:
            return answer(VoteResult.REJECT_SMALL_LEDGER_END_INDEX)
        if term < member.term:
            return answer(VoteResult.REJECT_EXPIRED_VOTE_TERM)
        if term == member.term:
            if member.vote_for is not None and member.vote_for != candidate:
                if member.leader_id is not None:
                    return answer(VoteResult.REJECT_ALREADY_HAS_LEADER)
                return answer(VoteResult.REJECT_ALREADY_VOTED)
        else:
            self.to_candidate(term)
            self.need_increase_term = True
            return answer(VoteResult.REJECT_TERM_NOT_READY)
        if term < ledger.end_term:
            return answer(VoteResult.REJECT_TERM_SMALL_THAN_LEDGER, ledger.end_term)
        if (
            not local
            and self._taking_leadership()
            and end_term == ledger.end_term
            and ledger.end_index >= end_index
        ):
            return answer(VoteResult.REJECT_TAKING_LEADERSHIP)
        member.set_vote_for(candidate)
        return answer(VoteResult.ACCEPT)

    # -- leadership transfer (the transferee's side) -------------------------------------

    def take_leadership(self, request: Body) -> asyncio.Future[Body]:
        """Become a candidate for the next term at once; the future settles when this node
        wins (SUCCESS) or loses that term."""
        member = self.member
        future: asyncio.Future[Body] = asyncio.get_running_loop().create_future()
        if member.term != int(request.get("term", -1)):
            future.set_result(_beat_answer(member.term, Code.INCONSISTENT_TERM))
            return future
        target = member.term + 1
        member.term_to_take_leadership = target
        self._take_leadership = (request, future)
        self.to_candidate(target)
        self.need_increase_term = True
        return future

    def _check_take_leadership(self, term: int, role: Role) -> None:
        member = self.member
        if member.term_to_take_leadership == -1 or self._take_leadership is None:
            return
        target = member.term_to_take_leadership
        if term > target:
            code = Code.EXPIRED_TERM
        elif term == target:
            if role is Role.LEADER:
                code = Code.SUCCESS
            elif role is Role.FOLLOWER:
                code = Code.TAKE_LEADERSHIP_FAILED
            else:
                return
        else:
            code = Code.TAKE_LEADERSHIP_FAILED if role is Role.FOLLOWER else Code.INTERNAL_ERROR
        _, future = self._take_leadership
        if not future.done():
            future.set_result(_beat_answer(term, code))
        member.term_to_take_leadership = -1
        self._take_leadership = None

    # -- the maintainer ------------------------------------------------------------------

    def _next_vote_time(self) -> float:
        config = self.config
        if self._taking_leadership():
            low, high = (
                config.min_take_leadership_vote_interval,
                config.max_take_leadership_vote_interval,
            )
        else:
            low, high = config.min_vote_interval, config.max_vote_interval
        return self._now() + low + random.random() * (high - low)

    async def maintain(self) -> None:
        role = self.member.role
        if role is Role.LEADER:
            await self._maintain_as_leader()
        elif role is Role.FOLLOWER:
            self._maintain_as_follower()
        else:
            await self._maintain_as_candidate()

    def _maintain_as_follower(self) -> None:
        config = self.config
        if (
            self._now() - self.last_leader_heartbeat
            > config.max_heartbeat_leak * config.heartbeat_interval
        ):
            self.to_candidate(self.member.term)

    async def _maintain_as_leader(self) -> None:
        config = self.config
        member = self.member
        if self._now() - self.last_send_heartbeat <= config.heartbeat_interval:
            return
        term, leader_id = member.term, member.self_id
        self.last_send_heartbeat = self._now()
        peers = [p for p in config.peers if p != member.self_id]
        success, not_ready, max_term, inconsistent = 1, 0, -1, False
        done = asyncio.Event()
        pending = len(peers)

        async def beat(peer: str) -> None:
            nonlocal success, not_ready, max_term, inconsistent, pending
            try:
                head = base(member.group, member.self_id, peer, leader_id=leader_id, term=term)
                answer = await self.send(peer, "HEART_BEAT", head)
                code = int(answer.get("code", Code.UNKNOWN))
                if code == Code.SUCCESS:
                    success += 1
                elif code == Code.EXPIRED_TERM:
                    max_term = int(answer.get("term", -1))
                elif code == Code.INCONSISTENT_LEADER:
                    inconsistent = True
                elif code == Code.TERM_NOT_READY:
                    not_ready += 1
                member.peers_live[peer] = code != Code.NETWORK_ERROR
                if config.is_quorum(success) or config.is_quorum(success + not_ready):
                    done.set()
            except Exception:
                member.peers_live[peer] = False
            finally:
                pending -= 1
                if pending == 0:
                    done.set()

        for peer in peers:
            self._spawn(beat(peer))
        if not peers:
            done.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(done.wait(), config.heartbeat_interval)
        if member.role is not Role.LEADER or member.term != term:
            return
        if config.is_quorum(success):
            self.last_success_heartbeat = self._now()
        elif config.is_quorum(success + not_ready):
            self.last_send_heartbeat = -1.0
        elif max_term > term:
            self.to_candidate(max_term)
        elif inconsistent or (
            self._now() - self.last_success_heartbeat
            > config.max_heartbeat_leak * config.heartbeat_interval
        ):
            self.to_candidate(term)

    async def _maintain_as_candidate(self) -> None:
        member = self.member
        config = self.config
        if self._now() < self.next_time_to_vote and not self.need_increase_term:
            return
        if member.role is not Role.CANDIDATE:
            return
        if self.last_parse is Parse.WAIT_TO_VOTE_NEXT or self.need_increase_term:
            term = member.next_term()
            self.last_parse = Parse.WAIT_TO_REVOTE
        else:
            term = member.term
        end_index, end_term = self.ledger.end_index, self.ledger.end_term
        if self.need_increase_term:
            self.next_time_to_vote = self._next_vote_time()
            self.need_increase_term = False
            return
        counts = {"all": 0, "valid": 0, "accepted": 0, "not_ready": 0, "bigger": 0}
        known_max = term
        has_leader = False
        done = asyncio.Event()

        def tally(answer: Body | None) -> None:
            nonlocal known_max, has_leader
            try:
                if answer is None:
                    return
                result = answer.get("voteResult", VoteResult.UNKNOWN.value)
                if result != VoteResult.UNKNOWN.value:
                    counts["valid"] += 1
                if result == VoteResult.ACCEPT.value:
                    counts["accepted"] += 1
                elif result == VoteResult.REJECT_ALREADY_HAS_LEADER.value:
                    has_leader = True
                elif result in (
                    VoteResult.REJECT_TERM_SMALL_THAN_LEDGER.value,
                    VoteResult.REJECT_EXPIRED_VOTE_TERM.value,
                ):
                    known_max = max(known_max, int(answer.get("term", -1)))
                elif result in (
                    VoteResult.REJECT_EXPIRED_LEDGER_TERM.value,
                    VoteResult.REJECT_SMALL_LEDGER_END_INDEX.value,
                ):
                    counts["bigger"] += 1
                elif result == VoteResult.REJECT_TERM_NOT_READY.value:
                    counts["not_ready"] += 1
                if (
                    has_leader
                    or config.is_quorum(counts["accepted"])
                    or config.is_quorum(counts["accepted"] + counts["not_ready"])
                ):
                    done.set()
            finally:
                counts["all"] += 1
                if counts["all"] == len(config.peers):
                    done.set()

        async def ask(peer: str, request: Body) -> None:
            try:
                answer = await self.send(peer, "VOTE", request)
            except Exception:
                answer = None
            tally(answer)

        for peer in config.peers:
            request = base(member.group, member.self_id, peer, leader_id=member.self_id, term=term)
            request["ledgerEndIndex"] = end_index
            request["ledgerEndTerm"] = end_term
            if peer == member.self_id:
                tally(self.handle_vote(request, True))
            else:
                self._spawn(ask(peer, request))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(done.wait(), 2.0 + random.random() * config.max_vote_interval)
        parse = self._parse(term, counts, known_max, has_leader)
        self.last_parse = parse
        log.info("[%s] vote at term %d: %s %s", member.self_id, term, parse.name, counts)
        if parse is Parse.PASSED:
            self.to_leader(term)

    def _parse(self, term: int, counts: dict[str, int], known_max: int, has_leader: bool) -> Parse:
        config = self.config
        if known_max > term:
            self.next_time_to_vote = self._next_vote_time()
            self.to_candidate(known_max)
            return Parse.WAIT_TO_VOTE_NEXT
        if has_leader:
            self.next_time_to_vote = (
                self._next_vote_time() + config.heartbeat_interval * config.max_heartbeat_leak
            )
            return Parse.WAIT_TO_REVOTE
        if not config.is_quorum(counts["valid"]):
            self.next_time_to_vote = self._next_vote_time()
            return Parse.WAIT_TO_REVOTE
        if not config.is_quorum(counts["valid"] - counts["bigger"]):
            self.next_time_to_vote = self._next_vote_time() + config.max_vote_interval
            return Parse.WAIT_TO_REVOTE
        if config.is_quorum(counts["accepted"]):
            return Parse.PASSED
        if config.is_quorum(counts["accepted"] + counts["not_ready"]):
            return Parse.REVOTE_IMMEDIATELY
        self.next_time_to_vote = self._next_vote_time()
        return Parse.WAIT_TO_VOTE_NEXT
