"""Checking a consumer's SQL92 subscriptions with the brokers before it starts.

Apache's push consumer sends CHECK_CLIENT_CONFIG for every subscription that is not a tag
expression to the brokers before its first heartbeat, and does not start when one refuses it:
a broker with ``enablePropertyFilter=false`` answers SYSTEM_ERROR "The broker does not support
consumer to filter message by SQL92", and an expression that does not compile gets
SUBSCRIPTION_PARSE_FAILED with the reason.  :func:`check_subscriptions` does the same with the
brokers of each such subscription's topic (a topic without a route yet is left to the
consumer's own retries) and raises the broker's refusal as MQBrokerError.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from rmq.client import api
from rmq.client.errors import ClientError
from rmq.client.instance import ClientInstance
from rmq.remoting.bodies import EXPRESSION_TYPE_TAG, SubscriptionData
from rmq.remoting.errors import RemotingError

log = logging.getLogger("rmq.client")

CHECK_TIMEOUT_S = 3.0


async def check_subscriptions(
    instance: ClientInstance, group: str, subscriptions: Iterable[SubscriptionData]
) -> None:
    """CHECK_CLIENT_CONFIG of each non-TAG subscription at every broker of its topic."""
    for subscription in subscriptions:
        if subscription.expression_type in (None, EXPRESSION_TYPE_TAG):
            continue
        try:
            route = await instance.get_route(subscription.topic)
        except (ClientError, RemotingError) as exc:
            log.warning("group %s: cannot check %s yet: %s", group, subscription.topic, exc)
            continue
        addrs = sorted({addr for data in route.broker_datas for addr in data.broker_addrs.values()})
        for addr in addrs:
            await api.check_client_config(
                instance.remoting, addr, instance.client_id, group, subscription, CHECK_TIMEOUT_S
            )
