"""`rmq mqadmin` message commands against two rmq brokers with a running group
(tests/integration/mqadmin_cluster.py): lookups by offset id, key, unique key and queue offset,
printMsg / printMsgByQueue / consumeMessage, the three sending commands and queryCq, each
output checked field by field.

The shared topic holds message n (body `mqadmin-<n>`, key `MqaKey-<n>`, tag TagA for even n)
alone in queue n // 2 of broker-a (even n) or broker-b (odd n); the commands that send write
to the brokers' own topics (`broker-a`, `broker-b`), never to the shared topic.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from rmq.common.javahash import java_hash
from rmq.common.msgid import decode_offset_msg_id
from tests.cli_forkserver import run as cli_run
from tests.integration.mqadmin_cluster import (
    BROKERS,
    GROUP,
    MESSAGES,
    QUEUES,
    TOPIC,
    MqadminCluster,
)
from tests.procs import rmq_command

BODY_DIR = Path("/tmp/rocketmq/msgbodys")


def _ok(cluster: MqadminCluster, command: str, *args: str) -> str:
    done = cluster.run(command, *args)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return done.stdout


def _fields(text: str) -> dict[str, str]:
    """The detail block's `Label:   value` lines."""
    fields = {}
    for line in text.splitlines():
        match = re.match(r"^([A-Z][A-Za-z ]+):\s+(.*)$", line)
        if match and len(line) > 20 and line[20] == " ":
            fields[match.group(1)] = match.group(2)
    return fields


def _broker_of(n: int) -> str:
    return BROKERS[n % 2]


def test_query_msg_by_id(mqadmin_cluster: MqadminCluster) -> None:
    sent = mqadmin_cluster.sent[0]
    out = _ok(mqadmin_cluster, "queryMsgById", "-i", sent.offset_msg_id)
    fields = _fields(out)
    assert fields["OffsetID"] == sent.offset_msg_id
    assert fields["Topic"] == TOPIC
    assert fields["Tags"] == "[TagA]"
    assert fields["Keys"] == "[MqaKey-0]"
    assert fields["Queue ID"] == "0"
    assert fields["Queue Offset"] == "0"
    assert fields["CommitLog Offset"] == str(
        decode_offset_msg_id(sent.offset_msg_id).physical_offset
    )
    assert fields["Store Host"] == mqadmin_cluster.broker_addrs["broker-a"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}", fields["Born Timestamp"])
    assert f"UNIQ_KEY={sent.msg_id}" in fields["Properties"]
    assert fields["Message Body Path"] == str(BODY_DIR / sent.msg_id)
    assert (BODY_DIR / sent.msg_id).read_bytes() == b"mqadmin-0"
    assert out.endswith(
        f"\n\nMessageTrack [consumerGroup={GROUP}, trackType=CONSUMED, exceptionDesc=null]"
    )


def test_query_msg_by_id_of_a_unique_key_finds_no_message(
    mqadmin_cluster: MqadminCluster,
) -> None:
    """mqadmin's answer to a unique key (its decoded "port" is out of range): no message
    (NO_MESSAGE, 208), as Apache's mqadmin says it; nothing is connected to."""
    done = mqadmin_cluster.run("queryMsgById", "-i", mqadmin_cluster.sent[0].msg_id)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        "org.apache.rocketmq.tools.command.SubCommandException: QueryMsgByIdSubCommand command"
        " failed: NO_MESSAGE(208): query message by id finished, but no message.\n"
    )


def test_query_msg_by_key(mqadmin_cluster: MqadminCluster) -> None:
    out = _ok(mqadmin_cluster, "queryMsgByKey", "-t", TOPIC, "-k", "MqaKey-3")
    header, *rows = out.splitlines()
    assert header.split() == ["#Message", "ID", "#QID", "#Offset"]
    assert [row.split() for row in rows] == [[mqadmin_cluster.sent[3].msg_id, "1", "0"]]


def test_query_msg_by_key_without_match_fails(mqadmin_cluster: MqadminCluster) -> None:
    done = mqadmin_cluster.run("queryMsgByKey", "-t", TOPIC, "-k", "NoSuchKey")
    assert done.returncode == 1
    assert "QueryMsgByKeySubCommand command failed" in done.stderr
    assert "no message" in done.stderr


