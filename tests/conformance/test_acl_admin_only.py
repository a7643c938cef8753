"""Who may change the ACL, differential: the same raw requests to an ACL-enabled Apache broker and
rmq broker, signed by a non-admin account, by an admin account, with a wrong signature or not at
all, before and after loopback becomes a global white address.

Apache 4.9.8 checks the admin flag for five requests only (Permission.ADMIN_CODE), so any account
with a valid signature may rewrite the ACL (UPDATE_AND_CREATE_ACL_CONFIG 50, DELETE_ACL_CONFIG 51,
UPDATE_GLOBAL_WHITE_ADDRS_CONFIG 53): a non-admin account makes itself admin, or white-lists its
own address, after which its unsigned requests (create a topic, 17; update the broker's config,
25) pass.  A client of a global white address passes every check, these requests included.

rmq answers the requests that change the ACL (50, 51, 53, and 25 setting `aclEnable` or
`aclFile`) only when an admin account signed them, from any address: a deliberate difference
(docs/spec-notes.md).  A refusal is Apache's own (code 1, `No accessKey is configured`, `Check
signature failed ...`, `Need admin permission ...`), and changes nothing: the file stays byte for
byte, no topic is created, no setting changes.

After every step the test waits until each broker has loaded its file as it is then (the data
version GET_BROKER_CLUSTER_ACL_INFO reports equals the file's), so that a change Apache's file
watcher picks up a few seconds later is in force for the next step.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from rmq.remoting.aclsign import sign_request
from rmq.remoting.codes import RequestCode
from rmq.remoting.command import RemotingCommand, create_request, next_opaque
from rmq.remoting.headers import CreateTopicRequestHeader
from tests.conformance.java import ensure_built
from tests.conformance.mqadmin_acl import acl_home, each_kind, start_acl_broker
from tests.procs import RemotingSession, RmqProcesses

SECTION = "ACL"
DELIBERATE = "different (deliberate)"

PLAIN_ACL = """\
globalWhiteRemoteAddresses:
  - 10.250.1.*
accounts:
  - accessKey: AclAdminKey
    secretKey: AclAdminSecret
    admin: true
  - accessKey: AclUserKey
    secretKey: AclUserSecret
    admin: false
    defaultTopicPerm: PUB
    defaultGroupPerm: SUB
  - accessKey: AclVictimOne
    secretKey: AclVictimSecret
  - accessKey: AclVictimTwo
    secretKey: AclVictimSecret
