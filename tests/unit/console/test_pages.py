"""The console's HTML and SVG: values from the cluster are escaped, charts draw one line per
series, and a page without data says so."""

from __future__ import annotations

from rmq.console import charts, pages
from rmq.console.reads import GroupRow, TopicRow, topic_kind


def test_names_from_the_cluster_are_escaped() -> None:
    name = '<script>alert("x")</script>'
    html = pages.topics([TopicRow(name, "NORMAL", ["b"], 4, 4, 6)], {"NORMAL"}, "")
    assert "<script>" not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html
    assert 'href="/topic?name=%3Cscript%3Ealert%28%22x%22%29%3C%2Fscript%3E"' in html


def test_kind_and_name_filters() -> None:
    rows = [TopicRow("Orders", "NORMAL"), TopicRow("%RETRY%g", "RETRY"), TopicRow("Pay", "ORDER")]
    html = pages.topics(rows, {"NORMAL", "ORDER"}, "ord")
    assert "1 of 3 topics" in html and ">Orders<" in html and "Pay" not in html.split("<table>")[1]
    groups = [GroupRow("billing", lag=3), GroupRow("TOOLS_CONSUMER", system=True)]
    assert "1 of 2 groups" in pages.groups(groups, "", system=False)
    assert "2 of 2 groups" in pages.groups(groups, "", system=True)


def test_topic_kinds() -> None:
    assert topic_kind("%RETRY%g", False, set()) == "RETRY"
    assert topic_kind("%DLQ%g", False, set()) == "DLQ"
    assert topic_kind("TBW102", False, set()) == "SYSTEM"
    assert topic_kind("rmq_sys_trace", False, set()) == "SYSTEM"
    assert topic_kind("Orders", True, set()) == "ORDER"
    assert topic_kind("Orders", False, set()) == "NORMAL"


def test_charts() -> None:
    assert "No broker TPS collected yet" in charts.line_chart({}, "broker TPS")
    svg = charts.line_chart(
        {"a in": [(1000, 1.0), (2000, 3.0)], "a out": [(1000, 0.0), (2000, 2.0)]}, "TPS"
    )
    assert svg.count("<polyline") == 2 and ">a in</text>" in svg and ">3</text>" in svg
    single = charts.line_chart({"only": [(1000, 5.0)]}, "TPS")
    assert single.count("<circle") == 1 and "<polyline" not in single
