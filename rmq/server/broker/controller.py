"""The broker process: store, metadata managers, processors, remoting server and timers.

:class:`BrokerController` wires one broker together the way Apache's ``BrokerController``
does, but its processors never see it: each is built with the broker's
:class:`~rmq.server.broker.context.BrokerContext` (configs, store, metadata managers, clients,
stats, parked pulls; made by :func:`~rmq.server.broker.context.build_broker_context`), and
the one thing they ask of the controller, a registration with the name servers, reaches it
through the context's ``register_broker`` callback.  The controller owns:

* ``context``, that context, and ``broker_addr`` (``brokerIP1:listenPort``);
* ``registration``, the name server registration (:class:`BrokerRegistration`), and
  ``transaction_check_service``, which asks producers about unresolved half messages;
* ``dledger``, with ``enableDLegerCommitLog``, the broker's DLedger node and its role
  following leadership (:mod:`rmq.server.broker.dledger.leadership`); the HA port, the
  schedule service and the transaction checks are not started then;
* ``server``, a :class:`RemotingServer` on ``bindAddress:listenPort`` serving the handlers of
  every processor (admin, send, reply, send-back, pull, query, consumer offsets, consumer and
  producer queries, client management, end transaction, store maintenance); codes nobody
  serves get the admin processor's REQUEST_CODE_NOT_SUPPORTED;
* ``fast_server``, a second :class:`RemotingServer` on ``bindAddress:listenPort - 2``: the
  "fast" (VIP) port, where Java clients with ``vipChannelEnabled`` (on by default up to
  4.4.0, off since 4.5.1) send everything but pulls.  It serves the same handlers except
  those of :data:`MAIN_PORT_ONLY` (PULL_MESSAGE), which get REQUEST_CODE_NOT_SUPPORTED
  there, as on Apache's fast port.  The broker registers only ``listenPort`` with its name
  servers; clients derive the fast port by subtracting 2.  Connections closing on either
  server are cleaned up the same way.

Start: the three metadata files are read (a corrupt file with no usable backup stops the
start), the store starts in a worker thread (lock, recovery), both servers and the replication
service (``haListenPort``, :mod:`rmq.server.broker.ha`) listen (a port taken stops the start:
:class:`~rmq.remoting.errors.ListenError` names it), the broker registers with its name servers
and the timers start:

==========================================  ==============================================
every                                       does
==========================================  ==============================================
1 s                                         sample the TPS counters
10 s, 10 min, 1 h (from the start)          sample the stats items' minute, hour, day windows
``flushConsumerOffsetInterval`` (5 s)       persist ``consumerOffset.json``
5 s                                         wake parked pulls whose queue grew
10 s                                        drop clients silent for 120 s
``cleanResourceInterval`` (10 s, after 60)  delete expired store files (worker thread)
``registerNameServerPeriod`` (30 s)         register with the name servers (after 10 s)
10 s (after 3 s), on a SLAVE                copy the master's topics, offsets, delay offsets
                                            and groups (:mod:`~.slavesync`)
local midnight                              roll the day totals of the runtime info
==========================================  ==============================================

Topics and groups are written by their managers by group commit, and every handler's answer
waits for the write covering the changes it made (:func:`~.configmanager.commit_before_answer`);
a topic change the name servers must learn schedules a registration (the changed topic alone
for UPDATE_AND_CREATE_TOPIC, the whole table for auto-creation), and registrations requested
close together are coalesced.  Every message the store dispatches to
a consume queue wakes the pulls parked on that queue: once the store has started, its
``arrival_listener`` is the hold service's ``notify_message_arriving``.

Stop (SIGTERM, Ctrl-C): timers stop, both servers stop accepting and close every connection,
the broker unregisters from its name servers, offsets, topics and groups are written, and the
store shuts down (flush, delete ``abort``, release the lock).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import inspect
import logging
from collections import deque
from collections.abc import Callable, Mapping

from rmq.common.config import FAST_PORT_OFFSET, BrokerConfigs, BrokerRole
from rmq.remoting.codes import RequestCode
from rmq.remoting.connection import Connection
from rmq.remoting.limits import flow_limits
from rmq.remoting.server import RemotingServer
from rmq.runtime import run_until_signal
from rmq.server.broker.acl.files import WATCH_INTERVAL as ACL_WATCH_INTERVAL
from rmq.server.broker.acl.service import AclService, acl_service
from rmq.server.broker.acl.service import unguarded as _unguarded
from rmq.server.broker.configmanager import commit_before_answer
from rmq.server.broker.context import build_broker_context
from rmq.server.broker.dledger.leadership import DLedgerBroker
from rmq.server.broker.out.registration import BrokerRegistration
from rmq.server.broker.processor.adminprocessor import AdminProcessor
from rmq.server.broker.processor.clientcallprocessor import ClientCallProcessor
from rmq.server.broker.processor.clientprocessor import ClientProcessor
from rmq.server.broker.processor.consumerqueries import ConsumerQueryProcessor
from rmq.server.broker.processor.offsetprocessor import ConsumerOffsetProcessor
from rmq.server.broker.processor.pullprocessor import PullMessageProcessor
from rmq.server.broker.processor.queryprocessor import QueryMessageProcessor
from rmq.server.broker.processor.replyprocessor import ReplyMessageProcessor
from rmq.server.broker.processor.sendback import SendBackProcessor
from rmq.server.broker.processor.sendprocessor import SendMessageProcessor
from rmq.server.broker.processor.storeadmin import StoreAdminProcessor
from rmq.server.broker.slave.slavesync import SlaveSynchronizer
from rmq.server.broker.stats.statsitems import (
    DAY_SAMPLE_INTERVAL_S,
    HOUR_SAMPLE_INTERVAL_S,
    MINUTE_SAMPLE_INTERVAL_S,
)
from rmq.server.broker.transaction.transaction import EndTransactionProcessor
from rmq.server.broker.transaction.transactioncheck import TransactionalMessageCheckService
from rmq.store.cleanup import CleanupResult

log = logging.getLogger("rmq.broker")

STATS_SAMPLE_INTERVAL_S = 1.0
HOLD_CHECK_INTERVAL_S = 5.0
CLIENT_SCAN_INTERVAL_S = 10.0
CONSUMER_FILTER_PERSIST_INTERVAL_S = 10.0
FIRST_CLEANUP_DELAY_S = 60.0
CLOSE_BATCH = 32
"""Closed connections cleaned up in one turn of the event loop."""
MAIN_PORT_ONLY = frozenset({RequestCode.PULL_MESSAGE})
"""The request codes the fast port (``listenPort - 2``) does not serve."""


def seconds_to_next_midnight(now: datetime.datetime) -> float:
    """Seconds from ``now`` (local time) to the next local midnight."""
    midnight = datetime.datetime.combine(now.date() + datetime.timedelta(days=1), datetime.time())
    return (midnight - now).total_seconds()


class BrokerController:
    """One broker (see the module docstring)."""

    def __init__(
        self,
        configs: BrokerConfigs,
        *,
        config_file: str | None = None,
        file_properties: Mapping[str, str] | None = None,
    ) -> None:
        self.configs = configs
        self.context = build_broker_context(
            configs,
            register_broker=self._register_broker,
            config_file=config_file,
            file_properties=file_properties,
        )
        context = self.context
        self.broker_addr = context.broker_addr
        self.transaction_check_service = TransactionalMessageCheckService(context)
        self.dledger: DLedgerBroker | None = None
        if context.store_config.enable_d_leger_commit_log:
            self.dledger = DLedgerBroker(context, self._register_broker)
        self.slave_sync: SlaveSynchronizer | None = None
        if self.dledger is not None or context.store_config.broker_role is BrokerRole.SLAVE:
            self.slave_sync = SlaveSynchronizer(context)
            context.master_listeners.append(self.slave_sync.master_changed)
        self.registration = BrokerRegistration(
            configs.broker,
            configs.store,
            configs.client,
            context.topic_config_manager,
            self.broker_addr,
            on_master=context.set_master,
        )
        context.topic_config_manager.on_increment = self.registration.request_increment
        netty = configs.server
        idle_timeout = float(netty.server_channel_max_idle_time_seconds)
        limits = flow_limits(netty)
        self.server = RemotingServer(
            netty.bind_address, netty.listen_port, idle_timeout=idle_timeout, limits=limits
        )
        self.fast_server = RemotingServer(
            netty.bind_address,
            netty.listen_port - FAST_PORT_OFFSET,
            role=f"the broker's fast port (listenPort - {FAST_PORT_OFFSET})",
            idle_timeout=idle_timeout,
            limits=limits,
        )
        self.admin_processor = AdminProcessor(context)
        self.client_processor = ClientProcessor(context)
        processors = (
            self.admin_processor,
            SendMessageProcessor(context),
            ReplyMessageProcessor(context),
            SendBackProcessor(context),
            PullMessageProcessor(context),
            QueryMessageProcessor(context),
            ConsumerOffsetProcessor(context),
            ConsumerQueryProcessor(context),
            self.client_processor,
            ClientCallProcessor(context),
            EndTransactionProcessor(context),
            StoreAdminProcessor(context),
        )
        self.acl: AclService | None = acl_service(context) if configs.broker.acl_enable else None
        guard = self.acl.guard if self.acl is not None else _unguarded
        metadata = (context.topic_config_manager, context.subscription_group_manager)
        for processor in (*processors, *((self.acl,) if self.acl is not None else ())):
            for code, handler in processor.handlers().items():
                guarded = guard(commit_before_answer(handler, metadata))
                self.server.register(code, guarded)
                if code not in MAIN_PORT_ONLY:
                    self.fast_server.register(code, guarded)
        for server in (self.server, self.fast_server):
            server.register_default(guard(self.admin_processor.not_supported))
            server.on_connection_closed(self._connection_closed)
        self._timers: list[asyncio.Task[None]] = []
        self._closed_connections: deque[Connection] = deque()
        self._forgetting = False
        self._cleanup: asyncio.Future[CleanupResult] | None = None

    def _register_broker(self) -> None:
        """The context's ``register_broker``: a forced registration round (coalesced)."""
        self.registration.request(force=True)

    # -- lifecycle -----------------------------------------------------------------------

    async def start(self) -> None:
        """Load metadata, start the store, listen, register and start the timers.

        Raises :class:`~rmq.store.configfile.ConfigFileError` for unreadable metadata,
        :class:`~rmq.store.errors.StoreError` when the store cannot be opened and
        :class:`~rmq.remoting.errors.ListenError` when ``listenPort``, the fast port or
        ``haListenPort`` cannot be bound; nothing is left running then.
        """
        context = self.context
        start_empty = context.store_config.start_with_empty_metadata_on_damage
        for manager in (
            context.topic_config_manager,
            context.subscription_group_manager,
            context.consumer_offset_manager,
            context.consumer_filter_manager,
        ):
            manager.load(start_empty_on_damage=start_empty)
        # SYNC_FLUSH: each group commit's waiters come back to this loop in one call.
        context.store.set_flush_handoff(asyncio.get_running_loop().call_soon_threadsafe)
        recovery = await asyncio.to_thread(context.store.start)
        if recovery.abnormal:
            log.warning("the previous run did not shut down cleanly; recovered the store")
        context.store.arrival_listener = context.pull_hold.notify_message_arriving
        dledger = self.dledger
        master = dledger is None and context.store_config.broker_role is not BrokerRole.SLAVE
        try:
            if master:
                await context.schedule_service.start()
            await self.server.start()
            await self.fast_server.start()
            if dledger is None:
                await context.ha_service.start()
            else:
                await dledger.start()
        except BaseException:
            if dledger is not None:
                await dledger.stop()
            await context.ha_service.stop()
            await self.server.close()
            await self.fast_server.close()
            await context.schedule_service.stop()
            await asyncio.to_thread(context.store.shutdown)
            raise
        self.registration.request(force=True)
        await self.registration.wait_idle()
        self._start_timers()
        if master:
            await self.transaction_check_service.start()
        broker_config = context.broker_config
        tip = (
            f"The broker[{broker_config.broker_name}, {self.broker_addr}] boot success. "
            "serializeType=JSON"
        )
        if broker_config.namesrv_addr:
            tip += f" and name server is {broker_config.namesrv_addr}"
        log.info(tip)

    async def stop(self) -> None:
        """Stop the timers, close the server, unregister, persist and shut the store down."""
        context = self.context
        for timer in self._timers:
            timer.cancel()
        await asyncio.gather(*self._timers, return_exceptions=True)
        self._timers.clear()
        await self.server.close()
        await self.fast_server.close()
        await self.registration.unregister()
        await context.ha_service.stop()
        if self.dledger is not None:
            await self.dledger.stop()
        await self.transaction_check_service.stop()
        if self.slave_sync is not None:
            await self.slave_sync.close()
        await context.schedule_service.stop()
        if self._cleanup is not None:
            with contextlib.suppress(Exception):
                await self._cleanup
        context.consumer_offset_manager.persist()
        context.consumer_filter_manager.persist()
        await context.topic_config_manager.flush()
        await context.subscription_group_manager.flush()
        context.topic_config_manager.persist()
        context.subscription_group_manager.persist()
        await asyncio.to_thread(context.store.shutdown)
        log.info("the broker[%s, %s] stopped", context.broker_config.broker_name, self.broker_addr)

    # -- timers --------------------------------------------------------------------------

    def _start_timers(self) -> None:
        context = self.context
        broker_config = context.broker_config
        loop = asyncio.get_running_loop()
        timers = [
            self._every("stats sampling", STATS_SAMPLE_INTERVAL_S, context.stats.sample),
            *(
                self._every(f"stats items {name} sampling", interval, sample, first_delay=0)
                for name, interval, sample in (
                    ("minute", MINUTE_SAMPLE_INTERVAL_S, context.stats.items.sample_minute),
                    ("hour", HOUR_SAMPLE_INTERVAL_S, context.stats.items.sample_hour),
                    ("day", DAY_SAMPLE_INTERVAL_S, context.stats.items.sample_day),
                )
            ),
            self._every(
                "consumer offset persist",
                broker_config.flush_consumer_offset_interval / 1000,
                context.consumer_offset_manager.persist,
            ),
            self._every(
                "consumer filter persist",
                CONSUMER_FILTER_PERSIST_INTERVAL_S,
                context.consumer_filter_manager.persist,
            ),
            self._every(
                "pull hold check", HOLD_CHECK_INTERVAL_S, context.pull_hold.check_hold_requests
            ),
            self._every(
                "client channel scan",
                CLIENT_SCAN_INTERVAL_S,
                context.client_manager.scan_not_active_channels,
            ),
            self._every(
                "store cleanup",
                context.store_config.clean_resource_interval / 1000,
                self._clean_store,
                first_delay=FIRST_CLEANUP_DELAY_S,
            ),
            self._roll_day(),
            self.registration.run_periodically(),
        ]
        if self.slave_sync is not None:
            timers.append(self.slave_sync.run_periodically())
        if self.acl is not None:
            timers.append(self._every("acl files watch", ACL_WATCH_INTERVAL, self.acl.files.poll))
        self._timers = [loop.create_task(timer) for timer in timers]

    async def _every(
        self,
        name: str,
        interval_s: float,
        action: Callable[[], object],
        *,
        first_delay: float | None = None,
    ) -> None:
        await asyncio.sleep(interval_s if first_delay is None else first_delay)
        while True:
            try:
                outcome = action()
                if inspect.isawaitable(outcome):
                    await outcome
            except Exception:
                log.exception("%s failed", name)
            await asyncio.sleep(interval_s)

    async def _clean_store(self) -> None:
        loop = asyncio.get_running_loop()
        self._cleanup = loop.run_in_executor(None, self.context.store.run_cleanup)
        await asyncio.shield(self._cleanup)

    async def _roll_day(self) -> None:
        while True:
            await asyncio.sleep(seconds_to_next_midnight(datetime.datetime.now()))
            self.context.stats.record_day()

    # -- connections ---------------------------------------------------------------------

    def _connection_closed(self, connection: Connection) -> None:
        """Forget a closed connection's parked pulls and client registrations; hundreds
        closing together are handled CLOSE_BATCH to a turn of the event loop, so the broker
        goes on answering the others meanwhile."""
        self._closed_connections.append(connection)
        if not self._forgetting:
            self._forgetting = True
            asyncio.get_running_loop().call_soon(self._forget_closed)

    def _forget_closed(self) -> None:
        closed = self._closed_connections
        for _ in range(min(CLOSE_BATCH, len(closed))):
            connection = closed.popleft()
            try:
                self.context.pull_hold.channel_closed(connection)
                self.client_processor.channel_closed(connection)
            except Exception:
                log.exception("cleaning up after %s failed", connection)
        if closed:
            asyncio.get_running_loop().call_soon(self._forget_closed)
        else:
            self._forgetting = False


async def run_broker(
    configs: BrokerConfigs,
    *,
    config_file: str | None = None,
    file_properties: Mapping[str, str] | None = None,
) -> int:
    """Run a broker until SIGTERM or Ctrl-C; returns the process exit code."""
    controller = BrokerController(configs, config_file=config_file, file_properties=file_properties)
    return await run_until_signal(controller, log)
