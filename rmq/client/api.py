"""The client side of the RocketMQ protocol: one async function per request a client sends.

Every function takes the `RemotingClient` to send with and the address of the name server
or broker to ask, builds the request from the header classes of `rmq.remoting.headers` and
the bodies of `rmq.remoting.bodies`, and returns a typed result.  Nothing here keeps state,
retries or picks addresses: that is the job of `ClientInstance` (name server failover, route
cache) and of the producer and consumers (which broker, which queue, how often).

Errors, as the Java client's `MQClientAPIImpl` raises them:

* a broker answering with a code the call does not accept -> `MQBrokerError(code, remark,
  addr)`; the codes a call does accept are listed in its docstring (a send accepts SUCCESS
  and the three "stored, but" codes; a pull the four pull statuses);
* a name server doing so -> `MQClientError(code, remark)`, and TOPIC_NOT_EXIST for a route
  -> `RouteNotFound`;
* connection failures and timeouts -> the remoting layer's `RemotingConnectError` /
  `RemotingTimeoutError`, unchanged.

Timeouts are in seconds.  `request_broker` / `request_namesrv` are the two checks every
function goes through, public so that the admin API can send the requests that have no
function here without writing the checks again.

Sends are a producer's hot path, so their requests are built apart from the call: either
`send_request` from a `SendMessageRequestHeader`, or a `SendRequestTemplate`, which encodes
once the header fields every send of one producer group to one topic shares and adds only
the per-send ones (the same request, without encoding fourteen fields each time).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from typing import TypeVar

from rmq.client.errors import MQBrokerError, MQClientError, RouteNotFound
from rmq.common.message import MessageRecord, decode_record, iter_records
from rmq.common.naming import (
    AUTO_CREATE_TOPIC_KEY_TOPIC,
    DEFAULT_TRACE_REGION_ID,
    UNIQUE_MSG_QUERY_FLAG,
)
from rmq.remoting.bodies import (
    ClusterInfo,
    GetConsumerListByGroupResponseBody,
    HeartbeatData,
    KVTable,
    LockBatchRequestBody,
    LockBatchResponseBody,
    MessageQueue,
    TopicConfig,
    TopicList,
    TopicRouteData,
    TopicStatsTable,
    UnlockBatchRequestBody,
)
from rmq.remoting.client import RemotingClient
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import Buffer, RemotingCommand, create_request
from rmq.remoting.headers import (
    ConsumerSendMsgBackRequestHeader,
    CreateTopicRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    DeleteTopicRequestHeader,
    GetConsumerListByGroupRequestHeader,
    GetEarliestMsgStoretimeRequestHeader,
    GetEarliestMsgStoretimeResponseHeader,
    GetKVConfigRequestHeader,
    GetKVConfigResponseHeader,
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    GetMinOffsetRequestHeader,
    GetMinOffsetResponseHeader,
    GetRouteInfoRequestHeader,
    GetTopicsByClusterRequestHeader,
    GetTopicStatsInfoRequestHeader,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    PutKVConfigRequestHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    QueryMessageRequestHeader,
    QueryMessageResponseHeader,
    SearchOffsetRequestHeader,
    SearchOffsetResponseHeader,
    SendMessageRequestHeader,
    SendMessageResponseHeader,
    UnregisterClientRequestHeader,
    UpdateConsumerOffsetRequestHeader,
    ViewMessageRequestHeader,
    encode_header,
)

H = TypeVar("H")

_PROPERTY_MSG_REGION = "MSG_REGION"
_PROPERTY_TRACE_SWITCH = "TRACE_ON"

_SUCCESS_ONLY = frozenset({ResponseCode.SUCCESS})


# --- shared checks ---------------------------------------------------------------------------


async def request_broker(
    remoting: RemotingClient,
    addr: str,
    request: RemotingCommand,
    timeout: float,
    accepted: frozenset[int] = _SUCCESS_ONLY,
) -> RemotingCommand:
    """Send `request` to the broker at `addr`; a response code outside `accepted` raises
    MQBrokerError with the broker's remark."""
    response = await remoting.invoke(addr, request, timeout)
    if response.code not in accepted:
        raise MQBrokerError(response.code, response.remark, addr)
    return response


