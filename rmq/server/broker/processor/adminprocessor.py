"""The broker's admin requests: topics, groups, offsets, statistics and its own settings.

:class:`AdminProcessor` serves the requests ``mqadmin`` and rmq's admin commands send to a
broker, with Apache's response codes and remarks (``AdminBrokerProcessor``):

* Topics: UPDATE_AND_CREATE_TOPIC (the name is checked, system topics are refused with "The
  topic[<t>] is conflict with system topic.", the header's ``order`` is ignored as in 4.9.8,
  and the new topic is announced to the name servers through the topic manager's hook);
  DELETE_TOPIC_IN_BROKER (the topic config, then, as Apache's ``cleanUnusedTopic``, the
  consume queues of every topic the broker no longer has, except ``SCHEDULE_TOPIC_XXXX``,
  ``RMQ_SYS_TRANS_OP_HALF_TOPIC`` and LMQ topics; consumer offsets stay, and the name servers
  learn it from ``mqadmin``, which deletes the route there itself); GET_ALL_TOPIC_CONFIG;
  GET_TOPIC_STATS_INFO (each write queue's min/max offset and the store time of its newest
  message, or TOPIC_NOT_EXIST "topic[<t>] not exist").
* Subscription groups: UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, DELETE_SUBSCRIPTIONGROUP (with
  ``removeOffset`` the group's offsets go too), GET_ALL_SUBSCRIPTIONGROUP_CONFIG.  A slave
  refuses every topic and group change.
* Offsets and lookups: GET_ALL_CONSUMER_OFFSET, GET_ALL_DELAY_OFFSET (the schedule
  service's live progress per delay level), GET_CONSUME_STATS (per read queue
  the broker's max offset, the group's offset and the store time of the last consumed
  message, plus the group's consume TPS), GET_MAX_OFFSET, GET_MIN_OFFSET,
  GET_EARLIEST_MSG_STORETIME, SEARCH_OFFSET_BY_TIMESTAMP.
* Clients: GET_CONSUMER_CONNECTION_LIST (CONSUMER_NOT_ONLINE "the consumer group[<g>] not
  online") and GET_PRODUCER_CONNECTION_LIST (SYSTEM_ERROR "the producer group[<g>] not
  exist") from the client manager.
* Settings (:class:`rmq.common.configupdate.LiveSettings`): GET_BROKER_CONFIG answers every
  key of the broker, store and netty configs plus the keys of the ``-c`` file no config
  knows, as ``key=value`` lines, with the settings' data version (JSON) in the header.
  UPDATE_BROKER_CONFIG refuses black-listed keys (NO_PERMISSION "Can not update config in
  black list.") and, unlike Apache, which answers success and ignores them, unknown keys and
  values a key does not allow (SYSTEM_ERROR, a remark naming the key, value and what is
  allowed), changing nothing.  Otherwise it applies the keys that take effect at once, keeps
  the restart-only ones for GET_BROKER_CONFIG and the file, bumps that data version and
  writes all settings to the ``-c`` file (else ``<storePathRootDir>/config/
  broker.properties``); the success answer's remark has one line per key that does not
  take effect at once ("maxMessageSize takes effect after a restart").  A change of
  ``brokerPermission`` bumps the topic table's data version (so that the name servers take
  the new perm from the registration) and re-registers with them at once.
* GET_BROKER_RUNTIME_INFO: a KVTable with the 4.9.8 keys.  Values are real where rmq has
  them (versions, put/get totals and TPS, latency, commitlog offsets, disk ratios, boot time,
  earliest message time, unflushed bytes, disk capacity); thread-pool queue sizes and wait
  times are 0 because requests run on the event loop, not in queues.  A DLedger broker adds
  rmq's own keys ``dLegerSelfId``, ``dLegerRole``, ``dLegerTerm``, ``dLegerLeaderId`` and
  ``dLegerCommittedIndex`` (docs/spec-notes.md: Apache's broker has none of them).
* Every other request code gets REQUEST_CODE_NOT_SUPPORTED " request type <code> not
  supported" from :meth:`AdminProcessor.not_supported`, the broker's default handler.

Bodies are written as fastjson writes them (compact; MessageQueue keys as JSON objects).
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from rmq.common import javaprops
from rmq.common.config import (
    BrokerRole,
    ConfigBlackListError,
    ConfigError,
    broker_settings,
)
from rmq.common.delay import schedule_queue_id
from rmq.common.naming import RMQ_SYS_SCHEDULE_TOPIC
from rmq.common.recordwalk import store_timestamp_at
from rmq.remoting.bodies import (
    BodyError,
    ConsumeStats,
    DataVersion,
    KVTable,
    MessageQueue,
    OffsetWrapper,
    SubscriptionGroupConfig,
    TopicConfig,
    TopicFilterType,
    TopicOffset,
    TopicStatsTable,
)
from rmq.remoting.codes import MQVersion, RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, create_response, not_supported_response
from rmq.remoting.connection import Connection, Handler
from rmq.remoting.headers import (
    CreateTopicRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    DeleteTopicRequestHeader,
    GetAllTopicConfigResponseHeader,
    GetBrokerConfigResponseHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumeStatsRequestHeader,
    GetEarliestMsgStoretimeRequestHeader,
    GetEarliestMsgStoretimeResponseHeader,
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    GetMinOffsetRequestHeader,
    GetMinOffsetResponseHeader,
    GetProducerConnectionListRequestHeader,
    GetTopicStatsInfoRequestHeader,
    SearchOffsetRequestHeader,
    SearchOffsetResponseHeader,
)
from rmq.server.broker.processor.storeadmin import clean_unused_topics
from rmq.server.broker.topic.topicconfig import TopicConfigError
from rmq.store.cleanup import disk_used_ratio
from rmq.store.configfile import persist_config_text

if TYPE_CHECKING:
    from rmq.server.broker.context import BrokerContext

log = logging.getLogger("rmq.broker")

H = TypeVar("H")

SLAVE_REMARK = (
    "Can't modify topic or subscription group from slave broker, "
    "please execute it from master broker."
)
BLACK_LIST_REMARK = "Can not update config in black list."
NO_TRANSIENT_STORE_POOL = 2**31 - 1
"""``remainTransientStoreBufferNumbs`` without a transient store pool (Integer.MAX_VALUE)."""
_BROKER_PERMISSION = "brokerPermission"


def _success(header: object | None = None, body: bytes | None = None) -> RemotingCommand:
    return create_response(ResponseCode.SUCCESS, None, header, body=body)


def _error(remark: str) -> RemotingCommand:
    return create_response(ResponseCode.SYSTEM_ERROR, remark)


def _answer_header(header_type: type[H], answer: Callable[[H], object]) -> Handler:
    """A handler that decodes a ``header_type`` request and answers SUCCESS with the response
    header ``answer`` makes of it."""

    async def handle(connection: Connection, request: RemotingCommand) -> RemotingCommand:
        return _success(answer(request.read_header(header_type)))

    return handle


def human_readable_bytes(count: int) -> str:
    """``MixAll.humanReadableByteCount(count, false)``: ``"512 B"``, ``"1.5 KiB"``."""
    if count < 1024:
        return f"{count} B"
    exponent = 0
    value = float(count)
    while value >= 1024 and exponent < 6:
        value /= 1024
        exponent += 1
    return f"{value:.1f} {'KMGTPE'[exponent - 1]}iB"


class AdminProcessor:
    """Serves the admin request codes of one broker (see the module docstring)."""

    def __init__(self, context: BrokerContext) -> None:
        self.context = context
        self.config_version = DataVersion()
        self.settings = broker_settings(context.configs, context.file_properties)

    def handlers(self) -> dict[int, Handler]:
        return {
            RequestCode.UPDATE_AND_CREATE_TOPIC: self.update_and_create_topic,
            RequestCode.DELETE_TOPIC_IN_BROKER: self.delete_topic,
            RequestCode.GET_ALL_TOPIC_CONFIG: self.get_all_topic_config,
            RequestCode.GET_TOPIC_STATS_INFO: self.get_topic_stats_info,
            RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: self.update_and_create_group,
            RequestCode.DELETE_SUBSCRIPTIONGROUP: self.delete_subscription_group,
            RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: self.get_all_subscription_group,
            RequestCode.GET_ALL_CONSUMER_OFFSET: self.get_all_consumer_offset,
            RequestCode.GET_ALL_DELAY_OFFSET: self.get_all_delay_offset,
            RequestCode.GET_CONSUME_STATS: self.get_consume_stats,
            RequestCode.GET_CONSUMER_CONNECTION_LIST: self.get_consumer_connection_list,
            RequestCode.GET_PRODUCER_CONNECTION_LIST: self.get_producer_connection_list,
            **self._queue_lookups(),
            RequestCode.GET_BROKER_CONFIG: self.get_broker_config,
            RequestCode.UPDATE_BROKER_CONFIG: self.update_broker_config,
            RequestCode.GET_BROKER_RUNTIME_INFO: self.get_broker_runtime_info,
        }

    async def not_supported(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        """The default handler: REQUEST_CODE_NOT_SUPPORTED for a code nobody serves."""
        log.warning("%s sent %s, which the broker does not serve", connection, request.code_name)
        return not_supported_response(request)

    def _slave_refusal(self) -> RemotingCommand | None:
        if self.context.store_config.broker_role is BrokerRole.SLAVE:
            return _error(SLAVE_REMARK)
        return None

    # -- topics --------------------------------------------------------------------------

    async def update_and_create_topic(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        refusal = self._slave_refusal()
        if refusal is not None:
            return refusal
        header = request.read_header(CreateTopicRequestHeader)
        log.info("updateAndCreateTopic called by %s", connection.remote_addr)
        if header.topic_filter_type not in TopicFilterType.__members__:
            return _error(f"unknown topicFilterType {header.topic_filter_type!r}")
        config = TopicConfig(
            topic_name=header.topic,
            read_queue_nums=header.read_queue_nums,
            write_queue_nums=header.write_queue_nums,
            perm=header.perm,
            topic_filter_type=TopicFilterType[header.topic_filter_type],
            topic_sys_flag=header.topic_sys_flag or 0,
        )
        try:
            self.context.topic_config_manager.update(config)
        except TopicConfigError as exc:
            return _error(str(exc))
        return _success()

    async def delete_topic(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        refusal = self._slave_refusal()
        if refusal is not None:
            return refusal
        header = request.read_header(DeleteTopicRequestHeader)
        log.info("deleteTopic %s called by %s", header.topic, connection.remote_addr)
        manager = self.context.topic_config_manager
        try:
            manager.delete(header.topic)
        except TopicConfigError as exc:
            return _error(str(exc))
        clean_unused_topics(self.context)
        if self.context.broker_config.auto_delete_unused_stats:
            self.context.stats.items.topic_deleted(header.topic)
        return _success()

    async def get_all_topic_config(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        body = await self.context.topic_config_manager.encoded_body_async()
        return _success(GetAllTopicConfigResponseHeader(), body)

    async def get_topic_stats_info(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        topic = request.read_header(GetTopicStatsInfoRequestHeader).topic
        config = self.context.topic_config_manager.select(topic)
        if config is None:
            return create_response(ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist")
        store = self.context.store
        broker_name = self.context.broker_config.broker_name
        table = TopicStatsTable()
        for queue_id in range(config.write_queue_nums):
            max_offset = max(store.get_max_offset_in_queue(topic, queue_id), 0)
            last_update = 0
            if max_offset > 0:
                last_update = store.get_message_store_timestamp(topic, queue_id, max_offset - 1)
            queue = MessageQueue(topic=topic, broker_name=broker_name, queue_id=queue_id)
            table.offset_table[queue] = TopicOffset(
                min_offset=max(store.get_min_offset_in_queue(topic, queue_id), 0),
                max_offset=max_offset,
                last_update_timestamp=last_update,
            )
        return _success(body=table.encode())

    # -- subscription groups -------------------------------------------------------------

    async def update_and_create_group(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        refusal = self._slave_refusal()
        if refusal is not None:
            return refusal
        log.info("updateAndCreateSubscriptionGroup called by %s", connection.remote_addr)
        if not request.body:
            return _error("the request has no SubscriptionGroupConfig body")
        try:
            config = SubscriptionGroupConfig.decode(request.body)
        except BodyError as exc:
            return _error(str(exc))
        self.context.subscription_group_manager.update(config)
        return _success()

    async def delete_subscription_group(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        refusal = self._slave_refusal()
        if refusal is not None:
            return refusal
        header = request.read_header(DeleteSubscriptionGroupRequestHeader)
        log.info("deleteSubscriptionGroup %s called by %s", header.group_name, connection)
        self.context.subscription_group_manager.delete(header.group_name)
        if header.remove_offset:
            self.context.consumer_offset_manager.remove_group(header.group_name)
        if self.context.broker_config.auto_delete_unused_stats:
            self.context.stats.items.group_deleted(header.group_name)
        return _success()

    async def get_all_subscription_group(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        body = await self.context.subscription_group_manager.encoded_body_async()
        return _success(body=body)

    # -- offsets -------------------------------------------------------------------------

    async def get_all_consumer_offset(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        return _success(body=self.context.consumer_offset_manager.offset_wrapper().encode())

    async def get_all_delay_offset(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        return _success(body=self.context.schedule_service.encode())

    async def get_consume_stats(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = request.read_header(GetConsumeStatsRequestHeader)
        group = header.consumer_group
        context = self.context
        offsets = context.consumer_offset_manager
        store = context.store
        broker_name = context.broker_config.broker_name
        if header.topic and header.topic.strip():
            topics: set[str] | list[str] = [header.topic]
        else:
            topics = offsets.topics_of_group(group)
        stats = ConsumeStats()
        for topic in topics:
            config = context.topic_config_manager.select(topic)
            if config is None:
                log.warning("consumeStats, topic config not exist, %s", topic)
                continue
            if (
                context.client_manager.find_subscription(group, topic) is None
                and context.client_manager.subscription_count(group) > 0
            ):
                log.warning(
                    "consumeStats, the consumer group[%s], topic[%s] not exist", group, topic
                )
                continue
            for queue_id in range(config.read_queue_nums):
                consumer_offset = max(offsets.query(group, topic, queue_id), 0)
                last_timestamp = 0
                if consumer_offset > 0:
                    stored = store.get_message_store_timestamp(topic, queue_id, consumer_offset - 1)
                    last_timestamp = max(stored, 0)
                queue = MessageQueue(topic=topic, broker_name=broker_name, queue_id=queue_id)
                stats.offset_table[queue] = OffsetWrapper(
                    broker_offset=max(store.get_max_offset_in_queue(topic, queue_id), 0),
                    consumer_offset=consumer_offset,
                    last_timestamp=last_timestamp,
                )
            stats.consume_tps += context.stats.items.group_get_tps(group, topic)
        return _success(body=stats.encode())

    def _queue_lookups(self) -> dict[int, Handler]:
        """The requests answered by one store lookup of a queue, in a response header."""
        store = self.context.store

        def max_offset(header: GetMaxOffsetRequestHeader) -> object:
            offset = store.get_max_offset_in_queue(header.topic, header.queue_id)
            return GetMaxOffsetResponseHeader(offset=offset)

        def min_offset(header: GetMinOffsetRequestHeader) -> object:
            offset = store.get_min_offset_in_queue(header.topic, header.queue_id)
            return GetMinOffsetResponseHeader(offset=offset)

        def earliest_time(header: GetEarliestMsgStoretimeRequestHeader) -> object:
            timestamp = store.get_earliest_message_time(header.topic, header.queue_id)
            return GetEarliestMsgStoretimeResponseHeader(timestamp=timestamp)

        def offset_by_time(header: SearchOffsetRequestHeader) -> object:
            offset = store.get_offset_in_queue_by_time(
                header.topic, header.queue_id, header.timestamp
            )
            return SearchOffsetResponseHeader(offset=offset)

        return {
            RequestCode.GET_MAX_OFFSET: _answer_header(GetMaxOffsetRequestHeader, max_offset),
            RequestCode.GET_MIN_OFFSET: _answer_header(GetMinOffsetRequestHeader, min_offset),
            RequestCode.GET_EARLIEST_MSG_STORETIME: _answer_header(
                GetEarliestMsgStoretimeRequestHeader, earliest_time
            ),
            RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: _answer_header(
                SearchOffsetRequestHeader, offset_by_time
            ),
        }

    # -- clients -------------------------------------------------------------------------

    async def get_consumer_connection_list(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        group = request.read_header(GetConsumerConnectionListRequestHeader).consumer_group
        body = self.context.client_manager.consumer_connection(group)
        if body is None:
            return create_response(
                ResponseCode.CONSUMER_NOT_ONLINE, f"the consumer group[{group}] not online"
            )
        return _success(body=body.encode())

    async def get_producer_connection_list(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        group = request.read_header(GetProducerConnectionListRequestHeader).producer_group
        body = self.context.client_manager.producer_connection(group)
        if body is None:
            return _error(f"the producer group[{group}] not exist")
        return _success(body=body.encode())

    # -- the broker's settings -----------------------------------------------------------

    def config_properties(self) -> dict[str, str]:
        """Every setting as Java keys and text: the ``-c`` file's extra keys, then the
        broker, netty and store configs, with the restart-only changes over them."""
        return self.settings.properties()

    async def get_broker_config(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        settings = self.config_properties()
        # Java's storePathCommitLog always has a value: show the directory in use when unset
        settings.setdefault("storePathCommitLog", self.context.store_config.commit_log_dir)
        body = javaprops.dumps(settings).encode("utf-8")
        version = self.config_version.encode().decode("utf-8")
        return _success(GetBrokerConfigResponseHeader(version=version), body)

    async def update_broker_config(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        log.info("updateBrokerConfig called by %s", connection.remote_addr)
        if not request.body:
            return _success()
        try:
            props = javaprops.loads(bytes(request.body).decode("utf-8"))
        except (UnicodeDecodeError, javaprops.PropertiesSyntaxError) as exc:
            return _error(f"string2Properties error: {exc}")
        context = self.context
        try:
            notes = self.settings.update(props)
        except ConfigBlackListError as exc:
            log.warning("updateBrokerConfig from %s refused: %s", connection.remote_addr, exc)
            return create_response(ResponseCode.NO_PERMISSION, BLACK_LIST_REMARK)
        except ConfigError as exc:
            log.warning("updateBrokerConfig from %s refused: %s", connection.remote_addr, exc)
            return _error(str(exc))
        log.info("updateBrokerConfig, new config: %s, client: %s", props, connection.remote_addr)
        for note in notes:
            log.info("updateBrokerConfig: %s", note)
        self.config_version = self.config_version.next_version()
        path = context.config_path
        try:
            persist_config_text(path, javaprops.dumps(self.config_properties()))
        except OSError as exc:
            log.error("updateBrokerConfig: cannot persist the config to %s: %s", path, exc)
            return _error(f"config updated in memory but not persisted to {path}: {exc.strerror}")
        if _BROKER_PERMISSION in props:
            context.topic_config_manager.next_data_version()
            context.register_broker()
        return create_response(ResponseCode.SUCCESS, "\n".join(notes) or None)

    # -- runtime info --------------------------------------------------------------------

    async def get_broker_runtime_info(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        return _success(body=KVTable(table=self.runtime_info()).encode())

    def runtime_info(self) -> dict[str, str]:
        """GET_BROKER_RUNTIME_INFO's table (Apache's keys, all values as text)."""
        context = self.context
        config = context.broker_config
        store = context.store
        layout = store.layout
        info = context.stats.runtime_info()
        commitlog_ratio = repr(disk_used_ratio(str(layout.commitlog)))
        info[f"commitLogDiskRatio_{layout.commitlog}"] = commitlog_ratio
        info["commitLogDiskRatio"] = commitlog_ratio
        info["consumeQueueDiskRatio"] = repr(disk_used_ratio(str(layout.consume_queue_root)))
        for level, offset in context.schedule_service.offset_table().items():
            schedule_max = store.get_max_offset_in_queue(
                RMQ_SYS_SCHEDULE_TOPIC, schedule_queue_id(level)
            )
            info[f"scheduleMessageOffset_{level}"] = f"{offset},{schedule_max}"
        info["commitLogMinOffset"] = str(store.min_physical_offset())
        info["commitLogMaxOffset"] = str(store.max_physical_offset())
        info.update(context.ha_service.runtime_info())
        if context.dledger_runtime is not None:
            info.update(context.dledger_runtime())
        info["brokerVersionDesc"] = MQVersion.V4_9_8.name
        info["brokerVersion"] = str(MQVersion.V4_9_8.value)
        info["sendThreadPoolQueueSize"] = "0"
        info["sendThreadPoolQueueCapacity"] = str(config.send_thread_pool_queue_capacity)
        info["pullThreadPoolQueueSize"] = "0"
        info["pullThreadPoolQueueCapacity"] = str(config.pull_thread_pool_queue_capacity)
        info["queryThreadPoolQueueSize"] = "0"
        info["queryThreadPoolQueueCapacity"] = str(config.query_thread_pool_queue_capacity)
        info["EndTransactionQueueSize"] = "0"
        info["EndTransactionThreadPoolQueueCapacity"] = str(
            config.end_transaction_pool_queue_capacity
        )
        info["dispatchBehindBytes"] = "0"
        info["pageCacheLockTimeMills"] = "0"
        info["sendThreadPoolQueueHeadWaitTimeMills"] = "0"
        info["pullThreadPoolQueueHeadWaitTimeMills"] = "0"
        info["queryThreadPoolQueueHeadWaitTimeMills"] = "0"
        info["earliestMessageTimeStamp"] = str(self.earliest_message_time())
        info["startAcceptSendRequestTimeStamp"] = str(config.start_accept_send_request_time_stamp)
        info["remainTransientStoreBufferNumbs"] = str(NO_TRANSIENT_STORE_POOL)
        unflushed = store.max_physical_offset() - store.get_flushed_where()
        info["remainHowManyDataToFlush"] = human_readable_bytes(max(unflushed, 0))
        if layout.root.exists():
            usage = shutil.disk_usage(layout.root)
            info["commitLogDirCapacity"] = (
                f"Total : {human_readable_bytes(usage.total)}, "
                f"Free : {human_readable_bytes(usage.free)}."
            )
        return info

    def earliest_message_time(self) -> int:
        """Store time of the oldest message in the commitlog, -1 when there is none.

        As Apache's ``DefaultMessageStore.getEarliestMessageTime``, which reads
        ``2 * maxMessageSize`` bytes at the commitlog's minimum offset: it is -1 as long as
        that much is not written in the first file (a young broker's `clusterList` shows the
        hours since 1970 in its ``#Hour`` column).
        """
        store = self.context.store
        min_offset = store.min_physical_offset()
        if min_offset < 0:
            return -1
        size = 2 * self.context.store_config.max_message_size
        if store.select_one_message_by_offset(min_offset, size) is None:
            return -1
        record = store.select_one_message_by_offset(min_offset)
        return -1 if record is None else store_timestamp_at(record, 0)
