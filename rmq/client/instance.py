"""The client instance: what producers and consumers of one process share.

A `ClientInstance` is Java's `MQClientInstance` in asyncio form.  It owns

* one `RemotingClient` (one pooled connection per broker and name server) and the handlers
  for requests brokers send to clients: NOTIFY_CONSUMER_IDS_CHANGED makes every registered
  consumer rebalance now; the offset reset, offset status, running info and direct
  consumption calls are answered by the consumer of the group (`consumerrequests.py`);
  CHECK_TRANSACTION_STATE by the transactional producer of the message's group
  (`transactionrequests.py`); PUSH_REPLY_MESSAGE_TO_CLIENT hands a reply to the request
  waiting for it (`request_futures`, `replyrequests.py`); every other code is answered
  REQUEST_CODE_NOT_SUPPORTED by the remoting layer;
* the name server list (`"host:port;host:port"`), used one at a time through a
  `NameServerList` (also the admin client's): a request goes to the current name server and
  moves on to the next when it cannot connect or times out;
* the route cache: topic -> `TopicRouteData` as the name server last answered, the broker
  address table built from every cached route (broker name -> broker id -> address; the
  address of a queue's broker is `broker_address`) and, per topic a producer sends to, the
  `TopicPublishInfo` (its write queues);
* the producer groups and consumers registered with it, for heartbeats (every 30 s, to
  every broker master; to slaves too while a consumer is registered) and for
  UNREGISTER_CLIENT when they leave.  A heartbeat asked for while one is in flight is sent
  once that one is answered, built afresh (one follow-up however many asked meanwhile), so a
  changed subscription version never waits for the next period;
* two background tasks, started by `start` and cancelled by `shutdown`: the route refresh
  (every 30 s, `pollNameServerInterval`) of every topic in use, and the heartbeat.

Routes are fetched on first use and shared: concurrent callers asking for the same unknown
topic wait for one request.  A topic the name server does not know yet is sent to through
the route of the auto-create template topic TBW102 with each broker's queue count capped at
`default_topic_queue_nums` (4), as the Java producer does; the broker then creates the
topic on the first send, and the next refresh picks up its real route.

A consumer registers an object that satisfies `RegisteredConsumer`: its group, the
`ConsumerData` its heartbeats carry and a `rebalance_now()` hook; one that is also a
`ConsumerAnswers` (the push consumer) answers the broker's admin calls.  How producers and
consumers get, start and leave their instance is `member.py`'s; `run_periodically` is the
loop of every periodic task.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import Protocol, TypeVar

from rmq.client import api
from rmq.client.consumerrequests import ConsumerAnswers, register_consumer_requests
from rmq.client.credentials import SessionCredentials, remoting_client
from rmq.client.errors import (
    ClientErrorCode,
    MQBrokerError,
    MQClientError,
    NotANameServer,
    RouteNotFound,
)
from rmq.client.replyrequests import RequestFutures, register_reply_requests
from rmq.client.transactionrequests import TransactionChecker, register_transaction_requests
from rmq.common.configvalues import local_address
from rmq.common.naming import AUTO_CREATE_TOPIC_KEY_TOPIC
from rmq.common.perm import is_readable, is_writeable
from rmq.remoting.bodies import (
    MASTER_ID,
    ConsumerData,
    HeartbeatData,
    MessageQueue,
    ProducerData,
    QueueData,
    TopicRouteData,
)
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand
from rmq.remoting.connection import Connection
from rmq.remoting.errors import RemotingConnectError, RemotingError, RemotingTimeoutError
from rmq.remoting.headers import NotifyConsumerIdsChangedRequestHeader

log = logging.getLogger("rmq.client")

T = TypeVar("T")

DEFAULT_API_TIMEOUT = 3.0  # ClientConfig.mqClientApiTimeout
POLL_NAME_SERVER_INTERVAL = 30.0  # ClientConfig.pollNameServerInterval
HEARTBEAT_BROKER_INTERVAL = 30.0  # ClientConfig.heartbeatBrokerInterval
FIRST_HEARTBEAT_DELAY = 1.0
DEFAULT_TOPIC_QUEUE_NUMS = 4  # DefaultMQProducer.defaultTopicQueueNums


def parse_namesrv_addrs(text: str) -> list[str]:
    """The addresses of a `"host:port;host:port"` list (blanks dropped); ValueError if none."""
    addrs = [addr.strip() for addr in text.split(";") if addr.strip()]
    if not addrs:
        raise ValueError(f"no name server address in {text!r}")
    return addrs


def default_instance_name() -> str:
    """Java's replacement for the instance name "DEFAULT": `<pid>#<nanoTime>`, so that two
    clients of one process never share a client id."""
    return f"{os.getpid()}#{time.monotonic_ns()}"


async def run_periodically(
    first_delay: float, interval: float, job: Callable[[], Awaitable[None]], name: str
) -> None:
    """Run `job` after `first_delay` seconds, then `interval` seconds after each run ends,
    until cancelled; a run that fails is logged as `name` and the next one goes ahead."""
    await asyncio.sleep(first_delay)
    while True:
        try:
            await job()
        except Exception:
            log.exception("%s failed", name)
        await asyncio.sleep(interval)


class NameServerList:
    """Name servers used one at a time: a request goes to the current one; when that cannot
    be connected to or does not answer in time, the next becomes current and the request is
    tried there, each name server at most once.  Any answer, a refusal included, ends the
    request; REQUEST_CODE_NOT_SUPPORTED raises NotANameServer naming the address."""

    __slots__ = ("_current", "addrs")

    def __init__(self, addrs: list[str], current: int = 0) -> None:
        self.addrs = addrs
        self._current = current % len(addrs)

    @property
    def current(self) -> str:
        """The name server requests go to first."""
        return self.addrs[self._current]

    def use(self, addr: str) -> None:
        """Make `addr`, one of `addrs`, the current name server; ValueError for another."""
        self._current = self.addrs.index(addr)

    async def call(self, call: Callable[[str], Awaitable[T]]) -> T:
        """`await call(addr)` with the current name server, failing over as described; when
        every one failed, the last failure is raised."""
        count = len(self.addrs)
        failure: RemotingError | None = None
        for attempt in range(1, count + 1):
            addr = self.addrs[self._current]
            try:
                return await call(addr)
            except MQClientError as exc:
                if exc.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
                    raise NotANameServer(addr, exc.remark) from exc
                raise
            except (RemotingConnectError, RemotingTimeoutError) as exc:
                failure = exc
                self._current = (self._current + 1) % count
                if attempt < count:
                    log.warning(
                        "name server %s failed (%s), trying %s",
                        addr,
                        exc,
                        self.addrs[self._current],
                    )
        assert failure is not None
        raise failure


class RegisteredConsumer(Protocol):
    """What a consumer gives the instance when it registers."""

    @property
    def group(self) -> str: ...

    def consumer_data(self) -> ConsumerData:
        """The group's ConsumerData for the next heartbeat."""
        ...

    def rebalance_now(self) -> None:
        """Rebalance soon (the group's membership or the topic's queues changed)."""
        ...


