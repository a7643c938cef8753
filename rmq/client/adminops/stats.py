"""Reads behind the metrics of `rmq exporter` that no other admin operation offered.

* `broker_stats`: VIEW_BROKER_STATS_DATA to one broker: a stats item's minute, hour and day
  windows (`TOPIC_PUT_NUMS` / topic, `GROUP_GET_NUMS` / `topic@group`, `BROKER_PUT_NUMS` /
  cluster, ...); the broker answers an error for an item it never counted;
* `topic_consumers`: QUERY_TOPIC_CONSUME_BY_WHO to one broker of the topic's route (the
  master, else a slave), as mqadmin's queryTopicConsumeByWho: the groups online on the topic
  or with offsets on it (empty when the topic has no broker).
"""

from __future__ import annotations

from rmq.client import api
from rmq.client.admin import AdminClient
from rmq.remoting.bodies.brokerstats import BrokerStatsData

TOPIC_PUT_NUMS = "TOPIC_PUT_NUMS"
TOPIC_PUT_SIZE = "TOPIC_PUT_SIZE"
GROUP_GET_NUMS = "GROUP_GET_NUMS"
GROUP_GET_SIZE = "GROUP_GET_SIZE"
SNDBCK_PUT_NUMS = "SNDBCK_PUT_NUMS"
BROKER_PUT_NUMS = "BROKER_PUT_NUMS"
BROKER_GET_NUMS = "BROKER_GET_NUMS"


async def broker_stats(admin: AdminClient, addr: str, name: str, key: str) -> BrokerStatsData:
    """VIEW_BROKER_STATS_DATA: the stats item `name` / `key` of the broker at `addr`."""
    return await api.view_broker_stats_data(admin.remoting, addr, name, key, admin.timeout)


async def topic_consumers(admin: AdminClient, topic: str) -> list[str]:
    """The groups consuming `topic`, asked of the first broker of its route."""
    route = await admin.topic_route(topic)
    for data in route.broker_datas:
        addr = data.select_broker_addr()
        if addr is not None:
            return await api.query_topic_consume_by_who(admin.remoting, addr, topic, admin.timeout)
    return []
