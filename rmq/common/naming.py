"""Topic and group names: validation, system names, retry and dead-letter topics.

Topics and groups share one character set, ``^[%|a-zA-Z0-9_-]+$``.  Two validators exist
because RocketMQ has two, with different checks order and wording: the broker's
(``TopicValidator.validateTopic``: blank, characters, length; its remarks go back to clients
with SYSTEM_ERROR) and the Java client's (``Validators.checkTopic`` / ``checkGroup``).  Each
``*_error`` function returns Java's exact message, or None when the name is fine.

System topics are a fixed set plus whatever a broker adds at start (its cluster name, broker
name, reply topic, trace topic), so ``is_system_topic`` takes the broker's extra names.
"""

from __future__ import annotations

import re
from collections.abc import Collection

AUTO_CREATE_TOPIC_KEY_TOPIC = "TBW102"
RMQ_SYS_SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
RMQ_SYS_BENCHMARK_TOPIC = "BenchmarkTest"
RMQ_SYS_TRANS_HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
RMQ_SYS_TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"
RMQ_SYS_TRANS_OP_HALF_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC = "TRANS_CHECK_MAX_TIME_TOPIC"
RMQ_SYS_SELF_TEST_TOPIC = "SELF_TEST_TOPIC"
RMQ_SYS_OFFSET_MOVED_EVENT = "OFFSET_MOVED_EVENT"
SYSTEM_TOPIC_PREFIX = "rmq_sys_"

RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"
DLQ_GROUP_TOPIC_PREFIX = "%DLQ%"
LMQ_PREFIX = "%LMQ%"
REPLY_TOPIC_POSTFIX = "REPLY_TOPIC"
UNIQUE_MSG_QUERY_FLAG = "_UNIQUE_KEY_QUERY"
DEFAULT_TRACE_REGION_ID = "DefaultRegion"

TOPIC_MAX_LENGTH = 127
GROUP_MAX_LENGTH = 255
VALID_NAME_PATTERN = "^[%|a-zA-Z0-9_-]+$"

SYSTEM_TOPIC_ORDER: tuple[str, ...] = (
    AUTO_CREATE_TOPIC_KEY_TOPIC,
    RMQ_SYS_SCHEDULE_TOPIC,
    RMQ_SYS_BENCHMARK_TOPIC,
    RMQ_SYS_TRANS_HALF_TOPIC,
    RMQ_SYS_TRACE_TOPIC,
    RMQ_SYS_TRANS_OP_HALF_TOPIC,
    RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC,
    RMQ_SYS_SELF_TEST_TOPIC,
    RMQ_SYS_OFFSET_MOVED_EVENT,
)
"""The fixed system topics in the order Java's ``TopicValidator`` adds them to its set."""
SYSTEM_TOPICS: frozenset[str] = frozenset(SYSTEM_TOPIC_ORDER)

SEND_FORBIDDEN_TOPICS: frozenset[str] = frozenset(
    {
        RMQ_SYS_SCHEDULE_TOPIC,
        RMQ_SYS_TRANS_HALF_TOPIC,
        RMQ_SYS_TRANS_OP_HALF_TOPIC,
        RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC,
        RMQ_SYS_SELF_TEST_TOPIC,
        RMQ_SYS_OFFSET_MOVED_EVENT,
    }
)

DEFAULT_PRODUCER_GROUP = "DEFAULT_PRODUCER"
DEFAULT_CONSUMER_GROUP = "DEFAULT_CONSUMER"
TOOLS_CONSUMER_GROUP = "TOOLS_CONSUMER"
SCHEDULE_CONSUMER_GROUP = "SCHEDULE_CONSUMER"
FILTERSRV_CONSUMER_GROUP = "FILTERSRV_CONSUMER"
MONITOR_CONSUMER_GROUP = "__MONITOR_CONSUMER"
CLIENT_INNER_PRODUCER_GROUP = "CLIENT_INNER_PRODUCER"
SELF_TEST_PRODUCER_GROUP = "SELF_TEST_P_GROUP"
SELF_TEST_CONSUMER_GROUP = "SELF_TEST_C_GROUP"
ONS_HTTP_PROXY_GROUP = "CID_ONS-HTTP-PROXY"
CID_ONSAPI_PERMISSION_GROUP = "CID_ONSAPI_PERMISSION"
CID_ONSAPI_OWNER_GROUP = "CID_ONSAPI_OWNER"
CID_ONSAPI_PULL_GROUP = "CID_ONSAPI_PULL"
CID_RMQ_SYS_PREFIX = "CID_RMQ_SYS_"
CID_SYS_RMQ_TRANS = "CID_RMQ_SYS_TRANS"

SYSTEM_GROUPS: frozenset[str] = frozenset(
    {
        DEFAULT_PRODUCER_GROUP,
        DEFAULT_CONSUMER_GROUP,
        TOOLS_CONSUMER_GROUP,
        SCHEDULE_CONSUMER_GROUP,
        FILTERSRV_CONSUMER_GROUP,
        MONITOR_CONSUMER_GROUP,
        CLIENT_INNER_PRODUCER_GROUP,
        SELF_TEST_PRODUCER_GROUP,
        SELF_TEST_CONSUMER_GROUP,
        ONS_HTTP_PROXY_GROUP,
        CID_ONSAPI_PERMISSION_GROUP,
        CID_ONSAPI_OWNER_GROUP,
        CID_ONSAPI_PULL_GROUP,
        CID_SYS_RMQ_TRANS,
    }
)

