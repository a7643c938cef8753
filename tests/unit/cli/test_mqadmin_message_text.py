"""The Java text forms the mqadmin message commands print (rmq/cli/mqadmin/cmd_message.py),
against values a JVM printed."""

from __future__ import annotations

import datetime

from rmq.cli.mqadmin.cmd_message import human_time, java_bytes, java_map, timestamp_value

KEYS = [
    *("KEYS", "UNIQ_KEY", "CLUSTER", "TAGS", "WAIT", "MIN_OFFSET", "MAX_OFFSET", "TRACE_ON"),
    *("REAL_TOPIC", "REAL_QID", "DELAY", "RETRY_TOPIC", "ORIGIN_MESSAGE_ID"),
    "CONSUME_START_TIME",
]


def test_properties_print_in_hash_map_order_after_a_resize() -> None:
    # new HashMap<>() filled with KEYS in this order, then keySet() printed by Java 17
    java = (
        "TRACE_ON, CONSUME_START_TIME, MIN_OFFSET, REAL_TOPIC, ORIGIN_MESSAGE_ID, RETRY_TOPIC, "
        "MAX_OFFSET, KEYS, UNIQ_KEY, CLUSTER, WAIT, DELAY, TAGS, REAL_QID"
    )
    text = java_map({key: "v" for key in KEYS})
    assert text == "{" + ", ".join(f"{key}=v" for key in java.split(", ")) + "}"


def test_an_empty_map_prints_braces() -> None:
    assert java_map({}) == "{}"


def test_bytes_print_signed() -> None:
    assert java_bytes("a中".encode()) == "[97, -28, -72, -83]"
    assert java_bytes(b"") == "[]"


def test_times_are_local_with_milliseconds() -> None:
    moment = datetime.datetime(2024, 1, 2, 3, 4, 5, 6000)
    millis = int(moment.timestamp() * 1000)
    assert human_time(millis) == "2024-01-02 03:04:05,006"
    assert timestamp_value("2024-01-02#03:04:05:006") == millis
    assert timestamp_value(str(millis)) == millis
