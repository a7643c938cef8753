"""ACL credentials on the command line: where they come from, that requests carry them, that
the secret is never printed and that a profile file holding one stays private."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from rmq.remoting.aclsign import ACCESS_KEY, SIGNATURE, request_signature
from rmq.remoting.command import RemotingCommand
from rmq.remoting.connection import Connection
from tests.unit.cli.conftest import RunRmq
from tests.unit.client.fakes import FakeNamesrv, route_of

SECRET = "Cli-Secret-Value-42"


class RecordingNamesrv(FakeNamesrv):
    """A `FakeNamesrv` that keeps every route request it answers."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[RemotingCommand] = []
        self.routes["T"] = route_of({"broker-a": "127.0.0.1:1"})

    async def _route(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        self.requests.append(request)
        return await super()._route(connection, request)


class ThreadedNamesrv:
    """A `RecordingNamesrv` served by an event loop of its own thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.namesrv = RecordingNamesrv()
        asyncio.run_coroutine_threadsafe(self.namesrv.start(), self.loop).result(10)
        self.addr = self.namesrv.addr
        self.requests = self.namesrv.requests

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.namesrv.close(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@pytest.fixture
def namesrv() -> Iterator[ThreadedNamesrv]:
    server = ThreadedNamesrv()
    yield server
    server.close()


def _signed(request: RemotingCommand, access_key: str, secret: str) -> bool:
    fields = request.ext_fields or {}
    return fields.get(ACCESS_KEY) == access_key and fields.get(SIGNATURE) == request_signature(
        request, secret
    )


def test_flags_env_and_profile_sign(rmq: RunRmq, namesrv: ThreadedNamesrv) -> None:
    addr = namesrv.addr
    result = rmq("topic", "route", "T", "-n", addr)
    assert result.returncode == 0, result.stderr
    result = rmq(
        "topic", "route", "T", "-n", addr, "--access-key", "FlagKey", "--secret-key", SECRET
    )
    assert result.returncode == 0, result.stderr
    env = {"RMQ_ACCESS_KEY": "EnvKey", "RMQ_SECRET_KEY": SECRET}
    assert rmq("topic", "route", "T", "-n", addr, env=env).returncode == 0
    saved = rmq(
        "profile",
        "set",
        "p",
        "-n",
        addr,
        "--access-key",
        "ProfileKey",
        "--secret-key",
        "-",
        input=SECRET + "\n",
    )
    assert saved.returncode == 0, saved.stderr
    assert rmq("topic", "route", "T").returncode == 0
    plain, flag, envs, profile = namesrv.requests
    assert not {ACCESS_KEY, SIGNATURE} & set(plain.ext_fields or {})
    assert _signed(flag, "FlagKey", SECRET)
    assert _signed(envs, "EnvKey", SECRET)
    assert _signed(profile, "ProfileKey", SECRET)


def test_mqadmin_signs_with_tools_yml(
    rmq: RunRmq, namesrv: ThreadedNamesrv, tmp_path: Path
) -> None:
    home = tmp_path / "rocketmq"
    (home / "conf").mkdir(parents=True)
    (home / "conf" / "tools.yml").write_text("accessKey: rocketmq2\nsecretKey: 12345678\n")
    argv = ("mqadmin", "topicRoute", "-n", namesrv.addr, "-t", "T")
    result = rmq(*argv, env={"ROCKETMQ_HOME": str(home)})
    assert result.returncode == 0, result.stderr
    (home / "conf" / "tools.yml").write_text("accessKey: rocketmq2\nsecretKey: ' '\n")
    assert rmq(*argv, env={"ROCKETMQ_HOME": str(home)}).returncode == 0
    signed, blank = namesrv.requests
    assert _signed(signed, "rocketmq2", "12345678")
    assert ACCESS_KEY not in (blank.ext_fields or {})


def test_profile_file_with_a_secret_stays_private(rmq: RunRmq, profile_file: Path) -> None:
    result = rmq("profile", "set", "p", "--access-key", "AK", "--secret-key", SECRET)
    assert result.returncode == 0, result.stderr
    assert stat.S_IMODE(profile_file.stat().st_mode) == 0o600
    shown = rmq("profile", "show", "-o", "json")
    rows = {row["setting"]: row for row in json.loads(shown.stdout)}
    assert rows["access_key"] == {"setting": "access_key", "value": "AK", "source": "profile 'p'"}
    assert rows["secret_key"]["value"] == "********"
    assert SECRET not in shown.stdout + shown.stderr

    os.chmod(profile_file, 0o644)
    refused = rmq("--debug", "topic", "list", "-n", "127.0.0.1:1")
    assert refused.returncode == 2
    assert f"run 'chmod 600 {profile_file}'" in refused.stderr
    assert SECRET not in refused.stdout + refused.stderr
    assert rmq("profile", "set", "p", "--secret-key", SECRET).returncode == 0
    assert stat.S_IMODE(profile_file.stat().st_mode) == 0o600


def test_half_credentials_and_failing_command_never_show_the_secret(rmq: RunRmq) -> None:
    result = rmq("topic", "list", "-n", "127.0.0.1:1", "--secret-key", SECRET)
    assert result.returncode == 2
    assert result.stderr.startswith("rmq: error: --secret-key gives a secret key without an access")
    assert SECRET not in result.stderr
    result = rmq(
        "--debug",
        "topic",
        "list",
        "-n",
        "127.0.0.1:1",
        "--access-key",
        "AK",
        "--secret-key",
        SECRET,
    )
    assert result.returncode == 1
    assert SECRET not in result.stdout + result.stderr
    result = rmq("topic", "list", "-n", "127.0.0.1:1", env={"RMQ_ACCESS_KEY": "AK"})
    assert result.returncode == 2 and "RMQ_ACCESS_KEY gives an access key" in result.stderr


def test_tools_yml_is_read_as_mqadmin_reads_it(tmp_path: Path) -> None:
    from rmq.cli.mqadmin.toolsacl import tools_keys

    conf = tmp_path / "conf"
    conf.mkdir()
    tools = conf / "tools.yml"
    assert tools_keys(None) is None
    assert tools_keys(str(tmp_path)) is None  # no file
    tools.write_text("accessKey: rocketmq2\nsecretKey: 12345678\n")
    assert tools_keys(str(tmp_path)) == ("rocketmq2", "12345678")
    for text in ("accessKey: rocketmq2\n", "accessKey: [unclosed\n", "- a list\n", ""):
        tools.write_text(text)
        assert tools_keys(str(tmp_path)) is None, text
