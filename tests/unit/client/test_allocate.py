"""Queue allocation strategies: what share of a topic each consumer of a group computes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rmq.client.consumer.allocate import (
    AllocateMessageQueueAveragely,
    AllocateMessageQueueAveragelyByCircle,
    AllocateMessageQueueConsistentHash,
    AllocateStrategy,
    strategy_by_name,
)
from rmq.remoting.bodies import MessageQueue

STRATEGIES: list[AllocateStrategy] = [
    AllocateMessageQueueAveragely(),
    AllocateMessageQueueAveragelyByCircle(),
    AllocateMessageQueueConsistentHash(),
]


def queues(count: int, brokers: tuple[str, ...] = ("broker-a",)) -> list[MessageQueue]:
    return sorted(
        MessageQueue("T", broker, queue_id) for broker in brokers for queue_id in range(count)
    )


def clients(count: int) -> list[str]:
    return sorted(f"10.0.0.{n}@{1000 + n}" for n in range(count))


def shares(strategy: AllocateStrategy, mqs: list[MessageQueue], cids: list[str]) -> list[list[int]]:
    return [[mqs.index(mq) for mq in strategy.allocate("G", cid, mqs, cids)] for cid in cids]


def test_averagely_gives_consecutive_blocks_the_first_clients_one_more() -> None:
    assert shares(AllocateMessageQueueAveragely(), queues(8), clients(3)) == [
        [0, 1, 2],
        [3, 4, 5],
        [6, 7],
    ]
    assert shares(AllocateMessageQueueAveragely(), queues(8), clients(4)) == [
        [0, 1],
        [2, 3],
        [4, 5],
        [6, 7],
    ]


def test_by_circle_deals_queues_round_robin() -> None:
    assert shares(AllocateMessageQueueAveragelyByCircle(), queues(8), clients(3)) == [
        [0, 3, 6],
        [1, 4, 7],
        [2, 5],
    ]


@pytest.mark.parametrize("strategy", STRATEGIES[:2], ids=lambda s: s.name)
def test_clients_beyond_the_queue_count_get_nothing(strategy: AllocateStrategy) -> None:
    assert shares(strategy, queues(2), clients(4)) == [[0], [1], [], []]


@pytest.mark.parametrize("strategy", STRATEGIES, ids=lambda s: s.name)
@given(
    queue_count=st.integers(1, 40),
    broker_count=st.integers(1, 3),
    client_count=st.integers(1, 12),
)
def test_every_queue_goes_to_exactly_one_client(
    strategy: AllocateStrategy, queue_count: int, broker_count: int, client_count: int
) -> None:
    mqs = queues(queue_count, tuple(f"broker-{b}" for b in range(broker_count)))
    assigned = [index for share in shares(strategy, mqs, clients(client_count)) for index in share]
    assert sorted(assigned) == list(range(len(mqs)))


@pytest.mark.parametrize("strategy", STRATEGIES[:2], ids=lambda s: s.name)
@given(queue_count=st.integers(1, 40), client_count=st.integers(1, 12))
def test_even_strategies_differ_by_at_most_one_queue(
    strategy: AllocateStrategy, queue_count: int, client_count: int
) -> None:
    sizes = [len(share) for share in shares(strategy, queues(queue_count), clients(client_count))]
    assert max(sizes) - min(sizes) <= 1


def test_consistent_hash_moves_queues_only_to_a_joining_client() -> None:
    strategy = AllocateMessageQueueConsistentHash()
    mqs = queues(32, ("broker-a", "broker-b"))
    before_cids = clients(3)
    after_cids = clients(4)
    newcomer = (set(after_cids) - set(before_cids)).pop()
    before = {cid: set(strategy.allocate("G", cid, mqs, before_cids)) for cid in before_cids}
    after = {cid: set(strategy.allocate("G", cid, mqs, after_cids)) for cid in after_cids}
    for cid in before_cids:
        assert after[cid] <= before[cid], "a staying client may only lose queues"
    moved = set().union(*(before[cid] - after[cid] for cid in before_cids))
    assert moved == after[newcomer]


def test_consistent_hash_without_virtual_nodes_assigns_nothing() -> None:
    assert AllocateMessageQueueConsistentHash(0).allocate("G", "c1", queues(4), ["c1"]) == []
    with pytest.raises(ValueError, match="illegal virtualNodeCnt"):
        AllocateMessageQueueConsistentHash(-1)


@pytest.mark.parametrize("strategy", STRATEGIES, ids=lambda s: s.name)
def test_a_client_missing_from_the_list_gets_nothing(strategy: AllocateStrategy) -> None:
    assert strategy.allocate("G", "10.9.9.9@1", queues(4), clients(2)) == []


@pytest.mark.parametrize("strategy", STRATEGIES, ids=lambda s: s.name)
def test_empty_inputs_are_refused_as_java_refuses_them(strategy: AllocateStrategy) -> None:
    with pytest.raises(ValueError, match="currentCID is empty"):
        strategy.allocate("G", "", queues(4), clients(1))
    with pytest.raises(ValueError, match="mqAll is null or mqAll empty"):
        strategy.allocate("G", clients(1)[0], [], clients(1))
    with pytest.raises(ValueError, match="cidAll is null or cidAll empty"):
        strategy.allocate("G", "c1", queues(4), [])


def test_strategies_are_found_by_their_rocketmq_names() -> None:
    assert isinstance(strategy_by_name("AVG"), AllocateMessageQueueAveragely)
    assert isinstance(strategy_by_name("avg_by_circle"), AllocateMessageQueueAveragelyByCircle)
    assert isinstance(strategy_by_name("CONSISTENT_HASH"), AllocateMessageQueueConsistentHash)
    with pytest.raises(ValueError, match="unknown allocation strategy 'NEARBY'"):
        strategy_by_name("NEARBY")
