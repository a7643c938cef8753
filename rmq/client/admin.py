"""The admin API: one async method per admin operation, each returning plain dataclasses.

Every admin command of the command line, the noun-verb ones (`rmq topic ...`,
`rmq cluster ...`) and the mqadmin-compatible ones alike, calls this module; nothing here
prints.  An `AdminClient` owns one `RemotingClient` and the name server list:

    async with AdminClient("127.0.0.1:9876") as admin:
        route = await admin.topic_route("TopicA")
        brokers = await admin.cluster_list()

What each operation sends, after mqadmin (`DefaultMQAdminExt` of 4.9.8):

* reads that only the name server can answer (cluster info, routes, topic lists, KV) go to
  one name server: the one that answered last, then the others in order when it cannot be
  reached or times out (a refusal is final): the client instance's `NameServerList`;
* `create_or_update_topic` sends UPDATE_AND_CREATE_TOPIC to one broker, or to every master
  (broker id 0) of a cluster; with `config.order` it also writes the topic's order conf
  (`brokerName:writeQueueNums;...`) to the ORDER_TOPIC_CONFIG namespace of every name server,
  merged with the entries of other brokers for a single broker and replacing them for a
  cluster, as mqadmin does;
* `delete_topic` sends DELETE_TOPIC_IN_BROKER to every master of the cluster and then
  DELETE_TOPIC_IN_NAMESRV (with the cluster name) to every name server;
* `topic_status` asks one broker per broker name of the route (the master, else a slave)
  for GET_TOPIC_STATS_INFO and merges the answers;
* `cluster_list` asks every broker (masters and slaves) for GET_BROKER_RUNTIME_INFO; a
  broker that does not answer still gets its row, with `error` set and no figures, so a
  single dead broker never hides the others.

Requests to several servers run concurrently.  Errors: a name server or broker refusing a
request raises `AdminError` naming the server, with the server's response code and remark
(`RouteNotFound` when the name server has no route for a topic); an operation on several
servers raises one `AdminError` listing every failure and saying where it succeeded.  When
no name server can be reached, the last name server's `RemotingConnectError` /
`RemotingTimeoutError` is raised unchanged; a broker that cannot be reached is reported as a
failure of that broker.

`plan_topic_update` and `plan_topic_deletion` describe, without any network traffic, the
requests the two state-changing operations would send (for dry runs).  The request
builders they use are those the operations send, from `rmq.client.api`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Self, TypeVar

from rmq.client import api
from rmq.client.credentials import SessionCredentials, remoting_client
from rmq.client.errors import ClientError, MQBrokerError, MQClientError, RouteNotFound
from rmq.client.instance import NameServerList, parse_namesrv_addrs
from rmq.remoting.bodies import MASTER_ID, ClusterInfo, TopicConfig, TopicRouteData
from rmq.remoting.client import RemotingClient
from rmq.remoting.codes import RequestCode, ResponseCode, code_name
from rmq.remoting.command import RemotingCommand

T = TypeVar("T")

DEFAULT_ADMIN_TIMEOUT = 5.0
"""Seconds a request may take: mqadmin's 5 s."""

ORDER_TOPIC_CONFIG_NAMESPACE = "ORDER_TOPIC_CONFIG"
"""Name server KV namespace of the order confs (topic -> `brokerName:queueNums;...`)."""

ONE_TARGET = "give exactly one of broker_addr and cluster"


class AdminError(ClientError):
    """An admin operation failed; the message names every server that failed and why.

    `failures` maps each failing server's address to its exception (empty when the failure
    is not tied to a server, such as an unknown cluster name).
    """

    def __init__(self, message: str, failures: dict[str, Exception] | None = None) -> None:
        super().__init__(message)
        self.failures = failures or {}


@dataclass(frozen=True, slots=True)
class TopicUpdate:
    """What `create_or_update_topic` did: the config sent, the brokers that took it and the
    order conf written to the name servers (None when the topic is not ordered)."""

    config: TopicConfig
    broker_addrs: list[str]
    order_conf: str | None


@dataclass(frozen=True, slots=True)
class TopicDeletion:
    """What `delete_topic` did: the masters and the name servers the topic was deleted from."""

    topic: str
    cluster: str
    broker_addrs: list[str]
    namesrv_addrs: list[str]


