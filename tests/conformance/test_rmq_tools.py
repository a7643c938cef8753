"""rmq's own tools against Apache's cluster and against rmq's: `rmq produce` / `rmq consume`,
every `rmq topic` verb, `rmq cluster list`, `rmq bench` and `rmq request` / `rmq reply`.

Each case runs the same commands against both clusters and compares their JSON output after
`_normalise` (addresses, times, message ids and load figures are what legitimately differs);
the Apache run must itself show the result the case is about, which is what makes the
comparison mean something.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest

from rmq.common.naming import RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC
from tests.cli_forkserver import run as cli_run
from tests.conformance.clusters import BROKER_NAME, CLUSTER, Cluster
from tests.conformance.java import run_driver
from tests.integration.test_client_producer import pull_topic

SECTION = "rmq tools against both clusters"
TOPIC = "ConfTools"


def rmq_cli(
    cluster: Cluster,
    *args: str,
    stdin: str | None = None,
    timeout: float = 90,
    returncode: int = 0,
) -> Any:
    """`python -m rmq ARGS -n <cluster's name server>`; returns stdout (exit `returncode`
    asserted)."""
    done = cli_run(
        [sys.executable, "-m", "rmq", *args, "-n", cluster.namesrv_addr],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "HOME": str(cluster.root / "cli-home")},
        check=False,
    )
    assert done.returncode == returncode, (
        f"rmq {' '.join(args)} exited {done.returncode}: {done.stderr}"
    )
    return done.stdout


def rmq_json(cluster: Cluster, *args: str, stdin: str | None = None) -> Any:
    return json.loads(rmq_cli(cluster, *args, "-o", "json", stdin=stdin))


def _ndjson(text: str) -> list[Any]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _addr(cluster: Cluster, value: Any) -> Any:
    """Replace the cluster's broker and name server addresses with placeholders."""
    text = json.dumps(value)
    text = text.replace(cluster.broker_addr, "<broker>").replace(cluster.namesrv_addr, "<namesrv>")
    return json.loads(text)


def _until(probe: Callable[[], Any], ok: Callable[[Any], bool], timeout: float = 30) -> Any:
    """Call `probe` until `ok(result)`; the last result is returned either way (the caller's
    assertion then shows it)."""
    deadline = time.monotonic() + timeout
    while True:
        result = probe()
        if ok(result) or time.monotonic() > deadline:
            return result
        time.sleep(0.2)


def _topic_update(cluster: Cluster) -> Any:
    out = rmq_json(
        cluster, "topic", "update", "-t", TOPIC, "--cluster", CLUSTER, "-r", "4", "-w", "4"
    )
    return _addr(cluster, out)


def _topic_route(cluster: Cluster) -> Any:
    out = _until(
        lambda: rmq_json(cluster, "topic", "route", TOPIC),
        lambda r: bool(r.get("queueDatas")),
    )
    return _addr(cluster, out)


def _topic_clusters(cluster: Cluster) -> Any:
    return rmq_json(cluster, "topic", "clusters", TOPIC)


SYSTEM_TOPICS = {
    "BenchmarkTest",
    "OFFSET_MOVED_EVENT",
    "RMQ_SYS_TRACE_TOPIC",
    "RMQ_SYS_TRANS_HALF_TOPIC",
    "SCHEDULE_TOPIC_XXXX",
    "SELF_TEST_TOPIC",
    "TBW102",
    BROKER_NAME,
    CLUSTER,
    f"{CLUSTER}_REPLY_TOPIC",
}


def _topic_list(cluster: Cluster) -> Any:
    """The system topics and this module's topic: other modules' topics are not compared."""
    rows = rmq_json(cluster, "topic", "list", "--all")
    return [row for row in rows if row["topic"] in SYSTEM_TOPICS | {TOPIC}]


def _cluster_list(cluster: Cluster) -> Any:
    """Every field's presence and type; the figures themselves are load and disk dependent,
    except the identity of the broker.  A broker's TPS windows are empty until it has taken
    its first samples (10 s after its start, on either side), so the list is read once both
    TPS figures are there: a cluster started just before this row is compared as an old one."""
    rows = _until(
        lambda: _addr(cluster, rmq_json(cluster, "cluster", "list")),
        lambda rows: all(row["inTps"] is not None and row["outTps"] is not None for row in rows),
    )
    identity = ("cluster", "brokerName", "brokerId", "addr", "version", "error")
    return [
        {key: (value if key in identity else type(value).__name__) for key, value in row.items()}
        for row in rows
    ]


