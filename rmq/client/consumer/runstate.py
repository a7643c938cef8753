"""What a push consumer tells and does for an admin tool, through its broker (the calls of
:mod:`rmq.client.consumerrequests`), after Apache's ``DefaultMQPushConsumerImpl`` and
``MQClientInstance``:

* :func:`running_info`: the consumer's settings as properties (the names of Apache's
  DefaultMQPushConsumer fields rmq has, plus ``PROP_CONSUMEORDERLY``,
  ``PROP_THREADPOOL_CORE_SIZE`` and ``PROP_CONSUMER_START_TIMESTAMP``), its subscriptions,
  per owned queue a ProcessQueueInfo with the offset it would commit, and per subscribed
  topic its rates (:class:`~rmq.client.consumer.consume.ConsumerStats`);
* :func:`consumer_offsets`: the offsets the offset store holds for one topic;
* :func:`reset_offset`: RESET_CONSUMER_CLIENT_OFFSET.  Each owned queue of the topic that
  the table names is dropped and emptied (its pull loop and pending consumption stop), its
  offset set to the table's and committed, and the queue forgotten; the rebalance started
  at once takes it up again from the committed offset (Apache waits 10 s for running
  listener calls and lets the next periodic rebalance do it);
* :func:`consume_directly`: CONSUME_MESSAGE_DIRECTLY through the consume service.
"""

from __future__ import annotations

import time
from typing import Protocol

from rmq.client.consumer.consume import ConsumeHost, ConsumeService
from rmq.client.consumer.offsetstore import ReadOffsetType
from rmq.client.consumer.processqueue import ProcessQueue
from rmq.client.messageext import decode_message
from rmq.remoting.bodies import ConsumeFromWhere, MessageQueue, SubscriptionData
from rmq.remoting.bodies.consumerinfo import (
    PROP_CONSUME_ORDERLY,
    PROP_CONSUMER_START_TIMESTAMP,
    PROP_THREADPOOL_CORE_SIZE,
    CMResult,
    ConsumeMessageDirectlyResult,
    ConsumerRunningInfo,
    in_hash_map_order,
)

__all__ = [
    "ReportingConsumer",
    "consume_directly",
    "consumer_offsets",
    "reset_offset",
    "running_info",
]


class ReportingConsumer(ConsumeHost, Protocol):
    """The push consumer as these calls see it: what its consume service sees, and the rest
    of its settings and state (the push consumer calls them with itself)."""

    consume_from_where: ConsumeFromWhere
    consume_timestamp: int | None
    consume_concurrently_max_span: int
    pull_threshold_for_queue: int
    pull_threshold_size_for_queue: int
    pull_interval: float
    pull_batch_size: int
    post_subscription_when_pull: bool
    orderly: bool
    start_timestamp: int

    @property
    def process_queue_table(self) -> dict[MessageQueue, ProcessQueue]: ...

    def subscriptions(self) -> list[SubscriptionData]: ...

    def rebalance_now(self) -> None: ...

    def consume_service(self) -> ConsumeService: ...


def _java_text(value: object) -> str:
    """``String.valueOf`` of a setting: booleans lower-case, enums by name."""
    if isinstance(value, bool):
        return "true" if value else "false"
    name = getattr(value, "name", None)
    return name if isinstance(name, str) else str(value)


def _timestamp_text(millis: int) -> str:
    """``UtilAll.timeMillisToHumanString3``: yyyyMMddHHmmss in local time."""
    return time.strftime("%Y%m%d%H%M%S", time.localtime(millis / 1000))


def _properties(consumer: ReportingConsumer) -> dict[str, str]:
    consume_timestamp = consumer.consume_timestamp
    settings: dict[str, object] = {
        "consumerGroup": consumer.group,
        "messageModel": consumer.message_model,
        "consumeFromWhere": consumer.consume_from_where,
        "consumeThreadMin": consumer.consume_concurrency,
        "consumeThreadMax": consumer.consume_concurrency,
        "consumeConcurrentlyMaxSpan": consumer.consume_concurrently_max_span,
        "pullThresholdForQueue": consumer.pull_threshold_for_queue,
        "pullThresholdSizeForQueue": consumer.pull_threshold_size_for_queue,
        "pullInterval": int(consumer.pull_interval * 1000),
        "consumeMessageBatchMaxSize": consumer.consume_message_batch_max_size,
        "pullBatchSize": consumer.pull_batch_size,
        "postSubscriptionWhenPull": consumer.post_subscription_when_pull,
        "maxReconsumeTimes": consumer.max_reconsume_times,
        "suspendCurrentQueueTimeMillis": int(consumer.suspend_current_queue_time * 1000),
    }
    if consume_timestamp is not None:
        settings["consumeTimestamp"] = _timestamp_text(consume_timestamp)
    properties = {key: _java_text(value) for key, value in settings.items()}
    properties[PROP_CONSUME_ORDERLY] = _java_text(consumer.orderly)
    properties[PROP_THREADPOOL_CORE_SIZE] = str(consumer.consume_concurrency)
    properties[PROP_CONSUMER_START_TIMESTAMP] = str(consumer.start_timestamp)
    return properties


async def running_info(consumer: ReportingConsumer) -> ConsumerRunningInfo:
    """The consumer's part of its GET_CONSUMER_RUNNING_INFO answer."""
    subscriptions = consumer.subscriptions()
    store = consumer.offset_store
    mq_table = {
        mq: pq.info(await store.read_offset(mq, ReadOffsetType.MEMORY_FIRST_THEN_STORE))
        for mq, pq in list(consumer.process_queue_table.items())
    }
    return ConsumerRunningInfo(
        properties=_properties(consumer),
        subscription_set=subscriptions,
        mq_table=mq_table,
        status_table={sub.topic: consumer.stats.status(sub.topic) for sub in subscriptions},
    )


def consumer_offsets(consumer: ReportingConsumer, topic: str) -> dict[MessageQueue, int]:
    """GET_CONSUMER_STATUS_FROM_CLIENT: the offsets held for ``topic``, in the order Java's
    HashMap copy of them is written."""
    return in_hash_map_order(consumer.offset_store.clone_offset_table(topic))


async def reset_offset(
    consumer: ReportingConsumer, topic: str, offsets: dict[MessageQueue, int]
) -> None:
    """RESET_CONSUMER_CLIENT_OFFSET (see the module docstring)."""
    table = consumer.process_queue_table
    reset = [mq for mq in table if mq.topic == topic and mq in offsets]
    for mq in reset:
        pq = table[mq]
        pq.dropped = True
        pq.clear()
    rebalance = consumer.rebalance_of()
    for mq in reset:
        consumer.offset_store.update_offset(mq, offsets[mq], increase_only=False)
        await rebalance.remove_process_queue(mq)
    if reset:
        consumer.rebalance_now()


async def consume_directly(
    consumer: ReportingConsumer, record: bytes, broker_name: str | None
) -> ConsumeMessageDirectlyResult:
    """CONSUME_MESSAGE_DIRECTLY of the stored message ``record``."""
    service = consumer.consume_service()
    try:  # RecordError and CompressionError are ValueErrors
        message = decode_message(record, broker_name or "")
    except ValueError as exc:
        return ConsumeMessageDirectlyResult(
            order=service.orderly, consume_result=CMResult.CR_THROW_EXCEPTION, remark=str(exc)
        )
    return await service.consume_directly(message)
