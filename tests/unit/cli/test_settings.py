"""Settings: flag > environment > profile > default, the profile file and its path."""

from __future__ import annotations

import datetime
import json
import stat
import tomllib
from pathlib import Path

import pytest

from rmq.cli.errors import RmqError
from rmq.cli.settings import (
    ConfigFile,
    Resolved,
    config_path,
    dump_toml,
    load_config,
    namesrv_setting,
    resolve_namesrv,
    save_config,
    validate_namesrv,
)
from tests.unit.cli.conftest import RunRmq

PROFILES = """\
current = "prod"

[profiles.prod]
namesrv = "10.0.0.3:9876"

[profiles.dev]
namesrv = "10.0.0.4:9876"
"""


@pytest.fixture
def with_profiles(profile_file: Path) -> Path:
    profile_file.parent.mkdir(parents=True)
    profile_file.write_text(PROFILES)
    return profile_file


@pytest.mark.usefixtures("with_profiles")
def test_namesrv_precedence_flag_env_profile_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RMQ_NAMESRV", "10.0.0.1:9876")
    monkeypatch.setenv("NAMESRV_ADDR", "10.0.0.2:9876")
    assert namesrv_setting("10.0.0.9:9876") == Resolved("10.0.0.9:9876", "--namesrv")
    assert namesrv_setting() == Resolved("10.0.0.1:9876", "RMQ_NAMESRV")
    monkeypatch.delenv("RMQ_NAMESRV")
    assert namesrv_setting() == Resolved("10.0.0.2:9876", "NAMESRV_ADDR")
    monkeypatch.delenv("NAMESRV_ADDR")
    assert namesrv_setting() == Resolved("10.0.0.3:9876", "profile 'prod'")
    monkeypatch.setenv("RMQ_PROFILE", "dev")
    assert namesrv_setting() == Resolved("10.0.0.4:9876", "profile 'dev'")
    assert namesrv_setting(profile_flag="prod") == Resolved("10.0.0.3:9876", "profile 'prod'")
    assert resolve_namesrv(None) == "10.0.0.4:9876"


def test_namesrv_default_without_profile_file(cli_env: dict[str, str]) -> None:
    assert namesrv_setting() == Resolved("127.0.0.1:9876", "default")


def test_profile_flag_on_the_command_line(rmq: RunRmq, with_profiles: Path) -> None:
    def shown(*args: str, env: dict[str, str] | None = None) -> dict[str, list[str]]:
        result = rmq(*args, "profile", "show", "-o", "json", env=env)
        assert result.returncode == 0, result.stderr
        return {row["setting"]: [row["value"], row["source"]] for row in json.loads(result.stdout)}

    assert shown()["namesrv"] == ["10.0.0.3:9876", "profile 'prod'"]
    assert shown()["profile"] == ["prod", f"'current' in {with_profiles}"]
    assert shown(env={"RMQ_PROFILE": "dev"})["profile"] == ["dev", "RMQ_PROFILE"]
    by_flag = shown("--profile", "prod", env={"RMQ_PROFILE": "dev"})
    assert by_flag["profile"] == ["prod", "--profile"]
    assert by_flag["namesrv"] == ["10.0.0.3:9876", "profile 'prod'"]
    by_env = shown("--profile", "dev", env={"NAMESRV_ADDR": "10.0.0.2:9876"})
    assert by_env["namesrv"] == ["10.0.0.2:9876", "NAMESRV_ADDR"]


def test_unknown_profile_is_a_usage_error(rmq: RunRmq, with_profiles: Path) -> None:
    result = rmq("--profile", "nope", "profile", "show")
    assert result.returncode == 2
    assert result.stderr == (
        f"rmq: error: profile 'nope' (from --profile) is not defined in {with_profiles}; "
        "run 'rmq profile list' to see the profiles, or "
        "'rmq profile set NAME --namesrv HOST:PORT' to create one\n"
    )


