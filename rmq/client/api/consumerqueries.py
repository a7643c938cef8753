"""A broker's consumer and producer queries: who consumes a topic, how far groups are, what a
consume queue holds, which producers are connected, and cloning a group's offsets.

Each function sends one request as Apache's ``MQClientAPIImpl`` does and returns its body;
any answer but SUCCESS raises ``MQBrokerError`` with the broker's remark.
"""

from __future__ import annotations

from collections.abc import Iterable

from rmq.client.api.request import body_of, request_broker
from rmq.remoting.bodies import (
    ConsumeStatsList,
    GroupList,
    ProducerTableInfo,
    QueryConsumeQueueResponseBody,
    QueryConsumeTimeSpanBody,
    QueryCorrectionOffsetBody,
    QueueTimeSpan,
    TopicList,
)
from rmq.remoting.client import RemotingClient
from rmq.remoting.codes import RequestCode
from rmq.remoting.command import create_request
from rmq.remoting.headers import (
    CloneGroupOffsetRequestHeader,
    GetAllProducerInfoRequestHeader,
    GetConsumeStatsInBrokerHeader,
    QueryConsumeQueueRequestHeader,
    QueryConsumeTimeSpanRequestHeader,
    QueryCorrectionOffsetHeader,
    QueryTopicConsumeByWhoRequestHeader,
)


async def query_topic_consume_by_who(
    remoting: RemotingClient, addr: str, topic: str, timeout: float
) -> list[str]:
    """QUERY_TOPIC_CONSUME_BY_WHO: the groups online on `topic` or with offsets on it."""
    request = create_request(
        RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, QueryTopicConsumeByWhoRequestHeader(topic=topic)
    )
    response = await request_broker(remoting, addr, request, timeout)
    return GroupList.decode(body_of(response, addr, "the group list")).group_list


async def query_consume_time_span(
    remoting: RemotingClient, addr: str, topic: str, group: str, timeout: float
) -> list[QueueTimeSpan]:
    """QUERY_CONSUME_TIME_SPAN: per queue of `topic` the stored and consumed time range of
    `group`."""
    header = QueryConsumeTimeSpanRequestHeader(topic=topic, group=group)
    request = create_request(RequestCode.QUERY_CONSUME_TIME_SPAN, header)
    response = await request_broker(remoting, addr, request, timeout)
    body = QueryConsumeTimeSpanBody.decode(body_of(response, addr, "the time spans"))
    return body.consume_time_span_set


async def get_system_topic_list_from_broker(
    remoting: RemotingClient, addr: str, timeout: float
) -> list[str]:
    """GET_SYSTEM_TOPIC_LIST_FROM_BROKER: the topics the broker reserves."""
    request = create_request(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER)
    response = await request_broker(remoting, addr, request, timeout)
    return TopicList.decode(body_of(response, addr, "the topic list")).topic_list


async def query_correction_offset(
    remoting: RemotingClient,
    addr: str,
    topic: str,
    group: str,
    filter_groups: Iterable[str] | None,
    timeout: float,
) -> dict[int, int]:
    """QUERY_CORRECTION_OFFSET: per queue of `topic` the lowest offset a group other than
    `filter_groups` still needs (Long.MAX_VALUE where `group` is behind it)."""
    header = QueryCorrectionOffsetHeader(
        filter_groups=None if filter_groups is None else ",".join(filter_groups),
        compare_group=group,
        topic=topic,
    )
    request = create_request(RequestCode.QUERY_CORRECTION_OFFSET, header)
    response = await request_broker(remoting, addr, request, timeout)
    body = QueryCorrectionOffsetBody.decode(body_of(response, addr, "the correction offsets"))
    return body.correction_offsets


async def clone_group_offset(
    remoting: RemotingClient,
    addr: str,
    src_group: str,
    dest_group: str,
    topic: str | None,
    offline: bool,
    timeout: float,
) -> None:
    """CLONE_GROUP_OFFSET: give `dest_group` a copy of `src_group`'s offsets on `topic`
    (`offline`: even when the source group is online without subscribing it)."""
    header = CloneGroupOffsetRequestHeader(
        src_group=src_group, dest_group=dest_group, topic=topic, offline=offline
    )
    await request_broker(
        remoting, addr, create_request(RequestCode.CLONE_GROUP_OFFSET, header), timeout
    )


async def fetch_consume_stats_in_broker(
    remoting: RemotingClient, addr: str, is_order: bool, timeout: float
) -> ConsumeStatsList:
    """GET_BROKER_CONSUME_STATS: every group's progress on each topic (`is_order`: only order
    topics) and the broker's summed lag."""
    header = GetConsumeStatsInBrokerHeader(is_order=is_order)
    request = create_request(RequestCode.GET_BROKER_CONSUME_STATS, header)
    response = await request_broker(remoting, addr, request, timeout)
    return ConsumeStatsList.decode(body_of(response, addr, "the consume stats"))


async def query_consume_queue(
    remoting: RemotingClient,
    addr: str,
    topic: str,
    queue_id: int,
    index: int,
    count: int,
    group: str | None,
    timeout: float,
) -> QueryConsumeQueueResponseBody | None:
    """QUERY_CONSUME_QUEUE: up to `count` entries of the queue from queue offset `index`, with
    `group`'s subscription when given; None when the broker has no entry at `index` (it
    answers SUCCESS without a body then, as Apache's does)."""
    header = QueryConsumeQueueRequestHeader(
        topic=topic, queue_id=queue_id, index=index, count=count, consumer_group=group
    )
    request = create_request(RequestCode.QUERY_CONSUME_QUEUE, header)
    response = await request_broker(remoting, addr, request, timeout)
    if not response.body:
        return None
    return QueryConsumeQueueResponseBody.decode(response.body)


async def get_all_producer_info(
    remoting: RemotingClient, addr: str, timeout: float
) -> ProducerTableInfo:
    """GET_ALL_PRODUCER_INFO: every producer group connected to the broker, with its clients."""
    request = create_request(RequestCode.GET_ALL_PRODUCER_INFO, GetAllProducerInfoRequestHeader())
    response = await request_broker(remoting, addr, request, timeout)
    return ProducerTableInfo.decode(body_of(response, addr, "the producer table"))
