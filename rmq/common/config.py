"""Typed configuration of the name server and the broker, with RocketMQ's keys and defaults.

Owns the five config objects a RocketMQ 4.9 process is configured through, each a dataclass
whose fields are the Java class's properties, in the Java declaration order:

* :class:`NamesrvConfig` (``NamesrvConfig.java``),
* :class:`BrokerConfig` (``BrokerConfig.java``),
* :class:`MessageStoreConfig` (``MessageStoreConfig.java``),
* :class:`NettyServerConfig` / :class:`NettyClientConfig` (remoting).

Names.  The config-file key is the Java property name (``mappedFileSizeCommitLog``); the
attribute is derived from it mechanically by :func:`java_key_to_attr`: a ``_`` goes before
an upper-case letter that follows a lower-case letter or digit, and before the last letter
of an upper-case run that is followed by a lower-case letter; then everything is lower-cased
(``storePathRootDir`` -> ``store_path_root_dir``, ``brokerIP1`` -> ``broker_ip1``,
``checkCRCOnRecover`` -> ``check_crc_on_recover``, ``dLegerGroup`` -> ``d_leger_group``).
Every field is checked against that rule when this module is imported.

Types follow Java's: ``str`` (``str | None`` where Java's default is null), ``bool``, ``int``
(Java int, 32 bits) or :data:`Long` (Java long, 64 bits), and the two enums
:class:`FlushDiskType` / :class:`BrokerRole`.  Parsing text follows ``MixAll.properties2Object``
with two deliberate differences: a value Java would silently ignore (``listenPort=abc``, an
unknown enum name) is a :class:`ConfigError` naming the file, key and value instead; and
blanks around a number, boolean or enum name are ignored (Java's ``Integer.parseInt("1 ")``
fails and keeps the default, which is never what the user meant).  Booleans follow
``Boolean.parseBoolean``: ``true`` in any case is true, anything else false.

Environment-dependent defaults are computed when an object is built and can be overridden
like any other: ``$HOME/store``, ``$HOME/namesrv/kvConfig.json``, the host name for
``brokerName``, the first non-loopback IPv4 address for ``brokerIP1``/``brokerIP2``,
``ROCKETMQ_HOME`` and ``NAMESRV_ADDR`` from the environment, thread counts from the CPU count.

Values Java rewrites in a getter are stored already rewritten, so every reader sees the
value the store uses: ``mappedFileSizeConsumeQueue`` is rounded up to a multiple of the
20-byte consume queue unit and ``diskMaxUsedSpaceRatio`` clamped to 10..95.  This happens at
construction and whenever properties are applied (not on plain attribute assignment).

Aliases.  The pre-4.4 ``mapedFileSize*`` spellings are accepted for the ``mappedFileSize*``
keys, the corrected ``Mapped`` spelling for the keys Java still spells ``Maped``
(``destroyMapedFileIntervalForcibly``, ``warmMapedFileEnable``,
``flushLeastPagesWhenWarmMapedFile``), and ``enableBatchPush`` (the name Java's setter reads)
for ``isEnableBatchPush`` (the field's name, which Java prints in GET_BROKER_CONFIG and its
config files).  When a key and its alias are both given, the key wins.

rmq-only keys (not in RocketMQ 4.9; listed in :data:`RMQ_ONLY_KEYS`):

================================  ===================  ========  ===================================
key                               config               default   meaning
================================  ===================  ========  ===================================
``scanNotActiveBrokerInterval``   NamesrvConfig        10000     ms between scans for dead brokers
``brokerChannelExpiredTime``      NamesrvConfig        120000    ms without registration -> removed
``bindAddress``                   NettyServerConfig    0.0.0.0   address the server socket binds
================================  ===================  ========  ===================================

API: :func:`load_properties_file`, :func:`build_config`, :func:`apply_properties` (several
configs fed from one property set, unknown keys reported once), :func:`to_properties`,
:func:`update_config` (UPDATE_*_CONFIG with the black list), and
:func:`build_namesrv_configs` / :func:`build_broker_configs`, which also apply the rules the
Java startup classes add (default ports 9876 / 10911, ``haListenPort = listenPort + 1``,
``brokerId`` 0 for a master); a broker ``listenPort`` that leaves no room for the fast port
(``listenPort - 2``) or ``haListenPort`` is refused there (Java fails later, binding it).
"""

