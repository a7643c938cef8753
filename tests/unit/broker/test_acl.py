"""The broker's plain ACL (rmq/server/broker/acl): address patterns, permissions, the resources
each request code needs, the validation order and the files (folder, duplicates, reload)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rmq.common.plainaccess import PlainAccessConfig
from rmq.remoting.aclsign import sign_request
from rmq.remoting.bodies.client import (
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    HeartbeatData,
    MessageModel,
    SubscriptionData,
)
from rmq.remoting.codes import RequestCode
from rmq.remoting.command import RemotingCommand
from rmq.server.broker.acl.accounts import DENY, PUB, SUB, Account
from rmq.server.broker.acl.addresses import address_matcher, client_host, expand_ip
from rmq.server.broker.acl.errors import AclError
from rmq.server.broker.acl.files import AclFiles
from rmq.server.broker.acl.validator import AclValidator, needed_resources


@pytest.mark.parametrize(
    ("pattern", "yes", "no"),
    [
        ("192.168.0.1", ["192.168.0.1"], ["192.168.0.2", "192.168.0.10"]),
        ("*", ["1.2.3.4", "::1"], []),
        ("*.*.*.*", ["8.8.8.8"], []),
        ("192.168.1.1-100", ["192.168.1.1", "192.168.1.100"], ["192.168.1.101", "192.168.2.5"]),
        ("10.10.*.*", ["10.10.0.1", "10.10.255.255"], ["10.11.0.1"]),
        # only the first range part is checked: the parts after it are not looked at
        ("10.1-5.3.4", ["10.3.9.9"], ["10.6.3.4"]),
        ("192.168.1.{1,2}", ["192.168.1.1", "192.168.1.2"], ["192.168.1.3"]),
        ("1.1.1.1,2.2.2.2", ["2.2.2.2"], ["3.3.3.3"]),
        ("::1", ["0:0:0:0:0:0:0:1", "::1"], ["::2"]),
        ("", [], ["127.0.0.1"]),
    ],
)
def test_address_patterns(pattern: str, yes: list[str], no: list[str]) -> None:
    match = address_matcher(pattern)
    assert [match(a) for a in yes] == [True] * len(yes)
    assert [match(a) for a in no] == [False] * len(no)


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("not-an-ip", "Index 1 out of bounds for length 1"),
        ("1.-2.3.4", "RangeRemoteAddressStrategy netaddress examine scope Exception value -2 "),
        ("192.168.1.x", "Netaddress examine Exception netaddress is 192.168.1.x"),
        ("1.1.1.1,2.2.2", "Netaddress examine Exception netaddress is 2.2.2"),
        ("192.168.1.300-2", "RangeRemoteAddressStrategy netaddress examine scope Exception start"),
    ],
)
def test_refused_address_patterns(pattern: str, message: str) -> None:
    with pytest.raises(AclError) as raised:
        address_matcher(pattern)
    assert raised.value.message.startswith(message)


def test_expand_and_client_host() -> None:
    assert expand_ip("::1", 8) == "0000:0000:0000:0000:0000:0000:0000:0001"
    assert expand_ip("fe80::a:1", 8) == "FE80:0000:0000:0000:0000:0000:000A:0001"
    assert client_host("127.0.0.1:4321") == "127.0.0.1"
    assert client_host("[::1]:4321") == "::1"


def _account(**fields: object) -> Account:
    return Account.from_yaml({"accessKey": "UserKey1", "secretKey": "UserSecret1", **fields})


def test_account_permissions() -> None:
    account = _account(
        defaultTopicPerm="SUB",
        defaultGroupPerm="DENY",
        topicPerms=["TopicA=PUB|SUB", "TopicB=DENY"],
        groupPerms=["GroupA=SUB"],
    )
    assert account.perms == {"TopicA": PUB | SUB, "TopicB": DENY, "%RETRY%GroupA": SUB}
    account.check(RequestCode.SEND_MESSAGE, {"TopicA": PUB, "%RETRY%GroupA": SUB})
    account.check(RequestCode.PULL_MESSAGE, {"Other": SUB})  # default topic perm SUB
    refusals = {
        "TopicB": "No default permission for topic:TopicB",
        "Other": "No default permission for topic:Other",
        "%RETRY%GroupB": "No default permission for group:GroupB",
    }
    for resource, message in refusals.items():
        with pytest.raises(AclError) as raised:
            account.check(RequestCode.SEND_MESSAGE, {resource: PUB})
        assert raised.value.message == message
    with pytest.raises(AclError) as raised:
        account.check(RequestCode.UPDATE_AND_CREATE_TOPIC, {})
    assert raised.value.message == (
        "Need admin permission for request code=17, but accessKey=UserKey1 is not"
    )


def test_admin_without_perms_may_do_anything_but_with_perms_is_checked() -> None:
    _account(admin=True).check(RequestCode.UPDATE_AND_CREATE_TOPIC, {"Any": PUB})
    with pytest.raises(AclError):
        _account(admin=True, topicPerms=["T=SUB"]).check(RequestCode.SEND_MESSAGE, {"Any": PUB})


def test_short_keys_and_bad_resources_are_refused() -> None:
    with pytest.raises(AclError, match="cannot be null and length should longer than 6"):
        Account.from_yaml({"accessKey": "short", "secretKey": "LongEnough"})
    with pytest.raises(AclError, match="Parse resource permission failed for topic:T"):
        _account(topicPerms=["T"])


def _request(code: int, fields: dict[str, str], body: bytes | None = None) -> RemotingCommand:
    return RemotingCommand(code, ext_fields=dict(fields), body=body)


def test_needed_resources_per_code() -> None:
    cases = [
        (RequestCode.SEND_MESSAGE, {"topic": "T", "group": "P"}, {"T": PUB}),
        (RequestCode.SEND_MESSAGE, {"topic": "%RETRY%G", "group": "G"}, {"%RETRY%G": SUB}),
        (RequestCode.SEND_MESSAGE_V2, {"b": "T", "a": "P"}, {"T": PUB}),
        (RequestCode.SEND_MESSAGE_V2, {"b": "%RETRY%G", "a": "G"}, {"%RETRY%G": SUB}),
        (RequestCode.CONSUMER_SEND_MSG_BACK, {"group": "G"}, {"%RETRY%G": SUB}),
        (
            RequestCode.PULL_MESSAGE,
            {"topic": "T", "consumerGroup": "G"},
            {"T": SUB, "%RETRY%G": SUB},
        ),
        (RequestCode.QUERY_MESSAGE, {"topic": "T"}, {"T": SUB}),
        (RequestCode.UNREGISTER_CLIENT, {"clientID": "c", "consumerGroup": "G"}, {"%RETRY%G": SUB}),
        (RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "G"}, {"%RETRY%G": SUB}),
        (
            RequestCode.UPDATE_CONSUMER_OFFSET,
            {"consumerGroup": "G", "topic": "T"},
            {"%RETRY%G": SUB, "T": SUB},
        ),
        (RequestCode.SEND_BATCH_MESSAGE, {"b": "T"}, {}),
        (RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}, {}),
    ]
    for code, fields, needed in cases:
        assert needed_resources(_request(code, fields)) == needed, code


def test_heartbeat_needs_every_group_and_subscription() -> None:
    consumer = ConsumerData(
        group_name="G",
        consume_type=ConsumeType.CONSUME_PASSIVELY,
        message_model=MessageModel.CLUSTERING,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
        subscription_data_set=[
            SubscriptionData.from_expression("T1", "*"),
            SubscriptionData.from_expression("T2", "a||b"),
        ],
    )
    body = HeartbeatData(client_id="c", consumer_data_set=[consumer]).encode()
    needed = needed_resources(_request(RequestCode.HEART_BEAT, {}, body))
    assert needed == {"%RETRY%G": SUB, "T1": SUB, "T2": SUB}
    with pytest.raises(AclError) as raised:
        needed_resources(_request(RequestCode.HEART_BEAT, {}, b"{not json"))
    assert raised.value.where == "PlainAccessValidator.parse(PlainAccessValidator.java:134)"


PLAIN_ACL = """\
globalWhiteRemoteAddresses:
  - 10.0.0.*
