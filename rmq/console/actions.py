"""The console's changes: each a POST handled here with the admin operation the CLI uses.

`rmq.console.http` has already checked the session, its CSRF token and the admin role.  A
change that destroys or moves something (deleting a topic, updating an existing one,
resetting a group's offsets) first answers a preview of what will change, with a form that
sends the same fields again with `confirm=1`; only that second POST changes the cluster,
as the CLI's `--dry-run` shows a plan before the real run.

* `/topic/update`: create or update a topic on every master of a cluster
  (UPDATE_AND_CREATE_TOPIC, `AdminClient.create_or_update_topic`);
* `/topic/delete`: delete it from every master of each cluster that serves it and from the
  name servers (`AdminClient.delete_topic`);
* `/topic/send`: send a test message (rmq's `Producer`, group `rmq-console`);
* `/group/reset`: move a group's offsets on a topic to a time, or to the end (skip the
  backlog) (`rmq.client.adminops.offsetreset`);
* `/group/update`, `/group/delete`: a subscription group on every master of a cluster
  (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP; DELETE_SUBSCRIPTIONGROUP and the group's retry and
  dead-letter topics), as `rmq group update` and `rmq group delete`;
* `/dlq/resend`, `/message/resend`: `rmq.console.deadletters`;
* `/acl/account`, `/acl/delete`, `/acl/white`: `rmq.console.aclpages`;
* `/namesrv/use`: ask another of the configured name servers first (only those).

Every change is logged at INFO with the user who made it.
"""

from __future__ import annotations

import logging
import time
from datetime import datetime
from typing import TYPE_CHECKING

from rmq.client.admin import AdminClient
from rmq.client.adminops.offsetreset import reset_group_offsets, reset_preview
from rmq.client.adminops.stats import topic_consumers
from rmq.client.adminops.topic import (
    delete_subscription_group,
    group_configs,
    group_footprint,
    update_subscription_group,
)
from rmq.client.errors import RouteNotFound
from rmq.client.message import Message
from rmq.client.producer import Producer
from rmq.common.naming import client_topic_error, group_error
from rmq.common.perm import PERM_READ, PERM_WRITE
from rmq.console import aclpages, actionpages, deadletters
from rmq.console.auth import Session
from rmq.console.http import HTML, Action, Answer, Query
from rmq.remoting.bodies import SubscriptionGroupConfig, TopicConfig

if TYPE_CHECKING:
    from rmq.console.web import Console

log = logging.getLogger(__name__)

CONSOLE_PRODUCER_GROUP = "rmq-console"
MAX_QUEUES = 1024
PERMS = {"6": PERM_READ | PERM_WRITE, "4": PERM_READ, "2": PERM_WRITE}


class FormError(ValueError):
    """A form field the change cannot take; the page says which and why."""


def field(form: Query, name: str, default: str = "") -> str:
    return form.get(name, [default])[0].strip()


def _count(form: Query, name: str, what: str) -> int:
    text = field(form, name, "8")
    if not text.isdigit() or not 1 <= int(text) <= MAX_QUEUES:
        raise FormError(f"{what} must be a number from 1 to {MAX_QUEUES}")
    return int(text)


def _topic(form: Query) -> str:
    name = field(form, "topic")
    error = client_topic_error(name)
    if error is not None:
        raise FormError(error)
    return name


def _answer(title: str, body: str) -> Answer:
    return 200, HTML, actionpages.result(title, body)


def _refused(title: str, error: Exception) -> Answer:
    return 400, HTML, actionpages.result(title, actionpages.problem(str(error)))


# -- topics ---------------------------------------------------------------------------------


def update_topic(console: Console, form: Query, session: Session) -> Answer:
    try:
        topic = _topic(form)
        cluster = field(form, "cluster")
        if not cluster:
            raise FormError("choose the cluster the topic goes to")
        config = TopicConfig(
            topic_name=topic,
            read_queue_nums=_count(form, "read", "read queues"),
            write_queue_nums=_count(form, "write", "write queues"),
            perm=PERMS.get(field(form, "perm", "6"), -1),
            order=field(form, "order") == "1",
        )
        if config.perm < 0:
            raise FormError("perm must be RW (6), R (4) or W (2)")
    except FormError as exc:
        return _refused("Create or update a topic", exc)

    async def current(admin: AdminClient) -> list[tuple[str, int, int, int]]:
        try:
            route = await admin.topic_route(topic)
        except RouteNotFound:
            return []
        info = await admin.cluster_info()
        names = set(info.cluster_addr_table.get(cluster, ()))
        return [
            (q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm)
            for q in route.queue_datas
            if q.broker_name in names
        ]

    before = console.read(current)
    wanted = (config.read_queue_nums, config.write_queue_nums, config.perm)
    changes = [row for row in before if row[1:] != wanted]
    if changes and field(form, "confirm") != "1":
        return 200, HTML, actionpages.topic_update_preview(form, topic, cluster, changes, wanted)
    result = console.read(lambda admin: admin.create_or_update_topic(config, cluster=cluster))
    verb = "updated" if before else "created"
    log.info("console: %s %s topic %s on %s", session.user, verb, topic, result.broker_addrs)
    return _answer(f"Topic {topic} {verb}", actionpages.topic_done(topic, verb, result))