def test_bad_address_from_environment_names_its_source(rmq: RunRmq) -> None:
    result = rmq("profile", "show", env={"NAMESRV_ADDR": "localhost"})
    assert result.returncode == 2
    assert result.stderr.startswith(
        "rmq: error: invalid name server address 'localhost' from NAMESRV_ADDR; use host:port"
    )


def test_config_path_order(cli_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    home = Path(cli_env["HOME"])
    assert config_path() == home / ".config" / "rmq" / "rmq.toml"
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/is/ignored")
    assert config_path() == home / ".config" / "rmq" / "rmq.toml"
    monkeypatch.setenv("XDG_CONFIG_HOME", "/xdg")
    assert config_path() == Path("/xdg/rmq/rmq.toml")
    monkeypatch.setenv("RMQ_CONFIG", "/etc/rmq.toml")
    assert config_path() == Path("/etc/rmq.toml")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("10.0.0.1:9876", "10.0.0.1:9876"),
        (" a.example:1 ; b-2.example:65535 ;", "a.example:1;b-2.example:65535"),
        ("[::1]:9876", "[::1]:9876"),
    ],
)
def test_valid_namesrv_addresses(value: str, expected: str) -> None:
    assert validate_namesrv(value, "test") == expected


@pytest.mark.parametrize(
    "value", ["", ";", "localhost", "host:0", "host:65536", "host:port", ":9876", "a b:1", "x/y:1"]
)
def test_invalid_namesrv_addresses(value: str) -> None:
    with pytest.raises(RmqError) as raised:
        validate_namesrv(value, "-n")
    assert raised.value.exit_code == 2
    assert "from -n; use host:port" in raised.value.line()


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        ("current = ", "Invalid value"),
        ("current = 3", "'current' must be a string"),
        ("profiles = 1", "'profiles' must hold one [profiles.NAME] table per profile"),
        ("[profiles]\nprod = 'x'", "'profiles' must hold one [profiles.NAME] table per profile"),
    ],
)
def test_malformed_profile_file(profile_file: Path, text: str, detail: str) -> None:
    profile_file.parent.mkdir(parents=True)
    profile_file.write_text(text)
    with pytest.raises(RmqError) as raised:
        load_config()
    assert raised.value.exit_code == 2
    assert raised.value.message.startswith(f"bad profile file {profile_file}: ")
    assert detail in raised.value.message


def test_saved_file_reads_back_identically_and_privately(tmp_path: Path) -> None:
    data = {
        "current": 'we"ird\\name',
        "colour": "bleu\u00e9\n\t\x01\x7f",
        "count": 3,
        "ratio": 0.5,
        "enabled": False,
        "since": datetime.date(2024, 2, 22),
        "hosts": ["a", "b"],
        "profiles": {"prod": {"namesrv": "h:1", "extra": {"deep": 1}}, "with.dot": {}},
    }
    config = ConfigFile(tmp_path / "new" / "rmq.toml", data)
    save_config(config)
    assert tomllib.loads(config.path.read_text()) == data
    assert stat.S_IMODE(config.path.stat().st_mode) == 0o600
    assert [p.name for p in config.path.parent.iterdir()] == ["rmq.toml"]
    assert load_config(config.path).data == data


def test_values_toml_cannot_hold_are_refused(tmp_path: Path) -> None:
    with pytest.raises(RmqError, match="cannot rewrite the value of jobs"):
        dump_toml({"jobs": [{"a": 1}]}, tmp_path / "rmq.toml")


def test_profile_boolean_reads_as_true_or_false(profile_file: Path) -> None:
    from rmq.cli.settings import resolve

    profile_file.parent.mkdir(parents=True)
    profile_file.write_text(
        'current = "a"\n\n[profiles.a]\ntls = true\n\n[profiles.b]\ntls = false\n'
    )
    a = resolve(None, flag="--tls", envs=(), key="tls", default="")
    b = resolve(None, flag="--tls", envs=(), key="tls", default="", profile_flag="b")
    assert a == Resolved("true", "profile 'a'")
    assert b == Resolved("false", "profile 'b'")
