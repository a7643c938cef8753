"""`rmq cluster up` without servers: the files of each layout (`plan_cluster`), `--dry-run`,
and the usage errors (a file in DIR that differs, a malformed -p)."""

from __future__ import annotations

import random
import socket
from pathlib import Path

import pytest

from rmq.cli.cluster_layouts import LAYOUTS, parse_property, plan_cluster
from rmq.common.config import build_broker_configs, build_namesrv_configs, load_properties_file
from tests.unit.cli.conftest import RunRmq


def _keys(text: str) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in text.splitlines() if line and line[0] != "#")
    return {key: value for key, value in pairs}


@pytest.mark.parametrize(
    ("layout", "brokers"),
    [
        (
            "2m-2s-sync",
            [
                ("broker-a", "broker-a", "0", "SYNC_MASTER", 10911),
                ("broker-a-s", "broker-a", "1", "SLAVE", 11011),
                ("broker-b", "broker-b", "0", "SYNC_MASTER", 10921),
                ("broker-b-s", "broker-b", "1", "SLAVE", 11021),
            ],
        ),
        (
            "2m-2s-async",
            [
                ("broker-a", "broker-a", "0", "ASYNC_MASTER", 10911),
                ("broker-a-s", "broker-a", "1", "SLAVE", 11011),
                ("broker-b", "broker-b", "0", "ASYNC_MASTER", 10921),
                ("broker-b-s", "broker-b", "1", "SLAVE", 11021),
            ],
        ),
        (
            "2m-noslave",
            [
                ("broker-a", "broker-a", "0", "ASYNC_MASTER", 10911),
                ("broker-b", "broker-b", "0", "ASYNC_MASTER", 10921),
            ],
        ),
    ],
)
def test_each_layout_keeps_apaches_keys_and_puts_ports_and_stores_apart(
    layout: str, brokers: list[tuple[str, str, str, str, int]], tmp_path: Path
) -> None:
    plan = plan_cluster(layout, tmp_path, namesrv_port=9876, base_port=10911)
    assert _keys(plan.namesrv.text)["listenPort"] == "9876"
    seen = []
    for server, (name, broker_name, broker_id, role, port) in zip(
        plan.brokers, brokers, strict=True
    ):
        keys = _keys(server.text)
        assert server.config == tmp_path / f"{name}.properties"
        expected = {
            "brokerClusterName": "DefaultCluster",
            "brokerName": broker_name,
            "brokerId": broker_id,
            "brokerRole": role,
            "deleteWhen": "04",
            "fileReservedTime": "48",
            "flushDiskType": "ASYNC_FLUSH",
            "namesrvAddr": "127.0.0.1:9876",
            "listenPort": str(port),
        }
        assert {key: keys.get(key) for key in expected} == expected
        assert keys["storePathRootDir"] == str(tmp_path / "store" / name)
        seen += [port for port, _ in server.ports]
    assert len(set(seen)) == len(seen)
    assert len(LAYOUTS[layout]) == len(brokers)


def test_the_dledger_layout_is_one_group_of_three_with_dledger_ports_beside_its_own(
    tmp_path: Path,
) -> None:
    plan = plan_cluster("dledger", tmp_path, namesrv_port=9876, base_port=10911)
    peers = "n0-127.0.0.1:10913;n1-127.0.0.1:11013;n2-127.0.0.1:11113"
    seen = []
    for i, server in enumerate(plan.brokers):
        server.config.write_text(server.text, encoding="utf-8")
        keys = _keys(server.text)
        assert server.name == f"broker-a-n{i}" and "brokerId" not in keys
        assert "brokerRole" not in keys
        configs, unknown = build_broker_configs(load_properties_file(server.config))
        assert unknown == []
        assert configs.server.listen_port == 10911 + 100 * i
        assert configs.broker.broker_name == "broker-a"
        assert configs.store.enable_d_leger_commit_log is True
        assert configs.store.d_leger_peers == peers
        assert configs.store.d_leger_self_id == f"n{i}"
        assert configs.store.d_leger_group == "broker-a"
        assert configs.store.store_path_root_dir == str(tmp_path / "store" / f"broker-a-n{i}")
        seen += [port for port, _ in server.ports]
    assert sorted(seen) == sorted(p + 10911 + 100 * i for i in range(3) for p in (-2, 0, 2))