def delete_topic(console: Console, form: Query, session: Session) -> Answer:
    try:
        topic = _topic(form)
    except FormError as exc:
        return _refused("Delete a topic", exc)

    async def plan(admin: AdminClient) -> tuple[list[str], list[str], list[str], int]:
        clusters = await admin.topic_clusters(topic)
        route = await admin.topic_route(topic)
        brokers = sorted(data.broker_name for data in route.broker_datas)
        try:
            groups = sorted(await topic_consumers(admin, topic))
        except Exception:  # no broker answers who consumes it: the preview says none
            groups = []
        held = sum(max(q.max_offset - q.min_offset, 0) for q in await admin.topic_status(topic))
        return clusters, brokers, groups, held

    clusters, brokers, groups, held = console.read(plan)
    if field(form, "confirm") != "1":
        return 200, HTML, actionpages.topic_delete_preview(topic, clusters, brokers, groups, held)

    async def delete(admin: AdminClient) -> None:
        for cluster in clusters:
            await admin.delete_topic(topic, cluster)

    console.read(delete)
    log.info("console: %s deleted topic %s from %s", session.user, topic, ", ".join(clusters))
    return _answer(f"Topic {topic} deleted", actionpages.topic_deleted(topic, clusters))


def send_message(console: Console, form: Query, session: Session) -> Answer:
    try:
        topic = _topic(form)
    except FormError as exc:
        return _refused("Send a test message", exc)
    body = form.get("body", [""])[0].replace("\r\n", "\n").encode()
    message = Message(
        topic,
        body,
        tags=field(form, "tags") or None,
        keys=field(form, "keys").split() or None,
    )

    async def send(admin: AdminClient) -> tuple[str, str, int, int]:
        async with Producer(CONSOLE_PRODUCER_GROUP, ";".join(admin.namesrv_addrs)) as producer:
            sent = await producer.send(message)
        mq = sent.message_queue
        return sent.msg_id, mq.broker_name, mq.queue_id, sent.queue_offset

    msg_id, broker, queue_id, offset = console.read(send)
    log.info("console: %s sent a test message %s to %s", session.user, msg_id, topic)
    return _answer(
        "Message sent", actionpages.message_sent(topic, msg_id, broker, queue_id, offset)
    )


# -- groups ---------------------------------------------------------------------------------


def _reset_time(form: Query) -> int:
    """-1 (the end) for `to=last`, else the form's local time in ms."""
    if field(form, "to") == "last":
        return -1
    text = field(form, "time")
    try:
        return int(datetime.fromisoformat(text).timestamp() * 1000)
    except ValueError:
        raise FormError("the time must be YYYY-MM-DDTHH:MM[:SS]") from None


def reset_offsets(console: Console, form: Query, session: Session) -> Answer:
    group = field(form, "group")
    try:
        topic = _topic(form)
        timestamp = _reset_time(form)
        if not group:
            raise FormError("name the consumer group")
    except FormError as exc:
        return _refused("Reset offsets", exc)
    if field(form, "confirm") != "1":
        rows = console.read(lambda admin: reset_preview(admin, group, topic, timestamp))
        return 200, HTML, actionpages.reset_preview_page(form, group, topic, timestamp, rows)
    done = console.read(lambda admin: reset_group_offsets(admin, group, topic, timestamp))
    log.info(
        "console: %s reset group %s on %s to %s",
        session.user,
        group,
        topic,
        "the end" if timestamp < 0 else time.strftime("%F %T", time.localtime(timestamp / 1000)),
    )
    return _answer(f"Offsets of {group} reset", actionpages.reset_done(group, topic, done))


def _flag(form: Query, name: str) -> bool:
    return field(form, name) == "1"


def _small(form: Query, name: str, what: str, low: int, default: str) -> int:
    text = field(form, name, default)
    try:
        value = int(text)
    except ValueError:
        raise FormError(f"{what} must be a whole number") from None
    if not low <= value <= 65535:
        raise FormError(f"{what} must be from {low} to 65535")
    return value


