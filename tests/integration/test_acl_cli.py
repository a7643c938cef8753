"""rmq's command line against an rmq broker with `aclEnable=true`: credentials, refusals said in
one line, and `rmq acl ...` changing the broker's plain_acl.yml.

One `rmq namesrv` and one `rmq broker` whose ROCKETMQ_HOME holds the `PLAIN_ACL` below: no
globally white address, an admin account, a writer allowed to publish to `TOPIC` only and a
reader with SUB as its default.  Every command runs as `python -m rmq ...` in a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.cli_forkserver import run as cli_run
from tests.procs import RmqProcess, RmqProcesses

TOPIC = "AclOrders"
ADMIN = ("RmqAdminKey", "RmqAdminSecret")
WRITER = ("RmqWriterKey", "RmqWriterSecret")
READER = ("RmqReaderKey", "RmqReaderSecret")
PLAIN_ACL = f"""\
globalWhiteRemoteAddresses:
accounts:
  - accessKey: {ADMIN[0]}
    secretKey: {ADMIN[1]}
    admin: true
  - accessKey: {WRITER[0]}
    secretKey: {WRITER[1]}
    defaultTopicPerm: DENY
    topicPerms:
      - {TOPIC}=PUB
  - accessKey: {READER[0]}
    secretKey: {READER[1]}
    defaultTopicPerm: SUB
