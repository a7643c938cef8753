"""The five config objects a RocketMQ 4.9 process is configured through, with Java's defaults.

Each is a dataclass whose fields are the Java class's properties, in the Java declaration
order, every one declared with :func:`~rmq.common.configfields.setting`: its default, the
values it allows and when a change on a running server takes effect (the option machinery
is :mod:`rmq.common.configfields`'s, shared rules and environment defaults are
:mod:`rmq.common.configvalues`'):

* :class:`NamesrvConfig` (``NamesrvConfig.java``),
* :class:`NettyServerConfig` / :class:`NettyClientConfig` (remoting),
* :class:`BrokerConfig` (``BrokerConfig.java``),
* :class:`MessageStoreConfig` (``MessageStoreConfig.java``), in :mod:`rmq.common.configstore`.

``applies`` says what rmq does with a key, and so what UPDATE_*_CONFIG answers: ``LIVE`` keys
are read where they are used, ``RESTART`` keys when the server starts (the store, the ports,
the timers, the topics the broker creates), ``UNUSED`` keys are Apache's thread pools, Netty
tuning, transient store pool, DLedger and the like, which rmq keeps and shows but does not
act on.

Aliases.  The pre-4.4 ``mapedFileSize*`` spellings are accepted for the ``mappedFileSize*``
keys, the corrected ``Mapped`` spelling for the keys Java still spells ``Maped``
(``destroyMapedFileIntervalForcibly``, ``warmMapedFileEnable``,
``flushLeastPagesWhenWarmMapedFile``), and ``enableBatchPush`` (the name Java's setter reads)
for ``isEnableBatchPush`` (the field's name, which Java prints in GET_BROKER_CONFIG and its
config files).  When a key and its alias are both given, the key wins.

rmq-only keys (not in RocketMQ 4.9; listed in :data:`RMQ_ONLY_KEYS`):

==================================  ==================  =========  ================================
key                                 config              default    meaning
==================================  ==================  =========  ================================
``scanNotActiveBrokerInterval``     NamesrvConfig       10000      ms between dead-broker scans
``brokerChannelExpiredTime``        NamesrvConfig       120000     ms unregistered -> removed
``bindAddress``                     NettyServerConfig   0.0.0.0    address the socket binds
``serverMaxRequestsPerConnection``  NettyServerConfig   4096       requests in progress, one socket
``serverMaxRequestsInProgress``     NettyServerConfig   32768      requests in progress, a server
``serverPartialFrameMemoryLimit``   NettyServerConfig   134217728  bytes in incomplete frames
``startWithEmptyMetadataOnDamage``  MessageStoreConfig  false      damaged metadata: start empty
``aclFile``                         BrokerConfig        (empty)    the default plain_acl.yml file
==================================  ==================  =========  ================================

Every field is checked against the key naming rule when this module is imported.
"""

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from rmq.common import flowdefaults
from rmq.common.configfields import (
    NOT_BLANK,
    Applies,
    ConfigError,
    ConfigObject,
    Long,
    black_list_of,
    options_of,
    setting,
)
from rmq.common.configstore import BrokerRole as BrokerRole
from rmq.common.configstore import FlushDiskType as FlushDiskType
from rmq.common.configstore import MessageStoreConfig as MessageStoreConfig
from rmq.common.configvalues import (
    HOST,
    IP_ADDRESS,
    NAMESRV_ADDRS,
    TOPIC,
    cpu_count,
    home_path,
)
from rmq.common.configvalues import local_address as local_address
from rmq.common.configvalues import local_host_name as local_host_name

LIVE, RESTART, UNUSED = Applies.LIVE, Applies.RESTART, Applies.UNUSED
_OUTWARD = "the first non-loopback IPv4 address"


def _check_water_marks(high: int, low: int) -> None:
    """Both marks set (> 0, as Apache applies them): the low one may not exceed the high one,
    which Netty's ``WriteBufferWaterMark`` refuses too."""
    if high > 0 and low > high:
        raise ConfigError(
            f"writeBufferLowWaterMark={low} is above writeBufferHighWaterMark={high}:"
            " expected low <= high (or either 0: Netty's defaults)",
            key="writeBufferLowWaterMark",
            value=str(low),
        )


# ------------------------------------------------------------------------------- namesrv


