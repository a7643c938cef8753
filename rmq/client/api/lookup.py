"""Looking messages up on a broker: by offset message id (VIEW_MESSAGE_BY_ID), by key
(QUERY_MESSAGE)."""

from __future__ import annotations

from dataclasses import dataclass

from rmq.client.api.request import body_of, request_broker
from rmq.common.message import MessageRecord, decode_record, iter_records
from rmq.common.naming import (
    UNIQUE_MSG_QUERY_FLAG,
)
from rmq.remoting.client import RemotingClient
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import create_request
from rmq.remoting.headers import (
    QueryMessageRequestHeader,
    QueryMessageResponseHeader,
    ViewMessageRequestHeader,
)


async def view_message(
    remoting: RemotingClient, addr: str, physical_offset: int, timeout: float
) -> MessageRecord:
    """VIEW_MESSAGE_BY_ID: the record stored at `physical_offset` of the broker's commitlog
    (the offset half of an offset message id)."""
    request = create_request(
        RequestCode.VIEW_MESSAGE_BY_ID, ViewMessageRequestHeader(offset=physical_offset)
    )
    response = await request_broker(remoting, addr, request, timeout)
    return decode_record(body_of(response, addr, "the message"))


@dataclass(frozen=True, slots=True)
class QueryResult:
    """A QUERY_MESSAGE answer: the matching records and how fresh the broker's index is."""

    index_last_update_timestamp: int
    records: list[MessageRecord]


async def query_message(
    remoting: RemotingClient,
    addr: str,
    topic: str,
    key: str,
    max_num: int,
    begin_timestamp: int,
    end_timestamp: int,
    timeout: float,
    *,
    unique_key: bool = False,
) -> QueryResult:
    """QUERY_MESSAGE: messages of `topic` indexed under `key` (a KEYS entry, or with
    `unique_key` a UNIQ_KEY) and stored between the two timestamps (ms).  No match
    (QUERY_NOT_FOUND) gives an empty result."""
    header = QueryMessageRequestHeader(
        topic=topic,
        key=key,
        max_num=max_num,
        begin_timestamp=begin_timestamp,
        end_timestamp=end_timestamp,
    )
    request = create_request(RequestCode.QUERY_MESSAGE, header)
    request.add_ext_field(UNIQUE_MSG_QUERY_FLAG, "true" if unique_key else "false")
    accepted = frozenset({ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND})
    response = await request_broker(remoting, addr, request, timeout, accepted)
    if response.code == ResponseCode.QUERY_NOT_FOUND:
        return QueryResult(0, [])
    answer = response.read_header(QueryMessageResponseHeader)
    records = [record for _, record in iter_records(response.body or b"")]
    return QueryResult(answer.index_last_update_timestamp, records)
