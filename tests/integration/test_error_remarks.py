"""No remark of a server names its Python source or carries a traceback, whatever a client sends.

Raw frames of every request code rmq knows, each with a body that does not decode and with ext
fields of the wrong kinds, to a name server, a broker, and a broker with `aclEnable=true` that
checks unsigned requests (its access check decodes a HEART_BEAT body before any processor).
Every answer's remark must be free of `.py` file names, `Traceback` / `File "..."` lines and
the installation's paths; the server's log has the details instead.  The remarks a request was
at fault for still say what was wrong (a HEART_BEAT body that is not JSON: `BodyError: ...`).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import rmq
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, next_opaque
from rmq.remoting.errors import RemotingTimeoutError
from tests.procs import RemotingSession, RmqProcess, RmqProcesses

PLAIN_ACL = """\
globalWhiteRemoteAddresses:
  - 10.250.1.*
accounts:
  - accessKey: RemarkAdmin
    secretKey: RemarkAdminSecret
    admin: true
"""

# Field names the request headers use, each given a value no header field accepts as a number,
# a boolean or an enum name.
WRONG_FIELDS = {
    name: "x.y"
    for name in (
        "topic", "group", "consumerGroup", "producerGroup", "queueId", "queueOffset", "offset",
        "maxMsgNums", "sysFlag", "commitOffset", "suspendTimeoutMillis", "subVersion", "msgId",
        "key", "beginTimestamp", "endTimestamp", "timestamp", "brokerName", "brokerAddr",
        "clusterName", "brokerId", "namespace", "clientId", "clientID", "accessKey", "secretKey",
        "globalWhiteAddrs", "perm", "readQueueNums", "writeQueueNums", "topicFilterType",
        "delayLevel", "originMsgId", "maxReconsumeTimes", "tranStateTableOffset",
        "commitLogOffset", "fromTransactionCheck", "commitOrRollback", "expressionType",
    )
}  # fmt: skip
BODIES = (b"\xff{ not json", b'{"clientID": 5, "consumerDataSet": "x"}', None)

_LEAK = re.compile(r"\.py\b|\.pyc\b|Traceback|File \"|site-packages|dist-packages")
_PATHS = (str(Path(rmq.__file__).resolve().parent), sys.prefix, sys.base_prefix)


def leaks(remark: str) -> bool:
    return bool(_LEAK.search(remark)) or any(path in remark for path in _PATHS)


def _requests() -> Iterator[RemotingCommand]:
    for code in sorted(set(RequestCode)):
        for body in BODIES:
            yield RemotingCommand(code, opaque=next_opaque(), ext_fields={}, body=body)
            fields = dict(WRONG_FIELDS)
            yield RemotingCommand(code, opaque=next_opaque(), ext_fields=fields, body=body)


def _remarks(addr: str) -> dict[str, str]:
    """code name and variant -> the remark of every answer that has one."""
    remarks: dict[str, str] = {}
    with RemotingSession(timeout=5) as session:
        for number, request in enumerate(_requests()):
            name = f"{request.code_name} #{number}"
            try:
                response = session.send(addr, request)
            except RemotingTimeoutError:
                remarks[name] = "<no answer>"
                continue
            if response.remark is not None:
                remarks[name] = response.remark
    return remarks


@pytest.fixture(scope="module")
def servers(module_processes: RmqProcesses) -> dict[str, RmqProcess]:
    home = module_processes.root / "acl-home"
    (home / "conf").mkdir(parents=True)
    (home / "conf" / "plain_acl.yml").write_text(PLAIN_ACL, encoding="utf-8")
    namesrv = module_processes.start_namesrv("remarks-namesrv")
    broker = module_processes.start_broker("remarks-broker", namesrv=namesrv)
    acl_broker = module_processes.start_broker(
        "remarks-acl-broker",
        namesrv=None,
        props={"aclEnable": True},
        env={"ROCKETMQ_HOME": str(home)},
    )
    return {"namesrv": namesrv, "broker": broker, "acl broker": acl_broker}


@pytest.mark.parametrize("server", ["namesrv", "broker", "acl broker"])
def test_no_remark_names_the_source(servers: dict[str, RmqProcess], server: str) -> None:
    process = servers[server]
    remarks = _remarks(process.addr)
    leaked = {name: remark for name, remark in remarks.items() if leaks(remark)}
    assert leaked == {}
    assert len(remarks) > len(set(RequestCode))  # most requests were answered with a remark
    assert process.running, process.log_tail()


def test_a_malformed_heartbeat_says_what_is_wrong(servers: dict[str, RmqProcess]) -> None:
    expected = {
        "broker": "BodyError: HeartbeatData: expected a JSON value at char 0",
        "acl broker": (
            "org.apache.rocketmq.acl.common.AclException: HeartbeatData: expected a JSON value "
            "at char 0, org.apache.rocketmq.acl.plain.PlainAccessValidator.parse("
            "PlainAccessValidator.java:134)"
        ),
    }
    with RemotingSession(timeout=5) as session:
        for server, remark in expected.items():
            request = RemotingCommand(
                RequestCode.HEART_BEAT, opaque=next_opaque(), ext_fields={}, body=b"xx"
            )
            response = session.send(servers[server].addr, request)
            assert (response.code, response.remark) == (ResponseCode.SYSTEM_ERROR, remark)
