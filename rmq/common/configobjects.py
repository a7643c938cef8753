"""The five config objects a RocketMQ 4.9 process is configured through, with Java's defaults.

Each is a dataclass whose fields are the Java class's properties, in the Java declaration
order (the option machinery is :mod:`rmq.common.configfields`'s):

* :class:`NamesrvConfig` (``NamesrvConfig.java``),
* :class:`BrokerConfig` (``BrokerConfig.java``),
* :class:`MessageStoreConfig` (``MessageStoreConfig.java``),
* :class:`NettyServerConfig` / :class:`NettyClientConfig` (remoting).

Environment-dependent defaults are computed when an object is built and can be overridden
like any other: ``$HOME/store``, ``$HOME/namesrv/kvConfig.json``, the host name for
``brokerName``, the first non-loopback IPv4 address for ``brokerIP1``/``brokerIP2``,
``ROCKETMQ_HOME`` and ``NAMESRV_ADDR`` from the environment, thread counts from the CPU count.

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

import functools
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import ClassVar

from rmq.common.configfields import (
    CONSUME_QUEUE_UNIT_SIZE,
    ConfigObject,
    Long,
    black_list_of,
    java_key,
    options_of,
)


class FlushDiskType(StrEnum):
    ASYNC_FLUSH = "ASYNC_FLUSH"
    SYNC_FLUSH = "SYNC_FLUSH"


class BrokerRole(StrEnum):
    ASYNC_MASTER = "ASYNC_MASTER"
    SYNC_MASTER = "SYNC_MASTER"
    SLAVE = "SLAVE"


# ------------------------------------------------------------------- environment defaults


def _home_path(*parts: str) -> str:
    return str(Path.home().joinpath(*parts))


def _cpu_count() -> int:
    return os.cpu_count() or 1


@functools.cache
def local_host_name() -> str:
    """The host name (Java ``InetAddress.getLocalHost().getHostName()``), the default brokerName."""
    return socket.gethostname() or "DEFAULT_BROKER"


@functools.cache
def local_address() -> str:
    """The default ``brokerIP1``: a non-loopback IPv4 address of this host.

    Like Java's ``RemotingUtil.getLocalAddress``, an address outside ``127.0.*`` and
    ``192.168.*`` is preferred, then the last one found; candidates are the source address
    of the default route (no packet is sent) and the host name's addresses.  Falls back to
    ``127.0.0.1``.
    """
    candidates: list[str] = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))
            candidates.append(probe.getsockname()[0])
        except OSError:
            pass
    try:
        infos = socket.getaddrinfo(local_host_name(), None, socket.AF_INET)
    except OSError:
        infos = []
    candidates.extend(str(info[4][0]) for info in infos)
    usable = [ip for ip in dict.fromkeys(candidates) if not ip.startswith("127.")]
    preferred = [ip for ip in usable if not ip.startswith("192.168")]
    if preferred:
        return preferred[0]
    return usable[-1] if usable else "127.0.0.1"


# ------------------------------------------------------------------------------- namesrv


@dataclass(kw_only=True)
class NamesrvConfig(ConfigObject):
    """The name server's settings (``NamesrvConfig.java`` plus two rmq-only keys)."""

    FIXED_BLACK_LIST: ClassVar[frozenset[str]] = frozenset(
        {"configBlackList", "configStorePath", "kvConfigPath", "rocketmqHome"}
    )

    rocketmq_home: str | None = field(default_factory=lambda: os.environ.get("ROCKETMQ_HOME"))
    kv_config_path: str = field(default_factory=lambda: _home_path("namesrv", "kvConfig.json"))
    """Where the KV config is persisted (``$HOME/namesrv/kvConfig.json``)."""
    config_store_path: str = field(
        default_factory=lambda: _home_path("namesrv", "namesrv.properties")
    )
    """Where UPDATE_NAMESRV_CONFIG persists the config (the ``-c`` file when given)."""
    product_env_name: str = "center"
    cluster_test: bool = False
    order_message_enable: bool = False
    """Fill ``orderTopicConf`` of route data from KV namespace ``ORDER_TOPIC_CONFIG``."""
    config_black_list: str = "configBlackList;configStorePath;kvConfigPath"
    scan_not_active_broker_interval: Long = field(default=10_000, metadata=java_key(rmq_only=True))
    """rmq-only: milliseconds between two scans for expired brokers (Java hard-codes 10 s)."""
    broker_channel_expired_time: Long = field(default=120_000, metadata=java_key(rmq_only=True))
    """rmq-only: milliseconds without a registration after which a broker is removed
    (Java hard-codes 120 s)."""

    def black_list(self) -> frozenset[str]:
        return black_list_of(self.FIXED_BLACK_LIST, self.config_black_list)


