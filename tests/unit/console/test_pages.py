"""The console's HTML and SVG: values from the cluster are escaped, charts draw one line per
series, and a page without data says so."""

from __future__ import annotations

from rmq.client.admin import BrokerStatus, broker_status
from rmq.console import charts, pages
from rmq.console.reads import GroupRow, TopicRow, replication, topic_kind


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


def _status(name: str, broker_id: int, addr: str, **info: str) -> BrokerStatus:
    return broker_status("c", name, broker_id, addr, info)


def test_replication_of_masters_slaves_and_dledger_nodes() -> None:
    master = _status(
        "a",
        0,
        "m:1",
        commitLogMaxOffset="5000",
        haConnectionCount="1",
        haSlaveFallBehindBytes="120",
    )
    slave = _status("a", 1, "s:1", commitLogMaxOffset="4880")
    alone = _status("b", 0, "x:1", commitLogMaxOffset="10")
    apache_master = _status("d", 0, "am:1", commitLogMaxOffset="900")
    apache_slaves = [
        _status("d", 1, "as:1", commitLogMaxOffset="900"),
        _status("d", 2, "as:2", commitLogMaxOffset="700"),
    ]
    leader = _status("g", 0, "l:1", dLegerRole="LEADER", dLegerTerm="3", commitLogMaxOffset="9")
    follower = _status("g", 1, "f:1", dLegerRole="FOLLOWER", dLegerTerm="3")
    said = replication([master, slave, alone, apache_master, *apache_slaves, leader, follower])
    assert said == {
        "m:1": "1 slave, 1 connected, 120 bytes unacknowledged",
        "s:1": "120 bytes behind its master",
        "am:1": "2 slaves",
        "as:1": "0 bytes behind its master",
        "as:2": "200 bytes behind its master",
    }
    down = broker_status("c", "a", 0, "m:1", {}, "the name server no longer lists it")
    assert replication([down, slave]) == {"m:1": "1 slave", "s:1": "its master is down"}
    assert replication([slave]) == {"s:1": "its master is down"}


def test_the_cluster_page_shows_roles_and_only_the_columns_it_has() -> None:
    leader = _status("g", 0, "l:1", dLegerRole="LEADER", dLegerTerm="3", dLegerCommittedIndex="7")
    plain = _status("b", 0, "x:1")
    html = pages.cluster([plain], {})
    assert ">MASTER<" in html and "term" not in html and "replication" not in html
    html = pages.cluster([leader, plain], {"x:1": "2 slaves"})
    assert ">LEADER<" in html and "<th>term</th><th>committed index</th>" in html
    assert "<th>replication</th>" in html and ">2 slaves<" in html
