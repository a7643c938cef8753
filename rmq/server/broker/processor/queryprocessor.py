"""Message lookups: QUERY_MESSAGE (12) by key and VIEW_MESSAGE_BY_ID (33) by commitlog offset.

QUERY_MESSAGE asks the store's index for the messages of a topic stored under a key (a
``KEYS`` token or a unique key) within ``[beginTimestamp, endTimestamp]``, at most
``maxNum`` of them; with the extField ``_UNIQUE_KEY_QUERY=true`` (a lookup by unique key)
``maxNum`` is replaced by the store's ``defaultQueryMaxNum`` (32), as Apache does.  The
index holds hashes of ``topic#key``, so two keys may share a slot: every candidate record is
read back and kept only if it belongs to the topic and carries the key among its ``KEYS``
or as its ``UNIQ_KEY`` (Apache leaves that re-check to its clients; doing it here saves them
records they would drop).  The answer is a QueryMessageResponseHeader with the index's
freshness (``indexLastUpdateTimestamp``, ``indexLastUpdatePhyoffset``) and the stored
records, concatenated, as the body; none -> QUERY_NOT_FOUND.

VIEW_MESSAGE_BY_ID answers the one record stored at a commitlog offset (what an offset
message id points at), or SYSTEM_ERROR when there is none.

Bodies are zero-copy: the records are memoryviews of the commitlog mapping, handed to the
connection as body segments and written to the socket as they are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rmq.common.message import decode_record
from rmq.common.naming import UNIQUE_MSG_QUERY_FLAG
from rmq.common.recordwalk import RecordError
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, create_response
from rmq.remoting.connection import Connection, Handler
from rmq.remoting.headers import (
    QueryMessageRequestHeader,
    QueryMessageResponseHeader,
    ViewMessageRequestHeader,
)

if TYPE_CHECKING:
    from rmq.server.broker.context import BrokerContext


def record_has_key(record: memoryview, topic: str, key: str) -> bool:
    """Whether the stored record belongs to ``topic`` and is indexed under ``key``."""
    try:
        message = decode_record(record, with_body=False)
    except RecordError:
        return False
    return message.topic == topic and (key == message.uniq_key or key in message.keys)


class QueryMessageProcessor:
    """Serves QUERY_MESSAGE and VIEW_MESSAGE_BY_ID from the store of one broker."""

    def __init__(self, context: BrokerContext) -> None:
        self.context = context

    def handlers(self) -> dict[int, Handler]:
        return {
            RequestCode.QUERY_MESSAGE: self.query_message,
            RequestCode.VIEW_MESSAGE_BY_ID: self.view_message_by_id,
        }

    async def query_message(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = request.read_header(QueryMessageRequestHeader)
        max_num = header.max_num
        if request.ext_fields is not None and request.ext_fields.get(UNIQUE_MSG_QUERY_FLAG) == (
            "true"
        ):
            max_num = self.context.store_config.default_query_max_num
        result = self.context.store.query_message(
            header.topic, header.key, max_num, header.begin_timestamp, header.end_timestamp
        )
        records = tuple(
            record for record in result.messages if record_has_key(record, header.topic, header.key)
        )
        response_header = QueryMessageResponseHeader(
            index_last_update_timestamp=result.index_last_update_timestamp,
            index_last_update_phyoffset=result.index_last_update_phy_offset,
        )
        if not records:
            return create_response(
                ResponseCode.QUERY_NOT_FOUND,
                "can not find message, maybe time range not correct",
                response_header,
            )
        response = create_response(ResponseCode.SUCCESS, None, response_header)
        response.body_segments = records
        return response

    async def view_message_by_id(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = request.read_header(ViewMessageRequestHeader)
        record = self.context.store.select_one_message_by_offset(header.offset)
        if record is None:
            return create_response(
                ResponseCode.SYSTEM_ERROR, f"can not find message by the offset, {header.offset}"
            )
        return create_response(ResponseCode.SUCCESS, body=record)