@dataclass(frozen=True, slots=True)
class TopicEntry:
    """One topic of `list_topics` and the clusters with a broker that serves it."""

    topic: str
    clusters: list[str]


@dataclass(frozen=True, slots=True)
class QueueStatus:
    """One queue of `topic_status`: its offset range and the store time (ms) of its last
    message, 0 when it has none; `broker_addr` is the broker that reported it."""

    broker_name: str
    queue_id: int
    min_offset: int
    max_offset: int
    last_update_timestamp: int
    broker_addr: str


@dataclass(frozen=True, slots=True)
class BrokerStatus:
    """One broker of `cluster_list`, with the figures mqadmin clusterList prints.

    From the broker's runtime info: `in_tps` / `out_tps` are the first (10 s) figures of
    `putTps` / `getTransferedTps`; the queue sizes and head waits are those of the send and
    pull thread pools; `earliest_message_timestamp` is the store time (ms) of the oldest
    message (-1 or 0 when there is none); the four totals are messages put and got yesterday
    and today (from the `msgPutTotal*` / `msgGetTotal*` counters).  A figure the broker does
    not report is None.  `runtime_info` is the whole table.  `error` says why the broker
    did not answer (then every figure is None and `runtime_info` is empty).  `role` is the
    DLedger node's (`LEADER`, `FOLLOWER`, `CANDIDATE`) on an rmq DLedger broker, else `MASTER`
    for brokerId 0 and `SLAVE` otherwise; `term` and `committed_index` are the DLedger node's
    (rmq's extra runtime keys `dLegerTerm`, `dLegerCommittedIndex`), None elsewhere.
    """

    cluster: str
    broker_name: str
    broker_id: int
    addr: str
    version: str | None
    in_tps: float | None
    out_tps: float | None
    send_queue_size: int | None
    send_queue_head_wait_ms: int | None
    pull_queue_size: int | None
    pull_queue_head_wait_ms: int | None
    page_cache_lock_time_ms: int | None
    earliest_message_timestamp: int | None
    commitlog_disk_ratio: float | None
    in_total_yesterday: int | None
    out_total_yesterday: int | None
    in_total_today: int | None
    out_total_today: int | None
    runtime_info: dict[str, str]
    error: str | None = None
    role: str | None = None
    term: int | None = None
    committed_index: int | None = None


@dataclass(frozen=True, slots=True)
class PlannedRequest:
    """A request a dry run would send: its code, who gets it, its header fields."""

    code: RequestCode
    target: str
    ext_fields: dict[str, str]


