"""Admin requests to a broker: creating and deleting topics, topic stats, runtime info.

The request builders are public so that a dry run can show exactly what would be sent.
"""

from __future__ import annotations

from rmq.client.api.request import body_of, request_broker
from rmq.common.naming import (
    AUTO_CREATE_TOPIC_KEY_TOPIC,
)
from rmq.remoting.bodies import (
    KVTable,
    TopicConfig,
    TopicStatsTable,
)
from rmq.remoting.client import RemotingClient
from rmq.remoting.codes import RequestCode
from rmq.remoting.command import RemotingCommand, create_request
from rmq.remoting.headers import (
    CreateTopicRequestHeader,
    DeleteTopicRequestHeader,
    GetTopicStatsInfoRequestHeader,
)


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


async def get_topic_stats_info(
    remoting: RemotingClient, addr: str, topic: str, timeout: float
) -> TopicStatsTable:
    """GET_TOPIC_STATS_INFO: min/max offset and last store time of each of the broker's
    queues of `topic`."""
    request = create_request(
        RequestCode.GET_TOPIC_STATS_INFO, GetTopicStatsInfoRequestHeader(topic=topic)
    )
    response = await request_broker(remoting, addr, request, timeout)
    return TopicStatsTable.decode(body_of(response, addr, "the topic stats"))


async def get_broker_runtime_info(
    remoting: RemotingClient, addr: str, timeout: float
) -> dict[str, str]:
    """GET_BROKER_RUNTIME_INFO: the broker's runtime table (Apache's keys, text values)."""
    request = create_request(RequestCode.GET_BROKER_RUNTIME_INFO)
    response = await request_broker(remoting, addr, request, timeout)
    return KVTable.decode(body_of(response, addr, "the runtime info")).table
