"""The ACL admin requests (50-53), differential: the same raw requests, signed by an admin
account, to an ACL-enabled Apache broker and rmq broker (tests/conformance/mqadmin_acl.py), the
same answers, and the same `plain_acl.yml` written after each one.  (Loopback is a global white
address there, which lets any request through on Apache's broker; rmq's answers a request that
changes the ACL only to an admin account's signature: tests/conformance/test_acl_admin_only.py.)

Requests are built from raw ext fields (not rmq's header classes), so that a field a client
leaves out stays out.  Answers are compared as code, remark and header fields; files byte for
byte once each `timestamp:` is masked; the file paths of each side are replaced by `<home>`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from rmq.remoting.aclsign import sign_request
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, next_opaque
from tests.conformance.java import ensure_built
from tests.conformance.mqadmin_acl import (
    ADMIN_CREDENTIALS,
    acl_home,
    each_kind,
    start_acl_broker,
    start_apache_acl_broker,
    start_rmq_acl_broker,
)
from tests.procs import RemotingSession, RmqProcesses

CREATE = RequestCode.UPDATE_AND_CREATE_ACL_CONFIG
DELETE = RequestCode.DELETE_ACL_CONFIG
VERSIONS = RequestCode.GET_BROKER_CLUSTER_ACL_INFO
WHITE = RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG

FULL_ACCOUNT = {
    "accessKey": "AclFileUser1",
    "secretKey": "AclFileSecret1",
    "whiteRemoteAddress": "192.168.0.*",
    "admin": "false",
    "defaultTopicPerm": "DENY",
    "defaultGroupPerm": "SUB",
    "topicPerms": "TopicA=PUB,TopicB=SUB|PUB",
    "groupPerms": "GroupA=SUB",
}

REQUESTS: list[tuple[int, dict[str, str]]] = [
    (CREATE, FULL_ACCOUNT),
    (CREATE, {"accessKey": "AclFileUser2", "secretKey": "12345678"}),
    (CREATE, {"accessKey": "AclFileUser1", "secretKey": "AclFileSecret9", "admin": "true"}),
    (CREATE, {"accessKey": "short", "secretKey": "AclFileSecret1"}),
    (CREATE, {"accessKey": "AclFileUser3", "secretKey": "tiny"}),
    (CREATE, {"accessKey": "AclFileUser3", "secretKey": "AclFileSecret3", "topicPerms": "T=X"}),
    (CREATE, {"accessKey": "AclFileUser3", "secretKey": "AclFileSecret3", "groupPerms": "G"}),
    (CREATE, {"accessKey": "AclFileUser3", "secretKey": "AclFileSecret3", "admin": "x"}),
    (DELETE, {"accessKey": "AclFileUser2"}),
    (DELETE, {"accessKey": "NoSuchKey99"}),
    (WHITE, {"globalWhiteAddrs": "127.0.0.1,10.10.*.*,192.168.1.{1,2}"}),
    (WHITE, {"globalWhiteAddrs": "127.0.0.1", "aclFileFullPath": "<home>/conf/plain_acl.yml"}),
    (WHITE, {"globalWhiteAddrs": "127.0.0.1", "aclFileFullPath": "/nonexistent/plain.yml"}),
    (VERSIONS, {}),
]

_TIMESTAMP = re.compile(r"(timestamp\"?:\s*)\d+")


def _normalise(text: str | None, home: Path) -> str | None:
    if text is None:
        return None
    return _TIMESTAMP.sub(r"\g<1><time>", text.replace(str(home), "<home>"))


def _header(response: RemotingCommand, home: Path) -> dict[str, Any]:
    header: dict[str, Any] = {}
    for key, value in (response.ext_fields or {}).items():
        if key == "allAclFileVersion":
            # a Java HashMap of paths: its order depends on the (different) homes
            text = _normalise(value, home) or "{}"
            header[key] = json.loads(text.replace(":<time>", ':"<time>"'))
        elif key != "brokerAddr":
            header[key] = _normalise(value, home)
    return header


def _run(
    addr: str,
    home: Path,
    requests: list[tuple[int, dict[str, str]]],
    files: tuple[str, ...] = ("plain_acl.yml",),
    credentials: tuple[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Send `requests` (signed with `credentials` when given); each answer with the text of
    `files` (under conf/) after it."""
    outcomes = []
    with RemotingSession(timeout=15) as session:
        for code, fields in requests:
            ext = {key: value.replace("<home>", str(home)) for key, value in fields.items()}
            request = RemotingCommand(code, opaque=next_opaque(), ext_fields=ext)
            if credentials is not None:
                sign_request(request, *credentials)
            response = session.send(addr, request)
            texts = {
                name: _normalise((home / "conf" / name).read_text(encoding="utf-8"), home)
                for name in files
            }
            outcomes.append(
                {
                    "code": response.code,
                    "remark": _normalise(response.remark, home),
                    "header": _header(response, home),
                    "files": texts,
                }
            )
    return outcomes


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Any]]:
    ensure_built()
    starters = {"apache": start_apache_acl_broker, "rmq": start_rmq_acl_broker}

    def run(kind: str, processes: RmqProcesses) -> list[dict[str, Any]]:
        broker, home = starters[kind](processes)
        return _run(broker.addr, home, REQUESTS, credentials=ADMIN_CREDENTIALS)

    return each_kind(tmp_path_factory.mktemp("acl-admin"), run)


