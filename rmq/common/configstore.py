"""The message store's settings (``MessageStoreConfig.java``), with Java's defaults.

One dataclass field per Java property, in Java's declaration order, each declared with
:func:`~rmq.common.configfields.setting` (default, allowed values, when a change on a running
broker takes effect; see :mod:`rmq.common.configobjects` for the other four config classes
and what ``applies`` means).  The store, its flush services and its index are built once,
at start, from this config, so most of its keys are ``RESTART``; the cleanup (``deleteWhen``,
``fileReservedTime``, ``diskMaxUsedSpaceRatio``, ``cleanFileForciblyEnable``), the pull
batch limits and the replication waits read it each time.
"""

import os
from dataclasses import dataclass
from enum import StrEnum

from rmq.common.configfields import (
    CONSUME_QUEUE_UNIT_SIZE,
    NOT_BLANK,
    Applies,
    ConfigError,
    ConfigObject,
    Long,
    setting,
)
from rmq.common.configvalues import (
    DELAY_LEVELS,
    HOST_PORT,
    HOURS,
    clamp_disk_ratio,
    home_path,
    round_up_to_consume_queue_unit,
)
from rmq.common.indexsize import INDEX_FILE_MAX, index_file_size

LIVE, RESTART, UNUSED = Applies.LIVE, Applies.RESTART, Applies.UNUSED


class FlushDiskType(StrEnum):
    ASYNC_FLUSH = "ASYNC_FLUSH"
    SYNC_FLUSH = "SYNC_FLUSH"


class BrokerRole(StrEnum):
    ASYNC_MASTER = "ASYNC_MASTER"
    SYNC_MASTER = "SYNC_MASTER"
    SLAVE = "SLAVE"


_NO_DLEDGER = "{} is kept but not used by rmq's DLedger commitlog"


