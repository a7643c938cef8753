"""mqadmin's message commands that send or read queues in bulk: sendMessage, sendMsgStatus,
checkMsgSendRT, queryCq and consumeMessage (the lookups and printMsg are in cmd_message.py;
`dispatch.MODULES` loads both).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rmq.cli.mqadmin.cmd_message import (
    TIME_HELP,
    print_messages,
    producer,
    pull_status_line,
    send_result_text,
    timestamp_value,
    tools_consumer,
)
from rmq.cli.mqadmin.javafmt import jformat, jprintf, jstr, parse_bool, parse_int
from rmq.cli.mqadmin.registry import Invocation, MqadminFailure, Opt, failing, subcommand

if TYPE_CHECKING:
    from rmq.client.consumer.pull import PullConsumer
    from rmq.remoting.bodies import ConsumeQueueData, MessageQueue

RULE = "======================================\n"

# -- sending --------------------------------------------------------------------------------


@subcommand(
    18,
    "sendMsgStatus",
    "send msg to broker.",
    Opt("b", "brokerName", True, True, "Broker Name"),
    Opt("s", "messageSize", True, False, "Message Size, Default: 128"),
    Opt("c", "count", True, False, "send message count, Default: 50"),
)
async def send_msg_status(inv: Invocation) -> None:
    from rmq.client.adminops.message_friendly import send_status

    with failing("SendMsgStatusCommand"):
        broker_name = inv.value("b") or ""
        size = parse_int(inv.value("s")) if inv.has("s") else 128
        count = parse_int(inv.value("c")) if inv.has("c") else 50
        async with inv.admin() as admin:
            sends = await send_status(admin, broker_name, size, count)
        for sent in sends:
            jprintf(inv.out, "rt=%sms, SendResult=%s%n", sent.rt_ms, send_result_text(sent.result))


@subcommand(
    41,
    "checkMsgSendRT",
    "check message send response time",
    Opt("t", "topic", True, True, "topic name"),
    Opt("a", "amount", True, False, "message amount | default 100"),
    Opt("s", "size", True, False, "message size | default 128 Byte"),
)
async def check_msg_send_rt(inv: Invocation) -> None:
    from rmq.client.message import Message

    with failing("CheckMsgSendRTCommand"):
        topic = inv.value("t") or ""
        amount = parse_int(inv.value("a")) if inv.has("a") else 100
        size = parse_int(inv.value("s")) if inv.has("s") else 128
        row = "%-32s  %-4s  %-20s    %s%n"
        async with producer(inv) as sender:
            jprintf(inv.out, row, "#Broker Name", "#QID", "#Send Result", "#RT")
            total = 0
            chosen: MessageQueue | None = None
            for i in range(amount):

                def select(
                    queues: Sequence[MessageQueue], _: object, index: int = i
                ) -> MessageQueue:
                    nonlocal chosen
                    chosen = queues[index % len(queues)]
                    return chosen

                begin = time.monotonic()
                try:
                    await sender.send(Message(topic, b"a" * size), selector=select)
                    ok = True
                except Exception:
                    ok = False
                elapsed = int((time.monotonic() - begin) * 1000)
                if i:
                    total += elapsed
                broker = chosen.broker_name if chosen else None
                queue_id = chosen.queue_id if chosen else 0
                jprintf(inv.out, row, broker, queue_id, ok, elapsed)
        average = total / (amount - 1) if amount > 1 else float("nan")
        jprintf(inv.out, "Avg RT: %s%n", jformat("%.2f", average))


@subcommand(
    48,
    "sendMessage",
    "Send a message",
    Opt("t", "topic", True, True, "Topic name"),
    Opt("p", "body", True, True, "UTF-8 string format of the message body"),
    Opt("k", "key", True, False, "Message keys"),
    Opt("c", "tags", True, False, "Message tags"),
    Opt("b", "broker", True, False, "Send message to target broker"),
    Opt("i", "qid", True, False, "Send message to target queue"),
    Opt("m", "msgTraceEnable", True, False, "Message Trace Enable, Default: false"),
)
async def send_message(inv: Invocation) -> None:
    from rmq.client.message import Message
    from rmq.remoting.bodies import MessageQueue

    with failing("SendMessageCommand"):
        topic, body = inv.value("t") or "", inv.value("p") or ""
        broker_name = inv.value("b")
        if inv.has("i") and not inv.has("b"):
            inv.out.write("Broker name must be set if the queue is chosen!")
            return
        queue_id = parse_int(inv.value("i")) if inv.has("i") else -1
        message = Message(topic, body.encode(), tags=inv.value("c"), keys=inv.value("k"))
        target = (
            MessageQueue(topic, broker_name, queue_id) if broker_name and queue_id > -1 else None
        )
        async with producer(inv, trace=parse_bool(inv.value("m"))) as sender:
            if target is None:
                result = await sender.send(message)
            else:
                result = await sender.send(message, selector=lambda _queues, _msg: target)
        row = "%-32s  %-4s  %-20s    %s%n"
        jprintf(inv.out, row, "#Broker Name", "#QID", "#Send Result", "#MsgId")
        mq = result.message_queue
        jprintf(inv.out, row, mq.broker_name, mq.queue_id, result.status.name, result.msg_id)


# -- the consume queue and consumeMessage -----------------------------------------------------


@subcommand(
    47,
    "queryCq",
    "Query cq command.",
    Opt("t", "topic", True, True, "topic name"),
    Opt("q", "queue", True, True, "queue num, ie. 1"),
    Opt("i", "index", True, True, "start queue index."),
    Opt("c", "count", True, False, "how many."),
    Opt("b", "broker", True, False, "broker addr."),
    Opt("g", "consumer", True, False, "consumer group."),
)
async def query_cq(inv: Invocation) -> None:
    from rmq.client.adminops.message import consume_queue

    with failing("QueryConsumeQueueCommand"):
        index = parse_int(inv.value("i"))
        count = parse_int(inv.value("c")) if inv.has("c") else 10
        async with inv.admin() as admin:
            _, body = await consume_queue(
                admin,
                inv.value("t") or "",
                parse_int(inv.value("q")),
                index,
                count,
                inv.value("g"),
                inv.value("b"),
            )
            if body is None:
                raise MqadminFailure(
                    "QueryConsumeQueueCommand command failed: the broker has no entry"
                )
            out = inv.out
            if body.subscription_data is not None:
                text = body.subscription_data.encode(pretty=True).decode()
                out.write(f"Subscription data: \n{text}\n")
                out.write(RULE)
            if body.filter_data is not None:
                out.write(f"Filter data: \n{body.filter_data}\n")
                out.write(RULE)
            jprintf(
                out, "Queue data: \nmax: %d, min: %d\n", body.max_queue_index, body.min_queue_index
            )
            out.write(RULE)
            for position, entry in enumerate(body.queue_data or (), start=index):
                out.write(f"idx: {position}\n{queue_data_text(entry)}\n{RULE}")


def queue_data_text(entry: ConsumeQueueData) -> str:
    """`ConsumeQueueData.toString()`."""
    return (
        f"ConsumeQueueData{{physicOffset={entry.physic_offset}, "
        f"physicSize={entry.physic_size}, tagsCode={entry.tags_code}, "
        f"extendDataJson='{jstr(entry.extend_data_json)}', bitMap='{jstr(entry.bit_map)}', "
        f"eval={jstr(entry.eval)}, msg='{jstr(entry.msg)}'}}"
    )


CONSUME_DEFAULT_COUNT = 128
BAD_RANGE = "Please make sure that the beginTimestamp is less than or equal to the endTimestamp"


@subcommand(
    49,
    "consumeMessage",
    "Consume message",
    Opt("t", "topic", True, True, "Topic name"),
    Opt("b", "brokerName", True, False, "Broker name"),
    Opt("i", "queueId", True, False, "Queue Id"),
    Opt("o", "offset", True, False, "Queue offset"),
    Opt("g", "consumerGroup", True, False, "Consumer group name"),
    Opt("s", "beginTimestamp ", True, False, f"Begin timestamp{TIME_HELP}"),
    Opt("e", "endTimestamp ", True, False, f"End timestamp{TIME_HELP}"),
    Opt("c", "MessageNumber", True, False, "Number of message to be consumed"),
)
async def consume_message(inv: Invocation) -> None:
    with failing("ConsumeMessageCommand"):
        out = inv.out
        count = parse_int(inv.value("c")) if inv.has("c") else CONSUME_DEFAULT_COUNT
        if count <= 0:
            out.write("Please input a positive messageNumber!")
            return
        if inv.has("i") and not inv.has("b"):
            out.write("Please set the brokerName before queueId!")
            return
        if inv.has("o") and not inv.has("i"):
            out.write("Please set queueId before offset!")
            return
        offset = parse_int(inv.value("o")) if inv.has("o") else 0
        now = int(time.time() * 1000)
        begin = timestamp_value(inv.value("s") or "") if inv.has("s") else 0
        end = timestamp_value(inv.value("e") or "") if inv.has("e") else 0
        if begin > now:
            out.write("Please set the beginTimestamp before now!")
            return
        if inv.has("e"):
            if end > now:
                out.write("Please set the endTimestamp before now!")
                return
            if begin > end:
                out.write(BAD_RANGE)
                return
        async with tools_consumer(inv, inv.value("g")) as consumer:
            if inv.has("i"):
                await _consume_queue(inv, consumer, count, offset, begin, end)
            else:
                await _consume_topic(inv, consumer, count, begin, end)


async def _bounds(
    consumer: PullConsumer, mq: MessageQueue, begin: int, end: int
) -> tuple[int, int]:
    low, high = await consumer.min_offset(mq), await consumer.max_offset(mq)
    if begin > 0:
        low = await consumer.search_offset(mq, begin)
    if end > 0:
        high = await consumer.search_offset(mq, end)
    return low, high


async def _consume_topic(
    inv: Invocation, consumer: PullConsumer, count: int, begin: int, end: int
) -> None:
    from rmq.client.adminops.message import subscribe_queues

    left = count
    for mq in await subscribe_queues(consumer, inv.value("t") or ""):
        if left == 0:
            return
        low, high = await _bounds(consumer, mq, begin, end)
        if high - low > left:
            text = "The older %d message of the %d queue will be provided\n"
            jprintf(inv.out, text, left, mq.queue_id)
            high = low + left - 1
            left = 0
        else:
            left = left - (high - low) - 1
        await _consume_range(inv, consumer, mq, low, high)


async def _consume_queue(
    inv: Invocation, consumer: PullConsumer, count: int, offset: int, begin: int, end: int
) -> None:
    from rmq.remoting.bodies import MessageQueue

    mq = MessageQueue(inv.value("t") or "", inv.value("b") or "", parse_int(inv.value("i")))
    low, high = await _bounds(consumer, mq, begin, end)
    if offset > high:
        jprintf(inv.out, "%s no matched msg, offset=%s\n", mq.java_text(), offset)
        return
    low = max(low, offset)
    if high - low > count:
        jprintf(inv.out, "The oldler %d message will be provided\n", count)
        high = low + count - 1
    await _consume_range(inv, consumer, mq, low, high)


async def _consume_range(
    inv: Invocation, consumer: PullConsumer, mq: MessageQueue, low: int, high: int
) -> None:
    """Pull `mq` from `low` to `high` inclusive, as many at a time as are left."""
    from rmq.client.api import PullStatus

    offset = low
    while offset <= high:
        result = await consumer.pull(mq, offset, high - offset + 1, "*")
        offset = result.next_begin_offset
        if result.status is PullStatus.FOUND:
            inv.out.write("Consume ok\n")
            print_messages(inv, result.messages, "UTF-8", True)
            continue
        pull_status_line(inv, mq, result.status, offset)
        if result.status is not PullStatus.NO_MATCHED_MSG:
            return