MESSAGES = [
    {
        "body": f"body-{i}",
        "tags": "TagA" if i % 2 else "TagB",
        "keys": [f"key-{i}"],
        "properties": {"index": str(i), "note": "héllo wörld"},
    }
    for i in range(12)
] + [{"body": "AAECA/8=", "bodyEncoding": "base64", "keys": ["binary"]}]


def _produce(cluster: Cluster) -> Any:
    """Send the records; the per-message results without ids, queues and offsets."""
    stdin = "".join(json.dumps(record) + "\n" for record in MESSAGES)
    rows = rmq_json(cluster, "produce", TOPIC, stdin=stdin)
    return sorted((row["line"], row["brokerName"], row["status"]) for row in rows)


def _record(record: dict[str, Any]) -> dict[str, Any]:
    """A consumed record without what each broker assigns (ids, offsets, hosts, times)."""
    dropped = {
        "msgId",
        "offsetMsgId",
        "commitLogOffset",
        "bornTimestamp",
        "storeTimestamp",
        "bornHost",
        "storeHost",
        "queueId",
        "queueOffset",
    }
    properties = {
        key: value
        for key, value in record["properties"].items()
        if key not in {"UNIQ_KEY", "MIN_OFFSET", "MAX_OFFSET"}
    }
    return {**{k: v for k, v in record.items() if k not in dropped}, "properties": properties}


def _consume_all(cluster: Cluster) -> Any:
    records = _ndjson(rmq_cli(cluster, "consume", TOPIC, "--from", "first", "-e"))
    return sorted((_record(r) for r in records), key=lambda r: json.dumps(r, sort_keys=True))


def _consume_filtered(cluster: Cluster) -> Any:
    records = _ndjson(rmq_cli(cluster, "consume", TOPIC, "--filter", "TagA", "-e"))
    return sorted(r["keys"][0] for r in records)


def _consume_group_commits(cluster: Cluster) -> Any:
    """A group reads everything once (and commits); the same group then finds nothing new."""
    group = "CG-conf-tools"
    first = _ndjson(rmq_cli(cluster, "consume", TOPIC, "-g", group, "--from", "first", "-e"))
    again = _ndjson(rmq_cli(cluster, "consume", TOPIC, "-g", group, "-e"))
    return {"first": len(first), "again": len(again)}


def _topic_status(cluster: Cluster) -> Any:
    rows = rmq_json(cluster, "topic", "status", TOPIC)
    return {
        "queues": sorted((r["brokerName"], r["queueId"], r["minOffset"]) for r in rows),
        "messages": sum(r["maxOffset"] - r["minOffset"] for r in rows),
    }


def _bench(cluster: Cluster) -> Any:
    produced = json.loads(
        rmq_cli(cluster, "bench", "produce", "-t", TOPIC, "-c", "300", "-s", "256", "--json")
    )
    consumed = json.loads(
        rmq_cli(
            cluster,
            "bench",
            "consume",
            "-t",
            TOPIC,
            "-g",
            "CG-conf-bench",
            "--from",
            "first",
            "-c",
            "300",
            "--json",
        )
    )
    return {
        "sendTotal": produced["sendTotal"],
        "sendFailed": produced["sendFailed"] + produced["responseFailed"],
        "consumedAtLeast300": consumed["consumeTotal"] >= 300,
        "consumeFailed": consumed["failed"],
    }


def _topic_delete(cluster: Cluster) -> Any:
    out = _addr(cluster, rmq_json(cluster, "topic", "delete", TOPIC, "--cluster", CLUSTER, "-y"))
    listed = _until(
        lambda: [row["topic"] for row in rmq_json(cluster, "topic", "list")],
        lambda topics: TOPIC not in topics,
    )
    return {"delete": out, "stillListed": TOPIC in listed}


TX_TOPIC = "ConfToolsTx"
DECIDE = 'read -r record; case "$record" in *commit*) exit 0;; *rollback*) exit 1;; esac; exit 3'
"""Commits "commit*" bodies, rolls back "rollback*" ones and leaves the others unknown."""


def _produce_transaction(cluster: Cluster) -> Any:
    """Commit, rollback and two unknowns the broker checks back (one committed, one rolled
    back by --check); the states per line and the bodies a consumer sees."""
    rmq_json(cluster, "topic", "update", "-t", TX_TOPIC, "--cluster", CLUSTER, "-r", "4", "-w", "4")
    rows = _ndjson(
        rmq_cli(
            cluster,
            "produce",
            TX_TOPIC,
            "--transaction",
            "--exec",
            DECIDE,
            "--check",
            "grep -q later-yes",
            "--check-timeout",
            "60",
            stdin="commit-1\nrollback-1\nlater-yes\nlater-no\n",
        )
    )
    visible = _until(
        lambda: sorted(
            r["body"]
            for r in _ndjson(rmq_cli(cluster, "consume", TX_TOPIC, "--from", "first", "-e"))
        ),
        lambda bodies: len(bodies) >= 2,
    )
    return {
        "transactions": [(row["line"], row["status"], row["transaction"]) for row in rows],
        "visible": visible,
    }