import functools
import os
import re
import socket
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, ClassVar, TypeVar

from rmq.common import javaprops
from rmq.common.javanames import camel_case, snake_case

__all__ = [
    "BROKER_LISTEN_PORT",
    "FAST_PORT_OFFSET",
    "NAMESRV_LISTEN_PORT",
    "RMQ_ONLY_KEYS",
    "BrokerConfig",
    "BrokerConfigs",
    "BrokerRole",
    "ConfigBlackListError",
    "ConfigError",
    "ConfigObject",
    "FlushDiskType",
    "Long",
    "MessageStoreConfig",
    "NamesrvConfig",
    "NamesrvConfigs",
    "NettyClientConfig",
    "NettyServerConfig",
    "apply_properties",
    "build_broker_configs",
    "build_config",
    "build_namesrv_configs",
    "java_key_to_attr",
    "load_properties_file",
    "local_address",
    "local_host_name",
    "to_properties",
    "update_config",
]

NAMESRV_LISTEN_PORT = 9876
"""The name server's port when ``listenPort`` is not configured (NamesrvStartup)."""
BROKER_LISTEN_PORT = 10911
"""The broker's port when ``listenPort`` is not configured (BrokerStartup)."""
FAST_PORT_OFFSET = 2
"""A broker also serves on ``listenPort - 2``, the fast (VIP) port of Java clients."""

_CONSUME_QUEUE_UNIT_SIZE = 20
_INT_RANGE = (-(1 << 31), (1 << 31) - 1)
_LONG_RANGE = (-(1 << 63), (1 << 63) - 1)
_JAVA_INTEGER = re.compile(r"[+-]?[0-9]+")


class _JavaLong:
    """Marks an ``int`` field as a Java long (64 bits) rather than an int (32 bits)."""


Long = Annotated[int, _JavaLong]
"""A Java ``long`` field: an ``int`` checked against the 64-bit range when parsed."""


class ConfigError(ValueError):
    """A config value or file rmq cannot use; the message names file, key and value."""

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        key: str | None = None,
        value: str | None = None,
    ) -> None:
        super().__init__(f"{source}: {message}" if source else message)
        self.source = source
        self.key = key
        self.value = value


class ConfigBlackListError(ConfigError):
    """UPDATE_*_CONFIG tried to change keys on the black list (Java answers NO_PERMISSION)."""

    def __init__(self, keys: list[str]) -> None:
        super().__init__(f"can not update config in black list: {', '.join(keys)}")
        self.keys = keys


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


# ------------------------------------------------------------------------- field machinery


def _key(
    key: str | None = None, *, aliases: tuple[str, ...] = (), rmq_only: bool = False
) -> dict[str, Any]:
    """Field metadata: the Java key when the attribute's camelCase form is not it, aliases."""
    return {"key": key, "aliases": aliases, "rmq_only": rmq_only}