@pytest.mark.matrix(
    "ACL",
    "admin requests 50-53 signed by an admin account: answers and plain_acl.yml written",
    "rmq",
)
def test_acl_admin_requests_equal_apaches(outcomes: dict[str, list[Any]]) -> None:
    apache, rmq = outcomes["apache"], outcomes["rmq"]
    assert apache[0]["code"] == 0 and "AclFileUser1" in apache[0]["files"]["plain_acl.yml"]
    assert apache[3]["code"] == RequestCode.UPDATE_AND_CREATE_ACL_CONFIG + 159  # 209, refused
    for (code, fields), theirs, ours in zip(REQUESTS, apache, rmq, strict=True):
        assert ours == theirs, (code, fields)


# -- several files: conf/acl/*.yml beside an empty default file ------------------------------

TEAM_ACL = """accounts:
  - accessKey: AclTeamAdmin
    secretKey: AclTeamSecret
    admin: true
  - accessKey: AclTeamUser
    secretKey: AclTeamUserSecret
"""

FOLDER_REQUESTS: list[tuple[int, dict[str, str]]] = [
    (CREATE, {"accessKey": "AclNewUser1", "secretKey": "AclNewSecret1"}),
    (CREATE, {"accessKey": "AclTeamUser", "secretKey": "AclTeamUserSecret2", "admin": "true"}),
    (WHITE, {"globalWhiteAddrs": "10.1.1.1", "aclFileFullPath": "<home>/conf/acl/empty.yml"}),
    (DELETE, {"accessKey": "AclNewUser1"}),
    (VERSIONS, {}),
]
FOLDER_FILES = ("plain_acl.yml", "acl/team.yml", "acl/empty.yml")


@pytest.mark.matrix("ACL", "admin requests 50-53 over conf/acl/ files, signed", "rmq")
def test_acl_folder_requests_equal_apaches(tmp_path: Path) -> None:
    ensure_built()
    files = {"plain_acl.yml": "", "acl/team.yml": TEAM_ACL, "acl/empty.yml": ""}

    def run(kind: str, processes: RmqProcesses) -> list[dict[str, Any]]:
        home = acl_home(processes.root, files)
        broker = start_acl_broker(kind, processes, home, name="folder-acl")
        credentials = ("AclTeamAdmin", "AclTeamSecret")
        return _run(broker.addr, home, FOLDER_REQUESTS, FOLDER_FILES, credentials)

    results = each_kind(tmp_path, run)
    apache, rmq = results["apache"], results["rmq"]
    assert [outcome["code"] for outcome in apache] == [0] * len(FOLDER_REQUESTS)
    assert "AclTeamUserSecret2" in apache[1]["files"]["acl/team.yml"]
    for (code, fields), theirs, ours in zip(FOLDER_REQUESTS, apache, rmq, strict=True):
        assert ours == theirs, (code, fields)


# -- GET_BROKER_CLUSTER_ACL_CONFIG (54): 4.9.8 dropped it; rmq serves it to admins ------------

LISTED = {
    "plain_acl.yml": TEAM_ACL.replace(
        "AclTeamUser\n", "AclTeamUser\n    topicPerms:\n      - T=PUB\n"
    )
}


@pytest.mark.matrix(
    "ACL",
    "GET_BROKER_CLUSTER_ACL_CONFIG (54): Apache's broker does not answer it, rmq's answers "
    "admins with the accounts, without secrets",
    "rmq",
    passed="different (deliberate)",
)
def test_acl_config_listing(tmp_path: Path) -> None:
    """4.9.8's source dropped the request; the 4.9.7 broker jar the harness runs still routes
    it but fails for want of 4.9.7's body class among the 4.9.8 common classes (SYSTEM_ERROR,
    NoClassDefFoundError).  rmq answers it in 4.9.7's body (GetBrokerClusterAclConfigResponse
    Body, read off the rocketmq-all-4.9.7 source) to admin accounts, secret keys left out."""
    ensure_built()

    def run(kind: str, processes: RmqProcesses) -> dict[str, Any]:
        home = acl_home(processes.root, LISTED)
        broker = start_acl_broker(kind, processes, home, name="list-acl")
        answers = {}
        with RemotingSession(timeout=15) as session:
            for who, credentials in (
                ("admin", ("AclTeamAdmin", "AclTeamSecret")),
                ("user", ("AclTeamUser", "AclTeamUserSecret")),
            ):
                request = RemotingCommand(
                    RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG, opaque=next_opaque(), ext_fields={}
                )
                sign_request(request, *credentials)
                response = session.send(broker.addr, request)
                body = json.loads(bytes(response.body)) if response.body else None
                answers[who] = {"code": response.code, "remark": response.remark, "body": body}
        return answers

    results = each_kind(tmp_path, run)
    apache, rmq = results["apache"], results["rmq"]
    for who in ("admin", "user"):
        assert apache[who]["code"] != ResponseCode.SUCCESS, apache
        assert apache[who]["body"] is None
    assert rmq["admin"] == {
        "code": ResponseCode.SUCCESS,
        "remark": None,
        "body": {
            "globalWhiteAddrs": [],
            "plainAccessConfigs": [
                {"accessKey": "AclTeamAdmin", "admin": True},
                {"accessKey": "AclTeamUser", "admin": False, "topicPerms": ["T=PUB"]},
            ],
        },
    }
    assert rmq["user"]["code"] == ResponseCode.SYSTEM_ERROR
    assert "Need admin permission for request code=54" in rmq["user"]["remark"]