class AdminClient:
    """Admin operations against one set of name servers (see the module docstring)."""

    def __init__(
        self,
        namesrv_addrs: str | Sequence[str],
        *,
        timeout: float = DEFAULT_ADMIN_TIMEOUT,
        remoting: RemotingClient | None = None,
        credentials: SessionCredentials | None = None,
    ) -> None:
        self.namesrv_addrs = parse_namesrv_addrs(
            namesrv_addrs if isinstance(namesrv_addrs, str) else ";".join(namesrv_addrs)
        )
        self.timeout = timeout
        self._remoting = remoting if remoting is not None else remoting_client(credentials)
        self._owns_remoting = remoting is None
        self._namesrvs = NameServerList(self.namesrv_addrs)

    @property
    def remoting(self) -> RemotingClient:
        """The connections this client sends through; the admin operations of
        ``rmq.client.adminops`` send their requests on them too."""
        return self._remoting

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the connections (only when this client created its RemotingClient)."""
        if self._owns_remoting:
            await self._remoting.close()

    @property
    def current_namesrv(self) -> str:
        """The name server asked first (another one only when it fails)."""
        return self._namesrvs.current

    def use_namesrv(self, addr: str) -> None:
        """Ask `addr`, one of the name servers given, first from now on; ValueError for an
        address that is not one of them."""
        self._namesrvs.use(addr)

    # -- name server reads -------------------------------------------------------------------

    async def cluster_info(self) -> ClusterInfo:
        """Every broker the name server knows, by broker name and by cluster."""
        return await self._ask_namesrv(
            lambda addr: api.get_broker_cluster_info(self._remoting, addr, self.timeout)
        )

    async def cluster_masters(self, cluster: str) -> list[str]:
        """The master addresses of `cluster`, sorted; AdminError for an unknown cluster."""
        return master_addrs(await self.cluster_info(), cluster)

    async def topic_route(self, topic: str) -> TopicRouteData:
        """The topic's route; RouteNotFound when the name server has none."""
        return await self._ask_namesrv(
            lambda addr: api.get_topic_route(self._remoting, addr, topic, self.timeout)
        )

    async def topic_clusters(self, topic: str) -> list[str]:
        """The clusters with a broker in the topic's route, sorted."""
        route, info = await asyncio.gather(self.topic_route(topic), self.cluster_info())
        return clusters_of_route(route, info)

    async def list_topics(self, cluster: str | None = None) -> list[TopicEntry]:
        """Every topic the name server knows (only those of `cluster` when given), sorted,
        each with the clusters that serve it."""
        info = await self.cluster_info()
        if cluster is not None:
            require_cluster(info, cluster)
            return [
                TopicEntry(topic, [cluster]) for topic in sorted(await self._topics_of(cluster))
            ]
        clusters = sorted(info.cluster_addr_table)
        everything, per_cluster = await asyncio.gather(
            self._ask_namesrv(
                lambda addr: api.get_all_topic_list(self._remoting, addr, self.timeout)
            ),
            asyncio.gather(*(self._topics_of(name) for name in clusters)),
        )
        return topic_entries(everything.topic_list, dict(zip(clusters, per_cluster, strict=True)))

    async def _topics_of(self, cluster: str) -> list[str]:
        topics = await self._ask_namesrv(
            lambda addr: api.get_topics_by_cluster(self._remoting, addr, cluster, self.timeout)
        )
        return list(topics.topic_list)

    # -- broker reads ------------------------------------------------------------------------

    async def broker_runtime_info(self, addr: str) -> dict[str, str]:
        """The broker's runtime table (GET_BROKER_RUNTIME_INFO), Apache's keys."""
        (table,) = await self._on_each(
            [addr],
            "get the runtime info",
            lambda broker: api.get_broker_runtime_info(self._remoting, broker, self.timeout),
        )
        return table

    async def topic_status(self, topic: str) -> list[QueueStatus]:
        """Offsets and last store time of every queue of the topic, sorted by broker name and
        queue id; AdminError when no broker reports a queue."""
        route = await self.topic_route(topic)
        addrs = [addr for data in route.broker_datas if (addr := data.select_broker_addr())]
        tables = await self._on_each(
            addrs,
            f"get the stats of topic {topic!r}",
            lambda addr: api.get_topic_stats_info(self._remoting, addr, topic, self.timeout),
        )
        rows = [
            QueueStatus(
                mq.broker_name,
                mq.queue_id,
                offsets.min_offset,
                offsets.max_offset,
                offsets.last_update_timestamp,
                addr,
            )
            for addr, table in zip(addrs, tables, strict=True)
            for mq, offsets in table.offset_table.items()
        ]
        if not rows:
            raise AdminError(f"no broker reports a queue of topic {topic!r}")
        return sorted(rows, key=lambda row: (row.broker_name, row.queue_id))

    async def cluster_list(self) -> list[BrokerStatus]:
        """Every broker of every cluster with its runtime figures, ordered by cluster name,
        broker name and broker id."""
        members = cluster_members(await self.cluster_info())
        answers = await self._settle(
            [addr for _, _, _, addr in members],
            lambda addr: api.get_broker_runtime_info(self._remoting, addr, self.timeout),
        )
        return [
            broker_status(cluster, broker_name, broker_id, addr, {}, describe(answer))
            if isinstance(answer, Exception)
            else broker_status(cluster, broker_name, broker_id, addr, answer)
            for (cluster, broker_name, broker_id, addr), answer in zip(
                members, answers, strict=True
            )
        ]

    # -- changes -----------------------------------------------------------------------------

    async def create_or_update_topic(
        self,
        config: TopicConfig,
        *,
        broker_addr: str | None = None,
        cluster: str | None = None,
    ) -> TopicUpdate:
        """Create or update the topic on the broker at `broker_addr`, or on every master of
        `cluster` (exactly one of the two); with `config.order`, also write its order conf."""
        if broker_addr is not None and cluster is None:
            addrs = [broker_addr]
        elif cluster is not None and broker_addr is None:
            addrs = await self.cluster_masters(cluster)
        else:
            raise ValueError(ONE_TARGET)
        await self._on_each(
            addrs,
            f"create or update topic {config.topic_name!r}",
            lambda addr: api.update_and_create_topic(self._remoting, addr, config, self.timeout),
        )
        order_conf = (
            await self._write_order_conf(config, broker_addr, cluster) if config.order else None
        )
        return TopicUpdate(config, addrs, order_conf)

    async def _write_order_conf(
        self, config: TopicConfig, broker_addr: str | None, cluster: str | None
    ) -> str:
        """Write the topic's order conf to every name server: every broker name of
        `cluster`, or the entry of the broker at `broker_addr` merged into the current conf."""
        topic = config.topic_name
        info = await self.cluster_info()
        if cluster is not None:
            conf = cluster_order_conf(info, cluster, config.write_queue_nums)
        else:
            assert broker_addr is not None
            current = await self._ask_namesrv(
                lambda addr: api.get_kv_config(
                    self._remoting, addr, ORDER_TOPIC_CONFIG_NAMESPACE, topic, self.timeout
                )
            )
            conf = merge_order_conf(
                current, f"{broker_name_of(info, broker_addr)}:{config.write_queue_nums}"
            )
        await self._on_each(
            self.namesrv_addrs,
            f"write the order conf of topic {topic!r}",
            lambda addr: api.put_kv_config(
                self._remoting, addr, ORDER_TOPIC_CONFIG_NAMESPACE, topic, conf, self.timeout
            ),
        )
        return conf

    async def delete_topic(self, topic: str, cluster: str) -> TopicDeletion:
        """Delete the topic from every master of `cluster`, then from every name server."""
        addrs = await self.cluster_masters(cluster)
        await self._on_each(
            addrs,
            f"delete topic {topic!r}",
            lambda addr: api.delete_topic_in_broker(self._remoting, addr, topic, self.timeout),
        )
        await self._on_each(
            self.namesrv_addrs,
            f"delete topic {topic!r} from the name server",
            lambda addr: api.delete_topic_in_namesrv(
                self._remoting, addr, topic, cluster, self.timeout
            ),
        )
        return TopicDeletion(topic, cluster, addrs, list(self.namesrv_addrs))

    # -- sending -----------------------------------------------------------------------------

    async def _ask_namesrv(self, call: Callable[[str], Awaitable[T]]) -> T:
        """`call(addr)` on the current name server, failing over to the next ones while
        they cannot be reached; a refusal is raised as AdminError naming the name server."""

        async def refusal_named(addr: str) -> T:
            try:
                return await call(addr)
            except MQClientError as exc:
                if (
                    isinstance(exc, RouteNotFound)
                    or exc.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
                ):
                    raise  # NameServerList names an address that is not a name server
                raise AdminError(f"name server {addr} refused: {describe(exc)}") from exc

        return await self._namesrvs.call(refusal_named)

    async def _on_each(
        self, addrs: Sequence[str], action: str, call: Callable[[str], Awaitable[T]]
    ) -> list[T]:
        """`call(addr)` for every address at once; any failure raises one AdminError."""
        results = await self._settle(addrs, call)
        failures = {
            addr: result
            for addr, result in zip(addrs, results, strict=True)
            if isinstance(result, Exception)
        }
        if failures:
            raise AdminError(failure_message(action, addrs, failures), failures)
        return [result for result in results if not isinstance(result, Exception)]

    @staticmethod
    async def _settle(
        addrs: Sequence[str], call: Callable[[str], Awaitable[T]]
    ) -> list[T | Exception]:
        """`call(addr)` for every address at once: each result, or the exception it raised
        (cancellation and other BaseExceptions propagate)."""
        results = await asyncio.gather(*(call(addr) for addr in addrs), return_exceptions=True)
        settled: list[T | Exception] = []
        for result in results:
            if isinstance(result, BaseException) and not isinstance(result, Exception):
                raise result
            settled.append(result)
        return settled


