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

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conformance.clusters import BROKER_PROPS
from tests.conformance.java import (
    ROCKETMQ_HOME,
    ensure_built,
    run_driver,
    start_apache_broker,
    start_apache_namesrv,
)
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


def acl_home(root: Path) -> Path:
    home = root / "rocketmq-home"
    (home / "conf").mkdir(parents=True, exist_ok=True)
    shutil.copy(ROCKETMQ_HOME / "conf" / "logback_broker.xml", home / "conf")
    (home / "conf" / "plain_acl.yml").write_text(PLAIN_ACL, encoding="utf-8")
    return home


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, list[Any]]]:
    ensure_built()
    root = tmp_path_factory.mktemp("acl-clients")
    results: dict[str, list[Any]] = {}
    for kind in ("apache", "rmq"):
        processes = RmqProcesses(root / kind)
        (root / kind).mkdir(parents=True, exist_ok=True)
        try:
            home = acl_home(processes.root)
            if kind == "apache":
                namesrv = start_apache_namesrv(processes)
                broker = start_apache_broker(
                    processes,
                    "acl-broker",
                    namesrv_addr=namesrv.addr,
                    props=ACL_PROPS,
                    rocketmq_home=home,
                )
            else:
                namesrv = processes.start_namesrv()
                broker = processes.start_broker(
                    "acl-broker",
                    namesrv=namesrv,
                    props=ACL_PROPS,
                    env={"ROCKETMQ_HOME": str(home)},
                )
            spec = {"namesrv": namesrv.addr, "broker": broker.addr, "topic": "AclTopic"}
            results[kind] = run_driver(
                "AclScenarios.steps", {**spec, "steps": STEPS}, home=root / f"{kind}-driver"
            )["outcomes"]
        finally:
            processes.kill_all()
    yield results


@pytest.mark.matrix("ACL", "Java client with AclClientRPCHook: allowed and refused", "rmq")
def test_java_client_outcomes_equal_apaches(outcomes: dict[str, list[Any]]) -> None:
    apache, rmq = outcomes["apache"], outcomes["rmq"]
    assert len(apache) == len(STEPS)
    # Apache's own answers are what this test says they are
    assert apache[0] == {"status": "CREATED"}
    assert apache[4] == {"status": "SEND_OK"}
    assert apache[6]["code"] == 1 and "Check signature failed" in apache[6]["remark"]
    assert apache[12]["bodies"] == ["one", "two"]
    for step, theirs, ours in zip(STEPS, apache, rmq, strict=True):
        assert ours == theirs, step
