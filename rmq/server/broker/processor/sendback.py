"""CONSUMER_SEND_MSG_BACK (36): a message a consumer failed to process, stored again.

The record is read back by its commitlog offset and stored again in ``%RETRY%<group>`` with
delay level ``3 + reconsumeTimes`` (or the level the consumer asked for), ``RETRY_TOPIC``,
``ORIGIN_MESSAGE_ID`` and ``WAIT=false`` in its properties and its reconsume times plus one;
once the reconsume times reach the maximum (or the consumer asks with a negative level) it
goes to ``%DLQ%<group>`` instead (spec §2.4).  The group must exist (or be auto-created:
SUBSCRIPTION_GROUP_NOT_EXIST otherwise) and the broker must be writable (NO_PERMISSION); a
group without retry queues is answered SUCCESS and nothing is stored.  The put is counted in
the broker's stats like a send (``sendprocessor.py``, whose checks and answers it shares).
"""

from __future__ import annotations

import time

from rmq.common.javahash import tags_code
from rmq.common.msgconst import (
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_KEYS,
    PROPERTY_ORIGIN_MESSAGE_ID,
    PROPERTY_RETRY_TOPIC,
    PROPERTY_WAIT_STORE_MSG_OK,
)
from rmq.common.msgid import parse_host
from rmq.common.naming import dlq_topic, retry_topic
from rmq.common.perm import is_writeable
from rmq.common.properties import encode_properties_bytes
from rmq.common.sysflag import build_topic_sys_flag
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, create_response
from rmq.remoting.connection import Connection, Handler
from rmq.remoting.headers import ConsumerSendMsgBackRequestHeader
from rmq.server.broker.context import BrokerContext
from rmq.server.broker.processor.sendprocessor import (
    DLQ_NUMS_PER_GROUP,
    PERM_RW,
    SendRefused,
    count_put,
    max_reconsume_times,
    random_queue_id,
    subscription_group,
)
from rmq.store.putmessage import InnerMessage

FIRST_RETRY_DELAY_LEVEL = 3
"""A send-back without a delay level waits ``3 + reconsumeTimes`` levels (10 s, 30 s, ...)."""


class SendBackProcessor:
    """Serves CONSUMER_SEND_MSG_BACK for one broker."""

    def __init__(self, context: BrokerContext) -> None:
        self.context = context

    def handlers(self) -> dict[int, Handler]:
        return {RequestCode.CONSUMER_SEND_MSG_BACK: self.consumer_send_msg_back}

    async def consumer_send_msg_back(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = request.read_header(ConsumerSendMsgBackRequestHeader)
        try:
            group_config = subscription_group(self.context.subscription_group_manager, header.group)
        except SendRefused as refused:
            return create_response(refused.code, refused.remark)
        broker_config = self.context.broker_config
        if not is_writeable(broker_config.broker_permission):
            return create_response(
                ResponseCode.NO_PERMISSION,
                f"the broker[{broker_config.broker_ip1}] sending message is forbidden",
            )
        if group_config.retry_queue_nums <= 0:
            return create_response(ResponseCode.SUCCESS)
        topic = retry_topic(header.group)
        queue_id = random_queue_id(group_config.retry_queue_nums)
        topics = self.context.topic_config_manager
        config = topics.create_retry_topic_if_absent(
            topic,
            group_config.retry_queue_nums,
            PERM_RW,
            build_topic_sys_flag(unit=False, unit_sub=header.unit_mode),
        )
        if not is_writeable(config.perm):
            return create_response(
                ResponseCode.NO_PERMISSION, f"the topic[{topic}] sending message is forbidden"
            )
        record = self.context.store.look_message_by_offset(header.offset)
        if record is None:
            return create_response(
                ResponseCode.SYSTEM_ERROR, f"look message by offset failed, {header.offset}"
            )
        properties = record.properties
        properties.setdefault(PROPERTY_RETRY_TOPIC, record.topic)
        properties[PROPERTY_WAIT_STORE_MSG_OK] = "false"
        delay_level = header.delay_level
        limit = max_reconsume_times(request.version, header.max_reconsume_times, group_config)
        if record.reconsume_times >= limit or delay_level < 0:
            topic = dlq_topic(header.group)
            queue_id = 0
            topics.create_retry_topic_if_absent(topic, DLQ_NUMS_PER_GROUP, PERM_RW)
            delay_level = 0
        elif delay_level == 0:
            delay_level = FIRST_RETRY_DELAY_LEVEL + record.reconsume_times
        properties[PROPERTY_DELAY_TIME_LEVEL] = str(delay_level)
        if not properties.get(PROPERTY_ORIGIN_MESSAGE_ID, "").strip():
            properties[PROPERTY_ORIGIN_MESSAGE_ID] = record.offset_msg_id
        message = InnerMessage(
            topic,
            queue_id,
            record.body or b"",
            encode_properties_bytes(properties),
            tags_code(record.tags),
            properties.get(PROPERTY_KEYS),
            record.uniq_key,
            record.flag,
            record.sys_flag,
            record.born_timestamp,
            parse_host(record.born_host),
            record.reconsume_times + 1,
            0,
            delay_level,
        )
        started = time.monotonic()
        result = self.context.store.put_message(message)
        count_put(self.context.stats, result, started)
        if not result.ok:
            return create_response(ResponseCode.SYSTEM_ERROR, result.status.name)
        self.context.stats.items.send_back(
            header.group,
            properties[PROPERTY_RETRY_TOPIC],
            result.topic,
            result.queue_id,
            result.wrote_bytes,
        )
        return create_response(ResponseCode.SUCCESS)