# -- pure helpers (no network), shared by the operations and the dry-run plans ----------------


def require_cluster(info: ClusterInfo, cluster: str) -> None:
    """AdminError unless the name server knows `cluster`."""
    if cluster not in info.cluster_addr_table:
        known = ", ".join(sorted(info.cluster_addr_table)) or "none"
        raise AdminError(f"cluster {cluster!r} is not known to the name server (known: {known})")


def master_addrs(info: ClusterInfo, cluster: str) -> list[str]:
    """The master addresses of the brokers of `cluster`, sorted."""
    require_cluster(info, cluster)
    masters = []
    for broker_name in info.cluster_addr_table[cluster]:
        data = info.broker_addr_table.get(broker_name)
        addr = data.broker_addrs.get(MASTER_ID) if data is not None else None
        if addr is not None:
            masters.append(addr)
    if not masters:
        raise AdminError(f"cluster {cluster!r} has no master broker registered")
    return sorted(masters)


def cluster_members(info: ClusterInfo) -> list[tuple[str, str, int, str]]:
    """(cluster, broker name, broker id, address) of every registered broker, by cluster
    name, broker name and broker id."""
    members = []
    for cluster in sorted(info.cluster_addr_table):
        for broker_name in sorted(info.cluster_addr_table[cluster]):
            data = info.broker_addr_table.get(broker_name)
            if data is None:
                continue
            for broker_id, addr in sorted(data.broker_addrs.items()):
                members.append((cluster, broker_name, broker_id, addr))
    return members