# -------------------------------------------------------------------------------- netty


@dataclass(kw_only=True)
class NettyServerConfig(ConfigObject):
    """The remoting server's settings; ``listenPort`` is the one users set."""

    listen_port: int = 8888
    """The port; the name server and broker start from 9876 / 10911 instead of Java's 8888."""
    server_worker_threads: int = 8
    server_callback_executor_threads: int = 0
    server_selector_threads: int = 3
    server_oneway_semaphore_value: int = 256
    server_async_semaphore_value: int = 64
    server_channel_max_idle_time_seconds: int = 120
    server_socket_snd_buf_size: int = 0
    server_socket_rcv_buf_size: int = 0
    write_buffer_high_water_mark: int = 0
    write_buffer_low_water_mark: int = 0
    server_socket_backlog: int = 1024
    server_pooled_byte_buf_allocator_enable: bool = True
    use_epoll_native_selector: bool = False
    bind_address: str = field(default="0.0.0.0", metadata=java_key(rmq_only=True))
    """rmq-only (the RocketMQ 5 key): the local address the server socket binds."""
    server_max_requests_per_connection: int = field(default=4096, metadata=java_key(rmq_only=True))
    """rmq-only: requests in progress on one connection at which it is no longer read."""
    server_max_requests_in_progress: int = field(default=32768, metadata=java_key(rmq_only=True))
    """rmq-only: requests in progress on the whole server past which SYSTEM_BUSY answers."""
    server_partial_frame_memory_limit: int = field(
        default=128 * 1024 * 1024, metadata=java_key(rmq_only=True)
    )
    """rmq-only: bytes of incomplete frames over all connections past which the connection
    holding the oldest one is closed."""


@dataclass(kw_only=True)
class NettyClientConfig(ConfigObject):
    """The remoting client's settings (the broker's connections to name servers)."""

    client_worker_threads: int = 4
    client_callback_executor_threads: int = field(default_factory=_cpu_count)
    client_oneway_semaphore_value: int = 65535
    client_async_semaphore_value: int = 65535
    connect_timeout_millis: int = 3000
    channel_not_active_interval: Long = 60_000
    client_channel_max_idle_time_seconds: int = 120
    client_socket_snd_buf_size: int = 0
    client_socket_rcv_buf_size: int = 0
    client_pooled_byte_buf_allocator_enable: bool = False
    client_close_socket_if_timeout: bool = True
    use_tls: bool = field(default=False, metadata=java_key("useTLS"))
    write_buffer_high_water_mark: int = 0
    write_buffer_low_water_mark: int = 0


# -------------------------------------------------------------------------------- broker


