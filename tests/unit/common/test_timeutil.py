"""The one reader of typed times (rmq.common.timeutil.parse_time) and of durations, and the
one writer of timeouts (format_seconds)."""

from __future__ import annotations

import datetime

import pytest

from rmq.common.timeutil import format_seconds, parse_duration, parse_time

NOW = 1_800_000_000_000


@pytest.mark.parametrize(
    ("text", "ago"),
    [
        ("@-1h", 3_600_000),
        ("-30m", 1_800_000),
        ("@-10s", 10_000),
        ("@-2d", 172_800_000),
        ("-1w", 604_800_000),
        ("@-1h30m", 5_400_000),
        ("-1.5h", 5_400_000),
        ("-250ms", 250),
        ("  @-1m1s ", 61_000),
    ],
)
def test_relative_times_are_that_long_before_now(text: str, ago: int) -> None:
    assert parse_time(text, now=NOW) == NOW - ago


@pytest.mark.parametrize(
    ("text", "millis"),
    [
        ("1700000000000", 1_700_000_000_000),
        ("@1700000000000", 1_700_000_000_000),
        ("2023-11-14T22:13:20Z", 1_700_000_000_000),
        ("@2023-11-14T22:13:20.5+00:00", 1_700_000_000_500),
    ],
)
def test_absolute_times(text: str, millis: int) -> None:
    assert parse_time(text, now=NOW) == millis


def test_a_date_without_a_zone_is_local() -> None:
    assert parse_time("2024-05-01") == int(datetime.datetime(2024, 5, 1).timestamp() * 1000)


@pytest.mark.parametrize("text", ["", "@", "-", "@-", "-1", "@-1y", "-1h-2m", "1h", "@-h", "soon"])
def test_what_is_not_a_time_says_what_is(text: str) -> None:
    with pytest.raises(ValueError, match=r"is not a time: use epoch milliseconds.*-DURATION"):
        parse_time(text, now=NOW)


@pytest.mark.parametrize("text", ["", "1", "h", "1h 2m", "1H", "-1h"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ValueError, match="is not a duration"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (4.999519347999978, "5.0s"),
        (5, "5.0s"),
        (3.0, "3.0s"),
        (12.34, "12.3s"),
        (0.25, "250ms"),
        (0.9996, "1.0s"),
        (0.0004, "0ms"),
        (-0.1, "0ms"),
    ],
)
def test_format_seconds_rounds_for_people(seconds: float, text: str) -> None:
    assert format_seconds(seconds) == text
