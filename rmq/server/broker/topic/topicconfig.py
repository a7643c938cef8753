"""The broker's topic table (``config/topics.json``): which topics it serves, with how many
queues and which perm.

:class:`TopicConfigManager` owns the table, its :class:`DataVersion` and the file.  Design:

* At construction the broker's own topics are put in the table from its config (spec §5.1):
  ``SELF_TEST_TOPIC``, ``TBW102`` (only with ``autoCreateTopicEnable``, with
  ``defaultTopicQueueNums`` queues and perm R+W+INHERIT), ``BenchmarkTest`` (1024 queues),
  the cluster-name topic (16 queues) and the broker-name topic (1 queue), both INHERIT plus
  R+W when ``clusterTopicEnable`` / ``brokerTopicEnable``, ``OFFSET_MOVED_EVENT``,
  ``SCHEDULE_TOPIC_XXXX`` (18 queues, one per delay level), the trace topic when
  ``traceTopicEnable``, and ``<cluster>_REPLY_TOPIC``.  :meth:`load` then reads the file, whose
  entries replace those (a topic the operator changed keeps its stored settings) and whose
  DataVersion becomes the table's.  The cluster name, broker name, reply topic and enabled
  trace topic join the fixed system topics of :mod:`rmq.common.naming` for this broker.
* Every change bumps the DataVersion (counter + 1, stamped now) and schedules a rewrite of
  the file (:class:`~rmq.server.broker.configmanager.VersionedConfigManager`: group commit,
  atomically, previous content kept as ``.bak``; the request that made the change is answered
  once it is written); a failed write is logged and the change stays in memory, as in
  Apache.  :meth:`TopicConfigManager.next_data_version` does the same without a change to the
  table: UPDATE_BROKER_CONFIG calls it when ``brokerPermission`` changes, so that the name
  servers take the next registration's topic perms.
* A change the name servers must learn about (a topic created on send, on heartbeat or on
  send-back) calls :attr:`TopicConfigManager.on_register` with the new config; the broker
  re-registers its whole table from there (Apache's ``registerBrokerAll``).  A topic created
  or updated by UPDATE_AND_CREATE_TOPIC calls :attr:`TopicConfigManager.on_increment`
  instead: the broker registers that topic alone with the new data version (Apache's
  ``registerIncrementBrokerData``).  Deleting a
  topic and the order flags learnt from a registration answer do not.
* Auto-creation on send follows spec §2.2: a topic unknown here is created from its template
  topic (``defaultTopic`` of the send header, normally ``TBW102``) when the template carries
  the INHERIT bit, with ``min(client defaultTopicQueueNums, template writeQueueNums)`` queues
  and the template's perm without INHERIT.  With ``autoCreateTopicEnable`` off, a ``TBW102``
  left in ``topics.json`` from an earlier run loses its INHERIT bit on first use, so it can
  no longer serve as a template.

The table is read and changed from the broker's event loop only, so there are no locks.
Stored configs are treated as values: a change puts a new object in the table, so a config
or a wrapper snapshot handed out earlier never changes under its holder (and callers must not
mutate them either).
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable, Collection, Mapping

from rmq.common.config import BrokerConfig
from rmq.common.naming import (
    AUTO_CREATE_TOPIC_KEY_TOPIC,
    RMQ_SYS_BENCHMARK_TOPIC,
    RMQ_SYS_OFFSET_MOVED_EVENT,
    RMQ_SYS_SCHEDULE_TOPIC,
    RMQ_SYS_SELF_TEST_TOPIC,
    is_system_topic,
    reply_topic,
    system_topic_conflict_error,
    topic_error,
)
from rmq.common.perm import DEFAULT_TOPIC_PERM, PERM_INHERIT, PERM_READ, PERM_WRITE, is_inherited
from rmq.remoting.bodies import TopicConfig, TopicConfigSerializeWrapper
from rmq.server.broker.configmanager import VersionedConfigManager

log = logging.getLogger("rmq.broker")

SCHEDULE_TOPIC_QUEUE_NUMS = 18
"""Queues of ``SCHEDULE_TOPIC_XXXX``: one per default delay level."""
BENCHMARK_TOPIC_QUEUE_NUMS = 1024
CLUSTER_TOPIC_QUEUE_NUMS = 16
"""Queues of the cluster-name topic: TopicConfig's default queue count."""

RegisterHook = Callable[[TopicConfig], None]
"""Called with a created or updated topic that the name servers must learn about."""


class TopicConfigError(ValueError):
    """A topic name UPDATE_AND_CREATE_TOPIC / DELETE_TOPIC_IN_BROKER refuses; the message is
    the broker's remark (answered with SYSTEM_ERROR)."""


def _inherit_perm(enabled: bool) -> int:
    """INHERIT, plus R+W when the topic is enabled (cluster and broker-name topics)."""
    return PERM_INHERIT | (PERM_READ | PERM_WRITE if enabled else 0)