def test_the_files_parse_as_the_servers_read_them(tmp_path: Path) -> None:
    plan = plan_cluster(
        "2m-2s-sync",
        tmp_path,
        namesrv_port=19876,
        base_port=20911,
        properties=[("slaveReadEnable", "true")],
    )
    for server in plan.servers:
        server.config.write_text(server.text, encoding="utf-8")
    namesrv, unknown = build_namesrv_configs(load_properties_file(plan.namesrv.config))
    assert (namesrv.server.listen_port, unknown) == (19876, [])
    slave = plan.brokers[1]
    configs, unknown = build_broker_configs(load_properties_file(slave.config))
    assert unknown == []
    assert configs.server.listen_port == 21011
    assert configs.broker.broker_id == 1
    assert configs.broker.slave_read_enable is True
    assert configs.store.store_path_root_dir == str(tmp_path / "store" / "broker-a-s")


def _free_ports(layout: str, directory: Path) -> tuple[str, ...]:
    """`--namesrv-port` and `--base-port` options whose every planned port is free now."""
    rng = random.Random()
    while True:
        namesrv, base = rng.randrange(20000, 30000), rng.randrange(30000, 60000)
        plan = plan_cluster(layout, directory, namesrv_port=namesrv, base_port=base)
        if all(_bindable(port) for server in plan.servers for port, _ in server.ports):
            return ("--namesrv-port", str(namesrv), "--base-port", str(base))


def _bindable(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def test_dry_run_prints_the_files_and_commands_and_writes_nothing(
    rmq: RunRmq, tmp_path: Path
) -> None:
    directory = tmp_path / "c"
    ports = _free_ports("2m-2s-async", directory)
    result = rmq("cluster", "up", "2m-2s-async", "--dir", str(directory), *ports, "--dry-run")
    assert result.returncode == 0, result.stderr
    plan = plan_cluster(
        "2m-2s-async", directory, namesrv_port=int(ports[1]), base_port=int(ports[3])
    )
    for server in plan.servers:
        assert f"# {server.config}\n{server.text}" in result.stdout
        assert f"# would run: rmq {server.command} -c {server.config}" in result.stdout
    assert result.stderr == "dry run: nothing was written or started\n"
    assert not directory.exists()


def test_a_file_that_differs_needs_force_and_a_bad_property_is_a_usage_error(
    rmq: RunRmq, tmp_path: Path
) -> None:
    directory = tmp_path / "c"
    directory.mkdir()
    edited = directory / "broker-b.properties"
    edited.write_text("brokerName=mine\n", encoding="utf-8")
    result = rmq("cluster", "up", "2m-noslave", "--dir", str(directory))
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(f"rmq: error: {edited} exists and differs")
    assert "pass --force" in result.stderr
    assert edited.read_text(encoding="utf-8") == "brokerName=mine\n"

    bad = rmq("cluster", "up", "2m-noslave", "--dir", str(directory), "-p", "noequals")
    assert bad.returncode == 2
    assert "expected KEY=VALUE, got 'noequals'" in bad.stderr


@pytest.mark.parametrize("dry_run", [False, True])
def test_the_dry_run_fails_where_the_real_run_does(
    rmq: RunRmq, tmp_path: Path, dry_run: bool
) -> None:
    """A setting the servers refuse, a file that differs, a directory that cannot be made and
    a port in use stop both runs alike, before anything is written or started."""
    directory = tmp_path / "c"
    ports = _free_ports("2m-noslave", directory)
    args = ("cluster", "up", "2m-noslave", *ports, *(["--dry-run"] if dry_run else []))

    bad = rmq(*args, "--dir", str(directory), "-p", "brokerPermission=99")
    assert bad.returncode == 2, bad.stderr
    assert bad.stderr.startswith(f"rmq: error: {directory / 'broker-a.properties'}: ")
    assert "brokerPermission" in bad.stderr and not directory.exists()

    directory.mkdir()
    edited = directory / "broker-b.properties"
    edited.write_text("brokerName=mine\n", encoding="utf-8")
    differs = rmq(*args, "--dir", str(directory))
    assert differs.returncode == 2 and "exists and differs" in differs.stderr, differs.stderr
    edited.unlink()

    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    unwritable = rmq(*args, "--dir", str(blocker / "c"))
    assert unwritable.returncode == 1
    assert f"cannot write the cluster into {blocker / 'c'}: {blocker} is not a directory" in (
        unwritable.stderr
    )

    plan = plan_cluster(
        "2m-noslave", directory, namesrv_port=int(ports[1]), base_port=int(ports[3])
    )
    port, what = plan.brokers[1].ports[0]
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        busy = rmq(*args, "--dir", str(directory))
    assert busy.returncode == 1
    assert busy.stderr.startswith(f"rmq: error: port {port}, {what}, is not free")
    assert list(directory.iterdir()) == []


def test_parse_property() -> None:
    assert parse_property(" slaveReadEnable = true ") == ("slaveReadEnable", "true")
    assert parse_property("a=b=c") == ("a", "b=c")
    for text in ("novalue", "=x", "a b=c"):
        with pytest.raises(ValueError, match="expected KEY=VALUE"):
            parse_property(text)
