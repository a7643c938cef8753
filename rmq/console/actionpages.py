"""The console's HTML for changes: the forms on the topic and group pages (shown to admins
only: `pages.admin_only`), the previews a destructive change answers first, and the pages
that say what was done.  Every form is a POST with the session's CSRF token
(`pages.post_form`)."""

from __future__ import annotations

import time
from collections.abc import Sequence

from rmq.client.admin import TopicUpdate
from rmq.client.adminops.offsetreset import QueuePreview, QueueReset
from rmq.client.adminops.topic import GroupConfigAt, GroupFootprint
from rmq.common.perm import perm_to_string
from rmq.console.pages import admin_only, e, layout, link, post_form, table
from rmq.console.reads import GroupDetail, TopicDetail
from rmq.remoting.bodies import SubscriptionGroupConfig

Query = dict[str, list[str]]
NUMBER = 'type="number" min="1" max="1024"'


def result(title: str, body: str) -> str:
    return layout(title, body, "")


def problem(message: str) -> str:
    return f'<p class="down" id="problem">{e(message)}</p>'


def _hidden(form: Query, *, skip: Sequence[str] = ("csrf", "confirm")) -> str:
    return "".join(
        f'<input type="hidden" name="{e(name)}" value="{e(values[0])}">'
        for name, values in form.items()
        if name not in skip and values
    )


def _confirm(action: str, form: Query, button: str, back: str) -> str:
    fields = _hidden(form) + '<input type="hidden" name="confirm" value="1">'
    return post_form(action, fields, button, css="confirm") + f"<p>{back}</p>"


# -- forms on the pages -----------------------------------------------------------------------


def _topic_fields(clusters: Sequence[str], name: str = "", read: int = 8, write: int = 8) -> str:
    options = "".join(f"<option>{e(c)}</option>" for c in clusters)
    perms = "".join(
        f'<option value="{v}">{t}</option>' for v, t in (("6", "RW"), ("4", "R"), ("2", "W"))
    )
    return (
        f'<label>Topic <input name="topic" value="{e(name)}" required></label>'
        f'<label>Cluster <select name="cluster">{options}</select></label>'
        f'<label>Read queues <input name="read" {NUMBER} value="{read}"></label>'
        f'<label>Write queues <input name="write" {NUMBER} value="{write}"></label>'
        f'<label>Perm <select name="perm">{perms}</select></label>'
        '<label><input type="checkbox" name="order" value="1"> ordered</label>'
    )


def topics_forms(clusters: Sequence[str]) -> str:
    form = post_form("/topic/update", _topic_fields(clusters), "Create or update")
    return admin_only(
        f'<fieldset id="create-topic"><legend>Create or update a topic</legend>{form}</fieldset>'
    )


def topic_forms(detail: TopicDetail) -> str:
    name = detail.name
    clusters = sorted({b.cluster for b in detail.route.broker_datas})
    read = max((q.read_queue_nums for q in detail.route.queue_datas), default=8)
    write = max((q.write_queue_nums for q in detail.route.queue_datas), default=8)
    send = post_form(
        "/topic/send",
        f'<input type="hidden" name="topic" value="{e(name)}">'
        '<label>Tags <input name="tags"></label>'
        '<label>Keys <input name="keys" placeholder="space-separated"></label><br>'
        '<textarea name="body" rows="3" placeholder="body"></textarea><br>',
        "Send",
    )
    update = post_form("/topic/update", _topic_fields(clusters, name, read, write), "Update")
    delete = post_form(
        "/topic/delete", f'<input type="hidden" name="topic" value="{e(name)}">', "Delete…"
    )
    return admin_only(
        '<h2>Change</h2><fieldset id="send-message"><legend>Send a test message</legend>'
        f"{send}</fieldset>"
        f'<fieldset id="update-topic"><legend>Update</legend>{update}</fieldset>'
        f'<fieldset id="delete-topic"><legend>Delete</legend>{delete}</fieldset>'
    )


def group_forms(detail: GroupDetail) -> str:
    topics = sorted({mq.topic for mq, _, _, _ in detail.queues if not mq.topic.startswith("%")})
    options = "".join(f"<option>{e(t)}</option>" for t in topics)
    group = f'<input type="hidden" name="group" value="{e(detail.name)}">'
    picker = (
        f'<label>Topic <select name="topic">{options}</select></label>'
        if topics
        else ('<label>Topic <input name="topic" required></label>')
    )
    now = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() - 3600))
    reset = post_form(
        "/group/reset",
        group + picker + '<input type="hidden" name="to" value="time">'
        f'<label>To the first message stored at or after <input type="datetime-local" step="1" '
        f'name="time" value="{now}" required></label>',
        "Reset…",
    )
    skip = post_form(
        "/group/reset",
        group + picker + '<input type="hidden" name="to" value="last">',
        "Skip the backlog…",
    )
    return admin_only(
        '<h2>Change</h2><fieldset id="reset-offsets"><legend>Reset offsets to a time</legend>'
        f'{reset}</fieldset><fieldset id="skip-backlog"><legend>Skip the backlog</legend>{skip}'
        "</fieldset>"
    )