@dataclass(kw_only=True)
class NamesrvConfig(ConfigObject):
    """The name server's settings (``NamesrvConfig.java`` plus two rmq-only keys)."""

    FIXED_BLACK_LIST: ClassVar[frozenset[str]] = frozenset(
        {"configBlackList", "configStorePath", "kvConfigPath", "rocketmqHome"}
    )

    rocketmq_home: str | None = setting(
        factory=lambda: os.environ.get("ROCKETMQ_HOME"), shown="$ROCKETMQ_HOME", applies=UNUSED
    )
    kv_config_path: str = setting(
        factory=lambda: home_path("namesrv", "kvConfig.json"),
        shown="$HOME/namesrv/kvConfig.json",
        rule=NOT_BLANK,
        applies=RESTART,
    )
    """Where the KV config is persisted (``$HOME/namesrv/kvConfig.json``)."""
    config_store_path: str = setting(
        factory=lambda: home_path("namesrv", "namesrv.properties"),
        shown="the -c file, else $HOME/namesrv/namesrv.properties",
        rule=NOT_BLANK,
        applies=LIVE,
    )
    """Where UPDATE_NAMESRV_CONFIG persists the config (the ``-c`` file when given)."""
    product_env_name: str = setting("center", applies=UNUSED)
    cluster_test: bool = setting(False, applies=UNUSED)
    order_message_enable: bool = setting(False, applies=LIVE)
    """Fill ``orderTopicConf`` of route data from KV namespace ``ORDER_TOPIC_CONFIG``."""
    config_black_list: str = setting("configBlackList;configStorePath;kvConfigPath", applies=LIVE)
    scan_not_active_broker_interval: Long = setting(
        10_000, low=1, unit="ms", rmq_only=True, applies=LIVE
    )
    """rmq-only: milliseconds between two scans for expired brokers (Java hard-codes 10 s)."""
    broker_channel_expired_time: Long = setting(
        120_000, low=1, unit="ms", rmq_only=True, applies=LIVE
    )
    """rmq-only: milliseconds without a registration after which a broker is removed
    (Java hard-codes 120 s)."""

    def black_list(self) -> frozenset[str]:
        return black_list_of(self.FIXED_BLACK_LIST, self.config_black_list)


# -------------------------------------------------------------------------------- netty


@dataclass(kw_only=True)
class NettyServerConfig(ConfigObject):
    """The remoting server's settings; ``listenPort`` is the one users set."""

    listen_port: int = setting(
        8888, shown="9876 (name server), 10911 (broker)", low=0, high=65535, applies=RESTART
    )
    """The port; the name server and broker start from 9876 / 10911 instead of Java's 8888."""
    server_worker_threads: int = setting(8, low=1, applies=UNUSED)
    server_callback_executor_threads: int = setting(0, low=0, applies=UNUSED)
    server_selector_threads: int = setting(3, low=0, applies=UNUSED)
    server_oneway_semaphore_value: int = setting(256, low=1, applies=UNUSED)
    server_async_semaphore_value: int = setting(64, low=1, applies=UNUSED)
    server_channel_max_idle_time_seconds: int = setting(120, low=1, unit="seconds", applies=RESTART)
    server_socket_snd_buf_size: int = setting(0, low=0, unit="bytes", applies=UNUSED)
    server_socket_rcv_buf_size: int = setting(0, low=0, unit="bytes", applies=UNUSED)
    write_buffer_high_water_mark: int = setting(0, low=0, unit="bytes", applies=RESTART)
    write_buffer_low_water_mark: int = setting(0, low=0, unit="bytes", applies=RESTART)
    server_socket_backlog: int = setting(1024, low=1, applies=UNUSED)
    server_pooled_byte_buf_allocator_enable: bool = setting(True, applies=UNUSED)
    use_epoll_native_selector: bool = setting(False, applies=UNUSED)
    bind_address: str = setting("0.0.0.0", rule=HOST, rmq_only=True, applies=RESTART)
    """rmq-only (the RocketMQ 5 key): the local address the server socket binds."""
    server_max_requests_per_connection: int = setting(
        flowdefaults.MAX_REQUESTS_PER_CONNECTION, low=1, rmq_only=True, applies=RESTART
    )
    """rmq-only: requests in progress on one connection at which it is no longer read."""
    server_max_requests_in_progress: int = setting(
        flowdefaults.MAX_REQUESTS_IN_PROGRESS, low=1, rmq_only=True, applies=RESTART
    )
    """rmq-only: requests in progress on the whole server past which SYSTEM_BUSY answers."""
    server_partial_frame_memory_limit: int = setting(
        flowdefaults.PARTIAL_FRAME_MEMORY_LIMIT, low=1, unit="bytes", rmq_only=True, applies=RESTART
    )
    """rmq-only: bytes of incomplete frames over all connections past which the connection
    holding the oldest one is closed."""

    def check(self) -> None:
        _check_water_marks(self.write_buffer_high_water_mark, self.write_buffer_low_water_mark)


