"""`rmq exporter` against Apache's cluster and against rmq's: after the same produce and
consume, /metrics has the same series names and label names from both (the values, and
label values such as addresses and versions, legitimately differ).

The put latency buckets (`rocketmq_brokeruntime_pmdt_*`) are left out of the comparison: both
brokers report `putMessageDistributeTime` as "null" for their first minute, and the exporter
writes those series only once the broker has figures.
"""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request
from typing import Any

import pytest

from rmq.console.metrics import names_and_labels
from tests.conformance.clusters import Cluster
from tests.conformance.test_rmq_tools import rmq_cli
from tests.ports import free_port

SECTION = "rmq exporter against both clusters"
CASE = "/metrics series names and label sets after the same produce and consume"
TOPIC = "ConfExporter"
GROUP = "ConfExporterGroup"
PMDT = "rocketmq_brokeruntime_pmdt_"
EXPECTED = {
    "rocketmq_broker_tps",
    "rocketmq_broker_qps",
    "rocketmq_producer_offset",
    "rocketmq_topic_retry_offset",
    "rocketmq_producer_tps",
    "rocketmq_producer_message_size",
    "rocketmq_consumer_tps",
    "rocketmq_consumer_message_size",
    "rocketmq_consumer_offset",
    "rocketmq_group_diff",
    "rocketmq_group_count",
    "rocketmq_group_get_latency_by_storetime",
    "rocketmq_brokeruntime_msg_put_total_today_now",
    "rocketmq_brokeruntime_put_tps10",
    "rocketmq_brokeruntime_commitlogdir_capacity_total",
}
"""Series each cluster must show for the comparison to mean something."""


def _series(cluster: Cluster) -> Any:
    rmq_cli(cluster, "topic", "create", TOPIC, "-r", "2", "-w", "2")
    rmq_cli(cluster, "produce", TOPIC, stdin="".join(f"m{i}\n" for i in range(10)))
    rmq_cli(cluster, "consume", TOPIC, "-g", GROUP, "--from", "first", "-c", "4")
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rmq",
            "exporter",
            "-n",
            cluster.namesrv_addr,
            "--port",
            str(port),
            "--interval",
            "1s",
        ],
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as got:
                    text = got.read().decode()
            except OSError:
                text = ""
            series = names_and_labels(text)
            names = {name for name, _ in series}
            if {"rocketmq_group_diff", "rocketmq_group_get_latency_by_storetime"} <= names:
                break
            assert time.monotonic() < deadline, f"no group series from {cluster.kind}:\n{text}"
            time.sleep(0.5)
    finally:
        process.terminate()
        process.wait(15)
    return sorted(
        (name, labels)
        for name, labels in series
        if not name.startswith("rocketmq_brokeruntime_pmdt")
    )


@pytest.mark.parametrize(
    "kind",
    [
        pytest.param(kind, marks=pytest.mark.matrix(SECTION, CASE, label), id=f"exporter-{kind}")
        for kind, label in (("apache", "Apache"), ("rmq", "rmq"))
    ],
)
def test_exporter_series(kind: str, request: pytest.FixtureRequest, differential: Any) -> None:
    expected = differential.apache_result("tools:exporter", _series)
    if kind == "apache":
        return
    assert _series(request.getfixturevalue("rmq")) == expected
