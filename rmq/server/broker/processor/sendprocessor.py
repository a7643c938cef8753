"""The broker's send path: SEND_MESSAGE (10), SEND_MESSAGE_V2 (310) and SEND_BATCH_MESSAGE
(320); CONSUMER_SEND_MSG_BACK (36) is ``sendback.py``, which shares the checks below.

A send request is checked, turned into one :class:`~rmq.store.putmessage.InnerMessage` and put
on the store on the event-loop thread (a put is a short memory copy under the commitlog
lock).  The header arrives in the long form (10) or with the V2 short keys ``a``..``n``
(310, 320); ``RemotingCommand.read_header`` decodes both into one
``SendMessageRequestHeader``.  As in Apache, the header's ``batch`` flag (V2 key ``m``), not
the request code, decides between the single and the batch path.

Checks, in Apache's order, each answered with Apache's code and remark (spec §1.8, §2.2):

1. ``startAcceptSendRequestTimeStamp`` not reached -> SYSTEM_ERROR.
2. The broker lacks the WRITE perm and the topic is an order topic -> NO_PERMISSION (other
   topics are still accepted, and the topic's own perm is not checked on the send path).
3. Invalid topic name -> SYSTEM_ERROR with :func:`rmq.common.naming.topic_error`'s text; a
   send-forbidden system topic -> NO_PERMISSION.
4. Unknown topic: created from the request's ``defaultTopic`` template when it carries the
   INHERIT perm (``TopicConfigManager.create_in_send_message``); an unknown ``%RETRY%``
   topic is created with one queue, perm RW; otherwise TOPIC_NOT_EXIST.  A created topic is
   announced to the name servers through the manager's registration hook.
5. ``queueId >= max(readQueueNums, writeQueueNums)`` -> SYSTEM_ERROR; a negative queue id
   picks ``random % writeQueueNums``.

Single messages then follow Apache's rewrite rules: a ``%RETRY%<group>`` message whose
reconsume times reached the group's maximum goes to ``%DLQ%<group>`` queue 0; the property
``CLUSTER`` (the broker's cluster name) is added; a ``TRAN_MSG=true`` message becomes a half
message of ``RMQ_SYS_TRANS_HALF_TOPIC`` queue 0 (spec §5.5) unless
``rejectTransactionMessage`` is set; a message with a delay level is parked by the store in
``SCHEDULE_TOPIC_XXXX``.  The stored property string leaves ``WAIT`` out, except where Apache
rebuilds the string from the whole property map (half and delayed messages), which keeps it.
The MULTI_TAGS sysFlag bit is set for MULTI_TAG topics.  Batches carry the request body as
is; the store walks it and appends the header's properties plus ``CLUSTER`` to each inner
message's own (spec §3.8).  A ``DELAY`` property that is not a number is answered
MESSAGE_ILLEGAL (Apache fails with a NumberFormatException, i.e. SYSTEM_ERROR, which its
producers retry in vain).

Half messages are stored exactly where Apache stores them; END_TRANSACTION and the
transaction check service (``transaction.py``, ``transactioncheck.py``) commit or roll them
back, and the schedule
service (``schedule.py``) delivers parked delayed messages when they are due.

When the store flushes synchronously (SYNC_FLUSH) and the producer waits (``WAIT`` absent or
true), the answer waits for the group commit that covers the message; a flush that takes
longer than ``syncFlushTimeout`` is answered FLUSH_DISK_TIMEOUT, which clients treat as a
send that happened (the wait is the store's ``request_flush`` callback turned into an
awaitable).  A SYNC_MASTER's answer also waits for a slave to hold the message
(:meth:`~rmq.server.broker.ha.service.HAService.wait_replica`: FLUSH_SLAVE_TIMEOUT after
``slaveTimeout``, SLAVE_NOT_AVAILABLE without a slave in reach), the message stored either way.
Every put, stored or not, is counted in the broker's stats.  Every send answer,
error or not, carries the extFields ``MSG_REGION`` and ``TRACE_ON`` (Java clients read them
without a null check); a successful one also ``msgId`` (the offset message id, comma-joined
for a batch), ``queueId`` (the queue resolved from the request) and ``queueOffset``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import random
import threading
import time
from dataclasses import dataclass

from rmq.common.config import BrokerRole
from rmq.common.faq import APPLY_TOPIC_URL, SUBSCRIPTION_GROUP_NOT_EXIST, suggest_todo
from rmq.common.javahash import tags_code
from rmq.common.msgconst import (
    PROPERTY_CLUSTER,
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_KEYS,
    PROPERTY_MSG_REGION,
    PROPERTY_REAL_QUEUE_ID,
    PROPERTY_REAL_TOPIC,
    PROPERTY_TAGS,
    PROPERTY_TRACE_SWITCH,
    PROPERTY_TRANSACTION_PREPARED,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
    PROPERTY_WAIT_STORE_MSG_OK,
)
from rmq.common.msgid import pack_host
from rmq.common.naming import (
    RETRY_GROUP_TOPIC_PREFIX,
    RMQ_SYS_TRANS_HALF_TOPIC,
    dlq_topic,
    is_retry_topic,
    is_send_forbidden,
    send_forbidden_error,
    topic_error,
)
from rmq.common.perm import PERM_READ, PERM_WRITE, is_writeable, perm_to_string
from rmq.common.properties import decode_properties, encode_properties_bytes
from rmq.common.sysflag import (
    MULTI_TAGS_FLAG,
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_NOT_TYPE,
    build_topic_sys_flag,
    transaction_type,
    with_transaction_type,
)
from rmq.common.timeutil import now_millis
from rmq.remoting.bodies import SubscriptionGroupConfig, TopicConfig, TopicFilterType
from rmq.remoting.codes import MQVersion, RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, create_response
from rmq.remoting.connection import Connection, Handler
from rmq.remoting.headers import (
    SendMessageRequestHeader,
    SendMessageResponseHeader,
)
from rmq.server.broker.context import BrokerContext
from rmq.server.broker.stats.stats import BrokerStats
from rmq.server.broker.subscription.subscriptiongroup import SubscriptionGroupManager
from rmq.store.cleanup import disk_used_ratio
from rmq.store.putmessage import InnerMessage, PutMessageResult, PutMessageStatus
from rmq.store.store import MessageStore

log = logging.getLogger("rmq.broker")

DLQ_NUMS_PER_GROUP = 1
"""Queues of a ``%DLQ%<group>`` topic."""

_RANDOM_BOUND = 99_999_999
PERM_RW = PERM_READ | PERM_WRITE
"""The perm of the topics the broker creates for itself (retry, dead-letter, half)."""
_DLEDGER_REFUSES = "this broker's DLedger commitlog does not take delayed messages or batches yet"


class SendRefused(Exception):
    """A send answered with an error before anything was stored."""

    def __init__(self, code: int, remark: str) -> None:
        super().__init__(remark)
        self.code = code
        self.remark = remark


def random_queue_id(queue_nums: int) -> int:
    """Apache's pick for a request without a queue id: ``random(99999999) % queue_nums``."""
    return random.randrange(_RANDOM_BOUND) % queue_nums