def _transaction_discarded(cluster: Cluster) -> Any:
    """With transactionCheckMax 2 for the while, a transaction that every check leaves
    unknown: how often the broker asked, the exit status, and the copy the broker moved to
    TRANS_CHECK_MAX_TIME_TOPIC (pulled from the broker: the topic is not routed at once)."""
    topic, checks = f"{TX_TOPIC}Max", cluster.root / "tx-max-checks.ndjson"
    rmq_json(cluster, "topic", "update", "-t", topic, "--cluster", CLUSTER, "-r", "4", "-w", "4")
    rmq_cli(cluster, "broker-config", "set", "transactionCheckMax", "2", "--cluster", CLUSTER)
    try:
        rows = _ndjson(
            rmq_cli(
                cluster,
                "produce",
                topic,
                "-g",
                "conf-tx-max",
                "--transaction",
                "--exec",
                "exit 3",
                "--check",
                f"cat >> {checks}; exit 3",
                "--check-timeout",
                "10",
                stdin="never decided\n",
                returncode=1,
            )
        )
        msg_id = rows[0]["msgId"]
        discarded = _until(
            lambda: [
                record
                for record in asyncio.run(
                    pull_topic(cluster.broker_addr, RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC, 1)
                )
                if record.msg_id == msg_id
            ],
            bool,
        )
    finally:
        rmq_cli(cluster, "broker-config", "set", "transactionCheckMax", "15", "--cluster", CLUSTER)
    names = ("TRAN_MSG", "PGROUP", "REAL_TOPIC", "TRANSACTION_CHECK_TIMES")
    return {
        "transaction": rows[0]["transaction"],
        "checkedTransactions": [check["msgId"] == msg_id for check in _ndjson(checks.read_text())],
        "discarded": [
            {
                "body": record.body,
                "sysFlag": record.sys_flag,
                "properties": {name: record.properties.get(name) for name in names},
            }
            for record in discarded
        ],
        "visible": _ndjson(rmq_cli(cluster, "consume", topic, "--from", "first", "-e")),
    }


REQUEST_TOPIC = "ConfToolsRequest"
REPLY_ECHO = f"{shlex.quote(sys.executable)} -c " + shlex.quote(
    "import json, sys; print('re:' + json.load(sys.stdin)['body'], end='')"
)
"""`rmq reply`'s command: the reply body is `re:` and the request's body."""


def _request_reply(cluster: Cluster) -> Any:
    """`rmq reply --exec` answering two `rmq request` lines: the replies as printed (without
    what each run assigns) and whether the replier's rows name the same correlation ids."""
    rmq_json(
        cluster, "topic", "update", "-t", REQUEST_TOPIC, "--cluster", CLUSTER, "-r", "2", "-w", "2"
    )
    argv = ["reply", REQUEST_TOPIC, "--exec", REPLY_ECHO, "-g", "conf-reply", "-c", "2"]
    replier = subprocess.Popen(
        [sys.executable, "-m", "rmq", *argv, "-n", cluster.namesrv_addr],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "HOME": str(cluster.root / "cli-home")},
    )
    try:
        replies = _ndjson(
            rmq_cli(cluster, "request", REQUEST_TOPIC, "--timeout", "60", stdin="ping-1\nping-2\n")
        )
        out, err = replier.communicate(timeout=60)
    finally:
        replier.kill()
    assert replier.returncode == 0, err
    varying = {"CORRELATION_ID", "REPLY_TO_CLIENT", "UNIQ_KEY", "PUSH_REPLY_TIME", "ARRIVE_TIME"}
    return {
        "replies": [
            {
                **_record(reply),
                "properties": {k: v for k, v in reply["properties"].items() if k not in varying},
            }
            for reply in replies
        ],
        "sameCorrelationIds": [row["correlationId"] for row in _ndjson(out)]
        == [reply["properties"]["CORRELATION_ID"] for reply in replies],
    }


def _request_timeout(cluster: Cluster) -> Any:
    """`rmq request` with nobody answering: exit 1 and the one line saying so."""
    argv = [sys.executable, "-m", "rmq", "request", REQUEST_TOPIC, "unanswered"]
    done = cli_run(
        [*argv, "--timeout", "1", "-n", cluster.namesrv_addr],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "HOME": str(cluster.root / "cli-home")},
        check=False,
    )
    return {"exit": done.returncode, "stdout": done.stdout, "stderr": done.stderr}


