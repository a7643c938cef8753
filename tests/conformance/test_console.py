"""`rmq console` against Apache's cluster and against rmq's: after the same topic, sends with
keys and a group that consumed part of them, the console's pages show the same thing from
both clusters: the topic with its queues and their offsets, the group with the same lag, and a
message found by key and by id with its body.  Both brokers count the console's own pulls (as
TOOLS_CONSUMER) in the cluster page's "out today", as the page says.

The pages are read over HTTP and their tables parsed (`_Page`); what each broker assigns
(message ids, hosts, times) is left out of the comparison and checked for presence instead.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from html.parser import HTMLParser
from typing import Any

import pytest

from tests.conformance.clusters import BROKER_NAME, Cluster
from tests.conformance.test_rmq_tools import rmq_cli, rmq_json
from tests.ports import free_port

SECTION = "rmq console against both clusters"
CASE = "topic, queues, group lag, a message by key and by id; out today counts the console's pulls"
TOPIC = "ConfConsole"
GROUP = "ConfConsoleGroup"
SENT = 8
CONSUMED = 5
MESSAGES = [{"body": f"console-body-{i}", "tags": "T", "keys": [f"ck-{i}"]} for i in range(SENT)]


class _Page(HTMLParser):
    """A page's tables (rows of cell texts, each table after the heading before it) and the
    texts of its elements that have an id."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.tables: list[tuple[str, list[list[str]]]] = []
        self.ids: dict[str, str] = {}
        self._heading = ""
        self._text: list[str] | None = None
        self._open_ids: list[tuple[str, str, list[str]]] = []
        self._row: list[str] | None = None
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        ident = dict(attrs).get("id")
        if ident:
            self._open_ids.append((tag, ident, []))
        if tag in ("h1", "h2"):
            self._text = []
        elif tag == "table":
            self.tables.append((self._heading, []))
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._text = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("h1", "h2") and self._text is not None:
            self._heading = "".join(self._text).strip()
            self._text = None
        elif tag in ("td", "th") and self._text is not None and self._row is not None:
            self._row.append("".join(self._text).strip())
            self._text = None
        elif tag == "tr" and self._row is not None:
            self.tables[-1][1].append(self._row)
            self._row = None
        if self._open_ids and self._open_ids[-1][0] == tag:
            _, ident, parts = self._open_ids.pop()
            self.ids[ident] = "".join(parts)

    def handle_data(self, data: str) -> None:
        if self._text is not None:
            self._text.append(data)
        for _, _, parts in self._open_ids:
            parts.append(data)

    def table(self, heading: str, index: int = 0) -> list[dict[str, str]]:
        """The `index`-th table under `heading`, as one dict per row keyed by its headers."""
        found = [rows for title, rows in self.tables if title == heading]
        assert len(found) > index, f"no table {index} under {heading!r}: {self.tables}"
        head, *rows = found[index]
        return [dict(zip(head, row, strict=True)) for row in rows]


def _get(base: str, path: str, **query: str) -> tuple[int, _Page]:
    url = f"{base}{path}?{urllib.parse.urlencode(query)}"
    try:
        with urllib.request.urlopen(url, timeout=60) as answer:
            return answer.status, _Page(answer.read().decode())
    except urllib.error.HTTPError as error:
        return error.code, _Page(error.read().decode())


def _until(read: Any, done: Any, what: str) -> Any:
    """`read()` again until `done(value)`; a minute at most (a broker builds its key index and
    a console starts a little after the command returns)."""
    deadline = time.monotonic() + 60
    while True:
        value = read()
        if done(value):
            return value
        assert time.monotonic() < deadline, f"{what}: {value}"
        time.sleep(0.5)


def _views(cluster: Cluster) -> Any:
    rmq_cli(cluster, "topic", "create", TOPIC, "-r", "2", "-w", "2")
    stdin = "".join(json.dumps(record) + "\n" for record in MESSAGES)
    sent = rmq_json(cluster, "produce", TOPIC, stdin=stdin)
    assert [row["status"] for row in sent] == ["SEND_OK"] * SENT, sent
    rmq_cli(cluster, "consume", TOPIC, "-g", GROUP, "--from", "first", "-c", str(CONSUMED))
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RMQ_")}
    env["XDG_STATE_HOME"] = str(cluster.root / "console-state")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rmq",
            "console",
            "-n",
            cluster.namesrv_addr,
            "--port",
            str(port),
            "--interval",
            "1s",
        ],
        stderr=subprocess.PIPE,
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        assert process.stderr is not None
        line = process.stderr.readline().decode()
        assert line == f"rmq console: serving {base}/\n", line
        return _read_pages(base, sent)
    finally:
        process.terminate()
        process.wait(15)


