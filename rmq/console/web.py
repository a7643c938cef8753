"""`rmq console`'s process: the web pages, the TPS history and `/metrics`.

A `Console` owns one `AdminClient` on an asyncio loop (the main thread's, in `run`) and the
standard library's `ThreadingHTTPServer` on its own thread.  A request's thread hands the
page's reads (`rmq.console.reads`) to the loop and waits for them, then renders the page
(`rmq.console.pages`).  Beside the pages the loop runs two collections every `interval`:

* a TPS round into the day's history file (`rmq.console.history`), drawn by the overview;
* `rmq exporter`'s round (`rmq.console.exporter.Exporter`), served on `/metrics`.

Every page is a GET and reads only; a read that fails shows its error on the page (status
502), never a traceback.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from rmq.client.admin import AdminClient
from rmq.common.naming import RMQ_SYS_TRACE_TOPIC
from rmq.console import (
    aclpages,
    actionpages,
    charts,
    deadletters,
    messagepages,
    pages,
    reads,
)
from rmq.console.actions import ACTIONS
from rmq.console.auth import Sessions
from rmq.console.exporter import Exporter
from rmq.console.history import History, day_of, tps_round
from rmq.console.http import (
    HTML,
    Answer,
    Page,
    Query,
    Server,
    local_time,
    millis,
    one,
    page_number,
)
from rmq.console.metrics import CONTENT_TYPE
from rmq.console.users import Users

log = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_PORT = 8080
PAGE_TIMEOUT = 30.0
"""Seconds a page waits for its reads."""


class Console:
    """The console's server, reads and collections (module docstring)."""

    def __init__(
        self,
        namesrv_addrs: str,
        *,
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        interval: float = 60.0,
        history: History | None = None,
        users: Users | None = None,
    ) -> None:
        self.namesrv_addrs = namesrv_addrs
        self.host = host
        self.port = port
        self.interval = interval
        self.history = history if history is not None else History()
        self.exporter = Exporter(namesrv_addrs, interval=interval)
        self.sessions = Sessions(users)
        """Who is logged in; `users` None: no login (loopback only, see `rmq console`)."""
        self.seen_brokers: dict[str, tuple[str, str, int]] = {}
        """Every broker the cluster page listed: one gone from the name server shows down."""
        self._admin: AdminClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._server: Server | None = None

    def serve(self) -> tuple[str, int]:
        """Start the HTTP server on its thread; the address it listens on."""
        self._server = Server((self.host, self.port), self, ROUTES, ACTIONS)
        threading.Thread(
            target=self._server.serve_forever, name="console-http", daemon=True
        ).start()
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def read(self, work: Callable[[AdminClient], Awaitable[T]]) -> T:
        """Run `work` on the console's loop with its admin client; from a request's thread."""
        if not self._ready.wait(PAGE_TIMEOUT):
            raise TimeoutError("the console is still starting")
        assert self._loop is not None and self._admin is not None
        admin = self._admin

        async def call() -> T:
            return await work(admin)

        return asyncio.run_coroutine_threadsafe(call(), self._loop).result(PAGE_TIMEOUT)

    async def run(self, stop: asyncio.Event) -> None:
        """Serve reads and collect until `stop` is set."""
        async with AdminClient(self.namesrv_addrs) as admin:
            self._admin = admin
            self._loop = asyncio.get_running_loop()
            self._ready.set()
            await asyncio.gather(self.exporter.run(stop), self._collect(admin, stop))

    async def _collect(self, admin: AdminClient, stop: asyncio.Event) -> None:
        while not stop.is_set():
            started = time.monotonic()
            try:
                self.history.append(await tps_round(admin))
            except Exception as exc:
                log.warning("TPS round failed: %s", exc)
            wait = max(0.0, self.interval - (time.monotonic() - started))
            try:
                await asyncio.wait_for(stop.wait(), wait)
            except TimeoutError:
                continue


# -- pages ---------------------------------------------------------------------------------------


def _overview(console: Console, query: Query) -> Answer:
    today = day_of(int(time.time() * 1000))
    day = one(query, "date", today)
    history = console.history
    busiest = history.busiest_topics(day)
    topic = one(query, "topic") or (busiest[0][0] if busiest else None)
    namesrvs = console.read(reads.namesrv_status)
    current = console.read(reads.current_namesrv)
    broker_chart = charts.line_chart(history.broker_series(day), "broker TPS")
    points = history.topic_series(day, topic) if topic else []
    topic_chart = charts.line_chart({f"{topic} in": points} if topic else {}, "topic TPS")
    days = history.days()
    if today not in days:
        days.insert(0, today)
    html = pages.overview(namesrvs, current, day, days, broker_chart, topic, topic_chart, busiest)
    return 200, HTML, html


