"""Accounts of the plain ACL and the permission rules (Apache's Permission, PlainAccessResource).

A permission is a bit set: DENY 1, ANY 2, PUB 4, SUB 8.  An account's resources map a topic
to its permission, and a group `G` as its retry topic `%RETRY%G`; a resource the account does
not list falls back to `defaultTopicPerm` or `defaultGroupPerm` (DENY when absent).  The
codes that change topics and groups need an admin account.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rmq.common.naming import RETRY_GROUP_TOPIC_PREFIX, retry_topic
from rmq.remoting.codes import RequestCode
from rmq.server.broker.acl import errors
from rmq.server.broker.acl.addresses import Matcher, address_matcher
from rmq.server.broker.acl.errors import AclError

DENY = 1
ANY = 2
PUB = 4
SUB = 8

MIN_KEY_LENGTH = 6
"""An access key or secret key must be longer than this."""

ADMIN_CODES = frozenset(
    {
        RequestCode.UPDATE_AND_CREATE_TOPIC,
        RequestCode.UPDATE_BROKER_CONFIG,
        RequestCode.DELETE_TOPIC_IN_BROKER,
        RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
        RequestCode.DELETE_SUBSCRIPTIONGROUP,
    }
)

_PERMS = {"PUB": PUB, "SUB": SUB, "PUB|SUB": PUB | SUB, "SUB|PUB": PUB | SUB, "DENY": DENY}


def parse_perm(text: str | None) -> int:
    """`PUB`, `SUB`, `PUB|SUB` / `SUB|PUB`; anything else (or nothing) is DENY."""
    return DENY if text is None else _PERMS.get(text.strip(), DENY)


def check_permission(needed: int, owned: int) -> bool:
    if owned & DENY:
        return False
    if needed & ANY:
        return bool(owned & (PUB | SUB))
    return bool(needed & owned)


def is_group_resource(resource: str) -> bool:
    return resource.startswith(RETRY_GROUP_TOPIC_PREFIX)


def describe(resource: str) -> str:
    """`group:G` for a retry-topic resource, `topic:T` for any other."""
    if is_group_resource(resource):
        return f"group:{resource[len(RETRY_GROUP_TOPIC_PREFIX) :]}"
    return f"topic:{resource}"


def _split_resource(item: str) -> list[str]:
    return [part for part in item.split("=") if part]


def check_resource_perms(items: list[str] | None) -> None:
    """Refuse `Res=Perm` items Apache's updateAccessConfig refuses (its messages)."""
    for item in items or ():
        parts = _split_resource(item)
        if len(parts) != 2:
            raise AclError(
                f"Parse Resource format error for {item}.\n"
                "The expected resource format is 'Res=Perm'. For example: topicA=SUB"
            )
        perm = parts[1].strip()
        if perm != "DENY" and parse_perm(perm) == DENY:
            raise AclError(
                f"Parse resource permission error for {item}.\n"
                "The expected permissions are 'SUB' or 'PUB' or 'SUB|PUB' or 'PUB|SUB'."
            )


def check_keys(access_key: str | None, secret_key: str | None) -> None:
    if (
        access_key is None
        or secret_key is None
        or len(access_key) <= MIN_KEY_LENGTH
        or len(secret_key) <= MIN_KEY_LENGTH
    ):
        raise AclError(
            f"The accessKey={_java(access_key)} and secretKey={_java(secret_key)} cannot be null "
            "and length should longer than 6"
        )


def _java(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _text(value: Any) -> str | None:
    return None if value is None else _java(value)


def _texts(value: Any) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        value = [value]
    return [_java(item) for item in value]


@dataclass(slots=True)
class Account:
    """One account of a plain_acl file, ready for checks."""

    access_key: str
    secret_key: str
    white_remote_address: str | None = None
    admin: bool = False
    default_topic_perm: int = DENY
    default_group_perm: int = DENY
    perms: dict[str, int] = field(default_factory=dict)
    white: Matcher = field(default=address_matcher(None), repr=False)

    @classmethod
    def from_yaml(cls, data: Mapping[str, Any]) -> Account:
        """An account from its YAML map; AclError as Apache's buildPlainAccessResource."""
        access_key, secret_key = _text(data.get("accessKey")), _text(data.get("secretKey"))
        check_keys(access_key, secret_key)
        assert access_key is not None and secret_key is not None
        white = _text(data.get("whiteRemoteAddress"))
        admin = data.get("admin")
        account = cls(
            access_key,
            secret_key,
            white,
            admin is True or _java(admin).lower() == "true",
            parse_perm(_text(data.get("defaultTopicPerm"))),
            parse_perm(_text(data.get("defaultGroupPerm"))),
            white=address_matcher(white),
        )
        account.add_perms(_texts(data.get("groupPerms")), topic=False)
        account.add_perms(_texts(data.get("topicPerms")), topic=True)
        return account

    def add_perms(self, items: list[str] | None, *, topic: bool) -> None:
        for item in items or ():
            parts = _split_resource(item)
            if len(parts) != 2:
                kind = "topic" if topic else "group"
                raise AclError(f"Parse resource permission failed for {kind}:{item}")
            name = parts[0].strip()
            self.perms[name if topic else retry_topic(name)] = parse_perm(parts[1].strip())

    def require_admin(self, code: int) -> None:
        """Raise AclError (Apache's "Need admin permission") unless this is an admin account."""
        if not self.admin:
            raise AclError(
                f"Need admin permission for request code={code}, "
                f"but accessKey={self.access_key} is not",
                errors.NEED_ADMIN,
            )

    def check(self, code: int, needed: Mapping[str, int]) -> None:
        """Raise AclError unless this account may use every resource of `needed`."""
        if code in ADMIN_CODES:
            self.require_admin(code)
        if not self.perms and self.admin:
            return
        for resource, perm in needed.items():
            owned = self.perms.get(resource)
            if owned is None:
                default = (
                    self.default_group_perm
                    if is_group_resource(resource)
                    else self.default_topic_perm
                )
                if not check_permission(perm, default):
                    raise AclError(
                        f"No default permission for {describe(resource)}", errors.NO_DEFAULT_PERM
                    )
            elif not check_permission(perm, owned):
                raise AclError(f"No default permission for {describe(resource)}", errors.NO_PERM)
