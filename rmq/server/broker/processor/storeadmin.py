"""Store maintenance, half-message resume and the stats items, on request.

:class:`StoreAdminProcessor` serves five admin requests of Apache's ``AdminBrokerProcessor``:

* CLEAN_EXPIRED_CONSUMEQUEUE (306): every consume queue but ``SCHEDULE_TOPIC_XXXX``'s whose
  newest entry ends below the commitlog's first offset is deleted with its files and its queue
  offset (:meth:`~rmq.store.store.MessageStore.clean_expired_consume_queues`); a queue whose
  last file holds no entry yet is kept.
* DELETE_EXPIRED_COMMITLOG (329): the next 20 cleanup runs delete expired commitlog files
  whatever the hour (``executeDeleteFilesManually``); nothing is deleted by the request itself.
* CLEAN_UNUSED_TOPIC (316): :func:`clean_unused_topics`, which DELETE_TOPIC_IN_BROKER runs too:
  the consume queues of every topic the broker has no config for go, except
  ``SCHEDULE_TOPIC_XXXX``, ``RMQ_SYS_TRANS_OP_HALF_TOPIC`` and LMQ topics (with
  ``autoDeleteUnusedStats`` their stats items go too).
* VIEW_BROKER_STATS_DATA (315): the minute, hour and day windows of the stats item
  ``statsName`` / ``statsKey`` (:mod:`rmq.server.broker.stats.statsitems`) as a BrokerStatsData, or
  SYSTEM_ERROR "The stats <name> <key> not exist".
* RESUME_CHECK_HALF_MESSAGE (323): the message an offset message id points at is appended
  to ``RMQ_SYS_TRANS_HALF_TOPIC`` queue 0 with ``TRANSACTION_CHECK_TIMES`` set to 0, so that
  the transaction check asks its producer again; properties, flag, sysFlag, born host and
  time and reconsume times are the stored message's.  A message id that does not decode or
  points at no message gets SYSTEM_ERROR "Exception was thrown when putting message back to
  RMQ_SYS_TRANS_HALF_TOPIC.", a failed append "Put message back to RMQ_SYS_TRANS_HALF_TOPIC
  failed.".  Apache decompresses the body and keeps the compressed flag; rmq appends the body
  as stored (docs/spec-notes.md).

The three store requests answer SUCCESS at once, on master and slave alike, as Apache's do.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from rmq.common.msgconst import PROPERTY_TRANSACTION_CHECK_TIMES
from rmq.common.naming import RMQ_SYS_TRANS_HALF_TOPIC
from rmq.remoting.bodies.brokerstats import BrokerStatsData, BrokerStatsItem
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, create_response
from rmq.remoting.connection import Connection, Handler
from rmq.remoting.headers import (
    ResumeCheckHalfMessageRequestHeader,
    ViewBrokerStatsDataRequestHeader,
)
from rmq.server.broker.schedule.schedule import reput_message
from rmq.server.broker.stats.statsitems import StatsSnapshot

if TYPE_CHECKING:
    from rmq.server.broker.context import BrokerContext

log = logging.getLogger("rmq.broker")

RESUME_EXCEPTION_REMARK = (
    "Exception was thrown when putting message back to RMQ_SYS_TRANS_HALF_TOPIC."
)
RESUME_FAILED_REMARK = "Put message back to RMQ_SYS_TRANS_HALF_TOPIC failed."


def clean_unused_topics(context: BrokerContext) -> list[str]:
    """Delete the consume queues of the topics the broker has no config for (Apache's
    ``cleanUnusedTopic``); returns those topics."""
    unused = context.store.clean_unused_topics(context.topic_config_manager.topic_config_table)
    for topic in unused:
        log.info("cleanUnusedTopic: the consume queues of %s deleted", topic)
        if context.broker_config.auto_delete_unused_stats:
            context.stats.items.topic_deleted(topic)
    return unused


def _stats_item(snapshot: StatsSnapshot) -> BrokerStatsItem:
    return BrokerStatsItem(sum=snapshot.sum, tps=snapshot.tps, avgpt=snapshot.avgpt)


class StoreAdminProcessor:
    """Serves the store maintenance, stats view and half-message resume requests."""

    def __init__(self, context: BrokerContext) -> None:
        self.context = context

    def handlers(self) -> dict[int, Handler]:
        return {
            RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE: self.clean_expired_consume_queue,
            RequestCode.DELETE_EXPIRED_COMMITLOG: self.delete_expired_commitlog,
            RequestCode.CLEAN_UNUSED_TOPIC: self.clean_unused_topic,
            RequestCode.VIEW_BROKER_STATS_DATA: self.view_broker_stats_data,
            RequestCode.RESUME_CHECK_HALF_MESSAGE: self.resume_check_half_message,
        }

    async def clean_expired_consume_queue(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        log.warning("cleanExpiredConsumeQueue called by %s", connection.remote_addr)
        for topic, queue_id in self.context.store.clean_expired_consume_queues():
            log.info("cleanExpiredConsumerQueue: consume queue %s %d deleted", topic, queue_id)
        return create_response(ResponseCode.SUCCESS)

    async def delete_expired_commitlog(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        log.warning("deleteExpiredCommitLog called by %s", connection.remote_addr)
        self.context.store.execute_delete_files_manually()
        return create_response(ResponseCode.SUCCESS)

    async def clean_unused_topic(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        log.warning("cleanUnusedTopic called by %s", connection.remote_addr)
        clean_unused_topics(self.context)
        return create_response(ResponseCode.SUCCESS)

    async def view_broker_stats_data(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = request.read_header(ViewBrokerStatsDataRequestHeader)
        item = self.context.stats.items.item(header.stats_name, header.stats_key)
        if item is None:
            return create_response(
                ResponseCode.SYSTEM_ERROR,
                f"The stats <{header.stats_name}> <{header.stats_key}> not exist",
            )
        data = BrokerStatsData(
            stats_minute=_stats_item(item.minute.snapshot()),
            stats_hour=_stats_item(item.hour.snapshot()),
            stats_day=_stats_item(item.day.snapshot()),
        )
        return create_response(ResponseCode.SUCCESS, body=data.encode())

    async def resume_check_half_message(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        msg_id = request.read_header(ResumeCheckHalfMessageRequestHeader).msg_id
        try:
            record = self.context.store.look_message_by_msg_id(msg_id or "")
        except ValueError:
            record = None
        if record is None:
            log.error("resumeCheckHalfMessage: no message under the id %r", msg_id)
            return create_response(ResponseCode.SYSTEM_ERROR, RESUME_EXCEPTION_REMARK)
        properties = record.properties
        properties[PROPERTY_TRANSACTION_CHECK_TIMES] = "0"
        result = self.context.store.put_message(
            reput_message(record, RMQ_SYS_TRANS_HALF_TOPIC, 0, properties=properties)
        )
        if not result.ok:
            log.error("putting message %s back to the half topic failed: %s", msg_id, result)
            return create_response(ResponseCode.SYSTEM_ERROR, RESUME_FAILED_REMARK)
        log.info("message %s put back to %s", msg_id, RMQ_SYS_TRANS_HALF_TOPIC)
        return create_response(ResponseCode.SUCCESS)