@functools.lru_cache(maxsize=4096)
def _born_host(address: tuple[str, int]) -> bytes:
    """The packed producer address of a connection (8 bytes, or 20 for IPv6)."""
    return pack_host(address[0], address[1])


def _java_bool(value: str | None) -> bool:
    """Java's ``Boolean.parseBoolean``."""
    return value is not None and value.lower() == "true"


def wait_store_msg_ok(properties: dict[str, str]) -> bool:
    """Whether the producer waits for the flush: ``WAIT`` absent or true."""
    value = properties.get(PROPERTY_WAIT_STORE_MSG_OK)
    return value is None or _java_bool(value)


def delay_level_of(properties: dict[str, str]) -> int:
    """The ``DELAY`` property as a level (0 when absent); a non-number refuses the send."""
    value = properties.get(PROPERTY_DELAY_TIME_LEVEL)
    if value is None:
        return 0
    try:
        return int(value)
    except ValueError:
        raise SendRefused(
            ResponseCode.MESSAGE_ILLEGAL, f"the delay level {value!r} is not a number"
        ) from None


def max_reconsume_times(
    version: int, requested: int | None, group_config: SubscriptionGroupConfig
) -> int:
    """The group's ``retryMaxTimes``, or the client's own limit from version 3.4.9 on."""
    if version >= MQVersion.V3_4_9 and requested is not None:
        return requested
    return group_config.retry_max_times


