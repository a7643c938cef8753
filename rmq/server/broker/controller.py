"""The broker process: store, metadata managers, processors, remoting server and timers.

:class:`BrokerController` wires one broker together the way Apache's ``BrokerController``
does, and is the object every processor is built with (its attribute names are the contract
between them):

* ``broker_config`` / ``store_config`` / ``netty_config`` (and ``configs``, all four, for the
  settings requests), ``config_path`` (where UPDATE_BROKER_CONFIG writes the settings: the
  ``-c`` file, else ``<storePathRootDir>/config/broker.properties``) and ``file_properties``
  (the ``-c`` file as read);
* ``store``, the :class:`~rmq.store.store.MessageStore` of ``storePathRootDir``, whose
  records carry ``store_host`` (``brokerIP1:listenPort`` packed), and ``broker_addr``, the
  same address as text;
* ``topic_config_manager``, ``subscription_group_manager`` and ``consumer_offset_manager``,
  persisted in the store's ``config/`` directory; ``client_manager``; ``stats``;
  ``pull_hold``, the parked pull requests; ``registration``, the name server registration;
* ``server``, a :class:`RemotingServer` on ``bindAddress:listenPort`` serving the handlers of
  every processor (admin, send, pull, query, consumer offsets, client management); codes
  nobody serves get the admin processor's REQUEST_CODE_NOT_SUPPORTED;
* ``fast_server``, a second :class:`RemotingServer` on ``bindAddress:listenPort - 2``: the
  "fast" (VIP) port, where Java clients with ``vipChannelEnabled`` (on by default up to
  4.4.0, off since 4.5.1) send everything but pulls.  It serves the same handlers except
  those of :data:`MAIN_PORT_ONLY` (PULL_MESSAGE), which get REQUEST_CODE_NOT_SUPPORTED
  there, as on Apache's fast port.  The broker registers only ``listenPort`` with its name
  servers; clients derive the fast port by subtracting 2.  Connections closing on either
  server are cleaned up the same way.

Start: the three metadata files are read (a corrupt file with no usable backup stops the
start), the store starts in a worker thread (lock, recovery), both servers listen (either port
taken stops the start: :class:`~rmq.remoting.errors.ListenError` names it), the broker
registers with its name servers and the timers start:

==========================================  ==============================================
every                                       does
==========================================  ==============================================
1 s                                         sample the TPS counters
``flushConsumerOffsetInterval`` (5 s)       persist ``consumerOffset.json``
5 s                                         wake parked pulls whose queue grew
10 s                                        drop clients silent for 120 s
``cleanResourceInterval`` (10 s, after 60)  delete expired store files (worker thread)
``registerNameServerPeriod`` (30 s)         register with the name servers (after 10 s)
local midnight                              roll the day totals of the runtime info
==========================================  ==============================================

Topics and groups are written by their managers on every change; a topic change the name
servers must learn (UPDATE_AND_CREATE_TOPIC, auto-creation) schedules a registration, and
registrations requested close together are coalesced.  Every message the store dispatches to
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
import math
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from rmq.common.config import FAST_PORT_OFFSET, BrokerConfigs, BrokerRole
from rmq.remoting.codes import RequestCode
from rmq.remoting.connection import Connection
from rmq.remoting.server import RemotingServer
from rmq.server.broker.adminprocessor import AdminProcessor
from rmq.server.broker.clientmanager import ClientChannel, ClientManager
from rmq.server.broker.clientprocessor import ClientProcessor
from rmq.server.broker.consumeroffset import ConsumerOffsetManager
from rmq.server.broker.longpolling import PullRequestHoldService
from rmq.server.broker.offsetprocessor import ConsumerOffsetProcessor
from rmq.server.broker.pullprocessor import PullMessageProcessor
from rmq.server.broker.queryprocessor import QueryMessageProcessor
from rmq.server.broker.registration import BrokerRegistration
from rmq.server.broker.schedule import ScheduleMessageService
from rmq.server.broker.sendprocessor import SendMessageProcessor
from rmq.server.broker.stats import BrokerStats
from rmq.server.broker.subscriptiongroup import SubscriptionGroupManager
from rmq.server.broker.topicconfig import TopicConfigManager
from rmq.server.broker.transaction import (
    EndTransactionProcessor,
    TransactionalMessageCheckService,
)
from rmq.server.runtime import run_until_signal
from rmq.store.cleanup import CleanupResult
from rmq.store.layout import (
    CONSUMER_OFFSET_JSON,
    DELAY_OFFSET_JSON,
    SUBSCRIPTION_GROUP_JSON,
    TOPICS_JSON,
)
from rmq.store.store import MessageStore

log = logging.getLogger("rmq.broker")

BROKER_CONFIG_FILE = "broker.properties"
"""The settings file UPDATE_BROKER_CONFIG writes when the broker was started without ``-c``."""
STATS_SAMPLE_INTERVAL_S = 1.0
HOLD_CHECK_INTERVAL_S = 5.0
CLIENT_SCAN_INTERVAL_S = 10.0
FIRST_CLEANUP_DELAY_S = 60.0
MAIN_PORT_ONLY = frozenset({RequestCode.PULL_MESSAGE})
"""The request codes the fast port (``listenPort - 2``) does not serve."""


def bloom_filter_bits(error_rate_percent: int, expected: int) -> int:
    """Bits of the bloom filter Apache's ConsumerFilterManager builds for ``expected``
    consumers at ``error_rate_percent`` % false positives (``n * log2(1/f) * log2(e)``, rounded
    up to whole bytes); Apache's broker writes it into ``bitMapLengthConsumeQueueExt`` at start,
    whatever the configuration said (defaults 20 %, 32 consumers: 112)."""
    rate = error_rate_percent / 100
    bits = math.ceil(expected * math.log2(1 / rate) * math.log2(math.e))
    return 8 * math.ceil(bits / 8)


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
        self.broker_config = configs.broker
        self.store_config = configs.store
        self.netty_config = configs.server
        self.file_properties = dict(file_properties or {})
        self.config_path = Path(
            config_file
            if config_file is not None
            else Path(self.store_config.store_path_root_dir) / "config" / BROKER_CONFIG_FILE
        )
        self.broker_addr = f"{self.broker_config.broker_ip1}:{self.netty_config.listen_port}"
        self.store_config.bit_map_length_consume_queue_ext = bloom_filter_bits(
            self.broker_config.max_error_rate_of_bloom_filter,
            self.broker_config.expect_consumer_num_use_filter,
        )
        self.store = MessageStore(self.store_config, store_host=self.broker_addr)
        self.store_host = self.store.store_host
        layout = self.store.layout
        self.topic_config_manager = TopicConfigManager(
            self.broker_config,
            layout.config_file(TOPICS_JSON),
            on_register=lambda _: self.register_broker_all(force=True),
        )
        self.subscription_group_manager = SubscriptionGroupManager(
            self.broker_config, layout.config_file(SUBSCRIPTION_GROUP_JSON)
        )
        self.consumer_offset_manager = ConsumerOffsetManager(
            layout.config_file(CONSUMER_OFFSET_JSON)
        )
        self.client_manager = ClientManager(self.broker_config)
        self.stats = BrokerStats()
        self.pull_hold = PullRequestHoldService(self.store, self.broker_config)
        self.schedule_service = ScheduleMessageService(
            self.store, self.store_config, layout.config_file(DELAY_OFFSET_JSON)
        )
        self.transaction_check_service = TransactionalMessageCheckService(self)
        self.registration = BrokerRegistration(
            self.broker_config,
            self.store_config,
            configs.client,
            self.topic_config_manager,
            self.broker_addr,
        )
        netty = self.netty_config
        idle_timeout = float(netty.server_channel_max_idle_time_seconds)
        self.server = RemotingServer(
            netty.bind_address, netty.listen_port, idle_timeout=idle_timeout
        )
        self.fast_server = RemotingServer(
            netty.bind_address,
            netty.listen_port - FAST_PORT_OFFSET,
            role=f"the broker's fast port (listenPort - {FAST_PORT_OFFSET})",
            idle_timeout=idle_timeout,
        )
        self.admin_processor = AdminProcessor(self)
        self.client_processor = ClientProcessor(self)
        processors = (
            self.admin_processor,
            SendMessageProcessor(self),
            PullMessageProcessor(self),
            QueryMessageProcessor(self),
            ConsumerOffsetProcessor(self),
            self.client_processor,
            EndTransactionProcessor(self),
        )
        for processor in processors:
            for code, handler in processor.handlers().items():
                self.server.register(code, handler)
                if code not in MAIN_PORT_ONLY:
                    self.fast_server.register(code, handler)
        for server in (self.server, self.fast_server):
            server.register_default(self.admin_processor.not_supported)
            server.on_connection_closed(self._connection_closed)
        self._timers: list[asyncio.Task[None]] = []
        self._cleanup: asyncio.Future[CleanupResult] | None = None

    # -- what processors call ------------------------------------------------------------

    def register_broker_all(self, force: bool = False) -> None:
        """Schedule a registration with every name server (bursts are coalesced)."""
        self.registration.request(force)

    def notify_consumer_ids_changed(self, group: str, channels: Iterable[ClientChannel]) -> None:
        """Tell ``channels`` that the membership of consumer group ``group`` changed."""
        self.client_processor.notify_consumer_ids_changed(group, channels)

    # -- lifecycle -----------------------------------------------------------------------

    async def start(self) -> None:
        """Load metadata, start the store, listen, register and start the timers.

        Raises :class:`~rmq.store.configfile.ConfigFileError` for unreadable metadata,
        :class:`~rmq.store.errors.StoreError` when the store cannot be opened and
        :class:`~rmq.remoting.errors.ListenError` when ``listenPort`` or the fast port cannot
        be bound; nothing is left running then.
        """
        self.topic_config_manager.load()
        self.subscription_group_manager.load()
        self.consumer_offset_manager.load()
        recovery = await asyncio.to_thread(self.store.start)
        if recovery.abnormal:
            log.warning("the previous run did not shut down cleanly; recovered the store")
        self.store.arrival_listener = self.pull_hold.notify_message_arriving
        master = self.store_config.broker_role is not BrokerRole.SLAVE
        try:
            if master:
                await self.schedule_service.start()
            await self.server.start()
            await self.fast_server.start()
        except BaseException:
            await self.server.close()
            await self.schedule_service.stop()
            await asyncio.to_thread(self.store.shutdown)
            raise
        self.register_broker_all(force=True)
        await self.registration.wait_idle()
        self._start_timers()
        if master:
            await self.transaction_check_service.start()
        tip = (
            f"The broker[{self.broker_config.broker_name}, {self.broker_addr}] boot success. "
            "serializeType=JSON"
        )
        if self.broker_config.namesrv_addr:
            tip += f" and name server is {self.broker_config.namesrv_addr}"
        log.info(tip)

    async def stop(self) -> None:
        """Stop the timers, close the server, unregister, persist and shut the store down."""
        for timer in self._timers:
            timer.cancel()
        await asyncio.gather(*self._timers, return_exceptions=True)
        self._timers.clear()
        await self.server.close()
        await self.fast_server.close()
        await self.registration.unregister()
        await self.transaction_check_service.stop()
        await self.schedule_service.stop()
        if self._cleanup is not None:
            with contextlib.suppress(Exception):
                await self._cleanup
        self.consumer_offset_manager.persist()
        self.topic_config_manager.persist()
        self.subscription_group_manager.persist()
        await asyncio.to_thread(self.store.shutdown)
        log.info("the broker[%s, %s] stopped", self.broker_config.broker_name, self.broker_addr)

    # -- timers --------------------------------------------------------------------------

    def _start_timers(self) -> None:
        broker_config = self.broker_config
        loop = asyncio.get_running_loop()
        timers = [
            self._every("stats sampling", STATS_SAMPLE_INTERVAL_S, self.stats.sample),
            self._every(
                "consumer offset persist",
                broker_config.flush_consumer_offset_interval / 1000,
                self.consumer_offset_manager.persist,
            ),
            self._every(
                "pull hold check", HOLD_CHECK_INTERVAL_S, self.pull_hold.check_hold_requests
            ),
            self._every(
                "client channel scan",
                CLIENT_SCAN_INTERVAL_S,
                self.client_manager.scan_not_active_channels,
            ),
            self._every(
                "store cleanup",
                self.store_config.clean_resource_interval / 1000,
                self._clean_store,
                first_delay=FIRST_CLEANUP_DELAY_S,
            ),
            self._roll_day(),
            self.registration.run_periodically(),
        ]
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
        self._cleanup = asyncio.get_running_loop().run_in_executor(None, self.store.run_cleanup)
        await asyncio.shield(self._cleanup)

    async def _roll_day(self) -> None:
        while True:
            await asyncio.sleep(seconds_to_next_midnight(datetime.datetime.now()))
            self.stats.record_day()

    # -- connections ---------------------------------------------------------------------

    def _connection_closed(self, connection: Connection) -> None:
        self.pull_hold.channel_closed(connection)
        self.client_processor.channel_closed(connection)


async def run_broker(
    configs: BrokerConfigs,
    *,
    config_file: str | None = None,
    file_properties: Mapping[str, str] | None = None,
) -> int:
    """Run a broker until SIGTERM or Ctrl-C; returns the process exit code."""
    controller = BrokerController(configs, config_file=config_file, file_properties=file_properties)
    return await run_until_signal(controller, log)