async def request_namesrv(
    remoting: RemotingClient, addr: str, request: RemotingCommand, timeout: float
) -> RemotingCommand:
    """Send `request` to the name server at `addr`; anything but SUCCESS raises
    MQClientError with the name server's remark."""
    response = await remoting.invoke(addr, request, timeout)
    if response.code != ResponseCode.SUCCESS:
        raise MQClientError(response.code, response.remark or "")
    return response


def _body_of(response: RemotingCommand, addr: str, what: str) -> Buffer:
    if not response.body:
        raise MQClientError(ResponseCode.SYSTEM_ERROR, f"{addr} answered {what} without a body")
    return response.body


# --- name server -----------------------------------------------------------------------------


async def get_topic_route(
    remoting: RemotingClient, addr: str, topic: str, timeout: float
) -> TopicRouteData:
    """GET_ROUTEINFO_BY_TOPIC; raises RouteNotFound when the name server knows no route."""
    request = create_request(
        RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic=topic)
    )
    response = await remoting.invoke(addr, request, timeout)
    if response.code == ResponseCode.TOPIC_NOT_EXIST:
        raise RouteNotFound(topic, response.remark)
    if response.code != ResponseCode.SUCCESS:
        raise MQClientError(response.code, response.remark or "")
    return TopicRouteData.decode(_body_of(response, addr, "a topic route"))


async def get_broker_cluster_info(
    remoting: RemotingClient, addr: str, timeout: float
) -> ClusterInfo:
    """GET_BROKER_CLUSTER_INFO: every broker the name server knows, by name and cluster."""
    request = create_request(RequestCode.GET_BROKER_CLUSTER_INFO)
    response = await request_namesrv(remoting, addr, request, timeout)
    return ClusterInfo.decode(_body_of(response, addr, "the cluster info"))


async def get_all_topic_list(remoting: RemotingClient, addr: str, timeout: float) -> TopicList:
    """GET_ALL_TOPIC_LIST_FROM_NAMESERVER: every topic some broker registered."""
    request = create_request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
    response = await request_namesrv(remoting, addr, request, timeout)
    return TopicList.decode(_body_of(response, addr, "the topic list"))


# --- sending ---------------------------------------------------------------------------------


class SendStatus(enum.Enum):
    """How a broker stored a message (Java's `SendStatus`): anything but SEND_OK means it is
    stored but not as safely as the broker's flush / replication policy asks."""

    SEND_OK = ResponseCode.SUCCESS
    FLUSH_DISK_TIMEOUT = ResponseCode.FLUSH_DISK_TIMEOUT
    FLUSH_SLAVE_TIMEOUT = ResponseCode.FLUSH_SLAVE_TIMEOUT
    SLAVE_NOT_AVAILABLE = ResponseCode.SLAVE_NOT_AVAILABLE


_SEND_ACCEPTED = frozenset(status.value for status in SendStatus)
_SEND_STATUS_OF_CODE: dict[int, SendStatus] = {status.value: status for status in SendStatus}


@dataclass(slots=True)
class SendResult:
    """What a send returns: `msg_id` is the client's UNIQ_KEY (comma-joined for a batch),
    `offset_msg_id` the broker's offset message id (comma-joined for a batch), and
    `queue_offset` the consume queue offset of the (first) message."""

    status: SendStatus
    msg_id: str
    offset_msg_id: str
    message_queue: MessageQueue
    queue_offset: int
    transaction_id: str | None = None
    region_id: str = DEFAULT_TRACE_REGION_ID
    trace_on: bool = True


def _send_code(batch: bool) -> RequestCode:
    return RequestCode.SEND_BATCH_MESSAGE if batch else RequestCode.SEND_MESSAGE_V2


def send_request(header: SendMessageRequestHeader, body: Buffer) -> RemotingCommand:
    """The SEND_MESSAGE_V2 request (SEND_BATCH_MESSAGE when `header.batch`), short keys."""
    return create_request(_send_code(header.batch), header, body=body)


