"""What a broker's processors work with: :class:`BrokerContext` and its one factory.

Apache hands every processor the whole ``BrokerController``; here a processor gets a
:class:`BrokerContext` instead: the broker's configs, its store, the metadata managers
(topics, subscription groups, consumer offsets), the connected clients, the traffic counters,
the parked pulls, the delay-level offsets, the clock, the master's addresses from the last
registration result and the replication service, plus one callback for the one thing
only the controller can do for a processor, :attr:`BrokerContext.register_broker` (a forced,
coalesced registration with every name server).  Nothing here starts, listens or serves: the
controller (``controller.py``) builds the context with :func:`build_broker_context`, builds
the processors from it and owns the servers, timers and lifecycle; the unit tests build their
broker with the same factory, so what the processors see in a test is what they see in a
broker.

:func:`build_broker_context` opens the :class:`~rmq.store.store.MessageStore` of
``storePathRootDir`` (not started: the controller starts it in a worker thread) with
``brokerIP1:listenPort`` as its store host, sizes the consume-queue extension's bloom filter as
Apache does (the consumer filter manager's) and points the managers at the store's ``config/``
directory.  A topic the name servers must learn (created on send or on heartbeat) calls
``register_broker`` through the topic manager's ``on_register`` hook; the controller points
its ``on_increment`` hook (UPDATE_AND_CREATE_TOPIC) at a registration of that topic alone.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from rmq.common.config import BrokerConfig, BrokerConfigs, MessageStoreConfig, NettyServerConfig
from rmq.common.timeutil import now_millis
from rmq.server.broker.client.clientmanager import ClientManager
from rmq.server.broker.filter.consumerfilter import ConsumerFilterManager
from rmq.server.broker.ha.service import HAService
from rmq.server.broker.longpolling.longpolling import PullRequestHoldService
from rmq.server.broker.offset.consumeroffset import ConsumerOffsetManager
from rmq.server.broker.schedule.schedule import ScheduleMessageService
from rmq.server.broker.stats.stats import BrokerStats
from rmq.server.broker.stats.statsitems import BrokerStatsItems
from rmq.server.broker.subscription.subscriptiongroup import SubscriptionGroupManager
from rmq.server.broker.topic.topicconfig import TopicConfigManager
from rmq.store.layout import (
    CONFIG_DIR,
    CONSUMER_FILTER_JSON,
    CONSUMER_OFFSET_JSON,
    DELAY_OFFSET_JSON,
    SUBSCRIPTION_GROUP_JSON,
    TOPICS_JSON,
)
from rmq.store.putmessage import InnerMessage, PutMessageResult
from rmq.store.store import MessageStore

BROKER_CONFIG_FILE = "broker.properties"
"""The settings file UPDATE_BROKER_CONFIG writes when the broker was started without ``-c``."""


@dataclass(eq=False)
class BrokerContext:
    """One broker's state as its processors see it (see the module docstring)."""

    configs: BrokerConfigs
    """All four configs; UPDATE_BROKER_CONFIG changes them in place."""
    config_path: Path
    """Where UPDATE_BROKER_CONFIG writes the settings: the ``-c`` file, else
    ``<storePathRootDir>/config/broker.properties``."""
    file_properties: Mapping[str, str]
    """The ``-c`` file as read (its keys no config knows are answered by GET_BROKER_CONFIG)."""
    broker_addr: str
    """``brokerIP1:listenPort``, the address the broker registers and commits offsets as."""
    store: MessageStore
    topic_config_manager: TopicConfigManager
    subscription_group_manager: SubscriptionGroupManager
    consumer_offset_manager: ConsumerOffsetManager
    consumer_filter_manager: ConsumerFilterManager
    client_manager: ClientManager
    stats: BrokerStats
    pull_hold: PullRequestHoldService
    schedule_service: ScheduleMessageService
    clock: Callable[[], int]
    """Milliseconds since the epoch, as the store stamps records."""
    register_broker: Callable[[], None]
    """Schedule a forced registration with every name server (bursts are coalesced)."""
    master_addr: str | None = None
    """The master's address (``masterAddr``) from the last registration result; ``None`` on a
    master or before the first result."""
    ha_master_addr: str | None = None
    """The master's HA address a slave replicates from: ``haMasterAddress`` of broker.conf
    when set (it wins, as in Apache), else ``haServerAddr`` of the last registration result."""
    master_listeners: list[Callable[[], None]] = field(default_factory=list)
    """Called (on the loop) after a registration result changed ``master_addr`` or
    ``ha_master_addr``."""
    dledger_put: Callable[[InnerMessage], Awaitable[PutMessageResult]] | None = None
    """With ``enableDLegerCommitLog``: how sends are stored (through the DLedger node, set by
    :mod:`rmq.server.broker.dledger.leadership`); the store itself then takes no puts."""
    dledger_runtime: Callable[[], dict[str, str]] | None = None
    """With ``enableDLegerCommitLog``: the node's role, term and committed index as extra
    GET_BROKER_RUNTIME_INFO keys (set by :mod:`rmq.server.broker.dledger.leadership`)."""
    ha_service: HAService = field(init=False)
    """Replication (:mod:`rmq.server.broker.ha`); the controller starts and stops it."""

    def __post_init__(self) -> None:
        if _configured_ha_master(self.store_config):
            self.ha_master_addr = self.store_config.ha_master_address
        self.ha_service = HAService(self)

    def set_master(self, master_addr: str | None, ha_server_addr: str | None) -> None:
        """Take a registration result's master address and HA server address; the HA one
        only when the result has one and ``haMasterAddress`` is not configured (as Apache's
        ``updateMasterHAServerAddrPeriodically``).  The listeners run on a change."""
        ha_addr = self.ha_master_addr
        if ha_server_addr is not None and not _configured_ha_master(self.store_config):
            ha_addr = ha_server_addr
        if (master_addr, ha_addr) == (self.master_addr, self.ha_master_addr):
            return
        self.master_addr, self.ha_master_addr = master_addr, ha_addr
        for listener in list(self.master_listeners):
            listener()

    @property
    def broker_config(self) -> BrokerConfig:
        return self.configs.broker

    @property
    def store_config(self) -> MessageStoreConfig:
        return self.configs.store

    @property
    def netty_config(self) -> NettyServerConfig:
        return self.configs.server

    @property
    def store_host(self) -> bytes:
        """The broker's address packed as records carry it (the store's)."""
        return self.store.store_host