def java_topic_config_text(config: TopicConfig) -> str:
    """``TopicConfig.toString()`` as Java writes it (part of an error remark)."""
    return (
        f"TopicConfig [topicName={config.topic_name}, readQueueNums={config.read_queue_nums}, "
        f"writeQueueNums={config.write_queue_nums}, perm={perm_to_string(config.perm)}, "
        f"topicFilterType={config.topic_filter_type.name}, "
        f"topicSysFlag={config.topic_sys_flag}, order={str(config.order).lower()}]"
    )


def java_time_text(millis: int) -> str:
    """``UtilAll.timeMillisToHumanString2``: local time as ``yyyy-MM-dd HH:mm:ss,SSS``."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(millis / 1000)) + (
        f",{millis % 1000:03d}"
    )


def subscription_group(groups: SubscriptionGroupManager, group: str) -> SubscriptionGroupConfig:
    """The settings of ``group`` (auto-created when allowed); SendRefused when unknown."""
    config = groups.find(group, auto_create=True)
    if config is None:
        raise SendRefused(
            ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
            f"subscription group not exist, {group} " + suggest_todo(SUBSCRIPTION_GROUP_NOT_EXIST),
        )
    return config


def count_put(stats: BrokerStats, result: PutMessageResult, started: float) -> None:
    """Count a put, stored or not, that began at ``started`` (``time.monotonic()``)."""
    stats.on_put(result, int((time.monotonic() - started) * 1000))


async def await_flush(store: MessageStore, result: PutMessageResult) -> PutMessageStatus:
    """PUT_OK once ``result``'s records are flushed, FLUSH_DISK_TIMEOUT if that took longer
    than ``syncFlushTimeout``: the store's flush-thread callback as an awaitable."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[PutMessageStatus] = loop.create_future()
    loop_thread = threading.get_ident()

    def flushed(status: PutMessageStatus) -> None:
        if threading.get_ident() == loop_thread:  # delivered by the broker's hand-off
            _settle(done, status)
            return
        try:
            loop.call_soon_threadsafe(_settle, done, status)
        except RuntimeError:
            log.debug("flush of %s completed after the event loop closed", result)

    store.request_flush(result, flushed)
    return await done


async def await_durable(context: BrokerContext, result: PutMessageResult) -> PutMessageStatus:
    """The status of a stored put whose producer waits: SYNC_FLUSH waits for the flush and
    SYNC_MASTER for a slave, both at once; a failed replication outranks a failed flush (as
    Apache combines them)."""
    store = context.store
    sync_master = context.store_config.broker_role is BrokerRole.SYNC_MASTER
    if not sync_master:
        return await await_flush(store, result) if store.sync_flush else PutMessageStatus.PUT_OK
    replica = context.ha_service.wait_replica(result.next_offset)
    if not store.sync_flush:
        return await replica
    flushed, replicated = await asyncio.gather(await_flush(store, result), replica)
    return replicated if replicated is not PutMessageStatus.PUT_OK else flushed


def _settle(future: asyncio.Future[PutMessageStatus], status: PutMessageStatus) -> None:
    if not future.done():
        future.set_result(status)


@dataclass(slots=True)
class _Send:
    """A checked send request as the put paths take it."""

    connection: Connection
    version: int
    header: SendMessageRequestHeader
    body: bytes | memoryview
    topic_config: TopicConfig
    queue_id: int
    """Resolved: a negative queue id of the request has become a random one."""
    properties: dict[str, str]
    delay_level: int