"""

ADMIN = ("AclAdminKey", "AclAdminSecret")
USER = ("AclUserKey", "AclUserSecret")
WRONG = ("AclAdminKey", "NotTheAdminSecret")

CREATE = RequestCode.UPDATE_AND_CREATE_ACL_CONFIG
DELETE = RequestCode.DELETE_ACL_CONFIG
WHITE = RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG
CONFIG = RequestCode.UPDATE_BROKER_CONFIG
TOPIC = RequestCode.UPDATE_AND_CREATE_TOPIC

EXCEPTION = "org.apache.rocketmq.acl.common.AclException: "
FRAMES = "org.apache.rocketmq.acl.plain.PlainPermissionManager."
NO_KEY = f"{EXCEPTION}No accessKey is configured, {FRAMES}validate(PlainPermissionManager.java:664)"


def need_admin(code: int, key: str) -> str:
    return (
        f"{EXCEPTION}Need admin permission for request code={code}, but accessKey={key} is not, "
        f"{FRAMES}checkPerm(PlainPermissionManager.java:581)"
    )


def bad_signature(key: str) -> str:
    return (
        f"{EXCEPTION}Check signature failed for accessKey={key}, "
        f"{FRAMES}validate(PlainPermissionManager.java:684)"
    )


@dataclass(frozen=True)
class Step:
    """One raw request: its code, ext fields or body, and who signs it (None: nobody)."""

    code: int
    fields: dict[str, str] = field(default_factory=dict)
    body: str | None = None
    signer: tuple[str, str] | None = None

    def request(self) -> RemotingCommand:
        body = self.body.encode() if self.body is not None else None
        if self.code == TOPIC:
            header = CreateTopicRequestHeader(
                topic=self.fields["topic"],
                default_topic="TBW102",
                read_queue_nums=4,
                write_queue_nums=4,
                perm=6,
                topic_filter_type="SINGLE_TAG",
            )
            request = create_request(TOPIC, header)
        else:
            request = RemotingCommand(
                self.code, opaque=next_opaque(), ext_fields=dict(self.fields), body=body
            )
        if self.signer is not None:
            sign_request(request, *self.signer)
        return request


# Loopback is not white yet: a non-admin account's valid signature (1-3), then unsigned (4-5).
ESCALATION = [
    Step(DELETE, {"accessKey": "AclVictimOne"}, signer=USER),
    Step(
        CREATE,
        {"accessKey": "AclUserKey", "secretKey": "AclUserSecret", "admin": "true"},
        signer=USER,
    ),
    Step(WHITE, {"globalWhiteAddrs": "127.0.0.1"}, signer=USER),
    Step(TOPIC, {"topic": "AclEscalated"}),
    Step(CONFIG, body="flushIntervalCommitLog=777\n"),
]
# An admin account white-lists loopback (6); an unsigned request then passes on both (7).
WHITE_LISTED = [
    Step(WHITE, {"globalWhiteAddrs": "127.0.0.1"}, signer=ADMIN),
    Step(TOPIC, {"topic": "AclWhiteTopic"}),
]
# From the white address: unsigned, signed by a non-admin account, wrongly signed (8-14).
FROM_WHITE = [
    Step(CREATE, {"accessKey": "AclNewKeyOne", "secretKey": "AclNewSecret1"}),
    Step(DELETE, {"accessKey": "AclVictimTwo"}),
    Step(WHITE, {"globalWhiteAddrs": "127.0.0.1,10.1.1.1"}),
    Step(CONFIG, body="aclEnable=false\n"),
    Step(CREATE, {"accessKey": "AclNewKeyTwo", "secretKey": "AclNewSecret2"}, signer=USER),
    Step(CONFIG, body="aclEnable=false\n", signer=USER),
    Step(CREATE, {"accessKey": "AclNewKeyThree", "secretKey": "AclNewSecret3"}, signer=WRONG),
]
# Signed by the admin account from the white address (15-16).
BY_ADMIN = [
    Step(CREATE, {"accessKey": "AclNewKeyFour", "secretKey": "AclNewSecret4"}, signer=ADMIN),
    Step(DELETE, {"accessKey": "AclNewKeyFour"}, signer=ADMIN),
]
STEPS = ESCALATION + WHITE_LISTED + FROM_WHITE + BY_ADMIN


def _file_counter(path: Path) -> int:
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    versions = data.get("dataVersion") or [{}]
    return int(versions[0].get("counter", 0))


def _loaded_counter(session: RemotingSession, addr: str) -> int:
    request = create_request(RequestCode.GET_BROKER_CLUSTER_ACL_INFO)
    sign_request(request, *ADMIN)
    response = session.send(addr, request)
    assert response.code == 0, response.remark
    version = (response.ext_fields or {}).get("version") or "{}"
    return int(json.loads(version).get("counter", 0))


def _settle(session: RemotingSession, addr: str, path: Path) -> None:
    """Wait until the broker has loaded the file as it is now (its watcher looks every 5 s)."""
    deadline = time.monotonic() + 60
    while _loaded_counter(session, addr) != _file_counter(path):
        assert time.monotonic() < deadline, f"{addr} did not reload {path}"
        time.sleep(0.2)


def _state(session: RemotingSession, addr: str) -> dict[str, Any]:
    """What the steps could have changed besides the file: topics and two settings."""
    topics = create_request(RequestCode.GET_ALL_TOPIC_CONFIG)
    sign_request(topics, *ADMIN)
    table = json.loads(bytes(session.send(addr, topics).body or b"{}"))["topicConfigTable"]
    config = create_request(RequestCode.GET_BROKER_CONFIG)
    sign_request(config, *ADMIN)
    lines = bytes(session.send(addr, config).body or b"").decode().splitlines()
    settings = dict(line.split("=", 1) for line in lines if "=" in line)
    return {
        "topics": sorted(name for name in table if name.startswith("Acl")),
        "aclEnable": settings.get("aclEnable"),
        "flushIntervalCommitLog": settings.get("flushIntervalCommitLog"),
    }


def _run(kind: str, processes: RmqProcesses) -> dict[str, Any]:
    home = acl_home(processes.root, {"plain_acl.yml": PLAIN_ACL})
    broker = start_acl_broker(kind, processes, home, name="acl-admin-only")
    path = home / "conf" / "plain_acl.yml"
    answers = []
    with RemotingSession(timeout=15) as session:
        states = [_state(session, broker.addr)]
        for step in STEPS:
            response = session.send(broker.addr, step.request())
            _settle(session, broker.addr, path)
            answers.append(
                {
                    "code": response.code,
                    "remark": response.remark,
                    "file": path.read_text(encoding="utf-8"),
                }
            )
            if step is ESCALATION[-1]:
                states.append(_state(session, broker.addr))
        states.append(_state(session, broker.addr))
    return {"answers": answers, "states": states}


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    ensure_built()
    return each_kind(tmp_path_factory.mktemp("acl-admin-only"), _run)


def _part(outcome: dict[str, Any], steps: list[Step]) -> list[dict[str, Any]]:
    start = STEPS.index(steps[0])
    return list(outcome["answers"][start : start + len(steps)])


def _file_before(outcome: dict[str, Any], step: Step) -> str:
    index = STEPS.index(step)
    return PLAIN_ACL if index == 0 else str(outcome["answers"][index - 1]["file"])


@pytest.mark.matrix(
    SECTION,
    "ACL changes (50, 51, 53) signed by a non-admin account: Apache's broker applies them (the "
    "account makes itself admin, white-lists its address, then passes unsigned), rmq's refuses "
    "them (Need admin permission) and changes nothing",
    "rmq",
    passed=DELIBERATE,
)
def test_a_non_admin_account_cannot_change_the_acl(outcomes: dict[str, dict[str, Any]]) -> None:
    apache, rmq = outcomes["apache"], outcomes["rmq"]
    # Apache: every step applied, and the unsigned requests passed once loopback was white
    assert [a["code"] for a in _part(apache, ESCALATION)] == [0] * len(ESCALATION)
    deleted, made_admin, white = _part(apache, ESCALATION)[:3]
    assert "AclVictimOne" not in deleted["file"]
    assert "admin: true" in made_admin["file"].split("AclUserKey", 1)[1].split("accessKey", 1)[0]
    assert "127.0.0.1" in white["file"]
    assert apache["states"][1]["topics"] == ["AclEscalated"]
    assert apache["states"][1]["flushIntervalCommitLog"] == "777"
    # rmq: refused with Apache's words, the file unchanged byte for byte, nothing created
    expected = [
        need_admin(DELETE, "AclUserKey"),
        need_admin(CREATE, "AclUserKey"),
        need_admin(WHITE, "AclUserKey"),
        NO_KEY,
        NO_KEY,
    ]
    answers = _part(rmq, ESCALATION)
    assert [(a["code"], a["remark"]) for a in answers] == [(1, text) for text in expected]
    assert all(answer["file"] == PLAIN_ACL for answer in answers)
    assert rmq["states"][1] == rmq["states"][0]
    assert rmq["states"][0]["topics"] == []


@pytest.mark.matrix(
    SECTION,
    "ACL changes (50, 51, 53; 25 setting aclEnable) from a global white address, unsigned, "
    "signed by a non-admin account or wrongly signed: Apache's broker applies them, rmq's "
    "refuses them and changes nothing",
    "rmq",
    passed=DELIBERATE,
)
def test_a_white_address_cannot_change_the_acl(outcomes: dict[str, dict[str, Any]]) -> None:
    apache, rmq = outcomes["apache"], outcomes["rmq"]
    # loopback is white on both: an unsigned topic creation passes on both
    for outcome in (apache, rmq):
        assert [a["code"] for a in _part(outcome, WHITE_LISTED)] == [0, 0]
    assert [a["code"] for a in _part(apache, FROM_WHITE)] == [0] * len(FROM_WHITE)
    assert "AclNewKeyThree" in _part(apache, FROM_WHITE)[-1]["file"]
    assert apache["states"][-1]["aclEnable"] == "false"
    expected = [
        NO_KEY,
        NO_KEY,
        NO_KEY,
        NO_KEY,
        need_admin(CREATE, "AclUserKey"),
        need_admin(CONFIG, "AclUserKey"),
        bad_signature("AclAdminKey"),
    ]
    answers = _part(rmq, FROM_WHITE)
    assert [(a["code"], a["remark"]) for a in answers] == [(1, text) for text in expected]
    unchanged = _file_before(rmq, FROM_WHITE[0])
    assert "127.0.0.1" in unchanged and "AclVictimTwo" in unchanged
    assert all(answer["file"] == unchanged for answer in answers)
    assert rmq["states"][-1]["aclEnable"] == "true"


@pytest.mark.matrix(SECTION, "ACL changes signed by an admin account: applied by both", "rmq")
def test_an_admin_account_changes_the_acl_on_both(outcomes: dict[str, dict[str, Any]]) -> None:
    apache, rmq = outcomes["apache"], outcomes["rmq"]
    for steps in (WHITE_LISTED[:1], BY_ADMIN):
        theirs = [(a["code"], a["remark"]) for a in _part(apache, steps)]
        ours = [(a["code"], a["remark"]) for a in _part(rmq, steps)]
        assert ours == theirs == [(0, None)] * len(steps)
    created, deleted = _part(rmq, BY_ADMIN)
    assert "AclNewKeyFour" in created["file"] and "AclNewKeyFour" not in deleted["file"]
    assert "127.0.0.1" in _part(rmq, WHITE_LISTED)[0]["file"]
