"""The name server's route table: which brokers exist and which topics they serve.

This module owns the in-memory state of a name server, the same five tables Apache RocketMQ
keeps in its `RouteInfoManager`:

* topic queue table: topic -> {broker name -> QueueData} (queue counts, perm, topic sysflag),
  filled only from master (broker id 0) registrations;
* broker address table: broker name -> BrokerData (cluster, broker id -> address);
* cluster address table: cluster name -> set of broker names;
* broker live table: broker address -> last heartbeat time, the topic config DataVersion it
  last reported, its connection and its HA server address;
* filter server table: broker address -> filter server addresses.

It is pure state plus the operations the request processor needs: no sockets, no files, no
JSON.  Its entries and answers are the protocol bodies of `rmq.remoting.bodies` (QueueData,
BrokerData, TopicRouteData, ClusterInfo, TopicList, DataVersion, TopicConfig); an answer is a
copy, which the processor may change and encodes as it is.  The name server runs it on one
event loop, so there are no locks.  A connection is an opaque object compared by identity;
when the expiry scan drops a broker it hands the broker's connection back so that the caller
can close it.  Time comes from an injectable millisecond clock so that expiry can be tested
without sleeping.

Two indexes keep every change to one broker proportional to what that broker holds, never to
the whole table: broker name -> the topics it has queue data for (a disconnect, an
unregistration, an expiry and the write-permission changes walk only those), and connection
-> the broker addresses registered over it (a closed connection finds its broker without
walking the live table).  They are kept in step with the tables by every operation here;
`check_indexes` verifies that for tests.  A registration can be told beforehand whether it
will read its topics at all (`needs_topics`): a master's topics are read only when the broker
is new or its DataVersion changed, so the caller need not decode them otherwise.

Nothing here is persisted: a restarted name server learns the cluster again from the next round
of broker registrations (every 30 s by default).

Ordering: Java iterates hash maps, whose order carries no meaning; every list this module
returns is sorted (broker names, topic names, broker ids) so that answers are deterministic.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from rmq.common.perm import PERM_READ, PERM_WRITE
from rmq.common.sysflag import has_unit_flag, has_unit_sub_flag
from rmq.common.timeutil import now_millis
from rmq.remoting.bodies import (
    MASTER_ID,
    BrokerData,
    ClusterInfo,
    DataVersion,
    QueueData,
    TopicConfig,
    TopicList,
    TopicRouteData,
)


@dataclass(slots=True)
class BrokerLiveInfo:
    """What the name server remembers about one registered broker address."""

    last_update_timestamp: int
    data_version: DataVersion
    connection: object | None
    ha_server_addr: str | None


@dataclass(frozen=True, slots=True)
class RegisterBrokerResult:
    """For a slave: its master's address and HA address (both None for a master)."""

    ha_server_addr: str | None = None
    master_addr: str | None = None


