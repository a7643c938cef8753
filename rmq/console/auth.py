"""Who is using the console: sessions, logins and their throttle, the CSRF token of a change.

With a users file (`rmq.console.users`) every page but `/login` and `/metrics` needs a
session: a random 32-byte token in the cookie `rmq_console_session` (HttpOnly,
SameSite=Strict, Path=/), kept only in this process's memory.  A session ends on
`/logout`, after `IDLE_SECONDS` without a request, `MAX_SECONDS` after the login, or when
its account is deleted or given another role in the users file (read again when it
changes), whichever comes first.  Without a users file (the console then listens on loopback only,
unless `--insecure-no-login`) each browser still gets a session, as an `admin` named
`local`, so that its changes carry a CSRF token too: a page of another site the browser
has open cannot make the browser change the cluster.

Every change is a POST carrying its session's CSRF token in the form field `csrf`
(compared in constant time), and its `Origin`, when the browser sends one, must be the
console's own.  Roles are checked here on the server for every change, never only by
hiding a button.

Failed logins are slowed down: each failure from a client address, or for a user name,
doubles the wait before the next attempt from there or for that name is even checked
(from 1 s up to `MAX_LOCK_SECONDS`); a success clears the name's count.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from rmq.console.users import Users

COOKIE = "rmq_console_session"
IDLE_SECONDS = 30 * 60
MAX_SECONDS = 8 * 3600
MAX_LOCK_SECONDS = 300.0
MAX_SESSIONS = 10_000
"""Sessions kept at most: the oldest go first (an anonymous console hands one to every
browser that asks)."""


@dataclass(slots=True)
class Session:
    token: str
    user: str
    role: str
    csrf: str
    created: float
    seen: float

    @property
    def admin(self) -> bool:
        return self.role == "admin"


@dataclass(slots=True)
class _Failures:
    count: int = 0
    until: float = 0.0


@dataclass
class Sessions:
    """The console's sessions; `users` None: no login (every session is the local admin)."""

    users: Users | None
    clock: Callable[[], float] = time.monotonic
    _sessions: dict[str, Session] = field(default_factory=dict)
    _failures: dict[str, _Failures] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def login_required(self) -> bool:
        return self.users is not None

    def find(self, token: str | None) -> Session | None:
        """The live session of `token` (a request refreshes its idle time)."""
        if not token:
            return None
        now = self.clock()
        if self.users is not None:
            self.users.refresh()
        with self._lock:
            session = self._sessions.get(token)
            if session is None:
                return None
            user = self.users.users.get(session.user) if self.users is not None else None
            if (
                now - session.seen > IDLE_SECONDS
                or now - session.created > MAX_SECONDS
                or (self.users is not None and (user is None or user.role != session.role))
            ):
                del self._sessions[token]
                return None
            session.seen = now
            return session

    def anonymous(self) -> Session:
        """A new session of the local admin (only without a users file)."""
        assert self.users is None
        return self._open("local", "admin")

    def locked_for(self, name: str, client: str) -> float:
        """Seconds until a login for `name` from `client` is checked again (0: now)."""
        now = self.clock()
        with self._lock:
            waits = [
                f.until - now
                for key in (f"user:{name}", f"addr:{client}")
                if (f := self._failures.get(key)) is not None
            ]
        return max([0.0, *waits])

    def login(self, name: str, password: str, client: str) -> Session | None:
        """A new session when `password` is `name`'s; None, counted as a failure, else.
        The caller checks `locked_for` first."""
        assert self.users is not None
        self.users.refresh()
        user = self.users.authenticate(name, password)
        now = self.clock()
        with self._lock:
            if user is None:
                for key in (f"user:{name}", f"addr:{client}"):
                    failures = self._failures.setdefault(key, _Failures())
                    failures.count += 1
                    failures.until = now + min(2.0 ** (failures.count - 1), MAX_LOCK_SECONDS)
                if len(self._failures) > MAX_SESSIONS:
                    self._failures = {k: f for k, f in self._failures.items() if f.until > now}
                return None
            self._failures.pop(f"user:{name}", None)
        return self._open(user.name, user.role)

    def logout(self, token: str) -> None:
        with self._lock:
            self._sessions.pop(token, None)

    def _open(self, user: str, role: str) -> Session:
        now = self.clock()
        session = Session(
            secrets.token_urlsafe(32), user, role, secrets.token_urlsafe(32), now, now
        )
        with self._lock:
            if len(self._sessions) >= MAX_SESSIONS:
                oldest = min(self._sessions.values(), key=lambda s: s.seen)
                del self._sessions[oldest.token]
            self._sessions[session.token] = session
        return session


def csrf_ok(session: Session, sent: str) -> bool:
    return bool(sent) and hmac.compare_digest(session.csrf.encode(), sent.encode())


def origin_ok(origin: str | None, host: str | None) -> bool:
    """Whether a request's `Origin` (absent: fine, same-origin form posts may omit it) is
    the console's own `Host`."""
    if origin is None:
        return True
    if not host:
        return False
    return origin in (f"http://{host}", f"https://{host}")


def cookie_header(session: Session) -> str:
    return f"{COOKIE}={session.token}; Path=/; HttpOnly; SameSite=Strict"


def clearing_cookie_header() -> str:
    return f"{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"


def cookie_token(header: str | None) -> str | None:
    """The session token of a `Cookie` header."""
    if not header:
        return None
    for part in header.split(";"):
        name, _, value = part.strip().partition("=")
        if name == COOKIE:
            return value
    return None