def _group_config(form: Query) -> SubscriptionGroupConfig:
    name = field(form, "group")
    error = group_error(name)
    if error is not None:
        raise FormError(error)
    return SubscriptionGroupConfig(
        group_name=name,
        consume_enable=_flag(form, "consume"),
        consume_from_min_enable=_flag(form, "from_min"),
        consume_broadcast_enable=_flag(form, "broadcast"),
        retry_queue_nums=_small(form, "retry_queues", "retry queues", 1, "1"),
        retry_max_times=_small(form, "retry_max_times", "retries before the DLQ", -1, "16"),
        broker_id=_small(form, "broker_id", "the broker id to consume from", 0, "0"),
        which_broker_when_consume_slowly=_small(
            form, "slow_broker_id", "the broker id when slow", 0, "1"
        ),
    )


def update_group(console: Console, form: Query, session: Session) -> Answer:
    cluster = field(form, "cluster")
    try:
        config = _group_config(form)
        if not cluster:
            raise FormError("choose the cluster the group goes to")
    except FormError as exc:
        return _refused("Create or update a consumer group", exc)
    name = config.group_name
    before = [
        at
        for at in console.read(lambda admin: group_configs(admin, name))
        if at.cluster == cluster and at.config != config
    ]
    if before and field(form, "confirm") != "1":
        return 200, HTML, actionpages.group_update_preview(form, config, before)

    async def update(admin: AdminClient) -> list[str]:
        done = await update_subscription_group(admin, config, cluster=cluster)
        if done.outcome.failures:
            addr, exc = next(iter(done.outcome.failures.items()))
            raise FormError(f"the update failed on {addr}: {exc}")
        return list(done.outcome.done)

    try:
        addrs = console.read(update)
    except FormError as exc:
        return _refused(f"Consumer group {name}", exc)
    verb = "updated" if before else "saved"
    log.info("console: %s %s group %s on %s", session.user, verb, name, addrs)
    return _answer(f"Consumer group {name} {verb}", actionpages.group_done(name, verb, addrs))


def delete_group(console: Console, form: Query, session: Session) -> Answer:
    name, cluster = field(form, "group"), field(form, "cluster")
    remove_offset = _flag(form, "remove_offset")
    if not name or not cluster:
        return _refused("Delete a consumer group", FormError("name the group and its cluster"))
    found = console.read(
        lambda admin: group_footprint(admin, name, offsets=remove_offset, cluster=cluster)
    )
    if not found.broker_addrs and not found.topics:
        message = f"consumer group {name} not found on {cluster}: nothing to delete"
        return _refused("Delete a consumer group", FormError(message))
    if field(form, "confirm") != "1":
        return 200, HTML, actionpages.group_delete_preview(form, name, cluster, found)

    async def delete(admin: AdminClient) -> None:
        done = await delete_subscription_group(
            admin, name, remove_offset=remove_offset, cluster=cluster
        )
        failure = done.failure or done.topic_failure
        if failure is not None:
            raise FormError(f"the deletion of group {name} failed: {failure}")

    try:
        console.read(delete)
    except FormError as exc:
        return _refused(f"Delete {name}", exc)
    log.info("console: %s deleted group %s from %s", session.user, name, cluster)
    return _answer(f"Consumer group {name} deleted", actionpages.group_deleted(name, found))


def use_namesrv(console: Console, form: Query, session: Session) -> Answer:
    """Ask another of the name servers the console was started with first; an address it
    was not given is refused (the console never reaches a server it was not told of)."""
    addr = field(form, "addr")

    async def use(admin: AdminClient) -> bool:
        if addr not in admin.namesrv_addrs:
            return False
        admin.use_namesrv(addr)
        return True

    if not console.read(use):
        return _refused(
            "Switch name servers",
            FormError(f"{addr!r} is not one of the name servers the console was started with"),
        )
    log.info("console: %s switched to name server %s", session.user, addr)
    return 303, HTML, "/"


ACTIONS: dict[str, Action] = {
    "/namesrv/use": use_namesrv,
    "/group/update": update_group,
    "/group/delete": delete_group,
    "/topic/update": update_topic,
    "/topic/delete": delete_topic,
    "/topic/send": send_message,
    "/group/reset": reset_offsets,
    "/dlq/resend": deadletters.resend,
    "/acl/account": aclpages.save_account,
    "/acl/delete": aclpages.delete,
    "/acl/white": aclpages.white_list,
    "/message/resend": deadletters.resend,
    "/message/send-again": deadletters.send_again,
}
