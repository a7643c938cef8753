"""Plain ACL on the broker, differential: Apache's Java client with AclClientRPCHook against an
ACL-enabled Apache broker and an ACL-enabled rmq broker, the same steps, the same outcomes.

Each side runs its own name server and one broker with `aclEnable=true` and a ROCKETMQ_HOME
whose `conf/plain_acl.yml` is `PLAIN_ACL` (no global white address covers loopback, so every
request is checked).  The steps (conformance/drivers AclScenarios.steps) create topics with
the admin account and are refused with a user account (admin codes), send and pull with the
user's right credentials, and are refused with a wrong secret, an unknown access key, no
credentials at all, a topic the account may not publish to (by default and by its own
`topicPerms`) and a group it may not use.  A refusal is compared as the response code and
remark the client got; Apache's remark names the acl jar's throwing line, so it must be
byte-identical.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conformance.clusters import BROKER_PROPS
from tests.conformance.console_acl import console_acl_effects
from tests.conformance.java import ensure_built, run_driver, start_apache_namesrv
from tests.conformance.mqadmin_acl import acl_home, each_kind, start_acl_broker
from tests.procs import RmqProcesses

PLAIN_ACL = """\
globalWhiteRemoteAddresses:
  - 10.250.1.*
accounts:
  - accessKey: AclAdminKey
    secretKey: AclAdminSecret
    admin: true
  - accessKey: AclUserKey
    secretKey: AclUserSecret
    whiteRemoteAddress: 10.250.2.1
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms:
      - AclTopic=PUB|SUB
      - AclReadOnly=SUB
    groupPerms:
      - AclGroup=SUB
"""

ADMIN = {"accessKey": "AclAdminKey", "secretKey": "AclAdminSecret"}
USER = {"accessKey": "AclUserKey", "secretKey": "AclUserSecret"}
WRONG = {"accessKey": "AclUserKey", "secretKey": "NotTheSecret"}
UNKNOWN = {"accessKey": "NoSuchKey1", "secretKey": "AclUserSecret"}

STEPS: list[dict[str, Any]] = [
    {"op": "createTopic", **ADMIN},
    {"op": "createTopic", "topic": "AclReadOnly", **ADMIN},
    {"op": "createTopic", "topic": "AclOther", **ADMIN},
    {"op": "createTopic", "topic": "AclUserMade", **USER},
    {"op": "send", "group": "AclProducer", "body": "one", **USER},
    {"op": "send", "group": "AclProducer", "body": "two", **USER},
    {"op": "send", "group": "AclProducer", "body": "wrong", **WRONG},
    {"op": "send", "group": "AclProducer", "body": "unknown", **UNKNOWN},
    {"op": "send", "group": "AclProducer", "body": "anonymous"},
    {"op": "send", "topic": "AclOther", "group": "AclProducer", "body": "x", **USER},
    {"op": "send", "topic": "AclReadOnly", "group": "AclProducer", "body": "x", **USER},
    {"op": "send", "topic": "AclOther", "group": "AclProducer", "body": "admin", **ADMIN},
    {"op": "pull", "group": "AclGroup", **USER},
    {"op": "pull", "group": "AclGroup", **WRONG},
    {"op": "pull", "group": "AclOtherGroup", **USER},
    {"op": "pull", "topic": "AclOther", "group": "AclGroup", **USER},
    {"op": "pull", "topic": "AclReadOnly", "group": "AclGroup", **USER},
    {"op": "pull", "topic": "AclOther", "group": "AclAnyGroup", **ADMIN},
]

ACL_PROPS = {**BROKER_PROPS, "brokerClusterName": "AclCluster", "aclEnable": True}


def _steps(kind: str, processes: RmqProcesses) -> dict[str, Any]:
    home = acl_home(processes.root, {"plain_acl.yml": PLAIN_ACL})
    namesrv = start_apache_namesrv(processes) if kind == "apache" else processes.start_namesrv()
    broker = start_acl_broker(
        kind, processes, home, name="acl-broker", namesrv_addr=namesrv.addr, props=ACL_PROPS
    )
    spec = {"namesrv": namesrv.addr, "broker": broker.addr, "topic": "AclTopic", "steps": STEPS}
    outcomes: list[Any] = run_driver("AclScenarios.steps", spec, home=processes.root / "driver")[
        "outcomes"
    ]
    cluster = str(ACL_PROPS["brokerClusterName"])
    try:  # on the same cluster; its failure is its own test's
        console: Any = console_acl_effects(namesrv, broker, processes.root, ADMIN, cluster)
    except Exception as exc:
        console = exc
    return {"java": outcomes, "console": console}


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    ensure_built()
    return each_kind(tmp_path_factory.mktemp("acl-clients"), _steps)


@pytest.mark.matrix("ACL", "Java client with AclClientRPCHook: allowed and refused", "rmq")
def test_java_client_outcomes_equal_apaches(outcomes: dict[str, dict[str, Any]]) -> None:
    apache, rmq = outcomes["apache"]["java"], outcomes["rmq"]["java"]
    assert len(apache) == len(STEPS)
    # Apache's own answers are what this test says they are
    assert apache[0] == {"status": "CREATED"}
    assert apache[4] == {"status": "SEND_OK"}
    assert apache[6]["code"] == 1 and "Check signature failed" in apache[6]["remark"]
    assert apache[12]["bodies"] == ["one", "two"]
    for step, theirs, ours in zip(STEPS, apache, rmq, strict=True):
        assert ours == theirs, step


@pytest.mark.matrix(
    "ACL",
    "rmq console: an account created that rmq produce sends with, refused once deleted",
    "rmq",
)
def test_console_acl_changes_have_the_same_effect(outcomes: dict[str, dict[str, Any]]) -> None:
    apache, rmq = outcomes["apache"]["console"], outcomes["rmq"]["console"]
    for side in (apache, rmq):
        if isinstance(side, BaseException):
            raise side
    assert apache["sent"] == (0, "SEND_OK") and apache["refused"] != 0, apache
    assert apache["listed"] is False and rmq["listed"] is True  # the deliberate difference
    for key in ("created", "saved", "sent", "deleted", "refused"):
        assert rmq[key] == apache[key], key
