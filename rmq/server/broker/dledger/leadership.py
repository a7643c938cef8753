"""A broker with ``enableDLegerCommitLog``: its DLedger node, and its role following leadership.

:class:`DLedgerBroker` is built by the controller when ``enableDLegerCommitLog=true``, from
``dLegerGroup``, ``dLegerPeers``, ``dLegerSelfId`` and ``preferredLeaderId`` (as RocketMQ
4.9.8's DLedgerCommitLog reads them).  It makes the store read from the node's data files
(:meth:`~rmq.store.store.MessageStore.use_dledger_data`), dispatches committed records into
the consume queues and index on every node, and stores sends through
:class:`~rmq.server.broker.dledger.commitlog.DLedgerCommitLog` (the context's ``dledger_put``).

Role, as Apache's DLedgerRoleChangeHandler sets it: the broker starts as a slave registered
as brokerId ``selfId + 1`` (``n0`` -> 1); once its node leads and its log is committed and
dispatched it turns master (SYNC_MASTER, brokerId 0) and registers again; on becoming a
follower or candidate it turns slave again and registers.  The name server drops the
address's entry under its other id (rmq's and Apache's name servers both do), so clients'
routes move to the new master with no change on their side.  A follower (or a leader not
yet ready) answers sends SERVICE_NOT_AVAILABLE, as Apache's does.  Classic replication (the
HA port) is not started in this mode.

Not handled yet: delayed messages and batches (refused by the send processor), and the
copying of a master's topics, offsets and groups that Apache's slaves do.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from rmq.common.config import BrokerRole
from rmq.server.broker.context import BrokerContext
from rmq.server.broker.dledger.commitlog import DLedgerCommitLog
from rmq.server.broker.dledger.config import DLedgerConfig, broker_id_of, parse_peers
from rmq.server.broker.dledger.member import Role
from rmq.server.broker.dledger.node import DLedgerNode
from rmq.store.putmessage import InnerMessage, PutMessageResult, PutMessageStatus

log = logging.getLogger("rmq.broker")

MASTER_ID = 0


def dledger_config(context: BrokerContext) -> DLedgerConfig:
    """The node's configuration from the broker's keys (raises PeersError when they do not
    hold together).  The data files are ``mappedFileSizeCommitLog`` bytes, as RocketMQ's
    DLedgerCommitLog sets them; the index files keep DLedger's own size."""
    store = context.store_config
    peers = parse_peers(store.d_leger_peers or "")
    preferred = [p.strip() for p in (store.preferred_leader_id or "").split(";") if p.strip()]
    return DLedgerConfig(
        group=store.d_leger_group or context.broker_config.broker_name,
        self_id=store.d_leger_self_id or "",
        peers=peers,
        store_root=store.store_path_root_dir,
        preferred_leader_ids=preferred,
        data_file_size=store.mapped_file_size_commit_log,
    )


class DLedgerBroker:
    """The DLedger side of one broker (see the module docstring)."""

    def __init__(self, context: BrokerContext, register: Callable[[], None]) -> None:
        self.context = context
        self._register = register
        config = dledger_config(context)
        self.follower_id = broker_id_of(config.self_id)
        self.node = DLedgerNode(config)
        self.commitlog: DLedgerCommitLog | None = None
        context.store.use_dledger_data(self.node.ledger.data)
        context.dledger_put = self.put_message
        context.dledger_runtime = self.runtime_info
        self._set_role(BrokerRole.SLAVE, self.follower_id)

    @property
    def is_master(self) -> bool:
        return self.context.broker_config.broker_id == MASTER_ID

    def _set_role(self, role: BrokerRole, broker_id: int) -> None:
        self.context.store_config.broker_role = role
        self.context.broker_config.broker_id = broker_id

    async def start(self) -> None:
        """Recover the log, listen on the DLedger port and start following leadership (after
        the store started: committed records are dispatched from here on)."""
        await self.node.start()
        commitlog = DLedgerCommitLog(
            self.node, self.context.store.store_host, self.context.store.dispatch_record
        )
        commitlog.ready_handlers.append(self._to_master)
        self.node.elector.role_handlers.append(self._role_changed)
        self.commitlog = commitlog
        store = self.context.store
        if store.dledger_dispatched_end >= 0:  # a record's end is the next entry's position
            # (below the DLedger log's start: records of the classic commitlog under it)
            commitlog.messages.dispatched_pos = max(
                store.dledger_dispatched_end, store.dledger_divided
            )
            commitlog.messages.dispatched_queue_table = {
                (queue.topic, queue.queue_id): queue.max_offset for queue in store.consume_queues
            }
        commitlog.attach()

    async def stop(self) -> None:
        if self.commitlog is not None:
            await self.commitlog.close()
        await self.node.stop()

    def _to_master(self) -> None:
        log.info(
            "DLedger node %s leads term %d with its log dispatched: broker turns master",
            self.node.config.self_id,
            self.node.term,
        )
        self._set_role(BrokerRole.SYNC_MASTER, MASTER_ID)
        self._register()

    def _role_changed(self, term: int, role: Role) -> None:
        if role is Role.LEADER or not self.is_master:
            return
        log.info(
            "DLedger node %s is %s at term %d: broker turns slave (brokerId %d)",
            self.node.config.self_id,
            role.value,
            term,
            self.follower_id,
        )
        self._set_role(BrokerRole.SLAVE, self.follower_id)
        self._register()

    def runtime_info(self) -> dict[str, str]:
        """The node's state as extra GET_BROKER_RUNTIME_INFO keys (rmq's, not Apache's)."""
        node = self.node
        return {
            "dLegerSelfId": node.config.self_id,
            "dLegerRole": node.role.value,
            "dLegerTerm": str(node.term),
            "dLegerLeaderId": node.leader_id or "",
            "dLegerCommittedIndex": str(node.ledger.committed_index),
        }

    async def put_message(self, msg: InnerMessage) -> PutMessageResult:
        commitlog = self.commitlog
        if commitlog is None or not self.context.store.running:
            return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE)
        return await commitlog.put_message(msg)
