"""mqadmin's message commands that look messages up (queryMsgById, queryMsgByKey,
queryMsgByUniqueKey, queryMsgByOffset) and print a topic's or a queue's messages (printMsg,
printMsgByQueue); cmd_message_send.py has the sending commands, queryCq and
consumeMessage.

The operations are rmq/client/adminops/message.py's; this module prints their results the
way the Java commands of mqadmin 4.9.8 do, including the Java `toString` forms they print:

* the detail block of one message (`OffsetID:`, `Topic:` ... `Message Body Path:`, then each
  consumer group's `MessageTrack`, all on one line, or `WARN: No Consumer`), the body written
  to `/tmp/rocketmq/msgbodys/<msgId>` as mqadmin writes it;
* a message line of printMsg and friends: `MSGID: <msgId> <MessageExt.toString()> BODY: ...`,
  where properties print as a Java `HashMap` (`{KEY=value, ...}` in hash order) and the body
  as `Arrays.toString(byte[])`;
* `SendResult [...]`, `MessageQueue [...]`, `ConsumeQueueData{...}` and
  `ConsumeMessageDirectlyResult [...]`.

queryMsgTraceById (message trace) is cmd_trace.py's.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from itertools import takewhile
from pathlib import Path
from typing import TYPE_CHECKING

from rmq.cli.mqadmin.javafmt import jprintf, jstr, parse_bool, parse_int
from rmq.cli.mqadmin.registry import Invocation, Opt, failing, subcommand

if TYPE_CHECKING:
    from rmq.client.adminops.message import MessageTrack
    from rmq.client.api import PullStatus, SendResult
    from rmq.client.consumer.pull import PullConsumer
    from rmq.client.messageext import MessageExt
    from rmq.client.producer import Producer
    from rmq.common.message import MessageRecord
    from rmq.remoting.bodies import MessageQueue
    from rmq.remoting.bodies.consumerinfo import ConsumeMessageDirectlyResult

BODY_DIR = Path("/tmp/rocketmq/msgbodys")
"""Where mqadmin writes the body of a message it shows in detail."""


DASHES = "--------------------------------------------------------\n"
TIME_HELP = "[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]"


# -- Java text forms ------------------------------------------------------------------------


def java_map(properties: dict[str, str]) -> str:
    """`HashMap.toString()` of string properties put in this order."""
    from rmq.common.javahash import java_hash_order

    items = ", ".join(f"{key}={properties[key]}" for key in java_hash_order(properties))
    return "{" + items + "}"


def java_bytes(body: bytes) -> str:
    """`Arrays.toString(byte[])`: signed byte values."""
    return "[" + ", ".join(str(b - 256 if b > 127 else b) for b in body) + "]"


def human_time(millis: int) -> str:
    """`UtilAll.timeMillisToHumanString2`: local `yyyy-MM-dd HH:mm:ss,SSS`."""
    moment = datetime.datetime.fromtimestamp(millis / 1000)
    return f"{moment:%Y-%m-%d %H:%M:%S},{millis % 1000:03d}"


def message_ext_text(msg: MessageExt) -> str:
    """`MessageExt.toString()` of a pulled message."""
    record = msg.record
    return (
        f"MessageExt [brokerName={msg.broker_name}, queueId={record.queue_id}, "
        f"storeSize={record.total_size}, queueOffset={record.queue_offset}, "
        f"sysFlag={record.sys_flag}, bornTimestamp={record.born_timestamp}, "
        f"bornHost=/{record.born_host}, storeTimestamp={record.store_timestamp}, "
        f"storeHost=/{record.store_host}, msgId={record.offset_msg_id}, "
        f"commitLogOffset={record.physical_offset}, bodyCRC={record.body_crc}, "
        f"reconsumeTimes={msg.reconsume_times}, "
        f"preparedTransactionOffset={record.prepared_transaction_offset}, "
        f"toString()=Message{{topic='{msg.topic}', flag={record.flag}, "
        f"properties={java_map(msg.properties)}, body={java_bytes(msg.body)}, "
        f"transactionId='{jstr(msg.transaction_id)}'}}]"
    )


def send_result_text(result: SendResult) -> str:
    return (
        f"SendResult [sendStatus={result.status.name}, msgId={result.msg_id}, "
        f"offsetMsgId={result.offset_msg_id}, "
        f"messageQueue={result.message_queue.java_text()}, "
        f"queueOffset={result.queue_offset}]"
    )


def direct_result_text(result: ConsumeMessageDirectlyResult) -> str:
    consume_result = result.consume_result.name if result.consume_result else None
    return (
        f"ConsumeMessageDirectlyResult [order={jstr(result.order)}, "
        f"autoCommit={jstr(result.auto_commit)}, consumeResult={jstr(consume_result)}, "
        f"remark={jstr(result.remark)}, spentTimeMills={result.spent_time_mills}]"
    )


def track_text(track: MessageTrack) -> str:
    return (
        f"MessageTrack [consumerGroup={track.consumer_group}, "
        f"trackType={track.track_type.value}, exceptionDesc={jstr(track.exception_desc)}]"
    )


def timestamp_value(text: str) -> int:
    """`timestampFormat`: milliseconds, or local `yyyy-MM-dd#HH:mm:ss:SSS`."""
    try:
        return int(text)
    except ValueError:
        moment = datetime.datetime.strptime(text, "%Y-%m-%d#%H:%M:%S:%f")
        return int(moment.timestamp() * 1000)


# -- the detail block -----------------------------------------------------------------------


def _write_body(record: MessageRecord, suffix: str = "") -> str:
    BODY_DIR.mkdir(parents=True, exist_ok=True)
    path = BODY_DIR / f"{record.msg_id}{suffix}"
    path.write_bytes(record.decompressed_body() or b"")
    return str(path)


def _detail(
    inv: Invocation,
    record: MessageRecord,
    properties: dict[str, str],
    tracks: Sequence[MessageTrack],
    *,
    offset_id: bool = True,
    body_suffix: str = "",
) -> None:
    """The message detail block of queryMsgById / queryMsgByOffset / queryMsgByUniqueKey."""
    out = inv.out
    path = _write_body(record, body_suffix)
    if offset_id:
        jprintf(out, "%-20s %s%n", "OffsetID:", record.offset_msg_id)
    jprintf(out, "%-20s %s%n", "Topic:", record.topic)
    jprintf(out, "%-20s %s%n", "Tags:", f"[{jstr(record.tags)}]")
    jprintf(out, "%-20s %s%n", "Keys:", f"[{jstr(properties.get('KEYS'))}]")
    jprintf(out, "%-20s %d%n", "Queue ID:", record.queue_id)
    jprintf(out, "%-20s %d%n", "Queue Offset:", record.queue_offset)
    jprintf(out, "%-20s %d%n", "CommitLog Offset:", record.physical_offset)
    jprintf(out, "%-20s %d%n", "Reconsume Times:", record.reconsume_times)
    jprintf(out, "%-20s %s%n", "Born Timestamp:", human_time(record.born_timestamp))
    jprintf(out, "%-20s %s%n", "Store Timestamp:", human_time(record.store_timestamp))
    jprintf(out, "%-20s %s%n", "Born Host:", record.born_host)
    jprintf(out, "%-20s %s%n", "Store Host:", record.store_host)
    jprintf(out, "%-20s %d%n", "System Flag:", record.sys_flag)
    jprintf(out, "%-20s %s%n", "Properties:", java_map(properties))
    jprintf(out, "%-20s %s%n", "Message Body Path:", path)
    if not tracks:
        jprintf(out, "%n%nWARN: No Consumer")
        return
    jprintf(out, "%n%n")
    for track in tracks:
        out.write(track_text(track))


async def _show(inv: Invocation, record: MessageRecord, properties: dict[str, str]) -> None:
    from rmq.client.adminops.message import message_tracks

    async with inv.admin() as admin:
        tracks = await message_tracks(admin, record)
    _detail(inv, record, properties, tracks)


# -- lookups --------------------------------------------------------------------------------


@subcommand(
    11,
    "queryMsgById",
    "Query Message by Id",
    Opt("i", "msgId", True, True, "Message Id"),
    Opt("g", "consumerGroup", True, False, "consumer group name"),
    Opt("d", "clientId", True, False, "The consumer's client id"),
    Opt("s", "sendMessage", True, False, "resend message"),
    Opt("u", "unitName", True, False, "unit name"),
)
async def query_msg_by_id(inv: Invocation) -> None:
    from rmq.client.adminops.message import consume_directly, view_message

    with failing("QueryMsgByIdSubCommand"):
        ids = [part.strip() for part in (inv.value("i") or "").split(",") if part.strip()]
        async with inv.admin() as admin:
            if inv.has("g") and inv.has("d"):
                group, client_id = inv.value("g") or "", inv.value("d") or ""
                for msg_id in ids:
                    record = await view_message(admin, msg_id)
                    result = await consume_directly(admin, group, client_id, record)
                    inv.out.write(direct_result_text(result))
            elif inv.has("s"):
                if parse_bool(inv.value("s")):
                    for msg_id in ids:
                        await _resend(inv, msg_id)
            else:
                for msg_id in ids:
                    record = await view_message(admin, msg_id)
                    await _show(inv, record, record.properties)


async def _resend(inv: Invocation, msg_id: str) -> None:
    """queryMsgById -s true: send the stored message again (producer group ReSendMsgById),
    with its tags, keys, flag and user properties; it gets a new unique key (mqadmin keeps
    the old one)."""
    from rmq.client.adminops.message import view_message
    from rmq.client.adminops.message_friendly import resend

    async with inv.admin() as admin:
        record = await view_message(admin, msg_id)
        jprintf(inv.out, "prepare resend msg. originalMsgId=%s", msg_id)
        result = await resend(admin, record)
        jprintf(inv.out, "%s", send_result_text(result))


@subcommand(
    12,
    "queryMsgByKey",
    "Query Message by Key",
    Opt("t", "topic", True, True, "topic name"),
    Opt("k", "msgKey", True, True, "Message Key"),
)
async def query_msg_by_key(inv: Invocation) -> None:
    from rmq.client.adminops.message import query_messages

    with failing("QueryMsgByKeySubCommand"):
        async with inv.admin() as admin:
            records = await query_messages(admin, inv.value("t") or "", inv.value("k") or "")
            jprintf(inv.out, "%-50s %4s %40s%n", "#Message ID", "#QID", "#Offset")
            for record in records:
                jprintf(
                    inv.out, "%-50s %4d %40d%n", record.msg_id, record.queue_id, record.queue_offset
                )


@subcommand(
    13,
    "queryMsgByUniqueKey",
    "Query Message by Unique key",
    Opt("i", "msgId", True, True, "Message Id"),
    Opt("g", "consumerGroup", True, False, "consumer group name"),
    Opt("d", "clientId", True, False, "The consumer's client id"),
    Opt("t", "topic", True, True, "The topic of msg"),
    Opt("a", "showAll", False, False, "Print all message, the limit is 32"),
)
async def query_msg_by_unique_key(inv: Invocation) -> None:
    from rmq.client.adminops.message import (
        UNIQUE_KEY_QUERY_MAX,
        consume_directly,
        message_tracks,
        query_messages,
    )

    with failing("QueryMsgByUniqueKeySubCommand"):
        topic, msg_id = inv.value("t") or "", inv.value("i") or ""
        async with inv.admin() as admin:
            if inv.has("g") and inv.has("d"):
                (record,) = await query_messages(admin, topic, msg_id, unique=True)
                group, client_id = inv.value("g") or "", inv.value("d") or ""
                result = await consume_directly(admin, group, client_id, record)
                inv.out.write(direct_result_text(result))
                return
            records = await query_messages(
                admin, topic, msg_id, unique=True, max_num=UNIQUE_KEY_QUERY_MAX
            )
            records.sort(key=lambda record: record.store_timestamp)
            for index, record in enumerate(records if inv.has("a") else records[:1]):
                tracks = await message_tracks(admin, record)
                suffix = f"_{index}" if index else ""
                _detail(inv, record, record.properties, tracks, offset_id=False, body_suffix=suffix)


@subcommand(
    14,
    "queryMsgByOffset",
    "Query Message by offset",
    Opt("t", "topic", True, True, "topic name"),
    Opt("b", "brokerName", True, True, "Broker Name"),
    Opt("i", "queueId", True, True, "Queue Id"),
    Opt("o", "offset", True, True, "Queue Offset"),
)
async def query_msg_by_offset(inv: Invocation) -> None:
    from rmq.client.adminops.message import queue_pulls
    from rmq.remoting.bodies import MessageQueue

    with failing("QueryMsgByOffsetSubCommand"):
        mq = MessageQueue(inv.value("t") or "", inv.value("b") or "", parse_int(inv.value("i")))
        offset = parse_int(inv.value("o"))
        async with tools_consumer(inv) as consumer:
            (pull,) = await queue_pulls(consumer, mq, "*", offset, offset + 1, batch=1)
            if pull.result.messages:
                message = pull.result.messages[0]
                await _show(inv, message.record, message.properties)


# -- reading queues -------------------------------------------------------------------------


async def _namesrv(inv: Invocation) -> str:
    async with inv.admin() as admin:
        return ";".join(admin.namesrv_addrs)


@asynccontextmanager
async def tools_consumer(inv: Invocation, group: str | None = None) -> AsyncIterator[PullConsumer]:
    """mqadmin's pull consumer (group TOOLS_CONSUMER unless given), on the name servers."""
    from rmq.client.adminops.message import TOOLS_CONSUMER_GROUP
    from rmq.client.consumer.pull import PullConsumer

    async with PullConsumer(group or TOOLS_CONSUMER_GROUP, await _namesrv(inv)) as consumer:
        yield consumer


