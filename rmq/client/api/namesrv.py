"""Requests to the name server: routes, cluster and topic lists, topic deletion, KV config.

The request builders of the admin requests are public so that a dry run can show exactly
what would be sent.
"""

from __future__ import annotations

from rmq.client.api.request import body_of, request_namesrv
from rmq.client.errors import MQClientError, RouteNotFound
from rmq.remoting.bodies import (
    ClusterInfo,
    TopicList,
    TopicRouteData,
)
from rmq.remoting.client import RemotingClient
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, create_request
from rmq.remoting.headers import (
    DeleteTopicFromNamesrvRequestHeader,
    GetKVConfigRequestHeader,
    GetKVConfigResponseHeader,
    GetRouteInfoRequestHeader,
    GetTopicsByClusterRequestHeader,
    PutKVConfigRequestHeader,
)


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
    return TopicRouteData.decode(body_of(response, addr, "a topic route"))


async def get_broker_cluster_info(
    remoting: RemotingClient, addr: str, timeout: float
) -> ClusterInfo:
    """GET_BROKER_CLUSTER_INFO: every broker the name server knows, by name and cluster."""
    request = create_request(RequestCode.GET_BROKER_CLUSTER_INFO)
    response = await request_namesrv(remoting, addr, request, timeout)
    return ClusterInfo.decode(body_of(response, addr, "the cluster info"))


async def get_all_topic_list(remoting: RemotingClient, addr: str, timeout: float) -> TopicList:
    """GET_ALL_TOPIC_LIST_FROM_NAMESERVER: every topic some broker registered."""
    request = create_request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
    response = await request_namesrv(remoting, addr, request, timeout)
    return TopicList.decode(body_of(response, addr, "the topic list"))


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


async def get_topics_by_cluster(
    remoting: RemotingClient, addr: str, cluster: str, timeout: float
) -> TopicList:
    """GET_TOPICS_BY_CLUSTER: every topic with queues on a broker of `cluster`."""
    request = create_request(
        RequestCode.GET_TOPICS_BY_CLUSTER, GetTopicsByClusterRequestHeader(cluster=cluster)
    )
    response = await request_namesrv(remoting, addr, request, timeout)
    return TopicList.decode(body_of(response, addr, "the topic list"))


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