def test_query_msg_by_unique_key(mqadmin_cluster: MqadminCluster) -> None:
    sent = mqadmin_cluster.sent[2]
    out = _ok(mqadmin_cluster, "queryMsgByUniqueKey", "-t", TOPIC, "-i", sent.msg_id)
    fields = _fields(out)
    assert "OffsetID" not in fields
    assert fields["Keys"] == "[MqaKey-2]"
    assert (fields["Queue ID"], fields["Queue Offset"]) == ("1", "0")
    assert fields["Store Host"] == mqadmin_cluster.broker_addrs["broker-a"]
    assert f"MessageTrack [consumerGroup={GROUP}, trackType=CONSUMED" in out


def test_query_msg_by_offset(mqadmin_cluster: MqadminCluster) -> None:
    out = _ok(
        mqadmin_cluster, "queryMsgByOffset", "-t", TOPIC, "-b", "broker-b", "-i", "1", "-o", "0"
    )
    fields = _fields(out)
    assert fields["OffsetID"] == mqadmin_cluster.sent[3].offset_msg_id
    assert fields["Keys"] == "[MqaKey-3]"
    assert fields["Tags"] == "[TagB]"
    assert "MIN_OFFSET=0" in fields["Properties"]
    assert "MAX_OFFSET=1" in fields["Properties"]


def test_print_msg(mqadmin_cluster: MqadminCluster) -> None:
    out = _ok(mqadmin_cluster, "printMsg", "-t", TOPIC)
    queues = re.findall(
        r"(?m)^minOffset=0, maxOffset=1, MessageQueue \[topic=MqaTopic, brokerName=(\S+), "
        r"queueId=(\d)\]$",
        out,
    )
    assert sorted(queues) == sorted((b, str(q)) for b in BROKERS for q in range(QUEUES))
    assert out.count("--------------------------------------------------------\n") == 8
    for n, sent in enumerate(mqadmin_cluster.sent):
        line = next(line for line in out.splitlines() if line.startswith(f"MSGID: {sent.msg_id} "))
        assert f"MessageExt [brokerName={_broker_of(n)}, queueId={n // 2}," in line
        assert f"msgId={sent.offset_msg_id}," in line
        assert f"KEYS=MqaKey-{n}" in line
        body = list(f"mqadmin-{n}".encode())
        assert f"body=[{', '.join(map(str, body))}], transactionId='null'}}]" in line
        assert line.endswith(f" BODY: mqadmin-{n}")
    assert len(re.findall(r"(?m)^MSGID: ", out)) == MESSAGES


def test_print_msg_without_body(mqadmin_cluster: MqadminCluster) -> None:
    out = _ok(mqadmin_cluster, "printMsg", "-t", TOPIC, "-d", "false", "-s", "TagA")
    lines = [line for line in out.splitlines() if line.startswith("MSGID: ")]
    assert len(lines) == MESSAGES // 2
    assert all(line.endswith(" BODY: NOT PRINT BODY") and "TAGS=TagA" in line for line in lines)


def test_print_msg_by_queue(mqadmin_cluster: MqadminCluster) -> None:
    args = ("-t", TOPIC, "-a", "broker-a", "-i", "0", "-p", "true", "-d", "true", "-f", "true")
    lines = _ok(mqadmin_cluster, "printMsgByQueue", *args).splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"MSGID: {mqadmin_cluster.sent[0].msg_id} MessageExt [")
    assert lines[0].endswith(" BODY: mqadmin-0")
    assert lines[1].split() == ["Tag:", "TagA", "Count:", "1"]


def test_send_msg_status(mqadmin_cluster: MqadminCluster) -> None:
    out = _ok(mqadmin_cluster, "sendMsgStatus", "-b", "broker-a", "-s", "64", "-c", "3")
    rows = re.findall(
        r"(?m)^rt=\d+ms, SendResult=SendResult \[sendStatus=SEND_OK, msgId=[0-9A-F]{32}, "
        r"offsetMsgId=[0-9A-F]{32}, messageQueue=MessageQueue \[topic=broker-a, "
        r"brokerName=broker-a, queueId=0\], queueOffset=(\d+)\]$",
        out,
    )
    assert len(rows) == 3 == len(out.splitlines())
    first = int(rows[0])
    assert [int(offset) for offset in rows] == [first, first + 1, first + 2]