def broker_name_of(info: ClusterInfo, addr: str) -> str:
    """The broker name registered with address `addr` (master or slave)."""
    for broker_name, data in info.broker_addr_table.items():
        if addr in data.broker_addrs.values():
            return broker_name
    raise AdminError(f"no broker with address {addr} is registered with the name server")


def clusters_of_route(route: TopicRouteData, info: ClusterInfo) -> list[str]:
    """The clusters with at least one broker name of the route, sorted."""
    names = {data.broker_name for data in route.broker_datas}
    return sorted(
        cluster for cluster, members in info.cluster_addr_table.items() if names & set(members)
    )


def topic_entries(topics: Sequence[str], by_cluster: dict[str, list[str]]) -> list[TopicEntry]:
    """`TopicEntry`s of `topics`, sorted, with the clusters whose topic list holds each."""
    clusters_of: dict[str, list[str]] = {topic: [] for topic in topics}
    for cluster in sorted(by_cluster):
        for topic in by_cluster[cluster]:
            clusters_of.setdefault(topic, []).append(cluster)
    return [TopicEntry(topic, clusters_of[topic]) for topic in sorted(clusters_of)]


def cluster_order_conf(info: ClusterInfo, cluster: str, write_queue_nums: int) -> str:
    """`brokerName:queueNums` of every broker name of `cluster`, sorted, ';'-joined."""
    require_cluster(info, cluster)
    names = sorted(info.cluster_addr_table[cluster])
    return ";".join(f"{name}:{write_queue_nums}" for name in names)


def merge_order_conf(current: str | None, entry: str) -> str:
    """`current` with the entry of `entry`'s broker name replaced (or added at the end)."""
    broker_name = entry.split(":", 1)[0]
    entries = [part for part in (current or "").split(";") if part.strip()]
    merged = [entry if part.split(":", 1)[0] == broker_name else part for part in entries]
    if entry not in merged:
        merged.append(entry)
    return ";".join(merged)


def describe(exc: Exception) -> str:
    """A server failure in a few words: code name and remark, or the connection problem."""
    if isinstance(exc, MQBrokerError | MQClientError):
        return f"{code_name(exc.code, ResponseCode)}: {exc.remark or 'no remark'}"
    return str(exc) or type(exc).__name__


def failure_message(action: str, addrs: Sequence[str], failures: dict[str, Exception]) -> str:
    """'<action> failed on A (why); failed on B (why); done on C'."""
    parts = [f"failed on {addr} ({describe(exc)})" for addr, exc in failures.items()]
    done = [addr for addr in addrs if addr not in failures]
    if done:
        parts.append(f"done on {', '.join(done)}")
    return f"{action}: {'; '.join(parts)}"


