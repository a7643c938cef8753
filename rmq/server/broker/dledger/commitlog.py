"""RocketMQ messages through a DLedger node, as RocketMQ 4.9.8's DLedgerCommitLog sends them.

The put path and the dispatch hook of a broker with ``enableDLegerCommitLog``
(:mod:`rmq.server.broker.dledger.leadership` wires them into the broker).

:meth:`DLedgerCommitLog.put_message` encodes the message in the classic record layout with its
queue offset, appends it on the node as leader (the append hook puts ``pos + 48`` in the
record), takes the queue offset, and answers once a majority holds the entry.  DLedger's
answer maps to a put status as Apache's does: SUCCESS is PUT_OK; INCONSISTENT_LEADER,
NOT_LEADER, LEADER_NOT_READY and DISK_FULL are SERVICE_NOT_AVAILABLE; WAIT_QUORUM_ACK_TIMEOUT
and LEADER_PENDING_FULL are OS_PAGECACHE_BUSY; anything else (TERM_CHANGED,
LEADER_TRANSFERRING) is UNKNOWN_ERROR.  An append the node refuses at once (not the leader,
transferring) appends nothing and takes no queue offset: OS_PAGECACHE_BUSY, Apache's answer
to an append position of -1.

Every time the committed index moves, committed records are dispatched (``dispatch``), on
every node.  When the node becomes leader it takes sends only once its whole log is committed
and dispatched (Apache's role-change handler waits for the same before the broker turns
master); its queue offsets then continue from the dispatched records.  Until then a put is
SERVICE_NOT_AVAILABLE.  ``ready_handlers`` are called each time the node becomes ready.

Not handled yet: delay levels (Apache parks them in SCHEDULE_TOPIC_XXXX as the classic
commitlog does) and batches.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from rmq.common.message import DispatchInfo
from rmq.common.recordwalk import RecordError
from rmq.server.broker.dledger.member import Role
from rmq.server.broker.dledger.node import DLedgerNode
from rmq.server.broker.dledger.protocol import Code
from rmq.store.dledger.messagelog import MessageLog, physical_offset_hook, wrote_offset
from rmq.store.putmessage import InnerMessage, PutMessageResult, PutMessageStatus

READY_POLL = 0.1
"""How often a new leader checks whether its log is committed and dispatched (Apache: 100 ms)."""

_STATUS = {
    Code.SUCCESS: PutMessageStatus.PUT_OK,
    Code.INCONSISTENT_LEADER: PutMessageStatus.SERVICE_NOT_AVAILABLE,
    Code.NOT_LEADER: PutMessageStatus.SERVICE_NOT_AVAILABLE,
    Code.LEADER_NOT_READY: PutMessageStatus.SERVICE_NOT_AVAILABLE,
    Code.DISK_FULL: PutMessageStatus.SERVICE_NOT_AVAILABLE,
    Code.WAIT_QUORUM_ACK_TIMEOUT: PutMessageStatus.OS_PAGECACHE_BUSY,
    Code.LEADER_PENDING_FULL: PutMessageStatus.OS_PAGECACHE_BUSY,
}


def put_status(code: int) -> PutMessageStatus:
    """The put status of a DLedger append answer's code."""
    try:
        return _STATUS.get(Code(code), PutMessageStatus.UNKNOWN_ERROR)
    except ValueError:
        return PutMessageStatus.UNKNOWN_ERROR


class DLedgerCommitLog:
    def __init__(
        self,
        node: DLedgerNode,
        store_host: bytes,
        dispatch: Callable[[DispatchInfo], None],
    ) -> None:
        self.node = node
        self.messages = MessageLog(node.ledger, store_host)
        self._dispatch = dispatch
        self.ready = False
        """True while this node leads and its log was committed and dispatched when it
        took over: only then are sends taken."""
        self._ready_task: asyncio.Task[None] | None = None
        self.ready_handlers: list[Callable[[], None]] = []
        node.on_committed_handlers.append(self.dispatch_committed)

    def attach(self) -> None:
        """Follow the node's role changes (call after the node started)."""
        self.node.elector.role_handlers.append(self._role_changed)
        self.dispatch_committed()
        if self.node.role is Role.LEADER:
            self._role_changed(self.node.term, Role.LEADER)

    def dispatch_committed(self) -> None:
        self.messages.dispatch_committed(self._dispatch)

    def _role_changed(self, term: int, role: Role) -> None:
        self.ready = False
        if self._ready_task is not None:
            self._ready_task.cancel()
            self._ready_task = None
        if role is Role.LEADER:
            self._ready_task = asyncio.get_running_loop().create_task(self._become_ready(term))

    def _caught_up(self) -> bool:
        ledger = self.node.ledger
        if ledger.end_index == -1:
            return True
        self.dispatch_committed()
        dispatched = self.messages.dispatched_pos
        return ledger.end_index == ledger.committed_index and dispatched == ledger.committed_pos

    async def _become_ready(self, term: int) -> None:
        node = self.node
        while node.role is Role.LEADER and node.term == term:
            if self._caught_up():
                self.messages.recover_topic_queue_table()
                self.ready = True
                for handler in self.ready_handlers:
                    handler()
                return
            await asyncio.sleep(READY_POLL)

    async def close(self) -> None:
        if self._ready_task is not None:
            self._ready_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ready_task

    async def put_message(self, msg: InnerMessage) -> PutMessageResult:
        if not self.ready:
            return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE)
        try:
            prepared = self.messages.prepare(msg)
        except RecordError:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL)
        future = self.node.append_entry(prepared.body, physical_offset_hook)
        if future.done():  # refused before anything was appended
            return PutMessageResult(PutMessageStatus.OS_PAGECACHE_BUSY)
        self.messages.taken(prepared)
        answer = await future
        status = put_status(int(answer.get("code", Code.UNKNOWN)))
        if status is not PutMessageStatus.PUT_OK:
            return PutMessageResult(status)
        return PutMessageResult(
            status,
            wrote_offset(int(answer["pos"])),
            len(prepared.body),
            prepared.queue_offset,
            prepared.store_timestamp,
            self.messages.store_host,
            topic=msg.topic,
            queue_id=msg.queue_id,
        )
