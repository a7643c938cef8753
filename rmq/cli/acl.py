"""`rmq acl`: the plain ACL of the brokers: accounts, global white addresses, file versions.

    rmq acl list [--versions] [--broker ADDR | --cluster NAME]
    rmq acl set ACCESS_KEY [--secret SECRET|-] [--admin|--no-admin] [--white-address ADDR]
                [--default-topic-perm PERM] [--default-group-perm PERM]
                [--topic-perm TOPIC=PERM ...] [--group-perm GROUP=PERM ...]
                [--broker ADDR | --cluster NAME] [--dry-run]
    rmq acl delete ACCESS_KEY [--broker ADDR | --cluster NAME] [--yes] [--dry-run]
    rmq acl whitelist ADDR... [--acl-file PATH] [--broker ADDR | --cluster NAME] [--dry-run]

The friendly face of mqadmin's updateAclConfig, deleteAclConfig, clusterAclConfigVersion and
updateGlobalWhiteAddr, on the same admin operations (rmq/client/adminops/acl.py).  Without
--broker a change goes to every broker (masters and slaves: each keeps its own file) of
--cluster, which defaults to the only cluster the name server knows; `list` asks the masters
for their accounts (GET_BROKER_CLUSTER_ACL_CONFIG, answered by rmq's brokers to admin
accounts, never with a secret) or, with --versions, for the data version of each ACL file
(GET_BROKER_CLUSTER_ACL_INFO).  The requests are signed with the caller's own credentials
(--access-key/--secret-key).  An rmq broker answers `set`, `delete` and `whitelist` only when
an admin account signed them, from any address (a global white address included); Apache
4.9.8's answers them for any account, and for anyone at a global white address.  An account's
secret is given with --secret (`-` reads it from stdin), never printed back: a dry run shows it
masked.  A change prints one row per broker it changed.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Any

import click
import typer

from rmq.cli.errors import RmqError, YesOption, require_confirmation
from rmq.cli.main import command_app
from rmq.cli.output import OutputOption, render_rows
from rmq.cli.settings import NamesrvOption, resolve_namesrv
from rmq.cli.topic import ClusterOption, DryRunOption, run_admin, show, show_plan

if TYPE_CHECKING:
    from rmq.cli.output import OutputFormat
    from rmq.client.admin import AdminClient

app = command_app(help="Manage the brokers' plain ACL: accounts and white addresses.")

BrokerOption = Annotated[
    str | None,
    typer.Option("--broker", metavar="HOST:PORT", help="One broker.", show_default=False),
]
AccountArgument = Annotated[
    str, typer.Argument(metavar="ACCESS_KEY", help="The account's access key.", show_default=False)
]
"""The account's access key (not named access_key: that is the caller's --access-key)."""
PERMS = "DENY, PUB, SUB or PUB|SUB"
VERSION_COLUMNS = ("clusterName", "brokerName", "brokerAddr", "aclFile", "version", "lastUpdate")


@app.callback()
def acl() -> None:
    """Manage the brokers' plain ACL: accounts, global white addresses, file versions."""


async def _targets(
    admin: AdminClient, broker: str | None, cluster: str | None, *, masters: bool = False
) -> list[str]:
    from rmq.cli.group import default_cluster
    from rmq.client.adminops.acl import acl_targets

    name = None if broker is not None else await default_cluster(admin, cluster)
    return await acl_targets(admin, broker, name, masters=masters) or []


def _one_target(broker: str | None, cluster: str | None) -> str:
    if broker is not None and cluster is not None:
        raise click.UsageError("give at most one of --broker and --cluster")
    if broker is not None:
        return broker
    return f"every broker of cluster {cluster}" if cluster else "every broker of the cluster"


def _rows(addrs: list[str], key: str, value: str, result: str) -> list[dict[str, Any]]:
    """One row per broker a change went to."""
    return [{"brokerAddr": addr, key: value, "result": result} for addr in addrs]


