"""The remark of a request the broker cannot read, differential: raw frames with bodies that are
not JSON to Apache's broker and to rmq's.

Apache's broker answers the parser's exception as `RemotingHelper.exceptionSimpleDesc` words
it: the Java exception and its first stack frame, a class, a `.java` file and a line (measured:
`com.alibaba.fastjson.JSONException: illegal state. x, com.alibaba.fastjson.parser.
JSONLexerBase.scanHex(JSONLexerBase.java:5091)`).  rmq's says what is wrong with the request
and names no file of its own
(docs/spec-notes.md, deliberate differences; every request code is checked that way in
tests/integration/test_error_remarks.py).
"""

from __future__ import annotations

import re

import pytest

from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, next_opaque
from tests.conformance.clusters import Cluster
from tests.procs import RemotingSession

JAVA_FRAME = re.compile(r"\(\w+\.java:\d+\)")
SOURCE = re.compile(r"\.py\b|Traceback|File \"")

REQUESTS = [
    (RequestCode.HEART_BEAT, "BodyError: HeartbeatData: expected a JSON value at char 0"),
    (
        RequestCode.CHECK_CLIENT_CONFIG,
        "BodyError: CheckClientRequestBody: expected a JSON value at char 0",
    ),
]


def _remarks(cluster: Cluster) -> list[tuple[int, str | None]]:
    answers = []
    with RemotingSession(timeout=10) as session:
        for code, _ in REQUESTS:
            request = RemotingCommand(code, opaque=next_opaque(), ext_fields={}, body=b"xx")
            response = session.send(cluster.broker_addr, request)
            answers.append((response.code, response.remark))
    return answers


@pytest.mark.matrix(
    "Remoting",
    "a body that is not JSON: Apache's remark is the parser's Java exception and its first "
    "stack frame (.java file and line), rmq's says what is wrong and names no source file",
    "rmq",
    passed="different (deliberate)",
)
def test_a_malformed_body_is_answered_without_the_source(apache: Cluster, rmq: Cluster) -> None:
    theirs, ours = _remarks(apache), _remarks(rmq)
    for (code, expected), (their_code, their_remark), (our_code, our_remark) in zip(
        REQUESTS, theirs, ours, strict=True
    ):
        assert their_code == our_code == ResponseCode.SYSTEM_ERROR, code
        assert their_remark is not None and JAVA_FRAME.search(their_remark), their_remark
        assert our_remark == expected
        assert not SOURCE.search(our_remark)