@asynccontextmanager
async def producer(inv: Invocation, *, trace: bool = False) -> AsyncIterator[Producer]:
    """A producer on the name servers, its group named after the current time in ms, as
    mqadmin names its throw-away producer groups; `trace` traces its sends to
    RMQ_SYS_TRACE_TOPIC (sendMessage -m true)."""
    from rmq.cli.tracing import trace_producer
    from rmq.client.producer import Producer
    from rmq.common.naming import RMQ_SYS_TRACE_TOPIC

    namesrv = await _namesrv(inv)
    async with Producer(str(int(time.time() * 1000)), namesrv) as running:
        traces = await trace_producer(running, namesrv, RMQ_SYS_TRACE_TOPIC if trace else None)
        try:
            yield running
        finally:
            if traces is not None:
                await traces.shutdown()


def pull_status_line(inv: Invocation, mq: MessageQueue, status: PullStatus, offset: int) -> None:
    """printMsg's and consumeMessage's line for a pull that found nothing to print."""
    from rmq.client.api import PullStatus

    if status is PullStatus.NO_MATCHED_MSG:
        text = "%s no matched msg. status=%s, offset=%s%n"
    else:
        text = "%s print msg finished. status=%s, offset=%s%n"
    jprintf(inv.out, text, mq.java_text(), status.name, offset)


