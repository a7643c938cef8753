"""The console's HTTP side: one request from its first line to its answer.

A GET (or HEAD) goes to a page of `rmq.console.web.ROUTES`, a POST to an action of
`rmq.console.actions.ACTIONS`, after `rmq.console.auth` has said who is asking:

* `/metrics` and `/login` need no session; with a users file every other page sends a
  browser without a live session to `/login?next=<page>`, and a POST without one is refused;
* without a users file a browser without a session is given one, as the local admin;
* a POST must carry its session's CSRF token and, if the browser names an `Origin`, come
  from the console's own; an action needs the `admin` role (403 otherwise);
* failed logins wait as `Sessions.locked_for` says (429 until then).

Pages are rendered without knowing the session; three markers in them are filled in here:
`USER_MARK` (who is logged in, and the log-out button), `CSRF_MARK` (the hidden token field
of each form) and the `ADMIN_OPEN`..`ADMIN_CLOSE` blocks, the forms of changes, which a
viewer's page leaves out.  The server still checks every change whatever the page showed.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, quote, urlsplit

from rmq.client.admin import describe
from rmq.console import pages
from rmq.console.auth import (
    Session,
    clearing_cookie_header,
    cookie_header,
    cookie_token,
    csrf_ok,
    origin_ok,
)
from rmq.console.pages import ADMIN_CLOSE, ADMIN_OPEN, CSRF_MARK, USER_MARK, e

if TYPE_CHECKING:
    from rmq.console.web import Console

log = logging.getLogger(__name__)

HTML = "text/html; charset=utf-8"
MAX_FORM_BYTES = 1 << 20
"""The largest form a POST may carry (a test message's body included)."""

Query = dict[str, list[str]]
Answer = tuple[int, str, str]
"""Status, content type and text; a 303's text is the place it sends the browser to."""
Page = Callable[["Console", Query], Answer]
Action = Callable[["Console", Query, Session], Answer]


def one(query: Query, name: str, default: str = "") -> str:
    """The first value of field `name`, stripped."""
    return query.get(name, [default])[0].strip()


def millis(text: str) -> int:
    """A form's local time (`YYYY-MM-DDTHH:MM[:SS]`) in ms; ValueError when it is not one."""
    return int(datetime.fromisoformat(text).timestamp() * 1000)


def local_time(at: int) -> str:
    """`at` (ms) as a form's local time."""
    return datetime.fromtimestamp(at / 1000).strftime("%Y-%m-%dT%H:%M:%S")


def page_number(query: Query) -> int:
    text = one(query, "page", "1")
    return max(1, int(text)) if text.isdigit() else 1


_ADMIN_BLOCK = re.compile(re.escape(ADMIN_OPEN) + ".*?" + re.escape(ADMIN_CLOSE), re.DOTALL)


class Handler(BaseHTTPRequestHandler):
    server: Server
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self._answer(post=False, send_body=True)

    def do_HEAD(self) -> None:
        self._answer(post=False, send_body=False)

    def do_POST(self) -> None:
        self._answer(post=True, send_body=True)

    def log_message(self, format: str, *args: object) -> None:
        log.debug("http: " + format, *args)

    def _answer(self, *, post: bool, send_body: bool) -> None:
        parts = urlsplit(self.path)
        path = parts.path
        self._cookie: str | None = None
        if path == "/favicon.ico":  # the pages have none: no content, not an error
            self._send(204, HTML, "", send_body)
            return
        form: Query = {}
        if post:
            read = self._form()
            if read is None:
                return
            form = read
        query = form if post else {k: v for k, v in parse_qs(parts.query).items() if v}
        server = self.server
        sessions = server.console.sessions
        if path == "/metrics" and not post:
            self._route(server.pages.get(path), query, send_body, path)
            return
        if path == "/login":
            self._login(query, post, send_body)
            return
        session = sessions.find(cookie_token(self.headers.get("Cookie")))
        if session is None:
            if sessions.login_required:
                if post:
                    self._refuse(401, "Log in first: the session is gone or never was.")
                else:
                    target = quote(path + (f"?{parts.query}" if parts.query else ""), safe="")
                    self._send(303, HTML, f"/login?next={target}", send_body)
                return
            session = sessions.anonymous()
            self._cookie = cookie_header(session)
        if not post:
            self._route(server.pages.get(path), query, send_body, path, session)
            return
        if not origin_ok(self.headers.get("Origin"), self.headers.get("Host")):
            self._refuse(403, "Refused: the form was sent from another site.")
            return
        if not csrf_ok(session, query.get("csrf", [""])[0]):
            self._refuse(403, "Refused: the form's CSRF token is missing or wrong (reload it).")
            return
        if path == "/logout":
            sessions.logout(session.token)
            self._cookie = clearing_cookie_header()
            self._send(303, HTML, "/login" if sessions.login_required else "/", True)
            return
        action = server.actions.get(path)
        if action is None:
            self._route(None, query, send_body, path, session)
            return
        if not session.admin:
            self._refuse(403, f"Refused: {session.user} is a viewer, and viewers change nothing.")
            return
        self._run(lambda: action(server.console, query, session), path, session)

    def _form(self) -> Query | None:
        try:
            length = int(self.headers.get("Content-Length") or "0")
        except ValueError:
            length = -1
        if not 0 <= length <= MAX_FORM_BYTES:
            self._refuse(413, f"The form must be sent whole and under {MAX_FORM_BYTES} bytes.")
            self.close_connection = True
            return None
        text = self.rfile.read(length).decode("utf-8", errors="replace")
        return {k: v for k, v in parse_qs(text, keep_blank_values=True).items()}

    def _login(self, query: Query, post: bool, send_body: bool) -> None:
        sessions = self.server.console.sessions
        target = query.get("next", ["/"])[0]
        if not target.startswith("/") or target.startswith("//"):
            target = "/"  # only a page of this console
        if not sessions.login_required:
            self._send(303, HTML, target, send_body)
            return
        if not post:
            self._send(200, HTML, pages.login(target, ""), send_body)
            return
        if not origin_ok(self.headers.get("Origin"), self.headers.get("Host")):
            self._refuse(403, "Refused: the form was sent from another site.")
            return
        name, password = query.get("user", [""])[0], query.get("password", [""])[0]
        client = self.client_address[0]
        wait = sessions.locked_for(name, client)
        if wait > 0:
            text = f"Too many failed logins: try again in {wait:.0f} s."
            self._send(429, HTML, pages.login(target, text, name), True)
            return
        session = sessions.login(name, password, client)
        if session is None:
            log.warning("console: failed login for %r from %s", name, client)
            self._send(401, HTML, pages.login(target, "Wrong name or password.", name), True)
            return
        log.info("console: %s (%s) logged in from %s", session.user, session.role, client)
        self._cookie = cookie_header(session)
        self._send(303, HTML, target, True)

    def _route(
        self,
        page: Page | None,
        query: Query,
        send_body: bool,
        path: str,
        session: Session | None = None,
    ) -> None:
        if page is None:
            html = pages.error_page("Not found", f"No page at {path}", "")
            self._send(404, HTML, self._fill(html, session), send_body)
            return
        console = self.server.console
        self._run(lambda: page(console, query), path, session, send_body)

    def _run(
        self,
        work: Callable[[], Answer],
        path: str,
        session: Session | None,
        send_body: bool = True,
    ) -> None:
        try:
            status, kind, text = work()
        except Exception as exc:
            log.debug("page %s failed", path, exc_info=True)
            status, kind = 502, HTML
            text = pages.error_page("The cluster did not answer", describe(exc), path)
        if kind == HTML and status != 303:
            text = self._fill(text, session)
        self._send(status, kind, text, send_body)

    def _fill(self, html: str, session: Session | None) -> str:
        if session is None:
            return _ADMIN_BLOCK.sub("", html).replace(USER_MARK, "").replace(CSRF_MARK, "")
        if not session.admin:
            html = _ADMIN_BLOCK.sub("", html)
        html = html.replace(ADMIN_OPEN, "").replace(ADMIN_CLOSE, "")
        field = f'<input type="hidden" name="csrf" value="{e(session.csrf)}">'
        who = (
            f'<span id="who">{e(session.user)} ({e(session.role)})</span>'
            f'<form method="post" action="/logout" class="inline">{field}'
            "<button>Log out</button></form>"
            if self.server.console.sessions.login_required
            else ""
        )
        return html.replace(USER_MARK, who).replace(CSRF_MARK, field)

    def _refuse(self, status: int, message: str) -> None:
        self._send(status, HTML, pages.error_page("Refused", message, ""), True)

    def _send(self, status: int, kind: str, text: str, send_body: bool) -> None:
        body = b"" if status == 303 else text.encode()
        self.send_response(status)
        if status == 303:
            self.send_header("Location", text)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Frame-Options", "DENY")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "same-origin")
        if self._cookie is not None:
            self.send_header("Set-Cookie", self._cookie)
        self.end_headers()
        if send_body and body:
            self.wfile.write(body)


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self,
        address: tuple[str, int],
        console: Console,
        pages: dict[str, Page],
        actions: dict[str, Action],
    ) -> None:
        self.console = console
        self.pages = pages
        self.actions = actions
        super().__init__(address, Handler)
