"""A broker's ACL refusal (Apache's AclException remark) becomes one line naming what is missing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rmq.cli.aclerrors import acl_error, acl_message
from rmq.client.admin import AdminError
from rmq.client.credentials import SessionCredentials, use_default_credentials
from rmq.client.errors import MQBrokerError, MQClientError
from rmq.remoting.codes import ResponseCode

FRAME = (
    ", org.apache.rocketmq.acl.plain.PlainPermissionManager.checkPerm"
    "(PlainPermissionManager.java:606)"
)
EXC = "org.apache.rocketmq.acl.common.AclException: "
BROKER = "127.0.0.1:10911"


@pytest.fixture(autouse=True)
def credentials() -> Iterator[None]:
    use_default_credentials(SessionCredentials("alice", "alice-secret"))
    yield
    use_default_credentials(None)


def refusal(message: str) -> MQBrokerError:
    return MQBrokerError(ResponseCode.SYSTEM_ERROR, EXC + message + FRAME, BROKER)


def line(exc: BaseException, **kw: str) -> str:
    error = acl_error(exc, **kw)
    assert error is not None
    return error.line()


def test_missing_permission_after_send_retries() -> None:
    failed = MQClientError(-1, "Send [3] times, still failed")
    failed.__cause__ = refusal("No default permission for topic:Orders")
    assert line(failed).startswith(
        f"rmq: error: no PUB permission on topic Orders for access key alice (broker {BROKER}); "
        "grant it with 'rmq acl set' (--topic-perm Orders=PUB)"
    )
    group = refusal("No default permission for group:Readers")
    assert "no SUB permission on group Readers for access key alice" in line(
        group, topic_perm="SUB"
    )


def test_account_signature_credentials_admin() -> None:
    assert "access key bob is not an account" in line(refusal("No acl config for bob"))
    assert "wrong secret key for access key alice" in line(
        refusal("Check signature failed for accessKey=alice")
    )
    assert "the broker requires ACL credentials" in line(refusal("No accessKey is configured"))
    admin = refusal("Need admin permission for request code=17, but accessKey=alice is not")
    assert "alice is not an admin account: UPDATE_AND_CREATE_TOPIC(17) needs one" in line(admin)
    nested = AdminError("failed on 1 broker", {BROKER: refusal("No acl config for bob")})
    assert f"(broker {BROKER})" in line(nested)


def test_other_errors_are_not_acl_refusals() -> None:
    assert acl_message("some other failure") is None
    assert acl_error(MQBrokerError(ResponseCode.SYSTEM_ERROR, "disk full", BROKER)) is None
    assert acl_error(RuntimeError("x")) is None