def print_messages(
    inv: Invocation, messages: Sequence[MessageExt], charset: str, print_body: bool
) -> None:
    for message in messages:
        body = message.body.decode(charset, "replace") if print_body else "NOT PRINT BODY"
        jprintf(inv.out, "MSGID: %s %s BODY: %s%n", message.msg_id, message_ext_text(message), body)


async def _range(consumer: PullConsumer, mq: MessageQueue, inv: Invocation) -> tuple[int, int]:
    """The queue's min and max offsets, or those -b / -e (timestamps) search to."""
    low, high = await consumer.min_offset(mq), await consumer.max_offset(mq)
    if inv.has("b"):
        low = await consumer.search_offset(mq, timestamp_value(inv.value("b") or ""))
    if inv.has("e"):
        high = await consumer.search_offset(mq, timestamp_value(inv.value("e") or ""))
    return low, high


def _print_settings(inv: Invocation) -> tuple[str, str]:
    """-c (charset, UTF-8) and -s (sub expression, `*`) of printMsg and printMsgByQueue."""
    return inv.value("c") or "UTF-8", (inv.value("s") if inv.has("s") else None) or "*"


PRINT_OPTIONS = (
    Opt("c", "charsetName ", True, False, "CharsetName(eg: UTF-8,GBK)"),
    Opt("s", "subExpression ", True, False, "Subscribe Expression(eg: TagA || TagB)"),
    Opt("b", "beginTimestamp ", True, False, f"Begin timestamp{TIME_HELP}"),
    Opt("e", "endTimestamp ", True, False, f"End timestamp{TIME_HELP}"),
)


