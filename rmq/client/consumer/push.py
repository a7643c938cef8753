"""The push consumer: pulls the queues rebalance gives it and feeds a listener, as RocketMQ's
``DefaultMQPushConsumer`` does.

    consumer = PushConsumer("my-group", "127.0.0.1:9876")
    consumer.subscribe("TopicA", "TagA || TagB")
    consumer.register_listener(handle)          # async def handle(msgs) -> ConsumeStatus
    await consumer.start()
    ...
    await consumer.shutdown()

Moving parts, all tasks on the caller's event loop:

* **Rebalance** (:mod:`rmq.client.consumer.rebalance`) every ``rebalance_interval`` (20 s)
  and at once on NOTIFY_CONSUMER_IDS_CHANGED (:meth:`rebalance_now`); it starts one pull
  loop per newly owned queue.  In clustering mode the group's ``%RETRY%<group>`` topic is
  subscribed too, so messages sent back for a retry come round again.
* **Pull loop** per owned queue: PULL_MESSAGE with long polling (the broker holds the
  request up to 15 s when nothing is new; the client waits 30 s), carrying the committed
  offset (FLAG_COMMIT_OFFSET) in clustering mode.  Flow control: no pull while the process
  queue holds more than ``pull_threshold_for_queue`` messages (1000) or
  ``pull_threshold_size_for_queue`` MiB (100), or, consuming concurrently, spans more than
  ``consume_concurrently_max_span`` offsets (2000); it retries after 50 ms.  A failed pull
  retries after 3 s (20 ms when the broker answered FLOW_CONTROL).  An illegal offset drops
  the queue, commits the broker's suggested offset and lets the next rebalance re-add it.
  Messages whose tag string is not subscribed are dropped (the broker filters by tag hash).

Consumption is the consume services' (:mod:`rmq.client.consumer.consume`):

* **Concurrent consumption** (default): pulled messages are cut into batches of
  ``consume_message_batch_max_size`` (1) and consumed by ``consume_concurrency`` (20)
  workers.  A batch the listener fails (RECONSUME_LATER, an exception, or None) is, in
  clustering mode, sent back to the broker (CONSUMER_SEND_MSG_BACK: the broker schedules a
  redelivery through the retry topic, delay level 3 + reconsume times, or moves it to the
  DLQ after ``max_reconsume_times``, 16 by default); a message that cannot be sent back is
  consumed again locally after 5 s.  In broadcasting mode a failed message is only logged.
  The committed offset is the process queue's smallest unfinished offset.
* **Orderly consumption** (``register_listener(..., orderly=True)``): one task per queue
  consumes its messages strictly in queue order.  In clustering mode a queue is consumed
  only while this client holds its broker lock (LOCK_BATCH_MQ before the first pull,
  renewed every 20 s, trusted for 30 s, released when rebalance takes the queue away and at
  shutdown).  A failed batch is retried, in order, after ``suspend_current_queue_time``
  (1 s), without limit unless ``max_reconsume_times`` is set; past it the message goes to
  the DLQ (CONSUMER_SEND_MSG_BACK with delay level -1).
* **Offsets**: clustering commits to the brokers (:class:`RemoteBrokerOffsetStore`) every
  ``persist_consumer_offset_interval`` (5 s) and at shutdown, waiting for the answers then;
  broadcasting keeps them in a local file (:class:`LocalFileOffsetStore`).
* **Reads from slaves** (:mod:`~rmq.client.consumer.pullnode`): each queue's next pull goes
  to the broker id the last pull answer suggested, and to a slave while the master is gone
  from the route; offsets go to the master, or to the slave while there is no master.

Delivery is at least once: a message whose listener call finished is never committed past
unless it succeeded or was handed to the retry topic; a crash redelivers what was in flight.

The listener is an async callable taking the list of :class:`MessageExt` and returning a
:class:`ConsumeStatus`.  Messages redelivered from the retry topic show their original
topic.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

from rmq.client import api
from rmq.client.consumer import runstate
from rmq.client.consumer.allocate import AllocateMessageQueueAveragely, AllocateStrategy
from rmq.client.consumer.consume import (
    ConcurrentConsumeService,
    ConsumerStats,
    ConsumeService,
    MessageListener,
    OrderlyConsumeService,
    millis_since,
)
from rmq.client.consumer.filtercheck import check_subscriptions
from rmq.client.consumer.offsetstore import (
    LocalFileOffsetStore,
    OffsetStore,
    ReadOffsetType,
    RemoteBrokerOffsetStore,
)
from rmq.client.consumer.processqueue import REBALANCE_LOCK_INTERVAL, ProcessQueue
from rmq.client.consumer.pull import CONSUMER_TIMEOUT_WHEN_SUSPEND
from rmq.client.consumer.pullnode import PullNodes, offset_broker
from rmq.client.consumer.rebalance import PullRequest, Rebalance
from rmq.client.errors import ClientError, MQBrokerError, MQClientError
from rmq.client.instance import ClientInstance, run_periodically
from rmq.client.member import ClientMember
from rmq.client.messageext import decode_pull_body
from rmq.client.tracehooks import ConsumeTraceHook
from rmq.common.naming import (
    DEFAULT_CONSUMER_GROUP,
    RETRY_GROUP_TOPIC_PREFIX,
    retry_topic,
)
from rmq.common.sysflag import PULL_COMMIT_OFFSET, PULL_SUBSCRIPTION, PULL_SUSPEND
from rmq.common.timeutil import now_millis
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
from rmq.remoting.bodies.consumerinfo import ConsumeMessageDirectlyResult, ConsumerRunningInfo
from rmq.remoting.codes import ResponseCode
from rmq.remoting.errors import RemotingError
from rmq.remoting.headers import PullMessageRequestHeader

__all__ = ["PushConsumer"]

log = logging.getLogger(__name__)

BROKER_SUSPEND_MAX_TIME_MILLIS = 15_000
PULL_DELAY_WHEN_FLOW_CONTROL = 0.05
PULL_DELAY_WHEN_BROKER_FLOW_CONTROL = 0.02
PULL_DELAY_WHEN_EXCEPTION = 3.0
OFFSET_FIX_DELAY = 10.0  # an illegal offset is corrected this long after the pull said so
CONSUME_TIMESTAMP_LOOKBACK_MS = 30 * 60 * 1000  # Java's consumeTimestamp default: 30 min ago
_MIB = 1024 * 1024


class PushConsumer(ClientMember):
    """A push consumer of group ``group`` (see the module docstring).

    ``namesrv_addrs`` makes the consumer create, start and shut down its own
    `ClientInstance` (named "DEFAULT" in broadcasting mode, as Java names it, so that the
    local offset file is found again after a restart); an ``instance`` given instead is
    shared and left running.  ``consume_timestamp`` (ms) is where CONSUME_FROM_TIMESTAMP
    starts, 30 minutes before :meth:`start` by default.
    """

    role = "consumer"
    reserved_group = DEFAULT_CONSUMER_GROUP

    def __init__(
        self,
        group: str,
        namesrv_addrs: str | None = None,
        *,
        instance: ClientInstance | None = None,
        instance_name: str | None = None,
        message_model: MessageModel = MessageModel.CLUSTERING,
        consume_from_where: ConsumeFromWhere = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
        consume_timestamp: int | None = None,
        allocate_strategy: AllocateStrategy | None = None,
        consume_concurrency: int = 20,
        consume_message_batch_max_size: int = 1,
        pull_batch_size: int = 32,
        pull_interval: float = 0.0,
        pull_threshold_for_queue: int = 1000,
        pull_threshold_size_for_queue: int = 100,
        consume_concurrently_max_span: int = 2000,
        max_reconsume_times: int = -1,
        suspend_current_queue_time: float = 1.0,
        persist_consumer_offset_interval: float = 5.0,
        rebalance_interval: float = 20.0,
        post_subscription_when_pull: bool = False,
        offset_store_dir: Path | None = None,
    ) -> None:
        if instance_name is None and message_model is MessageModel.BROADCASTING:
            instance_name = "DEFAULT"
        if consume_concurrency < 1 or consume_message_batch_max_size < 1 or pull_batch_size < 1:
            raise ValueError("consume concurrency and batch sizes must be at least 1")
        super().__init__(group, namesrv_addrs, instance, instance_name)
        self.message_model = message_model
        self.consume_from_where = consume_from_where
        self.consume_timestamp = consume_timestamp
        self.allocate_strategy = allocate_strategy or AllocateMessageQueueAveragely()
        self.consume_concurrency = consume_concurrency
        self.consume_message_batch_max_size = consume_message_batch_max_size
        self.pull_batch_size = pull_batch_size
        self.pull_interval = pull_interval
        self.pull_threshold_for_queue = pull_threshold_for_queue
        self.pull_threshold_size_for_queue = pull_threshold_size_for_queue
        self.consume_concurrently_max_span = consume_concurrently_max_span
        self.max_reconsume_times = max_reconsume_times
        self.suspend_current_queue_time = suspend_current_queue_time
        self.persist_consumer_offset_interval = persist_consumer_offset_interval
        self.rebalance_interval = rebalance_interval
        self.post_subscription_when_pull = post_subscription_when_pull
        self.offset_store_dir = offset_store_dir
        self.orderly = False
        self.stats = ConsumerStats()
        self.consume_trace: ConsumeTraceHook | None = None  # rmq.client.trace: Sub records
        self.start_timestamp = now_millis()
        self._listener: MessageListener | None = None
        self._subscriptions: dict[str, SubscriptionData] = {}
        self._offset_store: OffsetStore | None = None
        self.pull_nodes = PullNodes()
        self._rebalance: Rebalance | None = None
        self._rebalance_wanted = asyncio.Event()
        self._consume: ConsumeService | None = None
        self._services: list[asyncio.Task[None]] = []
        self._tasks: set[asyncio.Task[None]] = set()

    # --- configuration --------------------------------------------------------------------

    def subscribe(
        self,
        topic: str,
        expression: str | None = SUB_ALL,
        expression_type: str = EXPRESSION_TYPE_TAG,
    ) -> None:
        """Consume ``topic``, filtered by a tag expression ("*", "TagA || TagB") or, with
        ``expression_type`` "SQL92", by an SQL92 expression on the message properties (which
        the brokers check when the consumer starts); a running consumer rebalances at once."""
        self._subscriptions[topic] = SubscriptionData.from_expression(
            topic, expression, expression_type
        )
        if self._running:
            self.rebalance_now()

    def unsubscribe(self, topic: str) -> None:
        """Stop consuming ``topic`` (its queues are dropped at the next rebalance)."""
        self._subscriptions.pop(topic, None)

    def register_listener(self, listener: MessageListener, *, orderly: bool = False) -> None:
        """Set the listener; ``orderly`` consumes each queue in order (see the module
        docstring).  Must be called before :meth:`start`."""
        if self._running:
            raise MQClientError(-1, "the listener must be registered before the consumer starts")
        self._listener = listener
        self.orderly = orderly

    @property
    def running(self) -> bool:
        """Whether the consumer is started and not shut down."""
        return self._running

    @property
    def _clustering(self) -> bool:
        return self.message_model is MessageModel.CLUSTERING

    @property
    def offset_store(self) -> OffsetStore:
        """The offset store (available once started)."""
        if self._offset_store is None:
            raise MQClientError(-1, f"the consumer {self.group} is not started")
        return self._offset_store

    @property
    def process_queue_table(self) -> dict[MessageQueue, ProcessQueue]:
        """The queues this consumer owns now (empty before it starts)."""
        return self._rebalance.process_queue_table if self._rebalance is not None else {}

    # --- what the client instance asks of a registered consumer --------------------------

    def consumer_data(self) -> ConsumerData:
        return ConsumerData(
            group_name=self.group,
            consume_type=ConsumeType.CONSUME_PASSIVELY,
            message_model=self.message_model,
            consume_from_where=self.consume_from_where,
            subscription_data_set=list(self._subscriptions.values()),
        )

    def rebalance_now(self) -> None:
        self._rebalance_wanted.set()

    def subscriptions(self) -> list[SubscriptionData]:
        """The subscriptions, the retry topic's included once started."""
        return list(self._subscriptions.values())

    # --- what the broker asks for an admin tool (rmq.client.consumer.runstate) ------------

    def consumer_offsets(self, topic: str) -> dict[MessageQueue, int]:
        return runstate.consumer_offsets(self, topic)

    async def reset_offset(self, topic: str, offsets: dict[MessageQueue, int]) -> None:
        await runstate.reset_offset(self, topic, offsets)

    async def running_info(self) -> ConsumerRunningInfo:
        return await runstate.running_info(self)

    async def consume_directly(
        self, record: bytes, broker_name: str | None
    ) -> ConsumeMessageDirectlyResult:
        return await runstate.consume_directly(self, record, broker_name)

    # --- lifecycle ------------------------------------------------------------------------

    async def _join(self) -> None:
        """Register with the instance, start the services, send a heartbeat and rebalance
        at once."""
        if self._clustering:
            retry = retry_topic(self.group)
            self._subscriptions[retry] = SubscriptionData.from_expression(retry, SUB_ALL)
        await check_subscriptions(self.instance, self.group, self._subscriptions.values())
        self._offset_store = self._create_offset_store()
        self._offset_store.load()
        assert self._listener is not None
        service = OrderlyConsumeService if self.orderly else ConcurrentConsumeService
        self._consume = service(self, self._listener)
        self._rebalance = Rebalance(
            self.instance,
            self.group,
            self.message_model,
            self.allocate_strategy,
            self._offset_store,
            consume_from_where=self.consume_from_where,
            consume_timestamp=(
                self.consume_timestamp
                if self.consume_timestamp is not None
                else now_millis() - CONSUME_TIMESTAMP_LOOKBACK_MS
            ),
            orderly=self.orderly,
            dispatch_pull=self._dispatch_pull,
        )
        self._rebalance.subscriptions = self._subscriptions
        self.instance.register_consumer(self)
        self._services = [
            self._service(self._rebalance_service(), "rebalance"),
            self._periodic(
                self.persist_consumer_offset_interval,
                self.persist_consumer_offset_interval,
                self._persist_offsets,
                "offset commit",
            ),
        ]
        self._services += [
            self._service(job, name) for job, name in self.consume_service().services()
        ]
        if self.orderly and self._clustering:
            self._services.append(
                self._periodic(
                    1.0, REBALANCE_LOCK_INTERVAL / 1000, self._rebalance.lock_all, "lock renewal"
                )
            )
        for topic in self._subscriptions:
            try:
                await self.instance.get_route(topic, refresh=True)
            except (ClientError, RemotingError) as exc:
                # The retry topic appears once a broker has had the group's first heartbeat.
                level = (
                    logging.DEBUG if topic.startswith(RETRY_GROUP_TOPIC_PREFIX) else logging.WARNING
                )
                log.log(level, "group %s: no route for topic %s yet: %s", self.group, topic, exc)
        await self.instance.send_heartbeat_to_all_brokers()
        self.rebalance_now()
        log.info("push consumer %s started (%s)", self.group, self.message_model.name)

    async def _leave(self) -> None:
        """Stop pulling and consuming, commit the offsets (waiting for the brokers), release
        orderly locks and unregister from the brokers.

        Listener calls still running are cancelled; their messages are not committed.
        """
        tasks = [*self._services, *self._tasks]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._services = []
        self._tasks.clear()
        rebalance = self._rebalance
        assert rebalance is not None
        if self.orderly and self._clustering:
            await rebalance.unlock_all()
        await self.offset_store.persist_all(rebalance.process_queue_table, oneway=False)
        await self.instance.unregister_consumer(self.group)
        await rebalance.destroy()
        log.info("push consumer %s shut down", self.group)

    def _check_config(self) -> None:
        if self._rebalance is not None:
            raise MQClientError(-1, f"The consumer {self.group} was started before")
        super()._check_config()
        if self._listener is None:
            raise MQClientError(-1, "messageListener is null: call register_listener first")
        if not self._subscriptions:
            raise MQClientError(-1, "no subscription: call subscribe first")

    def _create_offset_store(self) -> OffsetStore:
        if self._clustering:
            return RemoteBrokerOffsetStore(
                self.instance.remoting, self.group, functools.partial(offset_broker, self.instance)
            )
        return LocalFileOffsetStore(self.instance.client_id, self.group, self.offset_store_dir)

    # --- background tasks -----------------------------------------------------------------

    def _service(self, coroutine: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        return asyncio.get_running_loop().create_task(coroutine, name=f"{self.group} {name}")

    def _periodic(
        self, first_delay: float, interval: float, job: Callable[[], Awaitable[None]], name: str
    ) -> asyncio.Task[None]:
        return self._service(
            run_periodically(first_delay, interval, job, f"group {self.group}: {name}"), name
        )

    def spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        """Run a task owned by this consumer (cancelled at shutdown)."""
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("group %s: task failed", self.group, exc_info=task.exception())

    def later(self, delay: float, job: Callable[..., Awaitable[None]], *args: Any) -> None:
        """Run ``job(*args)`` after ``delay`` seconds."""

        async def run() -> None:
            await asyncio.sleep(delay)
            await job(*args)

        self.spawn(run())

    async def _rebalance_service(self) -> None:
        rebalance = self._rebalance
        assert rebalance is not None
        while True:
            # asyncio.timeout, not wait_for: in Python 3.11 wait_for loses a cancellation
            # that arrives as the event is set, and shutdown would wait for this loop forever.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.rebalance_interval):
                    await self._rebalance_wanted.wait()
            self._rebalance_wanted.clear()
            try:
                await rebalance.do_rebalance()
            except Exception:
                log.exception("group %s: rebalance failed", self.group)

    async def _persist_offsets(self) -> None:
        await self.offset_store.persist_all(self.process_queue_table)

    # --- pulling --------------------------------------------------------------------------

    def _dispatch_pull(self, request: PullRequest) -> None:
        self.spawn(self._pull_loop(request))

    async def _pull_loop(self, request: PullRequest) -> None:
        while self._running and not request.pq.dropped:
            delay = await self._pull_once(request)
            if delay is None:
                return
            if delay > 0:
                await asyncio.sleep(delay)

    async def _pull_once(self, request: PullRequest) -> float | None:
        """One step of a queue's pull loop: the delay before the next, None to stop."""
        pq, mq = request.pq, request.mq
        pq.last_pull_timestamp = now_millis()
        if pq.msg_count > self.pull_threshold_for_queue:
            return PULL_DELAY_WHEN_FLOW_CONTROL
        if pq.msg_size > self.pull_threshold_size_for_queue * _MIB:
            return PULL_DELAY_WHEN_FLOW_CONTROL
        if not self.orderly:
            if pq.max_span() > self.consume_concurrently_max_span:
                return PULL_DELAY_WHEN_FLOW_CONTROL
        elif not pq.locked:
            return PULL_DELAY_WHEN_EXCEPTION
        elif not request.previously_locked:
            # Now that the queue is locked, start where its previous owner committed.
            try:
                offset = await self.rebalance_of().compute_pull_from_where(mq)
            except (ClientError, RemotingError) as exc:
                log.warning("group %s: cannot fix the offset of %s: %s", self.group, mq, exc)
                return PULL_DELAY_WHEN_EXCEPTION
            if offset < 0:
                return PULL_DELAY_WHEN_EXCEPTION
            request.next_offset = offset
            request.previously_locked = True
        subscription = self._subscriptions.get(mq.topic)
        if subscription is None:
            return PULL_DELAY_WHEN_EXCEPTION
        begin = time.monotonic()
        try:
            result = await self._pull(request, subscription)
        except MQBrokerError as exc:
            if not mq.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                log.warning("group %s: pulling %s failed: %s", self.group, mq, exc)
            if exc.code == ResponseCode.FLOW_CONTROL:
                return PULL_DELAY_WHEN_BROKER_FLOW_CONTROL
            return PULL_DELAY_WHEN_EXCEPTION
        except (ClientError, RemotingError) as exc:
            log.warning("group %s: pulling %s failed: %s", self.group, mq, exc)
            return PULL_DELAY_WHEN_EXCEPTION
        self.stats.inc_pull_rt(mq.topic, millis_since(begin))
        return self._pull_done(request, subscription, result)

    async def _pull(self, request: PullRequest, subscription: SubscriptionData) -> api.PullResult:
        mq = request.mq
        commit_offset = 0
        if self._clustering:
            commit_offset = await self.offset_store.read_offset(mq, ReadOffsetType.READ_FROM_MEMORY)
        sys_flag = PULL_SUSPEND
        if commit_offset > 0:
            sys_flag |= PULL_COMMIT_OFFSET
        expression = None
        if self.post_subscription_when_pull and not subscription.class_filter_mode:
            expression = subscription.sub_string
            sys_flag |= PULL_SUBSCRIPTION
        broker = await self.pull_nodes.broker_for_pull(self.instance, mq)
        if broker.slave:
            sys_flag &= ~PULL_COMMIT_OFFSET  # a slave does not take commits
        header = PullMessageRequestHeader(
            consumer_group=self.group,
            topic=mq.topic,
            queue_id=mq.queue_id,
            queue_offset=request.next_offset,
            max_msg_nums=self.pull_batch_size,
            sys_flag=sys_flag,
            commit_offset=max(commit_offset, 0),
            suspend_timeout_millis=BROKER_SUSPEND_MAX_TIME_MILLIS,
            subscription=expression,
            sub_version=subscription.sub_version,
            expression_type=subscription.expression_type,
            bname=mq.broker_name,
        )
        result = await api.pull_message(
            self.instance.remoting, broker.addr, header, CONSUMER_TIMEOUT_WHEN_SUSPEND
        )
        self.pull_nodes.suggest(mq, result.suggest_which_broker_id)
        return result

    def _pull_done(
        self, request: PullRequest, subscription: SubscriptionData, result: api.PullResult
    ) -> float | None:
        pq, mq = request.pq, request.mq
        status = result.status
        if status is api.PullStatus.FOUND:
            tags = () if subscription.class_filter_mode else subscription.tags_set
            messages = decode_pull_body(
                result.body, mq.broker_name, tags, result.min_offset, result.max_offset
            )
            request.next_offset = result.next_begin_offset
            if not messages:
                return 0.0
            self.stats.inc_pull_tps(mq.topic, len(messages))
            dispatch = pq.put_messages(messages)
            self.consume_service().submit(messages, pq, mq, dispatch)
            return self.pull_interval
        if status in (api.PullStatus.NO_NEW_MSG, api.PullStatus.NO_MATCHED_MSG):
            request.next_offset = result.next_begin_offset
            if pq.msg_count == 0:
                self.offset_store.update_offset(mq, request.next_offset, increase_only=True)
            return 0.0
        log.warning(
            "group %s: offset %d of %s is illegal, moving to %d",
            self.group,
            request.next_offset,
            mq,
            result.next_begin_offset,
        )
        request.next_offset = result.next_begin_offset
        pq.dropped = True
        self.later(OFFSET_FIX_DELAY, self._fix_offset, mq, result.next_begin_offset)
        return None

    async def _fix_offset(self, mq: MessageQueue, offset: int) -> None:
        self.offset_store.update_offset(mq, offset, increase_only=False)
        await self.offset_store.persist(mq)
        await self.rebalance_of().remove_process_queue(mq)

    def rebalance_of(self) -> Rebalance:
        assert self._rebalance is not None
        return self._rebalance

    def consume_service(self) -> ConsumeService:
        """The consume service (available once started)."""
        if self._consume is None:
            raise MQClientError(-1, f"the consumer {self.group} is not started")
        return self._consume
