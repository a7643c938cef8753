"""`rmq broker-config`, `rmq namesrv-config` and `rmq kv` against rmq's own two-broker cluster
(tests/integration/mqadmin_cluster.py): every read checked in json and rendered as a table,
every change read back, and the failure paths (exit 1 or 2, one line on stderr)."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

from tests.cli_forkserver import run as cli_run
from tests.integration.mqadmin_cluster import CLUSTER, MqadminCluster
from tests.procs import rmq_command


def rmq(
    cluster: MqadminCluster, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """`rmq args... -n <namesrv>` with HOME set to the cluster's and no NAMESRV_ADDR."""
    env = {key: value for key, value in os.environ.items() if key != "NAMESRV_ADDR"}
    return cli_run(
        rmq_command([*args, "-n", cluster.namesrv_addr]),
        capture_output=True,
        text=True,
        timeout=60,
        env={**env, "HOME": str(cluster.home)},
        input=stdin if stdin is not None else "",
        check=False,
    )


def as_json(result: subprocess.CompletedProcess[str]) -> Any:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_broker_config_get_defaults_to_the_only_cluster(mqadmin_cluster: MqadminCluster) -> None:
    configs = as_json(rmq(mqadmin_cluster, "broker-config", "get", "-o", "json"))
    assert sorted(config["addr"] for config in configs) == sorted(
        mqadmin_cluster.broker_addrs.values()
    )
    names = {config["config"]["brokerName"] for config in configs}
    assert names == {"broker-a", "broker-b"}
    assert {config["config"]["brokerClusterName"] for config in configs} == {CLUSTER}
    table = rmq(mqadmin_cluster, "broker-config", "get", "--cluster", CLUSTER)
    assert table.returncode == 0, table.stderr
    assert table.stdout.splitlines()[0].split() == ["ADDR", "KEY", "VALUE"]
    assert "brokerClusterName" in table.stdout


def test_broker_config_set_changes_one_broker(mqadmin_cluster: MqadminCluster) -> None:
    addr = mqadmin_cluster.broker_addrs["broker-b"]
    dry = rmq(
        mqadmin_cluster, "broker-config", "set", "fetchNamesrvAddrByAddressServer", "false",
        "--broker", addr, "--dry-run", "-o", "json",
    )  # fmt: skip
    assert as_json(dry) == [
        {
            "request": "UPDATE_BROKER_CONFIG",
            "code": 25,
            "target": addr,
            "extFields": {},
            "body": "fetchNamesrvAddrByAddressServer=false\n",
        }
    ]
    assert "nothing was sent" in dry.stderr
    changed = rmq(
        mqadmin_cluster, "broker-config", "set", "maxMessageSize", "4194305",
        "--broker", addr, "-o", "json",
    )  # fmt: skip
    assert as_json(changed) == [{"addr": addr, "key": "maxMessageSize", "value": "4194305"}]
    (config,) = as_json(
        rmq(mqadmin_cluster, "broker-config", "get", "--broker", addr, "-o", "json")
    )
    assert config["config"]["maxMessageSize"] == "4194305"
    restored = rmq(
        mqadmin_cluster, "broker-config", "set", "maxMessageSize", "4194304", "--broker", addr
    )
    assert restored.returncode == 0, restored.stderr


def test_broker_config_failures(mqadmin_cluster: MqadminCluster) -> None:
    unknown = rmq(mqadmin_cluster, "broker-config", "get", "--cluster", "NoSuchCluster")
    assert unknown.returncode == 1
    assert unknown.stderr.splitlines() == [
        f"rmq: error: cluster 'NoSuchCluster' not found (clusters: {CLUSTER}); "
        "see 'rmq cluster list' for the clusters and brokers"
    ]
    both = rmq(mqadmin_cluster, "broker-config", "get", "--cluster", CLUSTER, "--broker", "x:1")
    assert both.returncode == 2
    assert "give at most one of --broker and --cluster" in both.stderr


def test_namesrv_config_get_and_set(mqadmin_cluster: MqadminCluster) -> None:
    (config,) = as_json(rmq(mqadmin_cluster, "namesrv-config", "get", "-o", "json"))
    assert config["addr"] == mqadmin_cluster.namesrv_addr
    assert "listenPort" in config["config"]
    old = config["config"]["orderMessageEnable"]
    new = "true" if old == "false" else "false"
    changed = rmq(mqadmin_cluster, "namesrv-config", "set", "orderMessageEnable", new, "-o", "json")
    assert as_json(changed) == [
        {"addr": mqadmin_cluster.namesrv_addr, "key": "orderMessageEnable", "value": new}
    ]
    (after,) = as_json(rmq(mqadmin_cluster, "namesrv-config", "get", "-o", "json"))
    assert after["config"]["orderMessageEnable"] == new
    rmq(mqadmin_cluster, "namesrv-config", "set", "orderMessageEnable", old)
    table = rmq(mqadmin_cluster, "namesrv-config", "get")
    assert table.returncode == 0, table.stderr
    assert table.stdout.splitlines()[0].split() == ["ADDR", "KEY", "VALUE"]


def test_kv_set_list_delete(mqadmin_cluster: MqadminCluster) -> None:
    namespace = "FriendlyKvNs"
    assert as_json(rmq(mqadmin_cluster, "kv", "list", namespace, "-o", "json")) == []
    dry = rmq(mqadmin_cluster, "kv", "set", namespace, "k1", "v1", "--dry-run", "-o", "json")
    assert as_json(dry)[0]["extFields"] == {"namespace": namespace, "key": "k1", "value": "v1"}
    assert as_json(rmq(mqadmin_cluster, "kv", "list", namespace, "-o", "json")) == []
    for key, value in (("k2", "v2"), ("k1", "v1")):
        result = rmq(mqadmin_cluster, "kv", "set", namespace, key, value)
        assert result.returncode == 0, result.stderr
    assert as_json(rmq(mqadmin_cluster, "kv", "list", namespace, "-o", "json")) == [
        {"namespace": namespace, "key": "k1", "value": "v1"},
        {"namespace": namespace, "key": "k2", "value": "v2"},
    ]
    table = rmq(mqadmin_cluster, "kv", "list", namespace)
    assert table.stdout.splitlines()[1].split() == [namespace, "k1", "v1"]
    refused = rmq(mqadmin_cluster, "kv", "delete", namespace, "k1")
    assert refused.returncode == 2
    assert refused.stderr.splitlines() == [
        f"rmq: error: refusing to delete KV config {namespace}/k1 from the name servers "
        "without confirmation; pass --yes"
    ]
    deleted = rmq(mqadmin_cluster, "kv", "delete", namespace, "k1", "--yes", "-o", "json")
    assert as_json(deleted) == [
        {"addr": mqadmin_cluster.namesrv_addr, "namespace": namespace, "key": "k1"}
    ]
    assert as_json(rmq(mqadmin_cluster, "kv", "list", namespace, "-o", "json")) == [
        {"namespace": namespace, "key": "k2", "value": "v2"}
    ]
