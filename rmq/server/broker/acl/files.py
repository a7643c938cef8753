"""The plain ACL files: where the broker finds them, what it loads, and how it rewrites them.

As Apache 4.9.8's PlainPermissionManager: every `*.yml` / `*.yaml` under
`$ROCKETMQ_HOME/conf/acl/` (sub-folders included) plus the default file
`$ROCKETMQ_HOME/conf/plain_acl.yml` (rmq's `aclFile` key names another default file; an
empty default file is created when missing).  An access key defined in two files counts in
the first only.  Each file may hold `globalWhiteRemoteAddresses`, `accounts` and
`dataVersion` (a one-element list: counter, timestamp).

The admin requests rewrite a file as Apache does: read it as a map (key order kept), change
it, bump its `dataVersion`, dump it in SnakeYAML's block style.  New accounts go to the
default file; an account is updated in the file that holds it (moved to the end of its
list).  A file that was empty starts as a Java HashMap, so its top-level keys come out in
HashMap order.  `poll()` reloads when a file changes, appears or disappears (Apache's
watcher, every 5 s).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rmq.common.javahash import java_hash_order
from rmq.common.plainaccess import PlainAccessConfig
from rmq.common.timeutil import now_millis
from rmq.server.broker.acl.accounts import Account, check_keys, check_resource_perms
from rmq.server.broker.acl.addresses import Matcher, address_matcher
from rmq.server.broker.acl.errors import AclError

log = logging.getLogger("rmq.broker.acl")

WATCH_INTERVAL = 5.0
"""Seconds between two looks at the files (Apache's AclFileWatchService)."""

ACCOUNT_ORDER = (
    "accessKey",
    "secretKey",
    "whiteRemoteAddress",
    "admin",
    "defaultTopicPerm",
    "defaultGroupPerm",
    "topicPerms",
    "groupPerms",
)


@dataclass(slots=True)
class AclState:
    """What the broker checks requests against (one load of the files)."""

    files: list[str] = field(default_factory=list)
    global_white: list[Matcher] = field(default_factory=list)
    accounts: dict[str, Account] = field(default_factory=dict)
    key_files: dict[str, str] = field(default_factory=dict)
    versions: dict[str, tuple[int, int]] = field(default_factory=dict)
    """file -> (counter, timestamp) of its dataVersion (0 and load time when it has none)."""


def read_yaml(path: str) -> Any:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise AclError(str(exc)) from exc


def dump_yaml(data: Mapping[str, Any]) -> str:
    """SnakeYAML's `dumpAsMap`: block style, plain scalars where YAML allows them."""
    return yaml.safe_dump(
        dict(data), default_flow_style=False, sort_keys=False, allow_unicode=True, width=80
    )


def _version_of(data: Mapping[str, Any]) -> tuple[int, int]:
    versions = data.get("dataVersion")
    if isinstance(versions, list) and versions and isinstance(versions[0], Mapping):
        first = versions[0]
        return int(first.get("counter", 0)), int(first.get("timestamp", 0))
    return 0, now_millis()


class AclFiles:
    """The ACL files of one broker and the state loaded from them."""

    def __init__(self, rocketmq_home: str | None, acl_file: str | None = None) -> None:
        self.home = rocketmq_home
        base = rocketmq_home if rocketmq_home is not None else "null"
        self.acl_dir = os.path.normpath(os.path.join(base, "conf", "acl"))
        default = acl_file or os.path.join(base, "conf", "plain_acl.yml")
        self.default_file = os.path.normpath(default)
        self.configured = bool(rocketmq_home) or bool(acl_file)
        self.state = AclState()
        self.default_version = (0, now_millis())
        """(counter, timestamp) of the default file as last loaded by the watcher."""
        self._stamps: dict[str, tuple[int, int]] = {}

    # -- loading -----------------------------------------------------------------------------

    def _listed(self) -> list[str]:
        found: list[str] = []
        if os.path.isdir(self.acl_dir):
            for folder, dirs, names in os.walk(self.acl_dir):
                dirs.sort()
                found += [
                    os.path.join(folder, n) for n in sorted(names) if n.endswith((".yml", ".yaml"))
                ]
        if os.path.exists(self.default_file) and self.default_file not in found:
            found.append(self.default_file)
        return found

    def _stamp(self, files: list[str]) -> dict[str, tuple[int, int]]:
        stamps = {}
        for path in files:
            try:
                stat = os.stat(path)
            except OSError:
                continue
            stamps[path] = (stat.st_mtime_ns, stat.st_size)
        return stamps

    def load(self, *, watched: bool = True) -> None:
        """Read every file into a new state (AclError leaves the old one in place).

        A load after a write of the broker's own is not `watched`: the watcher still sees the
        file changed and loads it again, and only a watched load moves `default_version`
        (Apache reports the default file's version as its watcher last loaded it)."""
        if not self.configured:
            return
        if not os.path.exists(self.default_file):
            try:
                Path(self.default_file).touch()
            except OSError as exc:
                raise AclError(f"{self.default_file}: {exc.strerror}") from exc
        files = self._listed()
        state = AclState(files=files)
        for path in files:
            try:
                self._load_file(state, path)
            except AclError as exc:
                raise AclError(f"{path}: {exc.message}") from exc
        self.state = state
        if watched:
            self._stamps = self._stamp(files)
            self.default_version = state.versions.get(self.default_file, (0, now_millis()))
        log.info("ACL loaded: %d files, %d accounts", len(files), len(state.accounts))

    def _load_file(self, state: AclState, path: str) -> None:
        data = read_yaml(path)
        if not isinstance(data, Mapping) or not data:
            return
        whites = [address_matcher(str(a)) for a in data.get("globalWhiteRemoteAddresses") or ()]
        state.global_white += whites
        for item in data.get("accounts") or ():
            if not isinstance(item, Mapping):
                raise AclError(f"an account is not a map: {item!r}")
            account = Account.from_yaml(item)
            if account.access_key in state.key_files:
                log.warning("access key %s is defined in several ACL files", account.access_key)
                continue
            state.accounts[account.access_key] = account
            state.key_files[account.access_key] = path
        state.versions[path] = _version_of(data)

    def poll(self) -> bool:
        """Reload when a file changed, appeared or went; True when it did."""
        if not self.configured:
            return False
        files = self._listed()
        if self._stamp(files) == self._stamps:
            return False
        try:
            self.load()
        except AclError as exc:
            log.error("ACL files not reloaded: %s", exc)
            self._stamps = self._stamp(files)
            return False
        return True

    # -- rewriting ---------------------------------------------------------------------------

    def _write(self, path: str, data: dict[str, Any]) -> None:
        counter, timestamp = 0, now_millis()
        versions = data.get("dataVersion")
        if isinstance(versions, list) and versions and isinstance(versions[0], Mapping):
            counter = int(versions[0].get("counter", 0))
        data["dataVersion"] = [{"counter": counter + 1, "timestamp": timestamp}]
        try:
            Path(path).write_text(dump_yaml(data), encoding="utf-8")
        except OSError as exc:
            raise AclError(str(exc)) from exc
        try:
            self.load(watched=False)
        except AclError as exc:
            # Apache writes what it was given and its watcher then fails to load it
            log.error("ACL files not reloaded after writing %s: %s", path, exc)

    def _read_map(self, path: str, first_keys: tuple[str, ...]) -> dict[str, Any]:
        data = read_yaml(path)
        if isinstance(data, dict):
            return data
        # a Java HashMap: its keys come out in bucket order
        return {key: None for key in java_hash_order((*first_keys, "dataVersion"))}

    def update_account(self, change: PlainAccessConfig) -> None:
        """Create or update an account (AclError with Apache's message when refused)."""
        check_keys(change.access_key, change.secret_key)
        assert change.access_key is not None
        check_resource_perms(change.topic_perms)
        check_resource_perms(change.group_perms)
        path = self.state.key_files.get(change.access_key, self.default_file)
        data = self._read_map(path, ("accounts",))
        accounts = data.get("accounts")
        if not isinstance(accounts, list):
            accounts = []
        existing = None
        for index, item in enumerate(accounts):
            if isinstance(item, dict) and str(item.get("accessKey")) == change.access_key:
                existing = accounts.pop(index)
                break
        accounts.append(_account_map(existing, change))
        data["accounts"] = accounts
        Account.from_yaml(accounts[-1])
        self._write(path, data)

    def delete_account(self, access_key: str | None) -> bool:
        if not access_key or access_key not in self.state.key_files:
            return False
        path = self.state.key_files[access_key]
        data = read_yaml(path)
        if not isinstance(data, dict) or not data:
            return True
        accounts = data.get("accounts") or []
        for index, item in enumerate(accounts):
            if str(item.get("accessKey")) == access_key:
                del accounts[index]
                data["accounts"] = accounts
                self._write(path, data)
                return True
        return False

    def update_global_white(self, addresses: list[str], path: str | None) -> bool:
        path = path or self.default_file
        if not os.path.isfile(path):
            log.error("%s does not exist or is a directory", path)
            return False
        if self.home is None or not path.startswith(self.home):
            log.error("%s is not under rocketmq.home.dir %s", path, self.home)
            return False
        data = self._read_map(path, ("globalWhiteRemoteAddresses",))
        data["globalWhiteRemoteAddresses"] = list(addresses)
        self._write(path, data)
        return True


def _account_map(existing: dict[str, Any] | None, change: PlainAccessConfig) -> dict[str, Any]:
    """Apache's createAclAccessConfigMap: the change written over the account's old map."""
    account: dict[str, Any] = existing if existing is not None else {}
    if not change.access_key or len(change.access_key) <= 6:
        raise AclError(
            f"The accessKey={change.access_key} cannot be null and length should longer than 6"
        )
    values: dict[str, Any] = {
        "accessKey": change.access_key,
        "secretKey": change.secret_key or None,
        "whiteRemoteAddress": change.white_remote_address,
        "admin": change.admin,
        "defaultTopicPerm": change.default_topic_perm or None,
        "defaultGroupPerm": change.default_group_perm or None,
        "topicPerms": change.topic_perms,
        "groupPerms": change.group_perms,
    }
    for key in ACCOUNT_ORDER:
        if values[key] is not None:
            account[key] = values[key]
    return account
