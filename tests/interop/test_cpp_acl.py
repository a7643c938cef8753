"""The Apache C++ client through an ACL-enabled `rmq broker` (plain ACL, aclEnable=true).

The broker's ROCKETMQ_HOME holds a `conf/plain_acl.yml` with no global white address that
covers loopback, an admin account and a user account that may publish to one topic only.  The
topics are created with a request rmq signs as the admin (rmq.remoting.aclsign).  The C++
producer with the user's session credentials sends; with a wrong secret, without credentials
or to a topic the account may not publish to, every send fails and the broker stored nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from rmq.client.api.brokeradmin import create_topic_request
from rmq.remoting.aclsign import sign_request
from rmq.remoting.bodies import TopicConfig
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import create_request
from rmq.remoting.headers import GetMaxOffsetRequestHeader
from tests.integration.test_broker_admin import wait_for_route
from tests.interop.cpp_client import run_cpp
from tests.procs import RemotingSession, RmqProcess, RmqProcesses

pytestmark = pytest.mark.interop

PLAIN_ACL = """\
globalWhiteRemoteAddresses:
  - 10.250.1.*
accounts:
  - accessKey: CppAdminKey
    secretKey: CppAdminSecret
    admin: true
  - accessKey: CppUserKey
    secretKey: CppUserSecret
    defaultTopicPerm: DENY
    defaultGroupPerm: PUB|SUB
    topicPerms:
      - CppAclTopic=PUB
      - CppReadOnly=SUB
"""

ADMIN = ("CppAdminKey", "CppAdminSecret")
TOPICS = ("CppAclTopic", "CppReadOnly")


def max_offsets(session: RemotingSession, broker: RmqProcess, topic: str) -> list[int]:
    """Each queue's max offset, asked as the admin (signed)."""
    offsets = []
    for queue in range(2):
        header = GetMaxOffsetRequestHeader(topic=topic, queue_id=queue)
        request = create_request(RequestCode.GET_MAX_OFFSET, header)
        sign_request(request, *ADMIN)
        response = session.send(broker.addr, request)
        assert response.code == ResponseCode.SUCCESS, response
        assert response.ext_fields is not None
        offsets.append(int(response.ext_fields["offset"]))
    return offsets


@pytest.fixture(scope="module")
def acl_broker(module_processes: RmqProcesses, namesrv: RmqProcess) -> Iterator[RmqProcess]:
    home = module_processes.root / "acl-home"
    (home / "conf").mkdir(parents=True)
    (home / "conf" / "plain_acl.yml").write_text(PLAIN_ACL, encoding="utf-8")
    broker = module_processes.start_broker(
        "cpp-acl-broker",
        namesrv=namesrv,
        props={"aclEnable": True, "brokerClusterName": "CppAclCluster"},
        env={"ROCKETMQ_HOME": str(home)},
    )
    with RemotingSession(timeout=10) as session:
        for topic in TOPICS:
            config = TopicConfig(topic_name=topic, read_queue_nums=2, write_queue_nums=2)
            request = create_topic_request(config)
            sign_request(request, *ADMIN)
            response = session.send(broker.addr, request)
            assert response.code == ResponseCode.SUCCESS, response
            wait_for_route(session, namesrv, topic)
    yield broker
    broker.stop_cleanly()


def produce(namesrv: RmqProcess, topic: str, count: int, **credentials: str) -> list[Any]:
    spec = {
        "namesrv": namesrv.addr,
        "topic": topic,
        "messages": [{"body": f"acl-{n}"} for n in range(count)],
        "send_timeout_ms": 3000,
        **credentials,
    }
    results: list[Any] = run_cpp("produce", spec, timeout=120).result["results"]
    return results


def test_cpp_producer_with_credentials_sends(namesrv: RmqProcess, acl_broker: RmqProcess) -> None:
    results = produce(
        namesrv, "CppAclTopic", 10, access_key="CppUserKey", secret_key="CppUserSecret"
    )
    assert [r["ok"] for r in results] == [True] * 10, results
    assert {r["status"] for r in results} == {"OK"}
    with RemotingSession() as session:
        assert sum(max_offsets(session, acl_broker, "CppAclTopic")) >= 10


@pytest.mark.parametrize(
    ("topic", "credentials", "reason"),
    [
        (
            "CppAclTopic",
            {"access_key": "CppUserKey", "secret_key": "NotTheSecret"},
            "Check signature failed for accessKey=CppUserKey",
        ),
        # the C++ client without credentials still sends an empty AccessKey
        ("CppAclTopic", {}, "No acl config for "),
        (
            "CppReadOnly",
            {"access_key": "CppUserKey", "secret_key": "CppUserSecret"},
            "No default permission for topic:CppReadOnly",
        ),
    ],
    ids=["wrong-secret", "no-credentials", "denied-topic"],
)
def test_cpp_producer_is_refused(
    namesrv: RmqProcess,
    acl_broker: RmqProcess,
    topic: str,
    credentials: dict[str, str],
    reason: str,
) -> None:
    with RemotingSession() as session:
        before = max_offsets(session, acl_broker, topic)
    logged = len(acl_broker.log_text())
    results = produce(namesrv, topic, 2, **credentials)
    assert [r["ok"] for r in results] == [False, False], results
    refusals = [
        line
        for line in acl_broker.log_text()[logged:].splitlines(keepends=True)
        if "SEND_MESSAGE(10) refused" in line
    ]
    assert refusals, acl_broker.log_tail()
    assert all(line.rstrip("\n").endswith(f": {reason}") for line in refusals), refusals
    with RemotingSession() as session:
        assert max_offsets(session, acl_broker, topic) == before
