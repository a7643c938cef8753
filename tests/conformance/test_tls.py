"""TLS, differential: Apache's Java client against a broker in TLS enforcing mode, Apache's
and rmq's, the same steps, the same outcomes.

Each side runs its own name server in permissive mode (Apache's default; it serves the
broker's registration over TLS and the harness's plain route checks) and one broker with
`tls.server.mode=enforcing` and test-mode certificates (self-signed, made at start-up): Apache's
as JVM properties, rmq's as the same keys in its config file.  The Java client with
`tls.enable=true` (ClientConfig.useTLS, trusting any certificate in test mode) creates a topic,
sends two messages and pulls them back; the same client without TLS is then refused (its
send fails without an answer from the broker).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conformance.clusters import BROKER_PROPS
from tests.conformance.java import (
    ensure_built,
    run_driver,
    start_apache_broker,
    start_apache_namesrv,
)
from tests.conformance.mqadmin_acl import each_kind
from tests.procs import RmqProcesses

PERMISSIVE = {"tls.server.mode": "permissive"}
ENFORCING = {"tls.server.mode": "enforcing"}

TLS_STEPS: list[dict[str, Any]] = [
    {"op": "createTopic"},
    {"op": "send", "group": "TlsProducer", "body": "one"},
    {"op": "send", "group": "TlsProducer", "body": "two"},
    {"op": "pull", "group": "TlsConsumer"},
]
PLAIN_STEPS: list[dict[str, Any]] = [{"op": "send", "group": "PlainProducer", "body": "plain"}]


def _steps(kind: str, processes: RmqProcesses) -> dict[str, list[Any]]:
    props = {**BROKER_PROPS, "brokerClusterName": "TlsCluster"}
    if kind == "apache":
        namesrv = start_apache_namesrv(processes, jvm_props=PERMISSIVE)
        broker = start_apache_broker(
            processes, "tls-broker", namesrv_addr=namesrv.addr, props=props, jvm_props=ENFORCING
        )
    else:
        namesrv = processes.start_namesrv(props=PERMISSIVE)
        broker = processes.start_broker("tls-broker", namesrv=namesrv, props={**props, **ENFORCING})
    spec = {"namesrv": namesrv.addr, "broker": broker.addr, "topic": "TlsTopic"}
    home = processes.root / "driver"
    tls = run_driver(
        "AclScenarios.steps", {**spec, "steps": TLS_STEPS}, home=home, props={"tls.enable": "true"}
    )
    plain = run_driver("AclScenarios.steps", {**spec, "steps": PLAIN_STEPS}, home=home)
    return {"tls": tls["outcomes"], "plain": plain["outcomes"]}


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, list[Any]]]:
    ensure_built()
    return each_kind(tmp_path_factory.mktemp("tls"), _steps)


@pytest.mark.matrix("TLS", "Java client with useTLS against an enforcing broker", "rmq")
def test_tls_client_is_served_as_by_apache(outcomes: dict[str, dict[str, list[Any]]]) -> None:
    apache, rmq = outcomes["apache"]["tls"], outcomes["rmq"]["tls"]
    assert apache == [
        {"status": "CREATED"},
        {"status": "SEND_OK"},
        {"status": "SEND_OK"},
        {"status": "FOUND", "bodies": ["one", "two"]},
    ]
    assert rmq == apache


@pytest.mark.matrix("TLS", "plain Java client refused by an enforcing broker", "rmq")
def test_plain_client_is_refused_as_by_apache(outcomes: dict[str, dict[str, list[Any]]]) -> None:
    apache, rmq = outcomes["apache"]["plain"], outcomes["rmq"]["plain"]
    # a refusal {"code", "remark"}, not a send status; the remark names ports, so only the
    # code and the kind of failure are compared
    assert "status" not in apache[0] and "code" in apache[0], apache
    assert "status" not in rmq[0] and rmq[0]["code"] == apache[0]["code"], (apache, rmq)
    assert "Send [1] times" in apache[0]["remark"]
    assert "Send [1] times" in rmq[0]["remark"]
