"""Comparing message records across the ways the store conformance tests see one store: what
the Java client received (conformance/drivers StoreRecords), what `rmq inspect` dumps and
exports (the message record of docs/cli.md), the rows `rmq spark-export` wrote, and what the
Java producer sent.  Every view is normalised to one dict per record (keys as a list, body as
bytes, times as epoch milliseconds) and compared field by field; a check returns a list of
differences, empty when all agree, so a failing test shows every one of them at once.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rmq.common.msgconst import SYSTEM_PROPERTY_NAMES

Record = dict[str, Any]
Position = tuple[str, int, int]

STORED_FIELDS = (
    "topic",
    "queueId",
    "queueOffset",
    "commitLogOffset",
    "msgId",
    "offsetMsgId",
    "tags",
    "keys",
    "properties",
    "body",
    "bodyCrc",
    "flag",
    "sysFlag",
    "bornTimestamp",
    "bornHost",
    "storeTimestamp",
    "storeHost",
    "reconsumeTimes",
    "preparedTransactionOffset",
)
"""Every field a record carries in the commitlog (the body decompressed), as both the Java
client and rmq's readers report them."""

SENT_FIELDS = ("tags", "keys", "flag", "userProperties", "body")
"""What a producer decides about a message."""

HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
OP_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
COMMITTED = 0x8
TRANSACTION_BITS = 0xC
PARKED_QUEUE = {"delayed": 1, "pending": 3}
"""Schedule queue of each delayed kind of send: delay level - 1."""


