"""Plain ACL on a real `rmq broker`: both ports checked, the files reloaded while it runs, the
rmq-only `aclFile` key, and no check at all with aclEnable off.

Requests are raw frames (tests/procs.RemotingSession), signed with rmq.remoting.aclsign.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from rmq.common.config import FAST_PORT_OFFSET
from rmq.remoting.aclsign import sign_request
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, create_request
from rmq.remoting.headers import DeleteAccessConfigRequestHeader
from tests.procs import RemotingSession, RmqProcesses

PLAIN_ACL = """\
accounts:
  - accessKey: ItAdminKey
    secretKey: ItAdminSecret
    admin: true
"""


def _fast(addr: str) -> str:
    host, port = addr.rsplit(":", 1)
    return f"{host}:{int(port) - FAST_PORT_OFFSET}"


def _topics(credentials: tuple[str, str] | None) -> RemotingCommand:
    request = create_request(RequestCode.GET_ALL_TOPIC_CONFIG)
    if credentials is not None:
        sign_request(request, *credentials)
    return request


def _home(root: Path) -> Path:
    home = root / "acl-home"
    (home / "conf").mkdir(parents=True)
    (home / "conf" / "plain_acl.yml").write_text(PLAIN_ACL, encoding="utf-8")
    return home


def test_both_ports_checked_and_files_reloaded(rmq_processes: RmqProcesses) -> None:
    home = _home(rmq_processes.root)
    broker = rmq_processes.start_broker(
        "acl-broker", namesrv=None, props={"aclEnable": True}, env={"ROCKETMQ_HOME": str(home)}
    )
    admin = ("ItAdminKey", "ItAdminSecret")
    with RemotingSession(timeout=10) as session:
        for addr in (broker.addr, _fast(broker.addr)):
            refused = session.send(addr, _topics(None))
            assert refused.code == ResponseCode.SYSTEM_ERROR
            assert refused.remark is not None
            assert refused.remark.startswith(
                "org.apache.rocketmq.acl.common.AclException: No accessKey is configured, "
            )
            assert session.send(addr, _topics(admin)).code == ResponseCode.SUCCESS
        newcomer = ("ItNewKey1", "ItNewSecret1")
        refused = session.send(broker.addr, _topics(newcomer))
        assert refused.remark is not None and "No acl config for ItNewKey1" in refused.remark
        with (home / "conf" / "plain_acl.yml").open("a", encoding="utf-8") as file:
            file.write("  - accessKey: ItNewKey1\n    secretKey: ItNewSecret1\n")
        deadline = time.monotonic() + 30
        while session.send(broker.addr, _topics(newcomer)).code != ResponseCode.SUCCESS:
            assert time.monotonic() < deadline, "the new account was never loaded"
            time.sleep(0.2)
        # the broker's own rewrite (DELETE_ACL_CONFIG) takes effect at once
        delete = create_request(
            RequestCode.DELETE_ACL_CONFIG, DeleteAccessConfigRequestHeader(access_key="ItNewKey1")
        )
        sign_request(delete, *admin)
        assert session.send(broker.addr, delete).code == ResponseCode.SUCCESS
        refused = session.send(broker.addr, _topics(newcomer))
        assert refused.remark is not None and "No acl config for ItNewKey1" in refused.remark


def test_acl_file_key_and_acl_off(rmq_processes: RmqProcesses, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.yml"
    elsewhere.write_text(PLAIN_ACL.replace("ItAdmin", "ItOther"), encoding="utf-8")
    broker = rmq_processes.start_broker(
        "acl-file-broker", namesrv=None, props={"aclEnable": True, "aclFile": elsewhere}
    )
    plain = rmq_processes.start_broker("plain-broker", namesrv=None)
    with RemotingSession(timeout=10) as session:
        ok = session.send(broker.addr, _topics(("ItOtherKey", "ItOtherSecret")))
        assert ok.code == ResponseCode.SUCCESS
        refused = session.send(broker.addr, _topics(("ItAdminKey", "ItAdminSecret")))
        assert refused.remark is not None and "No acl config for ItAdminKey" in refused.remark
        # aclEnable off: nothing is checked, and the ACL requests are not served
        assert session.send(plain.addr, _topics(None)).code == ResponseCode.SUCCESS
        versions = session.send(plain.addr, create_request(RequestCode.GET_BROKER_CLUSTER_ACL_INFO))
        assert versions.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED


LISTED_ACL = """\
globalWhiteRemoteAddresses:
  - 127.0.0.1
accounts:
  - accessKey: ItAdminKey
    secretKey: ItAdminSecret
    admin: true
  - accessKey: ItUserKey
    secretKey: ItUserSecret
    defaultTopicPerm: SUB
    topicPerms:
      - Orders=PUB|SUB
    groupPerms:
      - Billing=SUB
"""


def test_acl_config_answers_admins_without_secrets(rmq_processes: RmqProcesses) -> None:
    """GET_BROKER_CLUSTER_ACL_CONFIG (54): 4.9.7's body, to a signed admin only (the caller's
    globally white address does not make an unsigned admin key count), no secret key."""
    home = _home(rmq_processes.root)
    (home / "conf" / "plain_acl.yml").write_text(LISTED_ACL, encoding="utf-8")
    broker = rmq_processes.start_broker(
        "acl-list-broker", namesrv=None, props={"aclEnable": True}, env={"ROCKETMQ_HOME": str(home)}
    )

    def ask(credentials: tuple[str, str] | None, forged: str | None = None) -> RemotingCommand:
        request = create_request(RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG)
        if credentials is not None:
            sign_request(request, *credentials)
        if forged is not None:
            request.ext_fields = {"AccessKey": forged, "Signature": "forged"}
        with RemotingSession(timeout=10) as session:
            return session.send(broker.addr, request)

    answer = ask(("ItAdminKey", "ItAdminSecret"))
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    assert answer.body is not None
    body = bytes(answer.body)
    assert json.loads(body) == {
        "globalWhiteAddrs": ["127.0.0.1"],
        "plainAccessConfigs": [
            {"accessKey": "ItAdminKey", "admin": True},
            {
                "accessKey": "ItUserKey",
                "admin": False,
                "defaultTopicPerm": "SUB",
                "groupPerms": ["Billing=SUB"],
                "topicPerms": ["Orders=PUB|SUB"],
            },
        ],
    }
    assert b"Secret" not in body
    for refused, message in (
        (ask(("ItUserKey", "ItUserSecret")), "Need admin permission for request code=54"),
        (ask(None), "No accessKey is configured"),
        (ask(None, forged="ItAdminKey"), "Check signature failed for accessKey=ItAdminKey"),
    ):
        assert refused.code == ResponseCode.SYSTEM_ERROR
        assert refused.remark is not None and message in refused.remark, refused.remark