def _topic(name: str, queue_nums: int, perm: int = DEFAULT_TOPIC_PERM) -> TopicConfig:
    return TopicConfig(
        topic_name=name, read_queue_nums=queue_nums, write_queue_nums=queue_nums, perm=perm
    )


def restricted(config: TopicConfig, broker_permission: int) -> TopicConfig:
    """``config`` as a registration lists it: unchanged while the broker is readable and
    writable, else with only its queue counts and the broker's perm."""
    if broker_permission & (PERM_READ | PERM_WRITE) == PERM_READ | PERM_WRITE:
        return config
    return TopicConfig(
        topic_name=config.topic_name,
        read_queue_nums=config.read_queue_nums,
        write_queue_nums=config.write_queue_nums,
        perm=broker_permission,
    )


class TopicConfigManager(VersionedConfigManager[TopicConfigSerializeWrapper]):
    """The topic table of one broker, persisted to ``topics.json``."""

    content = "topics"
    table_key = "topicConfigTable"

    def __init__(
        self,
        broker_config: BrokerConfig,
        path: str | os.PathLike[str],
        *,
        on_register: RegisterHook | None = None,
        on_increment: RegisterHook | None = None,
    ) -> None:
        super().__init__(path, TopicConfigSerializeWrapper, self.topic_config_wrapper)
        self.on_register = on_register
        self.on_increment = on_increment
        self._broker_config = broker_config
        self._table: dict[str, TopicConfig] = {}
        self._broker_topics = self._create_broker_topics()

    def _create_broker_topics(self) -> frozenset[str]:
        """Put the broker's own topics in the table; return the names this broker reserves
        beyond the fixed system topics."""
        config = self._broker_config
        cluster_reply_topic = reply_topic(config.broker_cluster_name)
        topics = [_topic(RMQ_SYS_SELF_TEST_TOPIC, 1)]
        if config.auto_create_topic_enable:
            topics.append(
                _topic(
                    AUTO_CREATE_TOPIC_KEY_TOPIC,
                    config.default_topic_queue_nums,
                    PERM_INHERIT | PERM_READ | PERM_WRITE,
                )
            )
        topics += [
            _topic(RMQ_SYS_BENCHMARK_TOPIC, BENCHMARK_TOPIC_QUEUE_NUMS),
            _topic(
                config.broker_cluster_name,
                CLUSTER_TOPIC_QUEUE_NUMS,
                _inherit_perm(config.cluster_topic_enable),
            ),
            _topic(config.broker_name, 1, _inherit_perm(config.broker_topic_enable)),
            _topic(RMQ_SYS_OFFSET_MOVED_EVENT, 1),
            _topic(RMQ_SYS_SCHEDULE_TOPIC, SCHEDULE_TOPIC_QUEUE_NUMS),
        ]
        reserved = {config.broker_cluster_name, config.broker_name, cluster_reply_topic}
        if config.trace_topic_enable:
            topics.append(_topic(config.msg_trace_topic_name, 1))
            reserved.add(config.msg_trace_topic_name)
        topics.append(_topic(cluster_reply_topic, 1))
        for topic_config in topics:
            self._table[topic_config.topic_name] = topic_config
        return frozenset(reserved)

    # -- persistence ---------------------------------------------------------------------

    def _apply(self, body: TopicConfigSerializeWrapper) -> int:
        """The stored topics replace the broker's own of the same name."""
        self._table.update(body.topic_config_table)
        self._data_version = body.data_version
        return len(body.topic_config_table)

    def _clear(self) -> None:
        self._table.clear()

    def _entries(self) -> Mapping[str, TopicConfig]:
        return self._table

    def _put_and_register(self, config: TopicConfig, *, increment: bool = False) -> None:
        self._table[config.topic_name] = config
        self.next_data_version()
        hook = self.on_increment if increment and self.on_increment else self.on_register
        if hook is not None:
            hook(config)

    # -- lookups -------------------------------------------------------------------------

    @property
    def topic_config_table(self) -> Mapping[str, TopicConfig]:
        """Every topic of this broker (a read-only view of the live table)."""
        return self._table

    @property
    def broker_topics(self) -> frozenset[str]:
        """The system topic names this broker adds: cluster name, broker name, reply topic
        and, when enabled, the trace topic."""
        return self._broker_topics

    def select(self, topic: str) -> TopicConfig | None:
        return self._table.get(topic)

    def is_system_topic(self, topic: str) -> bool:
        """Whether ``topic`` is reserved on this broker (refused by create and delete)."""
        return is_system_topic(topic, self._broker_topics)

    def is_order_topic(self, topic: str) -> bool:
        config = self._table.get(topic)
        return config is not None and config.order

    def topic_config_wrapper(
        self, *, broker_permission: int = PERM_READ | PERM_WRITE
    ) -> TopicConfigSerializeWrapper:
        """A snapshot of the table and its version (GET_ALL_TOPIC_CONFIG, REGISTER_BROKER).

        For a registration pass the broker's ``brokerPermission``: while the broker is not
        both readable and writable, every topic is listed with that perm and only its queue
        counts, so the name servers route accordingly.
        """
        table = dict(self._table)
        if broker_permission & (PERM_READ | PERM_WRITE) != PERM_READ | PERM_WRITE:
            table = {name: restricted(config, broker_permission) for name, config in table.items()}
        return TopicConfigSerializeWrapper(
            topic_config_table=table, data_version=self._data_version
        )

    # -- changes -------------------------------------------------------------------------

    def _check_admin_topic(self, topic: str) -> None:
        remark = topic_error(topic)
        if remark is None and self.is_system_topic(topic):
            remark = system_topic_conflict_error(topic)
        if remark is not None:
            raise TopicConfigError(remark)

    def update(self, config: TopicConfig) -> None:
        """Create or replace a topic (UPDATE_AND_CREATE_TOPIC).

        Raises :class:`TopicConfigError` with the broker's remark for an invalid name or a
        system topic.
        """
        self._check_admin_topic(config.topic_name)
        old = self._table.get(config.topic_name)
        if old is None:
            log.info("create new topic %s", config)
        else:
            log.info("update topic config, old: %s new: %s", old, config)
        self._put_and_register(config, increment=True)

    def delete(self, topic: str) -> bool:
        """Remove a topic (DELETE_TOPIC_IN_BROKER); False when it did not exist.

        Raises :class:`TopicConfigError` for an invalid name or a system topic.
        """
        self._check_admin_topic(topic)
        return self._delete(self._table, topic, "topic config")

    def create_in_send_message(
        self,
        topic: str,
        default_topic: str,
        remote_addr: str,
        client_default_queue_nums: int,
        topic_sys_flag: int,
    ) -> tuple[TopicConfig | None, bool]:
        """The config of ``topic`` for a send, auto-created from ``default_topic`` if needed.

        Returns ``(config, created)``; ``(None, False)`` when the topic does not exist and
        cannot be created (no template, or the template lacks INHERIT).  A created topic has
        already been persisted and announced through :attr:`on_register`.
        """
        existing = self._table.get(topic)
        if existing is not None:
            return existing, False
        template = self._table.get(default_topic)
        if template is None:
            log.warning(
                "cannot create topic %s: the default topic %s does not exist, producer %s",
                topic,
                default_topic,
                remote_addr,
            )
            return None, False
        if (
            default_topic == AUTO_CREATE_TOPIC_KEY_TOPIC
            and not self._broker_config.auto_create_topic_enable
        ):
            template = dataclasses.replace(template, perm=PERM_READ | PERM_WRITE)
            self._table[default_topic] = template
        if not is_inherited(template.perm):
            log.warning(
                "cannot create topic %s: the default topic %s has no inherit perm (%d), "
                "producer %s",
                topic,
                default_topic,
                template.perm,
                remote_addr,
            )
            return None, False
        queue_nums = max(0, min(client_default_queue_nums, template.write_queue_nums))
        config = TopicConfig(
            topic_name=topic,
            read_queue_nums=queue_nums,
            write_queue_nums=queue_nums,
            perm=template.perm & ~PERM_INHERIT,
            topic_filter_type=template.topic_filter_type,
            topic_sys_flag=topic_sys_flag,
        )
        log.info(
            "create new topic by default topic %s: %s, producer %s",
            default_topic,
            config,
            remote_addr,
        )
        self._put_and_register(config)
        return config, True

    def create_retry_topic_if_absent(
        self, topic: str, queue_nums: int, perm: int, topic_sys_flag: int = 0
    ) -> TopicConfig:
        """The config of a topic the broker itself needs, created as given when absent.

        Serves ``%RETRY%<group>`` (heartbeat, send-back, sends to an unknown retry topic),
        ``%DLQ%<group>`` and the transaction system topics.  A created topic is persisted and
        announced through :attr:`on_register`.
        """
        existing = self._table.get(topic)
        if existing is not None:
            return existing
        config = TopicConfig(
            topic_name=topic,
            read_queue_nums=queue_nums,
            write_queue_nums=queue_nums,
            perm=perm,
            topic_sys_flag=topic_sys_flag,
        )
        log.info("create new topic %s", config)
        self._put_and_register(config)
        return config

    def update_order_topic_config(self, order_topics: Collection[str]) -> None:
        """Apply the order topics a name server returned on registration (the keys of its
        ``ORDER_TOPIC_CONFIG`` KV namespace): those topics become ordered, all others not."""
        changed = False
        for name, config in list(self._table.items()):
            order = name in order_topics
            if config.order != order:
                self._table[name] = dataclasses.replace(config, order=order)
                changed = True
                log.info("update order topic config, topic=%s, order=%s", name, order)
        if changed:
            self.next_data_version()
