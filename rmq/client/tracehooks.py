"""The trace hooks: what a traced send or listener call records, as Apache's
SendMessageTraceHookImpl and ConsumeMessageTraceHookImpl record it.

* :class:`SendTraceHook` (a producer's `send_trace`): `before` an attempt it notes the time,
  topic, tags, keys, broker address, body length (as sent: compressed when it was) and the
  message type (transactional half, delayed, or normal); `after` a send the broker answered
  it completes the Pub record with the message ids, the cost, the status and the broker's
  region, and queues it, unless the broker said trace is off (TRACE_ON false).  A failed
  send, a oneway send and a send to the trace topic itself record nothing.  A
  transactional producer's hook also records each END_TRANSACTION it sends
  (:meth:`SendTraceHook.end_transaction`, Apache's EndTransactionTraceHookImpl): after the
  local transaction and after answering a check-back.
* :class:`ConsumeTraceHook` (a push consumer's `consume_trace`): `before` the listener sees
  a batch it queues a SubBefore record per message (a message sent with trace off is left
  out), `after` it a SubAfter record per message with the listener's verdict, the cost per
  message and the verdict's code (ConsumeReturnType: SUCCESS, FAILED for RECONSUME_LATER,
  EXCEPTION for a listener that raised, RETURNNULL for one that answered no status; Java's
  TIME_OUT, a listener call longer than consumeTimeout, is not recorded).

The producer and the push consumer hold these hooks and the dispatcher that builds them
(:mod:`rmq.client.trace`) holds a producer, so the hooks know the dispatcher only as the
:class:`TraceSink` they queue records to.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from rmq.client.api import SendResult, SendStatus
from rmq.client.message import unique_ids
from rmq.client.messageext import MessageExt
from rmq.common.msgconst import (
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_KEYS,
    PROPERTY_MSG_REGION,
    PROPERTY_TAGS,
    PROPERTY_TRACE_SWITCH,
    PROPERTY_TRANSACTION_PREPARED,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
)
from rmq.common.naming import DEFAULT_TRACE_REGION_ID
from rmq.common.properties import decode_properties
from rmq.common.timeutil import now_millis
from rmq.common.trace import (
    ConsumeReturnType,
    TraceBean,
    TraceContext,
    TraceMessageType,
    TraceType,
)

PROPERTY_START_DELIVER_TIME = "__STARTDELIVERTIME"


class TraceSink(Protocol):
    """Where the hooks queue their records: the trace dispatcher (:mod:`rmq.client.trace`)."""

    @property
    def trace_topic(self) -> str: ...

    def append(self, ctx: TraceContext) -> bool:
        """Queue ``ctx`` for sending; False when it was dropped."""
        ...


class SendTraceHook:
    """Pub records of producer group `group`'s sends (see the module docstring)."""

    def __init__(self, dispatcher: TraceSink, group: str) -> None:
        self.dispatcher = dispatcher
        self.group = group

    def before(
        self, topic: str, properties: str, body_length: int, broker_addr: str
    ) -> TraceContext | None:
        """The Pub record of one attempt, started now; None for the trace topic itself."""
        if topic.startswith(self.dispatcher.trace_topic):
            return None
        props = decode_properties(properties)
        msg_type = TraceMessageType.Normal_Msg
        if props.get(PROPERTY_TRANSACTION_PREPARED) == "true":
            msg_type = TraceMessageType.Trans_Msg_Half
        if PROPERTY_START_DELIVER_TIME in props or PROPERTY_DELAY_TIME_LEVEL in props:
            msg_type = TraceMessageType.Delay_Msg
        bean = TraceBean(
            topic=topic,
            tags=props.get(PROPERTY_TAGS),
            keys=props.get(PROPERTY_KEYS),
            store_host=broker_addr,
            body_length=body_length,
            msg_type=msg_type,
        )
        return TraceContext(TraceType.Pub, timestamp=now_millis(), group=self.group, beans=[bean])

    def after(self, ctx: TraceContext, result: SendResult) -> None:
        """Complete `ctx` with the broker's answer and queue it."""
        if not result.trace_on:
            return
        ctx.cost_time = now_millis() - ctx.timestamp
        ctx.success = result.status is SendStatus.SEND_OK
        ctx.region_id = result.region_id
        bean = ctx.beans[0]
        bean.msg_id = result.msg_id
        bean.offset_msg_id = result.offset_msg_id
        self.dispatcher.append(ctx)

    def end_transaction(
        self,
        msg_properties: dict[str, str],
        topic: str,
        msg_id: str | None,
        broker_addr: str,
        state: str,
        from_check: bool,
    ) -> None:
        """Queue the EndTransaction record of a transaction ended as `state` (the local
        transaction state's name); `msg_properties` are the message's (its tags, keys,
        unique key and region)."""
        if topic.startswith(self.dispatcher.trace_topic):
            return
        bean = TraceBean(
            topic=topic,
            msg_id=msg_id,
            tags=msg_properties.get(PROPERTY_TAGS),
            keys=msg_properties.get(PROPERTY_KEYS),
            store_host=broker_addr,
            msg_type=TraceMessageType.Trans_msg_Commit,
            transaction_id=msg_properties.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX),
            transaction_state=state,
            from_transaction_check=from_check,
        )
        self.dispatcher.append(
            TraceContext(
                TraceType.EndTransaction,
                timestamp=now_millis(),
                region_id=msg_properties.get(PROPERTY_MSG_REGION) or DEFAULT_TRACE_REGION_ID,
                group=self.group,
                beans=[bean],
            )
        )


class ConsumeTraceHook:
    """SubBefore / SubAfter records of consumer group `group` (see the module docstring)."""

    def __init__(self, dispatcher: TraceSink, group: str) -> None:
        self.dispatcher = dispatcher
        self.group = group

    def before(self, messages: Sequence[MessageExt]) -> TraceContext | None:
        """Queue the SubBefore records of a batch about to be consumed; the context `after`
        needs, or None when no message of the batch is traced."""
        beans = []
        region: str | None = None
        for msg in messages:
            if msg.properties.get(PROPERTY_TRACE_SWITCH) == "false":
                continue
            region = msg.properties.get(PROPERTY_MSG_REGION)
            beans.append(
                TraceBean(
                    topic=msg.topic,
                    msg_id=msg.msg_id,
                    tags=msg.tags,
                    keys=msg.properties.get(PROPERTY_KEYS),
                    body_length=msg.record.total_size,
                    retry_times=msg.reconsume_times,
                )
            )
        if not beans:
            return None
        ctx = TraceContext(
            TraceType.SubBefore,
            timestamp=now_millis(),
            region_id=region,
            group=self.group,
            request_id=unique_ids().next_id(),
            beans=beans,
        )
        self.dispatcher.append(ctx)
        return ctx

    def after(
        self, before: TraceContext | None, count: int, return_type: ConsumeReturnType
    ) -> None:
        """Queue the SubAfter records of the batch `before` started (`count` messages) that
        the listener answered as `return_type` (success only for SUCCESS)."""
        if before is None:
            return
        now = now_millis()
        self.dispatcher.append(
            TraceContext(
                TraceType.SubAfter,
                timestamp=now,
                region_id=before.region_id,
                group=before.group,
                request_id=before.request_id,
                success=return_type is ConsumeReturnType.SUCCESS,
                cost_time=(now - before.timestamp) // max(count, 1),
                context_code=return_type,
                beans=before.beans,
            )
        )
