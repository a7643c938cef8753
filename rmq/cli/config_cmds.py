"""`rmq broker-config`, `rmq namesrv-config` and `rmq kv`: server settings and KV config.

    rmq broker-config get [--broker ADDR | --cluster NAME]
    rmq broker-config set KEY VALUE [--broker ADDR | --cluster NAME] [--dry-run]
    rmq namesrv-config get
    rmq namesrv-config set KEY VALUE [--dry-run]
    rmq kv list NAMESPACE
    rmq kv set NAMESPACE KEY VALUE [--dry-run]
    rmq kv delete NAMESPACE KEY [--yes] [--dry-run]

The friendly face of mqadmin's getBrokerConfig / updateBrokerConfig, getNamesrvConfig /
updateNamesrvConfig and updateKvConfig / deleteKvConfig: the same admin operations
(rmq/client/adminops/cluster.py), plus `kv list`, GET_KVLIST_BY_NAMESPACE
(rmq/client/adminops/kv_friendly.py), which mqadmin has no command for.  Without --broker,
the broker commands work on every broker (masters and slaves) of --cluster, which defaults
to the only cluster the name server knows.  `get` and `list` print one row per key
(`addr`, `key`, `value`; kv: `namespace`, `key`, `value`) in table form and one object per
server (`addr`, `config`) in json/ndjson/yaml.  A change prints the servers it changed, and
on stderr one `rmq: note: <addr>: ...` line per key a server says does not take effect at
once ("maxMessageSize takes effect after a restart"); a refused change (an unknown key, a
value the key does not allow) is an error naming the key (exit 1).  `--dry-run` prints the
request instead (request, code, target, header fields, body) and sends nothing, not even a
lookup.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any

import click
import typer

from rmq.cli.errors import PROG_NAME, YesOption, require_confirmation
from rmq.cli.main import command_app
from rmq.cli.output import OutputFormat, OutputOption, render, render_rows
from rmq.cli.settings import NamesrvOption, resolve_namesrv
from rmq.cli.topic import ClusterOption, DryRunOption, run_admin, show

if TYPE_CHECKING:
    from rmq.client.admin import AdminClient
    from rmq.remoting.codes import RequestCode

broker_config_app = command_app(help="Read and change broker configuration.")
namesrv_config_app = command_app(help="Read and change name server configuration.")
kv_app = command_app(help="List, set and delete the name servers' KV config.")

BrokerOption = Annotated[
    str | None,
    typer.Option("--broker", metavar="HOST:PORT", help="One broker.", show_default=False),
]
KeyArgument = Annotated[str, typer.Argument(metavar="KEY", help="Configuration key.")]
ValueArgument = Annotated[str, typer.Argument(metavar="VALUE", help="New value.")]
NamespaceArgument = Annotated[str, typer.Argument(metavar="NAMESPACE", help="KV namespace.")]
CONFIG_COLUMNS = ("addr", "key", "value")


@broker_config_app.callback()
def broker_config() -> None:
    """Read and change broker configuration."""


@namesrv_config_app.callback()
def namesrv_config() -> None:
    """Read and change name server configuration."""


@kv_app.callback()
def kv() -> None:
    """List, set and delete the name servers' KV config (namespace, key, value)."""


async def _brokers(admin: AdminClient, broker: str | None, cluster: str | None) -> list[str]:
    from rmq.cli.group import default_cluster
    from rmq.client.adminops.cluster import cluster_addrs

    if broker is not None:
        return [broker]
    name = await default_cluster(admin, cluster)
    return cluster_addrs(await admin.cluster_info(), name) or []


def _one_target(broker: str | None, cluster: str | None) -> None:
    if broker is not None and cluster is not None:
        raise click.UsageError("give at most one of --broker and --cluster")


def _show_configs(
    configs: Sequence[tuple[str, dict[str, str]]], output: OutputFormat | None
) -> None:
    show(
        [{"addr": addr, "config": config} for addr, config in configs],
        table_rows=[
            {"addr": addr, "key": key, "value": value}
            for addr, config in configs
            for key, value in config.items()
        ],
        columns=CONFIG_COLUMNS,
        output=output,
    )


def _print_notes(addr: str, remark: str | None) -> None:
    """The lines of a server's answer to a change: keys that do not take effect at once."""
    for line in (remark or "").splitlines():
        typer.echo(f"{PROG_NAME}: note: {addr}: {line}", err=True)


def _show_dry_run(
    code: RequestCode, target: str, output: OutputFormat | None, **fields: Any
) -> None:
    row = {
        "request": code.name,
        "code": int(code),
        "target": target,
        "extFields": {k: v for k, v in fields.items() if k != "body"},
        "body": fields.get("body"),
    }
    render([row], columns=list(row), output=output)
    typer.echo("dry run: nothing was sent", err=True)


# -- broker-config ------------------------------------------------------------------------


@broker_config_app.command("get")
def broker_config_get(
    broker: BrokerOption = None,
    cluster: ClusterOption = None,
    namesrv: NamesrvOption = None,
    output: OutputOption = None,
) -> None:
    """Print the configuration of one broker, or of every broker of a cluster."""
    from rmq.client.adminops.cluster import broker_config

    _one_target(broker, cluster)

    async def get(admin: AdminClient) -> list[tuple[str, dict[str, str]]]:
        return [
            (addr, await broker_config(admin, addr))
            for addr in await _brokers(admin, broker, cluster)
        ]

    _show_configs(run_admin(resolve_namesrv(namesrv), get), output)


