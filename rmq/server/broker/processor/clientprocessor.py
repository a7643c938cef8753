"""Client management requests: heartbeats, unregistration, consumer lists, queue locks.

:class:`ClientProcessor` serves what clients send to keep the broker's picture of them
current, after Apache's ``ClientManageProcessor`` and ``ConsumerManageProcessor``:

* HEART_BEAT (34): the body is HeartbeatData JSON (enums by name from Java, by ordinal from
  the C++ client, whose bodies also end with a newline).  Every producer group and consumer
  group of the client is registered in the broker's :class:`ClientManager` with the client's
  id and the request's language and version.  For each consumer group the subscription group
  is looked up, auto-created when ``autoCreateSubscriptionGroup`` allows, and then its
  ``%RETRY%<group>`` topic is created if absent (the group's ``retryQueueNums`` queues, perm
  RW, unit-sub flag for unit-mode consumers); its SQL92 subscriptions are registered with the
  consumer filter manager, which forgets the group's filters when its last consumer leaves.
* UNREGISTER_CLIENT (35): header ``clientID`` with ``producerGroup`` and/or
  ``consumerGroup``; the client's channel leaves those groups.
* GET_CONSUMER_LIST_BY_GROUP (38): the client ids of the group's online consumers, or
  SYSTEM_ERROR "no consumer for this group, <group>".
* CHECK_CLIENT_CONFIG (46): a TAG subscription is accepted; an SQL92 one needs
  ``enablePropertyFilter`` and an expression that compiles
  (:func:`~rmq.server.broker.filter.consumerfilter.check_client_config`).
* LOCK_BATCH_MQ (41) / UNLOCK_BATCH_MQ (42): orderly consumers' queue locks, kept by a
  :class:`~rmq.server.broker.client.rebalancelock.RebalanceLockManager` (60 s expiry).

Membership changes.  Whenever a heartbeat, an unregistration or a closed connection changes a
consumer group, the channels the ClientManager names get NOTIFY_CONSUMER_IDS_CHANGED (oneway,
header ``consumerGroup``) so that every member rebalances at once.
:meth:`ClientProcessor.notify_consumer_ids_changed` does the sending: the changes made within
50 ms are coalesced, so each channel still open then gets one notification per group for all
of them (hundreds of consumers leaving together cost one notification each to the rest, not
one per departure); each notification is encoded once per group and written to each
connection, 64 in a turn of the event loop, or, while a consumer leaves earlier frames unread,
by a task of its own, so that consumer never delays a heartbeat answer; a failed write is only
logged.  :meth:`ClientProcessor.channel_closed` is the broker's connection-closed callback for
client connections.  Silent clients are dropped by the ClientManager's own scan
(``scan_not_active_channels``), which the broker runs every 10 s; the connection it closes
then comes back through ``channel_closed``.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING, cast

from rmq.common.naming import retry_topic
from rmq.common.perm import PERM_READ, PERM_WRITE
from rmq.common.sysflag import build_topic_sys_flag
from rmq.remoting.bodies import (
    CheckClientRequestBody,
    GetConsumerListByGroupResponseBody,
    HeartbeatData,
    LockBatchRequestBody,
    LockBatchResponseBody,
    UnlockBatchRequestBody,
)
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, create_request, create_response
from rmq.remoting.connection import Connection, Handler
from rmq.remoting.errors import RemotingError
from rmq.remoting.frame import encode_frame
from rmq.remoting.headers import (
    GetConsumerListByGroupRequestHeader,
    GetConsumerListByGroupResponseHeader,
    NotifyConsumerIdsChangedRequestHeader,
    UnregisterClientRequestHeader,
    UnregisterClientResponseHeader,
)
from rmq.server.broker.client.clientmanager import ClientChannel, ClientChannelInfo, chatter_level
from rmq.server.broker.client.rebalancelock import RebalanceLockManager
from rmq.server.broker.filter.consumerfilter import check_client_config

if TYPE_CHECKING:
    from rmq.server.broker.context import BrokerContext

log = logging.getLogger("rmq.broker")

NOTIFY_COALESCE_S = 0.05
"""How long membership changes are gathered before their NOTIFY_CONSUMER_IDS_CHANGED go out:
a consumer learns of a change at most this much later, and a group that hundreds of
consumers join or leave together costs each member a few notifications, not hundreds."""
NOTIFY_BATCH = 64
"""Notifications written in one turn of the event loop before other work gets a turn."""


def _notification(group: str) -> RemotingCommand:
    return create_request(
        RequestCode.NOTIFY_CONSUMER_IDS_CHANGED,
        NotifyConsumerIdsChangedRequestHeader(consumer_group=group),
    )


def _body(request: RemotingCommand) -> bytes | bytearray | memoryview:
    return request.body if request.body is not None else b""


class ClientProcessor:
    """Serves the client management requests of one broker."""

    def __init__(self, context: BrokerContext) -> None:
        self.context = context
        self.rebalance_lock_manager = RebalanceLockManager()
        self._notifications: set[asyncio.Task[None]] = set()
        self._pending_notifications: dict[str, dict[ClientChannel, None]] = {}
        self._flush_scheduled = False
        self._outgoing: deque[tuple[Connection, str, bytes]] = deque()
        self._sending = False

    def handlers(self) -> dict[int, Handler]:
        return {
            RequestCode.HEART_BEAT: self.heart_beat,
            RequestCode.UNREGISTER_CLIENT: self.unregister_client,
            RequestCode.GET_CONSUMER_LIST_BY_GROUP: self.get_consumer_list_by_group,
            RequestCode.CHECK_CLIENT_CONFIG: self.check_client_config,
            RequestCode.LOCK_BATCH_MQ: self.lock_batch_mq,
            RequestCode.UNLOCK_BATCH_MQ: self.unlock_batch_mq,
        }

    # -- membership notifications ---------------------------------------------------------

    def notify_consumer_ids_changed(self, group: str, channels: Iterable[ClientChannel]) -> None:
        """Send NOTIFY_CONSUMER_IDS_CHANGED for ``group`` to each of ``channels`` (oneway).

        Notifications are coalesced over :data:`NOTIFY_COALESCE_S`: the changes made within
        it (500 consumers of a group disconnecting or joining together) notify each channel
        still open at its end once per group, not once per change."""
        pending = self._pending_notifications.get(group)
        if pending is None:
            pending = self._pending_notifications[group] = {}
        pending.update(dict.fromkeys(channels))
        if not pending:
            return
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_later(NOTIFY_COALESCE_S, self._flush_notifications)

    def _flush_notifications(self) -> None:
        self._flush_scheduled = False
        pending, self._pending_notifications = self._pending_notifications, {}
        for group, channels in pending.items():
            request = _notification(group)
            request.mark_oneway()
            frame = encode_frame(request)
            # The ClientManager only holds the connections this processor registered.
            self._outgoing.extend((cast(Connection, channel), group, frame) for channel in channels)
        if self._outgoing and not self._sending:
            self._sending = True
            self._send_some()

    def _send_some(self) -> None:
        """Write up to NOTIFY_BATCH notifications, then let the loop serve others before the
        next batch: notifying hundreds of members never holds up the broker for long."""
        outgoing = self._outgoing
        loop = asyncio.get_running_loop()
        for _ in range(min(NOTIFY_BATCH, len(outgoing))):
            connection, group, frame = outgoing.popleft()
            if connection.closed or connection.send_frame_nowait(frame):
                continue
            task = loop.create_task(self._notify(connection, group))
            self._notifications.add(task)
            task.add_done_callback(self._notifications.discard)
        if outgoing:
            loop.call_soon(self._send_some)
        else:
            self._sending = False

    async def _notify(self, connection: Connection, group: str) -> None:
        try:
            await connection.send_oneway(_notification(group))
        except RemotingError as exc:
            log.warning(
                "notify consumer ids changed of group %s to %s failed: %s", group, connection, exc
            )

    def channel_closed(self, connection: Connection) -> None:
        """A client connection closed: it leaves every group, and the consumer groups it was
        in are told."""
        for change in self.context.client_manager.channel_closed(connection):
            if change.group_removed:
                self.context.consumer_filter_manager.unregister(change.group)
            self.notify_consumer_ids_changed(change.group, change.notify)

    # -- HEART_BEAT, UNREGISTER_CLIENT ------------------------------------------------------

    async def heart_beat(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        context = self.context
        heartbeat = HeartbeatData.decode(_body(request))
        info = ClientChannelInfo(connection, heartbeat.client_id, request.language, request.version)
        for consumer in heartbeat.consumer_data_set:
            group = consumer.group_name
            group_config = context.subscription_group_manager.find(group, auto_create=True)
            is_notify = True
            if group_config is not None:
                is_notify = group_config.notify_consumer_ids_changed_enable
                context.topic_config_manager.create_retry_topic_if_absent(
                    retry_topic(group),
                    group_config.retry_queue_nums,
                    PERM_READ | PERM_WRITE,
                    build_topic_sys_flag(unit=False, unit_sub=consumer.unit_mode),
                )
            change = context.client_manager.register_consumer(
                group,
                info,
                consumer.consume_type,
                consumer.message_model,
                consumer.consume_from_where,
                consumer.subscription_data_set,
                is_notify,
            )
            context.consumer_filter_manager.register_group(group, consumer.subscription_data_set)
            if change.changed:
                log.log(
                    chatter_level(group),
                    "consumer group %s changed by a heartbeat from %s",
                    group,
                    connection,
                )
            self.notify_consumer_ids_changed(group, change.notify)
        for producer in heartbeat.producer_data_set:
            context.client_manager.register_producer(producer.group_name, info)
        return create_response(ResponseCode.SUCCESS)

    async def unregister_client(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        context = self.context
        header = request.read_header(UnregisterClientRequestHeader)
        if header.producer_group is not None:
            context.client_manager.unregister_producer(
                header.producer_group, connection, header.client_id
            )
        group = header.consumer_group
        if group is not None:
            group_config = context.subscription_group_manager.find(group, auto_create=True)
            is_notify = group_config is None or group_config.notify_consumer_ids_changed_enable
            change = context.client_manager.unregister_consumer(group, connection, is_notify)
            if change is not None:
                if change.group_removed:
                    context.consumer_filter_manager.unregister(group)
                self.notify_consumer_ids_changed(group, change.notify)
        return create_response(ResponseCode.SUCCESS, header=UnregisterClientResponseHeader())

    # -- GET_CONSUMER_LIST_BY_GROUP, CHECK_CLIENT_CONFIG -----------------------------------

    async def get_consumer_list_by_group(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        group = request.read_header(GetConsumerListByGroupRequestHeader).consumer_group
        client_ids = self.context.client_manager.consumer_ids(group)
        if not client_ids:
            log.warning("no consumer of group %s for %s", group, connection)
            return create_response(
                ResponseCode.SYSTEM_ERROR, f"no consumer for this group, {group}"
            )
        return create_response(
            ResponseCode.SUCCESS,
            header=GetConsumerListByGroupResponseHeader(),
            body=GetConsumerListByGroupResponseBody(consumer_id_list=client_ids).encode(),
        )

    async def check_client_config(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        subscription = None
        if request.body:
            subscription = CheckClientRequestBody.decode(request.body).subscription_data
        return check_client_config(self.context.broker_config, subscription)

    # -- LOCK_BATCH_MQ, UNLOCK_BATCH_MQ ----------------------------------------------------

    async def lock_batch_mq(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        body = LockBatchRequestBody.decode(_body(request))
        locked = self.rebalance_lock_manager.try_lock_batch(
            body.consumer_group, body.mq_set, body.client_id
        )
        return create_response(
            ResponseCode.SUCCESS, body=LockBatchResponseBody(lock_ok_mq_set=locked).encode()
        )

    async def unlock_batch_mq(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        body = UnlockBatchRequestBody.decode(_body(request))
        self.rebalance_lock_manager.unlock_batch(body.consumer_group, body.mq_set, body.client_id)
        return create_response(ResponseCode.SUCCESS)