def _group_fields(clusters: Sequence[str], name: str = "") -> str:
    options = "".join(f"<option>{e(c)}</option>" for c in clusters)
    named = (
        f'<input type="hidden" name="group" value="{e(name)}">'
        if name
        else '<label>Group <input name="group" required></label>'
    )
    return (
        named + f'<label>Cluster <select name="cluster">{options}</select></label><br>'
        '<label><input type="checkbox" name="consume" value="1" checked> may consume</label>'
        '<label><input type="checkbox" name="broadcast" value="1"> broadcast allowed</label>'
        '<label><input type="checkbox" name="from_min" value="1"> from the min offset</label><br>'
        f'<label>Retry queues <input name="retry_queues" {NUMBER} value="1"></label>'
        '<label>Retries before the DLQ <input name="retry_max_times" type="number" min="-1" '
        'value="16"></label>'
        '<label>Consume from broker id <input name="broker_id" type="number" min="0" '
        'value="0"></label>'
        '<label>when slow <input name="slow_broker_id" type="number" min="0" value="1"></label>'
    )


def groups_forms(clusters: Sequence[str]) -> str:
    form = post_form("/group/update", _group_fields(clusters), "Create or update")
    return admin_only(
        '<fieldset id="create-group"><legend>Create or update a consumer group</legend>'
        f"{form}</fieldset>"
    )


def group_settings_forms(name: str, clusters: Sequence[str]) -> str:
    """The group page's update and delete forms."""
    options = "".join(f"<option>{e(c)}</option>" for c in clusters)
    update = post_form("/group/update", _group_fields(clusters, name), "Update…")
    delete = post_form(
        "/group/delete",
        f'<input type="hidden" name="group" value="{e(name)}">'
        f'<label>Cluster <select name="cluster">{options}</select></label>'
        '<label><input type="checkbox" name="remove_offset" value="1"> and its offsets</label>',
        "Delete…",
    )
    return admin_only(
        f'<fieldset id="update-group"><legend>Update its settings</legend>{update}</fieldset>'
        f'<fieldset id="delete-group"><legend>Delete it</legend>{delete}</fieldset>'
    )


# -- previews and results ---------------------------------------------------------------------


def _settings(config: SubscriptionGroupConfig) -> dict[str, str]:
    return {
        "may consume": str(config.consume_enable).lower(),
        "broadcast allowed": str(config.consume_broadcast_enable).lower(),
        "from the min offset": str(config.consume_from_min_enable).lower(),
        "retry queues": str(config.retry_queue_nums),
        "retries before the DLQ": str(config.retry_max_times),
        "consume from broker id": str(config.broker_id),
        "when slow": str(config.which_broker_when_consume_slowly),
    }


def group_update_preview(
    form: Query, config: SubscriptionGroupConfig, before: list[GroupConfigAt]
) -> str:
    after = _settings(config)
    rows = [
        (e(at.broker_name), e(key), e(old), f"<b>{e(after[key])}</b>")
        for at in before
        for key, old in _settings(at.config).items()
        if old != after[key]
    ]
    name = config.group_name
    body = (
        f"<p>Group {link('/group', name, name=name)} exists; this changes it:</p>"
        + table(["broker", "setting", "now", "after"], rows)
        + _confirm("/group/update", form, "Update", link("/group", "Cancel", name=name))
    )
    return layout(f"Update group {name}?", body, "/groups")


def group_done(name: str, verb: str, addrs: list[str]) -> str:
    return (
        f'<p class="done" id="done">Consumer group {link("/group", name, name=name)} {e(verb)} '
        f"on {e(', '.join(addrs))}.</p>"
    )


def group_delete_preview(form: Query, name: str, cluster: str, found: GroupFootprint) -> str:
    offsets = "and its committed offsets " if form.get("remove_offset") else ""
    body = (
        f"<p>This deletes consumer group {link('/group', name, name=name)} {e(offsets)}from "
        f"{e(', '.join(found.broker_addrs) or 'no broker')} and its topics "
        f"{e(', '.join(found.topics) or '(none)')} from cluster {e(cluster)}: its members "
        "stop being able to consume until it is created again.</p>"
        + _confirm("/group/delete", form, f"Delete {name}", link("/group", "Cancel", name=name))
    )
    return layout(f"Delete group {name}?", body, "/groups")


def group_deleted(name: str, found: GroupFootprint) -> str:
    return (
        f'<p class="done" id="done">Consumer group {e(name)} deleted from '
        f"{e(', '.join(found.broker_addrs) or 'no broker')}; topics deleted: "
        f"{e(', '.join(found.topics) or 'none')}.</p>"
    )