def _sorted_route(route: TopicRouteData) -> TopicRouteData:
    """`route` with its queue and broker lists in broker-name order, so that two answers
    with the same content compare equal."""
    route.queue_datas.sort(key=lambda data: data.broker_name)
    route.broker_datas.sort(key=lambda data: data.broker_name)
    return route


def _capped_route(route: TopicRouteData, queue_nums: int) -> TopicRouteData:
    """A copy of the template topic's route with each broker's queues capped at
    `queue_nums`: where a producer sends a topic that does not exist yet."""
    return TopicRouteData(
        order_topic_conf=route.order_topic_conf,
        queue_datas=[
            QueueData(
                broker_name=data.broker_name,
                read_queue_nums=min(queue_nums, data.read_queue_nums),
                write_queue_nums=min(queue_nums, data.read_queue_nums),
                perm=data.perm,
                topic_sys_flag=data.topic_sys_flag,
            )
            for data in route.queue_datas
        ],
        broker_datas=list(route.broker_datas),
        filter_server_table=route.filter_server_table,
    )


class TopicPublishInfo:
    """The queues a producer may send a topic to, and the round-robin position among them.

    `message_queues` are the write queues of every writable broker name that has a master,
    in broker-name order (or, for an order topic configured on the name server, the queues
    its `orderTopicConf` lists).  The position starts at a random queue.
    """

    __slots__ = ("_index", "message_queues", "order_topic", "route", "topic")

    def __init__(self, topic: str, route: TopicRouteData) -> None:
        self.topic = topic
        self.route = route
        self.order_topic = bool(route.order_topic_conf)
        self.message_queues = self._queues(topic, route)
        self._index = random.randrange(1 << 16)

    @staticmethod
    def _queues(topic: str, route: TopicRouteData) -> tuple[MessageQueue, ...]:
        if route.order_topic_conf:
            queues = []
            for item in route.order_topic_conf.split(";"):
                broker_name, _, count = item.partition(":")
                queues += [MessageQueue(topic, broker_name, i) for i in range(int(count))]
            return tuple(queues)
        with_master = {
            data.broker_name for data in route.broker_datas if MASTER_ID in data.broker_addrs
        }
        return tuple(
            MessageQueue(topic, data.broker_name, queue_id)
            for data in sorted(route.queue_datas, key=lambda data: data.broker_name)
            if is_writeable(data.perm) and data.broker_name in with_master
            for queue_id in range(data.write_queue_nums)
        )

    @property
    def ok(self) -> bool:
        """Whether there is any queue to send to."""
        return bool(self.message_queues)

    def select_queue(self, avoid: Collection[str] = ()) -> MessageQueue:
        """The next queue in round-robin order, skipping queues of the broker names in
        `avoid` while another broker's queue is left."""
        queues = self.message_queues
        count = len(queues)
        self._index += 1
        if avoid:
            for step in range(count):
                queue = queues[(self._index + step) % count]
                if queue.broker_name not in avoid:
                    self._index += step
                    return queue
        return queues[self._index % count]