def _keys(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [key for key in value.split(" ") if key]
    return list(value)


def from_java(record: Mapping[str, Any]) -> Record:
    """A StoreRecords.record (body base64, keys one string)."""
    out = {name: record.get(name) for name in STORED_FIELDS}
    out["keys"] = _keys(record.get("keys"))
    out["body"] = base64.b64decode(record["body"])
    return out


def from_message_record(record: Mapping[str, Any]) -> Record:
    """A message record of `rmq inspect` (dump / export): body text unless base64."""
    out = {name: record.get(name) for name in STORED_FIELDS}
    out["keys"] = _keys(record.get("keys"))
    body = record.get("body") or ""
    if record.get("bodyEncoding") == "base64":
        out["body"] = base64.b64decode(body)
    else:
        out["body"] = body.encode("utf-8")
    return out


def read_parquet(directory: Path) -> list[Record]:
    """The rows `rmq spark-export --format parquet` wrote, normalised."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(directory)
    per_ms = {"s": 1 / 1000, "ms": 1, "us": 1000, "ns": 1_000_000}
    columns = {}
    for name in table.column_names:
        column = table.column(name)
        if pa.types.is_timestamp(column.type):
            divisor = per_ms[column.type.unit]
            column = pa.array(
                [
                    None if v is None else int(v // divisor)
                    for v in column.cast(pa.int64()).to_pylist()
                ]
            )
        columns[name] = column
    rows = pa.table(columns).to_pylist()
    out = []
    for row in rows:
        record = {name: row.get(name) for name in STORED_FIELDS}
        record["keys"] = _keys(row.get("keys"))
        record["properties"] = dict(row.get("properties") or [])
        record["body"] = bytes(row.get("body") or b"")
        record["brokerName"] = row.get("brokerName")
        out.append(record)
    return out


def position(record: Mapping[str, Any]) -> Position:
    return (str(record["topic"]), int(record["queueId"]), int(record["queueOffset"]))


def differences(
    expected: Mapping[str, Any], actual: Mapping[str, Any], fields: Iterable[str], where: str
) -> list[str]:
    return [
        f"{where}: {name} is {actual.get(name)!r}, expected {expected.get(name)!r}"
        for name in fields
        if actual.get(name) != expected.get(name)
    ]


def match_records(
    expected: Iterable[Record], actual: Iterable[Record], *, by: str = "position"
) -> list[str]:
    """Every expected record is in `actual` (found by (topic, queue, offset) or by
    commitLogOffset) with every stored field equal."""
    index: dict[Any, Record] = {}
    for record in actual:
        key = position(record) if by == "position" else record["commitLogOffset"]
        index[key] = record
    problems = []
    for record in expected:
        key = position(record) if by == "position" else record["commitLogOffset"]
        found = index.get(key)
        if found is None:
            problems.append(f"{key}: not found ({record['msgId']} {record['keys']})")
        else:
            problems += differences(record, found, STORED_FIELDS, str(key))
    return problems


def user_properties(record: Mapping[str, Any]) -> dict[str, str]:
    props = record.get("properties") or {}
    return {k: v for k, v in props.items() if k not in SYSTEM_PROPERTY_NAMES}


def as_sent(send: Mapping[str, Any]) -> Record:
    """What StoreTraffic.sent reported, in the form of `sent_view`."""
    return {
        "tags": send["tags"],
        "keys": _keys(send["keys"]),
        "flag": send["flag"],
        "userProperties": dict(send["properties"]),
        "body": base64.b64decode(send["body"]),
    }


def sent_view(record: Mapping[str, Any]) -> Record:
    return {
        "tags": record["tags"],
        "keys": record["keys"],
        "flag": record["flag"],
        "userProperties": user_properties(record),
        "body": record["body"],
    }


def match_sends(
    sends: Iterable[Mapping[str, Any]],
    records: Iterable[Record],
    absent: tuple[str, ...] = ("rollback",),
) -> list[str]:
    """Every send (but those of the `absent` kinds) is one record of the topic with its
    unique key, carrying what was sent, at the queue and offset the send result named (when
    it named one: delayed and transactional messages get theirs on delivery or commit)."""
    by_id: dict[str, list[Record]] = {}
    for record in records:
        by_id.setdefault(record["msgId"], []).append(record)
    problems = []
    for send in sends:
        if send["kind"] in absent:
            continue
        found = by_id.get(send["msgId"], [])
        where = f"{send['kind']} {send['msgId']}"
        if len(found) != 1:
            problems.append(f"{where}: {len(found)} records in the topic, expected 1")
            continue
        record = found[0]
        problems += differences(as_sent(send), sent_view(record), SENT_FIELDS, where)
        if send["queueOffset"] >= 0 and (record["queueId"], record["queueOffset"]) != (
            send["queueId"],
            send["queueOffset"],
        ):
            problems.append(
                f"{where}: at {record['queueId']}@{record['queueOffset']}, "
                f"sent to {send['queueId']}@{send['queueOffset']}"
            )
    return problems


def system_records(
    sends: Sequence[Mapping[str, Any]],
    records: list[Record],
    topic: str,
    retried: tuple[str, str] | None = None,
) -> list[str]:
    """The records RocketMQ keeps besides the topic's: the delayed messages parked in
    SCHEDULE_TOPIC_XXXX queue level - 1 (levels 2 and 4), both transactional messages' half
    records, one op record per ended transaction naming its half record's queue offset, and the
    committed message pointing back at its half record; with `retried` (group, unique id), the
    message that group asked to receive again: parked in SCHEDULE_TOPIC_XXXX queue 2 (level 3
    for a first retry) for the group's retry topic, then stored there with reconsumeTimes 1, its
    original topic (RETRY_TOPIC) and its original's offset message id (ORIGIN_MESSAGE_ID). A
    half record is stored as a plain message (no transaction bits in its sysFlag, so it is
    dispatched to the half topic's queue) with TRAN_MSG and its real topic in the properties, as
    Apache's TransactionalMessageBridge stores it.
    """
    problems = []
    by_topic: dict[str, list[Record]] = {}
    for record in records:
        by_topic.setdefault(record["topic"], []).append(record)
    by_uniq = {(r["topic"], r["properties"].get("UNIQ_KEY")): r for r in records}
    for send in sends:
        if send["kind"] in PARKED_QUEUE:
            parked = by_uniq.get((SCHEDULE_TOPIC, send["msgId"]))
            queue_id = PARKED_QUEUE[send["kind"]]
            if parked is None or parked["queueId"] != queue_id:
                problems.append(
                    f"{send['kind']} {send['msgId']}: not in {SCHEDULE_TOPIC} {queue_id}"
                )
            elif parked["properties"].get("REAL_TOPIC") != topic:
                problems.append(f"{send['kind']} {send['msgId']}: {parked['properties']}")
        if send["kind"] in ("commit", "rollback"):
            half = by_uniq.get((HALF_TOPIC, send["msgId"]))
            if half is None:
                problems.append(f"{send['kind']} {send['msgId']}: no half record")
                continue
            if half["sysFlag"] & TRANSACTION_BITS:
                problems.append(f"half record of {send['msgId']}: sysFlag {half['sysFlag']}")
            if half["properties"].get("REAL_TOPIC") != topic or not half["properties"].get(
                "TRAN_MSG"
            ):
                problems.append(f"half record of {send['msgId']}: {half['properties']}")
            committed = by_uniq.get((topic, send["msgId"]))
            if send["kind"] == "rollback" and committed is not None:
                problems.append(f"rolled-back {send['msgId']} reached {topic}")
            if send["kind"] == "commit" and (
                committed is None
                or committed["sysFlag"] & TRANSACTION_BITS != COMMITTED
                or committed["preparedTransactionOffset"] != half["commitLogOffset"]
            ):
                problems.append(f"committed {send['msgId']}: {committed}")
    if retried is not None:
        problems += _retry_records(by_uniq, topic, *retried)
    halves = sorted(str(r["queueOffset"]) for r in by_topic.get(HALF_TOPIC, []))
    ops = sorted(r["body"].decode() for r in by_topic.get(OP_TOPIC, []))
    if ops != halves:
        problems.append(f"op records name half offsets {ops}, half records are at {halves}")
    return problems


def _retry_records(
    by_uniq: Mapping[tuple[str, str], Record], topic: str, group: str, msg_id: str
) -> list[str]:
    retry_topic = f"%RETRY%{group}"
    original = by_uniq.get((topic, msg_id))
    parked = by_uniq.get((SCHEDULE_TOPIC, msg_id))
    retry = by_uniq.get((retry_topic, msg_id))
    if original is None or parked is None or retry is None:
        return [f"retried {msg_id}: original {original}, parked {parked}, retry record {retry}"]
    problems = []
    if (parked["queueId"], parked["properties"].get("REAL_TOPIC")) != (2, retry_topic):
        problems.append(f"retried {msg_id}: parked in queue {parked['queueId']}, {parked}")
    expected = {
        "reconsumeTimes": 1,
        "body": original["body"],
        "retryTopic": topic,
        "originMessageId": original["offsetMsgId"],
    }
    for name, record in (("parked", parked), ("retry record", retry)):
        found = {
            "reconsumeTimes": record["reconsumeTimes"],
            "body": record["body"],
            "retryTopic": record["properties"].get("RETRY_TOPIC"),
            "originMessageId": record["properties"].get("ORIGIN_MESSAGE_ID"),
        }
        problems += differences(expected, found, expected, f"{name} of retried {msg_id}")
    return problems
