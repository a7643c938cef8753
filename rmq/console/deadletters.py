"""The console's dead-letter queue: a group's `%DLQ%<group>` messages found by time range
or id, resent to the group, exported as NDJSON.

* `/dlq?group=&begin=&end=[&page=]` or `&id=`: the search (`reads.dead_letters`, positioned
  by the broker's offset-by-time lookup, 20 a page), with the groups that have a DLQ;
* `/dlq/export?...` the same search as NDJSON, one message record per line (rmq's record
  schema, `rmq.common.jsonrecord`, as `rmq consume` prints it), the whole range up to
  `EXPORT_MAX` messages, or the message of `id`;
* POST `/dlq/resend` (an admin's, as every change): each chosen message, by its offset
  message id, is consumed again by an online member of the group (CONSUME_MESSAGE_DIRECTLY
  through the broker that stored it, as the dashboard's resend and `rmq message
  consume-directly` do); the page lists each member's verdict.  The message page's "Resend
  to a group" posts here too, for the groups consuming its topic;
* POST `/message/send-again`: the message page's "Send it again to its topic" (`rmq message
  resend`).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

import orjson

from rmq.client.admin import AdminClient, describe
from rmq.client.adminops.consumer import GroupOffline
from rmq.client.adminops.message import consume_directly_by_group, view_message
from rmq.client.adminops.message_friendly import resend as resend_copy_of
from rmq.common.jsonrecord import to_record_dict
from rmq.common.message import MessageRecord
from rmq.common.naming import dlq_topic
from rmq.console import reads
from rmq.console.auth import Session
from rmq.console.http import HTML, Answer, Query, local_time, millis, one, page_number
from rmq.console.messagepages import BAD_TIMES, pager
from rmq.console.pages import (
    ADMIN_CLOSE,
    ADMIN_OPEN,
    CSRF_MARK,
    e,
    layout,
    link,
    table,
    when,
)
from rmq.console.reads import RangePage

if TYPE_CHECKING:
    from rmq.console.web import Console

log = logging.getLogger(__name__)

RANGE_MS = 24 * 3_600_000
"""The default range: the last day (a message reaches the DLQ only after its retries, hours
after it was sent with the default delays)."""

EXPORT_MAX = 10_000
"""Messages one export holds at most (the page says when a range holds more)."""

NDJSON = "application/x-ndjson"
MAX_RESEND = 100
"""Messages one resend takes at most."""


def _range(query: Query) -> tuple[str, str]:
    now = int(time.time() * 1000)
    return (
        one(query, "begin") or local_time(now - RANGE_MS),
        one(query, "end") or local_time(now + 60_000),
    )


def page(console: Console, query: Query) -> Answer:
    group, msg_id = one(query, "group"), one(query, "id")
    begin, end = _range(query)
    groups = console.read(reads.dlq_groups)
    result = ""
    args = {"group": group, "begin": begin, "end": end}
    if group and msg_id:
        record = _by_id(console, group, msg_id)
        found = [record] if record is not None else []
        result = _listing(group, found, f"{len(found)} found")
    elif group:
        try:
            low, high = millis(begin), millis(end)
        except ValueError:
            result = BAD_TIMES
        else:
            number = page_number(query)
            found_page = console.read(
                lambda admin: reads.dead_letters(admin, group, low, high, number)
            )
            if found_page is None:
                result = f'<p class="empty" id="result">{e(group)} has no dead letters.</p>'
            else:
                result = _listing(group, found_page.messages, _pager(found_page, args))
    return 200, HTML, _search_page(groups, group, begin, end, msg_id, result)


def _by_id(console: Console, group: str, msg_id: str) -> MessageRecord | None:
    topic = dlq_topic(group)
    record = console.read(lambda admin: reads.by_id(admin, msg_id, topic))
    return record if record is not None and record.topic == topic else None


def export(console: Console, query: Query) -> Answer:
    group, msg_id = one(query, "group"), one(query, "id")
    if not group:
        return 400, "text/plain; charset=utf-8", "name the consumer group: ?group=G\n"
    if msg_id:
        record = _by_id(console, group, msg_id)
        records = [record] if record is not None else []
    else:
        begin, end = _range(query)
        try:
            low, high = millis(begin), millis(end)
        except ValueError:
            return 400, "text/plain; charset=utf-8", "the times must be YYYY-MM-DDTHH:MM[:SS]\n"
        found = console.read(
            lambda admin: reads.dead_letters(admin, group, low, high, 1, EXPORT_MAX)
        )
        records = found.messages if found is not None else []
    lines = b"".join(orjson.dumps(to_record_dict(r)) + b"\n" for r in records)
    return 200, NDJSON, lines.decode()


def _pager(found: RangePage, args: dict[str, str]) -> str:
    more = f" (the first {EXPORT_MAX})" if found.total > EXPORT_MAX else ""
    export = link("/dlq/export", f"export the range as NDJSON{more}", **args)
    return f"{found.total} messages in the range; {pager(found, args, '/dlq')}; {export}"


def _listing(group: str, records: list[MessageRecord], heading: str) -> str:
    """The messages found, each with a box to choose it for a resend (admins only)."""
    if not records:
        return f'<div id="result"><p class="empty">{heading}</p></div>'
    rows = [
        (
            ADMIN_OPEN
            + f'<input type="checkbox" name="ids" value="{e(r.offset_msg_id)}">'
            + ADMIN_CLOSE,
            link("/message", r.msg_id, id=r.msg_id, topic=r.topic),
            e(r.properties.get("RETRY_TOPIC", "")),
            e(" ".join(r.keys)),
            e(r.reconsume_times),
            e(when(r.store_timestamp)),
        )
        for r in records
    ]
    every = "".join(
        f'<input type="hidden" name="all" value="{e(r.offset_msg_id)}">' for r in records
    )
    listing = table(["", "message id", "from topic", "keys", "reconsumed", "stored"], rows, (4,))
    return (
        f'<div id="result"><p>{heading}</p>'
        + ADMIN_OPEN
        + f'<form method="post" action="/dlq/resend" id="resend">{CSRF_MARK}'
        + f'<input type="hidden" name="group" value="{e(group)}">'
        + ADMIN_CLOSE
        + listing
        + ADMIN_OPEN
        + every
        + '<button name="which" value="chosen">Resend the chosen to the group</button> '
        + f'<button name="which" value="all">Resend all {len(records)} shown</button></form>'
        + ADMIN_CLOSE
        + "</div>"
    )


def _search_page(
    groups: list[str], group: str, begin: str, end: str, msg_id: str, result: str
) -> str:
    choices = "".join(f'<option value="{e(g)}"></option>' for g in groups)
    group_box = (
        f'<input name="group" value="{e(group)}" placeholder="consumer group" list="dlq-groups"'
        " required>"
    )
    listed = (
        f"<p>Groups with dead letters: {', '.join(link('/dlq', g, group=g) for g in groups)}</p>"
        if groups
        else '<p class="empty">No group has a dead-letter topic.</p>'
    )
    forms = (
        f'<datalist id="dlq-groups">{choices}</datalist>{listed}'
        "<h2>By consumer group and time range</h2>"
        f'<form action="/dlq">{group_box}'
        f'<input type="datetime-local" step="1" name="begin" value="{e(begin)}">'
        f'<input type="datetime-local" step="1" name="end" value="{e(end)}">'
        "<button>Search</button></form>"
        "<h2>By message id</h2>"
        f'<form action="/dlq">{group_box}'
        f'<input name="id" value="{e(msg_id)}" placeholder="message id" size="36" required>'
        "<button>Search</button></form>"
    )
    return layout("Dead letters", forms + result, "/dlq")


def resend(console: Console, form: Query, session: Session) -> Answer:
    """POST /dlq/resend: group, the offset ids (`ids`, or `all` with which=all)."""
    group = one(form, "group")
    ids = form.get("all" if one(form, "which") == "all" else "ids", [])
    ids = [i.strip() for i in ids if i.strip()][:MAX_RESEND]
    if not group or not ids:
        body = '<p class="down" id="problem">Choose the group and at least one message.</p>'
        return 400, HTML, layout("Resend", body, "/dlq")

    async def run(admin: AdminClient) -> list[tuple[str, str, str, str]]:
        verdicts = []
        for offset_id in ids:
            try:
                record = await view_message(admin, offset_id)
                member, result = await consume_directly_by_group(admin, group, record)
            except GroupOffline:
                verdicts.append((offset_id, "-", "-", f"no member of {group} is online"))
                continue
            except Exception as exc:  # one message's failure does not stop the others
                verdicts.append((offset_id, "-", "-", describe(exc)))
                continue
            verdict = result.consume_result.name if result.consume_result else "-"
            verdicts.append((record.msg_id, member, verdict, result.remark or ""))
        return verdicts

    verdicts = console.read(run)
    log.info("console: %s resent %d message(s) to group %s", session.user, len(ids), group)
    rows = [(e(m), e(c), e(v), e(r)) for m, c, v, r in verdicts]
    body = (
        f'<p class="done" id="done">Resent {len(ids)} to {link("/group", group, name=group)}'
        "; each member's verdict:</p>"
        + table(["message", "member", "result", "remark"], rows)
        + f"<p>{link('/dlq', 'Back to the dead letters', group=group)}</p>"
    )
    return 200, HTML, layout(f"Resent to {group}", body, "/dlq")


def send_again(console: Console, form: Query, session: Session) -> Answer:
    """POST /message/send-again: a stored message (by its offset id) sent again to its
    topic as a copy with a new unique key (producer group ReSendMsgById, as `rmq message
    resend` and mqadmin's queryMsgById -s true do)."""
    offset_id = one(form, "id")
    if not offset_id:
        body = '<p class="down" id="problem">Name the message (its offset id).</p>'
        return 400, HTML, layout("Send again", body, "/messages")

    async def run(admin: AdminClient) -> tuple[str, str, str]:
        record = await view_message(admin, offset_id)
        sent = await resend_copy_of(admin, record)
        return record.msg_id, sent.msg_id, sent.message_queue.topic

    original, copy, topic = console.read(run)
    log.info("console: %s sent %s again to %s as %s", session.user, original, topic, copy)
    body = (
        f'<p class="done" id="done">Sent {e(original)} again to {link("/topic", topic, name=topic)}'
        f" as {link('/message', copy, id=copy, topic=topic)}.</p>"
    )
    return 200, HTML, layout("Sent again", body, "/messages")