def test_check_msg_send_rt(mqadmin_cluster: MqadminCluster) -> None:
    out = _ok(mqadmin_cluster, "checkMsgSendRT", "-t", "broker-b", "-a", "3", "-s", "64")
    header, *rows, average = out.splitlines()
    assert header.split() == ["#Broker", "Name", "#QID", "#Send", "Result", "#RT"]
    assert len(rows) == 3
    for row in rows:
        broker, queue_id, ok, rt = row.split()
        assert (broker, queue_id, ok) == ("broker-b", "0", "true")
        assert int(rt) >= 0
    assert re.fullmatch(r"Avg RT: \d+\.\d\d", average)


def test_send_message_to_a_queue(mqadmin_cluster: MqadminCluster) -> None:
    args = ("-t", "broker-b", "-p", "hello", "-k", "MqaSendKey", "-c", "TagS")
    out = _ok(mqadmin_cluster, "sendMessage", *args, "-b", "broker-b", "-i", "0")
    header, row = out.splitlines()
    assert header.split() == ["#Broker", "Name", "#QID", "#Send", "Result", "#MsgId"]
    broker, queue_id, status, msg_id = row.split()
    assert (broker, queue_id, status) == ("broker-b", "0", "SEND_OK")
    shown = _fields(_ok(mqadmin_cluster, "queryMsgByUniqueKey", "-t", "broker-b", "-i", msg_id))
    assert (shown["Keys"], shown["Tags"]) == ("[MqaSendKey]", "[TagS]")


def test_send_message_needs_the_broker_for_a_queue(mqadmin_cluster: MqadminCluster) -> None:
    out = _ok(mqadmin_cluster, "sendMessage", "-t", "broker-b", "-p", "x", "-i", "0")
    assert out == "Broker name must be set if the queue is chosen!"


def test_query_cq(mqadmin_cluster: MqadminCluster) -> None:
    broker = mqadmin_cluster.broker_addrs["broker-a"]
    args = ("-t", TOPIC, "-q", "0", "-i", "0", "-c", "2", "-b", broker)
    out = _ok(mqadmin_cluster, "queryCq", *args)
    offset = decode_offset_msg_id(mqadmin_cluster.sent[0].offset_msg_id).physical_offset
    rule = "======================================"
    assert out.splitlines()[:4] == ["Queue data: ", "max: 1, min: 0", rule, "idx: 0"]
    entry = re.fullmatch(
        r"ConsumeQueueData\{physicOffset=(\d+), physicSize=(\d+), tagsCode=(-?\d+), "
        r"extendDataJson='null', bitMap='null', eval=false, msg='null'\}",
        out.splitlines()[4],
    )
    assert entry is not None, out
    assert int(entry.group(1)) == offset
    assert int(entry.group(2)) > 0
    assert int(entry.group(3)) == java_hash("TagA")
    assert out.endswith(f"{rule}\n") and "idx: 1" not in out


def test_consume_message_by_queue(mqadmin_cluster: MqadminCluster) -> None:
    args = ("-t", TOPIC, "-b", "broker-b", "-i", "2", "-o", "0", "-c", "2")
    lines = _ok(mqadmin_cluster, "consumeMessage", *args).splitlines()
    assert lines[0] == "Consume ok"
    assert lines[1].startswith(f"MSGID: {mqadmin_cluster.sent[5].msg_id} MessageExt [")
    assert lines[1].endswith(" BODY: mqadmin-5")
    assert lines[2:] == [
        "MessageQueue [topic=MqaTopic, brokerName=broker-b, queueId=2] print msg finished. "
        "status=NO_NEW_MSG, offset=1"
    ]


