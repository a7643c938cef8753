"""Admin requests the broker answers by calling its consumer clients, after Apache's
``Broker2Client`` and ``AdminBrokerProcessor.callConsumer``.

An admin tool cannot reach a consumer; the broker can, over the connection the consumer's
heartbeats arrive on.  :class:`ClientCallProcessor` serves:

* INVOKE_BROKER_TO_RESET_OFFSET (222), header topic, group, timestamp, isForce: for each
  write queue of the topic the offset at ``timestamp`` (the queue's max offset for -1,
  negative lookups as 0) replaces the group's committed offset when ``isForce`` or when it
  is smaller; every member of the group gets RESET_CONSUMER_CLIENT_OFFSET (220, oneway) with
  that table and the tool the same table (ResetOffsetBody; a C++ tool's clients get the
  list form, ResetOffsetBodyForC).  SYSTEM_ERROR for an unknown topic, for a queue the group
  has no offset in ("THe consumer group <G> not exist", Apache's typo) and for a member older
  than V3_0_7_SNAPSHOT; CONSUMER_NOT_ONLINE when the group has no member.
* INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223), header topic, group, clientAddr: every member
  (or the one whose client id is ``clientAddr``) is asked GET_CONSUMER_STATUS_FROM_CLIENT
  (221) for its offsets of the topic; the answer maps client id -> offsets
  (GetConsumerStatusBody.consumerTable).  A member that does not answer is left out.
* GET_CONSUMER_RUNNING_INFO (307) and CONSUME_MESSAGE_DIRECTLY (309): the request goes to
  the member named by ``clientId`` (its extFields as they came, 309 with ``brokerName`` set
  and the stored message the ``msgId`` names as its body) and the member's response is the
  answer, as it is.  SYSTEM_ERROR "The Consumer <G> <id> not online" when no such member,
  "... too low to finish" for one older than V3_1_8_SNAPSHOT; CONSUME_MSG_TIMEOUT when it
  does not answer within 10 s; SYSTEM_ERROR "invoke consumer ..." when the call fails.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, cast

from rmq.common.msgid import decode_offset_msg_id
from rmq.remoting.bodies import MessageQueue, ResetOffsetBody
from rmq.remoting.bodies.consumerinfo import (
    GetConsumerStatusBody,
    MessageQueueForC,
    ResetOffsetBodyForC,
    in_hash_map_order,
)
from rmq.remoting.codes import LanguageCode, MQVersion, RequestCode, ResponseCode, version_desc
from rmq.remoting.command import (
    UNSET_RESPONSE_REMARK,
    RemotingCommand,
    create_request,
    create_response,
)
from rmq.remoting.connection import Connection, Handler
from rmq.remoting.errors import RemotingError, RemotingTimeoutError
from rmq.remoting.headers import (
    ConsumeMessageDirectlyResultRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetConsumerStatusRequestHeader,
    ResetOffsetRequestHeader,
)
from rmq.server.broker.client.clientmanager import ClientChannelInfo

if TYPE_CHECKING:
    from rmq.server.broker.context import BrokerContext

log = logging.getLogger("rmq.broker")

CALL_CLIENT_TIMEOUT = 10.0  # Broker2Client.callClient
CONSUMER_STATUS_TIMEOUT = 5.0  # Broker2Client.getConsumeStatus


def _error(code: int, remark: str) -> RemotingCommand:
    return create_response(code, remark)


def _connection(info: ClientChannelInfo) -> Connection:
    # The ClientManager only holds the connections the client processor registered.
    return cast(Connection, info.channel)


class ClientCallProcessor:
    """Serves the admin requests that call consumer clients (see the module docstring)."""

    def __init__(self, context: BrokerContext) -> None:
        self.context = context
        self._resets: set[asyncio.Task[None]] = set()

    def handlers(self) -> dict[int, Handler]:
        return {
            RequestCode.INVOKE_BROKER_TO_RESET_OFFSET: self.reset_offset,
            RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS: self.get_consumer_status,
            RequestCode.GET_CONSUMER_RUNNING_INFO: self.get_consumer_running_info,
            RequestCode.CONSUME_MESSAGE_DIRECTLY: self.consume_message_directly,
        }

    # -- offset reset ----------------------------------------------------------------------

    async def reset_offset(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = request.read_header(ResetOffsetRequestHeader)
        log.info(
            "[reset-offset] reset offset started by %s. topic=%s, group=%s, timestamp=%d, "
            "isForce=%s",
            connection.remote_addr,
            header.topic,
            header.group,
            header.timestamp,
            header.is_force,
        )
        topic, group = header.topic, header.group
        topic_config = self.context.topic_config_manager.select(topic)
        if topic_config is None:
            remark = f"[reset-offset] reset offset failed, no topic in this broker. topic={topic}"
            return _error(ResponseCode.SYSTEM_ERROR, remark)
        offsets = self._reset_offsets(header, topic_config.write_queue_nums)
        if offsets is None:
            return _error(ResponseCode.SYSTEM_ERROR, f"THe consumer group <{group}> not exist")
        table = in_hash_map_order(offsets)
        answer = ResetOffsetBody(offset_table=table).encode()
        body = answer
        if request.language is LanguageCode.CPP:
            body = ResetOffsetBodyForC(
                offset_table=[
                    MessageQueueForC(
                        topic=mq.topic, broker_name=mq.broker_name, queue_id=mq.queue_id, offset=o
                    )
                    for mq, o in table.items()
                ]
            ).encode()
        push_header = ResetOffsetRequestHeader(topic=topic, group=group, timestamp=header.timestamp)
        group_info = self.context.client_manager.consumer_group_info(group)
        if group_info is None or not group_info.channels:
            return _error(
                ResponseCode.CONSUMER_NOT_ONLINE,
                "Consumer not online, so can not reset offset, "
                f"Group: {group} Topic: {topic} Timestamp: {header.timestamp}",
            )
        for info in list(group_info.channels.values()):
            if info.version < MQVersion.V3_0_7_SNAPSHOT:
                return self._too_old("reset-offset", info)
            push = create_request(RequestCode.RESET_CONSUMER_CLIENT_OFFSET, push_header, body=body)
            self._spawn_reset(info, push)
        return create_response(ResponseCode.SUCCESS, UNSET_RESPONSE_REMARK, body=answer)

    def _reset_offsets(
        self, header: ResetOffsetRequestHeader, queue_nums: int
    ) -> dict[MessageQueue, int] | None:
        """Queue -> the offset the group resets to; None when the group has no offset in a
        queue."""
        topic, group = header.topic, header.group
        store = self.context.store
        broker_name = self.context.broker_config.broker_name
        offsets: dict[MessageQueue, int] = {}
        for queue_id in range(queue_nums):
            committed = self.context.consumer_offset_manager.query(group, topic, queue_id)
            if committed == -1:
                return None
            if header.timestamp == -1:
                target = store.get_max_offset_in_queue(topic, queue_id)
            else:
                target = store.get_offset_in_queue_by_time(topic, queue_id, header.timestamp)
            target = max(target, 0)
            mq = MessageQueue(topic, broker_name, queue_id)
            offsets[mq] = target if header.is_force or target < committed else committed
        return offsets

    def _spawn_reset(self, info: ClientChannelInfo, request: RemotingCommand) -> None:
        task = asyncio.get_running_loop().create_task(self._send_reset(info, request))
        self._resets.add(task)
        task.add_done_callback(self._resets.discard)

    async def _send_reset(self, info: ClientChannelInfo, request: RemotingCommand) -> None:
        try:
            await _connection(info).send_oneway(request)
        except RemotingError as exc:
            log.error("[reset-offset] reset offset of %s failed: %s", info.client_id, exc)

    @staticmethod
    def _too_old(what: str, info: ClientChannelInfo) -> RemotingCommand:
        log.warning(
            "[%s] the client does not support this feature. channel=%s, version=%s",
            what,
            info.channel.remote_addr,
            version_desc(info.version),
        )
        return _error(
            ResponseCode.SYSTEM_ERROR,
            f"the client does not support this feature. version={version_desc(info.version)}",
        )

    # -- consumer status -------------------------------------------------------------------

    async def get_consumer_status(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = request.read_header(GetConsumerStatusRequestHeader)
        group_info = self.context.client_manager.consumer_group_info(header.group)
        if group_info is None or not group_info.channels:
            # Apache's broker fails with a NullPointerException for a group it never saw.
            return _error(
                ResponseCode.SYSTEM_ERROR,
                f"No Any Consumer online in the consumer group: [{header.group}]",
            )
        members = list(group_info.channels.values())
        for info in members:
            if info.version < MQVersion.V3_0_7_SNAPSHOT:
                return self._too_old("get-consumer-status", info)
        wanted = header.client_addr
        asked = [info for info in members if not wanted or info.client_id == wanted]
        tables = await asyncio.gather(
            *(self._client_status(info, header.topic, header.group) for info in asked)
        )
        table = {
            info.client_id: offsets
            for info, offsets in zip(asked, tables, strict=True)
            if offsets is not None
        }
        return create_response(
            ResponseCode.SUCCESS,
            UNSET_RESPONSE_REMARK,
            body=GetConsumerStatusBody(consumer_table=table).encode(),
        )

    async def _client_status(
        self, info: ClientChannelInfo, topic: str, group: str
    ) -> dict[MessageQueue, int] | None:
        """One member's offsets of ``topic`` (None when it fails or answers no body)."""
        request = create_request(
            RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT,
            GetConsumerStatusRequestHeader(topic=topic, group=group),
        )
        try:
            response = await _connection(info).send_request(request, CONSUMER_STATUS_TIMEOUT)
            if response.code != ResponseCode.SUCCESS or response.body is None:
                return None
            return GetConsumerStatusBody.decode(response.body).message_queue_table
        except (RemotingError, ValueError) as exc:
            log.error(
                "[get-consumer-status] get consumer status exception. topic=%s, group=%s, error=%s",
                topic,
                group,
                exc,
            )
            return None

    # -- calls forwarded to one client -----------------------------------------------------

    async def get_consumer_running_info(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = request.read_header(GetConsumerRunningInfoRequestHeader)
        return await self._call_consumer(request, header.consumer_group, header.client_id)

    async def consume_message_directly(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = request.read_header(ConsumeMessageDirectlyResultRequestHeader)
        request.add_ext_field("brokerName", self.context.broker_config.broker_name)
        if header.msg_id is None:
            return _error(ResponseCode.SYSTEM_ERROR, "the request has no msgId")
        try:
            offset = decode_offset_msg_id(header.msg_id).physical_offset
        except ValueError as exc:
            return _error(ResponseCode.SYSTEM_ERROR, str(exc))
        record = self.context.store.select_one_message_by_offset(offset)
        if record is None:
            return _error(ResponseCode.SYSTEM_ERROR, f"no message at commitlog offset {offset}")
        request.body = bytes(record)
        return await self._call_consumer(request, header.consumer_group, header.client_id)

    async def _call_consumer(
        self, request: RemotingCommand, group: str, client_id: str | None
    ) -> RemotingCommand:
        """Send ``request`` on to the group's member ``client_id``; its response, or the
        error Apache's ``callConsumer`` answers."""
        info = (
            self.context.client_manager.find_consumer_channel(group, client_id)
            if client_id is not None
            else None
        )
        client = "null" if client_id is None else client_id  # as Java formats a null
        if info is None:
            return _error(
                ResponseCode.SYSTEM_ERROR, f"The Consumer <{group}> <{client}> not online"
            )
        if info.version < MQVersion.V3_1_8_SNAPSHOT:
            return _error(
                ResponseCode.SYSTEM_ERROR,
                f"The Consumer <{client_id}> Version <{version_desc(info.version)}> too low "
                "to finish, please upgrade it to V3_1_8_SNAPSHOT",
            )
        forward = create_request(request.code, None, body=request.body)
        forward.ext_fields = dict(request.ext_fields or {})
        try:
            return await _connection(info).send_request(forward, CALL_CLIENT_TIMEOUT)
        except RemotingTimeoutError as exc:
            return _error(
                ResponseCode.CONSUME_MSG_TIMEOUT, f"consumer <{group}> <{client_id}> Timeout: {exc}"
            )
        except RemotingError as exc:
            return _error(
                ResponseCode.SYSTEM_ERROR,
                f"invoke consumer <{group}> <{client_id}> Exception: {exc}",
            )