def _cluster(console: Console, query: Query) -> Answer:
    seen = console.seen_brokers
    statuses = console.read(lambda admin: reads.brokers(admin, seen))
    return 200, HTML, pages.cluster(statuses, reads.replication(statuses))


def _broker(console: Console, query: Query) -> Answer:
    addr = one(query, "addr")
    runtime, config = console.read(lambda admin: reads.broker_detail(admin, addr))
    return 200, HTML, pages.broker(addr, runtime, config)


def _topics(console: Console, query: Query) -> Answer:
    kinds = set(query.get("kind", [])) or {"NORMAL", "ORDER"}
    rows = console.read(reads.topics)
    forms = actionpages.topics_forms(_clusters(console))
    return 200, HTML, pages.topics(rows, kinds, one(query, "q"), forms)


def _topic(console: Console, query: Query) -> Answer:
    name = one(query, "name")
    detail = console.read(lambda admin: reads.topic_detail(admin, name))
    return 200, HTML, pages.topic(detail, actionpages.topic_forms(detail))


def _groups(console: Console, query: Query) -> Answer:
    rows = console.read(reads.groups)
    forms = actionpages.groups_forms(_clusters(console))
    return 200, HTML, pages.groups(rows, one(query, "q"), one(query, "system") == "1", forms)


def _clusters(console: Console) -> list[str]:
    info = console.read(lambda admin: admin.cluster_info())
    return sorted(info.cluster_addr_table)


def _group(console: Console, query: Query) -> Answer:
    name = one(query, "name")
    detail = console.read(lambda admin: reads.group_detail(admin, name))
    forms = actionpages.group_forms(detail)
    forms += actionpages.group_settings_forms(name, _clusters(console))
    return 200, HTML, pages.group(detail, forms)


def _producers(console: Console, query: Query) -> Answer:
    return 200, HTML, pages.producers(console.read(reads.producers))


def _messages(console: Console, query: Query) -> Answer:
    topic, key, msg_id = one(query, "topic"), one(query, "key"), one(query, "id")
    now = int(time.time() * 1000)
    begin = one(query, "begin") or local_time(now - 3_600_000)
    end = one(query, "end") or local_time(now + 60_000)
    result = ""
    if msg_id:
        record = console.read(lambda admin: reads.by_id(admin, msg_id, topic or None))
        result = messagepages.found([record] if record is not None else [])
    elif key and topic:
        result = messagepages.found(console.read(lambda admin: reads.by_key(admin, topic, key)))
    elif topic:
        try:
            low, high = millis(begin), millis(end)
        except ValueError:
            result = messagepages.BAD_TIMES
        else:
            number = page_number(query)
            page = console.read(lambda admin: reads.by_time(admin, topic, low, high, number))
            args = {"topic": topic, "begin": begin, "end": end}
            result = messagepages.range_result(page, args)
    return 200, HTML, messagepages.messages(topic, begin, end, key, msg_id, result)


def _message(console: Console, query: Query) -> Answer:
    msg_id, topic = one(query, "id"), one(query, "topic")
    record = console.read(lambda admin: reads.by_id(admin, msg_id, topic or None))
    if record is None:
        return 404, HTML, pages.error_page("Message", f"No message {msg_id}", "/messages")
    found = record
    return (
        200,
        HTML,
        messagepages.message(record, console.read(lambda admin: reads.tracks(admin, found))),
    )


def _trace(console: Console, query: Query) -> Answer:
    msg_id, topic = one(query, "id"), one(query, "topic") or RMQ_SYS_TRACE_TOPIC
    views = console.read(lambda admin: reads.trace(admin, msg_id, topic)) if msg_id else None
    return 200, HTML, messagepages.trace(msg_id, topic, views)


def _metrics(console: Console, query: Query) -> Answer:
    return 200, CONTENT_TYPE, console.exporter.store.render()


ROUTES: dict[str, Page] = {
    "/": _overview,
    "/cluster": _cluster,
    "/broker": _broker,
    "/topics": _topics,
    "/topic": _topic,
    "/groups": _groups,
    "/group": _group,
    "/producers": _producers,
    "/messages": _messages,
    "/message": _message,
    "/dlq": deadletters.page,
    "/dlq/export": deadletters.export,
    "/acl": aclpages.page,
    "/trace": _trace,
    "/metrics": _metrics,
}
