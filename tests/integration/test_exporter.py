"""`rmq exporter` against real rmq processes: a topic produced to and consumed by a group shows
on /metrics in rocketmq-exporter's names and labels, the group's lag falls as it consumes, a
series no round reports disappears after --expire-after, and a broker that goes away costs
only its own series while scrapes keep answering."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rmq.console.metrics import FAMILIES, FAMILY_BY_NAME, parse_samples
from tests.ports import free_port
from tests.procs import RmqProcesses, StandaloneProcess, rmq_command, run_rmq_cli, unique

Sample = tuple[str, dict[str, str], float]


class Exporter:
    """A running `rmq exporter` and its URL."""

    def __init__(
        self,
        namesrv: str,
        *,
        interval: str = "1s",
        expire_after: str = "60s",
        env: dict[str, str] | None = None,
    ) -> None:
        self.port = free_port()
        self.process = subprocess.Popen(
            rmq_command(
                [
                    "exporter",
                    "-n",
                    namesrv,
                    "--port",
                    str(self.port),
                    "--interval",
                    interval,
                    "--expire-after",
                    expire_after,
                ]
            ),
            stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})},
        )
        assert self.process.stderr is not None
        line = self.process.stderr.readline().decode()
        assert line == f"rmq exporter: serving http://127.0.0.1:{self.port}/metrics\n", line

    def scrape(self) -> tuple[str, list[Sample]]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as answer:
            assert answer.status == 200
            assert answer.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            text = answer.read().decode()
        return text, parse_samples(text)

    def wait_for(
        self, condition: Callable[[list[Sample]], bool], what: str, timeout: float = 30.0
    ) -> list[Sample]:
        deadline = time.monotonic() + timeout
        while True:
            samples = self.scrape()[1]
            if condition(samples):
                return samples
            if time.monotonic() > deadline:
                shown = "\n".join(str(s) for s in samples if "brokeruntime" not in s[0])
                raise AssertionError(f"{what}: not within {timeout}s\n{shown}")
            time.sleep(0.2)

    def stop(self) -> int:
        self.process.terminate()
        return self.process.wait(15)


def value(samples: list[Sample], name: str, **labels: str) -> float | None:
    """The value of the one series of `name` whose labels include `labels`, else None."""
    found = [
        v for n, ls, v in samples if n == name and all(ls.get(k) == x for k, x in labels.items())
    ]
    assert len(found) <= 1, (name, labels, found)
    return found[0] if found else None


@pytest.fixture(scope="module")
def standalone(module_processes: RmqProcesses) -> StandaloneProcess:
    return module_processes.start_standalone()


SECRET = "exporter-secret-key-0123456789"


@pytest.fixture
def exporter(standalone: StandaloneProcess) -> Iterator[Exporter]:
    # Signing keys the exporter must use and never show (the broker has no ACL: it ignores
    # the signature).
    keys = {"RMQ_ACCESS_KEY": "exporterAccess", "RMQ_SECRET_KEY": SECRET}
    running = Exporter(standalone.namesrv_addr, interval="1s", expire_after="4s", env=keys)
    try:
        yield running
    finally:
        assert running.stop() == 0


def cli(standalone: StandaloneProcess, tmp_path: Path, *args: str, data: bytes = b"") -> str:
    done = run_rmq_cli([*args, "-n", standalone.namesrv_addr], home=tmp_path, input=data)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_series_names_labels_and_lag(
    standalone: StandaloneProcess, exporter: Exporter, tmp_path: Path
) -> None:
    topic, group = unique("ExpTopic"), unique("ExpGroup")
    cli(standalone, tmp_path, "topic", "create", topic, "-r", "2", "-w", "2")
    cli(standalone, tmp_path, "produce", topic, data=b"".join(b"m%d\n" % i for i in range(20)))
    cli(standalone, tmp_path, "consume", topic, "-g", group, "--from", "first", "-c", "5")

    # A round that ran while `rmq consume` was still connected reported the group with one
    # online consumer: that series stays up to 60 s beside the new one, as in
    # rocketmq-exporter (outOfTimeSeconds).  The lag is read from the series without one.
    offline = {"group": group, "topic": topic, "countOfOnlineConsumers": "0"}
    samples = exporter.wait_for(
        lambda s: value(s, "rocketmq_group_diff", **offline) == 15,
        "the group's lag after 5 of 20 messages",
    )
    text = exporter.scrape()[0]
    assert SECRET not in text
    assert "exporterAccess" not in text
    for family in FAMILIES:  # every family, as the exporter writes them, even without series
        assert f"# TYPE {family.name} gauge\n" in text
    for name, labels, _ in samples:  # every series has exactly its family's labels
        assert tuple(labels) == FAMILY_BY_NAME[name].labels, (name, labels)

    broker = {"cluster": "DefaultCluster", "broker": standalone.name}
    assert value(samples, "rocketmq_producer_offset", **broker, topic=topic) == 20
    assert value(samples, "rocketmq_consumer_offset", **broker, topic=topic, group=group) == 5
    diff = [ls for n, ls, _ in samples if n == "rocketmq_group_diff" and ls["group"] == group]
    assert {**offline, "msgModel": "1"} in diff
    assert all(ls["topic"] == topic and ls["msgModel"] == "1" for ls in diff), diff
    latency = value(
        samples, "rocketmq_group_get_latency_by_storetime", **broker, topic=topic, group=group
    )
    assert latency is not None and latency > 0
    assert value(samples, "rocketmq_group_count", group=group, caddr="", localaddr="") == 0
    assert value(samples, "rocketmq_producer_tps", **broker, topic=topic) is not None
    assert value(samples, "rocketmq_consumer_tps", **broker, topic=topic, group=group) is not None
    tps = value(samples, "rocketmq_broker_tps", cluster="DefaultCluster", brokerIP=standalone.addr)
    assert tps is not None
    runtime = {"cluster": "DefaultCluster", "brokerIP": standalone.addr, "des": "V4_9_8"}
    put_total = value(samples, "rocketmq_brokeruntime_msg_put_total_today_now", **runtime)
    assert put_total is not None and put_total >= 20
    retry = {**broker, "topic": f"%RETRY%{group}"}  # listed once the broker registers it
    exporter.wait_for(
        lambda s: value(s, "rocketmq_topic_retry_offset", **retry) == 0,
        "the retry topic's offset",
        timeout=60,
    )

    cli(standalone, tmp_path, "consume", topic, "-g", group, "-c", "15")
    samples = exporter.wait_for(
        lambda s: value(s, "rocketmq_group_diff", **offline) == 0,  # as above: no consumer
        "the group's lag after all 20 messages",
    )
    assert value(samples, "rocketmq_consumer_offset", **broker, topic=topic, group=group) == 20
    latency_name = "rocketmq_group_get_latency_by_storetime"
    assert value(samples, latency_name, **broker, topic=topic, group=group) == 0


def test_series_of_a_deleted_topic_expires(
    standalone: StandaloneProcess, exporter: Exporter, tmp_path: Path
) -> None:
    topic = unique("ExpGone")
    cli(standalone, tmp_path, "topic", "create", topic, "-r", "1", "-w", "1")
    cli(standalone, tmp_path, "produce", topic, data=b"one\n")
    offset = {"broker": standalone.name, "topic": topic}
    exporter.wait_for(
        lambda s: value(s, "rocketmq_producer_offset", **offset) == 1, "the new topic's offset"
    )
    cli(standalone, tmp_path, "topic", "delete", topic, "--yes")
    deleted = time.monotonic()
    exporter.wait_for(
        lambda s: value(s, "rocketmq_producer_offset", **offset) is None,
        "the deleted topic's series gone",
        timeout=20,
    )
    # The last round that reported it ended at most a round (1 s, plus its own time) before
    # the deletion, and its series lives 4 s after that round.
    assert time.monotonic() - deleted >= 2.0


def test_a_broker_down_costs_only_its_series(rmq_processes: RmqProcesses, tmp_path: Path) -> None:
    namesrv = rmq_processes.start_namesrv()
    first = rmq_processes.start_broker("exp-a", namesrv=namesrv)
    second = rmq_processes.start_broker("exp-b", namesrv=namesrv)
    running = Exporter(namesrv.addr, interval="1s", expire_after="3s")
    try:
        metric = "rocketmq_brokeruntime_msg_put_total_today_now"
        running.wait_for(
            lambda s: all(
                value(s, metric, brokerIP=broker.addr) is not None for broker in (first, second)
            ),
            "both brokers' runtime series",
        )
        second.kill()
        samples = running.wait_for(
            lambda s: value(s, metric, brokerIP=second.addr) is None,
            "the dead broker's series gone",
        )
        assert value(samples, metric, brokerIP=first.addr) is not None
        started = time.monotonic()
        running.scrape()
        assert time.monotonic() - started < 1.0  # the scrape does not wait for the rounds
        assert running.process.poll() is None
        namesrv.kill()  # now no round gets anything: every series ages out, scrapes answer
        running.wait_for(lambda s: s == [], "every series gone with the name server")
        assert running.process.poll() is None
    finally:
        assert running.stop() == 0


def test_port_in_use_is_one_line_error(tmp_path: Path) -> None:
    import socket

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        done = run_rmq_cli(
            ["exporter", "-n", "127.0.0.1:1", "--port", str(port)], home=tmp_path, timeout=30
        )
    assert done.returncode == 1
    assert done.stderr.startswith(f"rmq: error: cannot listen on 127.0.0.1:{port}: ")
    assert len(done.stderr.splitlines()) == 1
    bad = run_rmq_cli(["exporter", "--interval", "soon"], home=tmp_path)
    assert bad.returncode == 2
    assert bad.stderr.startswith("rmq: error: --interval: ")


def test_any_free_port_and_ctrl_c(tmp_path: Path) -> None:
    process = subprocess.Popen(
        rmq_command(["exporter", "-n", "127.0.0.1:1", "--port", "0"]), stderr=subprocess.PIPE
    )
    assert process.stderr is not None
    line = process.stderr.readline().decode()
    assert line.startswith("rmq exporter: serving http://127.0.0.1:"), line
    port = int(line.rsplit(":", 1)[1].split("/")[0])
    assert port > 0
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        assert answer.status == 200  # no name server answers: the families, no series
        assert parse_samples(answer.read().decode()) == []
    process.send_signal(signal.SIGINT)
    assert process.wait(15) == 130


def test_only_metrics_is_served(exporter: Exporter) -> None:
    head = urllib.request.Request(f"http://127.0.0.1:{exporter.port}/metrics", method="HEAD")
    with urllib.request.urlopen(head, timeout=5) as answer:
        assert answer.status == 200
        assert answer.read() == b""
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(f"http://127.0.0.1:{exporter.port}/admin", timeout=5)
    assert missing.value.code == 404
    request = urllib.request.Request(
        f"http://127.0.0.1:{exporter.port}/metrics", data=b"x", method="POST"
    )
    with pytest.raises(urllib.error.HTTPError) as posted:
        urllib.request.urlopen(request, timeout=5)
    assert posted.value.code == 501


CLIENT_FAMILIES = {family.name for family in FAMILIES if family.name.startswith("rocketmq_client_")}


def members(samples: list[Sample], group: str) -> list[tuple[dict[str, str], float]]:
    """The group's `rocketmq_group_count` series with members (caddr set)."""
    return [
        (ls, v)
        for n, ls, v in samples
        if n == "rocketmq_group_count" and ls["group"] == group and ls["caddr"]
    ]


