"""Queue locks of orderly consumers: who gets a queue, renewal, 60 s expiry and unlocking."""

from __future__ import annotations

import pytest

from rmq.remoting.bodies import MessageQueue
from rmq.server.broker.client.rebalancelock import RebalanceLockManager
from tests.unit.broker.helpers import Clock

GROUP = "CID_orderly"
Q0, Q1, Q2 = (MessageQueue("TopicTest", "broker-a", n) for n in range(3))


@pytest.fixture
def locks(clock: Clock) -> RebalanceLockManager:
    return RebalanceLockManager(clock=clock)


def test_free_queues_are_locked_and_a_holder_may_lock_again(locks: RebalanceLockManager) -> None:
    assert locks.try_lock_batch(GROUP, [Q2, Q0], "client-a") == [Q2, Q0]
    assert locks.try_lock_batch(GROUP, [Q0, Q1, Q2, Q0], "client-a") == [Q0, Q1, Q2]


def test_another_client_gets_only_the_queues_nobody_holds(locks: RebalanceLockManager) -> None:
    locks.try_lock_batch(GROUP, [Q0, Q1], "client-a")
    assert locks.try_lock_batch(GROUP, [Q0, Q1, Q2], "client-b") == [Q2]
    assert locks.try_lock_batch(GROUP, [Q2], "client-a") == []


def test_a_lock_expires_sixty_seconds_after_its_last_renewal(
    locks: RebalanceLockManager, clock: Clock
) -> None:
    locks.try_lock_batch(GROUP, [Q0, Q1], "client-a")
    clock.now += 50_000
    locks.try_lock_batch(GROUP, [Q0], "client-a")  # renews Q0 only
    clock.now += 10_001
    assert locks.try_lock_batch(GROUP, [Q0, Q1], "client-b") == [Q1]
    clock.now += 49_999  # Q0 was renewed exactly 60 s ago: still held
    assert locks.try_lock_batch(GROUP, [Q0], "client-b") == []
    clock.now += 1
    assert locks.try_lock_batch(GROUP, [Q0], "client-b") == [Q0]
    assert locks.try_lock_batch(GROUP, [Q0, Q1], "client-a") == []


def test_the_expiry_is_configurable(clock: Clock) -> None:
    locks = RebalanceLockManager(lock_max_live_ms=1000, clock=clock)
    locks.try_lock_batch(GROUP, [Q0], "client-a")
    clock.now += 1001
    assert locks.try_lock_batch(GROUP, [Q0], "client-b") == [Q0]


def test_unlock_releases_only_the_callers_own_locks(locks: RebalanceLockManager) -> None:
    locks.try_lock_batch(GROUP, [Q0], "client-a")
    locks.try_lock_batch(GROUP, [Q1], "client-b")
    locks.unlock_batch(GROUP, [Q0, Q1, Q2], "client-b")
    assert locks.try_lock_batch(GROUP, [Q0, Q1], "client-c") == [Q1]
    locks.unlock_batch(GROUP, [Q0], "client-a")
    assert locks.try_lock_batch(GROUP, [Q0], "client-c") == [Q0]


def test_groups_lock_independently_and_unknown_unlocks_are_harmless(
    locks: RebalanceLockManager,
) -> None:
    locks.unlock_batch("CID_nobody", [Q0], "client-a")
    assert locks.try_lock_batch(GROUP, [Q0], "client-a") == [Q0]
    assert locks.try_lock_batch("CID_other", [Q0], "client-b") == [Q0]
    locks.unlock_batch(GROUP, [Q0], "client-a")
    locks.unlock_batch(GROUP, [Q0], "client-a")
    assert locks.try_lock_batch(GROUP, [Q0], "client-b") == [Q0]


def test_a_new_lock_is_logged_for_operators(
    locks: RebalanceLockManager, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level("INFO", logger="rmq.broker"):
        locks.try_lock_batch(GROUP, [Q0], "client-a")
        locks.try_lock_batch(GROUP, [Q0], "client-b")
    messages = [record.getMessage() for record in caplog.records]
    assert any("client-a" in text and "TopicTest" in text for text in messages)
    assert any("refused" in text and "client-b" in text for text in messages)
