"""Bit flags of messages, pull requests and topics (RocketMQ ``MessageSysFlag``,
``PullSysFlag`` and ``TopicSysFlag``).

The message sysFlag is stored in every commitlog record (SYSFLAG field) and sent with every
send request.  Bits 0-7 are single flags or the two-bit transaction type; bits 8-10 name the
compression codec of a compressed body, where 0 means ZLIB so that records written before the
codec bits existed keep decoding.  The pull sysFlag travels in PULL_MESSAGE request headers.
The topic sysFlag is a topic config's ``topicSysFlag`` (in ``topics.json``, registrations and
routes): bit 0 marks a unit topic, bit 1 a topic with unit subscriptions.
"""

from __future__ import annotations

# Message sysFlag.
COMPRESSED_FLAG = 0x1
MULTI_TAGS_FLAG = 0x2
TRANSACTION_NOT_TYPE = 0x0
TRANSACTION_PREPARED_TYPE = 0x4
TRANSACTION_COMMIT_TYPE = 0x8
TRANSACTION_ROLLBACK_TYPE = 0xC
TRANSACTION_TYPE_MASK = 0xC
BORNHOST_V6_FLAG = 0x10
STOREHOSTADDRESS_V6_FLAG = 0x20
NEED_UNWRAP_FLAG = 0x40
INNER_BATCH_FLAG = 0x80

COMPRESSION_LZ4_TYPE = 0x100
COMPRESSION_ZSTD_TYPE = 0x200
COMPRESSION_ZLIB_TYPE = 0x300
COMPRESSION_TYPE_MASK = 0x700

# Pull sysFlag.
PULL_COMMIT_OFFSET = 0x1
PULL_SUSPEND = 0x2
PULL_SUBSCRIPTION = 0x4
PULL_CLASS_FILTER = 0x8
PULL_LITE_PULL_MESSAGE = 0x10

# Topic sysFlag.
TOPIC_SYS_FLAG_UNIT = 0x1
TOPIC_SYS_FLAG_UNIT_SUB = 0x2


def transaction_type(sys_flag: int) -> int:
    """The transaction type bits of a message sysFlag (one of the TRANSACTION_*_TYPE values)."""
    return sys_flag & TRANSACTION_TYPE_MASK


def with_transaction_type(sys_flag: int, tran_type: int) -> int:
    """``sys_flag`` with its transaction type replaced by ``tran_type``."""
    return (sys_flag & ~TRANSACTION_TYPE_MASK) | tran_type


def is_compressed(sys_flag: int) -> bool:
    return sys_flag & COMPRESSED_FLAG != 0


def compression_type_value(sys_flag: int) -> int:
    """The codec number in bits 8-10: 1 LZ4, 2 ZSTD, 3 ZLIB (0, from old writers, means ZLIB)."""
    value = (sys_flag & COMPRESSION_TYPE_MASK) >> 8
    return value or 3


def build_pull_flag(
    *,
    commit_offset: bool,
    suspend: bool,
    subscription: bool,
    class_filter: bool = False,
    lite_pull: bool = False,
) -> int:
    """The sysFlag of a PULL_MESSAGE request header."""
    flag = 0
    if commit_offset:
        flag |= PULL_COMMIT_OFFSET
    if suspend:
        flag |= PULL_SUSPEND
    if subscription:
        flag |= PULL_SUBSCRIPTION
    if class_filter:
        flag |= PULL_CLASS_FILTER
    if lite_pull:
        flag |= PULL_LITE_PULL_MESSAGE
    return flag


def clear_commit_offset_flag(pull_flag: int) -> int:
    """The broker clears the commit-offset bit when it must not store the pulled offset."""
    return pull_flag & ~PULL_COMMIT_OFFSET


def build_topic_sys_flag(*, unit: bool, unit_sub: bool) -> int:
    """The topicSysFlag of a topic config (``TopicSysFlag.buildSysFlag``)."""
    return (TOPIC_SYS_FLAG_UNIT if unit else 0) | (TOPIC_SYS_FLAG_UNIT_SUB if unit_sub else 0)


def has_unit_flag(topic_sys_flag: int) -> bool:
    return topic_sys_flag & TOPIC_SYS_FLAG_UNIT != 0


def has_unit_sub_flag(topic_sys_flag: int) -> bool:
    return topic_sys_flag & TOPIC_SYS_FLAG_UNIT_SUB != 0