accounts:
  - accessKey: UserKey1
    secretKey: UserSecret1
    whiteRemoteAddress: 192.168.7.7
    defaultTopicPerm: DENY
    topicPerms:
      - TopicA=PUB
"""


def _files(tmp_path: Path, text: str = PLAIN_ACL) -> AclFiles:
    (tmp_path / "conf").mkdir(exist_ok=True)
    (tmp_path / "conf" / "plain_acl.yml").write_text(text, encoding="utf-8")
    files = AclFiles(str(tmp_path))
    files.load()
    return files


def _remark(validator: AclValidator, request: RemotingCommand, addr: str) -> str | None:
    try:
        validator.validate(request, addr)
    except AclError as exc:
        return exc.remark()
    return None


def test_validation_order_and_remarks(tmp_path: Path) -> None:
    validator = AclValidator(_files(tmp_path))
    send = {"topic": "TopicA", "group": "P"}
    base = "org.apache.rocketmq.acl.common.AclException: "
    where = ", org.apache.rocketmq.acl.plain.PlainPermissionManager."
    # a global white address passes without anything
    assert _remark(validator, _request(RequestCode.SEND_MESSAGE, send), "10.0.0.9:1") is None
    assert _remark(validator, RemotingCommand(RequestCode.HEART_BEAT), "1.1.1.1:1") == (
        f"{base}No accessKey is configured{where}validate(PlainPermissionManager.java:664)"
    )
    unknown = _request(RequestCode.SEND_MESSAGE, send)
    sign_request(unknown, "NoSuchKey", "whatever")
    assert _remark(validator, unknown, "1.1.1.1:1") == (
        f"{base}No acl config for NoSuchKey{where}validate(PlainPermissionManager.java:668)"
    )
    wrong = _request(RequestCode.SEND_MESSAGE, send)
    sign_request(wrong, "UserKey1", "NotTheSecret")
    assert _remark(validator, wrong, "1.1.1.1:1") == (
        f"{base}Check signature failed for accessKey=UserKey1"
        f"{where}validate(PlainPermissionManager.java:684)"
    )
    # the account's own white address skips the signature and the permissions
    assert _remark(validator, wrong, "192.168.7.7:1") is None
    good = _request(RequestCode.SEND_MESSAGE, send)
    sign_request(good, "UserKey1", "UserSecret1")
    assert _remark(validator, good, "1.1.1.1:1") is None
    denied = _request(RequestCode.SEND_MESSAGE, {"topic": "TopicB", "group": "P"})
    sign_request(denied, "UserKey1", "UserSecret1")
    assert _remark(validator, denied, "1.1.1.1:1") == (
        f"{base}No default permission for topic:TopicB"
        f"{where}checkPerm(PlainPermissionManager.java:606)"
    )
    # a body changed after signing breaks the signature
    tampered = _request(RequestCode.SEND_MESSAGE, send, b"body")
    sign_request(tampered, "UserKey1", "UserSecret1")
    tampered.body = b"other"
    assert "Check signature failed" in (_remark(validator, tampered, "1.1.1.1:1") or "")
    # sends to the trace topic pass once signed
    trace = _request(RequestCode.SEND_MESSAGE, {"topic": "RMQ_SYS_TRACE_TOPIC", "group": "P"})
    sign_request(trace, "UserKey1", "UserSecret1")
    assert _remark(validator, trace, "1.1.1.1:1") is None


ADMIN_ACL = f"""{PLAIN_ACL}  - accessKey: AdminKey1
    secretKey: AdminSecret1
    whiteRemoteAddress: 192.168.7.8
    admin: true
    topicPerms:
      - TopicA=SUB
