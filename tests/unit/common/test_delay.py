"""Delay level parsing and delivery times."""

from __future__ import annotations

import pytest

from rmq.common.delay import (
    DEFAULT_MESSAGE_DELAY_LEVEL,
    clamp_delay_level,
    deliver_timestamp,
    parse_delay_levels,
    schedule_queue_id,
)


def test_default_levels() -> None:
    levels = parse_delay_levels(DEFAULT_MESSAGE_DELAY_LEVEL)
    assert len(levels) == 18
    assert levels[:5] == (1000, 5000, 10_000, 30_000, 60_000)
    assert levels[-2:] == (3_600_000, 7_200_000)


def test_units_and_spacing() -> None:
    assert parse_delay_levels(" 2d  0s 3m ") == (2 * 86_400_000, 0, 180_000)


@pytest.mark.parametrize("text", ["5x", "s", "1.5s", "-1s", "1s five"])
def test_bad_entries_are_named(text: str) -> None:
    with pytest.raises(ValueError, match="invalid messageDelayLevel entry"):
        parse_delay_levels(text)


def test_empty_setting_is_refused() -> None:
    with pytest.raises(ValueError, match="messageDelayLevel is empty"):
        parse_delay_levels("   ")


def test_levels_above_the_max_are_clamped() -> None:
    levels = parse_delay_levels(DEFAULT_MESSAGE_DELAY_LEVEL)
    assert clamp_delay_level(3, levels) == 3
    assert clamp_delay_level(99, levels) == 18
    assert schedule_queue_id(clamp_delay_level(99, levels)) == 17
    assert deliver_timestamp(3, 1_000_000, levels) == 1_010_000
    assert deliver_timestamp(99, 0, levels) == 7_200_000
    with pytest.raises(ValueError, match="levels start at 1"):
        deliver_timestamp(0, 0, levels)
