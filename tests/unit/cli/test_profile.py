"""`rmq profile ...` run as a user would, against a private profile file."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from tests.unit.cli.conftest import RunRmq


def profiles(rmq: RunRmq) -> list[dict[str, Any]]:
    result = rmq("profile", "list", "-o", "json")
    assert result.returncode == 0, result.stderr
    rows: list[dict[str, Any]] = json.loads(result.stdout)
    return rows


def test_lifecycle(rmq: RunRmq, profile_file: Path) -> None:
    assert profiles(rmq) == []

    result = rmq("profile", "set", "prod", "--namesrv", "10.0.0.1:9876; 10.0.0.2:9876")
    assert result.returncode == 0
    assert (
        result.stdout == f"Created profile prod in {profile_file}; it is now the active profile\n"
    )
    result = rmq("profile", "set", "local", "-n", "127.0.0.1:9876")
    assert result.stdout == f"Created profile local in {profile_file}\n"
    assert profiles(rmq) == [
        {"name": "local", "namesrv": "127.0.0.1:9876", "active": False},
        {"name": "prod", "namesrv": "10.0.0.1:9876;10.0.0.2:9876", "active": True},
    ]

    assert rmq("profile", "use", "local").stdout == "Active profile: local\n"
    assert [row["active"] for row in profiles(rmq)] == [True, False]
    result = rmq("profile", "set", "local", "-n", "127.0.0.1:19876")
    assert result.stdout == f"Updated profile local in {profile_file}\n"

    result = rmq("profile", "show", "-o", "ndjson")
    assert result.stdout.splitlines() == [
        json.dumps(row, separators=(",", ":"))
        for row in (
            {"setting": "profile", "value": "local", "source": f"'current' in {profile_file}"},
            {"setting": "namesrv", "value": "127.0.0.1:19876", "source": "profile 'local'"},
            {"setting": "output", "value": "table", "source": "default"},
            {"setting": "access_key", "value": None, "source": "not set"},
            {"setting": "secret_key", "value": None, "source": "not set"},
        )
    ]

    result = rmq("profile", "delete", "local")
    assert result.returncode == 2
    assert "refusing to delete profile 'local'" in result.stderr
    assert len(profiles(rmq)) == 2

    result = rmq("profile", "delete", "local", "--yes")
    assert (result.returncode, result.stdout) == (0, "Deleted profile local\n")
    assert profiles(rmq) == [
        {"name": "prod", "namesrv": "10.0.0.1:9876;10.0.0.2:9876", "active": False}
    ]
    assert "current" not in tomllib.loads(profile_file.read_text())


def test_table_output_is_the_default(rmq: RunRmq) -> None:
    rmq("profile", "set", "prod", "-n", "10.0.0.1:9876")
    result = rmq("profile", "list")
    assert result.stdout == "NAME  NAMESRV        ACTIVE\nprod  10.0.0.1:9876  true\n"


def test_unknown_profile_and_bad_input_exit_2(rmq: RunRmq) -> None:
    for args in (
        ("profile", "use", "ghost"),
        ("profile", "delete", "ghost", "--yes"),
        ("profile", "show", "ghost"),
        ("profile", "set", "bad name", "-n", "h:1"),
        ("profile", "set", "ok", "-n", "h"),
        ("profile", "set", "ok"),
    ):
        result = rmq(*args)
        assert result.returncode == 2, args
        assert result.stderr.startswith("rmq: error: "), args
        assert result.stderr.count("\n") == 1, args
    assert profiles(rmq) == []


def test_list_survives_a_dangling_current_profile(rmq: RunRmq, profile_file: Path) -> None:
    profile_file.parent.mkdir(parents=True)
    profile_file.write_text('current = "gone"\n[profiles.prod]\nnamesrv = "h:1"\n')
    result = rmq("profile", "list", "-o", "json")
    assert result.returncode == 0
    assert json.loads(result.stdout) == [{"name": "prod", "namesrv": "h:1", "active": False}]
    assert result.stderr.startswith("rmq: warning: profile 'gone' (from 'current' in ")
    assert rmq("profile", "use", "prod").returncode == 0
    assert profiles(rmq)[0]["active"] is True


def test_editing_keeps_keys_rmq_does_not_know(rmq: RunRmq, profile_file: Path) -> None:
    profile_file.parent.mkdir(parents=True)
    profile_file.write_text('owner = "ops"\n[profiles.prod]\nnamesrv = "h:1"\ntimeout = 3\n')
    assert rmq("profile", "set", "prod", "-n", "h:2").returncode == 0
    assert tomllib.loads(profile_file.read_text()) == {
        "owner": "ops",
        "current": "prod",
        "profiles": {"prod": {"namesrv": "h:2", "timeout": 3}},
    }


def test_use_warns_when_rmq_profile_overrides_it(rmq: RunRmq) -> None:
    rmq("profile", "set", "a", "-n", "h:1")
    rmq("profile", "set", "b", "-n", "h:2")
    result = rmq("profile", "use", "b", env={"RMQ_PROFILE": "a"})
    assert result.returncode == 0
    assert (
        result.stderr
        == "rmq: warning: RMQ_PROFILE=a is set and takes precedence in this environment\n"
    )


def test_profile_names_complete(rmq: RunRmq) -> None:
    rmq("profile", "set", "prod", "-n", "h:1")
    rmq("profile", "set", "preprod", "-n", "h:2")
    rmq("profile", "set", "dev", "-n", "h:3")
    env = {"_RMQ_COMPLETE": "bash_complete", "COMP_WORDS": "rmq profile use pr", "COMP_CWORD": "3"}
    result = rmq(env=env)
    assert result.stdout.split() == ["plain,preprod", "plain,prod"]
