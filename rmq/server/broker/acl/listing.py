"""GET_BROKER_CLUSTER_ACL_CONFIG (54): the accounts of the broker's ACL files, for admins,
without secrets.

Apache's 4.9.7 broker answered any caller with every account, secret keys included (4.9.8
dropped the request).  rmq answers it as 4.9.7 did, in the same body (`AclConfigBody`:
`globalWhiteAddrs`, `plainAccessConfigs`, read from the files in the order they are loaded,
an access key in several files counting in the first), with two differences:

* the caller must be an admin account: its access key names an admin of the loaded ACL and
  its signature checks out under that account's secret, unless it calls from the account's
  own white address (the check in front of every request lets a globally white address
  through unsigned, which names no account);
* no secret key is sent.

A refusal is SYSTEM_ERROR with an `AclException` remark, as the access check's refusals.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rmq.remoting.aclsign import ACCESS_KEY, SIGNATURE, request_signature
from rmq.remoting.bodies import AclAccount, AclConfigBody
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, create_response
from rmq.remoting.connection import Connection
from rmq.server.broker.acl import errors
from rmq.server.broker.acl.addresses import client_host
from rmq.server.broker.acl.errors import AclError
from rmq.server.broker.acl.files import AclFiles, read_yaml
from rmq.server.broker.acl.validator import Handler


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _texts(value: Any) -> list[str] | None:
    if value is None:
        return None
    return [str(_text(item)) for item in (value if isinstance(value, list) else [value])]


def _account(data: Mapping[str, Any]) -> AclAccount:
    admin = data.get("admin")
    return AclAccount(
        access_key=str(_text(data.get("accessKey"))),
        white_remote_address=_text(data.get("whiteRemoteAddress")),
        admin=admin is True or str(_text(admin)).lower() == "true",
        default_topic_perm=_text(data.get("defaultTopicPerm")),
        default_group_perm=_text(data.get("defaultGroupPerm")),
        topic_perms=_texts(data.get("topicPerms")),
        group_perms=_texts(data.get("groupPerms")),
    )


def acl_config(files: AclFiles) -> AclConfigBody:
    """Every file's global white addresses and accounts, secrets left out."""
    whites: list[str] = []
    accounts: dict[str, AclAccount] = {}
    for path in files.state.files:
        data = read_yaml(path)
        if not isinstance(data, Mapping):
            continue
        whites += [str(address) for address in data.get("globalWhiteRemoteAddresses") or ()]
        for item in data.get("accounts") or ():
            if isinstance(item, Mapping) and item.get("accessKey") is not None:
                account = _account(item)
                accounts.setdefault(account.access_key, account)
    return AclConfigBody(global_white_addrs=whites, plain_access_configs=list(accounts.values()))


def check_admin(files: AclFiles, request: RemotingCommand, remote_addr: str) -> None:
    """Return when the request comes from an admin account (see the module docstring)."""
    fields = request.ext_fields or {}
    access_key = fields.get(ACCESS_KEY)
    if access_key is None:
        raise AclError("No accessKey is configured", errors.NO_ACCESS_KEY)
    account = files.state.accounts.get(access_key)
    if account is None:
        raise AclError(f"No acl config for {access_key}", errors.NO_ACCOUNT)
    signed = request_signature(request, account.secret_key) == fields.get(SIGNATURE)
    if not signed and not account.white(client_host(remote_addr)):
        raise AclError(f"Check signature failed for accessKey={access_key}", errors.BAD_SIGNATURE)
    if not account.admin:
        code = int(RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG)
        raise AclError(
            f"Need admin permission for request code={code}, but accessKey={access_key} is not"
        )


def acl_config_handler(files: AclFiles) -> Handler:
    """The GET_BROKER_CLUSTER_ACL_CONFIG handler of a broker with these ACL files."""

    async def answer(connection: Connection, request: RemotingCommand) -> RemotingCommand:
        try:
            check_admin(files, request, connection.remote_addr)
            body = acl_config(files)
        except AclError as exc:
            return create_response(ResponseCode.SYSTEM_ERROR, exc.remark())
        return create_response(ResponseCode.SUCCESS, body=body.encode())

    return answer