_SEND_KEY = {field.name: field.metadata["short"] for field in fields(SendMessageRequestHeader)}
"""The V2 short key of each SendMessageRequestHeader field, as the header declares it."""


class SendRequestTemplate:
    """The send requests of one producer group to one topic.

    The fields every such send shares (group, topic, default topic and its queue count,
    reconsume times, unit mode) are encoded once; `request` copies them and adds the
    per-send fields, giving the request `send_request` gives for the equal header.
    """

    __slots__ = ("_shared",)

    def __init__(
        self, producer_group: str, topic: str, default_topic: str, default_topic_queue_nums: int
    ) -> None:
        header = SendMessageRequestHeader(
            producer_group=producer_group,
            topic=topic,
            default_topic=default_topic,
            default_topic_queue_nums=default_topic_queue_nums,
            queue_id=0,
            sys_flag=0,
            born_timestamp=0,
            flag=0,
            properties="",
            reconsume_times=0,
            bname="",
        )
        # Every field has a value here, so the per-send ones keep their places in the order.
        self._shared = encode_header(header, short_keys=True)

    def request(
        self,
        queue: MessageQueue,
        sys_flag: int,
        born_timestamp: int,
        flag: int,
        properties: str,
        body: Buffer,
        *,
        batch: bool = False,
    ) -> RemotingCommand:
        """The request sending `body` (a batch body with `batch`) to `queue`."""
        ext_fields = self._shared.copy()
        ext_fields[_SEND_KEY["queue_id"]] = str(queue.queue_id)
        ext_fields[_SEND_KEY["sys_flag"]] = str(sys_flag)
        ext_fields[_SEND_KEY["born_timestamp"]] = str(born_timestamp)
        ext_fields[_SEND_KEY["flag"]] = str(flag)
        ext_fields[_SEND_KEY["properties"]] = properties
        ext_fields[_SEND_KEY["batch"]] = "true" if batch else "false"
        ext_fields[_SEND_KEY["bname"]] = queue.broker_name
        request = create_request(_send_code(batch), body=body)
        request.ext_fields = ext_fields
        return request


async def send_message(
    remoting: RemotingClient,
    addr: str,
    queue: MessageQueue,
    request: RemotingCommand,
    timeout: float,
    *,
    msg_id: str,
) -> SendResult:
    """Send `request` (from `send_request` or a `SendRequestTemplate`) for `queue` to the
    broker at `addr` and wait for the answer.

    Accepts SUCCESS, FLUSH_DISK_TIMEOUT, FLUSH_SLAVE_TIMEOUT and SLAVE_NOT_AVAILABLE (the
    result's `status`); `msg_id` is the UNIQ_KEY the message carries, copied into the result.
    """
    response = await request_broker(remoting, addr, request, timeout, _SEND_ACCEPTED)
    return send_result(response, queue, msg_id)


def send_result(response: RemotingCommand, queue: MessageQueue, msg_id: str) -> SendResult:
    """The SendResult of an accepted send response to a request for `queue`: its message
    queue is the queue id the broker answered (the requested one unless it picked one)."""
    answer = response.read_header(SendMessageResponseHeader)
    if answer.queue_id != queue.queue_id:
        queue = MessageQueue(queue.topic, queue.broker_name, answer.queue_id)
    ext_fields = response.ext_fields or {}
    return SendResult(
        _SEND_STATUS_OF_CODE[response.code],
        msg_id,
        answer.msg_id,
        queue,
        answer.queue_offset,
        answer.transaction_id,
        ext_fields.get(_PROPERTY_MSG_REGION) or DEFAULT_TRACE_REGION_ID,
        ext_fields.get(_PROPERTY_TRACE_SWITCH) != "false",
    )


async def send_message_oneway(
    remoting: RemotingClient, addr: str, request: RemotingCommand
) -> None:
    """Send a send `request` marked oneway: written to the socket, never answered."""
    await remoting.invoke_oneway(addr, request)


