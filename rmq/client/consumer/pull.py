"""The pull consumer: explicit reads of chosen queues at chosen offsets, as RocketMQ's
``DefaultMQPullConsumer`` does.

    async with PullConsumer("my-group", "127.0.0.1:9876") as consumer:
        for mq in await consumer.fetch_subscribe_message_queues("TopicA"):
            result = await consumer.pull(mq, offset, 32, "TagA")
            ...
            await consumer.update_consume_offset(mq, result.next_begin_offset)

Nothing here runs in the background: the caller picks the queues and the offsets.  Each
pull carries its subscription (FLAG_SUBSCRIPTION), so the broker needs no heartbeat-
registered subscription to filter; the consumer still registers its group with the client
instance, whose heartbeats list the topics it pulled, so admin tools see it.  ``block=True``
is Java's ``pullBlockIfNotFound``: the broker holds the request up to
``broker_suspend_max_time`` (20 s) until a message arrives.

Offsets are the group's on the brokers: :meth:`fetch_consume_offset` reads one
(QUERY_CONSUMER_OFFSET), :meth:`update_consume_offset` commits one and waits for the broker.
A pull goes to the broker the last answer for that queue suggested (a slave while the master
is gone from the route); offsets and the queue bounds are asked of the master, or of a slave
while there is none (:mod:`~rmq.client.consumer.pullnode`).
The queue's own bounds come from :meth:`min_offset`, :meth:`max_offset` (the next offset to
be written), :meth:`search_offset` (the message stored nearest to a time) and
:meth:`earliest_msg_store_time`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from rmq.client import api
from rmq.client.api import PullStatus
from rmq.client.consumer.pullnode import PullNodes, offset_broker
from rmq.client.errors import MQClientError
from rmq.client.instance import ClientInstance
from rmq.client.member import ClientMember
from rmq.client.messageext import MessageExt, decode_pull_body
from rmq.common.sysflag import PULL_SUBSCRIPTION, PULL_SUSPEND
from rmq.remoting.bodies import (
    EXPRESSION_TYPE_TAG,
    SUB_ALL,
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    MessageModel,
    MessageQueue,
    SubscriptionData,
)
from rmq.remoting.headers import PullMessageRequestHeader

__all__ = ["PullConsumer", "PullResult", "PullStatus"]

log = logging.getLogger(__name__)

BROKER_SUSPEND_MAX_TIME = 20.0
CONSUMER_PULL_TIMEOUT = 10.0
CONSUMER_TIMEOUT_WHEN_SUSPEND = 30.0


@dataclass(frozen=True, slots=True)
class PullResult:
    """A pull's outcome: the messages found (FOUND only, tag strings re-checked) and where
    the next pull of the queue starts."""

    status: PullStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    messages: list[MessageExt]


class PullConsumer(ClientMember):
    """Pulls for group ``group`` (see the module docstring).

    ``namesrv_addrs`` makes the consumer create, start and shut down its own
    `ClientInstance`; an ``instance`` given instead is shared and left running.
    """

    role = "consumer"

    def __init__(
        self,
        group: str,
        namesrv_addrs: str | None = None,
        *,
        instance: ClientInstance | None = None,
        instance_name: str | None = None,
        broker_suspend_max_time: float = BROKER_SUSPEND_MAX_TIME,
        consumer_pull_timeout: float = CONSUMER_PULL_TIMEOUT,
        consumer_timeout_when_suspend: float = CONSUMER_TIMEOUT_WHEN_SUSPEND,
    ) -> None:
        super().__init__(group, namesrv_addrs, instance, instance_name)
        self.broker_suspend_max_time = broker_suspend_max_time
        self.consumer_pull_timeout = consumer_pull_timeout
        self.consumer_timeout_when_suspend = consumer_timeout_when_suspend
        self._topics: dict[str, SubscriptionData] = {}
        self.pull_nodes = PullNodes()

    # --- lifecycle ------------------------------------------------------------------------

    async def _join(self) -> None:
        self.instance.register_consumer(self)

    async def _leave(self) -> None:
        await self.instance.unregister_consumer(self.group)

    # --- what the client instance asks of a registered consumer --------------------------

    def consumer_data(self) -> ConsumerData:
        return ConsumerData(
            group_name=self.group,
            consume_type=ConsumeType.CONSUME_ACTIVELY,
            message_model=MessageModel.CLUSTERING,
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
            subscription_data_set=list(self._topics.values()),
        )

    def rebalance_now(self) -> None:
        """Nothing to do: a pull consumer's caller chooses its queues."""

    # --- pulling --------------------------------------------------------------------------

    async def fetch_subscribe_message_queues(self, topic: str) -> list[MessageQueue]:
        """Every readable queue of ``topic``, sorted (the route is fetched afresh);
        RouteNotFound when the topic does not exist."""
        return await self.instance.subscribe_queues(topic, refresh=True)

    async def pull(
        self,
        mq: MessageQueue,
        offset: int,
        max_nums: int = 32,
        expression: str | None = SUB_ALL,
        *,
        expression_type: str = EXPRESSION_TYPE_TAG,
        block: bool = False,
        timeout: float | None = None,
    ) -> PullResult:
        """Read up to ``max_nums`` messages of ``mq`` from queue offset ``offset`` that match
        the tag ``expression`` (or, with ``expression_type`` "SQL92", the SQL92 expression on
        their properties); with ``block`` wait for new messages (see the module docstring).
        Broker refusals raise MQBrokerError, connection trouble the remoting errors."""
        self._check_running()
        if offset < 0:
            raise MQClientError(-1, "offset < 0")
        if max_nums <= 0:
            raise MQClientError(-1, "maxNums <= 0")
        subscription = SubscriptionData.from_expression(mq.topic, expression, expression_type)
        self._topics.setdefault(mq.topic, SubscriptionData.from_expression(mq.topic, SUB_ALL))
        header = PullMessageRequestHeader(
            consumer_group=self.group,
            topic=mq.topic,
            queue_id=mq.queue_id,
            queue_offset=offset,
            max_msg_nums=max_nums,
            sys_flag=PULL_SUBSCRIPTION | (PULL_SUSPEND if block else 0),
            commit_offset=0,
            suspend_timeout_millis=int(self.broker_suspend_max_time * 1000),
            subscription=subscription.sub_string,
            sub_version=0,
            expression_type=subscription.expression_type,
            bname=mq.broker_name,
        )
        if block:
            timeout = self.consumer_timeout_when_suspend
        elif timeout is None:
            timeout = self.consumer_pull_timeout
        broker = await self.pull_nodes.broker_for_pull(self.instance, mq)
        result = await api.pull_message(self.instance.remoting, broker.addr, header, timeout)
        self.pull_nodes.suggest(mq, result.suggest_which_broker_id)
        messages = []
        if result.status is PullStatus.FOUND:
            messages = decode_pull_body(
                result.body,
                mq.broker_name,
                subscription.tags_set,
                result.min_offset,
                result.max_offset,
            )
        return PullResult(
            result.status, result.next_begin_offset, result.min_offset, result.max_offset, messages
        )

    # --- offsets --------------------------------------------------------------------------

    async def fetch_consume_offset(self, mq: MessageQueue) -> int:
        """The group's committed offset of ``mq``, -1 when it has none."""
        addr = await offset_broker(self.instance, mq)
        offset = await api.query_consumer_offset(
            self.instance.remoting, addr, self.group, mq, self.instance.api_timeout
        )
        return -1 if offset is None else offset

    async def update_consume_offset(self, mq: MessageQueue, offset: int) -> None:
        """Commit ``offset`` as the group's offset of ``mq`` and wait for the broker."""
        addr = await offset_broker(self.instance, mq)
        await api.update_consumer_offset(
            self.instance.remoting, addr, self.group, mq, offset, self.instance.api_timeout
        )

    async def min_offset(self, mq: MessageQueue) -> int:
        addr = await offset_broker(self.instance, mq)
        return await api.get_min_offset(self.instance.remoting, addr, mq, self.instance.api_timeout)

    async def max_offset(self, mq: MessageQueue) -> int:
        """The offset the next message of ``mq`` will get."""
        addr = await offset_broker(self.instance, mq)
        return await api.get_max_offset(self.instance.remoting, addr, mq, self.instance.api_timeout)

    async def search_offset(self, mq: MessageQueue, timestamp: int) -> int:
        """The offset of the message of ``mq`` stored nearest to ``timestamp`` (ms), before
        or after it (see :func:`rmq.client.api.search_offset`)."""
        addr = await offset_broker(self.instance, mq)
        return await api.search_offset(
            self.instance.remoting, addr, mq, timestamp, self.instance.api_timeout
        )

    async def earliest_msg_store_time(self, mq: MessageQueue) -> int:
        addr = await offset_broker(self.instance, mq)
        return await api.get_earliest_msg_store_time(
            self.instance.remoting, addr, mq, self.instance.api_timeout
        )

    def _check_running(self) -> None:
        if not self._running:
            raise MQClientError(-1, f"the consumer {self.group} is not started")
