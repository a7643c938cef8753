"""`rmq consume --sql` against real servers: SQL92 filtering end to end.

A `rmq standalone` (which turns `enablePropertyFilter` on) gets 20 messages with property
`a` = 0..19 through `rmq produce`; `rmq consume --sql 'a > 14'` prints exactly the five with
a = 15..19, read queue by queue and as a push consumer of a group.  A broker whose config
file turns the property filter off refuses the subscription and the command fails with one
line (exit 1); the option errors exit 2, and a `--filter` that looks like SQL warns.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.cli_forkserver import run as cli_run
from tests.procs import RmqProcesses, StandaloneProcess

TOPIC = "SqlFiltered"


def rmq(namesrv: str, *args: str, input: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RMQ_") and k != "NAMESRV_ADDR"}
    return cli_run(
        [sys.executable, "-m", "rmq", *args, "-n", namesrv],
        input=input,
        capture_output=True,
        env=env,
        timeout=90,
    )


def records(output: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines()]


@pytest.fixture(scope="module")
def standalone(module_processes: RmqProcesses) -> Iterator[StandaloneProcess]:
    process = module_processes.start_standalone("sql")
    sent = b"".join(
        json.dumps({"body": f"m{a}", "properties": {"a": str(a)}}).encode() + b"\n"
        for a in range(20)
    )
    produced = rmq(process.namesrv_addr, "produce", TOPIC, input=sent)
    assert produced.returncode == 0, produced.stderr.decode()
    assert len(records(produced.stdout)) == 20
    yield process
    process.stop_cleanly()


def test_sql_reads_exactly_the_matching_messages(standalone: StandaloneProcess) -> None:
    done = rmq(standalone.namesrv_addr, "consume", TOPIC, "--sql", "a > 14", "-e")
    assert done.returncode == 0, done.stderr.decode()
    got = records(done.stdout)
    assert len(got) == 5
    assert sorted(int(r["properties"]["a"]) for r in got) == [15, 16, 17, 18, 19]


def test_sql_push_consumer_of_a_group(standalone: StandaloneProcess) -> None:
    done = rmq(
        standalone.namesrv_addr,
        "consume",
        TOPIC,
        "-g",
        "CG-sql",
        "--sql",
        "a BETWEEN 3 AND 5 OR a IN ('19')",
        "-c",
        "4",
    )
    assert done.returncode == 0, done.stderr.decode()
    assert sorted(int(r["properties"]["a"]) for r in records(done.stdout)) == [3, 4, 5, 19]


def test_filter_that_looks_like_sql_warns(standalone: StandaloneProcess) -> None:
    done = rmq(standalone.namesrv_addr, "consume", TOPIC, "--filter", "a > 14", "-e")
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == b"", "a tag expression matches no message here"
    assert b"--sql" in done.stderr and b"warning" in done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--sql", "a > 1", "--filter", "TagA"), b"--filter and --sql exclude each other"),
        (("--sql", "a >"), b"column 4"),
    ],
)
def test_option_errors_are_usage_errors(
    standalone: StandaloneProcess, args: tuple[str, ...], message: bytes
) -> None:
    done = rmq(standalone.namesrv_addr, "consume", TOPIC, *args, "-e")
    assert done.returncode == 2
    assert message in done.stderr


def test_broker_without_property_filter_refuses(module_processes: RmqProcesses) -> None:
    process = module_processes.start_standalone("nosql", props={"enablePropertyFilter": "false"})
    try:
        produced = rmq(process.namesrv_addr, "produce", TOPIC, input=b"hello\n")
        assert produced.returncode == 0, produced.stderr.decode()
        done = rmq(process.namesrv_addr, "consume", TOPIC, "--sql", "a > 1", "-e")
    finally:
        process.stop_cleanly()
    assert done.returncode == 1
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1, lines
    assert "The broker does not support consumer to filter message by SQL92" in lines[0]