@dataclass(kw_only=True)
class NettyClientConfig(ConfigObject):
    """The remoting client's settings (the broker's connections to name servers)."""

    client_worker_threads: int = setting(4, low=1, applies=UNUSED)
    client_callback_executor_threads: int = setting(
        factory=cpu_count, shown="the CPU count", low=1, applies=UNUSED
    )
    client_oneway_semaphore_value: int = setting(65535, low=1, applies=UNUSED)
    client_async_semaphore_value: int = setting(65535, low=1, applies=UNUSED)
    connect_timeout_millis: int = setting(3000, low=1, unit="ms", applies=RESTART)
    channel_not_active_interval: Long = setting(60_000, low=0, unit="ms", applies=UNUSED)
    client_channel_max_idle_time_seconds: int = setting(120, low=0, unit="seconds", applies=UNUSED)
    client_socket_snd_buf_size: int = setting(0, low=0, unit="bytes", applies=UNUSED)
    client_socket_rcv_buf_size: int = setting(0, low=0, unit="bytes", applies=UNUSED)
    client_pooled_byte_buf_allocator_enable: bool = setting(False, applies=UNUSED)
    client_close_socket_if_timeout: bool = setting(True, applies=UNUSED)
    use_tls: bool = setting(False, key="useTLS", applies=UNUSED)
    write_buffer_high_water_mark: int = setting(0, low=0, unit="bytes", applies=UNUSED)
    write_buffer_low_water_mark: int = setting(0, low=0, unit="bytes", applies=UNUSED)

    def check(self) -> None:
        _check_water_marks(self.write_buffer_high_water_mark, self.write_buffer_low_water_mark)


# -------------------------------------------------------------------------------- broker

_CREATED_AT_START = (
    "{} takes effect after a restart, for the {} the broker creates at start"
    " (a topic already in topics.json keeps its {})"
)


