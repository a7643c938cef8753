"""Which clients are connected to the broker: producer groups and consumer groups.

:class:`ClientManager` keeps the two tables a RocketMQ broker builds from heartbeats:

* producers: group -> channel -> :class:`ClientChannelInfo` (client id, language, version,
  last heartbeat), plus client id -> channel, used to find a producer to ask about a
  transaction and for the admin connection lists;
* consumers: group -> :class:`ConsumerGroupInfo`: the group's channels, its consume type,
  message model and consume-from-where (as the last heartbeat said), and its subscriptions
  by topic.

A channel is whatever the transport hands the broker for a client connection; the manager
needs only :class:`ClientChannel` (its remote address, whether it is closed, and a way to
close it) and uses it as a dictionary key, so it must hash by identity.  Time comes from an
injectable millisecond clock.

Membership rules (Apache's ``ConsumerManager``): a heartbeat *changes* a consumer group when
it brings a channel the group did not have, subscribes a topic the group did not have, or no
longer subscribes a topic the group had.  A subscription with a higher ``subVersion`` replaces
the stored one without counting as a change.  The answer to a change is
NOTIFY_CONSUMER_IDS_CHANGED to every channel of the group, the heartbeat's own included, so
each consumer rebalances at once; :class:`ConsumerGroupChange` lists those channels, already
filtered by the group's ``notifyConsumerIdsChangedEnable`` (passed in as ``is_notify``) and the
broker's ``notifyConsumerIdsChangedEnable``.  UNREGISTER_CLIENT notifies the remaining channels
whether or not anything was removed; a closed channel notifies the remaining channels of every
group it was in.  A group whose last channel leaves is removed.

Housekeeping: :meth:`ClientManager.scan_not_active_channels` (every 10 s in Apache) closes and
forgets channels whose last heartbeat is older than ``channel_expired_timeout_ms`` (120 s).  As
in Apache, that removal notifies nobody: the other consumers pick the change up at their next
periodic rebalance.

Everything runs on the broker's event loop, so there are no locks.  Lists come out in the
order channels and groups were first seen.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

from rmq.common.config import BrokerConfig
from rmq.common.naming import TOOLS_CONSUMER_GROUP
from rmq.common.timeutil import now_millis
from rmq.remoting.bodies import (
    Connection,
    ConsumeFromWhere,
    ConsumerConnection,
    ConsumeType,
    MessageModel,
    ProducerConnection,
    SubscriptionData,
)
from rmq.remoting.codes import LanguageCode

log = logging.getLogger("rmq.broker")

CHANNEL_EXPIRED_TIMEOUT_MS = 120_000
"""A client not heard from for this long is dropped (Apache's fixed value)."""

TOOL_GROUPS = frozenset({TOOLS_CONSUMER_GROUP})
"""Groups of short-lived tool consumers (`rmq consume` without -g, mqadmin's printMsg...)."""


def chatter_level(group: str) -> int:
    """The log level of a consumer group's connection chatter (a member connects, subscribes,
    leaves, the group goes): DEBUG for tool groups, whose every run would add five INFO
    lines, INFO for the others."""
    return logging.DEBUG if group in TOOL_GROUPS else logging.INFO


class ClientChannel(Protocol):
    """A client connection as the manager sees it (the remoting Connection satisfies it)."""

    @property
    def remote_addr(self) -> str: ...

    @property
    def closed(self) -> bool: ...

    def close(self) -> None: ...


@dataclass(slots=True, eq=False)
class ClientChannelInfo:
    """One client on one channel, from its heartbeat (``clientID``) and its request header
    (language, version).  ``last_update_timestamp`` is set by the manager."""

    channel: ClientChannel
    client_id: str
    language: LanguageCode
    version: int
    last_update_timestamp: int = 0

    def connection(self) -> Connection:
        """The admin view of this client (the Connection body)."""
        return Connection(
            client_id=self.client_id,
            client_addr=self.channel.remote_addr,
            language=self.language,
            version=self.version,
        )


@dataclass(slots=True)
class ConsumerGroupInfo:
    """A consumer group's live members and subscriptions on this broker."""

    group_name: str
    consume_type: ConsumeType
    message_model: MessageModel
    consume_from_where: ConsumeFromWhere
    channels: dict[ClientChannel, ClientChannelInfo] = field(default_factory=dict)
    subscriptions: dict[str, SubscriptionData] = field(default_factory=dict)

    def client_ids(self) -> list[str]:
        return [info.client_id for info in self.channels.values()]

    def find_channel(self, client_id: str) -> ClientChannelInfo | None:
        for info in self.channels.values():
            if info.client_id == client_id:
                return info
        return None

    def consumer_connection(self) -> ConsumerConnection:
        """GET_CONSUMER_CONNECTION_LIST's body for this group."""
        return ConsumerConnection(
            connection_set=[info.connection() for info in self.channels.values()],
            subscription_table=dict(self.subscriptions),
            consume_type=self.consume_type,
            message_model=self.message_model,
            consume_from_where=self.consume_from_where,
        )

    def update_channel(self, info: ClientChannelInfo, now: int) -> bool:
        """Record a heartbeat of ``info``; True when its channel is new to the group.

        A known channel reporting another client id is taken over by the new client id
        without counting as a change (Apache logs this as a bug on the client side).
        """
        known = self.channels.get(info.channel)
        if known is None:
            level = chatter_level(self.group_name)
            log.log(level, "new consumer connected, group %s: %s", self.group_name, info)
            self.channels[info.channel] = info
            info.last_update_timestamp = now
            return True
        if known.client_id != info.client_id:
            log.error(
                "consumer channel of group %s changed its client id: old %s new %s",
                self.group_name,
                known,
                info,
            )
            self.channels[info.channel] = info
            known = info
        known.last_update_timestamp = now
        return False

    def update_subscriptions(self, subscriptions: Iterable[SubscriptionData]) -> bool:
        """Take the group's subscriptions from a heartbeat; True when a topic was added or
        dropped.  A newer ``sub_version`` of a known topic replaces it silently."""
        changed = False
        topics = set()
        for subscription in subscriptions:
            topics.add(subscription.topic)
            old = self.subscriptions.get(subscription.topic)
            if old is None:
                log.log(
                    chatter_level(self.group_name),
                    "group %s subscribes a new topic: %s",
                    self.group_name,
                    subscription,
                )
                changed = True
            elif subscription.sub_version <= old.sub_version:
                continue
            self.subscriptions[subscription.topic] = subscription
        for topic in [topic for topic in self.subscriptions if topic not in topics]:
            log.warning("group %s no longer subscribes topic %s", self.group_name, topic)
            del self.subscriptions[topic]
            changed = True
        return changed


@dataclass(frozen=True, slots=True)
class ConsumerGroupChange:
    """What a registration, an unregistration or a closed channel did to one consumer group.

    ``changed``: the membership or the subscribed topics changed.  ``group_removed``: the
    group's last channel left and the group is gone.  ``notify``: the channels to send
    NOTIFY_CONSUMER_IDS_CHANGED (oneway, header ``consumerGroup``) to; empty when none.
    """

    group: str
    changed: bool
    group_removed: bool = False
    notify: tuple[ClientChannel, ...] = ()


class ClientManager:
    """The producer and consumer group tables of one broker."""

    def __init__(
        self,
        broker_config: BrokerConfig,
        *,
        channel_expired_timeout_ms: int = CHANNEL_EXPIRED_TIMEOUT_MS,
        clock: Callable[[], int] = now_millis,
    ) -> None:
        self.channel_expired_timeout_ms = channel_expired_timeout_ms
        self._broker_config = broker_config
        self._clock = clock
        self._producers: dict[str, dict[ClientChannel, ClientChannelInfo]] = {}
        self._producer_by_client_id: dict[str, ClientChannel] = {}
        self._consumers: dict[str, ConsumerGroupInfo] = {}
        self._round_robin = itertools.count()

    def _notify_list(self, group: ConsumerGroupInfo, is_notify: bool) -> tuple[ClientChannel, ...]:
        if is_notify and self._broker_config.notify_consumer_ids_changed_enable:
            return tuple(group.channels)
        return ()

    # -- producers -----------------------------------------------------------------------

    def register_producer(self, group: str, info: ClientChannelInfo) -> None:
        """Record a heartbeat of a producer of ``group``."""
        channels = self._producers.setdefault(group, {})
        known = channels.get(info.channel)
        if known is None:
            log.info("new producer connected, group %s: %s", group, info)
            channels[info.channel] = info
            self._producer_by_client_id[info.client_id] = info.channel
            known = info
        known.last_update_timestamp = self._clock()

    def unregister_producer(self, group: str, channel: ClientChannel, client_id: str) -> None:
        """UNREGISTER_CLIENT with a producer group."""
        channels = self._producers.get(group)
        if not channels:
            return
        if channels.pop(channel, None) is not None:
            log.info("unregister a producer of group %s: %s", group, client_id)
        self._producer_by_client_id.pop(client_id, None)
        if not channels:
            del self._producers[group]

    def producer_table(self) -> dict[str, list[ClientChannelInfo]]:
        """Every producer group with its clients (GET_ALL_PRODUCER_INFO)."""
        return {group: list(channels.values()) for group, channels in self._producers.items()}

    def producer_connection(self, group: str) -> ProducerConnection | None:
        """GET_PRODUCER_CONNECTION_LIST's body; None when the group has no producer here."""
        channels = self._producers.get(group)
        if channels is None:
            return None
        return ProducerConnection(connection_set=[info.connection() for info in channels.values()])

    def find_producer_channel(self, client_id: str) -> ClientChannel | None:
        return self._producer_by_client_id.get(client_id)

    def available_producer_channel(self, group: str) -> ClientChannel | None:
        """An open channel of a producer of ``group``, taken round robin (to ask about a
        transaction's state); None when the group has no open channel."""
        channels = list(self._producers.get(group, ()))
        if not channels:
            return None
        start = next(self._round_robin)
        for index in range(len(channels)):
            channel = channels[(start + index) % len(channels)]
            if not channel.closed:
                return channel
        return None

    # -- consumers -----------------------------------------------------------------------

    def register_consumer(
        self,
        group: str,
        info: ClientChannelInfo,
        consume_type: ConsumeType,
        message_model: MessageModel,
        consume_from_where: ConsumeFromWhere,
        subscriptions: Iterable[SubscriptionData],
        is_notify: bool,
    ) -> ConsumerGroupChange:
        """Record a heartbeat of a consumer of ``group`` with its subscriptions.

        ``is_notify`` is the group's ``notifyConsumerIdsChangedEnable``.
        """
        group_info = self._consumers.get(group)
        if group_info is None:
            group_info = ConsumerGroupInfo(group, consume_type, message_model, consume_from_where)
            self._consumers[group] = group_info
        else:
            group_info.consume_type = consume_type
            group_info.message_model = message_model
            group_info.consume_from_where = consume_from_where
        channel_added = group_info.update_channel(info, self._clock())
        topics_changed = group_info.update_subscriptions(subscriptions)
        changed = channel_added or topics_changed
        notify = self._notify_list(group_info, is_notify) if changed else ()
        return ConsumerGroupChange(group, changed, notify=notify)

    def unregister_consumer(
        self, group: str, channel: ClientChannel, is_notify: bool
    ) -> ConsumerGroupChange | None:
        """UNREGISTER_CLIENT with a consumer group; None when the group is unknown here."""
        group_info = self._consumers.get(group)
        if group_info is None:
            return None
        removed = group_info.channels.pop(channel, None)
        if removed is not None:
            log.log(chatter_level(group), "unregister a consumer of group %s: %s", group, removed)
        group_removed = not group_info.channels
        if group_removed:
            del self._consumers[group]
            log.log(
                chatter_level(group), "consumer group %s has no connection left, removed", group
            )
        return ConsumerGroupChange(
            group, removed is not None, group_removed, self._notify_list(group_info, is_notify)
        )

    def consumer_group_info(self, group: str) -> ConsumerGroupInfo | None:
        return self._consumers.get(group)

    def consumer_ids(self, group: str) -> list[str]:
        """Client ids of the group's consumers (GET_CONSUMER_LIST_BY_GROUP); empty when the
        group has none here."""
        group_info = self._consumers.get(group)
        return [] if group_info is None else group_info.client_ids()

    def find_subscription(self, group: str, topic: str) -> SubscriptionData | None:
        group_info = self._consumers.get(group)
        return None if group_info is None else group_info.subscriptions.get(topic)

    def subscription_count(self, group: str) -> int:
        """How many topics the group subscribes (0 when it is not online)."""
        group_info = self._consumers.get(group)
        return 0 if group_info is None else len(group_info.subscriptions)

    def find_consumer_channel(self, group: str, client_id: str) -> ClientChannelInfo | None:
        group_info = self._consumers.get(group)
        return None if group_info is None else group_info.find_channel(client_id)

    def groups_consuming(self, topic: str) -> set[str]:
        """Online consumer groups subscribed to ``topic``."""
        return {name for name, info in self._consumers.items() if topic in info.subscriptions}

    def consumer_connection(self, group: str) -> ConsumerConnection | None:
        """GET_CONSUMER_CONNECTION_LIST's body; None when the group is not online."""
        group_info = self._consumers.get(group)
        return None if group_info is None else group_info.consumer_connection()

    # -- housekeeping --------------------------------------------------------------------

    def channel_closed(self, channel: ClientChannel) -> list[ConsumerGroupChange]:
        """Forget a closed channel everywhere; the consumer groups it was in, with the
        channels to notify."""
        for group in list(self._producers):
            channels = self._producers[group]
            info = channels.pop(channel, None)
            if info is None:
                continue
            log.info("producer channel %s of group %s closed", info, group)
            self._producer_by_client_id.pop(info.client_id, None)
            if not channels:
                del self._producers[group]
        changes = []
        for group in list(self._consumers):
            group_info = self._consumers[group]
            info = group_info.channels.pop(channel, None)
            if info is None:
                continue
            log.warning("consumer channel %s of group %s closed", info, group)
            group_removed = not group_info.channels
            if group_removed:
                del self._consumers[group]
                log.log(
                    chatter_level(group), "consumer group %s has no connection left, removed", group
                )
            changes.append(
                ConsumerGroupChange(group, True, group_removed, self._notify_list(group_info, True))
            )
        return changes

    def scan_not_active_channels(self) -> list[ClientChannel]:
        """Close and forget every channel not heard from for ``channel_expired_timeout_ms``;
        return the channels closed."""
        deadline = self._clock() - self.channel_expired_timeout_ms
        expired: dict[ClientChannel, None] = {}
        for group in list(self._producers):
            channels = self._producers[group]
            for channel, info in list(channels.items()):
                if info.last_update_timestamp < deadline:
                    log.warning("remove expired producer channel %s of group %s", info, group)
                    del channels[channel]
                    self._producer_by_client_id.pop(info.client_id, None)
                    expired[channel] = None
            if not channels:
                del self._producers[group]
        for group in list(self._consumers):
            group_info = self._consumers[group]
            for channel, info in list(group_info.channels.items()):
                if info.last_update_timestamp < deadline:
                    log.warning("remove expired consumer channel %s of group %s", info, group)
                    del group_info.channels[channel]
                    expired[channel] = None
            if not group_info.channels:
                del self._consumers[group]
                log.warning("consumer group %s has no connection left, removed", group)
        for channel in expired:
            channel.close()
        return list(expired)
