"""PULL_MESSAGE (11): consumers read a queue from a queue offset.

:class:`PullMessageProcessor` answers a pull the way Apache's ``PullMessageProcessor`` does:

1. Checks, each with Apache's response code and remark: the broker is readable; the
   subscription group exists (auto-created when ``autoCreateSubscriptionGroup`` allows) and
   may consume; the topic exists and is readable; the queue id is below its read queue count.
2. The subscription: from the request (``subscription`` / ``expressionType``) when the pull
   sysFlag has FLAG_SUBSCRIPTION, otherwise the one the group's heartbeats registered for the
   topic (group online, broadcasting allowed, subscription known and not older than the
   request's ``subVersion``), and its filters (:func:`~.consumerfilter.pull_filters`): for
   SQL92 the group's registered filter, which must exist and be as new as the request, and
   ``enablePropertyFilter`` must be on.
3. The store read (:meth:`MessageStore.get_messages`) with the subscription's filters: a TAG
   consume-queue entry matches when its tags code is in the subscription's code set, or
   always for ``*`` (consumers re-check the tag strings); an SQL92 message matches when its
   properties make the expression true.  The store status becomes the
   response code (spec §2.3) and the remark; the header carries the next begin offset and the
   queue's min and max offsets, all as JSON strings.  Found messages go out as the response
   body straight from the commitlog mapping: one memoryview per record in ``body_segments``,
   no copy.
4. Nothing new and FLAG_SUSPEND set: the request is parked in the broker's
   :class:`~rmq.server.broker.longpolling.longpolling.PullRequestHoldService` for
   ``suspendTimeoutMillis`` (``shortPollingTimeMills`` while ``longPollingEnable`` is off) and
   run once more, without parking again, when a message arrives or the time is up.
5. FLAG_COMMIT_OFFSET on a master: the request's ``commitOffset`` is stored as the group's
   consumer offset (only on the first run of a request, as Apache does).

``suggestWhichBrokerId`` is 0 unless ``slaveReadEnable``; then it is the group's
``whichBrokerWhenConsumeSlowly`` when the consumer is far behind and its ``brokerId``
otherwise.  A slave without ``offsetCheckInSlave`` answers PULL_RETRY_IMMEDIATELY instead of
PULL_OFFSET_MOVED.  Every store read is counted in the broker's stats (found / miss,
messages transferred).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rmq.common.config import BrokerRole
from rmq.common.faq import (
    APPLY_TOPIC_URL,
    SAME_GROUP_DIFFERENT_TOPIC,
    SUBSCRIPTION_GROUP_NOT_EXIST,
    suggest_todo,
)
from rmq.common.perm import is_readable
from rmq.common.sysflag import PULL_COMMIT_OFFSET, PULL_SUBSCRIPTION, PULL_SUSPEND
from rmq.remoting.bodies import MessageModel, SubscriptionData, SubscriptionGroupConfig
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, create_response
from rmq.remoting.connection import Connection, Handler
from rmq.remoting.headers import PullMessageRequestHeader, PullMessageResponseHeader
from rmq.server.broker.filter.consumerfilter import PullFilters, pull_filters
from rmq.store.store import GetMessageResult, GetMessageStatus

if TYPE_CHECKING:
    from rmq.server.broker.context import BrokerContext

log = logging.getLogger("rmq.broker")


_NOT_FOUND_OR_MOVED = (
    GetMessageStatus.NO_MATCHED_LOGIC_QUEUE,
    GetMessageStatus.NO_MESSAGE_IN_QUEUE,
)

_STATUS_CODES = {
    GetMessageStatus.FOUND: ResponseCode.SUCCESS,
    GetMessageStatus.MESSAGE_WAS_REMOVING: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetMessageStatus.NO_MATCHED_MESSAGE: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetMessageStatus.OFFSET_FOUND_NULL: ResponseCode.PULL_NOT_FOUND,
    GetMessageStatus.OFFSET_OVERFLOW_BADLY: ResponseCode.PULL_OFFSET_MOVED,
    GetMessageStatus.OFFSET_OVERFLOW_ONE: ResponseCode.PULL_NOT_FOUND,
    GetMessageStatus.OFFSET_TOO_SMALL: ResponseCode.PULL_OFFSET_MOVED,
}


def _response_code(status: GetMessageStatus, request_offset: int) -> ResponseCode:
    """The response code of a store status (spec §2.3): a queue with no messages at all
    moves a consumer that asked for a non-zero offset back to 0."""
    if status in _NOT_FOUND_OR_MOVED:
        return (
            ResponseCode.PULL_OFFSET_MOVED if request_offset != 0 else ResponseCode.PULL_NOT_FOUND
        )
    return _STATUS_CODES[status]


@dataclass(frozen=True, slots=True)
class _Park:
    """A pull that found nothing and may wait (FLAG_SUSPEND) for ``timeout_ms``."""

    filters: PullFilters
    timeout_ms: int


class PullMessageProcessor:
    """Serves PULL_MESSAGE for one broker."""

    def __init__(self, context: BrokerContext) -> None:
        self.context = context

    def handlers(self) -> dict[int, Handler]:
        return {RequestCode.PULL_MESSAGE: self.pull_message}

    async def pull_message(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand | None:
        header = request.read_header(PullMessageRequestHeader)
        outcome = self._pull(connection, header, allow_suspend=True)
        if isinstance(outcome, RemotingCommand):
            return outcome
        run_again = await self.context.pull_hold.hold(
            connection,
            header.topic,
            header.queue_id,
            header.queue_offset,
            outcome.filters[0],
            outcome.timeout_ms,
            record_filter=outcome.filters[1],
        )
        if not run_again:
            return None
        response = self._pull(connection, header, allow_suspend=False)
        assert isinstance(response, RemotingCommand)
        return response

    def _pull(
        self, connection: Connection, header: PullMessageRequestHeader, *, allow_suspend: bool
    ) -> RemotingCommand | _Park:
        """One run of a pull: the response, or what to park when it may wait."""
        context = self.context
        broker_config = context.broker_config
        group = header.consumer_group
        topic = header.topic
        if not is_readable(broker_config.broker_permission):
            return create_response(
                ResponseCode.NO_PERMISSION,
                f"the broker[{broker_config.broker_ip1}] pulling message is forbidden",
            )
        group_config = context.subscription_group_manager.find(group, auto_create=True)
        if group_config is None:
            return create_response(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                f"subscription group [{group}] does not exist, "
                + suggest_todo(SUBSCRIPTION_GROUP_NOT_EXIST),
            )
        if not group_config.consume_enable:
            return create_response(
                ResponseCode.NO_PERMISSION, f"subscription group no permission, {group}"
            )
        topic_config = context.topic_config_manager.select(topic)
        if topic_config is None:
            log.error("pull of topic %s, which does not exist, by %s", topic, connection)
            return create_response(
                ResponseCode.TOPIC_NOT_EXIST,
                f"topic[{topic}] not exist, apply first please! {suggest_todo(APPLY_TOPIC_URL)}",
            )
        if not is_readable(topic_config.perm):
            return create_response(
                ResponseCode.NO_PERMISSION, f"the topic[{topic}] pulling message is forbidden"
            )
        if not 0 <= header.queue_id < topic_config.read_queue_nums:
            remark = (
                f"queueId[{header.queue_id}] is illegal, topic:[{topic}] "
                f"topicConfig.readQueueNums:[{topic_config.read_queue_nums}] "
                f"consumer:[/{connection.remote_addr}]"
            )
            log.warning("%s", remark)
            return create_response(ResponseCode.SYSTEM_ERROR, remark)
        subscription = self._subscription(header, group_config)
        if isinstance(subscription, RemotingCommand):
            return subscription
        filters = pull_filters(
            context.consumer_filter_manager,
            broker_config,
            subscription,
            group=group,
            from_request=bool(header.sys_flag & PULL_SUBSCRIPTION),
            request_version=header.sub_version,
        )
        if isinstance(filters, RemotingCommand):
            return filters
        tags_filter, record_filter = filters
        started = time.monotonic_ns()
        result = context.store.get_messages(
            topic,
            header.queue_id,
            header.queue_offset,
            header.max_msg_nums,
            tags_filter,
            record_filter,
        )
        elapsed_ms = (time.monotonic_ns() - started) // 1_000_000
        context.stats.on_get(result.message_count, elapsed_ms)
        if result.message_count:
            items = context.stats.items
            items.get(group, topic, result.message_count, result.buffer_total_size)
            if context.broker_config.transfer_msg_by_heap:
                items.pull_latency(group, topic, header.queue_id, elapsed_ms)
        outcome = self._respond(connection, header, group_config, result, allow_suspend, filters)
        if (
            allow_suspend
            and header.sys_flag & PULL_COMMIT_OFFSET
            and context.store_config.broker_role is not BrokerRole.SLAVE
        ):
            context.consumer_offset_manager.commit(
                connection.remote_addr, group, topic, header.queue_id, header.commit_offset
            )
        return outcome

    def _subscription(
        self, header: PullMessageRequestHeader, group_config: SubscriptionGroupConfig
    ) -> SubscriptionData | RemotingCommand:
        """The subscription the pull filters with, or the error response."""
        group = header.consumer_group
        if header.sys_flag & PULL_SUBSCRIPTION:
            try:
                return SubscriptionData.from_expression(
                    header.topic, header.subscription, header.expression_type
                )
            except ValueError:
                log.warning(
                    "cannot parse the subscription %r of group %s", header.subscription, group
                )
                return create_response(
                    ResponseCode.SUBSCRIPTION_PARSE_FAILED,
                    "parse the consumer's subscription failed",
                )
        group_info = self.context.client_manager.consumer_group_info(group)
        if group_info is None:
            log.warning("pull of group %s, which has no consumer online", group)
            return create_response(
                ResponseCode.SUBSCRIPTION_NOT_EXIST,
                f"the consumer's group info not exist{suggest_todo(SAME_GROUP_DIFFERENT_TOPIC)}",
            )
        if (
            not group_config.consume_broadcast_enable
            and group_info.message_model is MessageModel.BROADCASTING
        ):
            return create_response(
                ResponseCode.NO_PERMISSION,
                f"the consumer group[{group}] can not consume by broadcast way",
            )
        subscription = group_info.subscriptions.get(header.topic)
        if subscription is None:
            log.warning("pull of group %s: no subscription of topic %s", group, header.topic)
            return create_response(
                ResponseCode.SUBSCRIPTION_NOT_EXIST,
                f"the consumer's subscription not exist{suggest_todo(SAME_GROUP_DIFFERENT_TOPIC)}",
            )
        if subscription.sub_version < header.sub_version:
            log.warning("the broker's subscription of group %s is not the latest", group)
            return create_response(
                ResponseCode.SUBSCRIPTION_NOT_LATEST, "the consumer's subscription not latest"
            )
        return subscription

    def _respond(
        self,
        connection: Connection,
        header: PullMessageRequestHeader,
        group_config: SubscriptionGroupConfig,
        result: GetMessageResult,
        allow_suspend: bool,
        filters: PullFilters,
    ) -> RemotingCommand | _Park:
        context = self.context
        broker_config = context.broker_config
        code = _response_code(result.status, header.queue_offset)
        suggest_broker_id = 0
        if broker_config.slave_read_enable:
            suggest_broker_id = (
                group_config.which_broker_when_consume_slowly
                if result.suggest_pulling_from_slave
                else group_config.broker_id
            )
        if code is ResponseCode.PULL_NOT_FOUND and allow_suspend and header.sys_flag & PULL_SUSPEND:
            timeout_ms = (
                header.suspend_timeout_millis
                if broker_config.long_polling_enable
                else broker_config.short_polling_time_mills
            )
            return _Park(filters, timeout_ms)
        if code is ResponseCode.PULL_OFFSET_MOVED:
            store_config = context.store_config
            if (
                store_config.broker_role is not BrokerRole.SLAVE
                or store_config.offset_check_in_slave
            ):
                log.warning(
                    "PULL_OFFSET_MOVED: correction offset. topic=%s, group=%s, queue=%d, "
                    "request offset=%d, new offset=%d, consumer %s",
                    header.topic,
                    header.consumer_group,
                    header.queue_id,
                    header.queue_offset,
                    result.next_begin_offset,
                    connection,
                )
            else:
                suggest_broker_id = group_config.broker_id
                code = ResponseCode.PULL_RETRY_IMMEDIATELY
        response = create_response(
            code,
            result.status.name,
            PullMessageResponseHeader(
                suggest_which_broker_id=suggest_broker_id,
                next_begin_offset=result.next_begin_offset,
                min_offset=result.min_offset,
                max_offset=result.max_offset,
            ),
        )
        if code is ResponseCode.SUCCESS:
            response.body_segments = tuple(result.messages)
        return response
