"""`rmq message` against rmq's own two-broker cluster (tests/integration/mqadmin_cluster.py):
each lookup's message record checked field by field in json and rendered as a table, the
resend and the direct consumption through a running member, the send probe, and the
failure paths (unknown id, key, topic or group: exit 1 and one line on stderr)."""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest

from rmq.common.msgid import offset_msg_id, pack_host
from tests.cli_forkserver import run as cli_run
from tests.integration.mqadmin_cluster import GROUP, TOPIC, MqadminCluster
from tests.integration.test_friendly_config import as_json, rmq
from tests.procs import rmq_command

RECORD_KEYS = [
    "topic", "brokerName", "queueId", "queueOffset", "commitLogOffset", "msgId", "offsetMsgId",
    "tags", "keys", "properties", "body", "bodyCrc", "flag", "sysFlag", "bornTimestamp",
    "storeTimestamp", "bornHost", "storeHost", "reconsumeTimes", "preparedTransactionOffset",
]  # fmt: skip


def _check_record(cluster: MqadminCluster, record: dict[str, Any], n: int) -> None:
    """`record` is message n of the fixture (queue n // 2 of broker-a or broker-b)."""
    sent = cluster.sent[n]
    assert list(record) == RECORD_KEYS
    broker = "broker-a" if n % 2 == 0 else "broker-b"
    assert record["topic"] == TOPIC
    assert record["brokerName"] == broker
    assert (record["queueId"], record["queueOffset"]) == (n // 2, 0)
    assert record["msgId"] == sent.msg_id
    assert record["offsetMsgId"] == sent.offset_msg_id
    assert record["tags"] == ("TagA" if n % 2 == 0 else "TagB")
    assert record["keys"] == [f"MqaKey-{n}"]
    assert record["body"] == f"mqadmin-{n}"
    assert record["properties"]["UNIQ_KEY"] == sent.msg_id
    assert record["storeHost"] == cluster.broker_addrs[broker]


def _fails(cluster: MqadminCluster, *args: str, code: int = 1) -> str:
    result = rmq(cluster, *args)
    assert result.returncode == code, (result.stdout, result.stderr)
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    return line


def test_get_prints_the_message_record(mqadmin_cluster: MqadminCluster) -> None:
    sent = mqadmin_cluster.sent[3]
    record = as_json(rmq(mqadmin_cluster, "message", "get", sent.offset_msg_id, "-o", "json"))
    _check_record(mqadmin_cluster, record, 3)
    yaml = rmq(mqadmin_cluster, "message", "get", sent.offset_msg_id, "-o", "yaml")
    assert f"offsetMsgId: {sent.offset_msg_id}" in yaml.stdout
    table = rmq(mqadmin_cluster, "message", "get", sent.offset_msg_id)
    assert table.returncode == 0, table.stderr
    assert ["BODY", "mqadmin-3"] in [line.split() for line in table.stdout.splitlines()]


def test_get_takes_the_unique_key_too(mqadmin_cluster: MqadminCluster) -> None:
    """The msgId a send prints: looked up in every topic, or in the topic -t names."""
    for n in (2, 5):
        sent = mqadmin_cluster.sent[n]
        record = as_json(rmq(mqadmin_cluster, "message", "get", sent.msg_id, "-o", "json"))
        _check_record(mqadmin_cluster, record, n)
        in_topic = rmq(mqadmin_cluster, "message", "get", sent.msg_id, "-t", TOPIC, "-o", "json")
        assert as_json(in_topic) == record
    elsewhere = _fails(
        mqadmin_cluster, "message", "get", mqadmin_cluster.sent[2].msg_id, "-t", "broker-a"
    )
    assert elsewhere == (
        f"rmq: error: message '{mqadmin_cluster.sent[2].msg_id}' in topic 'broker-a' not found; "
        "check the id, key or topic"
    )


def test_get_never_connects_to_an_address_read_from_an_id(
    mqadmin_cluster: MqadminCluster,
) -> None:
    """An offset id naming an address the name server does not list is taken for a unique
    key (found nowhere): nothing connects to the address."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        msg_id = offset_msg_id(pack_host("127.0.0.1", listener.getsockname()[1]), 0)
        line = _fails(mqadmin_cluster, "message", "get", msg_id)
        assert line == f"rmq: error: message '{msg_id}' not found; check the id, key or topic"
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):
            listener.accept()


def test_get_failures(mqadmin_cluster: MqadminCluster) -> None:
    line = _fails(mqadmin_cluster, "message", "get", "NOT-AN-ID")
    assert line == "rmq: error: message 'NOT-AN-ID' not found; check the id, key or topic"


def test_by_key_and_by_unique_key(mqadmin_cluster: MqadminCluster) -> None:
    (record,) = as_json(rmq(mqadmin_cluster, "message", "by-key", TOPIC, "MqaKey-6", "-o", "json"))
    _check_record(mqadmin_cluster, record, 6)
    (same,) = as_json(
        rmq(mqadmin_cluster, "message", "by-key", "-t", TOPIC, "MqaKey-6", "-o", "json")
    )
    assert same == record
    table = rmq(mqadmin_cluster, "message", "by-key", TOPIC, "MqaKey-6")
    header, row = (line.split() for line in table.stdout.splitlines())
    assert header[:4] == ["BROKER", "NAME", "QUEUE", "ID"]
    assert row[:4] == ["broker-a", "3", "0", mqadmin_cluster.sent[6].msg_id]
    sent = mqadmin_cluster.sent[1]
    unique = rmq(mqadmin_cluster, "message", "by-unique-key", TOPIC, sent.msg_id, "-o", "json")
    _check_record(mqadmin_cluster, as_json(unique), 1)
    missing = _fails(mqadmin_cluster, "message", "by-key", TOPIC, "NoSuchKey")
    assert missing == (
        f"rmq: error: message with key 'NoSuchKey' in topic '{TOPIC}' not found; "
        "check the id, key or topic"
    )
    no_topic = _fails(mqadmin_cluster, "message", "by-key", "NoSuchTopic", "MqaKey-6")
    assert no_topic.startswith("rmq: error: topic 'NoSuchTopic' not found")
    usage = _fails(mqadmin_cluster, "message", "by-key", TOPIC, code=2)
    assert "give TOPIC and KEY" in usage


def test_by_offset(mqadmin_cluster: MqadminCluster) -> None:
    args = ("--broker", "broker-b", "--queue", "2", "--offset", "0", "-o", "json")
    record = as_json(rmq(mqadmin_cluster, "message", "by-offset", TOPIC, *args))
    _check_record(mqadmin_cluster, record, 5)
    past = ("--broker", "broker-b", "--queue", "2", "--offset", "1")
    line = _fails(mqadmin_cluster, "message", "by-offset", "-t", TOPIC, *past)
    assert line == (
        f"rmq: error: no message at offset 1 of queue 2 of topic '{TOPIC}' on broker-b; "
        "see 'rmq topic status' for the queues' offsets"
    )


def test_resend(mqadmin_cluster: MqadminCluster) -> None:
    record = '{"body":"again","tags":"TagR","keys":["FriendlyResend"]}\n'
    done = cli_run(
        rmq_command(["produce", "broker-a", "-n", mqadmin_cluster.namesrv_addr]),
        input=record,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    offset_id = json.loads(done.stdout.splitlines()[0])["offsetMsgId"]
    dry = rmq(mqadmin_cluster, "message", "resend", offset_id, "--dry-run", "-o", "json")
    assert as_json(dry) == {
        "originalMsgId": offset_id,
        "topic": "broker-a",
        "tags": "TagR",
        "keys": "FriendlyResend",
        "flag": 0,
        "properties": {},
        "bodySize": 5,
    }
    assert "nothing was sent" in dry.stderr
    sent = as_json(rmq(mqadmin_cluster, "message", "resend", offset_id, "-o", "json"))
    assert sent["originalMsgId"] == offset_id
    assert (sent["sendStatus"], sent["topic"], sent["brokerName"]) == (
        "SEND_OK",
        "broker-a",
        "broker-a",
    )
    copies = as_json(
        rmq(mqadmin_cluster, "message", "by-key", "broker-a", "FriendlyResend", "-o", "json")
    )
    assert sorted(copy["body"] for copy in copies) == ["again", "again"]
    assert sent["offsetMsgId"] in [copy["offsetMsgId"] for copy in copies]


def test_consume_directly(mqadmin_cluster: MqadminCluster) -> None:
    sent = mqadmin_cluster.sent[4]
    verdict = as_json(
        rmq(
            mqadmin_cluster,
            "message",
            "consume-directly",
            sent.offset_msg_id,
            "-g",
            GROUP,
            "-o",
            "json",
        )
    )
    assert verdict["msgId"] == sent.msg_id
    assert verdict["offsetMsgId"] == sent.offset_msg_id
    assert (verdict["group"], verdict["consumeResult"]) == (GROUP, "CR_SUCCESS")
    assert (verdict["order"], verdict["autoCommit"]) == (False, True)
    unique = rmq(
        mqadmin_cluster, "message", "consume-directly", mqadmin_cluster.sent[5].msg_id,
        "-t", TOPIC, "-g", GROUP, "--client-id", verdict["clientId"], "-o", "json",
    )  # fmt: skip
    assert as_json(unique)["consumeResult"] == "CR_SUCCESS"
    dry = rmq(
        mqadmin_cluster, "message", "consume-directly", sent.offset_msg_id, "-g", GROUP,
        "--dry-run", "-o", "json",
    )  # fmt: skip
    assert as_json(dry) == [
        {
            "request": "CONSUME_MESSAGE_DIRECTLY",
            "code": 309,
            "target": "the broker that stored the message",
            "extFields": {"consumerGroup": GROUP, "clientId": "", "msgId": sent.offset_msg_id},
        }
    ]
    assert "nothing was sent" in dry.stderr
    offline = _fails(
        mqadmin_cluster, "message", "consume-directly", sent.offset_msg_id, "-g", "NoSuchGroup"
    )
    assert offline == (
        "rmq: error: consumer group 'NoSuchGroup' not found: no broker knows it; "
        "check the name with 'rmq group list'"
    )


def test_send_status(mqadmin_cluster: MqadminCluster) -> None:
    args = ("message", "send-status", "broker-b", "--count", "3", "--size", "64", "-o", "json")
    sends = as_json(rmq(mqadmin_cluster, *args))
    assert len(sends) == 3
    for send in sends:
        assert (send["sendStatus"], send["topic"], send["brokerName"]) == (
            "SEND_OK",
            "broker-b",
            "broker-b",
        )
        assert send["rtMs"] >= 0
    table = rmq(mqadmin_cluster, "message", "send-status", "broker-b", "--count", "1")
    assert table.stdout.splitlines()[0].split()[:3] == ["RT", "MS", "SEND"]
    line = _fails(mqadmin_cluster, "message", "send-status", "no-such-broker", "--count", "1")
    assert line == (
        "rmq: error: broker 'no-such-broker' not found: the name server has no broker of that "
        "name; see 'rmq cluster list'"
    )
