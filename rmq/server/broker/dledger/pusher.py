"""Replication by DLedger 0.3.1.2's rules (its DLedgerEntryPusher).

Leader side.  One dispatcher per follower walks COMPARE -> (TRUNCATE) -> APPEND.  COMPARE sends
the leader's entry at ``compare_index`` (from the leader's end down) until the follower holds
the same entry; a match at the follower's end goes straight to APPEND, any other match (or no
overlap at all) truncates the follower there (or at the leader's begin index) first.  APPEND
pushes one entry per request, up to 1000 in flight, re-pushes the first unacknowledged one after
``max_push_timeout`` (1 s), and sends a COMMIT push when nothing was pushed for a second; any
INCONSISTENT_STATE, error, or change of term sends the dispatcher back to COMPARE.  Every push
carries the leader's committed index.

The quorum checker takes each peer's water mark (the leader's own is its end index), sorts
them, and commits the one a majority holds (``sorted_desc[n // 2]``), with no check of the
entry's term, as DLedger does.  Appends waiting for that are answered SUCCESS then,
WAIT_QUORUM_ACK_TIMEOUT after ``max_wait_ack`` (2.5 s), TERM_CHANGED when the term moved on or
the node is no longer the leader.

Follower side (:meth:`Pusher.handle_push`).  APPEND requests are held by index and applied
strictly in order from the end of the log; a request for an index already held is
REPEATED_PUSH, one already applied is answered by comparing entries.  COMPARE, TRUNCATE and
COMMIT are handled in arrival order; COMPARE and TRUNCATE drop held APPENDs.  The committed
index follows the leader's, capped at the follower's end.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from rmq.server.broker.dledger.elector import SendRpc
from rmq.server.broker.dledger.member import MemberState, Role
from rmq.server.broker.dledger.protocol import (
    Body,
    Code,
    PushType,
    base,
    push_entries,
    push_request,
    push_response,
)
from rmq.store.dledger.entry import Entry
from rmq.store.dledger.ledger import Ledger, LedgerError

log = logging.getLogger("rmq.broker.dledger")

MAX_PENDING_PER_PEER = 1000
COMMIT_PUSH_INTERVAL = 1.0
ERROR_PAUSE = 0.5
IDLE_WAIT = 0.05


@dataclass
class _Dispatcher:
    peer: str
    kind: PushType = PushType.COMPARE
    term: int = -1
    leader_id: str | None = None
    compare_index: int = -1
    write_index: int = -1
    pending: dict[int, float] = field(default_factory=dict)
    last_push_commit: float = -1.0
    last_check_leak: float = 0.0
    wake: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass
class _Waiter:
    entry: Entry
    future: asyncio.Future[Body]
    since: float


class Pusher:
    def __init__(
        self,
        member: MemberState,
        ledger: Ledger,
        send: SendRpc,
        on_committed: Callable[[], None] = lambda: None,
    ) -> None:
        self.member = member
        self.config = member.config
        self.ledger = ledger
        self.send = send
        self.on_committed = on_committed
        self._now = asyncio.get_running_loop().time
        self.water_marks: dict[int, dict[str, int]] = {}
        self._waiters: dict[int, dict[int, _Waiter]] = {}
        self._checker_wake = asyncio.Event()
        self._dispatchers = [
            _Dispatcher(peer) for peer in self.config.peers if peer != member.self_id
        ]
        self._held: dict[int, tuple[Body, asyncio.Future[Body], float]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._stopped = False  # checked by every loop, as in the node
        self._last_abnormal_check = self._now()

    # -- tasks ---------------------------------------------------------------------------

    def _spawn(self, coro: Awaitable[None]) -> asyncio.Task[None]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def start(self) -> None:
        self._spawn(self._checker_loop())
        for dispatcher in self._dispatchers:
            self._spawn(self._dispatch_loop(dispatcher))

    async def stop(self) -> None:
        self._stopped = True
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._fail_waiters(Code.TERM_CHANGED)

    def wake(self) -> None:
        """Something was appended: push it and check the quorum."""
        self._checker_wake.set()
        for dispatcher in self._dispatchers:
            dispatcher.wake.set()

    # -- water marks and waiters -----------------------------------------------------------

    def peer_water_mark(self, term: int, peer: str) -> int:
        return self.water_marks.get(term, {}).get(peer, -1)

    def _update_water_mark(self, term: int, peer: str, index: int) -> None:
        marks = self.water_marks.setdefault(term, {})
        if marks.get(peer, -1) < index:
            marks[peer] = index

    def pending_count(self, term: int) -> int:
        return len(self._waiters.get(term, {}))

    def wait_ack(self, entry: Entry) -> asyncio.Future[Body]:
        """A future answered when ``entry`` (just appended as leader) commits or fails."""
        future: asyncio.Future[Body] = asyncio.get_running_loop().create_future()
        self._update_water_mark(entry.term, self.member.self_id, entry.index)
        self._waiters.setdefault(entry.term, {})[entry.index] = _Waiter(entry, future, self._now())
        self.wake()
        return future

    def _answer(self, waiter: _Waiter, code: int) -> None:
        if waiter.future.done():
            return
        body = base(
            self.member.group,
            None,
            None,
            leader_id=self.member.self_id,
            term=waiter.entry.term,
            code=code,
        )
        if code == Code.SUCCESS:
            body["index"] = waiter.entry.index
            body["pos"] = waiter.entry.pos
        else:
            body["index"] = -1
            body["pos"] = -1
        waiter.future.set_result(body)

    def _fail_waiters(self, code: int, keep_term: int | None = None) -> None:
        for term in list(self._waiters):
            if term == keep_term:
                continue
            for waiter in self._waiters.pop(term).values():
                self._answer(waiter, code)

    def update_committed(self, term: int, index: int) -> None:
        """DLedger's updateCommittedIndex: skipped for an old term; never moves back."""
        if term < self.member.term:
            return
        before = self.ledger.committed_index
        try:
            self.ledger.update_committed_index(index)
        except LedgerError as exc:
            log.warning("[%s] cannot commit %d: %s", self.member.self_id, index, exc)
            return
        if self.ledger.committed_index != before:
            self.on_committed()

    async def _checker_loop(self) -> None:
        while not self._stopped:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._checker_wake.wait(), IDLE_WAIT)
            self._checker_wake.clear()
            try:
                if self.member.role is Role.FOLLOWER:
                    self._check_abnormal()
                elif self._held:
                    self._drop_held()
                self._check_quorum()
            except Exception:
                log.exception("[%s] quorum check failed", self.member.self_id)

    def _check_quorum(self) -> None:
        member = self.member
        if member.role is not Role.LEADER:
            self._fail_waiters(Code.TERM_CHANGED)
            return
        term = member.term
        self._fail_waiters(Code.TERM_CHANGED, keep_term=term)
        for old in [t for t in self.water_marks if t < term - 1]:
            del self.water_marks[old]
        self._update_water_mark(term, member.self_id, self.ledger.end_index)
        marks = sorted(
            (self.peer_water_mark(term, peer) for peer in self.config.peers), reverse=True
        )
        quorum_index = marks[len(marks) // 2]
        self.update_committed(term, quorum_index)
        waiters = self._waiters.get(term, {})
        now = self._now()
        for index in sorted(waiters):
            waiter = waiters[index]
            if index <= quorum_index:
                self._answer(waiter, Code.SUCCESS)
                del waiters[index]
            elif now - waiter.since > self.config.max_wait_ack:
                self._answer(waiter, Code.WAIT_QUORUM_ACK_TIMEOUT)
                del waiters[index]

    # -- the leader's dispatchers ----------------------------------------------------------

    def _fresh(self, d: _Dispatcher) -> bool:
        member = self.member
        if member.role is not Role.LEADER:
            return False
        if d.term != member.term or d.leader_id != member.self_id:
            d.term = member.term
            d.leader_id = member.self_id
            self._change_state(d, -1, PushType.COMPARE)
        return True

    def _change_state(self, d: _Dispatcher, index: int, kind: PushType) -> None:
        if kind is PushType.APPEND:
            d.compare_index = -1
            self._update_water_mark(d.term, d.peer, index)
            self._checker_wake.set()
            d.write_index = index + 1
        elif kind is PushType.COMPARE:
            d.compare_index = -1
            d.pending.clear()
        else:
            d.compare_index = -1
        d.kind = kind

    def _request(self, d: _Dispatcher, kind: PushType, entry: Entry | None) -> Body:
        head = base(
            self.member.group, self.member.self_id, d.peer, leader_id=d.leader_id, term=d.term
        )
        return push_request(head, kind, self.ledger.committed_index, entry)

    async def _dispatch_loop(self, d: _Dispatcher) -> None:
        while not self._stopped:
            try:
                if self._fresh(d):
                    if d.kind is PushType.APPEND:
                        self._do_append(d)
                    else:
                        await self._do_compare(d)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(d.wake.wait(), IDLE_WAIT)
                d.wake.clear()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.info("[%s] push to %s: %s; back to COMPARE", self.member.self_id, d.peer, exc)
                self._change_state(d, -1, PushType.COMPARE)
                await asyncio.sleep(ERROR_PAUSE)

    def _do_append(self, d: _Dispatcher) -> None:
        while self._fresh(d) and d.kind is PushType.APPEND:
            if d.write_index > self.ledger.end_index:
                self._do_commit(d)
                self._check_append_response(d)
                return
            if len(d.pending) >= MAX_PENDING_PER_PEER or self._now() - d.last_check_leak > 1.0:
                mark = self.peer_water_mark(d.term, d.peer)
                for index in [i for i in d.pending if i < mark]:
                    del d.pending[index]
                d.last_check_leak = self._now()
            if len(d.pending) >= MAX_PENDING_PER_PEER:
                self._check_append_response(d)
                return
            self._append_inner(d, d.write_index)
            d.write_index += 1

    def _append_inner(self, d: _Dispatcher, index: int) -> None:
        entry = self.ledger.get(index)
        request = self._request(d, PushType.APPEND, entry)
        d.pending[index] = self._now()
        term = d.term

        async def push() -> None:
            try:
                answer = await self.send(d.peer, "PUSH", request)
            except Exception as exc:
                log.debug("[%s] push %d to %s failed: %s", self.member.self_id, index, d.peer, exc)
                return
            code = int(answer.get("code", Code.UNKNOWN))
            if code == Code.SUCCESS:
                d.pending.pop(index, None)
                self._update_water_mark(
                    int(answer.get("term", term)), d.peer, int(answer.get("index", index))
                )
                self._checker_wake.set()
            elif code == Code.INCONSISTENT_STATE and d.term == term:
                self._change_state(d, -1, PushType.COMPARE)
                d.wake.set()

        self._spawn(push())
        d.last_push_commit = self._now()

    def _do_commit(self, d: _Dispatcher) -> None:
        if self._now() - d.last_push_commit > COMMIT_PUSH_INTERVAL:
            request = self._request(d, PushType.COMMIT, None)

            async def push() -> None:
                with contextlib.suppress(Exception):
                    await self.send(d.peer, "PUSH", request)

            self._spawn(push())
            d.last_push_commit = self._now()

    def _check_append_response(self, d: _Dispatcher) -> None:
        mark = self.peer_water_mark(d.term, d.peer)
        sent = d.pending.get(mark + 1)
        if sent is not None and self._now() - sent > self.config.max_push_timeout:
            self._append_inner(d, mark + 1)

    async def _do_compare(self, d: _Dispatcher) -> None:
        ledger = self.ledger
        while self._fresh(d) and d.kind in (PushType.COMPARE, PushType.TRUNCATE):
            if d.compare_index == -1 and ledger.end_index == -1:
                return
            if (
                d.compare_index == -1
                or not ledger.begin_index <= d.compare_index <= ledger.end_index
            ):
                d.compare_index = ledger.end_index
            entry = ledger.get(d.compare_index)
            answer = await self.send(d.peer, "PUSH", self._request(d, PushType.COMPARE, entry))
            code = int(answer.get("code", Code.UNKNOWN))
            if code not in (Code.SUCCESS, Code.INCONSISTENT_STATE):
                raise RuntimeError(f"COMPARE at {d.compare_index} answered {code}")
            begin, end = int(answer.get("beginIndex", -1)), int(answer.get("endIndex", -1))
            truncate_index = -1
            if code == Code.SUCCESS:
                if d.compare_index == end:
                    self._change_state(d, d.compare_index, PushType.APPEND)
                    return
                truncate_index = d.compare_index
            elif end < ledger.begin_index or begin > ledger.end_index or d.compare_index < begin:
                truncate_index = ledger.begin_index
            elif d.compare_index > end:
                d.compare_index = end
            else:
                d.compare_index -= 1
            if d.compare_index < ledger.begin_index:
                truncate_index = ledger.begin_index
            if truncate_index != -1:
                self._change_state(d, truncate_index, PushType.TRUNCATE)
                await self._do_truncate(d, truncate_index)
                return

    async def _do_truncate(self, d: _Dispatcher, index: int) -> None:
        entry = self.ledger.get(index)
        answer = await self.send(d.peer, "PUSH", self._request(d, PushType.TRUNCATE, entry))
        code = int(answer.get("code", Code.UNKNOWN))
        if code != Code.SUCCESS:
            raise RuntimeError(f"TRUNCATE at {index} answered {code}")
        d.last_push_commit = self._now()
        self._change_state(d, index, PushType.APPEND)

    # -- the follower's side -------------------------------------------------------------

    def _push_answer(self, request: Body, code: int) -> Body:
        return push_response(request, code, self.ledger.begin_index, self.ledger.end_index)

    async def handle_push(self, request: Body) -> Body:
        kind = request.get("type", PushType.APPEND.value)
        entries = push_entries(request)
        if self.member.role is not Role.FOLLOWER:
            return self._push_answer(request, Code.NOT_FOLLOWER)
        if kind == PushType.APPEND.value:
            if not entries:
                return self._push_answer(request, Code.UNEXPECTED_ARGUMENT)
            index = entries[0].index
            if index in self._held:
                return self._push_answer(request, Code.REPEATED_PUSH)
            future: asyncio.Future[Body] = asyncio.get_running_loop().create_future()
            self._held[index] = (request, future, self._now())
            self._apply_held()
            self._check_abnormal()
            return await future
        if kind == PushType.COMMIT.value:
            self.update_committed(int(request.get("term", -1)), int(request.get("commitIndex", -1)))
            return self._push_answer(request, Code.SUCCESS)
        if kind not in (PushType.COMPARE.value, PushType.TRUNCATE.value) or not entries:
            return self._push_answer(request, Code.UNEXPECTED_ARGUMENT)
        self._drop_held()
        entry = entries[0]
        if kind == PushType.COMPARE.value:
            try:
                same = entry.same_as(self.ledger.get(entry.index))
            except LedgerError:
                same = False
            return self._push_answer(request, Code.SUCCESS if same else Code.INCONSISTENT_STATE)
        try:
            self._check_leader(request)
            self.ledger.truncate(entry)
        except (LedgerError, _Refused) as exc:
            log.info("[%s] truncate at %d refused: %s", self.member.self_id, entry.index, exc)
            return self._push_answer(request, Code.INCONSISTENT_STATE)
        self.update_committed(int(request.get("term", -1)), int(request.get("commitIndex", -1)))
        return self._push_answer(request, Code.SUCCESS)

    def _check_leader(self, request: Body) -> None:
        member = self.member
        if member.role is not Role.FOLLOWER:
            raise _Refused("NOT_FOLLOWER")
        if int(request.get("term", -1)) != member.term:
            raise _Refused("INCONSISTENT_TERM")
        if request.get("leaderId") != member.leader_id:
            raise _Refused("INCONSISTENT_LEADER")

    def _drop_held(self) -> None:
        held, self._held = self._held, {}
        for request, future, _ in held.values():
            if not future.done():
                future.set_result(self._push_answer(request, Code.INCONSISTENT_STATE))

    def _apply_held(self) -> None:
        while True:
            held = self._held.pop(self.ledger.end_index + 1, None)
            if held is None:
                break
            request, future, _ = held
            code = Code.SUCCESS
            try:
                self._check_leader(request)
                for entry in push_entries(request):
                    self.ledger.append_as_follower(entry)
            except (LedgerError, _Refused) as exc:
                log.info("[%s] append refused: %s", self.member.self_id, exc)
                code = Code.INCONSISTENT_STATE
            if not future.done():
                future.set_result(self._push_answer(request, code))
            if code == Code.SUCCESS:
                self.update_committed(
                    int(request.get("term", -1)), int(request.get("commitIndex", -1))
                )
        end = self.ledger.end_index
        for index in [i for i, h in self._held.items() if push_entries(h[0])[-1].index <= end]:
            request, future, _ = self._held.pop(index)
            try:
                same = all(e.same_as(self.ledger.get(e.index)) for e in push_entries(request))
            except LedgerError:
                same = False
            if not future.done():
                future.set_result(
                    self._push_answer(request, Code.SUCCESS if same else Code.INCONSISTENT_STATE)
                )

    def _check_abnormal(self) -> None:
        """Once a second: a held APPEND older than a second that is not next in line is
        answered INCONSISTENT_STATE (the earliest one), so the leader compares again."""
        now = self._now()
        if now - self._last_abnormal_check < 1.0 or not self._held:
            return
        self._last_abnormal_check = now
        if self.ledger.end_index + 1 in self._held:
            return
        late = [i for i, h in self._held.items() if now - h[2] > 1.0]
        if not late:
            return
        request, future, _ = self._held.pop(min(late))
        if not future.done():
            future.set_result(self._push_answer(request, Code.INCONSISTENT_STATE))


class _Refused(Exception):
    pass
