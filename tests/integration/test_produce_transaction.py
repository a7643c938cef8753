"""`rmq produce --transaction --exec CMD [--check CMD]` against a real `rmq standalone` whose
transaction check runs every second on half messages older than a second.

The issue's case: twenty bodies, ten "commit-N" and ten "rollback-N", through
`--exec 'grep -q commit'` leave exactly the ten commits visible to `rmq consume`.  A command
that exits with another status leaves its transaction unknown: `--check` decides it when the
broker checks it back (the command stays until then); without `--check`, or when the check
keeps it unknown until `--check-timeout`, the command names the lines left unknown and exits
1.  The usage errors exit 2.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.test_produce_consume import Cli, cli_for, ndjson
from tests.procs import RmqProcesses, StandaloneProcess

# Commits "commit*" bodies, rolls back "rollback*" ones, leaves every other one unknown.
DECIDE = 'read -r record; case "$record" in *commit*) exit 0;; *rollback*) exit 1;; esac; exit 3'

_names = itertools.count()


def topic_name() -> str:
    return f"TxCli{next(_names)}"


@pytest.fixture(scope="module")
def standalone(module_processes: RmqProcesses) -> Iterator[StandaloneProcess]:
    process = module_processes.start_standalone(
        "tx-cli", props={"transactionTimeOut": 1000, "transactionCheckInterval": 1000}
    )
    yield process
    process.stop_cleanly()


@pytest.fixture(scope="module")
def cli(standalone: StandaloneProcess, tmp_path_factory: pytest.TempPathFactory) -> Cli:
    return cli_for(standalone.namesrv_addr, tmp_path_factory.mktemp("tx-cli-home"))


def lines(*bodies: str) -> bytes:
    return "".join(f"{body}\n" for body in bodies).encode()


def visible(cli: Cli, topic: str) -> list[str]:
    return sorted(record["body"] for record in cli.consume(topic, "-e"))


def test_grep_commit_leaves_exactly_the_commits_visible(cli: Cli) -> None:
    topic = topic_name()
    cli.ok("topic", "update", "-t", topic, "--cluster", "DefaultCluster")
    bodies = [f"commit-{n}" for n in range(10)] + [f"rollback-{n}" for n in range(10)]
    rows = ndjson(
        cli.ok("produce", topic, "--transaction", "--exec", "grep -q commit", input=lines(*bodies))
    )
    assert [row["line"] for row in rows] == list(range(1, 21))
    assert [row["transaction"] for row in rows] == ["COMMIT_MESSAGE"] * 10 + [
        "ROLLBACK_MESSAGE"
    ] * 10
    assert all(row["status"] == "SEND_OK" for row in rows)
    assert visible(cli, topic) == sorted(f"commit-{n}" for n in range(10))


def test_exec_reads_the_record_and_async_keeps_the_order(cli: Cli, tmp_path: Path) -> None:
    topic = topic_name()
    cli.ok("topic", "update", "-t", topic, "--cluster", "DefaultCluster")
    seen = tmp_path / "seen.ndjson"
    records = [{"body": f"commit-{n}", "tags": "T", "keys": [f"k{n}"]} for n in range(5)]
    out = cli.ok(
        "produce",
        topic,
        "--async",
        "--transaction",
        "--exec",
        f"cat >> {seen}",
        input="".join(json.dumps(record) + "\n" for record in records).encode(),
    )
    rows = ndjson(out)
    assert [row["line"] for row in rows] == [1, 2, 3, 4, 5]
    seen_records = sorted(ndjson(seen.read_bytes()), key=lambda record: record["line"])
    assert [record["body"] for record in seen_records] == [f"commit-{n}" for n in range(5)]
    for row, record in zip(rows, seen_records, strict=True):
        assert record["msgId"] == row["msgId"]
        assert record["topic"] == topic
        assert record["tags"] == "T"
        assert record["keys"] == [f"k{row['line'] - 1}"]
    assert visible(cli, topic) == sorted(f"commit-{n}" for n in range(5))


def test_an_unknown_transaction_is_decided_by_the_check(cli: Cli, tmp_path: Path) -> None:
    topic = topic_name()
    cli.ok("topic", "update", "-t", topic, "--cluster", "DefaultCluster")
    checked = tmp_path / "checked.ndjson"
    started = time.monotonic()
    result = cli.run(
        "produce",
        topic,
        "--transaction",
        "--exec",
        DECIDE,
        "--check",
        f"tee -a {checked} | grep -q later-yes",
        input=lines("commit-1", "later-yes", "rollback-1", "later-no"),
    )
    assert result.returncode == 0, result.stderr.decode()
    assert time.monotonic() - started < 60
    rows = ndjson(result.stdout)
    assert [row["transaction"] for row in rows] == [
        "COMMIT_MESSAGE",
        "UNKNOW",
        "ROLLBACK_MESSAGE",
        "UNKNOW",
    ]
    stderr = result.stderr.decode()
    assert "check back 2 unknown transaction(s)" in stderr
    assert f"line 2: a check-back decided transaction {rows[1]['msgId']}: COMMIT_MESSAGE" in stderr
    assert f"line 4: a check-back decided transaction {rows[3]['msgId']}: ROLLBACK_MESSAGE" in (
        stderr
    )
    checks = ndjson(checked.read_bytes())
    assert {check["line"] for check in checks} == {2, 4}
    assert all(check["properties"]["TRAN_MSG"] == "true" for check in checks)
    assert visible(cli, topic) == ["commit-1", "later-yes"]


def test_transactions_left_unknown_fail_the_command(cli: Cli) -> None:
    topic = topic_name()
    cli.ok("topic", "update", "-t", topic, "--cluster", "DefaultCluster")
    no_check = cli.run(
        "produce", topic, "--transaction", "--exec", DECIDE, input=lines("a", "commit-1", "b")
    )
    assert no_check.returncode == 1
    assert [row["transaction"] for row in ndjson(no_check.stdout)] == [
        "UNKNOW",
        "COMMIT_MESSAGE",
        "UNKNOW",
    ]
    assert "rmq: error: 2 transactions left unknown (lines 1, 3)" in no_check.stderr.decode()
    started = time.monotonic()
    still_unknown = cli.run(
        "produce",
        topic,
        "--transaction",
        "--exec",
        "exit 2",
        "--check",
        "exit 2",
        "--check-timeout",
        "3",
        input=lines("c"),
    )
    assert still_unknown.returncode == 1
    assert time.monotonic() - started >= 3
    assert "rmq: error: 1 transaction left unknown (line 1)" in still_unknown.stderr.decode()
    assert visible(cli, topic) == ["commit-1"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--transaction", "--exec", "true", "--batch", "2"], "--batch or --oneway"),
        (["--transaction", "--exec", "true", "--oneway"], "--batch or --oneway"),
        (["--exec", "true"], "need --transaction"),
        (["--check", "true"], "need --transaction"),
        (["--transaction"], "needs --exec"),
        (["--transaction", "--exec", "true", "--check-timeout", "5"], "--check only"),
    ],
)
def test_usage_errors(cli: Cli, options: list[str], message: str) -> None:
    result = cli.run("produce", "TxUsage", *options, input=b"x\n")
    assert result.returncode == 2
    assert message in result.stderr.decode()
