"""The plain ACL's admin operations, for `rmq acl ...` and mqadmin's four ACL commands.

What they send, after DefaultMQAdminExt / MQClientAPIImpl of 4.9.8 (the requests themselves
are built by `rmq.client.api.acl`):

* `update_account`: UPDATE_AND_CREATE_ACL_CONFIG (50) with a `PlainAccessConfig`: create
  the account or change the fields given;
* `delete_account`: DELETE_ACL_CONFIG (51) for one access key;
* `update_global_white`: UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53): the global white remote
  addresses of one ACL file (the broker's default file when none is named);
* `acl_versions`: GET_BROKER_CLUSTER_ACL_INFO (52): the broker's cluster, name and address
  and, per ACL file, its data version (counter and last update time), in the order of Java's
  HashMap of the file paths, as mqadmin prints them;
* `acl_accounts`: GET_BROKER_CLUSTER_ACL_CONFIG (54, which mqadmin 4.9.8 no longer sends):
  the broker's accounts and global white addresses, secret keys dropped whoever sent them
  (Apache's 4.9.7 broker does).

Each takes the broker addresses to ask; `acl_targets` gives them the way mqadmin's `-b` /
`-c` do: one broker, or every broker of a cluster (masters and slaves: the file lives on each
broker) as `CommandUtil` iterates them; `acl_version_targets` only the masters, as
clusterAclConfigVersion asks.  The `plan_*` functions give, without any network traffic,
the request a change would send (for dry runs), its secret key masked.  Nothing here prints.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from rmq.client.admin import AdminClient, PlannedRequest
from rmq.client.adminops.cluster import cluster_addrs, master_addrs
from rmq.client.api import acl as api_acl
from rmq.client.api.acl import PlainAccessConfig
from rmq.remoting.bodies import AclAccount
from rmq.remoting.codes import RequestCode
from rmq.remoting.command import RemotingCommand


@dataclass(frozen=True, slots=True)
class AclFileVersion:
    """The data version of one ACL file of a broker (`clusterAclConfigVersion`'s row)."""

    cluster_name: str
    broker_name: str
    broker_addr: str
    acl_file: str
    counter: int
    timestamp: int


async def acl_targets(
    admin: AdminClient, broker_addr: str | None, cluster: str | None, *, masters: bool = False
) -> list[str] | None:
    """`[broker_addr]`, or every broker of `cluster` (only its masters with `masters`) as
    mqadmin's CommandUtil iterates them; None when the name server does not know `cluster`."""
    if broker_addr is not None:
        return [broker_addr]
    assert cluster is not None, "give a broker address or a cluster"
    info = await admin.cluster_info()
    return master_addrs(info, cluster) if masters else cluster_addrs(info, cluster)


async def update_account(admin: AdminClient, addr: str, account: PlainAccessConfig) -> None:
    """Create or update `account` in the ACL of the broker at `addr`."""
    await api_acl.create_or_update_acl(admin.remoting, addr, account, admin.timeout)


async def delete_account(admin: AdminClient, addr: str, access_key: str) -> None:
    """Delete the account of `access_key` from the ACL of the broker at `addr`."""
    await api_acl.delete_acl(admin.remoting, addr, access_key, admin.timeout)


async def update_global_white(
    admin: AdminClient, addr: str, addresses: str, acl_file: str | None = None
) -> None:
    """Set the global white remote addresses (`a,b,c`) of an ACL file of the broker."""
    await api_acl.update_global_white_addrs(
        admin.remoting, addr, addresses, acl_file, admin.timeout
    )


async def acl_versions(admin: AdminClient, addr: str) -> list[AclFileVersion]:
    """The data version of each ACL file of the broker at `addr`."""
    info = await api_acl.get_broker_cluster_acl_info(admin.remoting, addr, admin.timeout)
    return [
        AclFileVersion(
            info.cluster_name, info.broker_name, info.broker_addr, path, counter, timestamp
        )
        for path, (counter, timestamp) in info.file_versions.items()
    ]


@dataclass(frozen=True, slots=True)
class AclAccounts:
    """The accounts of one broker's ACL (`acl_accounts`), no secret key among them."""

    broker_addr: str
    global_white_addrs: list[str]
    accounts: list[AclAccount]


async def acl_accounts(admin: AdminClient, addr: str) -> AclAccounts:
    """The accounts and global white addresses of the broker at `addr`."""
    body = await api_acl.get_broker_cluster_acl_config(admin.remoting, addr, admin.timeout)
    accounts = [
        dataclasses.replace(account, secret_key=None) for account in body.plain_access_configs or ()
    ]
    return AclAccounts(addr, list(body.global_white_addrs or ()), accounts)


SECRET_MASK = "********"
"""What a dry run shows in place of an account's secret key."""


def plan_update_account(account: PlainAccessConfig, target: str) -> list[PlannedRequest]:
    """The request `update_account` would send to `target`, the secret key masked."""
    return [_planned(api_acl.create_acl_request(account), target)]


def plan_delete_account(access_key: str, target: str) -> list[PlannedRequest]:
    """The request `delete_account` would send to `target`."""
    return [_planned(api_acl.delete_acl_request(access_key), target)]


def plan_update_global_white(
    addresses: str, acl_file: str | None, target: str
) -> list[PlannedRequest]:
    """The request `update_global_white` would send to `target`."""
    return [_planned(api_acl.update_global_white_request(addresses, acl_file), target)]


def _planned(request: RemotingCommand, target: str) -> PlannedRequest:
    fields = dict(request.ext_fields or {})
    if "secretKey" in fields:
        fields["secretKey"] = SECRET_MASK
    return PlannedRequest(RequestCode(request.code), target, fields)
