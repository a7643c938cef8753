"""Plain ACL on a broker with `aclEnable=true`: the check in front of every handler, the four
ACL admin requests and the watch on the files.

* `guard(handler)` wraps a handler in the access check (`validator.py`); a broker without
  ACL never builds an `AclService`, so its handlers run unwrapped.
* UPDATE_AND_CREATE_ACL_CONFIG (50), DELETE_ACL_CONFIG (51), GET_BROKER_CLUSTER_ACL_INFO
  (52), UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53) as Apache's AdminBrokerProcessor answers them:
  SUCCESS with no remark, or UPDATE_AND_CREATE_ACL_CONFIG_FAILED / DELETE_ACL_CONFIG_FAILED /
  UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED with the reason.  GET_BROKER_CLUSTER_ACL_INFO
  answers the default file's data version (`version`, as loaded), every file's
  (`allAclFileVersion`, a JSON map) and the broker's name, address and cluster.
* GET_BROKER_CLUSTER_ACL_CONFIG (54): the accounts, to admins, without secrets
  (`listing.py`).
* the broker calls `files.poll` every `files.WATCH_INTERVAL` seconds: a changed file reloads.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from rmq.common import fastjson
from rmq.common.javahash import java_hash_order
from rmq.common.plainaccess import PlainAccessConfig
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, create_response
from rmq.remoting.connection import Connection
from rmq.remoting.headers import (
    CreateAccessConfigRequestHeader,
    DeleteAccessConfigRequestHeader,
    GetBrokerAclConfigResponseHeader,
    UpdateGlobalWhiteAddrsConfigRequestHeader,
)
from rmq.server.broker.acl.errors import AclError
from rmq.server.broker.acl.files import AclFiles
from rmq.server.broker.acl.listing import acl_config_handler
from rmq.server.broker.acl.validator import AclValidator, Handler

if TYPE_CHECKING:
    from rmq.server.broker.context import BrokerContext

log = logging.getLogger("rmq.broker.acl")

WHITE_FAILED = ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED


def java_split(text: str | None) -> list[str] | None:
    """Java's `UtilAll.split(text, ",")`: null stays null, trailing empty items go."""
    if text is None:
        return None
    items = text.split(",")
    while len(items) > 1 and items[-1] == "":
        items.pop()
    return items


def _version_json(version: tuple[int, int]) -> str:
    counter, timestamp = version
    return fastjson.dumps({"counter": counter, "timestamp": timestamp})


class AclService:
    """The ACL of one broker (see the module docstring)."""

    def __init__(
        self,
        rocketmq_home: str | None,
        acl_file: str | None,
        *,
        broker_name: str,
        broker_addr: str,
        cluster_name: str,
    ) -> None:
        self.files = AclFiles(rocketmq_home, acl_file or None)
        self.files.load()
        self.validator = AclValidator(self.files)
        self.broker_name = broker_name
        self.broker_addr = broker_addr
        self.cluster_name = cluster_name

    def guard(self, handler: Handler) -> Handler:
        return self.validator.guard(handler)

    def handlers(self) -> dict[int, Handler]:
        return {
            RequestCode.UPDATE_AND_CREATE_ACL_CONFIG: self.update_account,
            RequestCode.DELETE_ACL_CONFIG: self.delete_account,
            RequestCode.GET_BROKER_CLUSTER_ACL_INFO: self.versions,
            RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG: self.update_global_white,
            RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG: acl_config_handler(self.files),
        }

    async def update_account(
        self, _connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = request.read_header(CreateAccessConfigRequestHeader)
        change = PlainAccessConfig(
            header.access_key,
            header.secret_key,
            header.white_remote_address,
            header.admin,
            header.default_topic_perm,
            header.default_group_perm,
            java_split(header.topic_perms),
            java_split(header.group_perms),
        )
        try:
            self.files.update_account(change)
        except AclError as exc:
            return create_response(ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED, exc.message)
        return create_response(ResponseCode.SUCCESS)

    async def delete_account(
        self, _connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = request.read_header(DeleteAccessConfigRequestHeader)
        try:
            deleted = self.files.delete_account(header.access_key)
        except AclError as exc:
            return create_response(ResponseCode.DELETE_ACL_CONFIG_FAILED, exc.message)
        if not deleted:
            remark = (
                f"The accesskey[{header.access_key}] corresponding to accessConfig "
                "has been deleted failed."
            )
            return create_response(ResponseCode.DELETE_ACL_CONFIG_FAILED, remark)
        return create_response(ResponseCode.SUCCESS)

    async def update_global_white(
        self, _connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = request.read_header(UpdateGlobalWhiteAddrsConfigRequestHeader)
        addresses = java_split(header.global_white_addrs) or []
        try:
            done = self.files.update_global_white(addresses, header.acl_file_full_path or None)
        except AclError as exc:
            return create_response(
                ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED, exc.message
            )
        if not done:
            remark = (
                f"The globalWhiteAddresses[{header.global_white_addrs}] has been updated failed."
            )
            return create_response(ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED, remark)
        return create_response(ResponseCode.SUCCESS)

    async def versions(self, _connection: Connection, _request: RemotingCommand) -> RemotingCommand:
        state = self.files.state
        all_versions = {
            path: {"counter": state.versions[path][0], "timestamp": state.versions[path][1]}
            for path in java_hash_order(state.versions)
        }
        header = GetBrokerAclConfigResponseHeader(
            version=_version_json(self.files.default_version),
            all_acl_file_version=fastjson.dumps(all_versions),
            broker_name=self.broker_name,
            broker_addr=self.broker_addr,
            cluster_name=self.cluster_name,
        )
        return create_response(ResponseCode.SUCCESS, header=header)


def unguarded(handler: Handler) -> Handler:
    """A broker without ACL: the handler as it is."""
    return handler


def acl_service(context: BrokerContext) -> AclService:
    """The ACL of the broker of `context` (aclEnable=true)."""
    broker = context.broker_config
    return AclService(
        broker.rocketmq_home,
        broker.acl_file,
        broker_name=broker.broker_name,
        broker_addr=context.broker_addr,
        cluster_name=broker.broker_cluster_name,
    )
