"""The console's accounts: the users file `rmq console --users FILE` reads and
`rmq console user add|delete|list` writes.

The file is JSON, `{"users": {NAME: {"role": ROLE, "password": HASH}}}`, written whole to a
temporary file beside it and renamed over it, readable by its owner only (mode 0600).  A
role is `viewer` (reads every page, changes nothing) or `admin` (every action).  A password
is kept as the standard library's scrypt of it with a random 16-byte salt, in one text
`scrypt$N$r$p$SALT$KEY` (salt and key in base64); checking one takes about 50 ms on purpose
and compares in constant time.  No password or hash is ever printed.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import json
import os
import re
import secrets
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROLES = ("viewer", "admin")
"""Each role, weakest first."""

SCRYPT_N, SCRYPT_R, SCRYPT_P = 1 << 14, 8, 1
"""scrypt's cost: 16 MiB of memory and ~50 ms a check on a current core."""

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")
MIN_PASSWORD = 8


class UsersError(ValueError):
    """A users file that cannot be read, or a change it cannot take; says why in one line."""


def default_users_path() -> Path:
    """`$XDG_CONFIG_HOME/rmq/console-users.json` (`~/.config/rmq/` without it), beside the
    profile file."""
    xdg = os.environ.get("XDG_CONFIG_HOME", "")
    base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".config"
    return base / "rmq" / "console-users.json"


def hash_password(password: str) -> str:
    salt = secrets.token_bytes(16)
    key = _scrypt(password, salt, SCRYPT_N, SCRYPT_R, SCRYPT_P)
    return "$".join(["scrypt", str(SCRYPT_N), str(SCRYPT_R), str(SCRYPT_P), _b64(salt), _b64(key)])


def check_password(password: str, stored: str) -> bool:
    """Whether `password` is the one `stored` (a `hash_password` text) was made of."""
    try:
        kind, n, r, p, salt, key = stored.split("$")
        if kind != "scrypt":
            return False
        expected = base64.b64decode(key)
        actual = _scrypt(password, base64.b64decode(salt), int(n), int(r), int(p))
    except ValueError:
        return False
    return hmac.compare_digest(actual, expected)


def _scrypt(password: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(
        password.encode(), salt=salt, n=n, r=r, p=p, maxmem=256 * n * r + (1 << 20), dklen=32
    )


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


@functools.cache
def _dummy_hash() -> str:
    """Checked against for a name that has no account, so an unknown name costs as long as a
    wrong password and the answer's time does not tell which names exist."""
    return hash_password(secrets.token_urlsafe(16))


@dataclass(frozen=True, slots=True)
class User:
    name: str
    role: str
    password: str
    """The scrypt text, never the password."""


class Users:
    """The accounts of one users file."""

    def __init__(self, path: Path, users: dict[str, User] | None = None) -> None:
        self.path = path
        self.users = users if users is not None else {}
        self._stamp = self._stat()

    def _stat(self) -> tuple[int, int, int] | None:
        try:
            st = self.path.stat()
        except OSError:
            return None
        return st.st_mtime_ns, st.st_size, st.st_ino

    def refresh(self) -> None:
        """Read the file again if it changed since (a `rmq console user` command wrote it):
        a running console takes added, changed and deleted accounts at their next request.
        A file that cannot be read now keeps the accounts read before."""
        stamp = self._stat()
        if stamp == self._stamp or stamp is None:
            return
        try:
            self.users = Users.load(self.path).users
        except UsersError:
            return
        self._stamp = stamp

    @classmethod
    def load(cls, path: Path, *, missing_ok: bool = False) -> Users:
        """Read `path`; a missing file is an error unless `missing_ok` (then no account)."""
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            if missing_ok:
                return cls(path)
            raise UsersError(
                f"no users file {path}: add an account with rmq console user add"
            ) from None
        except OSError as exc:
            raise UsersError(f"cannot read the users file {path}: {exc.strerror}") from None
        try:
            data = json.loads(text)
            entries = data["users"]
            users = {
                name: User(name, str(entry["role"]), str(entry["password"]))
                for name, entry in entries.items()
            }
        except (ValueError, KeyError, TypeError, AttributeError):
            raise UsersError(f"the users file {path} is not one rmq console wrote") from None
        for user in users.values():
            if user.role not in ROLES:
                raise UsersError(f"the users file {path} gives {user.name} an unknown role")
        return cls(path, users)

    def authenticate(self, name: str, password: str) -> User | None:
        """The user `name` when `password` is theirs, else None (in the same time)."""
        user = self.users.get(name)
        ok = check_password(password, user.password if user else _dummy_hash())
        return user if ok and user is not None else None

    def add(self, name: str, password: str, role: str, *, replace: bool = False) -> User:
        if not NAME.fullmatch(name):
            raise UsersError(
                f"invalid user name {name!r}: letters, digits and ._@- (64 at most), "
                "starting with a letter or digit"
            )
        if role not in ROLES:
            raise UsersError(f"unknown role {role!r}: {' or '.join(ROLES)}")
        if len(password) < MIN_PASSWORD:
            raise UsersError(f"the password must have at least {MIN_PASSWORD} characters")
        if name in self.users and not replace:
            raise UsersError(f"user {name} exists (--replace sets a new password and role)")
        user = User(name, role, hash_password(password))
        self.users[name] = user
        return user

    def delete(self, name: str) -> None:
        if self.users.pop(name, None) is None:
            raise UsersError(f"no user {name} in {self.path}")

    def save(self) -> None:
        """Write the file whole (owner-only), replacing the old one in one rename."""
        data = {
            "users": {
                u.name: {"role": u.role, "password": u.password}
                for u in sorted(self.users.values(), key=lambda u: u.name)
            }
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=".console-users.", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(data, out, indent=2)
                out.write("\n")
                out.flush()
                os.fsync(out.fileno())
            os.chmod(temp, 0o600)
            os.replace(temp, self.path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
