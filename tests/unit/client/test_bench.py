"""The benchmark figures: percentiles, interval versus whole-run latencies, the rate schedule,
report lines."""

from __future__ import annotations

import array
import time
from typing import Any

import pytest

from rmq.cli.bench import report_interval
from rmq.client.bench import ConsumerReport, ProducerReport
from rmq.client.benchstats import (
    Latencies,
    LatencySummary,
    RateSchedule,
    percentile,
    summarize,
)


def test_nearest_rank_percentiles() -> None:
    samples = array.array("d", [float(n) for n in range(100, 0, -1)])  # 100 .. 1
    assert summarize(samples) == LatencySummary(100, 50.5, 100.0, 50.0, 99.0, 100.0)
    assert summarize(array.array("d", [7.0])) == LatencySummary(1, 7.0, 7.0, 7.0, 7.0, 7.0)
    assert summarize(array.array("d")) == LatencySummary(0, 0.0, 0.0, 0.0, 0.0, 0.0)


def test_p999_needs_a_thousand_samples_to_drop_the_worst() -> None:
    thousand = [float(n) for n in range(1, 1001)]
    assert percentile(thousand, 0.999) == 999.0
    assert percentile(thousand, 0.99) == 990.0
    assert percentile(thousand, 0.5) == 500.0
    ten_thousand = [float(n) for n in range(1, 10_001)]
    assert percentile(ten_thousand, 0.999) == 9_990.0
    assert percentile([3.0, 5.0], 0.999) == 5.0
    assert percentile([], 0.5) == 0.0


def test_the_rate_schedule_spaces_sends_by_their_cost_and_never_drifts() -> None:
    schedule = RateSchedule(10_000, start=100.0)
    due = [schedule.take() for _ in range(10_001)]
    assert due[0] == 100.0
    assert due[1] == pytest.approx(100.0001)
    assert due[10_000] == pytest.approx(101.0)  # exactly one second later: no accumulated error
    assert schedule.taken == 10_001
    batches = RateSchedule(1_000, start=0.0, cost=32)  # 32 messages a send: 31.25 sends/s
    assert [batches.take() for _ in range(3)] == pytest.approx([0.0, 0.032, 0.064])
    with pytest.raises(ValueError, match="rate must be positive"):
        RateSchedule(0, start=0.0)


def test_the_report_interval_fits_the_run() -> None:
    assert report_interval(None, 10.0) == 1.0
    assert report_interval(None, 3.0) == 1.0
    assert report_interval(None, 60.0) == 6.0
    assert report_interval(None, 600.0) == 10.0
    assert report_interval(None, None) == 10.0
    assert report_interval(2.5, 600.0) == 2.5


def test_intervals_start_afresh_and_the_total_keeps_everything() -> None:
    latencies = Latencies()
    for value in (1.0, 2.0, 3.0):
        latencies.add(value)
    assert latencies.take_window().count == 3
    latencies.add(10.0)
    window = latencies.take_window()
    assert (window.count, window.maximum) == (1, 10.0)
    assert latencies.take_window().count == 0
    latencies.add(4.0)
    total = latencies.total()
    assert (total.count, total.maximum, total.average) == (5, 10.0, 4.0)


def test_producer_lines_follow_the_java_tool() -> None:
    figures: dict[str, Any] = dict(
        seconds=10.0,
        send_total=98_765,
        send_tps=9876.4,
        max_rt_ms=12.4,
        average_rt_ms=1.61149,
        p50_rt_ms=1.5,
        p99_rt_ms=4.25,
        p999_rt_ms=9.125,
        send_failed=1,
        response_failed=2,
    )
    moment = time.mktime((2024, 5, 1, 12, 0, 10, 0, 0, -1)) + 0.001
    line = ProducerReport(moment, **figures, complete=False).line()
    assert line == (
        "Current Time: 2024-05-01 12:00:10,001 Send TPS: 9876 Max RT(ms): 12 "
        "Average RT(ms):   1.611 Send Failed: 1 Response Failed: 2 "
        "p50 RT(ms): 1.500 p99 RT(ms): 4.250 p999 RT(ms): 9.125"
    )
    final = ProducerReport(moment, **figures, complete=True)
    assert final.line().startswith("[Complete] Send Total: 98765 Send TPS: 9876 Max RT(ms): 12")
    assert (final.to_json()["sendTotal"], final.to_json()["p999RtMs"]) == (98_765, 9.125)


def test_consumer_lines_follow_the_java_tool() -> None:
    report = ConsumerReport(
        1_714_557_610_001, 10.0, 500, 50.2, 0, 25.3, 25.1, 80.0, 79.0, 21.0, 75.0, 78.0, False
    )
    assert report.line() == (
        "Current Time: 1714557610001 Consume TPS: 50 FAIL: 0 AVG(B2C) RT(ms):  25.300 "
        "AVG(S2C) RT(ms):  25.100 MAX(B2C) RT(ms): 80 MAX(S2C) RT(ms): 79 "
        "p50(S2C) RT(ms): 21 p99(S2C) RT(ms): 75 p999(S2C) RT(ms): 78"
    )
    assert report.to_json()["consumeTps"] == 50.2