"""


@dataclass
class AclCluster:
    namesrv: RmqProcess
    broker: RmqProcess
    home: Path
    env: dict[str, str]

    def rmq(
        self, *args: str, keys: tuple[str, str] | None = None, input: str = ""
    ) -> subprocess.CompletedProcess[str]:
        """`python -m rmq ARGS -n <name server>`, signing with `keys` (access, secret)."""
        creds = ["--access-key", keys[0], "--secret-key", keys[1]] if keys else []
        return cli_run(
            [sys.executable, "-m", "rmq", *args, "-n", self.namesrv.addr, *creds],
            env=self.env,
            input=input,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def produce(self, keys: tuple[str, str] | None, body: str = "hello") -> Any:
        return self.rmq("produce", TOPIC, keys=keys, input=json.dumps({"body": body}) + "\n")


def until(check: Callable[[], subprocess.CompletedProcess[str]], ok: bool) -> Any:
    """Run `check` until its exit code says success (`ok`) or failure; the last result."""
    deadline = time.monotonic() + 20
    while True:
        result = check()
        if (result.returncode == 0) == ok or time.monotonic() > deadline:
            return result
        time.sleep(0.2)


@pytest.fixture(scope="module")
def cluster(module_processes: RmqProcesses) -> Iterator[AclCluster]:
    home = module_processes.root / "acl-rocketmq-home"
    (home / "conf").mkdir(parents=True)
    (home / "conf" / "plain_acl.yml").write_text(PLAIN_ACL, encoding="utf-8")
    namesrv = module_processes.start_namesrv("acl-namesrv")
    broker = module_processes.start_broker(
        "acl-broker",
        namesrv=namesrv,
        props={"aclEnable": True},
        env={"ROCKETMQ_HOME": str(home)},
    )
    cli_home = module_processes.root / "acl-cli-home"
    cli_home.mkdir()
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("RMQ_") and name not in ("NAMESRV_ADDR", "XDG_CONFIG_HOME")
    }
    env["HOME"] = str(cli_home)
    acl = AclCluster(namesrv, broker, home, env)
    created = acl.rmq("topic", "update", TOPIC, "-r", "2", "-w", "2", keys=ADMIN)
    assert created.returncode == 0, created.stderr
    yield acl
    for process in (broker, namesrv):
        process.stop_cleanly()


def test_produce_with_credentials_sends(cluster: AclCluster) -> None:
    result = cluster.produce(WRITER, "signed")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.splitlines()[0])["status"] == "SEND_OK"
    env_signed = cli_run(
        [sys.executable, "-m", "rmq", "produce", TOPIC, "-n", cluster.namesrv.addr],
        env={**cluster.env, "RMQ_ACCESS_KEY": WRITER[0], "RMQ_SECRET_KEY": WRITER[1]},
        input='{"body":"from env"}\n',
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert env_signed.returncode == 0, env_signed.stderr


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        (
            READER,
            f"rmq: error: no PUB permission on topic {TOPIC} for access key {READER[0]} (broker ",
        ),
        (None, "rmq: error: the broker requires ACL credentials (broker "),
        ((WRITER[0], "WrongSecret"), f"rmq: error: wrong secret key for access key {WRITER[0]}"),
        (("GhostKey", "GhostSecret"), "rmq: error: access key GhostKey is not an account"),
    ],
)
def test_produce_refused_names_what_is_missing(
    cluster: AclCluster, keys: tuple[str, str] | None, expected: str
) -> None:
    result = cluster.produce(keys)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(expected), result.stderr
    assert cluster.broker.addr in result.stderr
    if keys is not None:
        assert keys[1] not in result.stderr


def test_admin_command_needs_an_admin_account(cluster: AclCluster) -> None:
    result = cluster.rmq("topic", "update", "AclOther", keys=WRITER)
    assert result.returncode == 1
    assert f"access key {WRITER[0]} is not an admin account: UPDATE_AND_CREATE_TOPIC" in (
        result.stderr
    )


def test_acl_set_list_delete_whitelist_round_trip(cluster: AclCluster) -> None:
    newcomer = ("RmqNewcomerKey", "RmqNewcomerSecret")
    plain_acl = cluster.home / "conf" / "plain_acl.yml"

    def versions() -> list[dict[str, Any]]:
        listed = cluster.rmq("acl", "list", "--versions", "-o", "json", keys=ADMIN)
        assert listed.returncode == 0, listed.stderr
        rows: list[dict[str, Any]] = json.loads(listed.stdout)
        return rows

    before = versions()
    assert [(row["brokerAddr"], row["aclFile"]) for row in before] == [
        (cluster.broker.addr, str(plain_acl))
    ]
    planned = cluster.rmq(
        "acl", "set", newcomer[0], "--secret", newcomer[1], "--dry-run", "-o", "json", keys=ADMIN
    )
    assert planned.returncode == 0, planned.stderr
    assert json.loads(planned.stdout)[0]["extFields"]["secretKey"] == "********"
    assert newcomer[1] not in planned.stdout + planned.stderr
    assert newcomer[0] not in plain_acl.read_text()

    assert cluster.produce(newcomer).returncode == 1
    created = cluster.rmq(
        "acl", "set", newcomer[0], "--secret", "-", "--topic-perm", f"{TOPIC}=PUB",
        "--default-topic-perm", "DENY", "-o", "json", keys=ADMIN, input=newcomer[1] + "\n",
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    assert json.loads(created.stdout) == [
        {"brokerAddr": cluster.broker.addr, "accessKey": newcomer[0], "result": "updated"}
    ]
    assert newcomer[0] in plain_acl.read_text()
    assert until(lambda: cluster.produce(newcomer), ok=True).returncode == 0
    assert versions()[0]["version"] > before[0]["version"]

    refused = cluster.rmq("acl", "set", "ShortKey1", "--secret", "tiny", keys=ADMIN)
    assert refused.returncode == 1 and "tiny" not in refused.stderr, refused.stderr

    assert cluster.rmq("acl", "delete", newcomer[0], keys=ADMIN).returncode == 2  # no --yes
    deleted = cluster.rmq("acl", "delete", newcomer[0], "--yes", keys=ADMIN)
    assert deleted.returncode == 0, deleted.stderr
    gone = until(lambda: cluster.produce(newcomer), ok=False)
    assert f"access key {newcomer[0]} is not an account" in gone.stderr

    white = cluster.rmq("acl", "whitelist", "127.0.0.1", "10.10.*.*", keys=ADMIN)
    assert white.returncode == 0, white.stderr
    assert until(lambda: cluster.produce(None), ok=True).returncode == 0
    assert cluster.rmq("acl", "whitelist", "10.10.*.*", keys=ADMIN).returncode == 0
    assert until(lambda: cluster.produce(None), ok=False).returncode == 1


def test_acl_list_versions_needs_any_account_not_an_admin(cluster: AclCluster) -> None:
    """GET_BROKER_CLUSTER_ACL_INFO only reads: any account may send it, as in Apache 4.9.8."""
    unsigned = cluster.rmq("acl", "list", "--versions")
    assert unsigned.returncode == 1
    assert unsigned.stderr.startswith("rmq: error: the broker requires ACL credentials")
    listed = cluster.rmq("acl", "list", "--versions", "-o", "json", keys=READER)
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout)[0]["brokerAddr"] == cluster.broker.addr


def test_acl_changes_need_an_admin_account_even_from_a_white_address(
    cluster: AclCluster,
) -> None:
    """Unlike Apache 4.9.8, rmq's broker answers the ACL changes only to a signed admin
    account: a non-admin account cannot white-list its own address, and a white address
    changes nothing unsigned."""
    plain_acl = cluster.home / "conf" / "plain_acl.yml"
    changes = [
        ("acl", "whitelist", "127.0.0.1"),
        ("acl", "set", READER[0], "--secret", READER[1], "--admin"),
        ("acl", "delete", WRITER[0], "--yes"),
    ]
    codes = [
        "UPDATE_GLOBAL_WHITE_ADDRS_CONFIG(53)",
        "UPDATE_AND_CREATE_ACL_CONFIG(50)",
        "DELETE_ACL_CONFIG(51)",
    ]
    before = plain_acl.read_text()
    for args, code in zip(changes, codes, strict=True):
        refused = cluster.rmq(*args, keys=READER)
        assert refused.returncode == 1
        assert refused.stderr == (
            f"rmq: error: access key {READER[0]} is not an admin account: {code} needs one "
            f"(broker {cluster.broker.addr}); use an admin account's access key\n"
        )
    assert plain_acl.read_text() == before
    assert cluster.produce(None).returncode == 1

    white = cluster.rmq("acl", "whitelist", "127.0.0.1", keys=ADMIN)
    assert white.returncode == 0, white.stderr
    try:
        assert until(lambda: cluster.produce(None), ok=True).returncode == 0
        whitelisted = plain_acl.read_text()
        for args in changes:
            refused = cluster.rmq(*args)
            assert refused.returncode == 1
            assert refused.stderr.startswith("rmq: error: the broker requires ACL credentials")
            assert refused.stderr.count("\n") == 1, refused.stderr
        assert plain_acl.read_text() == whitelisted
    finally:
        restored = cluster.rmq("acl", "whitelist", "10.10.*.*", keys=ADMIN)
        assert restored.returncode == 0, restored.stderr
    assert until(lambda: cluster.produce(None), ok=False).returncode == 1


def test_acl_list_shows_accounts_to_an_admin_without_secrets(cluster: AclCluster) -> None:
    """GET_BROKER_CLUSTER_ACL_CONFIG (54): accounts and permissions, never a secret key."""
    listed = cluster.rmq("acl", "list", "-o", "json", keys=ADMIN)
    assert listed.returncode == 0, listed.stderr
    (broker,) = json.loads(listed.stdout)
    assert broker["brokerAddr"] == cluster.broker.addr
    accounts = {account["accessKey"]: account for account in broker["accounts"]}
    assert [ADMIN[0], WRITER[0], READER[0]] == list(accounts)[:3]
    assert accounts[ADMIN[0]]["admin"] is True
    assert accounts[WRITER[0]] == {
        "accessKey": WRITER[0],
        "admin": False,
        "defaultTopicPerm": "DENY",
        "defaultGroupPerm": None,
        "topicPerms": [f"{TOPIC}=PUB"],
        "groupPerms": [],
        "whiteRemoteAddress": None,
    }
    assert accounts[READER[0]]["defaultTopicPerm"] == "SUB"
    table = cluster.rmq("acl", "list", keys=ADMIN)
    assert table.returncode == 0, table.stderr
    assert [cluster.broker.addr, WRITER[0], "false", "DENY", f"{TOPIC}=PUB"] in [
        line.split() for line in table.stdout.splitlines()
    ]
    for secret in (ADMIN[1], WRITER[1], READER[1]):
        assert secret not in listed.stdout + table.stdout
    refused = cluster.rmq("acl", "list", keys=READER)
    assert (refused.returncode, refused.stdout) == (1, "")
    assert refused.stderr.startswith(
        f"rmq: error: access key {READER[0]} is not an admin account: "
        "GET_BROKER_CLUSTER_ACL_CONFIG(54) needs one"
    ), refused.stderr


def test_consume_refused_names_what_is_missing(cluster: AclCluster) -> None:
    assert cluster.produce(WRITER, "to read").returncode == 0
    refused = cluster.rmq("consume", TOPIC, "--from", "first", "-e", keys=WRITER)
    assert refused.returncode == 1
    assert refused.stderr.count("\n") == 1, refused.stderr
    assert refused.stderr.startswith(
        f"rmq: error: no SUB permission on topic {TOPIC} for access key {WRITER[0]} (broker "
    )
    read = cluster.rmq("consume", TOPIC, "--from", "first", "-e", keys=ADMIN)
    assert read.returncode == 0, read.stderr
    assert "to read" in {json.loads(line)["body"] for line in read.stdout.splitlines()}


def test_debug_logs_never_show_the_secret(cluster: AclCluster) -> None:
    secret = "NotTheWriterSecret"
    result = cluster.rmq(
        "--debug", "produce", TOPIC, keys=(WRITER[0], secret), input='{"body":"x"}\n'
    )
    assert result.returncode == 1
    assert "DEBUG" in result.stderr  # debug logging was on
    assert f"wrong secret key for access key {WRITER[0]}" in result.stderr
    assert secret not in result.stdout + result.stderr
