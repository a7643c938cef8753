"""The plain ACL's admin requests to a broker (50-53), as Java's MQClientAPIImpl sends them.

* UPDATE_AND_CREATE_ACL_CONFIG (50): the fields of a `PlainAccessConfig`, the permission
  lists joined with ","; a field left None is not sent (the broker keeps or defaults it);
* DELETE_ACL_CONFIG (51): the access key;
* UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53): the addresses ("a,b,c") and, when given, the ACL
  file's full path (mqadmin sends none for the broker's default file);
* GET_BROKER_CLUSTER_ACL_INFO (52): no header; the answer's header names the broker and
  carries the default file's data version and every file's (`BrokerAclInfo`);
* GET_BROKER_CLUSTER_ACL_CONFIG (54): no header; the answer's body holds the accounts and
  global white addresses (`AclConfigBody`: 4.9.7's broker served it, 4.9.8's does not,
  rmq's does to admin accounts, without secret keys).

The three changes succeed with SUCCESS only (the broker's *_FAILED codes raise MQBrokerError
with its remark).  The request builders are public so that a dry run shows what would be sent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from rmq.client.api.request import request_broker
from rmq.common.javahash import java_hash_order
from rmq.common.plainaccess import PlainAccessConfig as PlainAccessConfig
from rmq.remoting.bodies import AclConfigBody
from rmq.remoting.client import RemotingClient
from rmq.remoting.codes import RequestCode
from rmq.remoting.command import RemotingCommand, create_request
from rmq.remoting.headers import (
    CreateAccessConfigRequestHeader,
    DeleteAccessConfigRequestHeader,
    GetBrokerAclConfigResponseHeader,
    UpdateGlobalWhiteAddrsConfigRequestHeader,
)


@dataclass(frozen=True, slots=True)
class BrokerAclInfo:
    """GET_BROKER_CLUSTER_ACL_INFO's answer: the broker, the data version (counter, timestamp
    in ms) of its default ACL file and of each of its ACL files, in the order of Java's
    HashMap of the file paths."""

    cluster_name: str
    broker_name: str
    broker_addr: str
    version: tuple[int, int]
    file_versions: dict[str, tuple[int, int]]


def create_acl_request(config: PlainAccessConfig) -> RemotingCommand:
    """The UPDATE_AND_CREATE_ACL_CONFIG request for `config`."""
    header = CreateAccessConfigRequestHeader(
        access_key=config.access_key,
        secret_key=config.secret_key,
        white_remote_address=config.white_remote_address,
        admin=config.admin,
        default_topic_perm=config.default_topic_perm,
        default_group_perm=config.default_group_perm,
        topic_perms=_joined(config.topic_perms),
        group_perms=_joined(config.group_perms),
    )
    return create_request(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, header)


def delete_acl_request(access_key: str) -> RemotingCommand:
    """The DELETE_ACL_CONFIG request for `access_key`."""
    header = DeleteAccessConfigRequestHeader(access_key=access_key)
    return create_request(RequestCode.DELETE_ACL_CONFIG, header)


def update_global_white_request(addresses: str, acl_file: str | None) -> RemotingCommand:
    """The UPDATE_GLOBAL_WHITE_ADDRS_CONFIG request (no file path: the default file)."""
    header = UpdateGlobalWhiteAddrsConfigRequestHeader(
        global_white_addrs=addresses, acl_file_full_path=acl_file
    )
    return create_request(RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, header)


async def create_or_update_acl(
    remoting: RemotingClient, addr: str, config: PlainAccessConfig, timeout: float
) -> None:
    """Create the account of `config` on the broker at `addr`, or change it."""
    await request_broker(remoting, addr, create_acl_request(config), timeout)


async def delete_acl(remoting: RemotingClient, addr: str, access_key: str, timeout: float) -> None:
    """Delete the account of `access_key` from the broker at `addr`."""
    await request_broker(remoting, addr, delete_acl_request(access_key), timeout)


async def update_global_white_addrs(
    remoting: RemotingClient, addr: str, addresses: str, acl_file: str | None, timeout: float
) -> None:
    """Set the global white remote addresses of an ACL file of the broker at `addr`."""
    await request_broker(remoting, addr, update_global_white_request(addresses, acl_file), timeout)


async def get_broker_cluster_acl_info(
    remoting: RemotingClient, addr: str, timeout: float
) -> BrokerAclInfo:
    """The ACL file versions of the broker at `addr`."""
    request = create_request(RequestCode.GET_BROKER_CLUSTER_ACL_INFO)
    response = await request_broker(remoting, addr, request, timeout)
    header = response.read_header(GetBrokerAclConfigResponseHeader)
    files: dict[str, object] = json.loads(header.all_acl_file_version or "{}")
    return BrokerAclInfo(
        cluster_name=header.cluster_name,
        broker_name=header.broker_name,
        broker_addr=header.broker_addr,
        version=_data_version(json.loads(header.version)),
        file_versions={path: _data_version(files[path]) for path in java_hash_order(files)},
    )


async def get_broker_cluster_acl_config(
    remoting: RemotingClient, addr: str, timeout: float
) -> AclConfigBody:
    """The accounts and global white addresses of the broker at `addr`."""
    request = create_request(RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG)
    response = await request_broker(remoting, addr, request, timeout)
    return AclConfigBody.decode(response.body or b"{}")


def _joined(items: list[str] | None) -> str | None:
    """Java's `UtilAll.join(list, ",")`: null stays null."""
    return None if items is None else ",".join(items)


def _data_version(data: object) -> tuple[int, int]:
    """(counter, timestamp) of a DataVersion JSON object."""
    if not isinstance(data, dict):
        return 0, 0
    return int(data.get("counter", 0)), int(data.get("timestamp", 0))
