"""The offset arithmetic of the ``rocketmq`` stream (rmq.spark.streamoffsets): the checkpoint's
JSON both ways, admission control (``maxOffsetsPerTrigger`` shared over the queues), new and
vanished queues, data loss, and ``minPartitions`` splits.  Plain Python: no Spark, no broker.
"""

from __future__ import annotations

import itertools
import json
import random

import pytest

from rmq.spark.options import parse_offsets
from rmq.spark.streamoffsets import (
    advance,
    allot,
    from_json,
    lost_queues,
    ranges,
    split,
    to_json,
    waiting_rows,
)

A0 = ("T", "broker-a", 0)
A1 = ("T", "broker-a", 1)
A10 = ("T", "broker-a", 10)
B0 = ("T", "broker-b", 0)
U0 = ("U", "broker-a", 0)


def test_json_is_sorted_and_round_trips_through_text() -> None:
    positions = {A10: 7, B0: 3, A1: 5, U0: 0, A0: 2}
    document = to_json(positions)
    assert json.dumps(document) == (
        '{"T": {"broker-a": {"0": 2, "1": 5, "10": 7}, "broker-b": {"0": 3}}, '
        '"U": {"broker-a": {"0": 0}}}'
    )
    assert from_json(json.loads(json.dumps(document))) == positions
    # the same JSON as the reader's startingOffsets
    assert parse_offsets(json.dumps(document), "startingOffsets", -1).by_queue == positions


@pytest.mark.parametrize(
    "document",
    [{"T": 1}, {"T": {"b": 2}}, {"T": {"b": {"0": -1}}}, {"T": {"b": {"0": "3"}}}],
)
def test_from_json_refuses_what_is_not_an_offset(document: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        from_json(document)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([1], "the JSON must be an object keyed by topic"),
        ({"T": 1}, "'T' must map broker names to queues"),
        ({"T": {"b": 2}}, "'T' / 'b' must map queue ids to offsets"),
        ({"T": {"b": {"0": True}}}, "offset True of T / b / 0 must be"),
        ({"T": {"b": {"x": 3}}}, "queue id 'x' of T / b is not an integer"),
    ],
)
def test_the_checkpoint_and_the_reader_options_refuse_the_same_json(
    document: object, message: str
) -> None:
    """One walk of the nested JSON serves both; only the lowest offset allowed differs."""
    with pytest.raises(ValueError, match=f"^stream offset: {message}"):
        from_json(document)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=f"^option startingOffsets: {message}"):
        parse_offsets(json.dumps(document), "startingOffsets", -1)
    assert parse_offsets('{"T": {"b": {"0": -2}}}', "startingOffsets", -1).by_queue == {
        ("T", "b", 0): -2
    }


def test_allot_admits_everything_that_fits() -> None:
    assert allot({A0: 3, A1: 0, B0: 4}, 10) == {A0: 3, A1: 0, B0: 4}
    assert allot({A0: 3, B0: 4}, 7) == {A0: 3, B0: 4}


def test_allot_shares_in_proportion_and_exactly_the_budget() -> None:
    assert allot({A0: 100, B0: 300}, 40) == {A0: 10, B0: 30}
    # remainders: 1 each of 3 queues with 10 waiting and a budget of 10 -> 3,3,3 + 1 more
    shares = allot({A0: 10, A1: 10, B0: 10}, 10)
    assert sum(shares.values()) == 10 and sorted(shares.values()) == [3, 3, 4]
    assert shares == allot({A0: 10, A1: 10, B0: 10}, 10)  # deterministic
    # many queues, a tiny budget: still exactly the budget, one each
    assert sum(allot({("T", "b", n): 5 for n in range(8)}, 3).values()) == 3


def test_allot_never_exceeds_a_queue_nor_the_budget_random() -> None:
    rng = random.Random(27)
    for _ in range(2000):
        waiting = {("T", "b", n): rng.choice([0, 1, 2, 5, 100, 10_000]) for n in range(6)}
        budget = rng.randint(1, 500)
        shares = allot(waiting, budget)
        assert sum(shares.values()) == min(budget, sum(waiting.values()))
        assert all(0 <= shares[key] <= waiting[key] for key in waiting)


def test_advance_moves_each_queue_to_its_max_without_a_limit() -> None:
    start = {A0: 5, A1: 0}
    spans = {A0: (0, 12), A1: (0, 3)}
    assert advance(start, spans) == {A0: 12, A1: 3}
    assert waiting_rows(start, spans) == 10


def test_advance_caps_the_batch_and_later_batches_continue() -> None:
    start = {A0: 0, A1: 0, B0: 0}
    spans = {A0: (0, 100), A1: (0, 100), B0: (0, 200)}
    seen = 0
    batches = 0
    while start != advance(start, spans, 30):
        end = advance(start, spans, 30)
        rows = sum(end[key] - start[key] for key in end)
        assert rows == min(30, waiting_rows(start, spans))
        seen += rows
        batches += 1
        start = end
    assert seen == 400 and batches == 14
    assert start == {A0: 100, A1: 100, B0: 200}


def test_new_queues_enter_at_their_min_and_are_read_from_the_next_batch() -> None:
    start = {A0: 4}
    spans = {A0: (0, 4), B0: (7, 9)}
    end = advance(start, spans, 100)
    assert end == {A0: 4, B0: 7}
    assert ranges(start, end) == []
    assert ranges(end, advance(end, spans, 100)) == [(B0, 7, 9)]


def test_a_queue_that_left_the_route_keeps_its_offset() -> None:
    assert advance({A0: 4, B0: 9}, {A0: (0, 6)}) == {A0: 6, B0: 9}


def test_lost_messages_are_found_and_skipped_when_allowed() -> None:
    start = {A0: 3, A1: 10}
    spans = {A0: (8, 20), A1: (0, 12)}
    assert lost_queues(start, spans) == [A0]
    # 12 and 2 waiting, 6 admitted: 5 (the min offset on) and 1
    assert advance(start, spans, 6) == {A0: 8 + 5, A1: 11}
    assert waiting_rows(start, spans) == 14


def test_ranges_are_the_non_empty_queues_in_order() -> None:
    assert ranges({A1: 2, A0: 0, B0: 5}, {A1: 4, A0: 0, B0: 9, U0: 3}) == [
        (A1, 2, 4),
        (B0, 5, 9),
    ]


def test_split_cuts_ranges_in_proportion_until_there_are_enough() -> None:
    parts = [(A0, 0, 90), (B0, 10, 40)]
    assert split(parts, None) == parts
    assert split(parts, 2) == parts
    pieces = split(parts, 4)
    assert pieces == [(A0, 0, 30), (A0, 30, 60), (A0, 60, 90), (B0, 10, 40)]
    tiny = split([(A0, 0, 2)], 8)
    assert tiny == [(A0, 0, 1), (A0, 1, 2)]  # never a piece without messages
    for pieces in (split(parts, n) for n in range(1, 40)):
        for key, low, high in parts:  # the pieces tile each range
            mine = sorted((lo, hi) for k, lo, hi in pieces if k == key)
            assert mine[0][0] == low and mine[-1][1] == high
            assert all(a[1] == b[0] for a, b in itertools.pairwise(mine))