def _java_requester(cluster: Cluster) -> Any:
    """Apache's Java client's `DefaultMQProducer.request` (three async requests) answered by
    `rmq reply --exec`: the replies the Java requester got."""
    topic = f"{REQUEST_TOPIC}Java"
    rmq_json(cluster, "topic", "update", "-t", topic, "--cluster", CLUSTER, "-r", "2", "-w", "2")
    argv = ["reply", topic, "--exec", REPLY_ECHO, "-g", "conf-reply-java", "-c", "3"]
    replier = subprocess.Popen(
        [sys.executable, "-m", "rmq", *argv, "-n", cluster.namesrv_addr],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "HOME": str(cluster.root / "cli-home")},
    )
    try:
        spec = {
            "namesrv": cluster.namesrv_addr,
            "topic": topic,
            "group": "CG-java-requester",
            "count": 3,
            "timeout": 60,
            "noResponder": True,
        }
        result = run_driver(
            "RequestScenarios.requestReply", spec, home=cluster.root / "java-requester"
        )
        out, err = replier.communicate(timeout=60)
    finally:
        replier.kill()
    assert replier.returncode == 0, err
    return {**result, "answered": len(_ndjson(out))}


def _expect_topic(result: Any) -> None:
    assert result["topic"] == TOPIC and result["brokerAddrs"] == ["<broker>"], result


CASES: list[tuple[str, Callable[[Cluster], Any], Callable[[Any], object]]] = [
    ("rmq topic update", _topic_update, _expect_topic),
    ("rmq topic route", _topic_route, lambda r: _expect_topic({**r, "brokerAddrs": ["<broker>"]})),
    ("rmq topic clusters", _topic_clusters, lambda r: r == [{"cluster": CLUSTER}]),
    ("rmq topic list", _topic_list, lambda r: TOPIC in {row["topic"] for row in r}),
    ("rmq cluster list", _cluster_list, lambda r: r[0]["addr"] == "<broker>"),
    ("rmq produce", _produce, lambda r: len(r) == len(MESSAGES)),
    ("rmq topic status", _topic_status, lambda r: r["messages"] == len(MESSAGES)),
    ("rmq consume --from first -e", _consume_all, lambda r: len(r) == len(MESSAGES)),
    ("rmq consume --filter", _consume_filtered, lambda r: len(r) == 6),
    ("rmq consume -g (commits)", _consume_group_commits, lambda r: r == {"first": 13, "again": 0}),
    ("rmq bench produce/consume", _bench, lambda r: r["sendTotal"] == 300 and r["sendFailed"] == 0),
    ("rmq topic delete", _topic_delete, lambda r: not r["stillListed"]),
    (
        "rmq produce --transaction --exec --check",
        _produce_transaction,
        lambda r: r["visible"] == ["commit-1", "later-yes"],
    ),
    (
        "rmq produce transactionCheckMax reached",
        _transaction_discarded,
        lambda r: r["checkedTransactions"] == [True, True] and len(r["discarded"]) == 1,
    ),
    (
        "rmq request / rmq reply --exec",
        _request_reply,
        lambda r: (
            [x["body"] for x in r["replies"]] == ["re:ping-1", "re:ping-2"]
            and r["sameCorrelationIds"]
        ),
    ),
    (
        "rmq reply answering Java's DefaultMQProducer.request",
        _java_requester,
        lambda r: (
            r["answered"] == 3
            and not r["failures"]
            and {k: v["body"] for k, v in r["replies"].items()}
            == {f"request-{i}": f"re:question {i}" for i in range(3)}
        ),
    ),
    (
        "rmq request timeout",
        _request_timeout,
        lambda r: r["exit"] == 1 and "no reply to line 1 within 1 s" in r["stderr"],
    ),
]


def _cases() -> list[Any]:
    return [
        pytest.param(
            name,
            kind,
            marks=pytest.mark.matrix(SECTION, name, "Apache" if kind == "apache" else "rmq"),
            id=f"{name.split()[1]}-{'-'.join(name.split()[2:3]) or 'x'}-{kind}",
        )
        for name, _, _ in CASES
        for kind in ("apache", "rmq")
    ]


@pytest.mark.parametrize(("case", "kind"), _cases())
def test_tool(case: str, kind: str, request: pytest.FixtureRequest, differential: Any) -> None:
    _, run, check = next(c for c in CASES if c[0] == case)

    def checked(cluster: Cluster) -> Any:
        result = run(cluster)
        outcome = check(result)
        assert outcome is None or outcome, f"{case} against {cluster.kind}: {result}"
        return result

    expected = differential.apache_result(f"tools:{case}", checked)
    if kind == "apache":
        return
    actual = checked(request.getfixturevalue("rmq"))
    assert actual == expected