"""


@pytest.mark.parametrize(
    ("code", "fields", "body"),
    [
        (
            RequestCode.UPDATE_AND_CREATE_ACL_CONFIG,
            {"accessKey": "NewKey1", "secretKey": "S1234567"},
            None,
        ),
        (RequestCode.DELETE_ACL_CONFIG, {"accessKey": "UserKey1"}, None),
        (RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, {"globalWhiteAddrs": "1.1.1.1"}, None),
        (RequestCode.UPDATE_BROKER_CONFIG, {}, b"aclEnable=false\n"),
        (RequestCode.UPDATE_BROKER_CONFIG, {}, b"flushDiskType=ASYNC_FLUSH\naclFile=/tmp/x.yml\n"),
    ],
)
def test_only_a_signed_admin_account_changes_the_acl(
    tmp_path: Path, code: int, fields: dict[str, str], body: bytes | None
) -> None:
    """No white address lets an ACL change through, and only an admin account's signature
    does (Apache lets any account, and any client of a global white address, through)."""
    validator = AclValidator(_files(tmp_path, ADMIN_ACL))
    base = "org.apache.rocketmq.acl.common.AclException: "
    where = ", org.apache.rocketmq.acl.plain.PlainPermissionManager."
    no_key = f"{base}No accessKey is configured{where}validate(PlainPermissionManager.java:664)"
    # unsigned, from a global white address and from an account's white address
    for addr in ("10.0.0.9:1", "192.168.7.7:1", "192.168.7.8:1"):
        assert _remark(validator, _request(code, fields, body), addr) == no_key
    # a non-admin account: wrongly signed from its white address, then rightly signed
    wrong = _request(code, fields, body)
    sign_request(wrong, "UserKey1", "NotTheSecret")
    assert _remark(validator, wrong, "192.168.7.7:1") == (
        f"{base}Check signature failed for accessKey=UserKey1"
        f"{where}validate(PlainPermissionManager.java:684)"
    )
    user = _request(code, fields, body)
    sign_request(user, "UserKey1", "UserSecret1")
    for addr in ("10.0.0.9:1", "1.1.1.1:1"):
        assert _remark(validator, user, addr) == (
            f"{base}Need admin permission for request code={code}, but accessKey=UserKey1 is "
            f"not{where}checkPerm(PlainPermissionManager.java:581)"
        )
    # an admin account: refused when wrongly signed even from its own white address
    forged = _request(code, fields, body)
    sign_request(forged, "AdminKey1", "NotTheSecret")
    assert "Check signature failed" in (_remark(validator, forged, "192.168.7.8:1") or "")
    admin = _request(code, fields, body)
    sign_request(admin, "AdminKey1", "AdminSecret1")
    for addr in ("10.0.0.9:1", "1.1.1.1:1"):
        assert _remark(validator, admin, addr) is None


def test_other_requests_from_white_addresses_still_pass(tmp_path: Path) -> None:
    validator = AclValidator(_files(tmp_path, ADMIN_ACL))
    passing = [
        _request(RequestCode.UPDATE_BROKER_CONFIG, {}, b"flushDiskType=ASYNC_FLUSH\n"),
        _request(RequestCode.UPDATE_BROKER_CONFIG, {}, b"\xff not utf-8"),
        _request(RequestCode.UPDATE_BROKER_CONFIG, {}, None),
        _request(RequestCode.GET_BROKER_CLUSTER_ACL_INFO, {}),
        _request(RequestCode.UPDATE_AND_CREATE_TOPIC, {"topic": "T"}),
    ]
    for request in passing:
        assert _remark(validator, request, "10.0.0.9:1") is None, request.code


def test_folder_files_first_definition_wins_and_reload(tmp_path: Path) -> None:
    (tmp_path / "conf" / "acl" / "team").mkdir(parents=True)
    team = tmp_path / "conf" / "acl" / "team" / "a.yaml"
    team.write_text(
        "accounts:\n  - accessKey: TeamKey1\n    secretKey: TeamSecret1\n", encoding="utf-8"
    )
    (tmp_path / "conf" / "acl" / "ignored.txt").write_text("accounts: [1]", encoding="utf-8")
    files = _files(tmp_path, PLAIN_ACL + "  - accessKey: TeamKey1\n    secretKey: Other12345\n")
    assert set(files.state.accounts) == {"UserKey1", "TeamKey1"}
    assert files.state.accounts["TeamKey1"].secret_key == "TeamSecret1"
    assert files.state.key_files["TeamKey1"] == str(team)
    assert files.poll() is False
    team.write_text(
        "accounts:\n  - accessKey: TeamKey2\n    secretKey: TeamSecret2\n", encoding="utf-8"
    )
    os.utime(team, ns=(1, 1))
    assert files.poll() is True
    assert set(files.state.accounts) == {"UserKey1", "TeamKey1", "TeamKey2"}
    assert files.state.accounts["TeamKey1"].secret_key == "Other12345"
    # a file that no longer loads keeps the accounts loaded before
    team.write_text("accounts:\n  - accessKey: x\n", encoding="utf-8")
    os.utime(team, ns=(2, 2))
    assert files.poll() is False
    assert "TeamKey2" in files.state.accounts


def test_acl_file_key_and_missing_default_file(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.yml"
    elsewhere.write_text(PLAIN_ACL, encoding="utf-8")
    files = AclFiles(None, str(elsewhere))
    files.load()
    assert set(files.state.accounts) == {"UserKey1"}
    (tmp_path / "conf").mkdir()
    created = AclFiles(str(tmp_path))
    created.load()
    assert (tmp_path / "conf" / "plain_acl.yml").read_text(encoding="utf-8") == ""
    created.update_account(PlainAccessConfig("NewKey12", "NewSecret1", topic_perms=["T=SUB"]))
    text = (tmp_path / "conf" / "plain_acl.yml").read_text(encoding="utf-8")
    # the file was empty: a Java HashMap, whose order puts dataVersion first
    assert text.startswith("dataVersion:\n- counter: 1\n  timestamp: ")
    assert text.endswith(
        "accounts:\n- accessKey: NewKey12\n  secretKey: NewSecret1\n  admin: false\n"
        "  topicPerms:\n  - T=SUB\n"
    )
    assert created.state.accounts["NewKey12"].perms == {"T": SUB}
    assert created.delete_account("NewKey12") is True
    assert created.delete_account("NewKey12") is False
