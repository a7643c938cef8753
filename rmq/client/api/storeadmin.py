"""A broker's store maintenance, stats items and half-message resume (``MQClientAPIImpl``).

* `clean_expired_consume_queue`, `delete_expired_commitlog`, `clean_unused_topic`: the three
  maintenance requests; anything but SUCCESS raises MQBrokerError.
* `view_broker_stats_data`: one stats item's minute, hour and day windows (a BrokerStatsData);
  an unknown item raises MQBrokerError (SYSTEM_ERROR "The stats <name> <key> not exist").
* `resume_check_half_message`: True when the broker put the half message back to be checked
  again; False (with the broker's remark logged) otherwise, as Java's client answers.
"""

from __future__ import annotations

import logging

from rmq.client.api.request import body_of, request_broker
from rmq.remoting.bodies.brokerstats import BrokerStatsData
from rmq.remoting.client import RemotingClient
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import create_request
from rmq.remoting.headers import (
    ResumeCheckHalfMessageRequestHeader,
    ViewBrokerStatsDataRequestHeader,
)

log = logging.getLogger("rmq.client")


async def clean_expired_consume_queue(remoting: RemotingClient, addr: str, timeout: float) -> None:
    """CLEAN_EXPIRED_CONSUMEQUEUE: the broker deletes the consume queues that point only
    below its commitlog."""
    await request_broker(
        remoting, addr, create_request(RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE), timeout
    )


async def delete_expired_commitlog(remoting: RemotingClient, addr: str, timeout: float) -> None:
    """DELETE_EXPIRED_COMMITLOG: the broker's next cleanup runs delete expired commitlog
    files whatever the hour."""
    await request_broker(
        remoting, addr, create_request(RequestCode.DELETE_EXPIRED_COMMITLOG), timeout
    )


async def clean_unused_topic(remoting: RemotingClient, addr: str, timeout: float) -> None:
    """CLEAN_UNUSED_TOPIC: the broker deletes the consume queues of topics it has no config
    for."""
    await request_broker(remoting, addr, create_request(RequestCode.CLEAN_UNUSED_TOPIC), timeout)


async def view_broker_stats_data(
    remoting: RemotingClient, addr: str, stats_name: str, stats_key: str, timeout: float
) -> BrokerStatsData:
    """VIEW_BROKER_STATS_DATA: the stats item ``stats_name`` / ``stats_key`` (for instance
    ``TOPIC_PUT_NUMS`` / a topic, ``GROUP_GET_NUMS`` / ``topic@group``)."""
    header = ViewBrokerStatsDataRequestHeader(stats_name=stats_name, stats_key=stats_key)
    request = create_request(RequestCode.VIEW_BROKER_STATS_DATA, header)
    response = await request_broker(remoting, addr, request, timeout)
    return BrokerStatsData.decode(body_of(response, addr, "the stats data"))


async def resume_check_half_message(
    remoting: RemotingClient, addr: str, msg_id: str, timeout: float
) -> bool:
    """RESUME_CHECK_HALF_MESSAGE: whether the broker put the half message with offset
    message id ``msg_id`` back to be checked again."""
    header = ResumeCheckHalfMessageRequestHeader(msg_id=msg_id)
    request = create_request(RequestCode.RESUME_CHECK_HALF_MESSAGE, header)
    response = await remoting.invoke(addr, request, timeout)
    if response.code != ResponseCode.SUCCESS:
        log.error("failed to resume the half message check of %s: %s", msg_id, response.remark)
        return False
    return True