def topic_update_preview(
    form: Query,
    topic: str,
    cluster: str,
    changes: list[tuple[str, int, int, int]],
    wanted: tuple[int, int, int],
) -> str:
    rows = [
        (
            e(broker),
            f"{read} → {wanted[0]}",
            f"{write} → {wanted[1]}",
            f"{perm_to_string(perm)} → {perm_to_string(wanted[2])}",
        )
        for broker, read, write, perm in changes
    ]
    warn = ""
    if any(write > wanted[1] or read > wanted[0] for _, read, write, _ in changes):
        warn = (
            '<p class="warn">Fewer queues: messages in the queues left out stay stored but '
            "are no longer read until the queues come back.</p>"
        )
    body = (
        f"<p>Topic {link('/topic', topic, name=topic)} exists on cluster {e(cluster)}; "
        "this changes it on these brokers:</p>"
        + table(["broker", "read queues", "write queues", "perm"], rows)
        + warn
        + _confirm("/topic/update", form, "Update", link("/topic", "Cancel", name=topic))
    )
    return layout(f"Update topic {topic}?", body, "/topics")


def topic_done(topic: str, verb: str, done: TopicUpdate) -> str:
    config = done.config
    return (
        f'<p class="done" id="done">Topic {link("/topic", topic, name=topic)} {e(verb)} on '
        f"{e(', '.join(done.broker_addrs))}: {config.read_queue_nums} read and "
        f"{config.write_queue_nums} write queues, perm {e(perm_to_string(config.perm))}.</p>"
    )


def topic_delete_preview(
    topic: str, clusters: list[str], brokers: list[str], groups: list[str], held: int
) -> str:
    consumers = ", ".join(link("/group", g, name=g) for g in groups) or "none"
    body = (
        f"<p>This deletes topic {link('/topic', topic, name=topic)} from every master of "
        f"{e(', '.join(clusters))} (brokers {e(', '.join(brokers))}) and from the name "
        f"servers.</p><ul><li>Messages it holds: <b>{held}</b>, no longer readable.</li>"
        f"<li>Groups consuming it: {consumers}.</li></ul>"
        + _confirm(
            "/topic/delete",
            {"topic": [topic]},
            f"Delete {topic}",
            link("/topic", "Cancel", name=topic),
        )
    )
    return layout(f"Delete topic {topic}?", body, "/topics")


def topic_deleted(topic: str, clusters: list[str]) -> str:
    return f'<p class="done" id="done">Topic {e(topic)} deleted from {e(", ".join(clusters))}.</p>'


def message_sent(topic: str, msg_id: str, broker: str, queue_id: int, offset: int) -> str:
    return (
        f'<p class="done" id="done">Sent to {link("/topic", topic, name=topic)}: message '
        f"{link('/message', msg_id, id=msg_id, topic=topic)} on {e(broker)}, queue "
        f"{queue_id}, offset {offset}.</p>"
    )


def reset_preview_page(
    form: Query, group: str, topic: str, timestamp: int, rows: list[QueuePreview]
) -> str:
    target = (
        "the end of each queue (skipping the backlog)"
        if timestamp < 0
        else "the first message stored at or after "
        + time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(timestamp / 1000))
    )
    cells = [
        (
            e(r.broker_name),
            e(r.queue_id),
            e(r.consumer_offset if r.consumer_offset >= 0 else "-"),
            e(r.target_offset),
            e(max(r.broker_offset - max(r.consumer_offset, 0), 0)),
            e(r.lag_after),
        )
        for r in rows
    ]
    before = sum(max(r.broker_offset - max(r.consumer_offset, 0), 0) for r in rows)
    after = sum(r.lag_after for r in rows)
    body = (
        f"<p>This moves group {link('/group', group, name=group)}'s offsets on "
        f"{link('/topic', topic, name=topic)} to {e(target)}: total lag {before} → "
        f'<b id="lag-after">{after}</b>.</p>'
        + table(
            ["broker", "queue", "consumer offset", "new offset", "lag now", "lag after"],
            cells,
            (1, 2, 3, 4, 5),
        )
        + _confirm("/group/reset", form, "Reset", link("/group", "Cancel", name=group))
    )
    return layout(f"Reset {group}'s offsets?", body, "/groups")


def reset_done(group: str, topic: str, rows: list[QueueReset]) -> str:
    online = any(r.online for r in rows)
    how = "its online members were told to move" if online else "no member was online: committed"
    cells = [(e(r.broker_name), e(r.queue_id), e(r.offset)) for r in rows]
    return (
        f'<p class="done" id="done">Offsets of {link("/group", group, name=group)} on '
        f"{e(topic)} reset ({how}).</p>" + table(["broker", "queue", "offset"], cells, (1, 2))
    )
