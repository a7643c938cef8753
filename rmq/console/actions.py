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
  backlog) (`rmq.client.adminops.offsetreset`).

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
from rmq.client.errors import RouteNotFound
from rmq.client.message import Message
from rmq.client.producer import Producer
from rmq.common.naming import client_topic_error
from rmq.common.perm import PERM_READ, PERM_WRITE
from rmq.console import actionpages, deadletters
from rmq.console.auth import Session
from rmq.console.http import HTML, Action, Answer, Query
from rmq.remoting.bodies import TopicConfig

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


ACTIONS: dict[str, Action] = {
    "/topic/update": update_topic,
    "/topic/delete": delete_topic,
    "/topic/send": send_message,
    "/group/reset": reset_offsets,
    "/dlq/resend": deadletters.resend,
    "/message/resend": deadletters.resend,
}
