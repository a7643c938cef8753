"""ClientManager: producer and consumer groups, membership changes and channel expiry."""

from __future__ import annotations

import pytest

from rmq.common.config import BrokerConfig
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
from rmq.server.broker.client.clientmanager import (
    ClientChannelInfo,
    ClientManager,
    ConsumerGroupChange,
)
from tests.unit.broker.helpers import Clock, FakeChannel


@pytest.fixture
def manager(clock: Clock) -> ClientManager:
    return ClientManager(BrokerConfig(broker_name="broker-a"), clock=clock)


def client(channel: FakeChannel, client_id: str) -> ClientChannelInfo:
    return ClientChannelInfo(channel, client_id, LanguageCode.CPP, 63)


def sub(topic: str, version: int, expression: str = "*") -> SubscriptionData:
    subscription = SubscriptionData.from_expression(topic, expression)
    subscription.sub_version = version
    return subscription


def heartbeat(
    manager: ClientManager,
    channel: FakeChannel,
    client_id: str,
    subscriptions: list[SubscriptionData],
    *,
    group: str = "g1",
    is_notify: bool = True,
) -> ConsumerGroupChange:
    return manager.register_consumer(
        group,
        client(channel, client_id),
        ConsumeType.CONSUME_PASSIVELY,
        MessageModel.CLUSTERING,
        ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
        subscriptions,
        is_notify,
    )


def test_new_consumers_change_the_group_and_everyone_is_notified(manager: ClientManager) -> None:
    a, b = FakeChannel("10.0.0.1:1"), FakeChannel("10.0.0.2:2")
    subs = [sub("T", 1), sub("%RETRY%g1", 1)]

    first = heartbeat(manager, a, "ip1@a", subs)
    assert first == ConsumerGroupChange("g1", changed=True, notify=(a,))
    second = heartbeat(manager, b, "ip2@b", subs)
    assert second == ConsumerGroupChange("g1", changed=True, notify=(a, b))
    again = heartbeat(manager, a, "ip1@a", subs)
    assert again == ConsumerGroupChange("g1", changed=False)

    assert manager.consumer_ids("g1") == ["ip1@a", "ip2@b"]
    assert manager.consumer_ids("other") == []
    assert manager.groups_consuming("T") == {"g1"}
    assert manager.subscription_count("g1") == 2


def test_notify_is_off_per_group_or_per_broker(clock: Clock) -> None:
    a = FakeChannel("a:1")
    manager = ClientManager(BrokerConfig(broker_name="b"), clock=clock)
    change = heartbeat(manager, a, "a", [sub("T", 1)], is_notify=False)
    assert change.changed and change.notify == ()

    quiet = ClientManager(
        BrokerConfig(broker_name="b", notify_consumer_ids_changed_enable=False), clock=clock
    )
    change = heartbeat(quiet, a, "a", [sub("T", 1)])
    assert change.changed and change.notify == ()


def test_subscription_versions(manager: ClientManager) -> None:
    a = FakeChannel("a:1")
    heartbeat(manager, a, "a", [sub("T", 100, "TagA"), sub("U", 100)])

    newer = sub("T", 200, "TagB")
    assert not heartbeat(manager, a, "a", [newer, sub("U", 100)]).changed
    assert manager.find_subscription("g1", "T") is newer

    older = sub("T", 150, "TagC")
    assert not heartbeat(manager, a, "a", [older, sub("U", 100)]).changed
    assert manager.find_subscription("g1", "T") is newer, "an older version is ignored"

    dropped = heartbeat(manager, a, "a", [newer])
    assert dropped.changed and dropped.notify == (a,)
    assert manager.find_subscription("g1", "U") is None
    assert manager.groups_consuming("U") == set()

    assert heartbeat(manager, a, "a", [newer, sub("V", 1)]).changed
    assert manager.find_subscription("nobody", "T") is None


def test_group_settings_follow_the_last_heartbeat(manager: ClientManager) -> None:
    a = FakeChannel("10.0.0.1:4000")
    heartbeat(manager, a, "ip@a", [sub("T", 1)])
    manager.register_consumer(
        "g1",
        client(a, "ip@a"),
        ConsumeType.CONSUME_ACTIVELY,
        MessageModel.BROADCASTING,
        ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        [sub("T", 1)],
        True,
    )
    assert manager.consumer_connection("g1") == ConsumerConnection(
        connection_set=[
            Connection(
                client_id="ip@a", client_addr="10.0.0.1:4000", language=LanguageCode.CPP, version=63
            )
        ],
        subscription_table={"T": sub("T", 1)},
        consume_type=ConsumeType.CONSUME_ACTIVELY,
        message_model=MessageModel.BROADCASTING,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    )
    assert manager.consumer_connection("nobody") is None


def test_a_channel_taken_over_by_another_client_id(manager: ClientManager) -> None:
    a = FakeChannel("a:1")
    heartbeat(manager, a, "old", [sub("T", 1)])
    assert not heartbeat(manager, a, "new", [sub("T", 1)]).changed
    assert manager.consumer_ids("g1") == ["new"]
    found = manager.find_consumer_channel("g1", "new")
    assert found is not None and found.channel is a
    assert manager.find_consumer_channel("g1", "old") is None


