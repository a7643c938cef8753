"""`rmq producer`: the producers connected to the brokers.

    rmq producer list [--cluster NAME | --broker ADDR] [-g GROUP]

The friendly face of mqadmin's `producer` (GET_ALL_PRODUCER_INFO to a broker) and
`producerConnection`: every producer group the brokers of the cluster (default: the only
cluster the name server knows) or of `--broker` see, one row per producer client with the
brokers it is connected to.  `-g` keeps one group and fails (exit 1) when no producer of it is
connected.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from rmq.cli.errors import RmqError
from rmq.cli.group import BrokerOption, ClusterOption, default_cluster
from rmq.cli.main import command_app
from rmq.cli.output import OutputOption, render
from rmq.cli.settings import NamesrvOption, resolve_namesrv
from rmq.cli.topic import run_admin

if TYPE_CHECKING:
    from rmq.client.admin import AdminClient

app = command_app(help="The producers connected to the brokers.")

COLUMNS = ("group", "clientId", "remoteIp", "language", "version")
WIDE_COLUMNS = ("brokers", "lastUpdateTimestamp")


@app.callback()
def producer() -> None:
    """The producers connected to the brokers."""


@app.command("list")
def list_producers(
    group: Annotated[
        str | None,
        typer.Option("--group", "-g", metavar="GROUP", help="Only this producer group."),
    ] = None,
    cluster: ClusterOption = None,
    broker: BrokerOption = None,
    namesrv: NamesrvOption = None,
    output: OutputOption = None,
) -> None:
    """List the producer clients connected to the brokers, by group.

    One row per producer group and client: its address, language and version; -o wide adds
    the brokers it is connected to and when it last sent a heartbeat.
    """
    from rmq.client.adminops import consumer as ops
    from rmq.client.adminops.cluster import master_addrs
    from rmq.remoting.codes import version_desc

    async def collect(admin: AdminClient) -> list[dict[str, Any]]:
        if broker is not None:
            addrs = {broker: broker}
        else:
            info = await admin.cluster_info()
            name = await default_cluster(admin, cluster)
            names = {
                data.broker_addrs[0]: data.broker_name
                for data in info.broker_addr_table.values()
                if 0 in data.broker_addrs
            }
            addrs = {addr: names.get(addr, addr) for addr in master_addrs(info, name) or []}
        rows: dict[tuple[str, str], dict[str, Any]] = {}
        for addr, broker_name in addrs.items():
            table = await ops.producer_table(admin, addr)
            for producer_group, producers in table.data.items():
                if group is not None and producer_group != group:
                    continue
                for client in producers:
                    row = rows.setdefault(
                        (producer_group, client.client_id),
                        {
                            "group": producer_group,
                            "clientId": client.client_id,
                            "remoteIp": client.remote_ip,
                            "language": client.language.name,
                            "version": version_desc(client.version),
                            "brokers": [],
                            "lastUpdateTimestamp": 0,
                        },
                    )
                    row["brokers"].append(broker_name)
                    row["lastUpdateTimestamp"] = max(
                        row["lastUpdateTimestamp"], client.last_update_timestamp
                    )
        return [rows[key] for key in sorted(rows)]

    rows = run_admin(resolve_namesrv(namesrv), collect)
    if group is not None and not rows:
        raise RmqError(
            f"no producer of group {group!r} is connected to the brokers",
            "check the name with 'rmq producer list'",
        )
    render(rows, columns=COLUMNS, wide_columns=WIDE_COLUMNS, output=output)