@dataclass(kw_only=True)
class BrokerConfig(ConfigObject):
    """The broker's settings (``BrokerConfig.java``)."""

    FIXED_BLACK_LIST: ClassVar[frozenset[str]] = frozenset(
        {"brokerConfigPath", "rocketmqHome", "configBlackList"}
    )

    rocketmq_home: str | None = field(default_factory=lambda: os.environ.get("ROCKETMQ_HOME"))
    namesrv_addr: str | None = field(default_factory=lambda: os.environ.get("NAMESRV_ADDR"))
    """Name servers, ``host:port`` separated by ``;`` (default: ``$NAMESRV_ADDR``)."""
    broker_ip1: str = field(default_factory=local_address, metadata=java_key("brokerIP1"))
    """The address the broker registers for clients."""
    broker_ip2: str = field(default_factory=local_address, metadata=java_key("brokerIP2"))
    """The address slaves use for HA."""
    broker_name: str = field(default_factory=local_host_name)
    broker_cluster_name: str = "DefaultCluster"
    broker_id: Long = 0
    """0 for a master, > 0 for a slave."""
    broker_permission: int = 6
    default_topic_queue_nums: int = 8
    auto_create_topic_enable: bool = True
    cluster_topic_enable: bool = True
    broker_topic_enable: bool = True
    auto_create_subscription_group: bool = True
    message_store_plug_in: str = ""
    msg_trace_topic_name: str = "RMQ_SYS_TRACE_TOPIC"
    trace_topic_enable: bool = False
    send_message_thread_pool_nums: int = field(default_factory=lambda: min(_cpu_count(), 4))
    put_message_future_thread_pool_nums: int = field(default_factory=lambda: min(_cpu_count(), 4))
    pull_message_thread_pool_nums: int = field(default_factory=lambda: 16 + _cpu_count() * 2)
    process_reply_message_thread_pool_nums: int = field(
        default_factory=lambda: 16 + _cpu_count() * 2
    )
    query_message_thread_pool_nums: int = field(default_factory=lambda: 8 + _cpu_count())
    admin_broker_thread_pool_nums: int = 16
    client_manage_thread_pool_nums: int = 32
    consumer_manage_thread_pool_nums: int = 32
    heartbeat_thread_pool_nums: int = field(default_factory=lambda: min(32, _cpu_count()))
    end_transaction_thread_pool_nums: int = field(
        default_factory=lambda: max(8 + _cpu_count() * 2, min(_cpu_count(), 4) * 4)
    )
    flush_consumer_offset_interval: int = 5000
    """Milliseconds between two persists of ``consumerOffset.json``."""
    flush_consumer_offset_history_interval: int = 60_000
    reject_transaction_message: bool = False
    fetch_namesrv_addr_by_address_server: bool = False
    send_thread_pool_queue_capacity: int = 10_000
    put_thread_pool_queue_capacity: int = 10_000
    pull_thread_pool_queue_capacity: int = 100_000
    reply_thread_pool_queue_capacity: int = 10_000
    query_thread_pool_queue_capacity: int = 20_000
    client_manager_thread_pool_queue_capacity: int = 1_000_000
    consumer_manager_thread_pool_queue_capacity: int = 1_000_000
    heartbeat_thread_pool_queue_capacity: int = 50_000
    end_transaction_pool_queue_capacity: int = 100_000
    filter_server_nums: int = 0
    long_polling_enable: bool = True
    """Park pull requests that find no message until one arrives or they time out."""
    short_polling_time_mills: Long = 1000
    """How long a pull is held when long polling is off."""
    notify_consumer_ids_changed_enable: bool = True
    high_speed_mode: bool = False
    commercial_enable: bool = True
    commercial_timer_count: int = 1
    commercial_trans_count: int = 1
    commercial_big_count: int = 1
    commercial_base_count: int = 1
    transfer_msg_by_heap: bool = True
    max_delay_time: int = 40
    region_id: str = "DefaultRegion"
    register_broker_timeout_mills: int = 6000
    slave_read_enable: bool = False
    disable_consume_if_consumer_read_slowly: bool = False
    consumer_fallbehind_threshold: Long = 16 * 1024 * 1024 * 1024
    broker_fast_failure_enable: bool = True
    wait_time_mills_in_send_queue: Long = 200
    wait_time_mills_in_pull_queue: Long = 5000
    wait_time_mills_in_heartbeat_queue: Long = 31_000
    wait_time_mills_in_transaction_queue: Long = 3000
    start_accept_send_request_time_stamp: Long = 0
    trace_on: bool = True
    enable_calc_filter_bit_map: bool = False
    expect_consumer_num_use_filter: int = 32
    max_error_rate_of_bloom_filter: int = 20
    filter_data_clean_time_span: Long = 24 * 3600 * 1000
    filter_support_retry: bool = False
    enable_property_filter: bool = False
    compressed_register: bool = False
    force_register: bool = True
    register_name_server_period: int = 30_000
    """Milliseconds between registrations with the name servers (used clamped to 10-60 s)."""
    transaction_time_out: Long = 6000
    """A half message younger than this (ms) is not checked yet."""
    transaction_check_max: int = 15
    """Checks of a half message before it is discarded."""
    transaction_check_interval: Long = 60_000
    """Milliseconds between two transaction check rounds."""
    acl_enable: bool = False
    acl_file: str = field(default="", metadata=java_key(rmq_only=True))
    """rmq-only: the default plain ACL file (empty: ``$ROCKETMQ_HOME/conf/plain_acl.yml``)."""
    store_reply_message_enable: bool = True
    enable_detail_stat: bool = True
    auto_delete_unused_stats: bool = False
    isolate_log_enable: bool = False
    config_black_list: str = "configBlackList;brokerConfigPath"

    def black_list(self) -> frozenset[str]:
        return black_list_of(self.FIXED_BLACK_LIST, self.config_black_list)