def test_unregister_consumer(manager: ClientManager) -> None:
    a, b = FakeChannel("a:1"), FakeChannel("b:2")
    heartbeat(manager, a, "a", [sub("T", 1)])
    heartbeat(manager, b, "b", [sub("T", 1)])

    assert manager.unregister_consumer("g1", a, True) == ConsumerGroupChange(
        "g1", changed=True, notify=(b,)
    )
    stranger = FakeChannel("c:3")
    assert manager.unregister_consumer("g1", stranger, True) == ConsumerGroupChange(
        "g1", changed=False, notify=(b,)
    )
    assert manager.unregister_consumer("g1", b, False) == ConsumerGroupChange(
        "g1", changed=True, group_removed=True
    )
    assert manager.consumer_group_info("g1") is None
    assert manager.unregister_consumer("g1", b, True) is None


def test_closed_channel_leaves_every_group(manager: ClientManager) -> None:
    a, b = FakeChannel("a:1"), FakeChannel("b:2")
    heartbeat(manager, a, "a", [sub("T", 1)], group="g1")
    heartbeat(manager, b, "b", [sub("T", 1)], group="g1")
    heartbeat(manager, a, "a", [sub("U", 1)], group="g2", is_notify=False)
    manager.register_producer("p1", client(a, "a"))

    changes = manager.channel_closed(a)
    assert changes == [
        ConsumerGroupChange("g1", changed=True, notify=(b,)),
        ConsumerGroupChange("g2", changed=True, group_removed=True),
    ]
    assert manager.consumer_ids("g1") == ["b"]
    assert manager.consumer_group_info("g2") is None
    assert manager.producer_connection("p1") is None
    assert manager.find_producer_channel("a") is None
    assert manager.channel_closed(a) == []
    assert not a.closed, "the transport closed it; the manager only forgets it"


def test_producers(manager: ClientManager) -> None:
    a, b = FakeChannel("10.0.0.1:1"), FakeChannel("10.0.0.2:2")
    manager.register_producer("p1", client(a, "ip1@a"))
    manager.register_producer("p1", client(b, "ip2@b"))
    manager.register_producer("p1", client(a, "ip1@a"))
    manager.register_producer("CLIENT_INNER_PRODUCER", client(a, "ip1@a"))

    connection = manager.producer_connection("p1")
    assert connection == ProducerConnection(
        connection_set=[
            Connection(
                client_id="ip1@a", client_addr="10.0.0.1:1", language=LanguageCode.CPP, version=63
            ),
            Connection(
                client_id="ip2@b", client_addr="10.0.0.2:2", language=LanguageCode.CPP, version=63
            ),
        ]
    )
    assert [info.client_id for info in manager.producer_table()["p1"]] == ["ip1@a", "ip2@b"]
    assert manager.find_producer_channel("ip2@b") is b

    picks = {manager.available_producer_channel("p1") for _ in range(4)}
    assert picks == {a, b}, "round robin"
    a.closed = True
    assert {manager.available_producer_channel("p1") for _ in range(4)} == {b}
    b.closed = True
    assert manager.available_producer_channel("p1") is None
    assert manager.available_producer_channel("nobody") is None

    manager.unregister_producer("p1", a, "ip1@a")
    manager.unregister_producer("p1", b, "ip2@b")
    assert manager.producer_connection("p1") is None
    assert manager.find_producer_channel("ip2@b") is None
    assert manager.producer_connection("CLIENT_INNER_PRODUCER") is not None


def test_silent_channels_expire(clock: Clock, manager: ClientManager) -> None:
    quiet, chatty = FakeChannel("q:1"), FakeChannel("c:2")
    heartbeat(manager, quiet, "quiet", [sub("T", 1)])
    heartbeat(manager, chatty, "chatty", [sub("T", 1)])
    manager.register_producer("p1", client(quiet, "quiet"))
    manager.register_producer("p2", client(chatty, "chatty"))

    clock.now += 60_000
    heartbeat(manager, chatty, "chatty", [sub("T", 1)])
    manager.register_producer("p2", client(chatty, "chatty"))

    clock.now += 60_000
    assert manager.scan_not_active_channels() == [], "exactly 120 s is not yet expired"

    clock.now += 1
    assert manager.scan_not_active_channels() == [quiet]
    assert quiet.closed and not chatty.closed
    assert manager.consumer_ids("g1") == ["chatty"]
    assert manager.producer_connection("p1") is None
    assert manager.find_producer_channel("quiet") is None
    assert manager.channel_closed(quiet) == [], "the close event that follows finds nothing"

    clock.now += 60_000
    assert manager.scan_not_active_channels() == [chatty]
    assert manager.consumer_group_info("g1") is None
    assert manager.producer_table() == {}


def test_expiry_timeout_is_configurable(clock: Clock) -> None:
    manager = ClientManager(
        BrokerConfig(broker_name="b"), channel_expired_timeout_ms=1_000, clock=clock
    )
    a = FakeChannel("a:1")
    heartbeat(manager, a, "a", [])
    clock.now += 1_001
    assert manager.scan_not_active_channels() == [a]
