"""The console's message pages: the three searches, the dead-letter search, a message and
its trace (the shared layout, table and escaping are `rmq.console.pages`')."""

from __future__ import annotations

from rmq.client.adminops.message import MessageTrack
from rmq.common.message import MessageRecord
from rmq.common.trace import TraceView
from rmq.console.pages import admin_only, e, layout, link, post_form, table, when
from rmq.console.reads import RangePage


def _message_rows(records: list[MessageRecord]) -> list[tuple[str, ...]]:
    return [
        (
            link("/message", r.msg_id, id=r.msg_id, topic=r.topic),
            e(r.tags or ""),
            e(" ".join(r.keys)),
            e(r.store_host),
            e(r.queue_id),
            e(r.queue_offset),
            e(when(r.store_timestamp)),
        )
        for r in records
    ]


MESSAGE_HEADERS = ["message id", "tags", "keys", "store host", "queue", "offset", "stored"]


def messages(
    topic: str,
    begin: str,
    end: str,
    key: str,
    msg_id: str,
    result: str,
) -> str:
    def form(fields: str) -> str:
        return f'<form action="/messages">{fields}<button>Search</button></form>'

    topic_box = f'<input name="topic" value="{e(topic)}" placeholder="topic"'
    forms = (
        "<h2>By topic and time range</h2>"
        + form(
            f"{topic_box} required>"
            f'<input type="datetime-local" step="1" name="begin" value="{e(begin)}">'
            f'<input type="datetime-local" step="1" name="end" value="{e(end)}">'
        )
        + "<h2>By topic and key</h2>"
        + form(
            f'{topic_box} required><input name="key" value="{e(key)}" placeholder="key" required>'
        )
        + "<h2>By message id</h2>"
        + form(
            f'{topic_box[:-1]} (optional)">'
            f'<input name="id" value="{e(msg_id)}" placeholder="message id" size="36" required>'
        )
    )
    return layout("Messages", forms + result, "/messages")


def found(records: list[MessageRecord]) -> str:
    if not records:
        return '<p class="empty" id="result">No message found.</p>'
    rows = table(MESSAGE_HEADERS, _message_rows(records), (4, 5))
    return f'<div id="result"><p>{len(records)} found</p>{rows}</div>'


BAD_TIMES = '<p class="down" id="result">The times must be YYYY-MM-DDTHH:MM[:SS].</p>'
"""What a time-range search with a time it cannot read shows in place of its result."""


def pager(page: RangePage, query: dict[str, str], path: str) -> str:
    """ "page N of M" with links to the neighbouring pages of the same search on `path`."""
    parts = []
    if page.page > 1:
        parts.append(link(path, "previous", **{**query, "page": page.page - 1}))
    parts.append(f"page {page.page} of {page.pages}")
    if page.page < page.pages:
        parts.append(link(path, "next", **{**query, "page": page.page + 1}))
    return " ".join(parts)


def range_result(page: RangePage, query: dict[str, str]) -> str:
    """A page of the messages search by time range, with links to its neighbours."""
    pages = pager(page, query, "/messages")
    return (
        f'<div id="result"><p>{page.total} messages in the range; {pages}</p>'
        + table(MESSAGE_HEADERS, _message_rows(page.messages), (4, 5))
        + "</div>"
    )


def message(record: MessageRecord, tracks: list[MessageTrack]) -> str:
    body = record.decompressed_body() or b""
    try:
        text = body.decode()
    except UnicodeDecodeError:
        text = body.hex()
    facts = [
        ("topic", link("/topic", record.topic, name=record.topic)),
        ("message id", e(record.msg_id)),
        ("offset message id", e(record.offset_msg_id)),
        ("tags", e(record.tags or "")),
        ("keys", e(" ".join(record.keys))),
        ("queue", e(record.queue_id)),
        ("queue offset", e(record.queue_offset)),
        ("commit log offset", e(record.physical_offset)),
        ("born", f"{e(when(record.born_timestamp))} from {e(record.born_host)}"),
        ("stored", f"{e(when(record.store_timestamp))} on {e(record.store_host)}"),
        ("reconsumed", e(record.reconsume_times)),
        ("body size", e(len(body))),
    ]
    props = [(e(k), e(v)) for k, v in sorted(record.properties.items())]
    content = (
        table(["field", "value"], facts)
        + "<h2>Properties</h2>"
        + table(["property", "value"], props)
        + f'<h2>Body</h2><pre id="body">{e(text)}</pre>'
        + f"<p>{link('/trace', 'Its trace', id=record.msg_id)}</p>"
        + "<h2>Consumer groups</h2>"
        + (
            table(
                ["group", "track", "detail"],
                [
                    (
                        link("/group", t.consumer_group, name=t.consumer_group),
                        e(t.track_type.value),
                        e(t.exception_desc or ""),
                    )
                    for t in tracks
                ],
            )
            if tracks
            else '<p class="empty">No group consumes its topic.</p>'
        )
    )
    groups = sorted({t.consumer_group for t in tracks})
    picker = (
        '<label>Group <select name="group">'
        + "".join(f"<option>{e(g)}</option>" for g in groups)
        + "</select></label>"
        if groups
        else '<label>Group <input name="group" required></label>'
    )
    resend = admin_only(
        '<fieldset id="resend-message"><legend>Resend to a group</legend>'
        + post_form(
            "/message/resend",
            f'<input type="hidden" name="ids" value="{e(record.offset_msg_id)}">' + picker,
            "Resend",
        )
        + "<p>An online member of the group consumes it again now (CONSUME_MESSAGE_DIRECTLY)."
        "</p></fieldset>"
        '<fieldset id="send-again"><legend>Send it again to its topic</legend>'
        + post_form(
            "/message/send-again",
            f'<input type="hidden" name="id" value="{e(record.offset_msg_id)}">',
            "Send again",
        )
        + "<p>A copy with a new message id, as rmq message resend sends.</p></fieldset>"
    )
    return layout(f"Message {record.msg_id}", content + resend, "/messages")


def trace(msg_id: str, trace_topic: str, views: list[TraceView] | None) -> str:
    """`rmq message trace`'s rows of `msg_id`, oldest first (None: no id asked yet)."""
    form = (
        '<form action="/trace">'
        f'<input name="id" value="{e(msg_id)}" placeholder="message id" size="36" required>'
        f'<input name="topic" value="{e(trace_topic)}" placeholder="trace topic">'
        "<button>Search</button></form>"
    )
    if views is None:
        result = ""
    elif not views:
        result = f'<p class="empty" id="result">No trace of {e(msg_id)} in {e(trace_topic)}.</p>'
    else:
        cells = [
            (
                e(v.msg_type),
                e(v.group),
                e(v.client_host),
                e(when(v.timestamp)),
                e(v.cost_time),
                e(v.status),
                link("/topic", v.topic, name=v.topic) if v.topic else "",
                e(v.tags),
                e(v.keys),
                e(v.store_host),
            )
            for v in views
        ]
        headers = [
            "type",
            "group",
            "client host",
            "time",
            "cost ms",
            "status",
            "topic",
            "tags",
            "keys",
            "store host",
        ]
        result = f'<div id="result"><h2>Trace records</h2>{table(headers, cells, (4,))}</div>'
    return layout("Message trace", form + result, "/messages")
