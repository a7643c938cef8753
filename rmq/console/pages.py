"""The console's HTML: one function per page, from the data of `rmq.console.reads`.

Pages are server-rendered HTML with a small inline style sheet and no JavaScript; every
value from the cluster is escaped.  Charts come from `rmq.console.charts`.  Links between
pages carry their arguments in the query string (`/topic?name=T`, `/group?name=G`,
`/message?id=ID&topic=T`), so each page can be bookmarked.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from html import escape
from urllib.parse import urlencode

from rmq.client.admin import BrokerStatus
from rmq.console.reads import GroupDetail, GroupRow, TopicDetail, TopicRow
from rmq.remoting.bodies.brokerquery import ProducerInfo

NAV = (
    ("/", "Overview"),
    ("/cluster", "Cluster"),
    ("/topics", "Topics"),
    ("/groups", "Consumer groups"),
    ("/producers", "Producers"),
    ("/messages", "Messages"),
    ("/dlq", "Dead letters"),
    ("/acl", "ACL"),
    ("/metrics", "Metrics"),
)

STYLE = """
body{font-family:system-ui,sans-serif;margin:0;color:#1f2937;background:#f9fafb}
header{background:#1e3a8a;color:#fff;padding:.6em 1.2em;display:flex;gap:1.4em;align-items:center}
header a{color:#dbeafe;text-decoration:none}header a.on{color:#fff;font-weight:600}
header b{margin-right:1em}main{padding:1em 1.4em}
table{border-collapse:collapse;background:#fff;margin:.5em 0 1.2em}
th,td{border:1px solid #e5e7eb;padding:.3em .6em;text-align:left;font-size:.92em;vertical-align:top}
th{background:#f3f4f6}td.n{text-align:right;font-variant-numeric:tabular-nums}
.down{color:#b91c1c;font-weight:600}.ok{color:#15803d}.empty{color:#6b7280}
form{margin:.4em 0 1em}input,select,button{font-size:.95em;margin-right:.4em}
pre{background:#fff;border:1px solid #e5e7eb;padding:.6em;white-space:pre-wrap;word-break:break-all}
svg.chart{background:#fff;border:1px solid #e5e7eb;max-width:100%}
header .who{margin-left:auto;display:flex;gap:.6em;align-items:center}
form.inline{display:inline;margin:0}
fieldset{background:#fff;border:1px solid #e5e7eb;margin:.5em 0 1em;max-width:60em}
legend{font-weight:600}label{margin-right:.8em}.done{color:#15803d;font-weight:600}
.warn{color:#b45309;font-weight:600}textarea{width:100%;font-family:monospace}
"""


USER_MARK = "<!--rmq:user-->"
"""Where the header says who is logged in (filled in by `rmq.console.http`)."""
CSRF_MARK = "<!--rmq:csrf-->"
"""Inside each form that changes something: the session's CSRF token field."""
ADMIN_OPEN, ADMIN_CLOSE = "<!--rmq:admin-->", "<!--/rmq:admin-->"
"""Around the forms of changes, which a viewer's page leaves out."""


def admin_only(html: str) -> str:
    return ADMIN_OPEN + html + ADMIN_CLOSE


def post_form(action: str, fields: str, button: str, *, css: str = "") -> str:
    """A form that changes something: POSTed with the session's CSRF token."""
    klass = f' class="{css}"' if css else ""
    return (
        f'<form method="post" action="{e(action)}"{klass}>{CSRF_MARK}{fields}'
        f"<button>{e(button)}</button></form>"
    )


def e(value: object) -> str:
    return escape(str(value))


def link(path: str, text: object, **query: object) -> str:
    target = f"{path}?{urlencode(query)}" if query else path
    return f'<a href="{e(target)}">{e(text)}</a>'


def when(millis: int | None) -> str:
    """Local time of `millis`, '-' for none."""
    if not millis or millis <= 0:
        return "-"
    seconds, rest = divmod(millis, 1000)
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(seconds)) + f".{rest:03d}"


def layout(title: str, body: str, current: str) -> str:
    nav = "".join(
        f'<a href="{path}"{" class=on" if path == current else ""}>{name}</a>' for path, name in NAV
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<link rel="icon" href="data:,"><title>{e(title)} - rmq console</title>'
        f"<style>{STYLE}</style></head><body><header><b>rmq console</b>{nav}"
        f'<span class="who">{USER_MARK}</span></header>'
        f"<main><h1>{e(title)}</h1>{body}</main></body></html>"
    )


def table(
    headers: Sequence[str], rows: Iterable[Sequence[str]], numeric: Sequence[int] = ()
) -> str:
    """A table of already-escaped cells; the columns in `numeric` right-aligned."""
    head = "".join(f"<th>{e(h)}</th>" for h in headers)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="n">{cell}</td>' if i in numeric else f"<td>{cell}</td>"
            for i, cell in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def login(target: str, problem: str, name: str = "") -> str:
    """The login form; `problem` says why the last try failed."""
    note = f'<p class="down" id="problem">{e(problem)}</p>' if problem else ""
    form = (
        '<form method="post" action="/login">'
        f'<input type="hidden" name="next" value="{e(target)}">'
        f'<label>Name <input name="user" value="{e(name)}" autocomplete="username" required>'
        "</label><label>Password "
        '<input type="password" name="password" autocomplete="current-password" required>'
        "</label><button>Log in</button></form>"
    )
    return layout("Log in", note + form, "")


def error_page(title: str, message: str, current: str) -> str:
    return layout(title, f'<p class="down">{e(message)}</p>', current)


# -- overview and cluster ------------------------------------------------------------------------


def overview(
    namesrvs: list[tuple[str, str | None]],
    current: str,
    day: str,
    days: list[str],
    broker_chart: str,
    topic: str | None,
    topic_chart: str,
    busiest: list[tuple[str, float]],
) -> str:
    rows = [
        (
            e(addr),
            '<span class="ok">up</span>'
            if error is None
            else f'<span class="down">down: {e(error)}</span>',
            "in use"
            if addr == current
            else admin_only(
                post_form(
                    "/namesrv/use",
                    f'<input type="hidden" name="addr" value="{e(addr)}">',
                    "Use this one",
                    css="inline",
                )
            ),
        )
        for addr, error in namesrvs
    ]
    choices = "".join(
        f"<option{' selected' if d == day else ''}>{e(d)}</option>" for d in days or [day]
    )
    picks = "".join(
        f"<option{' selected' if name == topic else ''}>{e(name)}</option>" for name, _ in busiest
    )
    body = (
        "<h2>Name servers</h2>"
        + table(["address", "status", ""], rows)
        + f'<form action="/"><label>Day <select name="date">{choices}</select></label>'
        + (f'<label>Topic <select name="topic">{picks}</select></label>' if busiest else "")
        + "<button>Show</button></form>"
        + f"<h2>Broker TPS ({e(day)})</h2>{broker_chart}"
        + f"<h2>Topic TPS: {e(topic or 'no topic with traffic yet')}</h2>{topic_chart}"
    )
    return layout("Overview", body, "/")


def cluster(statuses: list[BrokerStatus], replication: dict[str, str]) -> str:
    """Every broker with its role and figures.  The DLedger columns (term, committed index)
    show when a broker of a DLedger group is listed, the replication column when a broker
    has a slave or is one (`reads.replication`)."""

    def figure(value: object) -> str:
        if isinstance(value, float):
            return f"{value:.2f}"
        return "-" if value is None else e(value)

    dledger = any(s.term is not None for s in statuses)
    rows = []
    for s in statuses:
        row = [
            e(s.cluster),
            e(s.broker_name),
            e(s.broker_id),
            e(s.role or "-") if s.error is None else "-",
            link("/broker", s.addr, addr=s.addr),
            figure(s.version),
            figure(s.in_tps),
            figure(s.out_tps),
            figure(s.in_total_today),
            figure(s.out_total_today),
            figure(s.in_total_yesterday),
            figure(s.out_total_yesterday),
        ]
        if dledger:
            row += [figure(s.term), figure(s.committed_index)]
        if replication:
            row.append(e(replication.get(s.addr, "-")))
        row.append(
            '<span class="ok">up</span>'
            if s.error is None
            else f'<span class="down">down: {e(s.error)}</span>'
        )
        rows.append(row)
    headers = [
        "cluster",
        "broker",
        "id",
        "role",
        "address",
        "version",
        "in TPS",
        "out TPS",
        "in today",
        "out today",
        "in yesterday",
        "out yesterday",
    ]
    numeric = list(range(6, 12))
    if dledger:
        headers += ["term", "committed index"]
        numeric += [12, 13]
    if replication:
        headers.append("replication")
    headers.append("status")
    note = (
        '<p id="out-note">Out today and yesterday count every message consumers pulled, the '
        "console's own reads included (it browses messages as TOOLS_CONSUMER): the brokers, "
        "Apache's as rmq's, count every pull whatever its group.</p>"
    )
    return layout("Cluster", table(headers, rows, numeric=numeric) + note, "/cluster")


def broker(addr: str, runtime: dict[str, str], config: dict[str, str]) -> str:
    body = (
        "<h2>Runtime status</h2>"
        + table(["key", "value"], [(e(k), e(v)) for k, v in sorted(runtime.items())])
        + "<h2>Configuration</h2>"
        + table(["key", "value"], [(e(k), e(v)) for k, v in sorted(config.items())])
    )
    return layout(f"Broker {addr}", body, "/cluster")


# -- topics --------------------------------------------------------------------------------------

KINDS = ("NORMAL", "ORDER", "RETRY", "DLQ", "SYSTEM")


def topics(rows: list[TopicRow], kinds: set[str], query: str, actions: str = "") -> str:
    """The topic list; `actions`: the forms of changes (`rmq.console.actionpages`)."""
    boxes = "".join(
        f'<label><input type="checkbox" name="kind" value="{k}"{" checked" if k in kinds else ""}>'
        f"{k}</label> "
        for k in KINDS
    )
    shown = [r for r in rows if r.kind in kinds and query.lower() in r.name.lower()]
    form = (
        f'<form action="/topics"><input name="q" value="{e(query)}" placeholder="filter by name">'
        f"{boxes}<button>Filter</button></form>"
        f"<p>{len(shown)} of {len(rows)} topics</p>"
    )
    cells = [
        (
            link("/topic", r.name, name=r.name),
            e(r.kind),
            e(", ".join(sorted(r.brokers))),
            e(r.read_queues),
            e(r.write_queues),
            e(r.perm),
        )
        for r in shown
    ]
    headers = ["topic", "kind", "brokers", "read queues", "write queues", "perm"]
    return layout("Topics", actions + form + table(headers, cells, numeric=(3, 4, 5)), "/topics")


def topic(detail: TopicDetail, actions: str = "") -> str:
    queues = [
        (
            e(q.broker_name),
            e(q.queue_id),
            e(q.min_offset),
            e(q.max_offset),
            e(when(q.last_update_timestamp)),
        )
        for q in detail.queues
    ]
    brokers = [
        (
            e(b.cluster),
            e(b.broker_name),
            e(", ".join(f"{i}: {a}" for i, a in sorted(b.broker_addrs.items()))),
        )
        for b in detail.route.broker_datas
    ]
    route_queues = [
        (e(q.broker_name), e(q.read_queue_nums), e(q.write_queue_nums), e(q.perm))
        for q in detail.route.queue_datas
    ]
    groups = [(link("/group", g, name=g), e(lag), e(when(last))) for g, lag, last in detail.groups]
    body = (
        f"<p>{link('/messages', 'Browse its messages', topic=detail.name)}</p>"
        "<h2>Status per queue</h2>"
        + table(["broker", "queue", "min offset", "max offset", "last stored"], queues, (1, 2, 3))
        + "<h2>Route</h2>"
        + table(["cluster", "broker", "addresses (id: address)"], brokers)
        + table(["broker", "read queues", "write queues", "perm"], route_queues, (1, 2, 3))
        + "<h2>Consumer groups</h2>"
        + (
            table(["group", "lag", "last consumed message stored"], groups, (1,))
            if groups
            else '<p class="empty">No group consumes it.</p>'
        )
    )
    return layout(f"Topic {detail.name}", body + actions, "/topics")


# -- groups --------------------------------------------------------------------------------------


def groups(rows: list[GroupRow], query: str, system: bool, actions: str = "") -> str:
    shown = [r for r in rows if (system or not r.system) and query.lower() in r.name.lower()]
    form = (
        f'<form action="/groups"><input name="q" value="{e(query)}" placeholder="filter by name">'
        f'<label><input type="checkbox" name="system" value="1"{" checked" if system else ""}>'
        "system groups</label><button>Filter</button></form>"
        f"<p>{len(shown)} of {len(rows)} groups</p>"
    )
    cells = [
        (
            link("/group", r.name, name=r.name),
            e(r.lag),
            e(r.retry_lag),
            e(round(r.tps, 2)),
            "-" if r.clients is None else e(r.clients),
            e(r.model or "-"),
            e(", ".join(sorted(r.topics))),
        )
        for r in shown
    ]
    headers = ["group", "lag", "retry lag", "consume TPS", "clients", "model", "topics"]
    listing = table(headers, cells, (1, 2, 3, 4))
    return layout("Consumer groups", actions + form + listing, "/groups")


def group(detail: GroupDetail, actions: str = "") -> str:
    queues = [
        (
            link("/topic", mq.topic, name=mq.topic),
            e(mq.broker_name),
            e(mq.queue_id),
            e(broker_offset),
            e(consumer_offset),
            e(max(broker_offset - consumer_offset, 0)),
            e(when(last)),
        )
        for mq, broker_offset, consumer_offset, last in detail.queues
    ]
    total = sum(max(b - c, 0) for _, b, c, _ in detail.queues)
    connection = detail.connection
    if connection is None:
        members = '<p class="empty">No client of this group is online.</p>'
    else:
        members = table(
            ["client id", "address", "language", "version"],
            [
                (e(c.client_id), e(c.client_addr), e(c.language.name), e(c.version))
                for c in connection.connection_set
            ],
        ) + table(
            ["topic", "subscription"],
            [(e(t), e(s.sub_string)) for t, s in sorted(connection.subscription_table.items())],
        )
        model = connection.message_model.name if connection.message_model else "-"
        kind = connection.consume_type.name if connection.consume_type else "-"
        members = f"<p>Model {e(model)}, consume type {e(kind)}</p>" + members
        rates = [
            (
                e(client),
                e(topic),
                f"{status.pull_tps:.2f}",
                f"{status.pull_rt:.2f}",
                f"{status.consume_ok_tps:.2f}",
                f"{status.consume_rt:.2f}",
                f"{status.consume_failed_tps:.2f}",
                e(status.consume_failed_msgs),
            )
            for client, info in sorted(detail.running.items())
            for topic, status in sorted(info.status_table.items())
        ]
        if rates:
            members += "<h2>Running info</h2>" + table(
                [
                    "client id",
                    "topic",
                    "pull TPS",
                    "pull RT ms",
                    "consume OK TPS",
                    "consume RT ms",
                    "failed TPS",
                    "failed (last hour)",
                ],
                rates,
                range(2, 8),
            )
    progress = (
        table(
            [
                "topic",
                "broker",
                "queue",
                "broker offset",
                "consumer offset",
                "lag",
                "last consumed message stored",
            ],
            queues,
            (2, 3, 4, 5),
        )
        if queues
        else f'<p class="empty">No progress: {e(detail.error or "none")}</p>'
    )
    body = (
        f'<p>Total lag <b id="total-lag">{total}</b>; '
        f"{link('/dlq', 'its dead letters', group=detail.name)}</p>"
        "<h2>Clients</h2>" + members + "<h2>Progress per queue</h2>" + progress
    )
    return layout(f"Group {detail.name}", body + actions, "/groups")


# -- producers -----------------------------------------------------------------------------------


def producers(rows: list[tuple[str, str, ProducerInfo]]) -> str:
    cells = [
        (
            e(group),
            e(broker),
            e(client.client_id),
            e(client.remote_ip.lstrip("/")),
            e(client.language.name),
            e(client.version),
            e(when(client.last_update_timestamp)),
        )
        for group, broker, client in rows
    ]
    headers = [
        "producer group",
        "broker",
        "client id",
        "address",
        "language",
        "version",
        "last heartbeat",
    ]
    body = (
        table(headers, cells, (5,)) if cells else '<p class="empty">No producer is connected.</p>'
    )
    return layout("Producers", body, "/producers")
