"""The console's accounts and sessions: scrypt hashes that check only their own password, a
users file written owner-only and read back, refused names, roles and short passwords;
sessions that expire when idle, at their age limit, or when their account goes or changes
role; failed logins that wait twice as long each time, per name and per client; CSRF and
Origin checks."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rmq.console import auth
from rmq.console.auth import Sessions, cookie_token, csrf_ok, origin_ok
from rmq.console.users import Users, UsersError, check_password, hash_password


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_hash_checks_its_own_password_only() -> None:
    stored = hash_password("correct horse")
    assert stored.startswith("scrypt$16384$8$1$") and "correct horse" not in stored
    assert check_password("correct horse", stored)
    assert not check_password("correct hors", stored)
    assert hash_password("correct horse") != stored  # salted
    assert not check_password("x", "not a hash") and not check_password("x", "md5$1$2$3$4$5")


def test_the_users_file_is_owner_only_and_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "users.json"
    users = Users.load(path, missing_ok=True)
    users.add("alice", "password-1", "admin")
    users.add("bob", "password-2", "viewer")
    users.save()
    assert os.stat(path).st_mode & 0o777 == 0o600
    again = Users.load(path)
    assert {u.name: u.role for u in again.users.values()} == {"alice": "admin", "bob": "viewer"}
    assert again.authenticate("alice", "password-1") is not None
    assert again.authenticate("alice", "password-2") is None
    assert again.authenticate("nobody", "password-1") is None
    assert "password-1" not in path.read_text()


@pytest.mark.parametrize(
    ("name", "password", "role", "why"),
    [
        ("", "password-1", "admin", "invalid user name"),
        ("a b", "password-1", "admin", "invalid user name"),
        ("alice", "short", "admin", "at least 8 characters"),
        ("alice", "password-1", "root", "unknown role"),
    ],
)
def test_refused_accounts(tmp_path: Path, name: str, password: str, role: str, why: str) -> None:
    with pytest.raises(UsersError, match=why):
        Users(tmp_path / "u.json").add(name, password, role)


def test_an_existing_name_needs_replace_and_a_missing_file_or_bad_one_says_so(
    tmp_path: Path,
) -> None:
    users = Users(tmp_path / "u.json")
    users.add("alice", "password-1", "admin")
    with pytest.raises(UsersError, match="exists"):
        users.add("alice", "password-2", "viewer")
    users.add("alice", "password-2", "viewer", replace=True)
    assert users.users["alice"].role == "viewer"
    with pytest.raises(UsersError, match="no users file"):
        Users.load(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(UsersError, match="not one rmq console wrote"):
        Users.load(tmp_path / "bad.json")
    (tmp_path / "role.json").write_text(
        json.dumps({"users": {"x": {"role": "god", "password": ""}}})
    )
    with pytest.raises(UsersError, match="unknown role"):
        Users.load(tmp_path / "role.json")


def sessions_of(tmp_path: Path) -> tuple[Sessions, Users, Clock]:
    users = Users(tmp_path / "u.json")
    users.add("alice", "password-1", "admin")
    users.add("bob", "password-2", "viewer")
    users.save()
    clock = Clock()
    return Sessions(Users.load(users.path), clock=clock), users, clock


def test_sessions_expire_idle_and_old(tmp_path: Path) -> None:
    sessions, _, clock = sessions_of(tmp_path)
    session = sessions.login("alice", "password-1", "127.0.0.1")
    assert session is not None and session.admin
    assert sessions.find(session.token) is session
    clock.now += auth.IDLE_SECONDS - 1
    assert sessions.find(session.token) is session  # a request keeps it alive
    for _ in range(auth.MAX_SECONDS // (auth.IDLE_SECONDS - 1)):
        clock.now += auth.IDLE_SECONDS - 1
        sessions.find(session.token)
    assert sessions.find(session.token) is None  # past the age limit however active
    other = sessions.login("bob", "password-2", "127.0.0.1")
    assert other is not None and not other.admin
    clock.now += auth.IDLE_SECONDS + 1
    assert sessions.find(other.token) is None
    assert sessions.find("") is None and sessions.find("forged") is None


def test_a_deleted_or_changed_account_ends_its_sessions(tmp_path: Path) -> None:
    sessions, users, _ = sessions_of(tmp_path)
    alice = sessions.login("alice", "password-1", "a")
    bob = sessions.login("bob", "password-2", "a")
    assert alice is not None and bob is not None
    users.delete("alice")
    users.add("bob", "password-2", "admin", replace=True)
    users.save()
    assert sessions.find(alice.token) is None
    assert sessions.find(bob.token) is None  # viewer made admin: log in again to be one
    again = sessions.login("bob", "password-2", "a")
    assert again is not None and again.admin
    assert sessions.login("alice", "password-1", "b") is None


def test_failed_logins_wait_twice_as_long_each_time(tmp_path: Path) -> None:
    sessions, _, clock = sessions_of(tmp_path)
    assert sessions.locked_for("alice", "10.0.0.1") == 0
    assert sessions.login("alice", "wrong", "10.0.0.1") is None
    assert sessions.locked_for("alice", "10.0.0.2") == 1.0  # the name, from anywhere
    assert sessions.locked_for("bob", "10.0.0.1") == 1.0  # the client, for any name
    assert sessions.locked_for("bob", "10.0.0.2") == 0
    clock.now += 1
    assert sessions.login("alice", "wrong", "10.0.0.1") is None
    assert sessions.locked_for("alice", "10.0.0.3") == 2.0
    clock.now += 2
    assert sessions.login("alice", "wrong", "10.0.0.1") is None
    assert sessions.locked_for("alice", "10.0.0.3") == 4.0
    for _ in range(20):
        clock.now += auth.MAX_LOCK_SECONDS
        sessions.login("alice", "wrong", "10.0.0.1")
    assert sessions.locked_for("alice", "10.0.0.3") == auth.MAX_LOCK_SECONDS
    clock.now += auth.MAX_LOCK_SECONDS
    assert sessions.login("alice", "password-1", "10.0.0.9") is not None
    assert sessions.locked_for("alice", "10.0.0.9") == 0  # a success clears the name


def test_without_users_each_browser_is_the_local_admin() -> None:
    sessions = Sessions(None)
    one, two = sessions.anonymous(), sessions.anonymous()
    assert one.admin and one.user == "local" and one.token != two.token
    assert one.csrf != two.csrf and not sessions.login_required


def test_csrf_origin_and_cookie_parsing() -> None:
    session = Sessions(None).anonymous()
    assert csrf_ok(session, session.csrf)
    assert not csrf_ok(session, "") and not csrf_ok(session, session.csrf + "x")
    assert origin_ok(None, "127.0.0.1:8080")
    assert origin_ok("http://127.0.0.1:8080", "127.0.0.1:8080")
    assert not origin_ok("http://evil.example", "127.0.0.1:8080")
    assert not origin_ok("http://127.0.0.1:8080", None)
    header = auth.cookie_header(session)
    assert "HttpOnly" in header and "SameSite=Strict" in header
    assert cookie_token(f"a=b; {header.split(';')[0]}; c=d") == session.token
    assert cookie_token(None) is None and cookie_token("a=b") is None