async def consumer_send_msg_back(
    remoting: RemotingClient,
    addr: str,
    header: ConsumerSendMsgBackRequestHeader,
    timeout: float,
) -> None:
    """CONSUMER_SEND_MSG_BACK: hand a message that failed to consume back to the broker,
    which stores it in the group's retry topic (or its DLQ)."""
    request = create_request(RequestCode.CONSUMER_SEND_MSG_BACK, header)
    await request_broker(remoting, addr, request, timeout)


# --- pulling and offsets ---------------------------------------------------------------------


class PullStatus(enum.Enum):
    FOUND = ResponseCode.SUCCESS
    NO_NEW_MSG = ResponseCode.PULL_NOT_FOUND
    NO_MATCHED_MSG = ResponseCode.PULL_RETRY_IMMEDIATELY
    OFFSET_ILLEGAL = ResponseCode.PULL_OFFSET_MOVED


_PULL_ACCEPTED = frozenset(status.value for status in PullStatus)


@dataclass(slots=True)
class PullResult:
    """A pull answer.  `body` holds the stored records end to end (FOUND only) as a view of
    the response frame: walk it with `rmq.common.message.iter_records`."""

    status: PullStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    suggest_which_broker_id: int
    body: memoryview | None

    def records(self) -> list[MessageRecord]:
        """The records of `body` (stops at the first that does not decode, as Java does)."""
        if self.body is None:
            return []
        return [record for _, record in iter_records(self.body)]


async def pull_message(
    remoting: RemotingClient, addr: str, header: PullMessageRequestHeader, timeout: float
) -> PullResult:
    """PULL_MESSAGE.  With the suspend bit in `header.sys_flag` the broker may hold the
    request up to `header.suspend_timeout_millis`: `timeout` must be longer than that."""
    request = create_request(RequestCode.PULL_MESSAGE, header)
    response = await request_broker(remoting, addr, request, timeout, _PULL_ACCEPTED)
    answer = response.read_header(PullMessageResponseHeader)
    body = response.body
    return PullResult(
        PullStatus(response.code),
        answer.next_begin_offset,
        answer.min_offset,
        answer.max_offset,
        answer.suggest_which_broker_id,
        memoryview(body) if body else None,
    )


async def query_consumer_offset(
    remoting: RemotingClient, addr: str, group: str, mq: MessageQueue, timeout: float
) -> int | None:
    """QUERY_CONSUMER_OFFSET: the offset `group` committed for `mq`, or None when the
    broker has none (QUERY_NOT_FOUND)."""
    header = QueryConsumerOffsetRequestHeader(
        consumer_group=group, topic=mq.topic, queue_id=mq.queue_id, bname=mq.broker_name
    )
    request = create_request(RequestCode.QUERY_CONSUMER_OFFSET, header)
    accepted = frozenset({ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND})
    response = await request_broker(remoting, addr, request, timeout, accepted)
    if response.code == ResponseCode.QUERY_NOT_FOUND:
        return None
    return response.read_header(QueryConsumerOffsetResponseHeader).offset


def _update_offset_request(group: str, mq: MessageQueue, offset: int) -> RemotingCommand:
    header = UpdateConsumerOffsetRequestHeader(
        consumer_group=group,
        topic=mq.topic,
        queue_id=mq.queue_id,
        commit_offset=offset,
        bname=mq.broker_name,
    )
    return create_request(RequestCode.UPDATE_CONSUMER_OFFSET, header)


async def update_consumer_offset(
    remoting: RemotingClient,
    addr: str,
    group: str,
    mq: MessageQueue,
    offset: int,
    timeout: float,
) -> None:
    """UPDATE_CONSUMER_OFFSET: commit `offset` for `group` on `mq` and wait for the answer."""
    request = _update_offset_request(group, mq, offset)
    await request_broker(remoting, addr, request, timeout)


async def update_consumer_offset_oneway(
    remoting: RemotingClient, addr: str, group: str, mq: MessageQueue, offset: int
) -> None:
    """UPDATE_CONSUMER_OFFSET sent oneway (what the Java consumer's periodic commit does)."""
    await remoting.invoke_oneway(addr, _update_offset_request(group, mq, offset))