def _figure(table: dict[str, str], key: str, parse: Callable[[str], T]) -> T | None:
    """`parse` of the first word of `table[key]`, None when missing or unreadable."""
    words = table.get(key, "").split()
    if not words:
        return None
    try:
        return parse(words[0])
    except ValueError:
        return None


def _difference(table: dict[str, str], later: str, earlier: str) -> int | None:
    end, start = _figure(table, later, int), _figure(table, earlier, int)
    return None if end is None or start is None else end - start


def broker_status(
    cluster: str,
    broker_name: str,
    broker_id: int,
    addr: str,
    table: dict[str, str],
    error: str | None = None,
) -> BrokerStatus:
    """A `BrokerStatus` from a broker's runtime table (empty when it did not answer)."""
    return BrokerStatus(
        cluster=cluster,
        broker_name=broker_name,
        broker_id=broker_id,
        addr=addr,
        version=table.get("brokerVersionDesc"),
        in_tps=_figure(table, "putTps", float),
        out_tps=_figure(table, "getTransferedTps", float),
        send_queue_size=_figure(table, "sendThreadPoolQueueSize", int),
        send_queue_head_wait_ms=_figure(table, "sendThreadPoolQueueHeadWaitTimeMills", int),
        pull_queue_size=_figure(table, "pullThreadPoolQueueSize", int),
        pull_queue_head_wait_ms=_figure(table, "pullThreadPoolQueueHeadWaitTimeMills", int),
        page_cache_lock_time_ms=_figure(table, "pageCacheLockTimeMills", int),
        earliest_message_timestamp=_figure(table, "earliestMessageTimeStamp", int),
        commitlog_disk_ratio=_figure(table, "commitLogDiskRatio", float),
        in_total_yesterday=_difference(
            table, "msgPutTotalTodayMorning", "msgPutTotalYesterdayMorning"
        ),
        out_total_yesterday=_difference(
            table, "msgGetTotalTodayMorning", "msgGetTotalYesterdayMorning"
        ),
        in_total_today=_difference(table, "msgPutTotalTodayNow", "msgPutTotalTodayMorning"),
        out_total_today=_difference(table, "msgGetTotalTodayNow", "msgGetTotalTodayMorning"),
        runtime_info=table,
        error=error,
        role=table.get("dLegerRole") or ("MASTER" if broker_id == 0 else "SLAVE"),
        term=_figure(table, "dLegerTerm", int),
        committed_index=_figure(table, "dLegerCommittedIndex", int),
    )


def _planned(request: RemotingCommand, target: str) -> PlannedRequest:
    return PlannedRequest(RequestCode(request.code), target, dict(request.ext_fields or {}))


def plan_topic_update(
    config: TopicConfig,
    namesrv_addrs: Sequence[str],
    *,
    broker_addr: str | None = None,
    cluster: str | None = None,
) -> list[PlannedRequest]:
    """The requests `create_or_update_topic` would send, without sending anything.  Broker
    names are not known without asking the name server, so an order conf shows
    `<brokerName>` where they go."""
    if broker_addr is not None and cluster is None:
        target = f"broker {broker_addr}"
    elif cluster is not None and broker_addr is None:
        target = f"every master of cluster {cluster}"
    else:
        raise ValueError(ONE_TARGET)
    plan = [_planned(api.create_topic_request(config), target)]
    if config.order:
        entry = f"<brokerName>:{config.write_queue_nums}"
        value = entry if cluster is None else f"{entry};..."
        request = api.put_kv_config_request(ORDER_TOPIC_CONFIG_NAMESPACE, config.topic_name, value)
        plan += [_planned(request, f"name server {addr}") for addr in namesrv_addrs]
    return plan


def plan_topic_deletion(
    topic: str, cluster: str, namesrv_addrs: Sequence[str]
) -> list[PlannedRequest]:
    """The requests `delete_topic` would send, without sending anything."""
    return [
        _planned(api.delete_topic_in_broker_request(topic), f"every master of cluster {cluster}"),
        *(
            _planned(api.delete_topic_in_namesrv_request(topic, cluster), f"name server {addr}")
            for addr in namesrv_addrs
        ),
    ]