class RouteInfoManager:
    """The route and liveness tables of one name server."""

    def __init__(self, clock: Callable[[], int] = now_millis) -> None:
        self._clock = clock
        self.topic_queue_table: dict[str, dict[str, QueueData]] = {}
        self.broker_addr_table: dict[str, BrokerData] = {}
        self.cluster_addr_table: dict[str, set[str]] = {}
        self.broker_live_table: dict[str, BrokerLiveInfo] = {}
        self.filter_server_table: dict[str, list[str]] = {}
        # Indexes (see the module docstring).  Dicts with None values are ordered sets.
        self._topics_of_broker: dict[str, set[str]] = {}
        self._addrs_of_connection: dict[object, dict[str, None]] = {}

    # -- registration ---------------------------------------------------------------------

    def register_broker(
        self,
        cluster_name: str,
        broker_addr: str,
        broker_name: str,
        broker_id: int,
        ha_server_addr: str | None,
        data_version: DataVersion,
        topics: Iterable[TopicConfig] | None,
        filter_server_list: list[str] | None,
        connection: object | None,
    ) -> RegisterBrokerResult:
        """Record a broker's registration (also its periodic heartbeat).

        A master's topics rebuild the topic queue table only when its DataVersion changed or
        the address is new; a slave only adds its address and learns its master's.  `topics`
        may be None when `needs_topics` answered False for this registration with nothing
        changed in between (the caller then did not decode them).
        """
        self.cluster_addr_table.setdefault(cluster_name, set()).add(broker_name)

        broker_data = self.broker_addr_table.get(broker_name)
        register_first = broker_data is None
        if broker_data is None:
            broker_data = BrokerData(cluster=cluster_name, broker_name=broker_name)
            self.broker_addr_table[broker_name] = broker_data
        addrs = broker_data.broker_addrs
        # One address has one id: a slave promoted to master drops its old entry.
        for other_id in [i for i, a in addrs.items() if a == broker_addr and i != broker_id]:
            del addrs[other_id]
        register_first = addrs.get(broker_id) is None or register_first
        addrs[broker_id] = broker_addr

        if broker_id == MASTER_ID and (
            register_first or self.is_broker_topic_config_changed(broker_addr, data_version)
        ):
            if topics is None:
                raise ValueError(f"the registration of {broker_addr} needs its topics")
            names = [self._create_or_update_queue_data(broker_name, topic) for topic in topics]
            if names:
                self._topics_of_broker.setdefault(broker_name, set()).update(names)

        previous = self.broker_live_table.get(broker_addr)
        if previous is not None:
            self._forget_connection(previous.connection, broker_addr)
        self.broker_live_table[broker_addr] = BrokerLiveInfo(
            self._clock(), data_version, connection, ha_server_addr
        )
        if connection is not None:
            self._addrs_of_connection.setdefault(connection, {})[broker_addr] = None

        if filter_server_list is not None:
            if filter_server_list:
                self.filter_server_table[broker_addr] = list(filter_server_list)
            else:
                self.filter_server_table.pop(broker_addr, None)

        if broker_id != MASTER_ID:
            master_addr = addrs.get(MASTER_ID)
            master_live = self.broker_live_table.get(master_addr) if master_addr else None
            if master_live is not None:
                return RegisterBrokerResult(master_live.ha_server_addr, master_addr)
        return RegisterBrokerResult()

    def needs_topics(
        self, broker_addr: str, broker_name: str, broker_id: int, data_version: DataVersion
    ) -> bool:
        """Whether `register_broker` with these values would read the broker's topics: a
        master's, when the address is new under that name or its DataVersion changed."""
        if broker_id != MASTER_ID:
            return False
        broker_data = self.broker_addr_table.get(broker_name)
        if broker_data is None or broker_data.broker_addrs.get(broker_id) is None:
            return True
        return self.is_broker_topic_config_changed(broker_addr, data_version)

    def _create_or_update_queue_data(self, broker_name: str, topic: TopicConfig) -> str:
        """Put the broker's queue data of `topic`; returns the topic name."""
        self.topic_queue_table.setdefault(topic.topic_name, {})[broker_name] = QueueData(
            broker_name=broker_name,
            read_queue_nums=topic.read_queue_nums,
            write_queue_nums=topic.write_queue_nums,
            perm=topic.perm,
            topic_sys_flag=topic.topic_sys_flag,
        )
        return topic.topic_name

    def unregister_broker(
        self, cluster_name: str, broker_addr: str, broker_name: str, broker_id: int
    ) -> None:
        """Forget one broker address (a broker shutting down cleanly)."""
        self._pop_live(broker_addr)
        self.filter_server_table.pop(broker_addr, None)
        broker_data = self.broker_addr_table.get(broker_name)
        if broker_data is None:
            return
        broker_data.broker_addrs.pop(broker_id, None)
        if broker_data.broker_addrs:
            return
        del self.broker_addr_table[broker_name]
        names = self.cluster_addr_table.get(cluster_name)
        if names is not None:
            names.discard(broker_name)
            if not names:
                del self.cluster_addr_table[cluster_name]
        self._remove_topics_of_broker(broker_name)

    def _remove_topics_of_broker(self, broker_name: str) -> None:
        """Drop the broker's queue data, and every topic left without any."""
        for topic in self._topics_of_broker.pop(broker_name, ()):
            queue_datas = self.topic_queue_table.get(topic)
            if queue_datas is None:
                continue
            queue_datas.pop(broker_name, None)
            if not queue_datas:
                del self.topic_queue_table[topic]

    def _pop_live(self, broker_addr: str) -> BrokerLiveInfo | None:
        """Remove and return the live entry of `broker_addr`, keeping the connection index."""
        live = self.broker_live_table.pop(broker_addr, None)
        if live is not None:
            self._forget_connection(live.connection, broker_addr)
        return live

    def _forget_connection(self, connection: object | None, broker_addr: str) -> None:
        if connection is None:
            return
        addrs = self._addrs_of_connection.get(connection)
        if addrs is not None:
            addrs.pop(broker_addr, None)
            if not addrs:
                del self._addrs_of_connection[connection]

    # -- data versions --------------------------------------------------------------------

    def query_broker_data_version(self, broker_addr: str) -> DataVersion | None:
        live = self.broker_live_table.get(broker_addr)
        return live.data_version if live is not None else None

    def is_broker_topic_config_changed(self, broker_addr: str, data_version: DataVersion) -> bool:
        return self.query_broker_data_version(broker_addr) != data_version

    def touch_broker(self, broker_addr: str) -> None:
        """Refresh a live broker's heartbeat time (QUERY_DATA_VERSION with an unchanged version)."""
        live = self.broker_live_table.get(broker_addr)
        if live is not None:
            live.last_update_timestamp = self._clock()

    # -- liveness -------------------------------------------------------------------------

    def scan_not_active_brokers(self, expired_millis: int) -> list[tuple[str, object | None]]:
        """Drop every broker not heard from for more than `expired_millis`.

        Returns the dropped brokers' addresses and connections, for the caller to close.
        """
        expired = []
        for addr in self.expired_broker_addrs(expired_millis):
            live = self.drop_expired_broker(addr, expired_millis)
            if live is not None:
                expired.append((addr, live.connection))
        return expired

    def expired_broker_addrs(self, expired_millis: int) -> list[str]:
        """The brokers not heard from for more than `expired_millis` (nothing is dropped)."""
        deadline = self._clock() - expired_millis
        return [
            addr
            for addr, live in self.broker_live_table.items()
            if live.last_update_timestamp < deadline
        ]

    def drop_expired_broker(self, broker_addr: str, expired_millis: int) -> BrokerLiveInfo | None:
        """Drop one broker if it is still expired; returns its live entry when dropped.

        With `expired_broker_addrs`, a caller can drop many expired brokers one at a time,
        serving other work in between: one that registered meanwhile is kept.
        """
        live = self.broker_live_table.get(broker_addr)
        if live is None or live.last_update_timestamp >= self._clock() - expired_millis:
            return None
        self._remove_broker_addr(broker_addr)
        return live

    def on_connection_closed(self, remote_addr: str, connection: object) -> str | None:
        """Drop the broker registered over `connection` at once; returns its address.

        When no broker registered over it, the connection's remote address is tried as a
        broker address (as Apache does), which only matches in unusual set-ups.
        """
        addrs = self._addrs_of_connection.get(connection)
        broker_addr = next(iter(addrs)) if addrs else remote_addr
        return broker_addr if self._remove_broker_addr(broker_addr) else None

    def _remove_broker_addr(self, broker_addr: str) -> bool:
        """Forget one broker address everywhere; False when it was not known at all."""
        known = self._pop_live(broker_addr) is not None
        self.filter_server_table.pop(broker_addr, None)
        for broker_name, broker_data in list(self.broker_addr_table.items()):
            ids = [i for i, a in broker_data.broker_addrs.items() if a == broker_addr]
            if not ids:
                continue
            del broker_data.broker_addrs[ids[0]]
            if not broker_data.broker_addrs:
                del self.broker_addr_table[broker_name]
                self._remove_broker_name_from_clusters(broker_name)
                self._remove_topics_of_broker(broker_name)
            return True
        return known

    def _remove_broker_name_from_clusters(self, broker_name: str) -> None:
        for cluster_name, names in self.cluster_addr_table.items():
            if broker_name in names:
                names.discard(broker_name)
                if not names:
                    del self.cluster_addr_table[cluster_name]
                return

    # -- route and cluster queries --------------------------------------------------------

    def pickup_topic_route_data(self, topic: str) -> TopicRouteData | None:
        """The route of `topic`, or None unless it has both queue data and broker data."""
        queue_datas = self.topic_queue_table.get(topic)
        if not queue_datas:
            return None
        broker_datas = [
            _copy_broker_data(self.broker_addr_table[name])
            for name in sorted(queue_datas)
            if name in self.broker_addr_table
        ]
        if not broker_datas:
            return None
        filter_servers = {
            addr: list(self.filter_server_table[addr])
            for broker_data in broker_datas
            for addr in broker_data.broker_addrs.values()
            if addr in self.filter_server_table
        }
        return TopicRouteData(
            queue_datas=[dataclasses.replace(queue_datas[name]) for name in sorted(queue_datas)],
            broker_datas=broker_datas,
            filter_server_table=filter_servers,
        )

    def get_all_cluster_info(self) -> ClusterInfo:
        return ClusterInfo(
            broker_addr_table={
                name: _copy_broker_data(self.broker_addr_table[name])
                for name in sorted(self.broker_addr_table)
            },
            cluster_addr_table={
                cluster: sorted(names) for cluster, names in sorted(self.cluster_addr_table.items())
            },
        )

    # -- permissions and deletion ---------------------------------------------------------

    def wipe_write_perm_of_broker(self, broker_name: str) -> int:
        """Clear the write bit of every topic of `broker_name`; returns how many were touched."""
        return self._update_perm_of_broker(broker_name, lambda perm: perm & ~PERM_WRITE)

    def add_write_perm_of_broker(self, broker_name: str) -> int:
        """Set every topic of `broker_name` to read-write; returns how many were touched."""
        return self._update_perm_of_broker(broker_name, lambda _perm: PERM_READ | PERM_WRITE)

    def _update_perm_of_broker(self, broker_name: str, update: Callable[[int], int]) -> int:
        count = 0
        for topic in self._topics_of_broker.get(broker_name, ()):
            queue_data = self.topic_queue_table[topic].get(broker_name)
            if queue_data is not None:
                queue_data.perm = update(queue_data.perm)
                count += 1
        return count

    def delete_topic(self, topic: str, cluster_name: str | None = None) -> None:
        """Remove a topic everywhere, or only from the brokers of `cluster_name`."""
        queue_datas = self.topic_queue_table.get(topic)
        if queue_datas is None:
            return
        if not cluster_name:
            broker_names: Iterable[str] = list(queue_datas)
        else:
            broker_names = self.cluster_addr_table.get(cluster_name, ())
        for broker_name in broker_names:
            if queue_datas.pop(broker_name, None) is not None:
                self._forget_topic_of_broker(broker_name, topic)
        if not queue_datas:
            del self.topic_queue_table[topic]

    def _forget_topic_of_broker(self, broker_name: str, topic: str) -> None:
        topics = self._topics_of_broker.get(broker_name)
        if topics is not None:
            topics.discard(topic)
            if not topics:
                del self._topics_of_broker[broker_name]

    # -- topic lists ----------------------------------------------------------------------

    def get_all_topic_list(self) -> TopicList:
        return TopicList(topic_list=sorted(self.topic_queue_table))

    def get_topics_by_cluster(self, cluster_name: str) -> TopicList:
        topics: set[str] = set()
        for broker_name in self.cluster_addr_table.get(cluster_name, ()):
            topics.update(self._topics_of_broker.get(broker_name, ()))
        return TopicList(topic_list=sorted(topics))

    def get_system_topic_list(self) -> TopicList:
        """Cluster names and broker names (the topics every broker creates for itself).

        The broker address is the lowest-id address of the first broker name.
        """
        topics: set[str] = set()
        for cluster_name, broker_names in self.cluster_addr_table.items():
            topics.add(cluster_name)
            topics.update(broker_names)
        broker_addr = next(
            (
                data.broker_addrs[min(data.broker_addrs)]
                for _, data in sorted(self.broker_addr_table.items())
                if data.broker_addrs
            ),
            None,
        )
        return TopicList(topic_list=sorted(topics), broker_addr=broker_addr)

    def get_unit_topic_list(self) -> TopicList:
        return self._topics_where(has_unit_flag)

    def get_has_unit_sub_topic_list(self) -> TopicList:
        return self._topics_where(has_unit_sub_flag)

    def get_has_unit_sub_ununit_topic_list(self) -> TopicList:
        return self._topics_where(lambda flag: not has_unit_flag(flag) and has_unit_sub_flag(flag))

    def _topics_where(self, predicate: Callable[[int], bool]) -> TopicList:
        """Topics whose first queue data's topic sysflag satisfies `predicate`."""
        return TopicList(
            topic_list=sorted(
                topic
                for topic, queue_datas in self.topic_queue_table.items()
                if predicate(_first(queue_datas).topic_sys_flag)
            )
        )

    # -- consistency (for tests) ----------------------------------------------------------

    def check_indexes(self) -> None:
        """Raise AssertionError unless both indexes agree with the tables they index."""
        topics_of_broker: dict[str, set[str]] = {}
        for topic, queue_datas in self.topic_queue_table.items():
            for broker_name in queue_datas:
                topics_of_broker.setdefault(broker_name, set()).add(topic)
        if topics_of_broker != self._topics_of_broker:
            raise AssertionError(f"topic index {self._topics_of_broker} != {topics_of_broker}")
        addrs_of_connection: dict[object, set[str]] = {}
        for addr, live in self.broker_live_table.items():
            if live.connection is not None:
                addrs_of_connection.setdefault(live.connection, set()).add(addr)
        indexed = {conn: set(addrs) for conn, addrs in self._addrs_of_connection.items()}
        if indexed != addrs_of_connection:
            raise AssertionError(f"connection index {indexed} != {addrs_of_connection}")


def _first(queue_datas: Mapping[str, QueueData]) -> QueueData:
    return next(iter(queue_datas.values()))


def _copy_broker_data(broker_data: BrokerData) -> BrokerData:
    """A copy for an answer, its addresses ordered by broker id."""
    return dataclasses.replace(
        broker_data, broker_addrs=dict(sorted(broker_data.broker_addrs.items()))
    )