@subcommand(
    16,
    "printMsg",
    "Print Message Detail",
    Opt("t", "topic", True, True, "topic name"),
    *PRINT_OPTIONS,
    Opt("d", "printBody ", True, False, "print body"),
)
async def print_msg(inv: Invocation) -> None:
    from rmq.client.adminops.message import queue_pulls, subscribe_queues
    from rmq.client.api import PullStatus

    with failing("PrintMessageSubCommand"):
        charset, expression = _print_settings(inv)
        print_body = not inv.has("d") or parse_bool(inv.value("d"))
        async with tools_consumer(inv) as consumer:
            for mq in await subscribe_queues(consumer, inv.value("t") or ""):
                low, high = await _range(consumer, mq, inv)
                jprintf(inv.out, "minOffset=%s, maxOffset=%s, %s%n", low, high, mq.java_text())
                for pull in await queue_pulls(consumer, mq, expression, low, high):
                    status = pull.result.status
                    if status is PullStatus.FOUND:
                        print_messages(inv, pull.result.messages, charset, print_body)
                    else:
                        pull_status_line(inv, mq, status, pull.next_offset)
                inv.out.write(DASHES)


@subcommand(
    17,
    "printMsgByQueue",
    "Print Message Detail",
    Opt("t", "topic", True, True, "topic name"),
    Opt("a", "brokerName ", True, True, "broker name"),
    Opt("i", "queueId ", True, True, "queue id"),
    *PRINT_OPTIONS,
    Opt("p", "print msg", True, False, "print msg. eg: true | false(default)"),
    Opt("d", "printBody ", True, False, "print body. eg: true | false(default)"),
    Opt("f", "calculate", True, False, "calculate by tag. eg: true | false(default)"),
)
async def print_msg_by_queue(inv: Invocation) -> None:
    from rmq.client.adminops.message import found_messages, queue_pulls
    from rmq.client.api import PullStatus
    from rmq.remoting.bodies import MessageQueue

    with failing("PrintMessageByQueueCommand"):
        charset, expression = _print_settings(inv)
        mq = MessageQueue(inv.value("t") or "", inv.value("a") or "", parse_int(inv.value("i")))
        async with tools_consumer(inv) as consumer:
            low, high = await _range(consumer, mq, inv)
            pulls = await queue_pulls(consumer, mq, expression, low, high)
            found = takewhile(lambda pull: pull.result.status is PullStatus.FOUND, pulls)
            messages = found_messages(list(found))
            if parse_bool(inv.value("p")):
                print_messages(inv, messages, charset, parse_bool(inv.value("d")))
            if parse_bool(inv.value("f")):
                _print_tag_counts(inv, messages)


def _print_tag_counts(inv: Invocation, messages: Sequence[MessageExt]) -> None:
    """printMsgByQueue -f: messages per tag, most first (a stable sort of the tags in
    `HashMap` order)."""
    from rmq.common.javahash import java_hash_order

    counts: dict[str, int] = {}
    for message in messages:
        if message.tags and message.tags.strip():
            counts[message.tags] = counts.get(message.tags, 0) + 1
    ordered = sorted(java_hash_order(counts), key=lambda tag: -counts[tag])
    for tag in ordered:
        jprintf(inv.out, "Tag: %-30s Count: %s%n", tag, counts[tag])