@app.command("list")
def list_accounts(
    versions: Annotated[
        bool,
        typer.Option("--versions", help="List the ACL files and their data versions instead."),
    ] = False,
    broker: BrokerOption = None,
    cluster: ClusterOption = None,
    namesrv: NamesrvOption = None,
    output: OutputOption = None,
) -> None:
    """List each broker master's ACL accounts and their permissions (secrets never printed).

    One row per broker and account: admin or not, default topic and group permissions, the
    per-topic and per-group permissions (-o wide adds the white address), then the global
    white addresses.  The brokers answer GET_BROKER_CLUSTER_ACL_CONFIG (54) to an admin
    account; Apache's since 4.9.8 do not serve it, which one line says.  --versions lists
    the ACL files instead: cluster, broker, file, version counter and time of its last
    change (GET_BROKER_CLUSTER_ACL_INFO, which every broker serves).
    """
    _one_target(broker, cluster)
    if versions:
        _list_versions(broker, cluster, namesrv, output)
        return
    from rmq.cli.output import OutputFormat, render, resolve_output
    from rmq.client.adminops.acl import AclAccounts, acl_accounts
    from rmq.client.errors import MQBrokerError
    from rmq.remoting.codes import ResponseCode

    async def accounts(admin: AdminClient) -> tuple[list[AclAccounts], list[str]]:
        found, lacking = [], []
        for addr in await _targets(admin, broker, cluster, masters=True):
            try:
                found.append(await acl_accounts(admin, addr))
            except MQBrokerError as exc:
                if exc.code != ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
                    raise
                lacking.append(addr)
        return found, lacking

    found, lacking = run_admin(resolve_namesrv(namesrv), accounts)
    refusals = [
        RmqError(
            f"broker {addr} does not list accounts: it does not serve "
            "GET_BROKER_CLUSTER_ACL_CONFIG (54), as Apache's brokers since 4.9.8 and rmq's "
            "without aclEnable=true",
            "see 'rmq acl list --versions'",
        )
        for addr in lacking
    ]
    if refusals and not found:
        raise refusals[0]
    rows: list[dict[str, Any]] = [
        {
            "brokerAddr": entry.broker_addr,
            "accessKey": account.access_key,
            "admin": account.admin,
            "defaultTopicPerm": account.default_topic_perm,
            "defaultGroupPerm": account.default_group_perm,
            "topicPerms": account.topic_perms or [],
            "groupPerms": account.group_perms or [],
            "whiteRemoteAddress": account.white_remote_address,
        }
        for entry in found
        for account in entry.accounts
    ]
    whites = [
        {"brokerAddr": entry.broker_addr, "globalWhiteAddr": address}
        for entry in found
        for address in entry.global_white_addrs
    ]
    fmt = resolve_output(output)
    if fmt not in (OutputFormat.TABLE, OutputFormat.WIDE):
        data = [
            {
                "brokerAddr": entry.broker_addr,
                "globalWhiteAddrs": entry.global_white_addrs,
                "accounts": [
                    {key: row[key] for key in row if key != "brokerAddr"}
                    for row in rows
                    if row["brokerAddr"] == entry.broker_addr
                ],
            }
            for entry in found
        ]
        render(data, columns=("brokerAddr", "globalWhiteAddrs", "accounts"), output=fmt)
    elif found:
        table = [
            {
                **row,
                "topicPerms": ",".join(row["topicPerms"]),
                "groupPerms": ",".join(row["groupPerms"]),
            }
            for row in rows
        ]
        render(table, columns=ACCOUNT_COLUMNS, wide_columns=("whiteRemoteAddress",), output=fmt)
        if whites:
            typer.echo()
            render(
                whites,
                columns=("brokerAddr", "globalWhiteAddr"),
                output=fmt,
                title="GLOBAL WHITE ADDRESSES",
            )
    for refusal in refusals:
        typer.echo(refusal.line(), err=True)
    if refusals:
        raise typer.Exit(1)