def _round_up_to_consume_queue_unit(size: int) -> int:
    return -(-size // _CONSUME_QUEUE_UNIT_SIZE) * _CONSUME_QUEUE_UNIT_SIZE


def _clamp_disk_ratio(ratio: int) -> int:
    return min(max(ratio, 10), 95)


_NORMALISERS: dict[str, Callable[[int], int]] = {
    "mapped_file_size_consume_queue": _round_up_to_consume_queue_unit,
    "disk_max_used_space_ratio": _clamp_disk_ratio,
}


def java_key_to_attr(key: str) -> str:
    """The attribute name of a Java config key (``brokerIP1`` -> ``broker_ip1``)."""
    return snake_case(key)


@dataclass(frozen=True)
class _Option:
    attr: str
    key: str
    aliases: tuple[str, ...]
    rmq_only: bool
    parse: Callable[[str], Any]


def _parse_str(text: str) -> str:
    return text


def _parse_bool(text: str) -> bool:
    return text.strip().lower() == "true"


def _integer_parser(bounds: tuple[int, int], java_type: str) -> Callable[[str], int]:
    low, high = bounds

    def parse(text: str) -> int:
        stripped = text.strip()
        if _JAVA_INTEGER.fullmatch(stripped) is None or not low <= int(stripped) <= high:
            raise ValueError(f"not a Java {java_type} ({low}..{high})")
        return int(stripped)

    return parse


def _enum_parser(enum: type[StrEnum]) -> Callable[[str], StrEnum]:
    def parse(text: str) -> StrEnum:
        try:
            return enum(text.strip())
        except ValueError:
            allowed = ", ".join(member.value for member in enum)
            raise ValueError(f"not one of {allowed}") from None

    return parse


_parse_int = _integer_parser(_INT_RANGE, "int")
_parse_long = _integer_parser(_LONG_RANGE, "long")


def _parser_for(hint: Any) -> Callable[[str], Any]:
    if typing.get_origin(hint) is Annotated:
        assert _JavaLong in typing.get_args(hint)
        return _parse_long
    if hint is bool:
        return _parse_bool
    if hint is int:
        return _parse_int
    if hint is str or hint == str | None:
        return _parse_str
    if isinstance(hint, type) and issubclass(hint, StrEnum):
        return _enum_parser(hint)
    raise TypeError(f"unsupported config field type {hint!r}")


def _build_options(cls: type) -> dict[str, _Option]:
    """The options of a config class by Java key and by alias."""
    hints = typing.get_type_hints(cls, include_extras=True)
    table: dict[str, _Option] = {}
    for item in fields(cls):
        meta = item.metadata
        option = _Option(
            attr=item.name,
            key=meta.get("key") or camel_case(item.name),
            aliases=meta.get("aliases", ()),
            rmq_only=meta.get("rmq_only", False),
            parse=_parser_for(hints[item.name]),
        )
        assert java_key_to_attr(option.key) == option.attr, (option.key, option.attr)
        for name in (option.key, *option.aliases):
            assert name not in table, name
            table[name] = option
    return table


class ConfigObject:
    """Base of the config dataclasses: normalised values, black list."""

    def __post_init__(self) -> None:
        for attr, normalise in _NORMALISERS.items():
            if hasattr(self, attr):
                setattr(self, attr, normalise(getattr(self, attr)))

    def black_list(self) -> frozenset[str]:
        """Keys UPDATE_*_CONFIG may not change through this config (none by default)."""
        return frozenset()


def _black_list(fixed: Iterable[str], configured: str) -> frozenset[str]:
    return frozenset(fixed) | {key for key in configured.split(";") if key}


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
    scan_not_active_broker_interval: Long = field(default=10_000, metadata=_key(rmq_only=True))
    """rmq-only: milliseconds between two scans for expired brokers (Java hard-codes 10 s)."""
    broker_channel_expired_time: Long = field(default=120_000, metadata=_key(rmq_only=True))
    """rmq-only: milliseconds without a registration after which a broker is removed
    (Java hard-codes 120 s)."""

    def black_list(self) -> frozenset[str]:
        return _black_list(self.FIXED_BLACK_LIST, self.config_black_list)


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
    bind_address: str = field(default="0.0.0.0", metadata=_key(rmq_only=True))
    """rmq-only (the RocketMQ 5 key): the local address the server socket binds."""


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
    use_tls: bool = field(default=False, metadata=_key("useTLS"))
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
    broker_ip1: str = field(default_factory=local_address, metadata=_key("brokerIP1"))
    """The address the broker registers for clients."""
    broker_ip2: str = field(default_factory=local_address, metadata=_key("brokerIP2"))
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
    store_reply_message_enable: bool = True
    enable_detail_stat: bool = True
    auto_delete_unused_stats: bool = False
    isolate_log_enable: bool = False
    config_black_list: str = "configBlackList;brokerConfigPath"

    def black_list(self) -> frozenset[str]:
        return _black_list(self.FIXED_BLACK_LIST, self.config_black_list)


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
        default=1024 * 1024 * 1024, metadata=_key(aliases=("mapedFileSizeCommitLog",))
    )
    """Size of each commitlog file in bytes (1 GiB)."""
    mapped_file_size_consume_queue: int = field(
        default=300_000 * _CONSUME_QUEUE_UNIT_SIZE,
        metadata=_key(aliases=("mapedFileSizeConsumeQueue",)),
    )
    """Size of each consume queue file in bytes, rounded up to a multiple of 20."""
    enable_consume_queue_ext: bool = False
    mapped_file_size_consume_queue_ext: int = field(
        default=48 * 1024 * 1024, metadata=_key(aliases=("mapedFileSizeConsumeQueueExt",))
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
        default=120_000, metadata=_key(aliases=("destroyMappedFileIntervalForcibly",))
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
    check_crc_on_recover: bool = field(default=True, metadata=_key("checkCRCOnRecover"))
    flush_commit_log_least_pages: int = 4
    commit_commit_log_least_pages: int = 4
    flush_least_pages_when_warm_maped_file: int = field(
        default=1024 // 4 * 16, metadata=_key(aliases=("flushLeastPagesWhenWarmMappedFile",))
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
        default=False, metadata=_key(aliases=("warmMappedFileEnable",))
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
    is_enable_batch_push: bool = field(default=False, metadata=_key(aliases=("enableBatchPush",)))
    enable_schedule_message_stats: bool = True
    enable_lmq: bool = False
    enable_multi_dispatch: bool = False
    max_lmq_consume_queue_num: int = 20_000
    enable_schedule_async_deliver: bool = False
    schedule_async_deliver_max_pending_limit: int = 2000
    schedule_async_deliver_max_resend_num2_blocked: int = 3

    @property
    def commit_log_dir(self) -> str:
        """``storePathCommitLog``, or ``<storePathRootDir>/commitlog`` when it is unset."""
        if self.store_path_commit_log is None:
            return os.path.join(self.store_path_root_dir, "commitlog")
        return self.store_path_commit_log


_OPTIONS: dict[type[ConfigObject], dict[str, _Option]] = {
    cls: _build_options(cls)
    for cls in (
        NamesrvConfig,
        NettyServerConfig,
        NettyClientConfig,
        BrokerConfig,
        MessageStoreConfig,
    )
}


def _options(config: ConfigObject) -> dict[str, _Option]:
    return _OPTIONS[type(config)]


RMQ_ONLY_KEYS: Mapping[str, str] = {
    option.key: cls.__name__
    for cls, options in _OPTIONS.items()
    for name, option in options.items()
    if option.rmq_only and name == option.key
}
"""rmq-only key -> the config class that holds it (documented in the module docstring)."""


# ------------------------------------------------------------------------------------ API

C = TypeVar("C", bound=ConfigObject)


def load_properties_file(path: str | os.PathLike[str]) -> dict[str, str]:
    """Read a ``.properties`` file (UTF-8; ISO-8859-1, Java's reading, if not valid UTF-8)."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise ConfigError(f"cannot read config file: {error.strerror}", source=str(path)) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("iso-8859-1")
    try:
        return javaprops.loads(text)
    except javaprops.PropertiesSyntaxError as error:
        raise ConfigError(str(error), source=str(path)) from None


def _parse(option: _Option, key: str, text: str, source: str | None) -> Any:
    try:
        return option.parse(text)
    except ValueError as error:
        raise ConfigError(f"{key}={text!r}: {error}", source=source, key=key, value=text) from None


def apply_properties(
    props: Mapping[str, str], *configs: ConfigObject, source: str | None = None
) -> list[str]:
    """Set every key of ``props`` on each of ``configs`` that has it; return unknown keys.

    All values are parsed before anything is changed, so a :class:`ConfigError` leaves the
    configs untouched.  A key given both directly and through an alias takes the direct
    value.  Keys no config knows are returned once each, in ``props`` order.
    """
    updates: list[tuple[ConfigObject, _Option, Any]] = []
    alias_updates: list[tuple[ConfigObject, _Option, Any]] = []
    unknown: list[str] = []
    for key, text in props.items():
        known = False
        for config in configs:
            option = _options(config).get(key)
            if option is None:
                continue
            known = True
            target = updates if key == option.key else alias_updates
            target.append((config, option, _parse(option, key, text, source)))
        if not known:
            unknown.append(key)
    for config, option, value in alias_updates + updates:
        normalise = _NORMALISERS.get(option.attr)
        setattr(config, option.attr, normalise(value) if normalise else value)
    return unknown


def build_config(
    cls: type[C], props: Mapping[str, str], *, source: str | None = None
) -> tuple[C, list[str]]:
    """A config of class ``cls`` with defaults overridden by ``props``; and the unknown keys."""
    config = cls()
    return config, apply_properties(props, config, source=source)


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def to_properties(*configs: ConfigObject) -> dict[str, str]:
    """Java key -> text of every set field (None omitted), for ``-p`` and GET_*_CONFIG."""
    result: dict[str, str] = {}
    for config in configs:
        for name, option in _options(config).items():
            value = getattr(config, option.attr)
            if name == option.key and value is not None:
                result[name] = _text(value)
    return result


def update_config(
    props: Mapping[str, str], *configs: ConfigObject, source: str | None = None
) -> list[str]:
    """Apply an UPDATE_BROKER_CONFIG / UPDATE_NAMESRV_CONFIG body; return the unknown keys.

    Raises :class:`ConfigBlackListError` naming every refused key, before changing anything,
    when a key is on the black list of one of ``configs`` (the namesrv always refuses
    ``configBlackList``, ``configStorePath``, ``kvConfigPath``, ``rocketmqHome``; the broker
    ``brokerConfigPath``, ``rocketmqHome``, ``configBlackList``; both also every key of their
    ``configBlackList``).
    """
    black_list: set[str] = set()
    for config in configs:
        black_list |= config.black_list()
    refused = [key for key in props if key in black_list]
    if refused:
        raise ConfigBlackListError(refused)
    return apply_properties(props, *configs, source=source)


@dataclass
class NamesrvConfigs:
    """Everything a name server is configured with."""

    namesrv: NamesrvConfig
    server: NettyServerConfig

    def all(self) -> tuple[ConfigObject, ...]:
        return (self.namesrv, self.server)


@dataclass
class BrokerConfigs:
    """Everything a broker is configured with (its ``-c`` file feeds all four)."""

    broker: BrokerConfig
    store: MessageStoreConfig
    server: NettyServerConfig
    client: NettyClientConfig

    def all(self) -> tuple[ConfigObject, ...]:
        return (self.broker, self.server, self.client, self.store)


def build_namesrv_configs(
    props: Mapping[str, str], *, config_file: str | None = None
) -> tuple[NamesrvConfigs, list[str]]:
    """The name server's configs from its ``-c`` properties, as NamesrvStartup builds them.

    ``listenPort`` defaults to 9876, and ``configStorePath`` becomes ``config_file`` when given.
    """
    configs = NamesrvConfigs(NamesrvConfig(), NettyServerConfig(listen_port=NAMESRV_LISTEN_PORT))
    unknown = apply_properties(props, *configs.all(), source=config_file)
    if config_file is not None:
        configs.namesrv.config_store_path = config_file
    return configs, unknown


def _check_namesrv_addr(addresses: str, source: str | None) -> None:
    for address in addresses.split(";"):
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ConfigError(
                f"namesrvAddr={addresses!r}: expected host:port;host:port",
                source=source,
                key="namesrvAddr",
                value=addresses,
            )


def build_broker_configs(
    props: Mapping[str, str], *, config_file: str | None = None
) -> tuple[BrokerConfigs, list[str]]:
    """The broker's configs from its ``-c`` properties, as BrokerStartup builds them.

    ``listenPort`` defaults to 10911 and must leave room for the fast port
    (``listenPort - 2``) and ``haListenPort``, which is always ``listenPort + 1``; a master's
    ``brokerId`` is forced to 0 and a slave's must be > 0; ``namesrvAddr`` must be
    ``host:port`` items separated by ``;``.
    """
    configs = BrokerConfigs(
        BrokerConfig(),
        MessageStoreConfig(),
        NettyServerConfig(listen_port=BROKER_LISTEN_PORT),
        NettyClientConfig(),
    )
    unknown = apply_properties(props, *configs.all(), source=config_file)
    broker, store = configs.broker, configs.store
    port = configs.server.listen_port
    if not FAST_PORT_OFFSET < port < 65535:
        raise ConfigError(
            f"listenPort={port}: expected {FAST_PORT_OFFSET + 1}..65534 (the broker also "
            f"listens on listenPort - {FAST_PORT_OFFSET}; haListenPort is listenPort + 1)",
            source=config_file,
            key="listenPort",
            value=str(port),
        )
    if broker.namesrv_addr is not None:
        _check_namesrv_addr(broker.namesrv_addr, config_file)
    if store.broker_role is BrokerRole.SLAVE:
        if broker.broker_id <= 0:
            raise ConfigError(
                f"brokerId={broker.broker_id}: a SLAVE's brokerId must be > 0",
                source=config_file,
                key="brokerId",
                value=str(broker.broker_id),
            )
    else:
        broker.broker_id = 0
    store.ha_listen_port = configs.server.listen_port + 1
    return configs, unknown