def _configured_ha_master(store_config: MessageStoreConfig) -> bool:
    """Whether broker.conf sets ``haMasterAddress`` (Apache takes it from 6 characters on)."""
    return len(store_config.ha_master_address or "") >= 6


def build_broker_context(
    configs: BrokerConfigs,
    *,
    register_broker: Callable[[], None],
    config_file: str | None = None,
    file_properties: Mapping[str, str] | None = None,
    clock: Callable[[], int] = now_millis,
) -> BrokerContext:
    """The context of a broker configured by ``configs`` (see the module docstring); its
    store is not started yet."""
    broker_config, store_config = configs.broker, configs.store
    consumer_filter_manager = ConsumerFilterManager(
        Path(store_config.store_path_root_dir) / CONFIG_DIR / CONSUMER_FILTER_JSON,
        broker_config,
        clock,
    )
    # Apache's broker writes its bloom filter's size here at start, whatever was configured.
    store_config.bit_map_length_consume_queue_ext = consumer_filter_manager.bloom_filter.bits
    broker_addr = f"{broker_config.broker_ip1}:{configs.server.listen_port}"
    store = MessageStore(store_config, store_host=broker_addr, clock=clock)
    layout = store.layout
    consumer_offset_manager = ConsumerOffsetManager(layout.config_file(CONSUMER_OFFSET_JSON))
    store.group_offsets = consumer_offset_manager.offsets_by_topic
    config_path = Path(
        config_file
        if config_file is not None
        else Path(store_config.store_path_root_dir) / "config" / BROKER_CONFIG_FILE
    )
    stats = BrokerStats(
        items=BrokerStatsItems(
            broker_config.broker_cluster_name,
            queue_stats=broker_config.enable_detail_stat,
            schedule_stats=store_config.enable_schedule_message_stats,
            clock=clock,
        )
    )
    return BrokerContext(
        configs=configs,
        config_path=config_path,
        file_properties=dict(file_properties or {}),
        broker_addr=broker_addr,
        store=store,
        topic_config_manager=TopicConfigManager(
            broker_config,
            layout.config_file(TOPICS_JSON),
            on_register=lambda _created: register_broker(),
        ),
        subscription_group_manager=SubscriptionGroupManager(
            broker_config, layout.config_file(SUBSCRIPTION_GROUP_JSON)
        ),
        consumer_offset_manager=consumer_offset_manager,
        consumer_filter_manager=consumer_filter_manager,
        client_manager=ClientManager(broker_config),
        stats=stats,
        pull_hold=PullRequestHoldService(store, broker_config),
        schedule_service=ScheduleMessageService(
            store,
            store_config,
            layout.config_file(DELAY_OFFSET_JSON),
            clock=clock,
            on_delivered=stats.items.delivered,
        ),
        clock=clock,
        register_broker=register_broker,
    )