ACCOUNT_COLUMNS = (
    "brokerAddr",
    "accessKey",
    "admin",
    "defaultTopicPerm",
    "defaultGroupPerm",
    "topicPerms",
    "groupPerms",
)


def _list_versions(
    broker: str | None, cluster: str | None, namesrv: str | None, output: OutputFormat | None
) -> None:
    """`list --versions`: one row per broker master and ACL file."""
    from rmq.cli.topic import human_time
    from rmq.client.adminops.acl import acl_versions

    async def versions(admin: AdminClient) -> list[dict[str, Any]]:
        rows = []
        for addr in await _targets(admin, broker, cluster, masters=True):
            for entry in await acl_versions(admin, addr):
                rows.append(
                    {
                        "clusterName": entry.cluster_name,
                        "brokerName": entry.broker_name,
                        "brokerAddr": entry.broker_addr,
                        "aclFile": entry.acl_file,
                        "version": entry.counter,
                        "lastUpdateTimestamp": entry.timestamp,
                    }
                )
        return rows

    rows = run_admin(resolve_namesrv(namesrv), versions)
    show(
        rows,
        table_rows=[{**row, "lastUpdate": human_time(row["lastUpdateTimestamp"])} for row in rows],
        columns=VERSION_COLUMNS,
        output=output,
    )


@app.command("set")
def set_account(
    account_key: AccountArgument,
    secret: Annotated[
        str,
        typer.Option(
            "--secret",
            metavar="SECRET",
            help="The account's secret key, more than 6 characters ('-' reads it from stdin); "
            "the broker wants it with every change.",
            show_default=False,
        ),
    ],
    admin_flag: Annotated[
        bool,
        typer.Option(
            "--admin",
            help="Make it an admin account; without it the account is none (every change "
            "sends the flag, as mqadmin's -m does).",
        ),
    ] = False,
    white_address: Annotated[
        str | None,
        typer.Option(
            "--white-address",
            metavar="ADDR",
            help="Addresses this account may use without signing (192.168.1.*, 10.0.0.1-9).",
        ),
    ] = None,
    default_topic_perm: Annotated[
        str | None,
        typer.Option("--default-topic-perm", metavar="PERM", help=f"Topics not listed: {PERMS}."),
    ] = None,
    default_group_perm: Annotated[
        str | None,
        typer.Option("--default-group-perm", metavar="PERM", help=f"Groups not listed: {PERMS}."),
    ] = None,
    topic_perms: Annotated[
        list[str] | None,
        typer.Option("--topic-perm", metavar="TOPIC=PERM", help="A topic's permission; repeat."),
    ] = None,
    group_perms: Annotated[
        list[str] | None,
        typer.Option("--group-perm", metavar="GROUP=PERM", help="A group's permission; repeat."),
    ] = None,
    broker: BrokerOption = None,
    cluster: ClusterOption = None,
    dry_run: DryRunOption = False,
    namesrv: NamesrvOption = None,
    output: OutputOption = None,
) -> None:
    """Create an account or change it (UPDATE_AND_CREATE_ACL_CONFIG).

    The brokers rewrite the account in their ACL file: the fields given replace the file's
    (--topic-perm and --group-perm replace its whole lists), the others are kept there, a new
    account is added to plain_acl.yml.
    """
    from rmq.client.api.acl import PlainAccessConfig

    target = _one_target(broker, cluster)
    if secret == "-":
        secret = sys.stdin.readline().rstrip("\r\n")
    account = PlainAccessConfig(
        access_key=account_key,
        secret_key=secret,
        white_remote_address=white_address,
        admin=admin_flag,
        default_topic_perm=default_topic_perm,
        default_group_perm=default_group_perm,
        topic_perms=topic_perms or None,
        group_perms=group_perms or None,
    )
    if dry_run:
        from rmq.client.adminops.acl import plan_update_account

        show_plan(plan_update_account(account, target), output)
        return
    from rmq.client.adminops.acl import update_account

    async def update(admin: AdminClient, addr: str) -> None:
        await update_account(admin, addr, account)

    addrs = _on_each_broker(namesrv, broker, cluster, update, secret=secret)
    render_rows(
        _rows(addrs, "accessKey", account_key, "updated"),
        empty_columns=("brokerAddr",),
        output=output,
    )


