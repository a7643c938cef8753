"""`rmq cluster up` as a test runs it: a real process on free loopback ports.

`start_cluster(layout, root)` picks a name server port and a base port whose every broker
port (listenPort, - 2, + 1, for each broker of the layout) is free, starts
`python -m rmq cluster up LAYOUT --dir ROOT/cluster -o json` with small store files, and
waits until it prints the cluster (its JSON rows on stdout: every broker registered).
`ClusterUp` finds its children by their config file (/proc), interrupts it (SIGINT or
SIGTERM) and returns the exit code; `kill_all` is the fixture's safety net.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from rmq.cli.cluster_layouts import plan_cluster
from tests.ports import claim_ports
from tests.procs import LOOPBACK, SMALL_STORE_PROPS, free_port, rmq_command

TEST_PROPS: Mapping[str, object] = {
    **SMALL_STORE_PROPS,
    "haSendHeartbeatInterval": 1000,
}
"""Small store files and a one-second slave heartbeat (Apache: 5 s)."""


@dataclass
class ClusterUp:
    """A running `rmq cluster up`."""

    layout: str
    directory: Path
    popen: subprocess.Popen[bytes]
    namesrv_port: int
    base_port: int
    stdout_path: Path
    stderr_path: Path
    rows: list[dict[str, Any]]

    @property
    def namesrv_addr(self) -> str:
        return f"{LOOPBACK}:{self.namesrv_port}"

    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")

    def addr(self, name: str) -> str:
        """The address of broker `name` (broker-a, broker-a-s, ...)."""
        return next(str(row["addr"]) for row in self.rows if Path(row["config"]).stem == name)

    def child_pids(self) -> dict[str, int]:
        """Config file stem (namesrv, broker-a, ...) -> pid of the child running it."""
        pids = {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            for arg in argv:
                path = Path(os.fsdecode(arg))
                if path.parent == self.directory and path.suffix == ".properties":
                    pids[path.stem] = int(entry.name)
        return pids

    def signal(self, signum: int, timeout: float = 60.0) -> int:
        """Send `signum` to `rmq cluster up` and return its exit code."""
        self.popen.send_signal(signum)
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill_all()
            raise AssertionError(
                f"cluster up did not stop within {timeout}s\n{self.stderr()}"
            ) from None

    def kill_all(self) -> None:
        for pid in self.child_pids().values():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if self.popen.poll() is None:
            self.popen.kill()
        self.popen.wait()


def free_cluster_ports(layout: str) -> tuple[int, int]:
    """(namesrv port, base port) with every port of the layout free right now and claimed
    by this process (tests/ports.py), so no other worker is handed one of them."""
    for _ in range(200):
        namesrv_port = free_port()
        base_port = free_port()
        if not 1026 <= base_port <= 64000:
            continue
        plan = plan_cluster(layout, Path("/unused"), namesrv_port=namesrv_port, base_port=base_port)
        ports = [port for server in plan.servers for port, _ in server.ports]
        if len(set(ports)) == len(ports) and claim_ports(ports):
            return namesrv_port, base_port
    raise AssertionError(f"no free ports for {layout} in 200 tries")


def start_cluster(
    layout: str,
    root: Path,
    *,
    props: Mapping[str, object] | None = None,
    options: Sequence[str] = (),
    timeout: float = 90.0,
) -> ClusterUp:
    """`rmq cluster up LAYOUT [options]` on free ports in `root/cluster`, once every broker
    is up; `props` are added to every broker's file."""
    namesrv_port, base_port = free_cluster_ports(layout)
    directory = root / "cluster"
    stdout_path, stderr_path = root / "cluster-up.out", root / "cluster-up.err"
    settings = [f"{key}={value}" for key, value in {**TEST_PROPS, **(props or {})}.items()]
    args = ["cluster", "up", layout, "--dir", str(directory), "-o", "json"]
    args += ["--namesrv-port", str(namesrv_port), "--base-port", str(base_port)]
    args += [arg for setting in settings for arg in ("-p", setting)]
    args += options
    home = root / "home"
    home.mkdir(exist_ok=True)
    env = {key: value for key, value in os.environ.items() if not key.startswith("RMQ_")}
    with stdout_path.open("wb") as out, stderr_path.open("wb") as err:
        popen = subprocess.Popen(
            rmq_command(args),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            env={**env, "HOME": str(home)},
        )
    cluster = ClusterUp(
        layout, directory, popen, namesrv_port, base_port, stdout_path, stderr_path, []
    )
    deadline = time.monotonic() + timeout
    while True:
        try:
            cluster.rows = json.loads(stdout_path.read_text(encoding="utf-8"))
            return cluster
        except ValueError:
            pass
        if popen.poll() is not None:
            raise AssertionError(f"cluster up exited with {popen.returncode}\n{cluster.stderr()}")
        if time.monotonic() > deadline:
            cluster.kill_all()
            raise AssertionError(f"cluster up not ready within {timeout}s\n{cluster.stderr()}")
        time.sleep(0.1)


@pytest.fixture
def clusters(tmp_path: Path) -> Iterator[list[ClusterUp]]:
    """The clusters a test started (append them); killed at the end if still running."""
    started: list[ClusterUp] = []
    yield started
    for cluster in started:
        cluster.kill_all()
