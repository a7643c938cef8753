"""`rmq cluster up LAYOUT`: a local cluster from Apache's layouts, in the foreground.

    rmq cluster up 2m-2s-sync|2m-2s-async|2m-noslave|dledger [--dir DIR] [--namesrv-port 9876]
                   [--base-port 10911] [-p KEY=VALUE ...] [--keep-going] [--force]
                   [--dry-run]

writes `namesrv.properties` and one `<broker>.properties` per broker into DIR (default
`./rmq-<layout>`; `rmq.cli.cluster_layouts` says what the files hold), checks that every
port is free, starts `rmq namesrv -c` and `rmq broker -c` for each file as child processes
(logs in DIR/logs), the masters before the slaves (a slave learns its master's HA address
when it registers), waits until the name server lists every broker under its id and every
master has its slave connected, and prints the cluster: one row per broker with its id,
role, address and file.  Ctrl-C or SIGTERM stops the brokers and then the name server (exit
130 after Ctrl-C, 0 after SIGTERM); a child that dies is reported, the others are stopped,
and the command exits 1 (with `--keep-going`, once the cluster is up, the others keep
running: kill a master to watch a failover).  In the `dledger` layout every broker starts at
once and the cluster is up when all three are registered and one of them (the elected
leader) as master; the printed ids and roles are those the election gave.

Files already in DIR are reused when they are what the command would write (the stores
under DIR/store stay, so a cluster stopped and started again keeps its messages); a file
that differs stops the command unless `--force` rewrites it.  `--dry-run` prints the files
and the commands and starts nothing, after the same checks as the real run (a setting the
servers would refuse, a file that differs, a directory that cannot be written, a port in
use), so it fails where the real run would.  Its app's one command joins `rmq cluster`
(`rmq.cli.main.VERBS`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import time
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from rmq.cli.errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, RmqError, option_value
from rmq.cli.main import command_app
from rmq.cli.output import OutputFormat, OutputOption
from rmq.cli.topic import show

if TYPE_CHECKING:
    from rmq.cli.cluster_layouts import ClusterPlan, PlannedServer
    from rmq.cli.supervise import Child, Supervisor
    from rmq.client.admin import AdminClient

app = command_app()


class Layout(StrEnum):
    SYNC = "2m-2s-sync"
    ASYNC = "2m-2s-async"
    NOSLAVE = "2m-noslave"
    DLEDGER = "dledger"


COLUMNS = ("cluster", "brokerName", "brokerId", "role", "addr", "config")


@app.command("up")
def up(
    ctx: typer.Context,
    layout: Annotated[
        Layout,
        typer.Argument(
            help="2m-2s-sync: two SYNC_MASTERs with a slave each; 2m-2s-async: two "
            "ASYNC_MASTERs with a slave each; 2m-noslave: two masters; dledger: one "
            "DLedger group of three brokers that elects its master.",
            show_default=False,
        ),
    ],
    directory: Annotated[
        Path | None,
        typer.Option(
            "--dir",
            metavar="DIR",
            help="Where the files, stores and logs go. Default: ./rmq-LAYOUT.",
            file_okay=False,
            show_default=False,
        ),
    ] = None,
    namesrv_port: Annotated[
        int, typer.Option("--namesrv-port", min=1, max=65535, help="Name server port.")
    ] = 9876,
    base_port: Annotated[
        int,
        typer.Option(
            "--base-port",
            min=3,
            max=65000,
            help="broker-a's listenPort; broker-b listens on BASE+10, the slaves 100 above "
            "their masters (dledger: its nodes at BASE, +100, +200). Each broker also uses "
            "its port - 2 and + 1 (dledger: + 2, its DLedger port).",
        ),
    ] = 10911,
    properties: Annotated[
        list[str] | None,
        typer.Option(
            "--property",
            "-p",
            metavar="KEY=VALUE",
            help="Add this setting to every broker's file (repeatable), e.g. slaveReadEnable=true.",
            show_default=False,
        ),
    ] = None,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout", min=1, metavar="SECONDS", help="How long to wait for the brokers."
        ),
    ] = 60.0,
    keep_going: Annotated[
        bool,
        typer.Option(
            "--keep-going",
            help="Once the cluster is up, a server that dies (a master killed to try a "
            "failover) is reported and the others keep running.",
        ),
    ] = False,
    force: Annotated[
        bool,
        typer.Option("--force", help="Rewrite files in DIR that differ from the layout's."),
    ] = False,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Check as the real run does, print the files and commands; write and start "
            "nothing.",
        ),
    ] = False,
    output: OutputOption = None,
) -> int:
    """Start a local cluster (name server and brokers); stop it with Ctrl-C.

    LAYOUT is one of Apache's: 2m-2s-sync (two SYNC_MASTERs, a slave each), 2m-2s-async
    (two ASYNC_MASTERs, a slave each) or 2m-noslave (two masters), or rmq's dledger (one
    DLedger group of three brokers, DLedger ports at listenPort + 2).  Writes it as
    .properties files into DIR, with ports and stores apart on this machine, starts
    'rmq namesrv -c' and 'rmq broker -c' for them, waits until every broker is registered
    and prints the cluster.  Each file also runs on its own:
    'rmq broker -c DIR/broker-a.properties'.
    """
    from rmq.cli.cluster_layouts import parse_property, plan_cluster
    from rmq.cli.main import CliState
    from rmq.cli.supervise import Interrupted, Supervisor

    extra = [option_value(parse_property, text, "--property") for text in properties or ()]
    root = directory if directory is not None else Path(f"rmq-{layout.value}")
    plan = plan_cluster(
        layout.value,
        root,
        namesrv_port=namesrv_port,
        base_port=base_port,
        properties=[pair for pair in extra if pair is not None],
    )
    # the dry run stops where the real run would, before anything is written or started
    _check_configs(plan)
    if not force:
        _check_files(plan)
    _check_directory(plan.directory)
    _check_ports(plan)
    if dry_run:
        _print_plan(plan)
        return EXIT_OK
    plan.directory.mkdir(parents=True, exist_ok=True)
    for server in plan.servers:
        server.config.write_text(server.text, encoding="utf-8")
    state = ctx.find_object(CliState)
    supervisor = Supervisor(debug=state is not None and state.debug)
    try:
        with supervisor:
            deadline = time.monotonic() + timeout
            children: dict[str, Child] = {}
            # Masters first: a slave learns its master's HA address when it registers.
            for wave in (
                [plan.namesrv, *(b for b in plan.brokers if b.spec and b.spec.is_master)],
                [b for b in plan.brokers if b.spec and not b.spec.is_master],
            ):
                for server in wave:
                    children[server.name] = supervisor.start(
                        server.name, (server.command, "-c", str(server.config)), server.log
                    )
                _wait_ready(plan, [children[name] for name in children], supervisor, deadline)
            _show_cluster(plan, output, _registered_ids(plan))
            _note(
                f"cluster up: name server {plan.namesrv.addr}, files and logs in "
                f"{plan.directory}; Ctrl-C stops it"
            )
            supervisor.keep_going = keep_going
            try:
                supervisor.wait()
            finally:
                _note("stopping the brokers, then the name server")
                supervisor.stop([children[broker.name] for broker in plan.brokers])
                supervisor.stop([children[plan.namesrv.name]])
    except Interrupted as stop:
        return EXIT_INTERRUPTED if stop.signum == signal.SIGINT else EXIT_OK
    return EXIT_OK


def _print_plan(plan: ClusterPlan) -> None:
    for server in plan.servers:
        typer.echo(f"# {server.config}")
        typer.echo(server.text)
    for server in plan.servers:
        typer.echo(f"# would run: rmq {server.command} -c {server.config} > {server.log}")
    typer.echo("dry run: nothing was written or started", err=True)


def _check_configs(plan: ClusterPlan) -> None:
    """RmqError (exit 2) for a file the server would refuse to start with (a bad -p value),
    checked as `rmq namesrv -c` / `rmq broker -c` read it."""
    from rmq.common import javaprops
    from rmq.common.config import ConfigError, build_broker_configs, build_namesrv_configs

    for server in plan.servers:
        build = build_namesrv_configs if server is plan.namesrv else build_broker_configs
        try:
            build(javaprops.loads(server.text), config_file=str(server.config))
        except ConfigError as exc:
            raise RmqError(str(exc), "fix the -p/--property value", EXIT_USAGE) from None


def _check_directory(directory: Path) -> None:
    """RmqError when DIR cannot be made or written to (its nearest existing ancestor is not
    a writable directory)."""
    existing = directory
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        what = "is not a directory" if not existing.is_dir() else "is not writable"
        raise RmqError(
            f"cannot write the cluster into {directory}: {existing} {what}", "choose another --dir"
        )


def _check_ports(plan: ClusterPlan) -> None:
    """RmqError naming the first port something listens on."""
    for server in plan.servers:
        for port, what in server.ports:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    probe.bind(("127.0.0.1", port))
                except OSError as exc:
                    hint = (
                        "choose another with --namesrv-port"
                        if server is plan.namesrv
                        else "choose another --base-port"
                    )
                    raise RmqError(
                        f"port {port}, {what}, is not free ({exc.strerror}): is a cluster "
                        "already running?",
                        hint,
                    ) from None


def _check_files(plan: ClusterPlan) -> None:
    """RmqError (exit 2) for a file in DIR that differs from what the plan writes."""
    for server in plan.servers:
        if server.config.exists() and server.config.read_text(encoding="utf-8") != server.text:
            raise RmqError(
                f"{server.config} exists and differs from the {plan.layout} layout with "
                "these options",
                "pass --force to rewrite the files (the stores stay), or choose another --dir",
                EXIT_USAGE,
            )


def _wait_ready(
    plan: ClusterPlan, started: list[Child], supervisor: Supervisor, deadline: float
) -> None:
    """Poll until the name server lists every started broker at its address under its id
    and every started master has its started slaves connected (GET_BROKER_RUNTIME_INFO's
    haConnectionCount)."""
    from rmq.cli.topic import run_admin

    names = {child.name for child in started}
    brokers = [broker for broker in plan.brokers if broker.name in names and broker.spec]
    waiting = ["the name server"]
    while True:
        supervisor.check()
        with contextlib.suppress(RmqError, OSError):  # not listening yet
            waiting = run_admin(plan.namesrv.addr, lambda admin: _not_ready(admin, brokers))
        if not waiting:
            return
        if time.monotonic() > deadline:
            raise RmqError(
                f"the cluster is not up in time: waiting for {', '.join(waiting)}",
                f"see the logs in {plan.directory / 'logs'}, or give more --timeout",
            )
        time.sleep(0.2)


async def _not_ready(admin: AdminClient, brokers: list[PlannedServer]) -> list[str]:
    """What of `brokers` is not up yet, in words (empty when all are)."""
    info = await admin.cluster_info()
    registered = {
        (name, broker_id): addr
        for name, data in info.broker_addr_table.items()
        for broker_id, addr in data.broker_addrs.items()
    }
    waiting = [
        f"{broker.name} to register"
        for broker in brokers
        if broker.spec
        and broker.spec.dledger_id is None
        and registered.get((broker.spec.broker_name, broker.spec.broker_id)) != broker.addr
    ]
    nodes = [b for b in brokers if b.spec is not None and b.spec.dledger_id is not None]
    addrs = set(registered.values())
    waiting += [f"{node.name} to register" for node in nodes if node.addr not in addrs]
    groups = {node.spec.broker_name for node in nodes if node.spec is not None}
    waiting += [
        f"{group} to elect its master" for group in sorted(groups) if (group, 0) not in registered
    ]
    for master in brokers:
        if waiting or master.spec is None or not master.spec.is_master:
            continue
        slaves = [
            b
            for b in brokers
            if b.spec and not b.spec.is_master and b.spec.broker_name == master.spec.broker_name
        ]
        if slaves:
            runtime = await admin.broker_runtime_info(master.addr)
            if int(runtime.get("haConnectionCount", "0")) < len(slaves):
                waiting.append(f"{master.name}'s slave to connect")
    return waiting


def _registered_ids(plan: ClusterPlan) -> dict[str, int]:
    """Broker address -> the id it is registered under (for the dledger layout, whose ids
    follow the election); empty for the other layouts."""
    from rmq.cli.topic import run_admin

    if not any(b.spec is not None and b.spec.dledger_id is not None for b in plan.brokers):
        return {}

    async def ids(admin: AdminClient) -> dict[str, int]:
        info = await admin.cluster_info()
        return {
            addr: broker_id
            for data in info.broker_addr_table.values()
            for broker_id, addr in data.broker_addrs.items()
        }

    return run_admin(plan.namesrv.addr, ids)


def _show_cluster(
    plan: ClusterPlan, output: OutputFormat | None, registered: dict[str, int]
) -> None:
    from rmq.cli.cluster_layouts import CLUSTER_NAME

    def role(broker: PlannedServer) -> tuple[int, str]:
        assert broker.spec is not None
        if broker.spec.dledger_id is None:
            return broker.spec.broker_id, broker.spec.role
        broker_id = registered.get(broker.addr, broker.spec.broker_id)
        return broker_id, "LEADER" if broker_id == 0 else "FOLLOWER"

    rows = [
        {
            "cluster": CLUSTER_NAME,
            "brokerName": broker.spec.broker_name,
            "brokerId": role(broker)[0],
            "role": role(broker)[1],
            "addr": broker.addr,
            "config": str(broker.config),
            "log": str(broker.log),
        }
        for broker in plan.brokers
        if broker.spec is not None
    ]
    show(rows, columns=COLUMNS, output=output)
    sys.stdout.flush()


def _note(line: str) -> None:
    typer.echo(f"rmq: {line}", err=True)
