"""The broker's consumer and producer queries: who consumes a topic, how far groups are, what
a consume queue holds, which producers are connected.

:class:`ConsumerQueryProcessor` serves these admin requests as Apache's
``AdminBrokerProcessor`` does, with its response codes, remarks and bodies:

* QUERY_TOPIC_CONSUME_BY_WHO: a GroupList of the online groups subscribed to the topic and of
  the groups with offsets on it (online ones first, each set in Java's hash order).
* QUERY_CONSUME_TIME_SPAN: per write queue the store times of its first and last message,
  of the group's last consumed message (the first message's when it has consumed none) and,
  when the group is behind, how long the next message has waited (``now`` minus its store
  time; ``now + 1`` when the group has no offset, as Apache computes it from the -1 "time"
  of offset -1).  TOPIC_NOT_EXIST "topic[<t>] not exist" for an unknown topic.
* GET_SYSTEM_TOPIC_LIST_FROM_BROKER: a TopicList of the system topics (the fixed ones plus
  the broker's cluster-name, broker-name, reply and trace topics), without a broker address.
* QUERY_CORRECTION_OFFSET: per queue the lowest offset of any group but the ``filterGroups``
  (comma separated) that is still in the store; a queue where the compare group is behind
  that lowest offset gets Long.MAX_VALUE.
* CLONE_GROUP_OFFSET: copies the source group's offsets on the header's topic to the
  destination group, unless the topic is unknown or, without ``offline``, the source group is
  online without subscribing it.  Without a topic nothing is copied: Apache walks the source
  group's topics then, but copies the header's missing topic each time.
* GET_BROKER_CONSUME_STATS: a ConsumeStatsList with, for every subscription group, the
  ConsumeStats of each topic it has offsets for (only order topics with ``isOrder``), per
  write queue, and the summed lag.
* QUERY_CONSUME_QUEUE: ``count`` raw entries from queue offset ``index``, the queue's index
  range and, with a ``consumerGroup``, the group's subscription and filter data (or
  "<group>@<topic> is not online!").  SYSTEM_ERROR "<id>@<topic> is not exist!" for a queue
  the store does not have; SUCCESS without a body and the remark "Index <i> of <id>@<topic>
  is not exist!" for an index outside the queue.  rmq keeps no consume queue extension, so
  the entries' extension fields are never set, and no filter data (TAG subscriptions have
  none in Apache either: its filter data is written as ``null``).
* GET_ALL_PRODUCER_INFO: a ProducerTableInfo of every producer group's clients.

Sets and hash maps are written in the order Java's would iterate them
(:func:`~rmq.common.javahash.java_hash_order`) so that the bodies read as Apache's.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

from rmq.common.javahash import java_hash_order
from rmq.common.naming import SYSTEM_TOPIC_ORDER, reply_topic
from rmq.remoting.bodies import (
    ConsumeQueueData,
    ConsumeStats,
    ConsumeStatsList,
    GroupList,
    MessageQueue,
    OffsetWrapper,
    ProducerInfo,
    ProducerTableInfo,
    QueryConsumeQueueResponseBody,
    QueryConsumeTimeSpanBody,
    QueryCorrectionOffsetBody,
    QueueTimeSpan,
    TopicList,
)
from rmq.remoting.bodies.consumerinfo import in_hash_map_order
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, create_response
from rmq.remoting.connection import Connection, Handler
from rmq.remoting.headers import (
    CloneGroupOffsetRequestHeader,
    GetConsumeStatsInBrokerHeader,
    QueryConsumeQueueRequestHeader,
    QueryConsumeTimeSpanRequestHeader,
    QueryCorrectionOffsetHeader,
    QueryTopicConsumeByWhoRequestHeader,
)
from rmq.server.broker.offset.consumeroffset import TOPIC_GROUP_SEPARATOR
from rmq.store.consumequeue import iter_entries

if TYPE_CHECKING:
    from rmq.server.broker.context import BrokerContext

log = logging.getLogger("rmq.broker")

JAVA_LONG_MAX = 2**63 - 1
NO_FILTER_DATA = "null"
"""The filter data of an online group: Apache's TAG subscriptions have none, written as JSON."""
GROUP_TABLE_SIZE = 2048
"""Buckets of Apache's subscription group and consumer tables (``ConcurrentHashMap<>(1024)``)."""
OFFSET_TABLE_SIZE = 1024
"""Buckets of Apache's consumer offset table (``new ConcurrentHashMap<>(512)``)."""


def _success(body: bytes | None = None) -> RemotingCommand:
    return create_response(ResponseCode.SUCCESS, None, body=body)


def _is_blank(text: str) -> bool:
    """Java's ``UtilAll.isBlank`` of a present value."""
    return not text.strip()


def _hash_ordered(*parts: Iterable[str]) -> list[str]:
    """A Java HashSet filled from ``parts`` in turn, as it iterates."""
    return java_hash_order(name for part in parts for name in part)


