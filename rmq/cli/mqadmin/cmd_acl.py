"""mqadmin's four ACL commands, printing what mqadmin 4.9.8 prints.

    updateAclConfig        create or update an account on a broker (-b) or a cluster (-c)
    deleteAclConfig        delete an account (alias deleteAccessConfig)
    clusterAclConfigVersion the data version of each broker's ACL files
    updateGlobalWhiteAddr  set the global white remote addresses of an ACL file

`-c` goes to every broker of the cluster (masters and slaves; clusterAclConfigVersion: the
masters) in CommandUtil's order; an unknown cluster prints CommandUtil's `[error]` line and
the command carries on with no broker, as mqadmin does.  updateAclConfig ends by printing the
`PlainAccessConfig` object, which has no toString: `Class@<identity hash>`, without a line
break, like deleteAclConfig's last line.
"""

from __future__ import annotations

import random

from rmq.cli.mqadmin.consumertext import date_time
from rmq.cli.mqadmin.javafmt import jprintf, parse_bool
from rmq.cli.mqadmin.registry import Invocation, Opt, failing, subcommand

PLAIN_ACCESS_CONFIG = "org.apache.rocketmq.common.PlainAccessConfig"
VERSION_ROW = "%-16s  %-22s  %-22s  %-20s  %-22s  %-22s%n"


def _target(broker: str, cluster: str) -> tuple[Opt, Opt]:
    """The required one-of `-b brokerAddr` / `-c clusterName` of every ACL command."""
    return (
        Opt("b", "brokerAddr", True, False, broker, "target"),
        Opt("c", "clusterName", True, False, cluster, "target"),
    )


async def _brokers(inv: Invocation, *, masters: bool = False) -> list[str]:
    """`-b`'s broker, or the brokers of `-c`'s cluster (mqadmin's `[error]` line and none
    when the cluster is unknown)."""
    from rmq.client.adminops import acl as ops
    from rmq.client.adminops.cluster import CLUSTER_ERROR

    async with inv.admin(namesrv_needed=not inv.has("b")) as admin:
        broker = inv.value("b") if inv.has("b") else None
        addrs = await ops.acl_targets(admin, broker, inv.value("c"), masters=masters)
    if addrs is None:
        jprintf(inv.out, "[error] %s", CLUSTER_ERROR)
        return []
    return addrs


def _split(value: str | None) -> list[str] | None:
    return None if value is None else value.split(",")


@subcommand(
    50,
    "updateAclConfig",
    "Update acl config yaml file in broker",
    *_target("update acl config file to which broker", "update acl config file to which cluster"),
    Opt("a", "accessKey", True, True, "set accessKey in acl config file"),
    Opt("s", "secretKey", True, True, "set secretKey in acl config file"),
    Opt(
        "w",
        "whiteRemoteAddress",
        True,
        False,
        "set white ip Address for account in acl config file",
    ),
    Opt("i", "defaultTopicPerm", True, False, "set default topicPerm in acl config file"),
    Opt("u", "defaultGroupPerm", True, False, "set default GroupPerm in acl config file"),
    Opt("t", "topicPerms", True, False, "set topicPerms list,eg: topicA=DENY,topicD=SUB"),
    Opt("g", "groupPerms", True, False, "set groupPerms list,eg: groupD=DENY,groupD=SUB"),
    Opt("m", "admin", True, False, "set admin flag in acl config file"),
)
async def update_acl_config(inv: Invocation) -> None:
    from rmq.client.adminops import acl as ops
    from rmq.client.api.acl import PlainAccessConfig

    with failing("UpdateAccessConfigSubCommand"):
        account = PlainAccessConfig(
            access_key=inv.value("a") or "",
            secret_key=inv.value("s"),
            white_remote_address=inv.value("w"),
            admin=parse_bool(inv.value("m")),
            default_topic_perm=inv.value("i"),
            default_group_perm=inv.value("u"),
            topic_perms=_split(inv.value("t")),
            group_perms=_split(inv.value("g")),
        )
        addrs = await _brokers(inv)
        async with inv.admin() as admin:
            for addr in addrs:
                await ops.update_account(admin, addr, account)
                jprintf(inv.out, "create or update plain access config to %s success.%n", addr)
        jprintf(inv.out, "%s@%x", PLAIN_ACCESS_CONFIG, random.getrandbits(31))


@subcommand(
    51,
    "deleteAclConfig",
    "Delete Acl Config Account in broker",
    *_target(
        "delete acl config account from which broker",
        "delete acl config account from which cluster",
    ),
    Opt(
        "a", "accessKey", True, True, "set accessKey in acl config file for deleting which account"
    ),
    alias="deleteAccessConfig",
)
async def delete_acl_config(inv: Invocation) -> None:
    from rmq.client.adminops import acl as ops

    with failing("DeleteAccessConfigSubCommand"):
        access_key = inv.value("a") or ""
        addrs = await _brokers(inv)
        async with inv.admin() as admin:
            for addr in addrs:
                await ops.delete_account(admin, addr, access_key)
                jprintf(inv.out, "delete plain access config account from %s success.%n", addr)
        jprintf(inv.out, "account's accesskey is:%s", access_key)


@subcommand(
    52,
    "clusterAclConfigVersion",
    "List all of acl config version information in cluster",
    *_target(
        "query acl config version for which broker",
        "query acl config version for specified cluster",
    ),
)
async def cluster_acl_config_version(inv: Invocation) -> None:
    from rmq.client.adminops import acl as ops

    with failing("ClusterAclConfigVersionListSubCommand"):
        by_cluster = not inv.has("b")
        addrs = await _brokers(inv, masters=True)
        async with inv.admin() as admin:
            if by_cluster:
                jprintf(
                    inv.out,
                    VERSION_ROW,
                    "#Cluster Name",
                    "#Broker Name",
                    "#Broker Addr",
                    "#AclFilePath",
                    "#AclConfigVersionNum",
                    "#AclLastUpdateTime",
                )
            for addr in addrs:
                for row in await ops.acl_versions(admin, addr):
                    jprintf(
                        inv.out,
                        VERSION_ROW,
                        row.cluster_name,
                        row.broker_name,
                        row.broker_addr,
                        row.acl_file,
                        str(row.counter),
                        date_time(row.timestamp),
                    )
        which = "cluster's" if by_cluster else "broker's"
        jprintf(inv.out, "get %s plain access config version success.%n", which)


@subcommand(
    53,
    "updateGlobalWhiteAddr",
    "Update global white address for acl Config File in broker",
    *_target(
        "update global white address to which broker",
        "update global white address to which cluster",
    ),
    Opt(
        "g",
        "globalWhiteRemoteAddresses",
        True,
        True,
        "set globalWhiteRemoteAddress list,eg: 10.10.103.*,192.168.0.*",
    ),
    Opt(
        "p",
        "aclFileFullPath",
        True,
        False,
        "update global white address of specified acl file,eg: /xxx/plain_test.yml",
    ),
)
async def update_global_white_addr(inv: Invocation) -> None:
    from rmq.client.adminops import acl as ops

    with failing("UpdateGlobalWhiteAddrSubCommand"):
        addresses = inv.value("g") or ""
        acl_file = inv.value("p")
        addrs = await _brokers(inv)
        async with inv.admin() as admin:
            for addr in addrs:
                await ops.update_global_white(admin, addr, addresses, acl_file)
                jprintf(inv.out, "update global white remote addresses to %s success.%n", addr)