@broker_config_app.command("set")
def broker_config_set(
    key: KeyArgument,
    value: ValueArgument,
    broker: BrokerOption = None,
    cluster: ClusterOption = None,
    dry_run: DryRunOption = False,
    namesrv: NamesrvOption = None,
    output: OutputOption = None,
) -> None:
    """Change one setting of one broker, or of every broker of a cluster.

    The broker checks the key and value, writes them to its config file and applies them at
    once, or says the key takes effect after a restart (UPDATE_BROKER_CONFIG).
    """
    from rmq.client.adminops.cluster import update_broker_config
    from rmq.remoting.codes import RequestCode

    _one_target(broker, cluster)
    if dry_run:
        target = broker or (
            f"every broker of cluster {cluster}" if cluster else "every broker of the cluster"
        )
        _show_dry_run(RequestCode.UPDATE_BROKER_CONFIG, target, output, body=f"{key}={value}\n")
        return

    async def change(admin: AdminClient) -> list[tuple[str, str | None]]:
        return [
            (addr, await update_broker_config(admin, addr, {key: value}))
            for addr in await _brokers(admin, broker, cluster)
        ]

    done = run_admin(resolve_namesrv(namesrv), change)
    for addr, remark in done:
        _print_notes(addr, remark)
    render_rows(
        [{"addr": addr, "key": key, "value": value} for addr, _ in done],
        empty_columns=("addr",),
        output=output,
    )


# -- namesrv-config -----------------------------------------------------------------------


@namesrv_config_app.command("get")
def namesrv_config_get(namesrv: NamesrvOption = None, output: OutputOption = None) -> None:
    """Print the configuration of every name server of -n/--namesrv."""
    from rmq.client.adminops.cluster import namesrv_configs

    async def get(admin: AdminClient) -> list[tuple[str, dict[str, str]]]:
        return [(config.addr, config.properties) for config in await namesrv_configs(admin)]

    _show_configs(run_admin(resolve_namesrv(namesrv), get), output)


@namesrv_config_app.command("set")
def namesrv_config_set(
    key: KeyArgument,
    value: ValueArgument,
    dry_run: DryRunOption = False,
    namesrv: NamesrvOption = None,
    output: OutputOption = None,
) -> None:
    """Change one setting of every name server of -n/--namesrv (UPDATE_NAMESRV_CONFIG)."""
    from rmq.client.adminops.cluster import update_namesrv_config
    from rmq.remoting.codes import RequestCode

    addrs = resolve_namesrv(namesrv)
    if dry_run:
        _show_dry_run(RequestCode.UPDATE_NAMESRV_CONFIG, addrs, output, body=f"{key}={value}\n")
        return
    done = run_admin(addrs, lambda admin: update_namesrv_config(admin, {key: value}))
    for addr, remark in done:
        _print_notes(addr, remark)
    render_rows(
        [{"addr": addr, "key": key, "value": value} for addr, _ in done],
        empty_columns=("addr",),
        output=output,
    )


# -- kv -----------------------------------------------------------------------------------


@kv_app.command("list")
def kv_list(
    namespace: NamespaceArgument, namesrv: NamesrvOption = None, output: OutputOption = None
) -> None:
    """Print every key of a KV namespace and its value (GET_KVLIST_BY_NAMESPACE)."""
    from rmq.client.adminops.kv_friendly import kv_list as list_namespace

    table = run_admin(resolve_namesrv(namesrv), lambda admin: list_namespace(admin, namespace))
    render(
        [{"namespace": namespace, "key": key, "value": value} for key, value in table.items()],
        columns=("namespace", "key", "value"),
        output=output,
    )


@kv_app.command("set")
def kv_set(
    namespace: NamespaceArgument,
    key: KeyArgument,
    value: ValueArgument,
    dry_run: DryRunOption = False,
    namesrv: NamesrvOption = None,
    output: OutputOption = None,
) -> None:
    """Set a key of a KV namespace on every name server (PUT_KV_CONFIG)."""
    from rmq.client.adminops.cluster import put_kv_config
    from rmq.remoting.codes import RequestCode

    addrs = resolve_namesrv(namesrv)
    row = {"namespace": namespace, "key": key, "value": value}
    if dry_run:
        _show_dry_run(RequestCode.PUT_KV_CONFIG, addrs, output, **row)
        return
    run_admin(addrs, lambda admin: put_kv_config(admin, namespace, key, value))
    render_rows([{"addr": addrs, **row}], empty_columns=("addr",), output=output)


@kv_app.command("delete")
def kv_delete(
    namespace: NamespaceArgument,
    key: KeyArgument,
    yes: YesOption = False,
    dry_run: DryRunOption = False,
    namesrv: NamesrvOption = None,
    output: OutputOption = None,
) -> None:
    """Delete a key of a KV namespace from every name server (DELETE_KV_CONFIG).

    Asks for confirmation on a terminal; elsewhere --yes is required.
    """
    from rmq.client.adminops.cluster import delete_kv_config
    from rmq.remoting.codes import RequestCode

    addrs = resolve_namesrv(namesrv)
    row = {"namespace": namespace, "key": key}
    if dry_run:
        _show_dry_run(RequestCode.DELETE_KV_CONFIG, addrs, output, **row)
        return
    require_confirmation(f"delete KV config {namespace}/{key} from the name servers", yes=yes)
    run_admin(addrs, lambda admin: delete_kv_config(admin, namespace, key))
    render_rows([{"addr": addrs, **row}], empty_columns=("addr",), output=output)
