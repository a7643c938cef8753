"""Message trace end to end against a real `rmq standalone` (traceTopicEnable=true):

* `rmq produce --trace` then `rmq consume --trace -g G` write Pub, SubBefore and SubAfter
  records to RMQ_SYS_TRACE_TOPIC, and `rmq message trace MSGID` shows them for each message
  id (json and table), as `rmq mqadmin queryMsgTraceById` does in mqadmin's layout;
* `--trace-topic` writes to a custom topic, read back with `--trace-topic`; `rmq mqadmin
  sendMessage -m true` traces its send to RMQ_SYS_TRACE_TOPIC;
* the client API: a PushConsumer hooked to a TraceDispatcher traces its listener calls, and a
  dispatcher whose queue is full drops records (counted) instead of blocking a send;
* an id nobody traced is one line on stderr, exit 1.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from typing import Any

import pytest

from tests.cli_forkserver import run as cli_run
from tests.procs import RmqProcesses, StandaloneProcess

TRACE_PROPS = {"traceTopicEnable": True, "messageDelayLevel": " ".join(["1s"] * 18)}
DEADLINE = 60.0


@pytest.fixture
def standalone(rmq_processes: RmqProcesses) -> StandaloneProcess:
    return rmq_processes.start_standalone(props=TRACE_PROPS)


def rmq(
    server: StandaloneProcess, *args: str, stdin: bytes = b""
) -> subprocess.CompletedProcess[str]:
    return cli_run(
        [sys.executable, "-m", "rmq", *args, "-n", server.namesrv_addr],
        input=stdin.decode(),
        capture_output=True,
        text=True,
        timeout=DEADLINE,
    )


def ok(server: StandaloneProcess, *args: str, stdin: bytes = b"") -> str:
    result = rmq(server, *args, stdin=stdin)
    assert result.returncode == 0, result.stderr
    return result.stdout


def trace_rows(server: StandaloneProcess, msg_id: str, *options: str, types: int) -> list[Any]:
    """`rmq message trace MSGID -o json` once it shows `types` distinct record types."""
    deadline = time.monotonic() + DEADLINE
    rows: list[Any] = []
    while time.monotonic() < deadline:
        result = rmq(server, "message", "trace", msg_id, *options, "-o", "json")
        if result.returncode == 0:
            rows = json.loads(result.stdout)
            if len({row["type"] for row in rows}) >= types:
                return rows
        time.sleep(0.3)
    raise AssertionError(f"no complete trace of {msg_id} within {DEADLINE}s: {rows}")


def produce(server: StandaloneProcess, topic: str, *options: str) -> list[dict[str, Any]]:
    records = [{"body": f"traced-{n}", "tags": "TagT", "keys": [f"TraceKey-{n}"]} for n in range(3)]
    stdin = "".join(json.dumps(record) + "\n" for record in records).encode()
    out = ok(server, "produce", topic, "-g", "TracePG", *options, stdin=stdin)
    return [json.loads(line) for line in out.splitlines()]


def test_produce_consume_then_message_trace(standalone: StandaloneProcess) -> None:
    ok(standalone, "topic", "create", "TracedTopic", "-r", "2", "-w", "2")
    sent = produce(standalone, "TracedTopic", "--trace")
    consumed = ok(standalone, "consume", "TracedTopic", "-g", "TraceCG", "--trace", "-c", "3")
    assert len(consumed.splitlines()) == 3
    for n, result in enumerate(sent):
        rows = trace_rows(standalone, result["msgId"], types=3)
        by_type = {row["type"]: row for row in rows}
        assert sorted(by_type) == ["Pub", "SubAfter", "SubBefore"], rows
        pub = by_type["Pub"]
        assert pub["group"] == "TracePG"
        assert pub["topic"] == "TracedTopic"
        assert pub["tags"] == "TagT"
        assert pub["keys"] == f"TraceKey-{n}"
        assert pub["offsetMsgId"] == result["offsetMsgId"]
        assert pub["storeHost"] == standalone.addr
        assert pub["status"] == "success"
        assert pub["clientHost"] == "127.0.0.1"
        assert by_type["SubBefore"]["group"] == by_type["SubAfter"]["group"] == "TraceCG"
        assert by_type["SubAfter"]["status"] == "success"
        assert by_type["SubAfter"]["keys"] == f"TraceKey-{n}"
    msg_id = sent[0]["msgId"]
    table = ok(standalone, "message", "trace", msg_id).splitlines()
    assert table[0].split()[:2] == ["TYPE", "GROUP"]
    assert sorted(line.split()[0] for line in table[1:]) == ["Pub", "SubAfter", "SubBefore"]
    mqadmin = ok(standalone, "mqadmin", "queryMsgTraceById", "-i", msg_id).splitlines()
    assert mqadmin[0].split() == [
        "#Type", "#ProducerGroup", "#ClientHost", "#SendTime", "#CostTimes", "#Status"
    ]  # fmt: skip
    assert mqadmin[1].startswith("Pub        TracePG              127.0.0.1            ")
    assert mqadmin[1].split()[-1] == "success"
    assert mqadmin[2] == ""
    assert mqadmin[3].split()[1] == "#ConsumerGroup"
    assert mqadmin[4].startswith("Sub        TraceCG              127.0.0.1            ")
    assert mqadmin[5] == ""


def test_custom_trace_topic(standalone: StandaloneProcess) -> None:
    ok(standalone, "topic", "create", "MyTraces", "-r", "1", "-w", "1")
    ok(standalone, "topic", "create", "TracedCustom", "-r", "1", "-w", "1")
    (sent, *_) = produce(standalone, "TracedCustom", "--trace-topic", "MyTraces")
    rows = trace_rows(standalone, sent["msgId"], "--trace-topic", "MyTraces", types=1)
    assert [row["type"] for row in rows] == ["Pub"]
    sent_by_mqadmin = ok(
        standalone, "mqadmin", "sendMessage", "-t", "TracedCustom", "-p", "hi", "-m", "true"
    )
    mqadmin_id = sent_by_mqadmin.splitlines()[1].split()[-1]
    (pub,) = trace_rows(standalone, mqadmin_id, types=1)
    assert (pub["type"], pub["topic"], pub["status"]) == ("Pub", "TracedCustom", "success")
    missing = rmq(standalone, "message", "trace", sent["msgId"])
    assert missing.returncode == 1
    assert missing.stderr.splitlines() == [
        f"rmq: error: trace of message '{sent['msgId']}' in topic 'RMQ_SYS_TRACE_TOPIC' "
        "not found; check the id, key or topic"
    ]


def test_push_consumer_trace_and_a_full_queue(standalone: StandaloneProcess) -> None:
    from rmq.client.consumer import ConsumeFromWhere, ConsumeStatus, PushConsumer
    from rmq.client.messageext import MessageExt
    from rmq.client.producer import Message, Producer
    from rmq.client.trace import TraceDispatcher

    ok(standalone, "topic", "create", "TracedPush", "-r", "1", "-w", "1")
    addr = standalone.namesrv_addr

    async def scenario() -> tuple[str, int, int]:
        got: asyncio.Queue[str] = asyncio.Queue()

        async def listener(messages: list[MessageExt]) -> ConsumeStatus:
            (msg,) = messages
            got.put_nowait(msg.msg_id)
            if msg.body == b"push" and msg.reconsume_times == 0:
                return ConsumeStatus.RECONSUME_LATER
            return ConsumeStatus.CONSUME_SUCCESS

        async with Producer("TracePushPG", addr) as producer:
            result = await producer.send(Message("TracedPush", b"push"))
            # A dispatcher that is never started and holds one record: a second is dropped
            # at once, and the sends go on.
            full = TraceDispatcher(addr, "TracePushPG", "PRODUCE", queue_size=1)
            full.trace_producer(producer)
            await producer.send(Message("TracedPush", b"one"))
            await producer.send(Message("TracedPush", b"two"))
            dropped = full.dropped
        async with TraceDispatcher(addr, "TracePushCG", "CONSUME") as traces:
            consumer = PushConsumer(
                "TracePushCG", addr, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
            )
            traces.trace_consumer(consumer)
            consumer.subscribe("TracedPush", "*")
            consumer.register_listener(listener)
            async with consumer:
                seen = [await asyncio.wait_for(got.get(), DEADLINE) for _ in range(4)]
        assert seen.count(result.msg_id) == 2, seen  # failed once, then redelivered
        return result.msg_id, dropped, traces.sent

    msg_id, dropped, sent = asyncio.run(scenario())
    assert dropped == 1
    assert sent >= 1
    rows = trace_rows(standalone, msg_id, types=2)
    after = [row for row in rows if row["type"] == "SubAfter"]
    assert sorted(row["status"] for row in after) == ["failed", "success"]
    assert {row["group"] for row in rows if row["type"] != "Pub"} == {"TracePushCG"}