async def _broker_answer(
    remoting: RemotingClient,
    addr: str,
    code: int,
    header: object,
    answer: type[H],
    timeout: float,
) -> H:
    """The response header `answer` of a request the broker must answer with SUCCESS."""
    response = await request_broker(remoting, addr, create_request(code, header), timeout)
    return response.read_header(answer)


async def _queue_answer(
    remoting: RemotingClient,
    addr: str,
    mq: MessageQueue,
    code: int,
    request: Callable[..., object],
    answer: type[H],
    timeout: float,
) -> H:
    """The answer to a request about one queue, whose header names only the queue."""
    header = request(topic=mq.topic, queue_id=mq.queue_id, bname=mq.broker_name)
    return await _broker_answer(remoting, addr, code, header, answer, timeout)


async def get_max_offset(
    remoting: RemotingClient, addr: str, mq: MessageQueue, timeout: float
) -> int:
    """GET_MAX_OFFSET: the queue offset the next message of `mq` will get."""
    answer = await _queue_answer(
        remoting,
        addr,
        mq,
        RequestCode.GET_MAX_OFFSET,
        GetMaxOffsetRequestHeader,
        GetMaxOffsetResponseHeader,
        timeout,
    )
    return answer.offset


async def get_min_offset(
    remoting: RemotingClient, addr: str, mq: MessageQueue, timeout: float
) -> int:
    """GET_MIN_OFFSET: the oldest queue offset of `mq` still stored."""
    answer = await _queue_answer(
        remoting,
        addr,
        mq,
        RequestCode.GET_MIN_OFFSET,
        GetMinOffsetRequestHeader,
        GetMinOffsetResponseHeader,
        timeout,
    )
    return answer.offset


async def get_earliest_msg_store_time(
    remoting: RemotingClient, addr: str, mq: MessageQueue, timeout: float
) -> int:
    """GET_EARLIEST_MSG_STORETIME: the store time (ms) of the oldest message of `mq`."""
    answer = await _queue_answer(
        remoting,
        addr,
        mq,
        RequestCode.GET_EARLIEST_MSG_STORETIME,
        GetEarliestMsgStoretimeRequestHeader,
        GetEarliestMsgStoretimeResponseHeader,
        timeout,
    )
    return answer.timestamp


async def search_offset(
    remoting: RemotingClient, addr: str, mq: MessageQueue, timestamp: int, timeout: float
) -> int:
    """SEARCH_OFFSET_BY_TIMESTAMP: the queue offset of the message of `mq` whose store time
    is nearest to `timestamp` (ms), which may be stored before it.

    The broker binary-searches one consume queue file (the first modified at or after
    `timestamp`, else the last) by store time: a message stored exactly then wins, else the
    nearer of the last one stored before and the first one stored after (the earlier on a
    tie).  An empty queue answers 0."""
    header = SearchOffsetRequestHeader(
        topic=mq.topic, queue_id=mq.queue_id, timestamp=timestamp, bname=mq.broker_name
    )
    code = RequestCode.SEARCH_OFFSET_BY_TIMESTAMP
    answer = await _broker_answer(remoting, addr, code, header, SearchOffsetResponseHeader, timeout)
    return answer.offset


# --- consumer groups, heartbeats, locks ------------------------------------------------------


async def send_heartbeat(
    remoting: RemotingClient, addr: str, heartbeat: HeartbeatData, timeout: float
) -> int:
    """HEART_BEAT; returns the protocol version the broker answered with."""
    request = create_request(RequestCode.HEART_BEAT, body=heartbeat.encode())
    response = await request_broker(remoting, addr, request, timeout)
    return response.version


async def unregister_client(
    remoting: RemotingClient,
    addr: str,
    client_id: str,
    timeout: float,
    *,
    producer_group: str | None = None,
    consumer_group: str | None = None,
) -> None:
    """UNREGISTER_CLIENT: the broker forgets this client in the given group(s)."""
    header = UnregisterClientRequestHeader(
        client_id=client_id, producer_group=producer_group, consumer_group=consumer_group
    )
    request = create_request(RequestCode.UNREGISTER_CLIENT, header)
    await request_broker(remoting, addr, request, timeout)


