"""`rmq producer list` against rmq's own two-broker cluster with a connected `rmq produce`
(the `live_producer` fixture of test_mqadmin_consumer.py): the row in json, the table, and
the failure paths."""

from __future__ import annotations

from tests.integration.mqadmin_cluster import BROKERS, CLUSTER, MqadminCluster
from tests.integration.test_friendly_config import as_json, rmq
from tests.integration.test_mqadmin_consumer import PRODUCER_GROUP, live_producer

__all__ = ["live_producer"]


def test_producer_list(mqadmin_cluster: MqadminCluster, live_producer: str) -> None:
    rows = as_json(rmq(mqadmin_cluster, "producer", "list", "-o", "json"))
    row = next(row for row in rows if row["group"] == PRODUCER_GROUP)
    assert row["clientId"] == live_producer
    assert row["language"] == "JAVA"
    assert row["version"] == "V4_9_8"
    assert sorted(row["brokers"]) == sorted(BROKERS)
    assert row["lastUpdateTimestamp"] > 0
    one = as_json(
        rmq(
            mqadmin_cluster, "producer", "list", "-g", PRODUCER_GROUP,
            "--broker", mqadmin_cluster.broker_addrs["broker-a"], "-o", "json",
        )
    )  # fmt: skip
    assert [(row["group"], row["clientId"]) for row in one] == [(PRODUCER_GROUP, live_producer)]
    table = rmq(mqadmin_cluster, "producer", "list", "--cluster", CLUSTER, "-g", PRODUCER_GROUP)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["GROUP", "CLIENT", "ID", "REMOTE", "IP", "LANGUAGE", "VERSION"]
    assert lines[1].split()[:2] == [PRODUCER_GROUP, live_producer]


def test_producer_list_failures(mqadmin_cluster: MqadminCluster) -> None:
    done = rmq(mqadmin_cluster, "producer", "list", "-g", "NoSuchProducerGroup")
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "rmq: error: no producer of group 'NoSuchProducerGroup' is connected to the brokers; "
        "check the name with 'rmq producer list'"
    ]
    done = rmq(mqadmin_cluster, "producer", "list", "--cluster", "NoSuchCluster")
    assert done.returncode == 1
    assert "NoSuchCluster" in done.stderr and len(done.stderr.splitlines()) == 1
