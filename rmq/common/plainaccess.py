"""One account of the plain ACL as the admin requests carry it (Apache's PlainAccessConfig).

The client builds one for UPDATE_AND_CREATE_ACL_CONFIG (50) and the broker rebuilds it from
the request header; the permission lists are `Name=PERM` items (`TopicA=PUB`, `GroupA=SUB`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class PlainAccessConfig:
    """One account of a plain ACL file, as Apache's `PlainAccessConfig`."""

    access_key: str
    secret_key: str | None = None
    white_remote_address: str | None = None
    admin: bool = False
    default_topic_perm: str | None = None
    default_group_perm: str | None = None
    topic_perms: list[str] | None = None
    group_perms: list[str] | None = None