def test_consume_message_of_the_topic_counts_as_mqadmin(mqadmin_cluster: MqadminCluster) -> None:
    """mqadmin counts a queue's inclusive range, one more than it holds: with one message per
    queue, -c 3 reads two queues, then a third with "-1" left, and stops."""
    out = _ok(mqadmin_cluster, "consumeMessage", "-t", TOPIC, "-c", "3")
    assert len(re.findall(r"(?m)^Consume ok$", out)) == 2
    assert len(set(re.findall(r"(?m) BODY: (mqadmin-\d)$", out))) == 2
    assert len(re.findall(r"(?m)^The older -1 message of the \d queue will be provided$", out)) == 1
    assert len(re.findall(r"print msg finished\. status=NO_NEW_MSG, offset=1$", out, re.M)) == 2


def test_consume_message_refuses_a_queue_without_broker(mqadmin_cluster: MqadminCluster) -> None:
    out = _ok(mqadmin_cluster, "consumeMessage", "-t", TOPIC, "-i", "1")
    assert out == "Please set the brokerName before queueId!"


def _member(cluster: MqadminCluster) -> str:
    """The client id of one running member of the group (consumerConnection's first row)."""
    rows = _ok(cluster, "consumerConnection", "-g", GROUP).splitlines()
    assert rows[0].startswith("#ClientId"), rows
    return rows[1].split()[0]


DIRECT = re.compile(
    r"ConsumeMessageDirectlyResult \[order=false, autoCommit=true, consumeResult=CR_SUCCESS, "
    r"remark=null, spentTimeMills=\d+\]"
)


def test_query_msg_by_id_consumes_directly(mqadmin_cluster: MqadminCluster) -> None:
    sent = mqadmin_cluster.sent[4]
    member = _member(mqadmin_cluster)
    out = _ok(mqadmin_cluster, "queryMsgById", "-i", sent.offset_msg_id, "-g", GROUP, "-d", member)
    assert DIRECT.fullmatch(out), out


def test_query_msg_by_unique_key_consumes_directly(mqadmin_cluster: MqadminCluster) -> None:
    sent = mqadmin_cluster.sent[5]
    args = ("-t", TOPIC, "-i", sent.msg_id, "-g", GROUP, "-d", _member(mqadmin_cluster))
    out = _ok(mqadmin_cluster, "queryMsgByUniqueKey", *args)
    assert DIRECT.fullmatch(out), out


def test_query_msg_by_id_resends(mqadmin_cluster: MqadminCluster) -> None:
    record = '{"body":"again","tags":"TagR","keys":["MqaResend"]}\n'
    done = cli_run(
        rmq_command(["produce", "broker-a", "-n", mqadmin_cluster.namesrv_addr]),
        input=record,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    offset_id = json.loads(done.stdout.splitlines()[0])["offsetMsgId"]
    out = _ok(mqadmin_cluster, "queryMsgById", "-i", offset_id, "-s", "true")
    assert re.fullmatch(
        rf"prepare resend msg\. originalMsgId={offset_id}SendResult \[sendStatus=SEND_OK, "
        r"msgId=[0-9A-F]{32}, offsetMsgId=[0-9A-F]{32}, messageQueue=MessageQueue "
        r"\[topic=broker-a, brokerName=broker-a, queueId=0\], queueOffset=\d+\]",
        out,
    ), out
    rows = _ok(mqadmin_cluster, "queryMsgByKey", "-t", "broker-a", "-k", "MqaResend")
    assert len(rows.splitlines()) == 1 + 2


def test_a_closed_output_ends_the_command_quietly(mqadmin_cluster: MqadminCluster) -> None:
    """`rmq mqadmin printMsg ... | head`: the reader goes away while the command writes more
    than a pipe holds; no failure is printed, the exit code is 1 (as `rmq consume | head`)."""
    big = json.dumps({"body": "x" * 4000, "keys": ["ClosedPipe"]}) + "\n"
    cli_run(
        rmq_command(["produce", "broker-b", "-n", mqadmin_cluster.namesrv_addr]),
        input=big * 4,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    argv = ["mqadmin", "printMsg", "-n", mqadmin_cluster.namesrv_addr, "-t", "broker-b"]
    reader = subprocess.Popen(
        rmq_command(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=mqadmin_cluster.home
    )
    assert reader.stdout is not None and reader.stderr is not None
    reader.stdout.close()
    errors = reader.stderr.read()
    reader.stderr.close()
    assert (reader.wait(timeout=60), errors) == (1, b"")