def _on_each_broker(
    namesrv: str | None,
    broker: str | None,
    cluster: str | None,
    operation: Callable[[AdminClient, str], Awaitable[None]],
    *,
    secret: str | None = None,
) -> list[str]:
    """Run `operation` on `--broker`, or on each broker of the cluster; the addresses done.
    An account `secret` a broker's refusal quotes is masked in the error."""
    from rmq.cli.credentials import MASK
    from rmq.cli.errors import RmqError

    async def change(admin: AdminClient) -> list[str]:
        addrs = await _targets(admin, broker, cluster)
        for addr in addrs:
            await operation(admin, addr)
        return addrs

    try:
        return run_admin(resolve_namesrv(namesrv), change)
    except RmqError as error:
        if secret:
            error.message = error.message.replace(secret, MASK)
            error.hint = error.hint.replace(secret, MASK) if error.hint else None
        raise


@app.command("delete")
def delete_account(
    account_key: AccountArgument,
    broker: BrokerOption = None,
    cluster: ClusterOption = None,
    yes: YesOption = False,
    dry_run: DryRunOption = False,
    namesrv: NamesrvOption = None,
    output: OutputOption = None,
) -> None:
    """Delete an account (DELETE_ACL_CONFIG); asks on a terminal, elsewhere needs --yes."""
    from rmq.client.adminops.acl import delete_account as delete

    target = _one_target(broker, cluster)
    if dry_run:
        from rmq.client.adminops.acl import plan_delete_account

        show_plan(plan_delete_account(account_key, target), output)
        return
    require_confirmation(f"delete ACL account {account_key!r} from {target}", yes=yes)

    async def remove(admin: AdminClient, addr: str) -> None:
        await delete(admin, addr, account_key)

    addrs = _on_each_broker(namesrv, broker, cluster, remove)
    render_rows(
        _rows(addrs, "accessKey", account_key, "deleted"),
        empty_columns=("brokerAddr",),
        output=output,
    )


@app.command("whitelist")
def whitelist(
    addresses: Annotated[
        list[str],
        typer.Argument(
            metavar="ADDR...",
            help="The global white remote addresses (10.10.103.*, 192.168.0.1-9, ...); they "
            "replace the file's list.  The broker splits the list at commas, as Apache's does, "
            "so the {1,2} form cannot be used here.",
        ),
    ],
    acl_file: Annotated[
        str | None,
        typer.Option(
            "--acl-file",
            metavar="PATH",
            help="The broker's ACL file to change. Default: its plain_acl.yml.",
        ),
    ] = None,
    broker: BrokerOption = None,
    cluster: ClusterOption = None,
    dry_run: DryRunOption = False,
    namesrv: NamesrvOption = None,
    output: OutputOption = None,
) -> None:
    """Set the global white remote addresses (UPDATE_GLOBAL_WHITE_ADDRS_CONFIG).

    Requests from these addresses need no signature, except those that change the ACL: an
    rmq broker answers them only when an admin account signed them.
    """
    from rmq.client.adminops.acl import update_global_white

    target = _one_target(broker, cluster)
    joined = ",".join(part for address in addresses for part in address.split(",") if part)
    if dry_run:
        from rmq.client.adminops.acl import plan_update_global_white

        show_plan(plan_update_global_white(joined, acl_file, target), output)
        return

    async def update(admin: AdminClient, addr: str) -> None:
        await update_global_white(admin, addr, joined, acl_file)

    addrs = _on_each_broker(namesrv, broker, cluster, update)
    render_rows(
        _rows(addrs, "globalWhiteAddrs", joined, "updated"),
        empty_columns=("brokerAddr",),
        output=output,
    )
