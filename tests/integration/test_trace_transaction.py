"""A traced transactional producer records each END_TRANSACTION it sends, as Apache's
EndTransactionTraceHookImpl does: `rmq produce --transaction --trace` against a real
`rmq standalone` (one-second transaction checks), then the EndTransaction records read back
from RMQ_SYS_TRACE_TOPIC: the state the local transaction decided (fromTransactionCheck
false), and for a transaction left unknown a second record with the check-back's answer
(fromTransactionCheck true); `rmq message trace` lists them beside the Pub row.
"""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import pytest

from rmq.common.naming import RMQ_SYS_TRACE_TOPIC
from rmq.common.trace import TraceContext, TraceMessageType, TraceType, decode_trace_data
from tests.integration.test_message_trace import DEADLINE, TRACE_PROPS, ok, rmq, trace_rows
from tests.procs import RmqProcesses, StandaloneProcess

TX_PROPS = {**TRACE_PROPS, "transactionTimeOut": 1000, "transactionCheckInterval": 1000}


@pytest.fixture
def standalone(rmq_processes: RmqProcesses) -> StandaloneProcess:
    return rmq_processes.start_standalone(props=TX_PROPS)


def end_transactions(server: StandaloneProcess) -> list[TraceContext]:
    """Every EndTransaction record in the trace topic."""
    out = ok(server, "consume", RMQ_SYS_TRACE_TOPIC, "--from", "first", "-e")
    contexts = []
    for line in out.splitlines():
        record: dict[str, Any] = json.loads(line)
        body = record["body"]
        if record.get("bodyEncoding") == "base64":
            body = base64.b64decode(body).decode()
        contexts.extend(decode_trace_data(body))
    return [ctx for ctx in contexts if ctx.trace_type is TraceType.EndTransaction]


def test_end_transaction_records_of_the_local_decision_and_the_check_back(
    standalone: StandaloneProcess,
) -> None:
    ok(standalone, "topic", "create", "TxTraced", "-r", "1", "-w", "1")
    bodies = ["commit-1", "rollback-1", "unknown-1"]
    decide = 'read line; case "$line" in *commit*) exit 0;; *rollback*) exit 1;; esac; exit 3'
    result = rmq(
        standalone,
        "produce", "TxTraced", "-g", "TxTracePG", "--trace", "--transaction",
        "--exec", decide, "--check", "true", "--check-timeout", str(DEADLINE),
        stdin="".join(f"{body}\n" for body in bodies).encode(),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    sent = [json.loads(line) for line in result.stdout.splitlines()]
    assert [row["transaction"] for row in sent] == ["COMMIT_MESSAGE", "ROLLBACK_MESSAGE", "UNKNOW"]
    ids = [row["msgId"] for row in sent]

    for msg_id in ids:
        rows = trace_rows(standalone, msg_id, types=2)
        assert {row["type"] for row in rows} == {"Pub", "EndTransaction"}, rows
        assert {row["group"] for row in rows} == {"TxTracePG"}

    expected = {
        (ids[0], "COMMIT_MESSAGE", False),
        (ids[1], "ROLLBACK_MESSAGE", False),
        (ids[2], "UNKNOW", False),
        (ids[2], "COMMIT_MESSAGE", True),
    }
    deadline = time.monotonic() + DEADLINE
    while True:
        records = end_transactions(standalone)
        seen = {
            (
                ctx.beans[0].msg_id,
                ctx.beans[0].transaction_state,
                ctx.beans[0].from_transaction_check,
            )
            for ctx in records
        }
        if expected <= seen or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    # The broker may check the unknown message again before its first check's answer lands
    # (one-second checks on a loaded machine): each further check-back is recorded too.
    extra = seen - expected
    assert expected <= seen and all(
        (msg_id, from_check) == (ids[2], True) for msg_id, _state, from_check in extra
    ), (records, result.stderr)
    for ctx in records:
        bean = ctx.beans[0]
        assert (ctx.group, bean.topic) == ("TxTracePG", "TxTraced")
        assert bean.msg_type is TraceMessageType.Trans_msg_Commit
        assert bean.transaction_id == bean.msg_id
        assert ctx.region_id == "DefaultRegion"
        assert bean.store_host == standalone.addr