def test_online_members_and_their_rates(
    standalone: StandaloneProcess, exporter: Exporter, tmp_path: Path
) -> None:
    topic, group = unique("ExpLive"), unique("ExpLiveGroup")
    cli(standalone, tmp_path, "topic", "create", topic, "-r", "2", "-w", "2")
    consumer = subprocess.Popen(
        rmq_command(["consume", topic, "-g", group, "-n", standalone.namesrv_addr]),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    try:
        samples = exporter.wait_for(
            lambda s: (
                [v for _, v in members(s, group)] == [1]
                and value(s, "rocketmq_client_consumer_pull_tps", group=group, topic=topic)
                is not None
            ),
            "the online member and its rates",
        )
        ((member, _),) = members(samples, group)
        assert member["caddr"].startswith("127.0.0.1:")
        assert member["localaddr"] != ""
        rates = [
            (n, ls)
            for n, ls, _ in samples
            if n in CLIENT_FAMILIES and ls["group"] == group and ls["topic"] == topic
        ]
        assert {n for n, _ in rates} == CLIENT_FAMILIES
        assert {ls["clientId"] for _, ls in rates} == {member["localaddr"]}
        assert {ls["clientAddr"] for _, ls in rates} == {member["caddr"]}
        cli(standalone, tmp_path, "produce", topic, data=b"a\nb\nc\n")
        exporter.wait_for(
            lambda s: (
                value(s, "rocketmq_consumer_offset", topic=topic, group=group) == 3
                and value(
                    s, "rocketmq_group_diff", group=group, topic=topic, countOfOnlineConsumers="1"
                )
                == 0
            ),
            "the online member's progress",
        )
    finally:
        consumer.terminate()
        consumer.wait(15)
    exporter.wait_for(
        lambda s: (
            not members(s, group) and value(s, "rocketmq_group_count", group=group, caddr="") == 0
        ),
        "the member gone",
        timeout=60,
    )