class ConsumerQueryProcessor:
    """Serves the consumer and producer queries of one broker (see the module docstring)."""

    def __init__(self, context: BrokerContext) -> None:
        self.context = context

    def handlers(self) -> dict[int, Handler]:
        return {
            RequestCode.QUERY_TOPIC_CONSUME_BY_WHO: self.query_topic_consume_by_who,
            RequestCode.QUERY_CONSUME_TIME_SPAN: self.query_consume_time_span,
            RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER: self.get_system_topic_list,
            RequestCode.QUERY_CORRECTION_OFFSET: self.query_correction_offset,
            RequestCode.CLONE_GROUP_OFFSET: self.clone_group_offset,
            RequestCode.GET_BROKER_CONSUME_STATS: self.get_broker_consume_stats,
            RequestCode.QUERY_CONSUME_QUEUE: self.query_consume_queue,
            RequestCode.GET_ALL_PRODUCER_INFO: self.get_all_producer_info,
        }

    def _queue(self, topic: str, queue_id: int) -> MessageQueue:
        return MessageQueue(
            topic=topic, broker_name=self.context.broker_config.broker_name, queue_id=queue_id
        )

    def _offset_keys(self) -> list[tuple[str, str]]:
        """(topic, group) of every offset table entry, in the order Apache's table has them."""
        keys = self.context.consumer_offset_manager.offset_wrapper().offset_table
        split = (
            key.split(TOPIC_GROUP_SEPARATOR)
            for key in java_hash_order(keys, table_size=OFFSET_TABLE_SIZE)
        )
        return [(parts[0], parts[1]) for parts in split if len(parts) == 2]

    def _filtered_out(self, group: str, topic: str) -> bool:
        """Whether an online group no longer subscribes ``topic`` (its offsets there are
        skipped, as Apache's stats skip them)."""
        clients = self.context.client_manager
        return (
            clients.find_subscription(group, topic) is None
            and clients.subscription_count(group) > 0
        )

    # -- who consumes, and how far ---------------------------------------------------------

    async def query_topic_consume_by_who(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        topic = request.read_header(QueryTopicConsumeByWhoRequestHeader).topic
        online = java_hash_order(
            self.context.client_manager.groups_consuming(topic), table_size=GROUP_TABLE_SIZE
        )
        with_offsets = java_hash_order(group for of, group in self._offset_keys() if of == topic)
        groups = _hash_ordered(online, with_offsets)
        return _success(GroupList(group_list=groups).encode())

    async def query_consume_time_span(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = request.read_header(QueryConsumeTimeSpanRequestHeader)
        topic = header.topic
        config = self.context.topic_config_manager.select(topic)
        if config is None:
            return create_response(ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist")
        store = self.context.store
        offsets = self.context.consumer_offset_manager
        spans = []
        for queue_id in range(config.write_queue_nums):
            min_time = store.get_earliest_message_time(topic, queue_id)
            max_offset = store.get_max_offset_in_queue(topic, queue_id)
            consumer_offset = offsets.query(header.group, topic, queue_id)
            consume_time = min_time
            if consumer_offset > 0:
                consume_time = store.get_message_store_timestamp(
                    topic, queue_id, consumer_offset - 1
                )
            delay = 0
            if consumer_offset < max_offset:
                next_time = store.get_message_store_timestamp(topic, queue_id, consumer_offset)
                delay = self.context.clock() - next_time
            spans.append(
                QueueTimeSpan(
                    message_queue=self._queue(topic, queue_id),
                    min_time_stamp=min_time,
                    max_time_stamp=store.get_message_store_timestamp(
                        topic, queue_id, max_offset - 1
                    ),
                    consume_time_stamp=consume_time,
                    delay_time=delay,
                )
            )
        return _success(QueryConsumeTimeSpanBody(consume_time_span_set=spans).encode())

    async def get_system_topic_list(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        config = self.context.broker_config
        # the topics Apache's TopicConfigManager adds to the set, in its order
        broker_topics = [config.broker_cluster_name, config.broker_name]
        if config.trace_topic_enable:
            broker_topics.append(config.msg_trace_topic_name)
        broker_topics.append(reply_topic(config.broker_cluster_name))
        topics = _hash_ordered(SYSTEM_TOPIC_ORDER, broker_topics)
        return _success(TopicList(topic_list=topics).encode())

    async def get_broker_consume_stats(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        only_order = request.read_header(GetConsumeStatsInBrokerHeader).is_order
        groups = java_hash_order(
            self.context.subscription_group_manager.subscription_group_table,
            table_size=GROUP_TABLE_SIZE,
        )
        offset_keys = self._offset_keys()
        answer = ConsumeStatsList(broker_addr=self.context.broker_addr)
        for group in groups:
            group_stats = []
            for topic in java_hash_order(topic for topic, of in offset_keys if of == group):
                stats = self._topic_consume_stats(group, topic, only_order)
                if stats is not None:
                    answer.total_diff += sum(
                        wrapper.broker_offset - wrapper.consumer_offset
                        for wrapper in stats.offset_table.values()
                    )
                    group_stats.append(stats)
            answer.consume_stats_list.append({group: group_stats})
        return _success(answer.encode())

    def _topic_consume_stats(self, group: str, topic: str, only_order: bool) -> ConsumeStats | None:
        """A group's progress on each write queue of one topic; None when the topic is
        unknown, not an order topic while ``only_order``, or no longer subscribed."""
        config = self.context.topic_config_manager.select(topic)
        if config is None:
            log.warning("consumeStats, topic config not exist, %s", topic)
            return None
        if only_order and not config.order:
            return None
        if self._filtered_out(group, topic):
            log.warning("consumeStats, the consumer group[%s], topic[%s] not exist", group, topic)
            return None
        store = self.context.store
        offsets = self.context.consumer_offset_manager
        stats = ConsumeStats(consume_tps=self.context.stats.items.group_get_tps(group, topic))
        for queue_id in range(config.write_queue_nums):
            consumer_offset = max(offsets.query(group, topic, queue_id), 0)
            last_timestamp = 0
            if consumer_offset > 0:
                stored = store.get_message_store_timestamp(topic, queue_id, consumer_offset - 1)
                last_timestamp = max(stored, 0)
            stats.offset_table[self._queue(topic, queue_id)] = OffsetWrapper(
                broker_offset=max(store.get_max_offset_in_queue(topic, queue_id), 0),
                consumer_offset=consumer_offset,
                last_timestamp=last_timestamp,
            )
        stats.offset_table = in_hash_map_order(stats.offset_table)
        return stats

    # -- offsets -----------------------------------------------------------------------------

    async def query_correction_offset(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = request.read_header(QueryCorrectionOffsetHeader)
        filter_text = header.filter_groups
        filter_groups = (
            [] if filter_text is None or _is_blank(filter_text) else filter_text.split(",")
        )
        offsets = self.context.consumer_offset_manager
        correction = offsets.query_min_offset_in_all_groups(
            header.topic, filter_groups, self.context.store.get_min_offset_in_queue
        )
        compare = None
        if header.compare_group not in filter_groups:
            compare = offsets.query_offsets(header.compare_group, header.topic)
        for queue_id, offset in (compare or {}).items():
            lowest = correction.get(queue_id)
            if lowest is None:
                return create_response(
                    ResponseCode.SYSTEM_ERROR,
                    f"no group has an offset of queue {queue_id} of {header.topic} in the store",
                )
            correction[queue_id] = JAVA_LONG_MAX if lowest > offset else lowest
        body = QueryCorrectionOffsetBody(correction_offsets=dict(sorted(correction.items())))
        return _success(body.encode())

    async def clone_group_offset(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = request.read_header(CloneGroupOffsetRequestHeader)
        topic = header.topic
        if topic is None or _is_blank(topic):
            log.warning("[cloneGroupOffset] without a topic: nothing cloned")
            return _success()
        if self.context.topic_config_manager.select(topic) is None:
            log.warning("[cloneGroupOffset], topic config not exist, %s", topic)
        elif not header.offline and self._filtered_out(header.src_group, topic):
            log.warning(
                "[cloneGroupOffset], the consumer group[%s], topic[%s] not exist",
                header.src_group,
                topic,
            )
        else:
            self.context.consumer_offset_manager.clone_offset(
                header.src_group, header.dest_group, topic
            )
        return _success()

    # -- consume queues ----------------------------------------------------------------------

    async def query_consume_queue(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = request.read_header(QueryConsumeQueueRequestHeader)
        topic, queue_id = header.topic or "", header.queue_id
        queue = self.context.store.get_consume_queue(topic, queue_id)
        if queue is None:
            return create_response(ResponseCode.SYSTEM_ERROR, f"{queue_id}@{topic} is not exist!")
        body = QueryConsumeQueueResponseBody(
            max_queue_index=queue.max_offset, min_queue_index=queue.min_offset
        )
        group = header.consumer_group
        if group is not None:
            body.subscription_data = self.context.client_manager.find_subscription(group, topic)
            if body.subscription_data is None:
                body.filter_data = f"{group}@{topic} is not online!"
            else:
                body.filter_data = NO_FILTER_DATA
        view = queue.get_entries(header.index, max(header.count, 1))
        if view is None:
            return create_response(
                ResponseCode.SUCCESS,
                f"Index {header.index} of {queue_id}@{topic} is not exist!",
            )
        entries = list(iter_entries(view))[: max(header.count, 0)]
        body.queue_data = [
            ConsumeQueueData(physic_offset=offset, physic_size=size, tags_code=tags_code)
            for offset, size, tags_code in entries
        ]
        return _success(body.encode())

    # -- producers ---------------------------------------------------------------------------

    async def get_all_producer_info(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        table = self.context.client_manager.producer_table()
        body = ProducerTableInfo()
        for group in java_hash_order(table):
            body.data[group] = [
                ProducerInfo(
                    client_id=info.client_id,
                    remote_ip=f"/{info.channel.remote_addr}",
                    language=info.language,
                    version=info.version,
                    last_update_timestamp=info.last_update_timestamp,
                )
                for info in table[group]
            ]
        return _success(body.encode())