# --------------------------------------------------------------------------------- store


@dataclass(kw_only=True)
class MessageStoreConfig(ConfigObject):
    """The message store's settings (``MessageStoreConfig.java``)."""

    store_path_root_dir: str = field(default_factory=lambda: _home_path("store"))
    """Root of the store (``$HOME/store``)."""
    store_path_commit_log: str | None = None
    """The commitlog directory; see :attr:`commit_log_dir` for the effective one."""
    store_path_d_ledger_commit_log: str | None = None
    read_only_commit_log_store_paths: str | None = None
    mapped_file_size_commit_log: int = field(
        default=1024 * 1024 * 1024, metadata=java_key(aliases=("mapedFileSizeCommitLog",))
    )
    """Size of each commitlog file in bytes (1 GiB)."""
    mapped_file_size_consume_queue: int = field(
        default=300_000 * CONSUME_QUEUE_UNIT_SIZE,
        metadata=java_key(aliases=("mapedFileSizeConsumeQueue",)),
    )
    """Size of each consume queue file in bytes, rounded up to a multiple of 20."""
    enable_consume_queue_ext: bool = False
    mapped_file_size_consume_queue_ext: int = field(
        default=48 * 1024 * 1024, metadata=java_key(aliases=("mapedFileSizeConsumeQueueExt",))
    )
    bit_map_length_consume_queue_ext: int = 64
    flush_interval_commit_log: int = 500
    """Milliseconds between two flushes of the commitlog (ASYNC_FLUSH)."""
    commit_interval_commit_log: int = 200
    use_reentrant_lock_when_put_message: bool = True
    flush_commit_log_timed: bool = True
    flush_interval_consume_queue: int = 1000
    clean_resource_interval: int = 10_000
    delete_commit_log_files_interval: int = 100
    delete_consume_queue_files_interval: int = 100
    destroy_maped_file_interval_forcibly: int = field(
        default=120_000, metadata=java_key(aliases=("destroyMappedFileIntervalForcibly",))
    )
    redelete_hanged_file_interval: int = 120_000
    delete_when: str = "04"
    """Hours of the day (``;``-separated) when expired files are deleted."""
    disk_max_used_space_ratio: int = 75
    """Disk usage (percent, clamped to 10..95) above which files are deleted early."""
    file_reserved_time: int = 72
    """Hours a commitlog file is kept."""
    put_msg_index_hight_water: int = 600_000
    max_message_size: int = 4 * 1024 * 1024
    check_crc_on_recover: bool = field(default=True, metadata=java_key("checkCRCOnRecover"))
    flush_commit_log_least_pages: int = 4
    commit_commit_log_least_pages: int = 4
    flush_least_pages_when_warm_maped_file: int = field(
        default=1024 // 4 * 16, metadata=java_key(aliases=("flushLeastPagesWhenWarmMappedFile",))
    )
    flush_consume_queue_least_pages: int = 2
    flush_commit_log_thorough_interval: int = 10_000
    commit_commit_log_thorough_interval: int = 200
    flush_consume_queue_thorough_interval: int = 60_000
    max_transfer_bytes_on_message_in_memory: int = 256 * 1024
    max_transfer_count_on_message_in_memory: int = 32
    max_transfer_bytes_on_message_in_disk: int = 64 * 1024
    max_transfer_count_on_message_in_disk: int = 8
    access_message_in_memory_max_ratio: int = 40
    message_index_enable: bool = True
    max_hash_slot_num: int = 5_000_000
    max_index_num: int = 5_000_000 * 4
    max_msgs_num_batch: int = 64
    message_index_safe: bool = False
    ha_listen_port: int = 10912
    """HA port; the broker startup sets it to ``listenPort + 1`` as Java's does."""
    ha_send_heartbeat_interval: int = 5000
    ha_housekeeping_interval: int = 20_000
    ha_transfer_batch_size: int = 32 * 1024
    ha_master_address: str | None = None
    ha_slave_fallbehind_max: int = 256 * 1024 * 1024
    broker_role: BrokerRole = BrokerRole.ASYNC_MASTER
    flush_disk_type: FlushDiskType = FlushDiskType.ASYNC_FLUSH
    sync_flush_timeout: int = 5000
    """Milliseconds a SYNC_FLUSH send waits for its flush."""
    slave_timeout: int = 3000
    message_delay_level: str = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
    flush_delay_offset_interval: Long = 10_000
    clean_file_forcibly_enable: bool = True
    warm_maped_file_enable: bool = field(
        default=False, metadata=java_key(aliases=("warmMappedFileEnable",))
    )
    offset_check_in_slave: bool = False
    debug_lock_enable: bool = False
    duplication_enable: bool = False
    disk_fall_recorded: bool = True
    os_page_cache_busy_time_out_mills: Long = 1000
    default_query_max_num: int = 32
    transient_store_pool_enable: bool = False
    transient_store_pool_size: int = 5
    fast_fail_if_no_buffer_in_store_pool: bool = False
    enable_d_leger_commit_log: bool = False
    d_leger_group: str | None = None
    d_leger_peers: str | None = None
    d_leger_self_id: str | None = None
    preferred_leader_id: str | None = None
    is_enable_batch_push: bool = field(
        default=False, metadata=java_key(aliases=("enableBatchPush",))
    )
    enable_schedule_message_stats: bool = True
    enable_lmq: bool = False
    enable_multi_dispatch: bool = False
    max_lmq_consume_queue_num: int = 20_000
    enable_schedule_async_deliver: bool = False
    schedule_async_deliver_max_pending_limit: int = 2000
    schedule_async_deliver_max_resend_num2_blocked: int = 3
    start_with_empty_metadata_on_damage: bool = field(
        default=False, metadata=java_key(rmq_only=True)
    )
    """rmq-only: a metadata file under ``config/`` that is empty or does not decode, with no
    usable ``.bak``, is logged at ERROR and the broker starts without it (default: the start
    stops, naming the file)."""

    @property
    def commit_log_dir(self) -> str:
        """``storePathCommitLog``, or ``<storePathRootDir>/commitlog`` when it is unset."""
        if self.store_path_commit_log is None:
            return os.path.join(self.store_path_root_dir, "commitlog")
        return self.store_path_commit_log


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
