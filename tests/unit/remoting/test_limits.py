"""The flow limits: what the config keys set, and the partial-frame budget's choice of the
connection to close."""

from __future__ import annotations

import pytest

from rmq.common.configobjects import NettyServerConfig
from rmq.remoting.limits import (
    DEFAULT_LIMITS,
    DEFAULT_WRITE_BUFFER_HIGH,
    DEFAULT_WRITE_BUFFER_LOW,
    FlowLimits,
    PartialFrameBudget,
    flow_limits,
)


class Holder:
    def __init__(self, name: str) -> None:
        self.name = name
        self.reasons: list[str] = []

    def abort_for(self, reason: str) -> None:
        self.reasons.append(reason)


def test_the_default_limits_are_those_of_a_default_server_config() -> None:
    assert flow_limits(NettyServerConfig()) == DEFAULT_LIMITS


def test_the_water_marks_apply_only_when_both_are_set() -> None:
    only_high = flow_limits(NettyServerConfig(write_buffer_high_water_mark=1 << 20))
    both = flow_limits(
        NettyServerConfig(write_buffer_high_water_mark=1 << 20, write_buffer_low_water_mark=1024)
    )

    assert (only_high.write_buffer_high, only_high.write_buffer_low) == (
        DEFAULT_WRITE_BUFFER_HIGH,
        DEFAULT_WRITE_BUFFER_LOW,
    )
    assert (both.write_buffer_high, both.write_buffer_low) == (1 << 20, 1024)


def test_the_rmq_only_keys_set_the_limits() -> None:
    limits = flow_limits(
        NettyServerConfig(
            server_max_requests_per_connection=5,
            server_max_requests_in_progress=6,
            server_partial_frame_memory_limit=7,
        )
    )

    assert limits.max_requests_per_connection == 5
    assert limits.max_requests_in_progress == 6
    assert limits.partial_frame_memory == 7


def test_a_low_mark_above_the_high_mark_is_refused() -> None:
    with pytest.raises(ValueError, match="expected 0 <= low <= high"):
        FlowLimits(
            write_buffer_high=10,
            write_buffer_low=20,
            max_requests_per_connection=None,
            max_requests_in_progress=None,
            partial_frame_memory=None,
        )


def test_past_the_budget_the_oldest_partial_frame_is_closed() -> None:
    budget = PartialFrameBudget(100)
    first, second, third = Holder("first"), Holder("second"), Holder("third")
    budget.update(first, 40)
    budget.update(second, 40)
    budget.update(first, 50)  # growing keeps its place as the oldest
    assert budget.total == 90
    assert not first.reasons

    budget.update(third, 30)

    assert len(first.reasons) == 1
    assert "120 bytes, over the limit of 100" in first.reasons[0]
    assert not second.reasons and not third.reasons
    assert budget.total == 70


def test_a_completed_frame_leaves_the_budget() -> None:
    budget = PartialFrameBudget(100)
    holder = Holder("done")
    budget.update(holder, 90)
    budget.update(holder, 0)
    budget.update(Holder("next"), 90)

    assert budget.total == 90
    assert not holder.reasons


def test_without_a_limit_nothing_is_closed() -> None:
    budget = PartialFrameBudget(None)
    holder = Holder("big")
    budget.update(holder, 10**9)

    assert budget.total == 10**9
    assert not holder.reasons
