"""Java text forms of the mqadmin consumer commands (rmq/cli/mqadmin/consumertext.py):
ConsumerRunningInfo's analyses and ProcessQueueInfo's toString."""

from __future__ import annotations

import time

from rmq.cli.mqadmin.consumertext import (
    concurrent_hash_map_order,
    process_queue_text,
    process_queue_warnings,
    same_subscriptions,
)
from rmq.remoting.bodies import MessageQueue
from rmq.remoting.bodies.client import SubscriptionData
from rmq.remoting.bodies.consumerinfo import ConsumerRunningInfo, ProcessQueueInfo
from rmq.store.layout import index_file_name

NOW = 1_800_000_000_000
QUEUE = MessageQueue("T", "broker-a", 3)


def _info(
    *, push: bool = True, started: int = NOW - 3 * 60 * 1000, topics: tuple[str, ...] = ("T",)
) -> ConsumerRunningInfo:
    return ConsumerRunningInfo(
        properties={
            "PROP_CONSUME_TYPE": "CONSUME_PASSIVELY" if push else "CONSUME_ACTIVELY",
            "PROP_CONSUMER_START_TIMESTAMP": str(started),
            "PROP_CONSUMEORDERLY": "false",
        },
        subscription_set=[SubscriptionData(topic=topic, sub_string="*") for topic in topics],
    )


def test_subscriptions_compared_only_for_push_members_started_two_minutes_ago() -> None:
    differing = {"a": _info(), "b": _info(topics=("T", "U"))}
    assert not same_subscriptions(differing, NOW)
    assert same_subscriptions({"a": _info(), "b": _info()}, NOW)
    young = {"a": _info(started=NOW - 60_000), "b": _info(topics=("U",))}
    assert same_subscriptions(young, NOW)
    pull = {"a": _info(push=False), "b": _info(topics=("U",))}
    assert same_subscriptions(pull, NOW)
    assert not same_subscriptions({"a": _info(topics=())}, NOW)


def test_a_queue_with_cached_messages_and_no_consumption_for_a_minute_is_blocked() -> None:
    info = _info()
    info.mq_table[QUEUE] = ProcessQueueInfo(cached_msg_count=3, last_consume_timestamp=NOW - 61_000)
    info.mq_table[MessageQueue("T", "broker-a", 4)] = ProcessQueueInfo(
        cached_msg_count=0, last_consume_timestamp=NOW - 600_000
    )
    assert process_queue_warnings("c1", info, NOW) == (
        "c1 MessageQueue [topic=T, brokerName=broker-a, queueId=3] can't consume for a while,"
        " maybe blocked, 61000ms\n"
    )
    pull = _info(push=False)
    pull.mq_table.update(info.mq_table)
    assert process_queue_warnings("c1", pull, NOW) == ""


def test_process_queue_info_text() -> None:
    millis = int(time.mktime((2026, 1, 2, 3, 4, 5, 0, 0, -1))) * 1000 + 67
    text = process_queue_text(
        ProcessQueueInfo(commit_offset=7, locked=True, last_pull_timestamp=millis)
    )
    assert text.startswith("ProcessQueueInfo [commitOffset=7, cachedMsgMinOffset=0,")
    assert ", locked=true, tryUnlockTimes=0, " in text
    assert (
        f"lastPullTimestamp=20260102030405067, lastConsumeTimestamp={index_file_name(0)}]" in text
    )


# the order rmq's push consumer writes its running-info properties, and the order Apache's
# mqadmin (Java 17) printed them in consumerStatus -i
SENT = [
    "consumerGroup",
    "messageModel",
    "consumeFromWhere",
    "consumeThreadMin",
    "consumeThreadMax",
    "consumeConcurrentlyMaxSpan",
    "pullThresholdForQueue",
    "pullThresholdSizeForQueue",
    "pullInterval",
    "consumeMessageBatchMaxSize",
    "pullBatchSize",
    "postSubscriptionWhenPull",
    "maxReconsumeTimes",
    "suspendCurrentQueueTimeMillis",
    "PROP_CONSUMEORDERLY",
    "PROP_THREADPOOL_CORE_SIZE",
    "PROP_CONSUMER_START_TIMESTAMP",
    "PROP_NAMESERVER_ADDR",
    "PROP_CONSUME_TYPE",
    "PROP_CLIENT_VERSION",
]
PRINTED = [
    "suspendCurrentQueueTimeMillis",
    "PROP_CONSUMER_START_TIMESTAMP",
    "PROP_CONSUME_TYPE",
    "pullBatchSize",
    "consumeMessageBatchMaxSize",
    "pullThresholdForQueue",
    "consumeFromWhere",
    "PROP_CLIENT_VERSION",
    "PROP_NAMESERVER_ADDR",
    "consumeThreadMax",
    "consumeConcurrentlyMaxSpan",
    "PROP_THREADPOOL_CORE_SIZE",
    "pullThresholdSizeForQueue",
    "maxReconsumeTimes",
    "PROP_CONSUMEORDERLY",
    "messageModel",
    "pullInterval",
    "postSubscriptionWhenPull",
    "consumerGroup",
    "consumeThreadMin",
]


def test_properties_iterate_as_java_concurrent_hash_map() -> None:
    """Two keys share a bin before the table grows: the resize puts them in reverse."""
    assert concurrent_hash_map_order(SENT) == PRINTED
