"""A consumer group's requests: heartbeats, unregistering, the group's members, queue locks,
and CHECK_CLIENT_CONFIG of a subscription."""

from __future__ import annotations

from collections.abc import Iterable

from rmq.client.api.request import body_of, request_broker
from rmq.remoting.bodies import (
    CheckClientRequestBody,
    GetConsumerListByGroupResponseBody,
    HeartbeatData,
    LockBatchRequestBody,
    LockBatchResponseBody,
    MessageQueue,
    SubscriptionData,
    UnlockBatchRequestBody,
)
from rmq.remoting.client import RemotingClient
from rmq.remoting.codes import RequestCode
from rmq.remoting.command import create_request
from rmq.remoting.headers import (
    GetConsumerListByGroupRequestHeader,
    UnregisterClientRequestHeader,
)


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
    body = body_of(response, addr, "the consumer list")
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
    locked = LockBatchResponseBody.decode(body_of(response, addr, "the locked queues"))
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


async def check_client_config(
    remoting: RemotingClient,
    addr: str,
    client_id: str,
    group: str,
    subscription: SubscriptionData,
    timeout: float,
) -> None:
    """CHECK_CLIENT_CONFIG: the broker validates a subscription (for SQL92: that it filters by
    properties and the expression compiles); a refusal raises MQBrokerError with its reason."""
    body = CheckClientRequestBody(client_id=client_id, group=group, subscription_data=subscription)
    await request_broker(
        remoting, addr, create_request(RequestCode.CHECK_CLIENT_CONFIG, body=body.encode()), timeout
    )