@dataclass(kw_only=True)
class BrokerConfig(ConfigObject):
    """The broker's settings (``BrokerConfig.java``)."""

    FIXED_BLACK_LIST: ClassVar[frozenset[str]] = frozenset(
        {"brokerConfigPath", "rocketmqHome", "configBlackList"}
    )

    rocketmq_home: str | None = setting(
        factory=lambda: os.environ.get("ROCKETMQ_HOME"), shown="$ROCKETMQ_HOME", applies=RESTART
    )
    namesrv_addr: str | None = setting(
        factory=lambda: os.environ.get("NAMESRV_ADDR"),
        shown="$NAMESRV_ADDR",
        rule=NAMESRV_ADDRS,
        applies=LIVE,
    )
    """Name servers, ``host:port`` separated by ``;`` (default: ``$NAMESRV_ADDR``)."""
    broker_ip1: str = setting(
        factory=local_address,
        shown=_OUTWARD,
        key="brokerIP1",
        rule=IP_ADDRESS,
        applies=RESTART,
    )
    """The address the broker registers for clients (and packs into every record)."""
    broker_ip2: str = setting(
        factory=local_address, shown=_OUTWARD, key="brokerIP2", rule=HOST, applies=LIVE
    )
    """The address slaves use for HA."""
    broker_name: str = setting(
        factory=local_host_name, shown="the host name", rule=NOT_BLANK, applies=RESTART
    )
    broker_cluster_name: str = setting("DefaultCluster", rule=NOT_BLANK, applies=RESTART)
    broker_id: Long = setting(0, low=-1, applies=LIVE)
    """0 for a master, > 0 for a slave, -1 with DLedger (as Apache sets it)."""
    broker_permission: int = setting(
        6, low=0, high=15, unit="a perm: READ 4 | WRITE 2 | INHERIT 1 | PRIORITY 8", applies=LIVE
    )
    default_topic_queue_nums: int = setting(
        8,
        low=1,
        applies=RESTART,
        note=_CREATED_AT_START.format("defaultTopicQueueNums", "TBW102", "queues"),
    )
    auto_create_topic_enable: bool = setting(True, applies=LIVE)
    cluster_topic_enable: bool = setting(
        True,
        applies=RESTART,
        note=_CREATED_AT_START.format("clusterTopicEnable", "cluster-name topic", "perm"),
    )
    broker_topic_enable: bool = setting(
        True,
        applies=RESTART,
        note=_CREATED_AT_START.format("brokerTopicEnable", "broker-name topic", "perm"),
    )
    auto_create_subscription_group: bool = setting(True, applies=LIVE)
    message_store_plug_in: str = setting("", applies=UNUSED)
    msg_trace_topic_name: str = setting("RMQ_SYS_TRACE_TOPIC", rule=TOPIC, applies=RESTART)
    trace_topic_enable: bool = setting(False, applies=RESTART)
    send_message_thread_pool_nums: int = setting(
        factory=lambda: min(cpu_count(), 4), shown="min(CPUs, 4)", low=1, applies=UNUSED
    )
    put_message_future_thread_pool_nums: int = setting(
        factory=lambda: min(cpu_count(), 4), shown="min(CPUs, 4)", low=1, applies=UNUSED
    )
    pull_message_thread_pool_nums: int = setting(
        factory=lambda: 16 + cpu_count() * 2, shown="16 + 2 * CPUs", low=1, applies=UNUSED
    )
    process_reply_message_thread_pool_nums: int = setting(
        factory=lambda: 16 + cpu_count() * 2, shown="16 + 2 * CPUs", low=1, applies=UNUSED
    )
    query_message_thread_pool_nums: int = setting(
        factory=lambda: 8 + cpu_count(), shown="8 + CPUs", low=1, applies=UNUSED
    )
    admin_broker_thread_pool_nums: int = setting(16, low=1, applies=UNUSED)
    client_manage_thread_pool_nums: int = setting(32, low=1, applies=UNUSED)
    consumer_manage_thread_pool_nums: int = setting(32, low=1, applies=UNUSED)
    heartbeat_thread_pool_nums: int = setting(
        factory=lambda: min(32, cpu_count()), shown="min(CPUs, 32)", low=1, applies=UNUSED
    )
    end_transaction_thread_pool_nums: int = setting(
        factory=lambda: max(8 + cpu_count() * 2, min(cpu_count(), 4) * 4),
        shown="max(8 + 2 * CPUs, 4 * min(CPUs, 4))",
        low=1,
        applies=UNUSED,
    )
    flush_consumer_offset_interval: int = setting(5000, low=1, unit="ms", applies=RESTART)
    """Milliseconds between two persists of ``consumerOffset.json``."""
    flush_consumer_offset_history_interval: int = setting(60_000, low=1, unit="ms", applies=UNUSED)
    reject_transaction_message: bool = setting(False, applies=LIVE)
    fetch_namesrv_addr_by_address_server: bool = setting(False, applies=UNUSED)
    send_thread_pool_queue_capacity: int = setting(10_000, low=1, applies=UNUSED)
    put_thread_pool_queue_capacity: int = setting(10_000, low=1, applies=UNUSED)
    pull_thread_pool_queue_capacity: int = setting(100_000, low=1, applies=UNUSED)
    reply_thread_pool_queue_capacity: int = setting(10_000, low=1, applies=UNUSED)
    query_thread_pool_queue_capacity: int = setting(20_000, low=1, applies=UNUSED)
    client_manager_thread_pool_queue_capacity: int = setting(1_000_000, low=1, applies=UNUSED)
    consumer_manager_thread_pool_queue_capacity: int = setting(1_000_000, low=1, applies=UNUSED)
    heartbeat_thread_pool_queue_capacity: int = setting(50_000, low=1, applies=UNUSED)
    end_transaction_pool_queue_capacity: int = setting(100_000, low=1, applies=UNUSED)
    filter_server_nums: int = setting(0, low=0, applies=UNUSED)
    long_polling_enable: bool = setting(True, applies=LIVE)
    """Park pull requests that find no message until one arrives or they time out."""
    short_polling_time_mills: Long = setting(1000, low=0, unit="ms", applies=LIVE)
    """How long a pull is held when long polling is off."""
    notify_consumer_ids_changed_enable: bool = setting(True, applies=LIVE)
    high_speed_mode: bool = setting(False, applies=UNUSED)
    commercial_enable: bool = setting(True, applies=UNUSED)
    commercial_timer_count: int = setting(1, low=0, applies=UNUSED)
    commercial_trans_count: int = setting(1, low=0, applies=UNUSED)
    commercial_big_count: int = setting(1, low=0, applies=UNUSED)
    commercial_base_count: int = setting(1, low=0, applies=UNUSED)
    transfer_msg_by_heap: bool = setting(True, applies=LIVE)
    max_delay_time: int = setting(40, low=0, applies=UNUSED)
    region_id: str = setting("DefaultRegion", applies=LIVE)
    register_broker_timeout_mills: int = setting(6000, low=1, unit="ms", applies=LIVE)
    slave_read_enable: bool = setting(False, applies=LIVE)
    disable_consume_if_consumer_read_slowly: bool = setting(False, applies=UNUSED)
    consumer_fallbehind_threshold: Long = setting(
        16 * 1024 * 1024 * 1024, low=0, unit="bytes", applies=UNUSED
    )
    broker_fast_failure_enable: bool = setting(True, applies=UNUSED)
    wait_time_mills_in_send_queue: Long = setting(200, low=0, unit="ms", applies=UNUSED)
    wait_time_mills_in_pull_queue: Long = setting(5000, low=0, unit="ms", applies=UNUSED)
    wait_time_mills_in_heartbeat_queue: Long = setting(31_000, low=0, unit="ms", applies=UNUSED)
    wait_time_mills_in_transaction_queue: Long = setting(3000, low=0, unit="ms", applies=UNUSED)
    start_accept_send_request_time_stamp: Long = setting(0, low=0, unit="ms", applies=LIVE)
    trace_on: bool = setting(True, applies=LIVE)
    enable_calc_filter_bit_map: bool = setting(False, applies=UNUSED)
    expect_consumer_num_use_filter: int = setting(32, low=1, applies=RESTART)
    max_error_rate_of_bloom_filter: int = setting(
        20, low=1, high=99, unit="percent", applies=RESTART
    )
    filter_data_clean_time_span: Long = setting(24 * 3600 * 1000, low=0, unit="ms", applies=LIVE)
    filter_support_retry: bool = setting(False, applies=UNUSED)
    enable_property_filter: bool = setting(False, applies=LIVE)
    compressed_register: bool = setting(False, applies=LIVE)
    force_register: bool = setting(True, applies=LIVE)
    register_name_server_period: int = setting(30_000, low=1, unit="ms", applies=LIVE)
    """Milliseconds between registrations with the name servers (used clamped to 10-60 s)."""
    transaction_time_out: Long = setting(6000, low=0, unit="ms", applies=LIVE)
    """A half message younger than this (ms) is not checked yet."""
    transaction_check_max: int = setting(15, low=1, applies=LIVE)
    """Checks of a half message before it is discarded."""
    transaction_check_interval: Long = setting(60_000, low=1, unit="ms", applies=RESTART)
    """Milliseconds between two transaction check rounds."""
    acl_enable: bool = setting(False, applies=RESTART)
    acl_file: str = setting("", rmq_only=True, applies=RESTART)
    """rmq-only: the default plain ACL file (empty: ``$ROCKETMQ_HOME/conf/plain_acl.yml``)."""
    store_reply_message_enable: bool = setting(True, applies=LIVE)
    enable_detail_stat: bool = setting(True, applies=RESTART)
    auto_delete_unused_stats: bool = setting(False, applies=LIVE)
    isolate_log_enable: bool = setting(False, applies=UNUSED)
    config_black_list: str = setting("configBlackList;brokerConfigPath", applies=LIVE)

    def black_list(self) -> frozenset[str]:
        return black_list_of(self.FIXED_BLACK_LIST, self.config_black_list)


RMQ_ONLY_KEYS: Mapping[str, str] = {
    option.key: cls.__name__
    for cls in (
        NamesrvConfig,
        NettyServerConfig,
        NettyClientConfig,
        BrokerConfig,
        MessageStoreConfig,
    )
    for name, option in options_of(cls).items()
    if option.rmq_only and name == option.key
}
"""rmq-only key -> the config class that holds it (documented in the module docstring)."""