async def get_consumer_id_list(
    remoting: RemotingClient, addr: str, group: str, timeout: float
) -> list[str]:
    """GET_CONSUMER_LIST_BY_GROUP: the client ids of the group's live consumers."""
    header = GetConsumerListByGroupRequestHeader(consumer_group=group)
    request = create_request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, header)
    response = await request_broker(remoting, addr, request, timeout)
    body = _body_of(response, addr, "the consumer list")
    return GetConsumerListByGroupResponseBody.decode(body).consumer_id_list


async def lock_batch_mq(
    remoting: RemotingClient,
    addr: str,
    group: str,
    client_id: str,
    mqs: Iterable[MessageQueue],
    timeout: float,
) -> list[MessageQueue]:
    """LOCK_BATCH_MQ: lock `mqs` for orderly consumption; returns the queues now locked by
    this client (the others are held by someone else)."""
    body = LockBatchRequestBody(consumer_group=group, client_id=client_id, mq_set=list(mqs))
    request = create_request(RequestCode.LOCK_BATCH_MQ, body=body.encode())
    response = await request_broker(remoting, addr, request, timeout)
    locked = LockBatchResponseBody.decode(_body_of(response, addr, "the locked queues"))
    return locked.lock_ok_mq_set


async def unlock_batch_mq(
    remoting: RemotingClient,
    addr: str,
    group: str,
    client_id: str,
    mqs: Iterable[MessageQueue],
    timeout: float,
    *,
    oneway: bool = False,
) -> None:
    """UNLOCK_BATCH_MQ: release the locks this client holds on `mqs`."""
    body = UnlockBatchRequestBody(consumer_group=group, client_id=client_id, mq_set=list(mqs))
    request = create_request(RequestCode.UNLOCK_BATCH_MQ, body=body.encode())
    if oneway:
        await remoting.invoke_oneway(addr, request)
    else:
        await request_broker(remoting, addr, request, timeout)


# --- lookups ---------------------------------------------------------------------------------


async def view_message(
    remoting: RemotingClient, addr: str, physical_offset: int, timeout: float
) -> MessageRecord:
    """VIEW_MESSAGE_BY_ID: the record stored at `physical_offset` of the broker's commitlog
    (the offset half of an offset message id)."""
    request = create_request(
        RequestCode.VIEW_MESSAGE_BY_ID, ViewMessageRequestHeader(offset=physical_offset)
    )
    response = await request_broker(remoting, addr, request, timeout)
    return decode_record(_body_of(response, addr, "the message"))


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


# =============================================================================================
# admin requests: topics, cluster state and name server KV config, as the admin API
# (rmq.client.admin) sends them.  The request builders are public so that a dry run can show
# exactly what would be sent.
# =============================================================================================


def create_topic_request(config: TopicConfig) -> RemotingCommand:
    """The UPDATE_AND_CREATE_TOPIC request for `config`, with TBW102 as default topic (what
    mqadmin sends)."""
    header = CreateTopicRequestHeader(
        topic=config.topic_name,
        default_topic=AUTO_CREATE_TOPIC_KEY_TOPIC,
        read_queue_nums=config.read_queue_nums,
        write_queue_nums=config.write_queue_nums,
        perm=config.perm,
        topic_filter_type=config.topic_filter_type.name,
        topic_sys_flag=config.topic_sys_flag,
        order=config.order,
    )
    return create_request(RequestCode.UPDATE_AND_CREATE_TOPIC, header)


async def update_and_create_topic(
    remoting: RemotingClient, addr: str, config: TopicConfig, timeout: float
) -> None:
    """UPDATE_AND_CREATE_TOPIC: create `config` on the broker, or replace its queue counts,
    perm and sysflag (a broker keeps no order flag: that lives in the name server's KV)."""
    await request_broker(remoting, addr, create_topic_request(config), timeout)


def delete_topic_in_broker_request(topic: str) -> RemotingCommand:
    """The DELETE_TOPIC_IN_BROKER request for `topic`."""
    return create_request(RequestCode.DELETE_TOPIC_IN_BROKER, DeleteTopicRequestHeader(topic=topic))


