"""The metric store and text of rmq.console.metrics: expiry after the window, rendering and
parsing back, and the reading of a broker runtime table."""

from __future__ import annotations

import pytest

from rmq.console.metrics import FAMILIES, MetricStore, Round, parse_samples, runtime_values


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _count(group: str, value: float) -> Round:
    collected = Round()
    collected.add("rocketmq_group_count", {"group": group, "caddr": "", "localaddr": ""}, value)
    return collected


def test_a_series_expires_after_the_window_without_a_report() -> None:
    clock = Clock()
    store = MetricStore(expire_after=60, clock=clock)
    first = _count("g", 2)
    first.add("rocketmq_group_count", {"group": "h", "caddr": "", "localaddr": ""}, 1)
    store.commit(first)
    clock.now += 30
    store.commit(_count("g", 3))  # h is no longer reported
    clock.now += 29.5
    assert len(store.snapshot()) == 2
    clock.now += 0.5  # 60 s after h's last report
    assert store.snapshot() == {("rocketmq_group_count", ("", "", "g")): 3.0}
    clock.now += 300  # g stays while the latest round is the one that reported it
    assert store.snapshot() == {("rocketmq_group_count", ("", "", "g")): 3.0}
    store.commit(Round())  # a round that reported nothing (it failed as a whole)
    assert store.snapshot() == {}


def test_render_and_parse_back() -> None:
    store = MetricStore()
    collected = Round()
    labels = {"group": 'a"b\\c', "topic": "t", "countOfOnlineConsumers": 1, "msgModel": 1}
    collected.add("rocketmq_group_diff", labels, 7)
    store.commit(collected)
    text = store.render()
    assert text.count("# TYPE ") == len(FAMILIES)
    assert 'rocketmq_group_diff{group="a\\"b\\\\c",topic="t",countOfOnlineConsumers="1",' in text
    assert parse_samples(text) == [
        (
            "rocketmq_group_diff",
            {"group": 'a"b\\c', "topic": "t", "countOfOnlineConsumers": "1", "msgModel": "1"},
            7.0,
        )
    ]
    with pytest.raises(ValueError, match="takes labels"):
        collected.add("rocketmq_group_diff", {"group": "g"}, 1)


def test_runtime_values_read_the_text_forms() -> None:
    values = runtime_values(
        {
            "msgPutTotalTodayNow": "42",
            "putTps": "1.5 0.5 ",
            "putMessageDistributeTime": "[<=0ms]:3 [0~10ms]:1 [10s~]:0 ",
            "commitLogDirCapacity": "Total : 2.0 GiB, Free : 512.0 MiB.",
            "remainHowManyDataToFlush": "1.5 KiB",
        }
    )
    assert values["rocketmq_brokeruntime_msg_put_total_today_now"] == 42
    assert values["rocketmq_brokeruntime_put_tps10"] == 1.5
    assert values["rocketmq_brokeruntime_put_tps60"] == 0.5
    assert values["rocketmq_brokeruntime_put_tps600"] == 0.0  # an empty window
    assert values["rocketmq_brokeruntime_pmdt_0ms"] == 3
    assert values["rocketmq_brokeruntime_pmdt_0to10ms"] == 1
    assert values["rocketmq_brokeruntime_pmdt_10stomore"] == 0
    assert "rocketmq_brokeruntime_pmdt_1to2s" not in values
    assert values["rocketmq_brokeruntime_commitlogdir_capacity_total"] == 2 * 1024**3
    assert values["rocketmq_brokeruntime_commitlogdir_capacity_free"] == 512 * 1024**2
    assert values["rocketmq_brokeruntime_remain_howmanydata_toflush"] == 1536
    assert values["rocketmq_brokeruntime_put_latency_99"] == -1
    assert "rocketmq_brokeruntime_dispatch_behind_bytes" not in values
