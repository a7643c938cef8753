"""The broker's access check: which resources a request needs, and whether its caller may.

As Apache 4.9.8's PlainAccessValidator and PlainPermissionManager.validate, for every request
on both ports before any processor sees it:

1. a client whose host matches a global white address passes;
2. no `AccessKey` field: "No accessKey is configured"; a key no file defines: "No acl config
   for <key>";
3. a client whose host matches the account's `whiteRemoteAddress` passes;
4. the `Signature` must be the one `rmq.remoting.aclsign` computes under the account's secret
   ("Check signature failed for accessKey=<key>");
5. a send to RMQ_SYS_TRACE_TOPIC passes; otherwise the admin codes need an admin account and
   every resource the request names needs its permission:

   ======================================  ==============================================
   request                                 resources
   ======================================  ==============================================
   SEND_MESSAGE (V2: short keys `b`, `a`)  topic PUB; a `%RETRY%` topic: the group's SUB
   CONSUMER_SEND_MSG_BACK                  group SUB
   PULL_MESSAGE                            topic SUB, consumerGroup SUB
   QUERY_MESSAGE                           topic SUB
   HEART_BEAT                              every consumer group SUB and its topics SUB
   UNREGISTER_CLIENT, GET_CONSUMER_LIST..  consumerGroup SUB
   UPDATE_CONSUMER_OFFSET                  consumerGroup SUB, topic SUB
   ======================================  ==============================================

   The fields are read as they arrived: Apache's running broker refuses no request here for
   a missing or malformed header field (measured), so neither does rmq.  A group G is the
   resource `%RETRY%G`.  Other codes name no resource (SEND_BATCH_MESSAGE
   included, as in Apache).

A request that changes the ACL (`changes_acl`: UPDATE_AND_CREATE_ACL_CONFIG,
DELETE_ACL_CONFIG, UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, and an UPDATE_BROKER_CONFIG that sets
`aclEnable` or `aclFile`) passes only signed by an admin account: neither white address lets
it through unsigned, and a valid signature of any other account gets Apache's "Need admin
permission" refusal.  This is rmq's own rule: Apache 4.9.8 lets any account (and any client
of a global white address) rewrite the ACL, so that a non-admin account could white-list its
own address and then skip every check (docs/spec-notes.md, deliberate differences).

A refusal is SYSTEM_ERROR with Apache's remark (`errors.AclError.remark`); a oneway request
gets no answer.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from rmq.common import javaprops
from rmq.common.javahash import java_hash_order
from rmq.common.naming import RMQ_SYS_TRACE_TOPIC, retry_topic
from rmq.remoting.aclsign import ACCESS_KEY, SIGNATURE, request_signature
from rmq.remoting.bodies.client import HeartbeatData
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, create_response
from rmq.remoting.connection import Connection
from rmq.server.broker.acl import errors
from rmq.server.broker.acl.accounts import PUB, SUB, Account, is_group_resource
from rmq.server.broker.acl.addresses import client_host
from rmq.server.broker.acl.errors import AclError
from rmq.server.broker.acl.files import AclFiles, AclState

log = logging.getLogger("rmq.broker.acl")

Handler = Callable[[Connection, RemotingCommand], Awaitable[RemotingCommand | None]]

ACL_CODES = frozenset(
    {
        RequestCode.UPDATE_AND_CREATE_ACL_CONFIG,
        RequestCode.DELETE_ACL_CONFIG,
        RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
    }
)
"""The requests that rewrite the ACL files."""

ACL_CONFIG_KEYS = ("aclEnable", "aclFile")
"""Broker settings that turn the ACL off or point it at other files."""


def changes_acl(request: RemotingCommand) -> bool:
    """Whether `request` changes the ACL: one of `ACL_CODES`, or an UPDATE_BROKER_CONFIG
    whose body (read as the broker's processor reads it) sets one of `ACL_CONFIG_KEYS`."""
    if request.code in ACL_CODES:
        return True
    if request.code != RequestCode.UPDATE_BROKER_CONFIG or not request.body:
        return False
    try:
        props = javaprops.loads(bytes(request.body).decode("utf-8"))
    except (UnicodeDecodeError, javaprops.PropertiesSyntaxError):
        return False  # the processor refuses the body, changing nothing
    return any(key in props for key in ACL_CONFIG_KEYS)


def _add(needed: dict[str, int], resource: str | None, perm: int) -> None:
    if resource is not None:
        needed[resource] = perm


def _group(needed: dict[str, int], group: str | None) -> None:
    if group is not None:
        needed[retry_topic(group)] = SUB


def _send(needed: dict[str, int], topic: str | None, group: str | None) -> None:
    if topic is not None and is_group_resource(topic):
        _group(needed, group)
    else:
        _add(needed, topic, PUB)


def needed_resources(request: RemotingCommand) -> dict[str, int]:
    """resource -> permission the request needs, in Java HashMap order (which resource a
    refusal names first).  AclError (Apache's parse failure) for an undecodable body."""
    fields = request.ext_fields or {}
    needed: dict[str, int] = {}
    code = request.code
    try:
        if code == RequestCode.SEND_MESSAGE:
            _send(needed, fields.get("topic"), fields.get("group"))
        elif code == RequestCode.SEND_MESSAGE_V2:
            _send(needed, fields.get("b"), fields.get("a"))
        elif code == RequestCode.CONSUMER_SEND_MSG_BACK:
            _group(needed, fields.get("group"))
        elif code == RequestCode.PULL_MESSAGE:
            _add(needed, fields.get("topic"), SUB)
            _group(needed, fields.get("consumerGroup"))
        elif code == RequestCode.QUERY_MESSAGE:
            _add(needed, fields.get("topic"), SUB)
        elif code == RequestCode.HEART_BEAT:
            heartbeat = HeartbeatData.decode(request.body or b"")
            for consumer in heartbeat.consumer_data_set:
                _group(needed, consumer.group_name)
                for subscription in consumer.subscription_data_set:
                    _add(needed, subscription.topic, SUB)
        elif code in (RequestCode.UNREGISTER_CLIENT, RequestCode.GET_CONSUMER_LIST_BY_GROUP):
            _group(needed, fields.get("consumerGroup"))
        elif code == RequestCode.UPDATE_CONSUMER_OFFSET:
            _group(needed, fields.get("consumerGroup"))
            _add(needed, fields.get("topic"), SUB)
    except Exception as exc:
        raise AclError(str(exc), errors.PARSE_FAILED) from exc
    if len(needed) > 1:
        return {key: needed[key] for key in java_hash_order(needed)}
    return needed


class AclValidator:
    """Checks requests against the accounts of `files`."""

    def __init__(self, files: AclFiles) -> None:
        self.files = files

    def validate(self, request: RemotingCommand, remote_addr: str) -> None:
        """Return when the request may run; raise AclError (Apache's message) when not."""
        host = client_host(remote_addr)
        needed = needed_resources(request) if request.ext_fields is not None else {}
        state = self.files.state
        if changes_acl(request):
            account = self._account(request, state)
            self._check_signature(request, account)
            account.require_admin(request.code)
            return
        if any(white(host) for white in state.global_white):
            return
        account = self._account(request, state)
        if account.white(host):
            return
        self._check_signature(request, account)
        if needed.get(RMQ_SYS_TRACE_TOPIC) == PUB:
            return
        account.check(request.code, needed)

    @staticmethod
    def _account(request: RemotingCommand, state: AclState) -> Account:
        """The account the request names; AclError when it names none or an unknown one."""
        access_key = (request.ext_fields or {}).get(ACCESS_KEY)
        if access_key is None:
            raise AclError("No accessKey is configured", errors.NO_ACCESS_KEY)
        account = state.accounts.get(access_key)
        if account is None:
            raise AclError(f"No acl config for {access_key}", errors.NO_ACCOUNT)
        return account

    @staticmethod
    def _check_signature(request: RemotingCommand, account: Account) -> None:
        fields = request.ext_fields or {}
        if request_signature(request, account.secret_key) != fields.get(SIGNATURE):
            raise AclError(
                f"Check signature failed for accessKey={account.access_key}",
                errors.BAD_SIGNATURE,
            )

    def guard(self, handler: Handler) -> Handler:
        """`handler` behind the access check."""

        async def guarded(
            connection: Connection, request: RemotingCommand
        ) -> RemotingCommand | None:
            try:
                self.validate(request, connection.remote_addr)
            except AclError as exc:
                log.warning("%s refused for %s: %s", request.code_name, connection, exc.message)
                return create_response(ResponseCode.SYSTEM_ERROR, exc.remark())
            return await handler(connection, request)

        return guarded
