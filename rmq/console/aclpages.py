"""The console's ACL page: the brokers' plain-ACL accounts and global white list, and an
admin's changes to them, through the operations `rmq acl` uses.

* `/acl`: each master's accounts (access key, admin, default and per-topic and per-group
  permissions, white address; never a secret: the brokers do not send rmq's, and
  `acl_accounts` drops Apache 4.9.7's) and global white addresses
  (GET_BROKER_CLUSTER_ACL_CONFIG); a broker that does not serve it (ACL off, or Apache's
  since 4.9.8) is named;
* POST `/acl/account`: create or update an account on every broker of a cluster
  (UPDATE_AND_CREATE_ACL_CONFIG); its secret is typed into a password field, sent to the
  brokers and never shown back, not even on the page that says it was saved;
* POST `/acl/delete`: delete an account from every broker of a cluster (DELETE_ACL_CONFIG),
  after a preview;
* POST `/acl/white`: replace the global white list on every broker of a cluster
  (UPDATE_GLOBAL_WHITE_ADDRS_CONFIG), after a preview of the list now and after.

The console signs these requests with the cluster credentials it was started with
(`--access-key`/`--secret-key`, the environment or the profile), which must be an admin
account of the brokers' ACL.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from rmq.client.admin import AdminClient, describe
from rmq.client.adminops.acl import (
    AclAccounts,
    acl_accounts,
    acl_targets,
    delete_account,
    update_account,
    update_global_white,
)
from rmq.client.api.acl import PlainAccessConfig
from rmq.client.errors import MQBrokerError
from rmq.console.auth import Session
from rmq.console.http import HTML, Answer, Query, one
from rmq.console.pages import admin_only, e, layout, post_form, table

if TYPE_CHECKING:
    from rmq.console.web import Console

log = logging.getLogger(__name__)

PERMS = ("DENY", "PUB", "SUB", "PUB|SUB")
MIN_SECRET = 7
"""A secret key must be longer than 6 characters, as the brokers require."""


async def _listing(
    admin: AdminClient,
) -> tuple[list[str], list[AclAccounts], list[tuple[str, str]]]:
    """The clusters, the accounts of each master that lists them, and each master that
    does not with its answer (rmq's without aclEnable: REQUEST_CODE_NOT_SUPPORTED; Apache
    4.9.8's: SYSTEM_ERROR, its handler's response header class missing from its jars)."""
    info = await admin.cluster_info()
    clusters = sorted(info.cluster_addr_table)
    found, lacking = [], []
    for cluster in clusters:
        for addr in await acl_targets(admin, None, cluster, masters=True) or []:
            try:
                found.append(await acl_accounts(admin, addr))
            except MQBrokerError as exc:
                lacking.append((addr, describe(exc)))
    return clusters, found, lacking


def page(console: Console, query: Query) -> Answer:
    clusters, found, lacking = console.read(_listing)
    parts = []
    for entry in found:
        rows = [
            (
                e(a.access_key),
                "yes" if a.admin else "no",
                e(a.default_topic_perm or "-"),
                e(a.default_group_perm or "-"),
                e(", ".join(a.topic_perms or []) or "-"),
                e(", ".join(a.group_perms or []) or "-"),
                e(a.white_remote_address or "-"),
            )
            for a in sorted(entry.accounts, key=lambda a: a.access_key)
        ]
        parts.append(
            f"<h2>Broker {e(entry.broker_addr)}</h2>"
            + table(
                [
                    "access key",
                    "admin",
                    "default topic perm",
                    "default group perm",
                    "topic perms",
                    "group perms",
                    "white address",
                ],
                rows,
            )
            + f'<p>Global white addresses: <span class="white">'
            f"{e(', '.join(entry.global_white_addrs) or '(none)')}</span></p>"
        )
    for addr, answer in lacking:
        parts.append(
            f'<p class="empty">Broker {e(addr)} does not list accounts: it does not serve '
            "GET_BROKER_CLUSTER_ACL_CONFIG (ACL off, or Apache's since 4.9.8); it answered "
            f"{e(answer)}</p>"
        )
    return 200, HTML, layout("ACL", "".join(parts) + _forms(clusters), "/acl")


def _forms(clusters: list[str]) -> str:
    cluster = (
        '<label>Cluster <select name="cluster">'
        + "".join(f"<option>{e(c)}</option>" for c in clusters)
        + "</select></label>"
    )

    def perm(name: str, label: str) -> str:
        options = '<option value="">(keep)</option>' + "".join(
            f"<option>{p}</option>" for p in PERMS
        )
        return f'<label>{label} <select name="{name}">{options}</select></label>'

    account = post_form(
        "/acl/account",
        cluster + '<label>Access key <input name="access_key" required></label>'
        '<label>Secret key <input name="secret_key" type="password" autocomplete="new-password"'
        f' minlength="{MIN_SECRET}" required></label>'
        '<label><input type="checkbox" name="admin" value="1"> admin</label><br>'
        + perm("default_topic_perm", "Default topic perm")
        + perm("default_group_perm", "Default group perm")
        + '<label>White address <input name="white" placeholder="192.168.1.*"></label><br>'
        '<label>Topic perms <input name="topic_perms" size="40" '
        'placeholder="Orders=PUB Payments=PUB|SUB"></label>'
        '<label>Group perms <input name="group_perms" size="40" '
        'placeholder="billing=SUB"></label>',
        "Save",
    )
    delete = post_form(
        "/acl/delete",
        cluster + '<label>Access key <input name="access_key" required></label>',
        "Delete…",
    )
    white = post_form(
        "/acl/white",
        cluster + '<label>Addresses <input name="addresses" size="50" '
        'placeholder="10.10.103.*, 192.168.0.*"></label>',
        "Replace…",
    )
    return admin_only(
        "<h2>Change</h2>"
        f'<fieldset id="acl-account"><legend>Create or update an account</legend>{account}'
        "<p>The permission lists replace the account's whole lists; a perm left at (keep) "
        "stays as the broker has it.</p></fieldset>"
        f'<fieldset id="acl-delete"><legend>Delete an account</legend>{delete}</fieldset>'
        f'<fieldset id="acl-white"><legend>Global white list</legend>{white}</fieldset>'
    )


def _done(title: str, text: str) -> Answer:
    body = f'<p class="done" id="done">{e(text)}</p><p><a href="/acl">Back to the ACL</a></p>'
    return 200, HTML, layout(title, body, "/acl")


def _refused(title: str, text: str) -> Answer:
    return 400, HTML, layout(title, f'<p class="down" id="problem">{e(text)}</p>', "/acl")


def _targets(console: Console, cluster: str) -> list[str] | None:
    return console.read(lambda admin: acl_targets(admin, None, cluster))


def _items(text: str) -> list[str] | None:
    items = [item for item in text.replace(",", " ").split() if item]
    return items or None


def save_account(console: Console, form: Query, session: Session) -> Answer:
    title = "Create or update an ACL account"
    cluster, key = one(form, "cluster"), one(form, "access_key")
    secret = form.get("secret_key", [""])[0]
    if not key or len(secret) < MIN_SECRET:
        return _refused(title, f"give the access key and a secret key of {MIN_SECRET}+ characters")
    for name in ("default_topic_perm", "default_group_perm"):
        if one(form, name) not in ("", *PERMS):
            return _refused(title, f"{name}: one of {', '.join(PERMS)}")
    account = PlainAccessConfig(
        access_key=key,
        secret_key=secret,
        white_remote_address=one(form, "white") or None,
        admin=one(form, "admin") == "1",
        default_topic_perm=one(form, "default_topic_perm") or None,
        default_group_perm=one(form, "default_group_perm") or None,
        topic_perms=_items(one(form, "topic_perms")),
        group_perms=_items(one(form, "group_perms")),
    )
    addrs = _targets(console, cluster)
    if not addrs:
        return _refused(title, f"the name server knows no cluster {cluster!r}")
    failures = _each(console, addrs, lambda admin, addr: update_account(admin, addr, account))
    if failures:
        return _refused(title, failures)
    log.info("console: %s saved ACL account %s on %s", session.user, key, ", ".join(addrs))
    return _done("Account saved", f"Account {key} saved on {', '.join(addrs)}.")


def delete(console: Console, form: Query, session: Session) -> Answer:
    title = "Delete an ACL account"
    cluster, key = one(form, "cluster"), one(form, "access_key")
    addrs = _targets(console, cluster) if key else None
    if not addrs:
        return _refused(title, "give the access key and a cluster the name server knows")
    if one(form, "confirm") != "1":
        text = (
            f"This deletes account {key} from the ACL of {', '.join(addrs)}: its clients' "
            "requests are refused from then on."
        )
        return 200, HTML, _preview(f"Delete account {key}?", text, "/acl/delete", form)
    failures = _each(console, addrs, lambda admin, addr: delete_account(admin, addr, key))
    if failures:
        return _refused(title, failures)
    log.info("console: %s deleted ACL account %s from %s", session.user, key, ", ".join(addrs))
    return _done("Account deleted", f"Account {key} deleted from {', '.join(addrs)}.")


def white_list(console: Console, form: Query, session: Session) -> Answer:
    title = "Replace the global white list"
    cluster = one(form, "cluster")
    addresses = ",".join(_items(one(form, "addresses")) or [])
    addrs = _targets(console, cluster)
    if not addrs:
        return _refused(title, f"the name server knows no cluster {cluster!r}")
    if one(form, "confirm") != "1":
        text = (
            f"This replaces the global white addresses of {', '.join(addrs)} with: "
            f"{addresses or '(none)'}.  Requests from those addresses are not checked."
        )
        return 200, HTML, _preview("Replace the global white list?", text, "/acl/white", form)
    failures = _each(
        console, addrs, lambda admin, addr: update_global_white(admin, addr, addresses)
    )
    if failures:
        return _refused(title, failures)
    log.info("console: %s set the global white list of %s", session.user, ", ".join(addrs))
    return _done("White list replaced", f"Global white addresses of {', '.join(addrs)} set.")


def _preview(title: str, text: str, action: str, form: Query) -> str:
    fields = "".join(
        f'<input type="hidden" name="{e(k)}" value="{e(v[0])}">'
        for k, v in form.items()
        if k not in ("csrf", "confirm", "secret_key") and v
    )
    confirm = post_form(
        action, fields + '<input type="hidden" name="confirm" value="1">', "Confirm", css="confirm"
    )
    return layout(title, f'<p>{e(text)}</p>{confirm}<p><a href="/acl">Cancel</a></p>', "/acl")


def _each(
    console: Console, addrs: list[str], call: Callable[[AdminClient, str], Awaitable[None]]
) -> str:
    """Run `call(admin, addr)` on each broker; '' when all succeeded, else what failed."""

    async def run(admin: AdminClient) -> str:
        failed = []
        for addr in addrs:
            try:
                await call(admin, addr)
            except Exception as exc:  # each broker's answer is reported
                failed.append(f"{addr}: {describe(exc)}")
        return "; ".join(failed)

    return console.read(run)
