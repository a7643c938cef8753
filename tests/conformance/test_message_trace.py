"""Message trace across implementations, on Apache's cluster and on rmq's.

* Traces written by Apache's Java client (TraceScenarios.pubSub: a traced producer and a
  traced push consumer) are read by `rmq mqadmin queryMsgTraceById`, whose output must be
  Apache's mqadmin's byte for byte, and by `rmq message trace -o json`, whose Pub and SubAfter
  rows must be the rows mqadmin prints.
* Traces written by rmq's client (`rmq produce --trace`, `rmq consume --trace -g`) are read
  by Apache's mqadmin, which must decode them into a Pub row and a Sub row (so rmq's records
  are byte-compatible with what Apache's TraceDataEncoder reads) and print exactly what
  `rmq mqadmin queryMsgTraceById` prints.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conformance.clusters import Cluster
from tests.conformance.java import run_driver
from tests.conformance.mqadmin_run import mqadmin, rmq_mqadmin
from tests.conformance.test_rmq_tools import _until, rmq_cli

SECTION = "message trace"
DEADLINE = 60.0


def _matrix(row: str) -> list[Any]:
    return [
        pytest.param(kind, marks=pytest.mark.matrix(SECTION, row, kind.capitalize()), id=kind)
        for kind in ("apache", "rmq")
    ]


def _msg_ids(cluster: Cluster, topic: str) -> list[str]:
    out = rmq_cli(cluster, "consume", topic, "--from", "first", "-e")
    return sorted(json.loads(line)["msgId"] for line in out.splitlines())


def _complete(out: str) -> bool:
    """mqadmin's trace output shows a Pub row and a Sub row."""
    rows = [line.split()[0] for line in out.splitlines() if line.strip()]
    return "Pub" in rows and "Sub" in rows


def _compare(cluster: Cluster, msg_id: str, home: Path) -> str:
    args = ["queryMsgTraceById", "-i", msg_id, "-n", cluster.namesrv_addr]
    theirs: str = _until(lambda: mqadmin(args, home=home / "apache"), _complete, DEADLINE)
    assert _complete(theirs), f"Apache's mqadmin shows no complete trace of {msg_id}:\n{theirs}"
    mine = rmq_mqadmin(args, home=home / "rmq")
    assert mine == theirs
    return theirs


def _rows_of_mqadmin(text: str) -> list[list[str]]:
    """The data rows mqadmin printed, Pub and Sub, split into their six columns (the time is
    two words)."""
    rows = []
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] in ("Pub", "Sub"):
            rows.append([parts[0], parts[1], parts[2], f"{parts[3]} {parts[4]}", *parts[5:]])
    return rows


def _rows_of_rmq(cluster: Cluster, msg_id: str) -> list[list[str]]:
    """`rmq message trace -o json`'s Pub and SubAfter rows in mqadmin's six columns."""
    rows = json.loads(rmq_cli(cluster, "message", "trace", msg_id, "-o", "json"))
    out = []
    for row in rows:
        if row["type"] in ("Pub", "SubAfter"):
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(row["timestamp"] / 1000))
            kind = "Pub" if row["type"] == "Pub" else "Sub"
            cost = f"{row['costTimeMs']}ms"
            out.append([kind, row["group"], row["clientHost"], when, cost, row["status"]])
    return out


@pytest.mark.parametrize("kind", _matrix("Java client's traces read by rmq"))
def test_java_client_traces_read_by_rmq(
    kind: str, request: pytest.FixtureRequest, java_home: Path, tmp_path: Path
) -> None:
    cluster: Cluster = request.getfixturevalue(kind)
    topic = "ConfTraceJava"
    spec = {
        "namesrv": cluster.namesrv_addr,
        "topic": topic,
        "group": "CG-trace-java",
        "count": 3,
        "topics": {topic: 2},
    }
    result = run_driver("TraceScenarios.pubSub", spec, home=java_home / kind / "trace-java")
    assert result["traceTypes"] == {"Pub": 3, "SubBefore": 3, "SubAfter": 3}, result
    msg_ids = _msg_ids(cluster, topic)
    assert len(msg_ids) == 3
    for msg_id in msg_ids:
        text = _compare(cluster, msg_id, tmp_path)
        assert sorted(_rows_of_rmq(cluster, msg_id)) == sorted(_rows_of_mqadmin(text))


@pytest.mark.parametrize("kind", _matrix("rmq's traces read by Apache's mqadmin"))
def test_rmq_traces_read_by_apache(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    cluster: Cluster = request.getfixturevalue(kind)
    topic = "ConfTraceRmq"
    rmq_cli(cluster, "topic", "update", "-t", topic, "-r", "2", "-w", "2")
    records = [{"body": f"traced-{n}", "tags": "TagR", "keys": [f"RmqTrace-{n}"]} for n in range(3)]
    stdin = "".join(json.dumps(record) + "\n" for record in records)
    sent = rmq_cli(cluster, "produce", topic, "-g", "PG-trace-rmq", "--trace", stdin=stdin)
    msg_ids = [json.loads(line)["msgId"] for line in sent.splitlines()]
    rmq_cli(cluster, "consume", topic, "-g", "CG-trace-rmq", "--trace", "-c", "3")
    for msg_id in msg_ids:
        text = _compare(cluster, msg_id, tmp_path)
        rows = _rows_of_mqadmin(text)
        assert [row[:2] for row in rows] == [["Pub", "PG-trace-rmq"], ["Sub", "CG-trace-rmq"]]
        assert [row[5] for row in rows] == ["success", "success"]