class SendMessageProcessor:
    """Serves the send requests of one broker."""

    def __init__(self, context: BrokerContext) -> None:
        self.context = context

    def handlers(self) -> dict[int, Handler]:
        return {
            RequestCode.SEND_MESSAGE: self.send_message,
            RequestCode.SEND_MESSAGE_V2: self.send_message,
            RequestCode.SEND_BATCH_MESSAGE: self.send_message,
        }

    # -- send ----------------------------------------------------------------------------

    async def send_message(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = request.read_header(SendMessageRequestHeader)
        body = memoryview(request.body) if request.body is not None else b""
        started = time.monotonic()
        try:
            topic_config = self._check(connection, header)
            queue_id = header.queue_id
            if queue_id < 0:
                queue_id = random_queue_id(topic_config.write_queue_nums)
            properties = decode_properties(header.properties or "")
            properties[PROPERTY_CLUSTER] = self.context.broker_config.broker_cluster_name
            wait = wait_store_msg_ok(properties)
            send = _Send(
                connection,
                request.version,
                header,
                body,
                topic_config,
                queue_id,
                properties,
                delay_level_of(properties),
            )
            dledger_put = self.context.dledger_put
            if dledger_put is not None:
                if header.batch or send.delay_level > 0:
                    raise SendRefused(ResponseCode.SYSTEM_ERROR, _DLEDGER_REFUSES)
                result = await dledger_put(self._single(send))
            elif header.batch:
                result = self._put_batch(send)
            else:
                result = self.context.store.put_message(self._single(send))
        except SendRefused as refused:
            return self._send_response(refused.code, refused.remark)
        status = result.status
        # With DLedger a PUT_OK is already held by a majority of the group.
        if status is PutMessageStatus.PUT_OK and wait and dledger_put is None:
            status = await await_durable(self.context, result)
        count_put(self.context.stats, result, started)
        if result.ok:
            self.context.stats.items.put(
                result.topic, result.queue_id, result.msg_num, result.wrote_bytes
            )
        return self._answer_put(status, result, queue_id)

    def _check(self, connection: Connection, header: SendMessageRequestHeader) -> TopicConfig:
        """Apache's pre-send checks; the topic's config (created if allowed) or SendRefused."""
        broker_config = self.context.broker_config
        manager = self.context.topic_config_manager
        topic = header.topic
        start = broker_config.start_accept_send_request_time_stamp
        if start > 0 and now_millis() < start:
            raise SendRefused(
                ResponseCode.SYSTEM_ERROR,
                f"broker unable to service, until {java_time_text(start)}",
            )
        if not is_writeable(broker_config.broker_permission) and manager.is_order_topic(topic):
            raise SendRefused(
                ResponseCode.NO_PERMISSION,
                f"the broker[{broker_config.broker_ip1}] sending message is forbidden",
            )
        error = topic_error(topic)
        if error is not None:
            raise SendRefused(ResponseCode.SYSTEM_ERROR, error)
        if is_send_forbidden(topic):
            raise SendRefused(ResponseCode.NO_PERMISSION, send_forbidden_error(topic))
        config = manager.select(topic) or self._create_topic(connection, header)
        valid = max(config.write_queue_nums, config.read_queue_nums)
        if header.queue_id >= valid:
            raise SendRefused(
                ResponseCode.SYSTEM_ERROR,
                f"request queueId[{header.queue_id}] is illegal, "
                f"{java_topic_config_text(config)} Producer: {connection.remote_addr}",
            )
        return config

    def _create_topic(
        self, connection: Connection, header: SendMessageRequestHeader
    ) -> TopicConfig:
        """Auto-create an unknown topic from its template, or a ``%RETRY%`` topic as is."""
        manager = self.context.topic_config_manager
        topic = header.topic
        retry = is_retry_topic(topic)
        topic_sys_flag = build_topic_sys_flag(
            unit=header.unit_mode and not retry, unit_sub=header.unit_mode and retry
        )
        log.warning("the topic %s does not exist, producer %s", topic, connection.remote_addr)
        config, _ = manager.create_in_send_message(
            topic,
            header.default_topic,
            connection.remote_addr,
            header.default_topic_queue_nums,
            topic_sys_flag,
        )
        if config is None and retry:
            config = manager.create_retry_topic_if_absent(topic, 1, PERM_RW, topic_sys_flag)
        if config is None:
            raise SendRefused(
                ResponseCode.TOPIC_NOT_EXIST,
                f"topic[{topic}] not exist, apply first please!{suggest_todo(APPLY_TOPIC_URL)}",
            )
        return config

    def _single(self, send: _Send) -> InnerMessage:
        header, properties, delay_level = send.header, send.properties, send.delay_level
        topic, queue_id, topic_config = header.topic, send.queue_id, send.topic_config
        reconsume_times = header.reconsume_times or 0
        if is_retry_topic(topic):
            dlq_config = self._dead_letter_topic(topic, send.version, header, reconsume_times)
            if dlq_config is not None:
                topic, queue_id, topic_config = dlq_config.topic_name, 0, dlq_config
        sys_flag = self._sys_flag(header.sys_flag, topic_config)
        if _java_bool(properties.get(PROPERTY_TRANSACTION_PREPARED)):
            topic, queue_id, sys_flag = self._half_message(topic, queue_id, sys_flag, properties)
            properties_bytes = encode_properties_bytes(properties)
        elif delay_level > 0 and transaction_type(sys_flag) in (
            TRANSACTION_NOT_TYPE,
            TRANSACTION_COMMIT_TYPE,
        ):
            # The store rebuilds the string of a parked message; Apache's rebuild keeps WAIT.
            properties_bytes = encode_properties_bytes(properties)
        else:
            properties.pop(PROPERTY_WAIT_STORE_MSG_OK, None)
            properties_bytes = encode_properties_bytes(properties)
        message = InnerMessage(
            topic,
            queue_id,
            send.body,
            properties_bytes,
            tags_code(properties.get(PROPERTY_TAGS)),
            properties.get(PROPERTY_KEYS),
            properties.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX),
            header.flag,
            sys_flag,
            header.born_timestamp,
            _born_host(send.connection.remote_address),
            reconsume_times,
            0,
            delay_level,
        )
        return message

    def _put_batch(self, send: _Send) -> PutMessageResult:
        header = send.header
        batch = InnerMessage(
            header.topic,
            send.queue_id,
            send.body,
            encode_properties_bytes(send.properties),
            flag=header.flag,
            sys_flag=self._sys_flag(header.sys_flag, send.topic_config),
            born_timestamp=header.born_timestamp,
            born_host=_born_host(send.connection.remote_address),
            reconsume_times=header.reconsume_times or 0,
            delay_level=send.delay_level,
        )
        return self.context.store.put_messages(batch)

    @staticmethod
    def _sys_flag(sys_flag: int, topic_config: TopicConfig) -> int:
        if topic_config.topic_filter_type is TopicFilterType.MULTI_TAG:
            return sys_flag | MULTI_TAGS_FLAG
        return sys_flag

    def _dead_letter_topic(
        self,
        topic: str,
        version: int,
        header: SendMessageRequestHeader,
        reconsume_times: int,
    ) -> TopicConfig | None:
        """The DLQ config when a ``%RETRY%<group>`` message has used up its retries."""
        group = topic[len(RETRY_GROUP_TOPIC_PREFIX) :]
        group_config = subscription_group(self.context.subscription_group_manager, group)
        if reconsume_times < max_reconsume_times(version, header.max_reconsume_times, group_config):
            return None
        return self.context.topic_config_manager.create_retry_topic_if_absent(
            dlq_topic(group), DLQ_NUMS_PER_GROUP, PERM_RW
        )

    def _half_message(
        self, topic: str, queue_id: int, sys_flag: int, properties: dict[str, str]
    ) -> tuple[str, int, int]:
        """Topic, queue and sysFlag of a transactional half message (``properties`` gains
        ``REAL_TOPIC`` and ``REAL_QID``)."""
        broker_config = self.context.broker_config
        if broker_config.reject_transaction_message:
            raise SendRefused(
                ResponseCode.NO_PERMISSION,
                f"the broker[{broker_config.broker_ip1}] sending transaction message is forbidden",
            )
        properties[PROPERTY_REAL_TOPIC] = topic
        properties[PROPERTY_REAL_QUEUE_ID] = str(queue_id)
        self.context.topic_config_manager.create_retry_topic_if_absent(
            RMQ_SYS_TRANS_HALF_TOPIC, 1, PERM_RW
        )
        return (
            RMQ_SYS_TRANS_HALF_TOPIC,
            0,
            with_transaction_type(sys_flag, TRANSACTION_NOT_TYPE),
        )

    # -- answers -------------------------------------------------------------------------

    def _send_response(
        self,
        code: int,
        remark: str | None,
        header: SendMessageResponseHeader | None = None,
    ) -> RemotingCommand:
        """A send answer: the response header (if any), then MSG_REGION and TRACE_ON."""
        broker_config = self.context.broker_config
        response = create_response(code, remark, header)
        response.add_ext_field(PROPERTY_MSG_REGION, broker_config.region_id)
        response.add_ext_field(PROPERTY_TRACE_SWITCH, "true" if broker_config.trace_on else "false")
        return response

    def _answer_put(
        self, status: PutMessageStatus, result: PutMessageResult, queue_id: int
    ) -> RemotingCommand:
        stored = _STORED_ANSWERS.get(status)
        if stored is not None:
            header = SendMessageResponseHeader(
                msg_id=result.msg_id, queue_id=queue_id, queue_offset=result.queue_offset
            )
            return self._send_response(stored, None, header)
        code, remark = self._failure(status)
        return self._send_response(code, remark)

    def _failure(self, status: PutMessageStatus) -> tuple[int, str]:
        """Code and remark of a put that stored nothing (spec §1.8)."""
        if status is PutMessageStatus.CREATE_MAPPED_FILE_FAILED:
            return ResponseCode.SYSTEM_ERROR, "create mapped file failed, server is busy or broken."
        if status in (PutMessageStatus.MESSAGE_ILLEGAL, PutMessageStatus.PROPERTIES_SIZE_EXCEEDED):
            return (
                ResponseCode.MESSAGE_ILLEGAL,
                "the message is illegal, maybe msg body or properties length not matched. "
                f"msg body length limit {self.context.store_config.max_message_size}B, "
                "msg properties length limit 32KB.",
            )
        if status is PutMessageStatus.SERVICE_NOT_AVAILABLE:
            return (
                ResponseCode.SERVICE_NOT_AVAILABLE,
                "service not available now. It may be caused by one of the following reasons: "
                f"the broker's disk is full [{self._disk_usage()}], messages are put to the "
                "slave, message store has been shut down, etc.",
            )
        if status is PutMessageStatus.OS_PAGECACHE_BUSY:
            return (
                ResponseCode.SYSTEM_ERROR,
                "[PC_SYNCHRONIZED]broker busy, start flow control for a while",
            )
        if status is PutMessageStatus.UNKNOWN_ERROR:
            return ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR"
        return ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR DEFAULT"

    def _disk_usage(self) -> str:
        """``CL: x CQ: y INDEX: z``: used fraction of the disks holding the store's parts."""
        layout = self.context.store.layout
        ratios = (
            disk_used_ratio(str(path))
            for path in (layout.commitlog, layout.consume_queue_root, layout.index)
        )
        return "CL: {:5.2f} CQ: {:5.2f} INDEX: {:5.2f}".format(*ratios)


_STORED_ANSWERS: dict[PutMessageStatus, int] = {
    PutMessageStatus.PUT_OK: ResponseCode.SUCCESS,
    PutMessageStatus.FLUSH_DISK_TIMEOUT: ResponseCode.FLUSH_DISK_TIMEOUT,
    PutMessageStatus.FLUSH_SLAVE_TIMEOUT: ResponseCode.FLUSH_SLAVE_TIMEOUT,
    PutMessageStatus.SLAVE_NOT_AVAILABLE: ResponseCode.SLAVE_NOT_AVAILABLE,
}
"""Put results whose message was stored, and the response code each is answered with."""