async def delete_topic_in_broker(
    remoting: RemotingClient, addr: str, topic: str, timeout: float
) -> None:
    """DELETE_TOPIC_IN_BROKER: the broker drops the topic's config and its queues."""
    await request_broker(remoting, addr, delete_topic_in_broker_request(topic), timeout)


def delete_topic_in_namesrv_request(topic: str, cluster: str | None) -> RemotingCommand:
    """The DELETE_TOPIC_IN_NAMESRV request; with `cluster`, only that cluster's brokers lose
    the topic's route."""
    header = DeleteTopicFromNamesrvRequestHeader(topic=topic, cluster_name=cluster)
    return create_request(RequestCode.DELETE_TOPIC_IN_NAMESRV, header)


async def delete_topic_in_namesrv(
    remoting: RemotingClient, addr: str, topic: str, cluster: str | None, timeout: float
) -> None:
    """DELETE_TOPIC_IN_NAMESRV: the name server forgets the topic's route (of `cluster`)."""
    await request_namesrv(remoting, addr, delete_topic_in_namesrv_request(topic, cluster), timeout)


async def get_topic_stats_info(
    remoting: RemotingClient, addr: str, topic: str, timeout: float
) -> TopicStatsTable:
    """GET_TOPIC_STATS_INFO: min/max offset and last store time of each of the broker's
    queues of `topic`."""
    request = create_request(
        RequestCode.GET_TOPIC_STATS_INFO, GetTopicStatsInfoRequestHeader(topic=topic)
    )
    response = await request_broker(remoting, addr, request, timeout)
    return TopicStatsTable.decode(_body_of(response, addr, "the topic stats"))


async def get_broker_runtime_info(
    remoting: RemotingClient, addr: str, timeout: float
) -> dict[str, str]:
    """GET_BROKER_RUNTIME_INFO: the broker's runtime table (Apache's keys, text values)."""
    request = create_request(RequestCode.GET_BROKER_RUNTIME_INFO)
    response = await request_broker(remoting, addr, request, timeout)
    return KVTable.decode(_body_of(response, addr, "the runtime info")).table


async def get_topics_by_cluster(
    remoting: RemotingClient, addr: str, cluster: str, timeout: float
) -> TopicList:
    """GET_TOPICS_BY_CLUSTER: every topic with queues on a broker of `cluster`."""
    request = create_request(
        RequestCode.GET_TOPICS_BY_CLUSTER, GetTopicsByClusterRequestHeader(cluster=cluster)
    )
    response = await request_namesrv(remoting, addr, request, timeout)
    return TopicList.decode(_body_of(response, addr, "the topic list"))


def put_kv_config_request(namespace: str, key: str, value: str) -> RemotingCommand:
    """The PUT_KV_CONFIG request."""
    header = PutKVConfigRequestHeader(namespace=namespace, key=key, value=value)
    return create_request(RequestCode.PUT_KV_CONFIG, header)


async def put_kv_config(
    remoting: RemotingClient, addr: str, namespace: str, key: str, value: str, timeout: float
) -> None:
    """PUT_KV_CONFIG: set `key` in `namespace` on one name server."""
    await request_namesrv(remoting, addr, put_kv_config_request(namespace, key, value), timeout)


async def get_kv_config(
    remoting: RemotingClient, addr: str, namespace: str, key: str, timeout: float
) -> str | None:
    """GET_KV_CONFIG: the value of `key` in `namespace`, None when the name server has none
    (QUERY_NOT_FOUND)."""
    header = GetKVConfigRequestHeader(namespace=namespace, key=key)
    request = create_request(RequestCode.GET_KV_CONFIG, header)
    response = await remoting.invoke(addr, request, timeout)
    if response.code == ResponseCode.QUERY_NOT_FOUND:
        return None
    if response.code != ResponseCode.SUCCESS:
        raise MQClientError(response.code, response.remark or "")
    return response.read_header(GetKVConfigResponseHeader).value