def _out_today(base: str) -> int:
    status, page = _get(base, "/cluster")
    assert status == 200
    assert "console's own" in page.ids["out-note"], page.ids
    (row,) = [row for row in page.table("Cluster") if row["broker"] == BROKER_NAME]
    return int(row["out today"])


def _read_pages(base: str, sent: list[dict[str, Any]]) -> Any:
    status, topics = _get(base, "/topics")
    assert status == 200
    listed = [
        {k: v for k, v in row.items() if k != "brokers"}
        for row in topics.table("Topics")
        if row["topic"] == TOPIC
    ]
    status, topic = _get(base, "/topic", name=TOPIC)
    assert status == 200
    queues = [
        {k: v for k, v in row.items() if k != "last stored"}
        for row in topic.table("Status per queue")
    ]
    consumers = [
        {k: v for k, v in row.items() if k != "last consumed message stored"}
        for row in topic.table("Consumer groups")
    ]
    status, group = _get(base, "/group", name=GROUP)
    assert status == 200
    # The group's empty retry queue shows once the consumer committed offset 0 for it, which
    # depends on how soon its rebalance met the retry topic's route before it exited.
    rows = [
        row
        for row in group.table("Progress per queue")
        if not (row["topic"].startswith("%RETRY%") and row["broker offset"] == "0")
    ]
    for row in rows:  # which queues the consumer drained first varies from run to run
        assert row["broker"] == BROKER_NAME, rows
        assert int(row["lag"]) == int(row["broker offset"]) - int(row["consumer offset"]), rows
    progress = {
        "queues": sorted((row["topic"], row["queue"], row["broker offset"]) for row in rows),
        "consumed": sum(int(row["consumer offset"]) for row in rows),
        "lag": sum(int(row["lag"]) for row in rows),
    }
    status, groups = _get(base, "/groups")
    assert status == 200
    group_rows = [
        {k: v for k, v in row.items() if k in ("group", "lag", "topics")}
        for row in groups.table("Consumer groups")
        if row["group"] == GROUP
    ]

    # Both brokers count every message pulled in their "out today", the console's own pulls
    # (as TOOLS_CONSUMER, browsing a time range) included: the cluster page says so.
    before = _out_today(base)
    status, browsed = _get(base, "/messages", topic=TOPIC)
    assert status == 200
    assert f"{SENT} messages in the range" in browsed.ids["result"], browsed.ids
    assert _out_today(base) - before >= SENT

    chosen = sent[3]
    key = MESSAGES[3]["keys"][0]

    def by_key() -> list[dict[str, str]]:
        status, page = _get(base, "/messages", topic=TOPIC, key=key)
        assert status == 200
        if "No message" in page.ids.get("result", "No message"):
            return []
        return page.table("By message id")

    found = _until(by_key, bool, f"no message with key {key}")
    assert [row["message id"] for row in found] == [chosen["msgId"]], found
    by_id = {}
    for name in ("msgId", "offsetMsgId"):
        ident = chosen[name]
        status, page = _get(base, "/messages", id=ident)
        assert status == 200
        rows = page.table("By message id")
        assert [row["message id"] for row in rows] == [chosen["msgId"]], rows
        status, detail = _get(base, "/message", id=ident, topic=TOPIC)
        assert status == 200
        facts = {row["field"]: row["value"] for row in detail.table(f"Message {chosen['msgId']}")}
        # the queue a send lands on starts at a random one in both clients
        assert (facts["queue"], facts["queue offset"]) == (
            str(chosen["queueId"]),
            str(chosen["queueOffset"]),
        ), facts
        by_id[name] = {
            "keys": facts["keys"],
            "tags": facts["tags"],
            "topic": facts["topic"],
            "body": detail.ids["body"],
            "groups": detail.table("Consumer groups"),
        }
    return {
        "topics": listed,
        "queues": queues,
        "topic's groups": consumers,
        "groups": group_rows,
        "total lag": group.ids["total-lag"],
        "progress": progress,
        "by key": [{k: v for k, v in r.items() if k in ("tags", "keys")} for r in found],
        "by id": by_id,
    }


@pytest.mark.parametrize(
    "kind",
    [
        pytest.param(kind, marks=pytest.mark.matrix(SECTION, CASE, label), id=f"console-{kind}")
        for kind, label in (("apache", "Apache"), ("rmq", "rmq"))
    ],
)
def test_console_pages(kind: str, request: pytest.FixtureRequest, differential: Any) -> None:
    expected = differential.apache_result("tools:console", _views)
    assert expected["total lag"] == str(SENT - CONSUMED), expected
    assert expected["by id"]["msgId"]["body"] == MESSAGES[3]["body"], expected
    if kind == "apache":
        return
    assert _views(request.getfixturevalue("rmq")) == expected
