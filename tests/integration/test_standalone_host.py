"""`rmq standalone` is local by default: both servers bind 127.0.0.1 and the broker advertises
it, `--host` opens it up; a busy port names the one option that moves it."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from rmq.common.configobjects import local_address
from tests.procs import (
    LOOPBACK,
    SMALL_STORE_PROPS,
    RmqProcesses,
    broker_ports,
    free_broker_port,
    free_port,
    registered_brokers,
    run_rmq_cli,
    wait_registered,
    write_properties,
)

LISTEN = "0A"


def listening_addresses(ports: set[int]) -> dict[int, set[str]]:
    """Port -> the local IPv4 addresses a socket LISTENs on it, from /proc/net/tcp."""
    found: dict[int, set[str]] = {}
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        address, port_hex = fields[1].split(":")
        port = int(port_hex, 16)
        if fields[3] == LISTEN and port in ports:
            ip = socket.inet_ntoa(int(address, 16).to_bytes(4, "little"))
            found.setdefault(port, set()).add(ip)
    return found


def start(
    rmq_processes: RmqProcesses, name: str, *args: str, advertised: str = LOOPBACK
) -> tuple[int, int]:
    """`rmq standalone` with no address settings in its -c file; (namesrv port, broker port)
    once the broker is registered with its `advertised` address."""
    broker_port = free_broker_port()
    namesrv_port = free_port(avoid=broker_ports(broker_port))
    conf = write_properties(
        rmq_processes.root / f"{name}.conf", {"brokerName": name, **SMALL_STORE_PROPS}
    )
    argv = ["standalone", "-c", str(conf), "--namesrv-port", str(namesrv_port)]
    process = rmq_processes.start(
        name, [*argv, "--broker-port", str(broker_port), *args], port=broker_port
    )
    wait_registered(f"{LOOPBACK}:{namesrv_port}", f"{advertised}:{broker_port}", 20, process)
    return namesrv_port, broker_port


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="needs /proc/net/tcp")
def test_standalone_binds_and_advertises_loopback_by_default(
    rmq_processes: RmqProcesses,
) -> None:
    namesrv_port, broker_port = start(rmq_processes, "local")
    ports = {namesrv_port, *broker_ports(broker_port)} - {broker_port - 1}

    assert listening_addresses(ports) == {port: {LOOPBACK} for port in ports}
    namesrv_addr = f"{LOOPBACK}:{namesrv_port}"
    assert registered_brokers(namesrv_addr) == {0: f"{LOOPBACK}:{broker_port}"}
    done = run_rmq_cli(
        ["topic", "route", "TBW102", "-n", namesrv_addr, "-o", "json"], home=rmq_processes.root
    )
    assert done.returncode == 0, done.stderr
    assert f'"0": "{LOOPBACK}:{broker_port}"' in done.stdout.replace("\n", "").replace("  ", "")


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="needs /proc/net/tcp")
def test_host_wildcard_binds_all_and_advertises_the_outward_address(
    rmq_processes: RmqProcesses,
) -> None:
    namesrv_port, broker_port = start(
        rmq_processes, "open", "--host", "0.0.0.0", advertised=local_address()
    )
    ports = {namesrv_port, *broker_ports(broker_port)} - {broker_port - 1}

    assert listening_addresses(ports) == {port: {"0.0.0.0"} for port in ports}
    advertised = registered_brokers(f"{LOOPBACK}:{namesrv_port}")
    assert advertised == {0: f"{local_address()}:{broker_port}"}


def refused(tmp_path: Path, taken: int, namesrv_port: int, broker_port: int) -> str:
    """The one error line of a standalone whose port `taken` is in use."""
    ports = ["--namesrv-port", str(namesrv_port), "--broker-port", str(broker_port)]
    with socket.socket() as holder:
        holder.bind((LOOPBACK, taken))
        holder.listen()
        done = run_rmq_cli(
            ["standalone", *ports, "--store", str(tmp_path / "store")], home=tmp_path
        )
    assert done.returncode == 1, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("rmq: error:")]
    assert len(errors) == 1, done.stderr
    return errors[0]


@pytest.mark.parametrize("which", ["namesrv", "broker", "fast", "ha"])
def test_a_busy_port_names_only_its_option(tmp_path: Path, which: str) -> None:
    broker_port = free_broker_port()
    namesrv_port = free_port(avoid=broker_ports(broker_port))
    taken = {
        "namesrv": namesrv_port,
        "broker": broker_port,
        "fast": broker_port - 2,
        "ha": broker_port + 1,
    }[which]
    error = refused(tmp_path, taken, namesrv_port, broker_port)

    assert f"cannot listen on {LOOPBACK}:{taken}" in error
    wanted, other = ("--namesrv-port", "--broker-port")
    if which != "namesrv":
        wanted, other = other, wanted
    assert f"choose another with {wanted}" in error
    assert other not in error and "listenPort" not in error.split(";")[1]


def test_a_namesrv_port_among_the_broker_ports_is_a_usage_error(tmp_path: Path) -> None:
    broker_port = free_broker_port()
    ports = ["--namesrv-port", str(broker_port + 1), "--broker-port", str(broker_port)]
    done = run_rmq_cli(["standalone", *ports], home=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith(f"rmq: error: --namesrv-port {broker_port + 1} is one of")