class ClientInstance:
    """Routes, heartbeats and the shared connection pool of the producers and consumers
    of one client id (see the module docstring)."""

    def __init__(
        self,
        namesrv_addrs: str,
        instance_name: str | None = None,
        *,
        client_ip: str | None = None,
        api_timeout: float = DEFAULT_API_TIMEOUT,
        poll_name_server_interval: float = POLL_NAME_SERVER_INTERVAL,
        heartbeat_interval: float = HEARTBEAT_BROKER_INTERVAL,
        credentials: SessionCredentials | None = None,
    ) -> None:
        self.namesrv_addrs = parse_namesrv_addrs(namesrv_addrs)
        self.instance_name = instance_name or default_instance_name()
        self.client_id = f"{client_ip or local_address()}@{self.instance_name}"
        self.api_timeout = api_timeout
        self.poll_name_server_interval = poll_name_server_interval
        self.heartbeat_interval = heartbeat_interval
        self.remoting = remoting_client(credentials)  # signs with ACL credentials, if any
        self._namesrvs = NameServerList(
            self.namesrv_addrs, random.randrange(len(self.namesrv_addrs))
        )
        self._routes: dict[str, TopicRouteData] = {}
        self._publish_infos: dict[str, TopicPublishInfo] = {}
        self._broker_addrs: dict[str, dict[int, str]] = {}
        self._route_fetches: dict[str, asyncio.Task[TopicRouteData]] = {}
        self._producer_groups: set[str] = set()
        self.request_futures = RequestFutures()  # requests waiting for replies (326)
        self._transaction_checkers: dict[str, TransactionChecker] = {}
        self._consumers: dict[str, RegisteredConsumer] = {}
        self._heartbeat_lock = asyncio.Lock()
        self._heartbeats_asked = 0  # calls of send_heartbeat_to_all_brokers so far
        self._heartbeats_covered = 0  # of those, the ones a heartbeat was built after
        self._tasks: list[asyncio.Task[None]] = []
        self._running = False

    # --- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> None:
        """Serve broker requests and start the route refresh and heartbeat tasks."""
        if self._running:
            return
        self.remoting.register(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, self._consumer_ids_changed)
        register_consumer_requests(self.remoting, self._answering_consumer, self._namesrv_list)
        register_reply_requests(self.remoting, self.request_futures)
        register_transaction_requests(self.remoting, self._transaction_checkers.get)
        self._tasks = [
            self._spawn(
                self.poll_name_server_interval,
                self.poll_name_server_interval,
                self.refresh_routes,
                "route refresh",
            ),
            self._spawn(
                FIRST_HEARTBEAT_DELAY,
                self.heartbeat_interval,
                self.send_heartbeat_to_all_brokers,
                "heartbeat",
            ),
        ]
        self._running = True
        log.info(
            "client instance %s started, name servers %s",
            self.client_id,
            ";".join(self.namesrv_addrs),
        )

    async def shutdown(self) -> None:
        """Stop the background tasks, unregister every group from every broker and close
        the connections."""
        if not self._running:
            await self.remoting.close()
            return
        self._running = False
        for task in (*self._tasks, *self._route_fetches.values()):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        leaving: list[tuple[str | None, str | None]] = [
            (group, None) for group in self._producer_groups
        ]
        leaving += [(None, group) for group in self._consumers]
        self._producer_groups.clear()
        self._transaction_checkers.clear()
        self._consumers.clear()
        await asyncio.gather(*(self._unregister_client(p, c) for p, c in leaving))
        await self.remoting.close()
        log.info("client instance %s shut down", self.client_id)

    async def __aenter__(self) -> ClientInstance:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.shutdown()

    def _spawn(
        self,
        first_delay: float,
        interval: float,
        job: Callable[[], Awaitable[None]],
        name: str,
    ) -> asyncio.Task[None]:
        name = f"{self.client_id} {name}"
        return asyncio.get_running_loop().create_task(
            run_periodically(first_delay, interval, job, name), name=name
        )

    # --- name servers -------------------------------------------------------------------------

    async def call_namesrv(self, call: Callable[[str], Awaitable[T]]) -> T:
        """`await call(addr)` with the current name server, failing over to the next ones
        (`NameServerList.call`)."""
        return await self._namesrvs.call(call)

    # --- routes -------------------------------------------------------------------------------

    async def get_route(self, topic: str, *, refresh: bool = False) -> TopicRouteData:
        """The cached route of `topic`, fetched first when not cached or when `refresh`.
        Raises RouteNotFound when the name server has no route for it."""
        route = self._routes.get(topic)
        if route is None or refresh:
            route = await self._fetch_route(topic)
        return route

    async def _fetch_route(self, topic: str) -> TopicRouteData:
        task = self._route_fetches.get(topic)
        if task is None:
            task = asyncio.get_running_loop().create_task(self._load_route(topic))
            self._route_fetches[topic] = task
            task.add_done_callback(lambda done: self._fetch_done(topic, done))
        return await asyncio.shield(task)

    def _fetch_done(self, topic: str, task: asyncio.Task[TopicRouteData]) -> None:
        if self._route_fetches.get(topic) is task:
            del self._route_fetches[topic]
        if not task.cancelled():
            task.exception()  # the waiters see it; asyncio must not report it again

    async def _load_route(self, topic: str) -> TopicRouteData:
        route = _sorted_route(
            await self.call_namesrv(
                lambda addr: api.get_topic_route(self.remoting, addr, topic, self.api_timeout)
            )
        )
        self._store_route(topic, route)
        return route

    def _store_route(self, topic: str, route: TopicRouteData) -> None:
        """Cache `route`; publish info and broker addresses follow when it changed."""
        if self._routes.get(topic) == route:
            return
        self._routes[topic] = route
        if topic in self._publish_infos:
            self._publish_infos[topic] = TopicPublishInfo(topic, route)
        self._rebuild_broker_addrs()
        log.info("route of %s is now %s", topic, route.to_json())

    def _rebuild_broker_addrs(self) -> None:
        """Broker addresses of every cached route: brokers no route mentions any more are
        forgotten (Java's cleanOfflineBroker)."""
        table: dict[str, dict[int, str]] = {}
        for route in self._routes.values():
            for data in route.broker_datas:
                table.setdefault(data.broker_name, {}).update(data.broker_addrs)
        self._broker_addrs = table

    async def refresh_routes(self) -> None:
        """Fetch again the route of every topic a producer sent to or a consumer subscribes;
        a topic whose route cannot be fetched keeps the one cached."""
        topics = set(self._publish_infos)
        for consumer in self._consumers.values():
            topics.update(sub.topic for sub in consumer.consumer_data().subscription_data_set)
        for topic in sorted(topics):
            try:
                await self._fetch_route(topic)
            except RouteNotFound:
                log.debug("no route for %s yet", topic)
            except (MQClientError, RemotingError) as exc:
                log.warning("refreshing the route of %s failed: %s", topic, exc)
        self._rebuild_broker_addrs()

    def cached_publish_info(self, topic: str) -> TopicPublishInfo | None:
        """The publish info of `topic` if it is cached and has queues (no I/O)."""
        info = self._publish_infos.get(topic)
        return info if info is not None and info.ok else None

    async def publish_info(
        self,
        topic: str,
        *,
        default_topic: str = AUTO_CREATE_TOPIC_KEY_TOPIC,
        default_topic_queue_nums: int = DEFAULT_TOPIC_QUEUE_NUMS,
    ) -> TopicPublishInfo:
        """Where `topic` can be sent: its route's write queues, or the capped route of
        `default_topic` when the name server does not know `topic` (see the module
        docstring).  Raises MQClientError NOT_FOUND_TOPIC_EXCEPTION when neither helps."""
        info = self.cached_publish_info(topic)
        if info is not None:
            return info
        try:
            route = await self.get_route(topic, refresh=True)
        except RouteNotFound:
            try:
                template = await self.get_route(default_topic)
            except RouteNotFound:
                raise MQClientError(
                    ClientErrorCode.NOT_FOUND_TOPIC_EXCEPTION,
                    f"No route info of this topic: {topic} (and none of the auto-create "
                    f"topic {default_topic}: create the topic or enable autoCreateTopicEnable "
                    f"on a broker)",
                ) from None
            route = _capped_route(template, default_topic_queue_nums)
            self._store_route(topic, route)
        info = TopicPublishInfo(topic, route)
        self._publish_infos[topic] = info
        if not info.ok:
            raise MQClientError(
                ClientErrorCode.NOT_FOUND_TOPIC_EXCEPTION,
                f"No writable queue of topic {topic} on any broker master",
            )
        return info

    async def subscribe_queues(self, topic: str, *, refresh: bool = False) -> list[MessageQueue]:
        """The read queues of `topic` on every readable broker, sorted."""
        route = await self.get_route(topic, refresh=refresh)
        return sorted(
            MessageQueue(topic, data.broker_name, queue_id)
            for data in route.queue_datas
            if is_readable(data.perm)
            for queue_id in range(data.read_queue_nums)
        )

    def find_broker_addr(self, broker_name: str, *, master_only: bool = True) -> str | None:
        """The master's address of `broker_name`; without `master_only`, a slave's when the
        master is unknown.  None when no cached route mentions the broker."""
        addrs = self._broker_addrs.get(broker_name)
        if not addrs:
            return None
        master = addrs.get(MASTER_ID)
        if master is not None or master_only:
            return master
        return addrs[min(addrs)]

    def broker_addr_table(self, broker_name: str) -> Mapping[int, str]:
        """`broker_name`'s addresses by broker id in the cached routes (empty when none)."""
        return self._broker_addrs.get(broker_name, {})

    async def broker_address(self, mq: MessageQueue, *, master_only: bool = True) -> str:
        """The address of the broker holding `mq` (as `find_broker_addr`), fetching the
        topic's route once more when no cached route knows the broker.  Raises MQClientError
        BROKER_NOT_EXIST_EXCEPTION when there is still none."""
        addr = self.find_broker_addr(mq.broker_name, master_only=master_only)
        if addr is None:
            await self.get_route(mq.topic, refresh=True)
            addr = self.find_broker_addr(mq.broker_name, master_only=master_only)
            if addr is None:
                raise MQClientError(
                    ClientErrorCode.BROKER_NOT_EXIST_EXCEPTION,
                    f"The broker[{mq.broker_name}] not exist",
                )
        return addr

    def find_broker_addr_by_topic(self, topic: str) -> str | None:
        """Some broker of `topic`'s cached route (a random broker name, its master if
        known): where group-wide questions such as the consumer id list are asked."""
        route = self._routes.get(topic)
        if route is None or not route.broker_datas:
            return None
        return random.choice(route.broker_datas).select_broker_addr()

    # --- groups and heartbeats ----------------------------------------------------------------

    def register_producer(self, group: str, checker: TransactionChecker | None = None) -> None:
        """Add a producer group to the heartbeats; a group may be registered once.  A
        transactional producer gives its `checker`, which answers the group's transaction
        checks."""
        if group in self._producer_groups:
            raise MQClientError(
                -1,
                f"The producer group[{group}] has been created before, "
                f"specify another name please.",
            )
        self._producer_groups.add(group)
        if checker is not None:
            self._transaction_checkers[group] = checker

    async def unregister_producer(self, group: str) -> None:
        """Remove a producer group and tell every broker (UNREGISTER_CLIENT)."""
        if group in self._producer_groups:
            self._producer_groups.discard(group)
            self._transaction_checkers.pop(group, None)
            await self._unregister_client(group, None)

    def _answering_consumer(self, group: str) -> ConsumerAnswers | None:
        """The group's consumer when it answers the broker's admin calls (a push consumer)."""
        consumer = self._consumers.get(group)
        return consumer if isinstance(consumer, ConsumerAnswers) else None

    def _namesrv_list(self) -> list[str]:
        return self.namesrv_addrs

    def register_consumer(self, consumer: RegisteredConsumer) -> None:
        """Add a consumer to the heartbeats and rebalance notifications (one per group)."""
        if consumer.group in self._consumers:
            raise MQClientError(
                -1,
                f"The consumer group[{consumer.group}] has been created before, "
                f"specify another name please.",
            )
        self._consumers[consumer.group] = consumer

    async def unregister_consumer(self, group: str) -> None:
        """Remove a consumer and tell every broker (UNREGISTER_CLIENT)."""
        if self._consumers.pop(group, None) is not None:
            await self._unregister_client(None, group)

    def heartbeat_data(self) -> HeartbeatData:
        """The HEART_BEAT body: every registered producer group and consumer."""
        return HeartbeatData(
            client_id=self.client_id,
            producer_data_set=[ProducerData(group_name=group) for group in self._producer_groups],
            consumer_data_set=[consumer.consumer_data() for consumer in self._consumers.values()],
        )

    async def send_heartbeat_to_all_brokers(self) -> None:
        """HEART_BEAT to every known broker master, and to slaves while a consumer is
        registered; returns once a heartbeat built after this call has been answered (or has
        failed, which is logged).

        A call made while a heartbeat is in flight waits for it and then sends one more; the
        calls that arrive during one heartbeat share that one follow-up."""
        self._heartbeats_asked += 1
        asked = self._heartbeats_asked
        async with self._heartbeat_lock:
            covered = self._heartbeats_covered
            if covered >= asked:
                return
            self._heartbeats_covered = self._heartbeats_asked
            try:
                await self._send_heartbeats()
            except BaseException:
                self._heartbeats_covered = covered  # the calls waiting must still send one
                raise

    async def _send_heartbeats(self) -> None:
        heartbeat = self.heartbeat_data()
        if not heartbeat.producer_data_set and not heartbeat.consumer_data_set:
            return
        with_slaves = bool(heartbeat.consumer_data_set)
        addrs = [
            addr
            for ids in self._broker_addrs.values()
            for broker_id, addr in ids.items()
            if with_slaves or broker_id == MASTER_ID
        ]
        await asyncio.gather(*(self._heartbeat(addr, heartbeat) for addr in addrs))

    async def _heartbeat(self, addr: str, heartbeat: HeartbeatData) -> None:
        try:
            await api.send_heartbeat(self.remoting, addr, heartbeat, self.api_timeout)
        except (MQClientError, RemotingError, MQBrokerError) as exc:
            log.info("heartbeat to broker %s failed: %s", addr, exc)

    async def _unregister_client(
        self, producer_group: str | None, consumer_group: str | None
    ) -> None:
        addrs = [addr for ids in self._broker_addrs.values() for addr in ids.values()]
        await asyncio.gather(
            *(self._unregister_at(addr, producer_group, consumer_group) for addr in addrs)
        )

    async def _unregister_at(
        self, addr: str, producer_group: str | None, consumer_group: str | None
    ) -> None:
        try:
            await api.unregister_client(
                self.remoting,
                addr,
                self.client_id,
                self.api_timeout,
                producer_group=producer_group,
                consumer_group=consumer_group,
            )
        except (RemotingError, MQBrokerError) as exc:
            log.warning("unregistering from broker %s failed: %s", addr, exc)

    # --- requests from brokers ----------------------------------------------------------------

    def rebalance_now(self) -> None:
        """Ask every registered consumer to rebalance now."""
        for consumer in list(self._consumers.values()):
            consumer.rebalance_now()

    async def _consumer_ids_changed(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand | None:
        header = request.read_header(NotifyConsumerIdsChangedRequestHeader)
        log.info(
            "broker %s: the consumers of group %s changed, rebalancing",
            connection.remote_addr,
            header.consumer_group,
        )
        self.rebalance_now()
        return None
