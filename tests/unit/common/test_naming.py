"""Topic and group validation, system names, retry and DLQ topics."""

from __future__ import annotations

import pytest

from rmq.common import naming

ILLEGAL = "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"


@pytest.mark.parametrize(
    ("topic", "broker", "client"),
    [
        ("TopicTest", None, None),
        ("%RETRY%group-1|a_b", None, None),
        ("T" * 127, None, None),
        ("", "The specified topic is blank.", "The specified topic is blank"),
        (" \t", "The specified topic is blank.", "The specified topic is blank"),
        (
            "T" * 128,
            "The specified topic is longer than topic max length.",
            "The specified topic is longer than topic max length 127.",
        ),
        (
            "topic.a",
            ILLEGAL,
            "The specified topic[topic.a] contains illegal characters, allowing only "
            "^[%|a-zA-Z0-9_-]+$",
        ),
        (
            "主题",
            ILLEGAL,
            "The specified topic[主题] contains illegal characters, allowing only "
            "^[%|a-zA-Z0-9_-]+$",
        ),
        # The broker checks characters before length, the client length before characters.
        ("é" * 200, ILLEGAL, "The specified topic is longer than topic max length 127."),
    ],
)
def test_topic_validation_messages(topic: str, broker: str | None, client: str | None) -> None:
    assert naming.topic_error(topic) == broker
    assert naming.client_topic_error(topic) == client


def test_group_validation_messages() -> None:
    assert naming.group_error("CID_group-1") is None
    assert naming.group_error("g" * 255) is None
    assert naming.group_error("") == "the specified group is blank"
    assert naming.group_error("g" * 256) == (
        "the specified group is longer than group max length 255."
    )
    assert naming.group_error("a b") == (
        "the specified group[a b] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
    )


def test_system_topics() -> None:
    for topic in ("TBW102", "SCHEDULE_TOPIC_XXXX", "BenchmarkTest", "RMQ_SYS_TRACE_TOPIC"):
        assert naming.is_system_topic(topic)
    assert naming.is_system_topic("rmq_sys_anything")
    assert not naming.is_system_topic("RMQ_SYS_anything")
    assert not naming.is_system_topic("DefaultCluster")
    assert naming.is_system_topic("DefaultCluster", {"DefaultCluster", "broker-a"})
    assert naming.system_topic_conflict_error("TBW102") == (
        "The topic[TBW102] is conflict with system topic."
    )


def test_send_forbidden_topics() -> None:
    assert naming.is_send_forbidden("SCHEDULE_TOPIC_XXXX")
    assert naming.is_send_forbidden("RMQ_SYS_TRANS_HALF_TOPIC")
    assert naming.is_send_forbidden("OFFSET_MOVED_EVENT")
    assert not naming.is_send_forbidden("TBW102")
    assert not naming.is_send_forbidden("RMQ_SYS_TRACE_TOPIC")
    assert naming.send_forbidden_error("SELF_TEST_TOPIC") == (
        "Sending message to topic[SELF_TEST_TOPIC] is forbidden."
    )


def test_retry_and_dlq_names() -> None:
    assert naming.retry_topic("g1") == "%RETRY%g1"
    assert naming.dlq_topic("g1") == "%DLQ%g1"
    assert naming.reply_topic("DefaultCluster") == "DefaultCluster_REPLY_TOPIC"
    assert naming.is_retry_topic("%RETRY%g1") and not naming.is_retry_topic("%DLQ%g1")
    assert naming.is_dlq_topic("%DLQ%g1") and not naming.is_dlq_topic("g1")
    assert naming.consumer_group_of("%RETRY%g1") == "g1"
    assert naming.consumer_group_of("%DLQ%g2") == "g2"
    assert naming.consumer_group_of("TopicTest") is None
    assert naming.is_lmq("%LMQ%x")


def test_system_groups() -> None:
    assert naming.is_sys_consumer_group("CID_RMQ_SYS_TRANS")
    assert not naming.is_sys_consumer_group("TOOLS_CONSUMER")
    assert "TOOLS_CONSUMER" in naming.SYSTEM_GROUPS
    assert "CID_ONS-HTTP-PROXY" in naming.SYSTEM_GROUPS
