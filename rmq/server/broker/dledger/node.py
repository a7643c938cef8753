"""One DLedger node: its log, its role, and its RPC server on the address ``dLegerPeers`` gives it.

:class:`DLedgerNode` binds the host and port of its own peers entry (and nothing else) with
rmq's remoting server, and talks to its peers with rmq's remoting client (3 s per call).  The
port has no authentication, as Apache's has none: anyone who can reach it can vote, push
entries or truncate the log, so it must stay on a trusted network.

Every handler first checks that the body is for this node (``remoteId``, else UNKNOWN_MEMBER)
and this group (``group``, else UNKNOWN_GROUP).  APPEND (a client append) and GET (one entry
at ``beginIndex``) are served by the leader only.  LEADERSHIP_TRANSFER is served by the leader
(``transferId`` = itself: it stops taking appends and asks the transferee to take over) and by
the transferee (it waits up to a second to have the leader's last entry, then stands for the
next term at once).  A leader that is not a preferred leader hands over, once a second, to the
preferred peer that is alive and least behind (fewer than 1000 entries).

:meth:`DLedgerNode.append` is the in-process append RocketMQ's commitlog uses: it appends as
leader and answers once a quorum holds the entry (or fails: NOT_LEADER, LEADER_TRANSFERRING,
LEADER_PENDING_FULL, WAIT_QUORUM_ACK_TIMEOUT, TERM_CHANGED).  ``on_committed`` runs whenever the
committed index moves; ``Elector.role_handlers`` get every role change.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
from collections.abc import Awaitable, Callable

from rmq.remoting.client import RemotingClient, split_address
from rmq.remoting.command import RemotingCommand
from rmq.remoting.connection import Connection
from rmq.remoting.server import RemotingServer
from rmq.server.broker.dledger.config import DLedgerConfig
from rmq.server.broker.dledger.elector import Elector
from rmq.server.broker.dledger.member import MemberState, Role
from rmq.server.broker.dledger.protocol import (
    Body,
    Code,
    DLedgerRequestCode,
    base,
    decode_body,
    entry_json,
    reply_to,
    request_command,
    response_command,
)
from rmq.server.broker.dledger.pusher import Pusher
from rmq.store.dledger.entry import Entry
from rmq.store.dledger.ledger import AppendHook, Ledger, LedgerError, node_dir

log = logging.getLogger("rmq.broker.dledger")

MAINTAIN_INTERVAL = 0.01
FLUSH_INTERVAL = 0.01
"""DLedger's flushFileInterval: the data and index files are msync'ed this often, off the loop."""
PREFERRED_LEADER_CHECK = 1.0


class DLedgerNode:
    def __init__(self, config: DLedgerConfig) -> None:
        self.config = config
        self.ledger = Ledger(
            node_dir(config.store_root, config.self_id),
            config.data_dir,
            config.data_file_size,
            config.index_file_size,
        )
        self.member = MemberState(config)
        self.on_committed_handlers: list[Callable[[], None]] = []
        self._server: RemotingServer | None = None
        self._client: RemotingClient | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._stopped = False
        """Every loop checks it: a cancellation that ``asyncio.wait_for`` swallows (Python
        3.11 loses one that arrives as the awaited call completes) must not keep a loop alive."""
        self.elector: Elector
        self.pusher: Pusher

    # -- lifecycle -----------------------------------------------------------------------

    async def start(self) -> None:
        """Recover the log, listen on this node's peers address and start electing."""
        self.ledger.recover()
        self.elector = Elector(self.member, self.ledger, self._send)
        self.pusher = Pusher(self.member, self.ledger, self._send, self._committed)
        host, port = split_address(self.config.address)
        server = RemotingServer(host, port, role="dledger")
        handlers = {
            DLedgerRequestCode.METADATA: self._on_metadata,
            DLedgerRequestCode.APPEND: self._on_append,
            DLedgerRequestCode.GET: self._on_get,
            DLedgerRequestCode.VOTE: self._on_vote,
            DLedgerRequestCode.HEART_BEAT: self._on_heartbeat,
            DLedgerRequestCode.PULL: self._on_pull,
            DLedgerRequestCode.PUSH: self._on_push,
            DLedgerRequestCode.LEADERSHIP_TRANSFER: self._on_transfer,
        }
        for code, handler in handlers.items():
            server.register(int(code), self._wrap(handler))
        await server.start()
        self._server = server
        self._client = RemotingClient(ssl_context=None)  # DLedger's RPC is plain TCP
        self.pusher.start()
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._maintain_loop()),
            loop.create_task(self._checkpoint_loop()),
            loop.create_task(self._flush_loop()),
            loop.create_task(self._preferred_leader_loop()),
        ]

    async def stop(self) -> None:
        self._stopped = True
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        await self.pusher.stop()
        if self._server is not None:
            await self._server.close()
        if self._client is not None:
            await self._client.close()
        self.ledger.close()

    # -- state -----------------------------------------------------------------------------

    @property
    def role(self) -> Role:
        return self.member.role

    @property
    def term(self) -> int:
        return self.member.term

    @property
    def leader_id(self) -> str | None:
        return self.member.leader_id

    def _committed(self) -> None:
        for handler in self.on_committed_handlers:
            try:
                handler()
            except Exception:
                log.exception("committed-index handler failed")

    # -- loops ------------------------------------------------------------------------------

    async def _maintain_loop(self) -> None:
        while not self._stopped:
            try:
                await self.elector.maintain()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("[%s] election step failed", self.config.self_id)
            await asyncio.sleep(MAINTAIN_INTERVAL)

    async def _flush_loop(self) -> None:
        ledger = self.ledger
        while not self._stopped:
            await asyncio.sleep(FLUSH_INTERVAL)
            if ledger.data.flushed_where < ledger.data.max_offset() or (
                ledger.index.flushed_where < ledger.index.max_offset()
            ):
                try:
                    await asyncio.to_thread(ledger.flush)
                except Exception:
                    log.exception("[%s] flush failed", self.config.self_id)

    async def _checkpoint_loop(self) -> None:
        while not self._stopped:
            await asyncio.sleep(self.config.check_point_interval)
            try:
                self.ledger.persist_checkpoint()
            except Exception:
                log.exception("[%s] checkpoint failed", self.config.self_id)

    async def _preferred_leader_loop(self) -> None:
        while not self._stopped:
            await asyncio.sleep(PREFERRED_LEADER_CHECK)
            with contextlib.suppress(Exception):
                await self._check_preferred_leader()

    async def _check_preferred_leader(self) -> None:
        member, config = self.member, self.config
        preferred = config.preferred_leader_ids
        if member.role is not Role.LEADER or not preferred or member.transferee is not None:
            return
        if member.self_id in preferred:
            return
        term = member.term
        candidates = [p for p in preferred if member.is_peer(p) and member.peers_live.get(p)]
        if not candidates:
            return
        behind = {
            p: self.ledger.end_index - self.pusher.peer_water_mark(term, p) for p in candidates
        }
        target = min(candidates, key=lambda p: behind[p])
        if behind[target] < config.max_leadership_transfer_wait_index:
            await self._transfer(term, target)

    # -- RPC plumbing ----------------------------------------------------------------------

    async def _send(self, peer: str, kind: str, body: Body) -> Body:
        assert self._client is not None
        request = request_command(DLedgerRequestCode[kind], body)
        response = await self._client.invoke(
            self.config.peers[peer], request, self.config.rpc_timeout
        )
        return decode_body(response.body)

    def _wrap(
        self, handler: Callable[[Body], Awaitable[Body]]
    ) -> Callable[[Connection, RemotingCommand], Awaitable[RemotingCommand]]:
        async def serve(_connection: Connection, request: RemotingCommand) -> RemotingCommand:
            try:
                body = decode_body(request.body)
            except ValueError:
                return response_command(base(None, None, None, code=Code.UNEXPECTED_ARGUMENT))
            refused = self._refuse(body)
            if refused is not None:
                return response_command(refused)
            return response_command(await handler(body))

        return serve

    def _refuse(self, request: Body) -> Body | None:
        member = self.member
        if request.get("remoteId") != member.self_id:
            code = Code.UNKNOWN_MEMBER
        elif request.get("group") != member.group:
            code = Code.UNKNOWN_GROUP
        else:
            return None
        return reply_to(request, code=int(code), leaderId=member.leader_id)

    # -- handlers --------------------------------------------------------------------------

    async def _on_metadata(self, request: Body) -> Body:
        body = base(self.member.group, None, None, leader_id=self.member.leader_id)
        body["peers"] = dict(self.config.peers)
        return body

    async def _on_vote(self, request: Body) -> Body:
        return self.elector.handle_vote(request, False)

    async def _on_heartbeat(self, request: Body) -> Body:
        return self.elector.handle_heartbeat(request)

    async def _on_push(self, request: Body) -> Body:
        return await self.pusher.handle_push(request)

    async def _on_pull(self, request: Body) -> Body:
        return reply_to(request, code=int(Code.UNSUPPORTED))

    async def _on_get(self, request: Body) -> Body:
        member = self.member
        if member.role is not Role.LEADER:
            return reply_to(request, code=int(Code.NOT_LEADER), leaderId=member.leader_id)
        try:
            entry = self.ledger.get(int(request.get("beginIndex") or 0))
        except LedgerError as exc:
            code = Code[exc.code] if exc.code in Code.__members__ else Code.UNKNOWN
            return reply_to(request, code=int(code), leaderId=member.leader_id)
        body = base(member.group, None, None)
        body["entries"] = [entry_json(entry)]
        return body

    async def _on_append(self, request: Body) -> Body:
        """A client's APPEND (or batch append): every body is appended, the answer waits
        for the last one's quorum."""
        batch = request.get("batchMsgs")
        raw = request.get("body")
        if batch:
            bodies = [base64.b64decode(item) for item in batch]
        elif raw is not None:
            bodies = [base64.b64decode(raw)]
        else:
            return reply_to(request, code=int(Code.REQUEST_WITH_EMPTY_BODYS))
        futures = [self.append_entry(body) for body in bodies]
        return await futures[-1]

    # -- appends ---------------------------------------------------------------------------

    def _check_append(self) -> Code | None:
        member = self.member
        if member.role is not Role.LEADER:
            return Code.NOT_LEADER
        if member.transferee is not None:
            return Code.LEADER_TRANSFERRING
        if self.pusher.pending_count(member.term) >= self.config.max_pending_requests:
            return Code.LEADER_PENDING_FULL
        return None

    def _append_local(self, body: bytes, hook: AppendHook | None) -> Entry:
        return self.ledger.append_as_leader(self.member.term, body, hook)

    def append_entry(self, body: bytes, hook: AppendHook | None = None) -> asyncio.Future[Body]:
        """Append ``body`` as leader now; the future answers when a quorum holds it (an
        AppendEntryResponse body: ``code``, and ``index``/``pos`` on SUCCESS)."""
        loop = asyncio.get_running_loop()
        refused = self._check_append()
        if refused is None:
            try:
                entry = self._append_local(body, hook)
            except LedgerError as exc:
                log.warning("[%s] append failed: %s", self.config.self_id, exc)
                refused = Code.DISK_ERROR
            else:
                return self.pusher.wait_ack(entry)
        future: asyncio.Future[Body] = loop.create_future()
        answer = base(
            self.member.group,
            None,
            None,
            leader_id=self.member.leader_id,
            term=self.member.term,
            code=refused,
        )
        answer["index"] = -1
        answer["pos"] = -1
        future.set_result(answer)
        return future

    async def append(self, body: bytes, hook: AppendHook | None = None) -> Body:
        return await self.append_entry(body, hook)

    # -- leadership transfer ---------------------------------------------------------------

    async def _on_transfer(self, request: Body) -> Body:
        member = self.member
        transfer_id = request.get("transferId")
        transferee = request.get("transfereeId")
        term = int(request.get("term", -1))

        def refuse(code: Code) -> Body:
            return reply_to(request, code=int(code), leaderId=member.leader_id)

        if transfer_id == member.self_id:
            if not member.is_peer(transferee):
                return refuse(Code.UNKNOWN_MEMBER)
            if member.term != term:
                return refuse(Code.INCONSISTENT_TERM)
            if member.role is not Role.LEADER:
                return refuse(Code.NOT_LEADER)
            assert isinstance(transferee, str)
            behind = self.ledger.end_index - self.pusher.peer_water_mark(term, transferee)
            if behind >= self.config.max_leadership_transfer_wait_index:
                return refuse(Code.FALL_BEHIND_TOO_MUCH)
            return await self._transfer(term, transferee)
        if transferee == member.self_id:
            if transfer_id != member.leader_id:
                return refuse(Code.INCONSISTENT_LEADER)
            loop = asyncio.get_running_loop()
            deadline = loop.time() + self.config.leadership_transfer_wait_timeout
            target = int(request.get("takeLeadershipLedgerIndex", -1))
            while self.ledger.end_index < target:
                if loop.time() > deadline:
                    return refuse(Code.TAKE_LEADERSHIP_FAILED)
                await asyncio.sleep(0.01)
            return await self.elector.take_leadership(request)
        return base(None, None, None, term=member.term, code=Code.UNEXPECTED_ARGUMENT)

    async def _transfer(self, term: int, transferee: str) -> Body:
        """The leader's side of a transfer to ``transferee``."""
        member = self.member
        if member.term != term:
            return base(None, None, None, term=member.term, code=Code.INCONSISTENT_TERM)
        if member.role is not Role.LEADER:
            return base(None, None, None, term=member.term, code=Code.NOT_LEADER)
        if member.transferee is not None:
            return base(None, None, None, term=member.term, code=Code.LEADER_TRANSFERRING)
        member.transferee = transferee
        request = base(
            member.group, member.self_id, transferee, leader_id=member.leader_id, term=term
        )
        request.update(
            takeLeadershipLedgerIndex=self.ledger.end_index,
            transferId=member.self_id,
            transfereeId=transferee,
        )
        try:
            answer = await self._send(transferee, "LEADERSHIP_TRANSFER", request)
        except Exception:
            answer = base(None, None, None, term=member.term, code=Code.NETWORK_ERROR)
        if int(answer.get("code", Code.UNKNOWN)) != Code.SUCCESS or (
            member.term == term and member.transferee is not None
        ):
            member.transferee = None
        return answer
