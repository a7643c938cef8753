"""The ACL request signature: rmq.remoting.aclsign against Apache's AclClientRPCHook.

Fixed requests (header fields, bodies, credentials with and without a security token,
non-ASCII keys and values, keys whose Java order differs from a naive one) are signed by
Apache 4.9.8's own hook (conformance/drivers AclScenarios.sign) and by rmq's signer; the
ext fields each produces, Signature included, must be equal, and the broker-side check must
accept what Apache's hook signed.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from rmq.remoting.aclsign import request_signature, sign_request
from rmq.remoting.command import RemotingCommand
from tests.conformance.java import ensure_built, run_driver

CASES: list[dict[str, Any]] = [
    {"code": 10, "fields": {}, "accessKey": "RocketMQ", "secretKey": "12345678"},
    {
        "code": 310,
        "fields": {"a": "pg", "b": "TopicA", "c": "TBW102", "d": "4", "e": "0", "f": "0"},
        "body": base64.b64encode(b"hello acl").decode(),
        "accessKey": "RocketMQ",
        "secretKey": "12345678",
    },
    {
        "code": 11,
        "fields": {"topic": "T", "consumerGroup": "G", "queueId": "3", "queueOffset": "17"},
        "accessKey": "k",
        "secretKey": "s",
        "securityToken": "token-1",
    },
    {
        "code": 34,
        "fields": {"Zeta": "1", "alpha": "2", "_x": "3", "Ab": "4", "a\u00e9": "\u00fc\u00df"},
        "body": base64.b64encode(bytes(range(256))).decode(),
        "accessKey": "\u0101ccess",
        "secretKey": "s\u00e9cret",
    },
    {
        "code": 12,
        "fields": {"k\U0001f600": "emoji", "k\uffee": "high-bmp", "topic": "\u4e2d\u6587"},
        "accessKey": "AK",
        "secretKey": "SK",
    },
]


def rmq_signed(case: dict[str, Any]) -> dict[str, str]:
    body = base64.b64decode(case["body"]) if "body" in case else None
    command = RemotingCommand(case["code"], ext_fields=dict(case["fields"]), body=body)
    sign_request(command, case["accessKey"], case["secretKey"], case.get("securityToken"))
    assert command.ext_fields is not None
    return command.ext_fields


@pytest.mark.matrix("ACL", "request signature (Apache's AclClientRPCHook)", "rmq")
def test_signatures_equal_apaches(tmp_path: Path) -> None:
    ensure_built()
    apache = run_driver("AclScenarios.sign", {"cases": CASES}, home=tmp_path)["signed"]
    assert len(apache) == len(CASES)
    for case, theirs in zip(CASES, apache, strict=True):
        ours = rmq_signed(case)
        assert ours == theirs, case
        # what the broker recomputes from Apache's request matches the signature it carries
        body = base64.b64decode(case["body"]) if "body" in case else None
        received = RemotingCommand(case["code"], ext_fields=dict(theirs), body=body)
        assert request_signature(received, case["secretKey"]) == theirs["Signature"]
        assert request_signature(received, case["secretKey"] + "x") != theirs["Signature"]
