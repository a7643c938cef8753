"""A `rmq console` left running against a busy cluster keeps its memory: a standalone under
`rmq bench produce` at a steady rate, a `rmq consume` reading it, the console collecting
every second (its TPS history and `/metrics` rounds, sixty times the default pace) while a
reader loads every page in turn (overview, cluster, broker, topics, topic, groups, group,
producers, the three message searches, a message, its trace, dead letters, `/metrics`).

The console's anonymous resident memory (RssAnon) is read after each pass over the pages;
the largest reading of the last third of the run is at most 20 MiB above the largest of the
first pass after warming up (the first pages import the modules they need).  A 10 s sample
at 100 messages a second in `make test`; 10 minutes at 300 under `make stress`.
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.request
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.fuzzing import STRESS_MARKS
from tests.ports import free_port
from tests.procs import RmqProcess, RmqProcesses, rmq_command, run_rmq_cli, unique

GROWTH_LIMIT = 20 << 20
"""Bytes of RssAnon the console may gain over the run (the issue's 20 MB)."""

WARM_UP_PASSES = 3
"""Passes over the pages before the baseline is taken."""


def fetch(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=60) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def cli(namesrv: str, home: Path, *args: str, data: bytes = b"") -> str:
    done = run_rmq_cli([*args, "-n", namesrv], home=home, input=data)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize(
    ("duration", "rate"),
    [
        pytest.param(10, 100, id="10s"),
        pytest.param(600, 300, id="10min", marks=STRESS_MARKS),
    ],
)
def test_a_console_on_a_busy_cluster_keeps_its_memory(
    rmq_processes: RmqProcesses, tmp_path: Path, duration: int, rate: int
) -> None:
    standalone = rmq_processes.start_standalone()
    namesrv = standalone.namesrv_addr
    topic, group, key = unique("ConsoleMem"), unique("console_mem"), unique("key")
    cli(namesrv, tmp_path, "topic", "create", topic, "--write-queues", "4", "--read-queues", "4")
    sent = cli(namesrv, tmp_path, "produce", topic, "--keys", key, data=b"keyed\n")
    msg_id = json.loads(sent.splitlines()[0])["msgId"]

    port = free_port()
    console: RmqProcess = rmq_processes.start(
        "console",
        ["console", "-n", namesrv, "--port", str(port), "--interval", "1s"],
        port=port,
        env={"XDG_STATE_HOME": str(tmp_path / "state")},
    )
    url = f"http://127.0.0.1:{port}"
    load = [
        subprocess.Popen(
            rmq_command(
                [
                    *("bench", "produce", "-t", topic, "--rate", str(rate)),
                    *("-d", str(duration + 120), "-n", namesrv),
                ]
            ),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        ),
        subprocess.Popen(
            rmq_command(["consume", topic, "-g", group, "--from", "first", "-n", namesrv]),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        ),
    ]
    paths = [
        "/",
        "/cluster",
        f"/broker?addr={quote(standalone.addr)}",
        "/topics",
        f"/topic?name={topic}",
        "/groups",
        f"/group?name={group}",
        "/producers",
        f"/messages?topic={topic}",
        f"/messages?topic={topic}&key={key}",
        f"/messages?id={msg_id}",
        f"/message?id={msg_id}&topic={topic}",
        f"/trace?id={msg_id}",
        f"/dlq?group={group}",
        "/metrics",
    ]
    samples: list[tuple[float, int]] = []
    try:
        for _ in range(WARM_UP_PASSES):
            for path in paths:
                status, body = fetch(url + path)
                assert status == 200, (path, body[:300])
        start = time.monotonic()
        baseline = console.rss_anon()
        while time.monotonic() - start < duration:
            for path in paths:
                status, body = fetch(url + path)
                assert status == 200, (path, body[:300])
            samples.append((time.monotonic() - start, console.rss_anon()))
            assert all(process.poll() is None for process in load), "the load stopped early"
        assert console.running
    finally:
        for process in load:
            process.terminate()
            process.wait(30)
    last_third = [rss for at, rss in samples if at >= duration * 2 / 3]
    assert len(samples) >= 3 and last_third, samples
    grown = max(last_third) - baseline
    print(f"console RssAnon {baseline >> 10} KiB after warm-up, +{grown >> 10} KiB at most late")
    assert grown <= GROWTH_LIMIT, (baseline, samples)
    # the console saw the load: the topic's messages were counted in and out
    status, metrics = fetch(url + "/metrics")
    assert status == 200 and f'topic="{topic}"'.encode() in metrics