_VALID_NAME = re.compile(r"[%|a-zA-Z0-9_-]*")
# Java's UtilAll.isBlank: empty or only Character.isWhitespace chars.
_JAVA_WHITESPACE = "".join(
    chr(c) for c in (*range(0x09, 0x0E), *range(0x1C, 0x21), 0x1680, *range(0x2000, 0x2007))
) + "".join(chr(c) for c in (0x2008, 0x2009, 0x200A, 0x2028, 0x2029, 0x205F, 0x3000))


def _is_blank(name: str) -> bool:
    return not name.strip(_JAVA_WHITESPACE)


def has_illegal_characters(name: str) -> bool:
    """Whether a topic or group name has a character outside ``[%|a-zA-Z0-9_-]``."""
    return _VALID_NAME.fullmatch(name) is None


def topic_error(topic: str) -> str | None:
    """The broker's remark for an invalid topic (``TopicValidator.validateTopic``), or None."""
    if _is_blank(topic):
        return "The specified topic is blank."
    if has_illegal_characters(topic):
        return (
            f"The specified topic contains illegal characters, allowing only {VALID_NAME_PATTERN}"
        )
    if len(topic) > TOPIC_MAX_LENGTH:
        return "The specified topic is longer than topic max length."
    return None


def client_topic_error(topic: str) -> str | None:
    """The Java client's message for an invalid topic (``Validators.checkTopic``), or None."""
    if _is_blank(topic):
        return "The specified topic is blank"
    if len(topic) > TOPIC_MAX_LENGTH:
        return f"The specified topic is longer than topic max length {TOPIC_MAX_LENGTH}."
    if has_illegal_characters(topic):
        return (
            f"The specified topic[{topic}] contains illegal characters, allowing only "
            f"{VALID_NAME_PATTERN}"
        )
    return None


def group_error(group: str) -> str | None:
    """The Java client's message for an invalid group (``Validators.checkGroup``), or None."""
    if _is_blank(group):
        return "the specified group is blank"
    if len(group) > GROUP_MAX_LENGTH:
        return f"the specified group is longer than group max length {GROUP_MAX_LENGTH}."
    if has_illegal_characters(group):
        return (
            f"the specified group[{group}] contains illegal characters, allowing only "
            f"{VALID_NAME_PATTERN}"
        )
    return None


def is_system_topic(topic: str, broker_topics: Collection[str] = ()) -> bool:
    """Whether ``topic`` is reserved: a built-in system topic, one of the broker's own
    (``broker_topics``: cluster name, broker name, reply and trace topics), or ``rmq_sys_*``."""
    return topic in SYSTEM_TOPICS or topic in broker_topics or topic.startswith(SYSTEM_TOPIC_PREFIX)


def system_topic_conflict_error(topic: str) -> str:
    """The remark for creating a topic that is a system topic."""
    return f"The topic[{topic}] is conflict with system topic."


def is_send_forbidden(topic: str) -> bool:
    """Whether clients may not send to ``topic`` (schedule, transaction and test topics)."""
    return topic in SEND_FORBIDDEN_TOPICS


def send_forbidden_error(topic: str) -> str:
    """The remark (NO_PERMISSION) for a send to a send-forbidden topic."""
    return f"Sending message to topic[{topic}] is forbidden."


def retry_topic(group: str) -> str:
    return RETRY_GROUP_TOPIC_PREFIX + group


def dlq_topic(group: str) -> str:
    return DLQ_GROUP_TOPIC_PREFIX + group


def reply_topic(cluster_name: str) -> str:
    return f"{cluster_name}_{REPLY_TOPIC_POSTFIX}"


def is_retry_topic(topic: str) -> bool:
    return topic.startswith(RETRY_GROUP_TOPIC_PREFIX)


def is_dlq_topic(topic: str) -> bool:
    return topic.startswith(DLQ_GROUP_TOPIC_PREFIX)


def is_internal_topic(topic: str, broker_topics: Collection[str] = ()) -> bool:
    """Whether ``topic`` is one the brokers make for themselves rather than one a user
    created: a system topic (see `is_system_topic`) or a group's retry or dead-letter topic."""
    return is_system_topic(topic, broker_topics) or is_retry_topic(topic) or is_dlq_topic(topic)


def is_lmq(topic: str) -> bool:
    return topic.startswith(LMQ_PREFIX)


def consumer_group_of(topic: str) -> str | None:
    """The consumer group of a ``%RETRY%`` or ``%DLQ%`` topic, None for other topics."""
    for prefix in (RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX):
        if topic.startswith(prefix):
            return topic[len(prefix) :]
    return None


def is_sys_consumer_group(group: str) -> bool:
    """Whether ``group`` is a system consumer group (``MixAll.isSysConsumerGroup``: the
    ``CID_RMQ_SYS_`` prefix; the other built-in groups are listed in ``SYSTEM_GROUPS``)."""
    return group.startswith(CID_RMQ_SYS_PREFIX)