@dataclass(kw_only=True)
class MessageStoreConfig(ConfigObject):
    """The message store's settings (``MessageStoreConfig.java``)."""

    store_path_root_dir: str = setting(
        factory=lambda: home_path("store"), shown="$HOME/store", rule=NOT_BLANK, applies=RESTART
    )
    """Root of the store (``$HOME/store``)."""
    store_path_commit_log: str | None = setting(None, rule=NOT_BLANK, applies=RESTART)
    """The commitlog directory; see :attr:`commit_log_dir` for the effective one."""
    store_path_d_ledger_commit_log: str | None = setting(
        None, applies=UNUSED, note=_NO_DLEDGER.format("storePathDLedgerCommitLog")
    )
    read_only_commit_log_store_paths: str | None = setting(None, applies=UNUSED)
    mapped_file_size_commit_log: int = setting(
        1024 * 1024 * 1024,
        aliases=("mapedFileSizeCommitLog",),
        low=1,
        unit="bytes",
        applies=RESTART,
    )
    """Size of each commitlog file in bytes (1 GiB)."""
    mapped_file_size_consume_queue: int = setting(
        300_000 * CONSUME_QUEUE_UNIT_SIZE,
        aliases=("mapedFileSizeConsumeQueue",),
        low=1,
        unit=f"bytes, rounded up to whole {CONSUME_QUEUE_UNIT_SIZE}-byte entries",
        normalise=round_up_to_consume_queue_unit,
        applies=RESTART,
    )
    """Size of each consume queue file in bytes, rounded up to a multiple of 20."""
    enable_consume_queue_ext: bool = setting(False, applies=UNUSED)
    mapped_file_size_consume_queue_ext: int = setting(
        48 * 1024 * 1024,
        aliases=("mapedFileSizeConsumeQueueExt",),
        low=1,
        unit="bytes",
        applies=UNUSED,
    )
    bit_map_length_consume_queue_ext: int = setting(
        64,
        low=0,
        unit="bits",
        applies=UNUSED,
        note="bitMapLengthConsumeQueueExt is set by the broker at start from "
        "maxErrorRateOfBloomFilter and expectConsumerNumUseFilter",
    )
    flush_interval_commit_log: int = setting(500, low=1, unit="ms", applies=RESTART)
    """Milliseconds between two flushes of the commitlog (ASYNC_FLUSH)."""
    commit_interval_commit_log: int = setting(200, low=1, unit="ms", applies=UNUSED)
    use_reentrant_lock_when_put_message: bool = setting(True, applies=UNUSED)
    flush_commit_log_timed: bool = setting(True, applies=UNUSED)
    flush_interval_consume_queue: int = setting(1000, low=1, unit="ms", applies=RESTART)
    clean_resource_interval: int = setting(10_000, low=1, unit="ms", applies=RESTART)
    delete_commit_log_files_interval: int = setting(100, low=0, unit="ms", applies=UNUSED)
    delete_consume_queue_files_interval: int = setting(100, low=0, unit="ms", applies=UNUSED)
    destroy_maped_file_interval_forcibly: int = setting(
        120_000,
        aliases=("destroyMappedFileIntervalForcibly",),
        low=0,
        unit="ms",
        applies=UNUSED,
    )
    redelete_hanged_file_interval: int = setting(120_000, low=0, unit="ms", applies=UNUSED)
    delete_when: str = setting("04", rule=HOURS, applies=LIVE)
    """Hours of the day (``;``-separated) when expired files are deleted."""
    disk_max_used_space_ratio: int = setting(
        75,
        low=0,
        high=100,
        unit="percent, used within 10..95",
        normalise=clamp_disk_ratio,
        applies=LIVE,
    )
    """Disk usage (percent, clamped to 10..95) above which files are deleted early."""
    file_reserved_time: int = setting(72, low=1, unit="hours", applies=LIVE)
    """Hours a commitlog file is kept."""
    put_msg_index_hight_water: int = setting(600_000, low=0, applies=UNUSED)
    max_message_size: int = setting(4 * 1024 * 1024, low=1, unit="bytes", applies=RESTART)
    check_crc_on_recover: bool = setting(True, key="checkCRCOnRecover", applies=RESTART)
    flush_commit_log_least_pages: int = setting(4, low=0, unit="pages", applies=RESTART)
    commit_commit_log_least_pages: int = setting(4, low=0, unit="pages", applies=UNUSED)
    flush_least_pages_when_warm_maped_file: int = setting(
        1024 // 4 * 16,
        aliases=("flushLeastPagesWhenWarmMappedFile",),
        low=0,
        unit="pages",
        applies=UNUSED,
    )
    flush_consume_queue_least_pages: int = setting(2, low=0, unit="pages", applies=RESTART)
    flush_commit_log_thorough_interval: int = setting(10_000, low=0, unit="ms", applies=RESTART)
    commit_commit_log_thorough_interval: int = setting(200, low=0, unit="ms", applies=UNUSED)
    flush_consume_queue_thorough_interval: int = setting(60_000, low=0, unit="ms", applies=RESTART)
    max_transfer_bytes_on_message_in_memory: int = setting(
        256 * 1024, low=1, unit="bytes", applies=LIVE
    )
    max_transfer_count_on_message_in_memory: int = setting(32, low=1, applies=LIVE)
    max_transfer_bytes_on_message_in_disk: int = setting(
        64 * 1024, low=1, unit="bytes", applies=LIVE
    )
    max_transfer_count_on_message_in_disk: int = setting(8, low=1, applies=LIVE)
    access_message_in_memory_max_ratio: int = setting(
        40, low=0, high=100, unit="percent of physical memory", applies=RESTART
    )
    message_index_enable: bool = setting(True, applies=RESTART)
    max_hash_slot_num: int = setting(5_000_000, low=1, applies=RESTART)
    max_index_num: int = setting(5_000_000 * 4, low=2, applies=RESTART)
    max_msgs_num_batch: int = setting(64, low=1, applies=UNUSED)
    message_index_safe: bool = setting(False, applies=RESTART)
    ha_listen_port: int = setting(
        10912,
        shown="listenPort + 1",
        low=0,
        high=65535,
        applies=RESTART,
        note="haListenPort is always listenPort + 1: the broker sets it at start",
    )
    """HA port; the broker startup sets it to ``listenPort + 1`` as Java's does."""
    ha_send_heartbeat_interval: int = setting(5000, low=1, unit="ms", applies=RESTART)
    ha_housekeeping_interval: int = setting(20_000, low=1, unit="ms", applies=RESTART)
    ha_transfer_batch_size: int = setting(32 * 1024, low=1, unit="bytes", applies=LIVE)
    ha_master_address: str | None = setting(None, rule=HOST_PORT, applies=RESTART)
    ha_slave_fallbehind_max: int = setting(256 * 1024 * 1024, low=0, unit="bytes", applies=LIVE)
    broker_role: BrokerRole = setting(BrokerRole.ASYNC_MASTER, applies=RESTART)
    flush_disk_type: FlushDiskType = setting(FlushDiskType.ASYNC_FLUSH, applies=RESTART)
    sync_flush_timeout: int = setting(5000, low=1, unit="ms", applies=RESTART)
    """Milliseconds a SYNC_FLUSH send waits for its flush."""
    slave_timeout: int = setting(3000, low=1, unit="ms", applies=LIVE)
    message_delay_level: str = setting(
        "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h",
        rule=DELAY_LEVELS,
        applies=RESTART,
    )
    flush_delay_offset_interval: Long = setting(10_000, low=1, unit="ms", applies=RESTART)
    clean_file_forcibly_enable: bool = setting(True, applies=LIVE)
    warm_maped_file_enable: bool = setting(False, aliases=("warmMappedFileEnable",), applies=UNUSED)
    offset_check_in_slave: bool = setting(False, applies=RESTART)
    debug_lock_enable: bool = setting(False, applies=UNUSED)
    duplication_enable: bool = setting(False, applies=UNUSED)
    disk_fall_recorded: bool = setting(True, applies=UNUSED)
    os_page_cache_busy_time_out_mills: Long = setting(1000, low=0, unit="ms", applies=UNUSED)
    default_query_max_num: int = setting(32, low=1, applies=LIVE)
    transient_store_pool_enable: bool = setting(False, applies=UNUSED)
    transient_store_pool_size: int = setting(5, low=0, applies=UNUSED)
    fast_fail_if_no_buffer_in_store_pool: bool = setting(False, applies=UNUSED)
    enable_d_leger_commit_log: bool = setting(
        False,
        applies=RESTART,
        note="enableDLegerCommitLog takes effect after a restart; a DLedger group elects the "
        "master (docs/dledger.md); delayed messages and batches are refused",
    )
    d_leger_group: str | None = setting(
        None,
        applies=RESTART,
        note="dLegerGroup takes effect after a restart; the DLedger group's name "
        "(default: brokerName)",
    )
    d_leger_peers: str | None = setting(
        None,
        applies=RESTART,
        note="dLegerPeers takes effect after a restart; every node's id-host:port, separated by ;",
    )
    d_leger_self_id: str | None = setting(
        None,
        applies=RESTART,
        note="dLegerSelfId takes effect after a restart; this node's id in dLegerPeers "
        "(a letter and a number: n0)",
    )
    preferred_leader_id: str | None = setting(
        None,
        applies=RESTART,
        note="preferredLeaderId takes effect after a restart; DLedger ids (separated by ;) "
        "the leadership is handed to when alive",
    )
    is_enable_batch_push: bool = setting(
        False,
        aliases=("enableBatchPush",),
        applies=UNUSED,
        note=_NO_DLEDGER.format("isEnableBatchPush"),
    )
    enable_schedule_message_stats: bool = setting(True, applies=RESTART)
    enable_lmq: bool = setting(False, applies=UNUSED)
    enable_multi_dispatch: bool = setting(False, applies=UNUSED)
    max_lmq_consume_queue_num: int = setting(20_000, low=1, applies=UNUSED)
    enable_schedule_async_deliver: bool = setting(False, applies=UNUSED)
    schedule_async_deliver_max_pending_limit: int = setting(2000, low=1, applies=UNUSED)
    schedule_async_deliver_max_resend_num2_blocked: int = setting(3, low=0, applies=UNUSED)
    start_with_empty_metadata_on_damage: bool = setting(False, rmq_only=True, applies=RESTART)
    """rmq-only: a metadata file under ``config/`` that is empty or does not decode, with no
    usable ``.bak``, is logged at ERROR and the broker starts without it (default: the start
    stops, naming the file)."""

    @property
    def commit_log_dir(self) -> str:
        """``storePathCommitLog``, or ``<storePathRootDir>/commitlog`` when it is unset."""
        if self.store_path_commit_log is None:
            return os.path.join(self.store_path_root_dir, "commitlog")
        return self.store_path_commit_log

    def check(self) -> None:
        """An index file (header, ``maxHashSlotNum`` slots, ``maxIndexNum`` entries) must fit
        a Java int, as Apache's ``IndexFile`` sizes it."""
        size = index_file_size(self.max_hash_slot_num, self.max_index_num)
        if size > INDEX_FILE_MAX:
            raise ConfigError(
                f"maxHashSlotNum={self.max_hash_slot_num} and maxIndexNum={self.max_index_num}"
                f" make {size}-byte index files: expected 40 + 4 * maxHashSlotNum"
                f" + 20 * maxIndexNum <= {INDEX_FILE_MAX}",
                key="maxIndexNum",
                value=str(self.max_index_num),
            )
